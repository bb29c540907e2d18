//! Grading runs already recorded: a knowledge base's answer runs read back from its trace log
//! and graded like fresh ones, without asking again — what a deployment answered last week,
//! graded against a golden set written since, or the runs of a model that is no longer served.
//!
//! A run is read from its steps: the question (`query`), the earlier turns it followed
//! (`rewrite`), its parts (`intent`), the support check of its last attempt, and how it ended
//! (`answer`: status, attempts, the answer text, citations with their documents, time). A
//! golden case is matched to the latest run of the same question after the same earlier
//! questions (as many, in traces written before those were kept).
//! Context figures (precision, recall, route contribution) need the evidence's positions, which
//! a trace does not keep: they are left out of a grading from traces.

use std::collections::BTreeMap;

use serde::Serialize;
use zhiku_domain::ports::{AnswerStep, PhaseTime, Stage, StoredTraceEvent, earlier_questions};
use zhiku_domain::rules::support;
use zhiku_domain::usecases::AnswerStatus;

use crate::beir::{EvalQuery, EvalSet};
use crate::runner::{AnswerResult, AnswerSummary, Cited, Graded};

/// One answer run as its trace recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRun {
    /// Its trace ID.
    pub trace_id: String,
    /// The question as asked.
    pub question: String,
    /// Earlier turns the caller sent with it.
    pub history_turns: usize,
    /// Their questions as the trace kept them (empty in traces written before they were).
    pub earlier_questions: Vec<String>,
    /// The standalone question, when the planner rewrote it.
    pub rewritten: Option<String>,
    /// Its parts (a several-part question, a comparison's sides).
    pub parts: Vec<String>,
    /// How it ended; `None` when the generator failed and no frame was made.
    pub status: Option<AnswerStatus>,
    /// The answer shown (`None` in traces written before answers were kept).
    pub answer: Option<String>,
    /// The documents its citations name (those the trace names).
    pub cited_docs: Vec<String>,
    /// Citations it made.
    pub citations: usize,
    /// Generation attempts.
    pub attempts: u32,
    /// Total run time.
    pub latency_ms: f64,
    /// Time per phase.
    pub stages_ms: Vec<PhaseTime>,
    /// The last support check: sentences stating something, and supported.
    pub support: Option<(usize, usize)>,
}

/// The runs in `events` (as the trace log holds them, runs possibly interleaved), in the order
/// they began; a run without its `query` step or its ending (`answer`) is left out.
pub fn recorded_runs(events: &[StoredTraceEvent]) -> Vec<RecordedRun> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_run: BTreeMap<&str, Vec<&Stage>> = BTreeMap::new();
    for e in events {
        let id = e.event.trace_id.as_str();
        let steps = by_run.entry(id).or_default();
        if steps.is_empty() {
            order.push(id);
        }
        steps.push(&e.event.stage);
    }
    order
        .into_iter()
        .filter_map(|id| run_of(id, &by_run[id]))
        .collect()
}

/// The run `trace_id` recorded in `steps`.
fn run_of(trace_id: &str, steps: &[&Stage]) -> Option<RecordedRun> {
    let mut run = RecordedRun {
        trace_id: trace_id.to_string(),
        question: String::new(),
        history_turns: 0,
        earlier_questions: Vec::new(),
        rewritten: None,
        parts: Vec::new(),
        status: None,
        answer: None,
        cited_docs: Vec::new(),
        citations: 0,
        attempts: 0,
        latency_ms: 0.0,
        stages_ms: Vec::new(),
        support: None,
    };
    let (mut asked, mut ended) = (false, false);
    let mut accepted_claims = 0;
    for step in steps {
        match step {
            Stage::Query(q) => {
                run.question = q.question.clone();
                asked = true;
            }
            Stage::Rewrite(r) => {
                run.history_turns = r.history_turns;
                run.earlier_questions = r.earlier_questions.clone();
                run.rewritten =
                    (r.rewritten.trim() != r.original.trim()).then(|| r.rewritten.clone());
            }
            Stage::Intent(i) => run.parts = i.parts.clone(),
            // The accepted attempt of each part: every claim it states passed the check.
            Stage::SupportCheck(c) if c.ok => {
                let stated = c
                    .claims
                    .iter()
                    .filter(|x| x.verdict != support::ClaimVerdict::NotAClaim)
                    .count();
                accepted_claims += stated;
            }
            Stage::Answer(AnswerStep::Finished {
                answer,
                attempts,
                citations,
                latency_ms,
                stages_ms,
                status,
                ..
            }) => {
                run.status = status_of(status);
                run.answer = answer.clone();
                run.attempts = *attempts;
                run.citations = citations.len();
                run.cited_docs = citations
                    .iter()
                    .filter_map(|c| c.doc_id.as_ref().map(|d| d.as_str().to_string()))
                    .collect();
                run.latency_ms = *latency_ms;
                run.stages_ms = stages_ms.clone();
                ended = true;
            }
            Stage::Answer(AnswerStep::Failed { latency_ms, .. }) => {
                run.latency_ms = *latency_ms;
                ended = true;
            }
            _ => {}
        }
    }
    if run.status == Some(AnswerStatus::Answered) {
        run.support = Some((accepted_claims, accepted_claims));
    }
    (asked && ended).then_some(run)
}

/// Whether `run` asked `case`'s question after its earlier questions: the same ones when the
/// trace kept them, as many when it is older.
fn asks(run: &RecordedRun, case: &EvalQuery) -> bool {
    if run.question.trim() != case.text.trim() || run.history_turns != case.history.len() {
        return false;
    }
    run.history_turns == 0
        || run.earlier_questions.is_empty()
        || run.earlier_questions == earlier_questions(case.history.iter().map(String::as_str))
}

fn status_of(code: &str) -> Option<AnswerStatus> {
    [
        AnswerStatus::Answered,
        AnswerStatus::NotFound,
        AnswerStatus::CannotRetrieve,
        AnswerStatus::Blocked,
        AnswerStatus::SmallTalk,
    ]
    .into_iter()
    .find(|s| s.code() == code)
}

/// What a grading of recorded runs found beside the figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordedGrading {
    /// The figures, as `zhiku eval --golden` reports them (without the context's).
    pub answers: AnswerSummary,
    /// Runs read from the traces.
    pub runs: usize,
    /// Of those, runs whose generator failed (no frame was made).
    pub failed_runs: usize,
    /// Cases of the set no recorded run asked (graded as nothing; listed by ID).
    pub not_recorded: Vec<String>,
    /// Graded runs recorded before traces kept the answer text: their facts cannot be read
    /// (counted as not stated) nor their cited documents (as none).
    pub without_answer_text: usize,
}

/// Grades `runs` against `set`: each case by the latest run of its question after the same
/// earlier questions; with no `set`, every run, for its statuses, attempts, support and time.
/// Each graded run goes to `on_case`.
pub fn grade_recorded(
    set: Option<&EvalSet>,
    runs: &[RecordedRun],
    on_case: &mut dyn FnMut(&AnswerResult),
) -> RecordedGrading {
    let mut g = RecordedGrading {
        answers: AnswerSummary {
            graded_by: format!("{} (recorded)", support::LEXICAL_CHECK),
            ..AnswerSummary::default()
        },
        runs: runs.len(),
        failed_runs: runs.iter().filter(|r| r.status.is_none()).count(),
        ..RecordedGrading::default()
    };
    // A run graded without a set: a case that expects nothing of it.
    let anonymous = |r: &RecordedRun| EvalQuery {
        id: r.trace_id.clone(),
        text: r.question.clone(),
        ..EvalQuery::default()
    };
    let graded: Vec<(EvalQuery, &RecordedRun)> = match set {
        None => runs.iter().map(|r| (anonymous(r), r)).collect(),
        Some(set) => set
            .queries
            .iter()
            .filter(|c| !c.text.trim().is_empty())
            .filter_map(|case| {
                let run = runs.iter().rev().find(|r| asks(r, case));
                if run.is_none() {
                    g.not_recorded.push(case.id.clone());
                }
                run.map(|r| (case.clone(), r))
            })
            .collect(),
    };
    for (case, run) in graded {
        let Some(status) = run.status else {
            continue;
        };
        g.without_answer_text += usize::from(run.answer.is_none());
        let answer = run.answer.as_deref().unwrap_or_default();
        let view = Graded {
            status,
            attempts: run.attempts,
            answer,
            cited_docs: run.cited_docs.iter().map(String::as_str).collect(),
            latency_ms: run.latency_ms,
            stages_ms: &run.stages_ms,
            support: run.support,
        };
        let cited = Cited {
            valid: status == AnswerStatus::Answered && run.citations > 0,
            expected: run.cited_docs.iter().any(|d| case.relevant.contains(d)),
        };
        g.answers.record_run(&case, &view, None, cited);
        on_case(&AnswerResult {
            id: case.id.clone(),
            status,
            citations_valid: cited.valid,
            cites_expected: cited.expected,
            attempts: run.attempts,
            answer: answer.to_string(),
            rewritten: run.rewritten.clone(),
            parts: run.parts.clone(),
            trace_id: run.trace_id.clone(),
        });
    }
    g
}
