//! The retrieval evaluation runner: any retrieval mode over an evaluation set, graded with the
//! domain's metrics.
//!
//! Document-level metrics rank each document by its best-ranked chunk (a document appears once);
//! span metrics use the chunks themselves. Queries with empty text count as misses with a
//! warning. Document IDs play no part in ranking.

use std::collections::HashSet;

use serde::Serialize;
use zhiku_domain::Filter;
use zhiku_domain::Revision;
use zhiku_domain::ports::{DocumentChunks, Judge, JudgeError, PhaseTime, Planner, Turn};
use zhiku_domain::rules::fusion::Route;
use zhiku_domain::rules::grading::{
    ChunkLocation, MetricTotals, first_relevant_rank, span_hit_at_k,
};
use zhiku_domain::rules::support;
use zhiku_domain::usecases::{
    AnswerFrame, AnswerStatus, Answerer, AskError, RetrievalMode, RetrievalRequest, RetrieveError,
    Retriever,
};

use crate::beir::{EvalQuery, EvalSet};

/// Chunks retrieved per query; documents are ranked from these, so it is well above 10.
pub const CHUNKS_PER_QUERY: usize = 50;

/// One query's outcome, written as a JSONL line.
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    /// Query id.
    pub id: String,
    /// 1-based rank of the first relevant document, if in the ranking.
    pub first_hit_rank: Option<usize>,
    /// The top 10 document ids.
    pub top10: Vec<String>,
    /// Whether a top-5 chunk overlapped a gold span (when spans are known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_hit_at_5: Option<bool>,
    /// Why the query was counted as a miss without running, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The averaged metrics.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Running sums.
    pub totals: MetricTotals,
    /// Cases marked as having no answer in the knowledge base (not graded for retrieval).
    pub no_answer_cases: usize,
}

impl Summary {
    /// The one-line JSON summary: `queries`, `hit@1`, `hit@5`, `hit@10`, `mrr@10`, `ndcg@10`,
    /// `recall@10` and, when spans were given, `span_hit@5`.
    pub fn to_json(&self) -> serde_json::Value {
        let t = &self.totals;
        let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
        let mut map = serde_json::Map::new();
        map.insert("queries".into(), t.queries.into());
        map.insert("hit@1".into(), round(t.mean(t.hit1)).into());
        map.insert("hit@5".into(), round(t.mean(t.hit5)).into());
        map.insert("hit@10".into(), round(t.mean(t.hit10)).into());
        map.insert("mrr@10".into(), round(t.mean(t.mrr10)).into());
        map.insert("ndcg@10".into(), round(t.mean(t.ndcg10)).into());
        map.insert("recall@10".into(), round(t.mean(t.recall10)).into());
        if let Some(s) = t.span_hit5_mean() {
            map.insert("span_hit@5".into(), round(s).into());
        }
        if self.no_answer_cases > 0 {
            map.insert("no_answer_cases".into(), self.no_answer_cases.into());
        }
        serde_json::Value::Object(map)
    }
}

/// Evaluates one query.
pub fn evaluate_query(
    retriever: &Retriever<'_>,
    planner: &dyn Planner,
    filter: &Filter,
    mode: RetrievalMode,
    query: &EvalQuery,
    summary: &mut Summary,
) -> Result<QueryResult, RetrieveError> {
    let has_spans = !query.spans.is_empty();
    if query.no_answer {
        summary.no_answer_cases += 1;
        return Ok(QueryResult {
            id: query.id.clone(),
            first_hit_rank: None,
            top10: Vec::new(),
            span_hit_at_5: None,
            warning: None,
        });
    }
    if query.text.trim().is_empty() {
        summary.totals.add::<String>(&[], &query.relevant);
        if has_spans {
            summary.totals.add_spans(&[], &query.spans);
        }
        return Ok(QueryResult {
            id: query.id.clone(),
            first_hit_rank: None,
            top10: Vec::new(),
            span_hit_at_5: has_spans.then_some(false),
            warning: Some("empty query text: counted as a miss".into()),
        });
    }
    // A follow-up is retrieved as the planner makes it standalone from the earlier questions.
    let standalone = standalone_query(query, planner);
    let request = RetrievalRequest {
        query: &standalone,
        filter,
        mode,
        k: CHUNKS_PER_QUERY,
        budget: None,
    };
    let retrieval = retriever.retrieve(&request)?;
    let mut seen = HashSet::new();
    let docs: Vec<String> = retrieval
        .evidence
        .iter()
        .map(|e| e.chunk.doc_id().to_string())
        .filter(|d| seen.insert(d.clone()))
        .collect();
    summary.totals.add(&docs, &query.relevant);
    let span_hit = has_spans.then(|| {
        let chunks: Vec<ChunkLocation> = retrieval
            .evidence
            .iter()
            .map(|e| ChunkLocation {
                doc_id: e.chunk.doc_id().to_string(),
                start: e.chunk.start(),
                end: e.chunk.end(),
            })
            .collect();
        summary.totals.add_spans(&chunks, &query.spans);
        span_hit_at_k(&chunks, &query.spans, 5) > 0.0
    });
    Ok(QueryResult {
        id: query.id.clone(),
        first_hit_rank: first_relevant_rank(&docs, &query.relevant),
        top10: docs.into_iter().take(10).collect(),
        span_hit_at_5: span_hit,
        warning: None,
    })
}

/// The text a case's retrieval runs on: its question, made standalone from the earlier
/// questions of its conversation by `planner` (the question as asked should it fail).
pub fn standalone_query(query: &EvalQuery, planner: &dyn Planner) -> String {
    if query.history.is_empty() {
        return query.text.clone();
    }
    let turns: Vec<Turn> = query
        .history
        .iter()
        .map(|q| Turn {
            question: q.clone(),
            ..Turn::default()
        })
        .collect();
    planner
        .plan(&turns, &query.text)
        .map_or_else(|_| query.text.clone(), |p| p.standalone)
}

/// Evaluates every query of `set`, passing each result to `on_query`.
pub fn evaluate(
    retriever: &Retriever<'_>,
    planner: &dyn Planner,
    filter: &Filter,
    mode: RetrievalMode,
    set: &EvalSet,
    on_query: &mut dyn FnMut(&QueryResult),
) -> Result<Summary, RetrieveError> {
    let mut summary = Summary::default();
    for query in &set.queries {
        let result = evaluate_query(retriever, planner, filter, mode, query, &mut summary)?;
        on_query(&result);
    }
    Ok(summary)
}

/// One answered case, written as a JSONL line by `zhiku eval --golden --per-query`.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerResult {
    /// Case id.
    pub id: String,
    /// How the run ended.
    pub status: AnswerStatus,
    /// True when every citation names a chunk of this round's evidence (and there is one).
    pub citations_valid: bool,
    /// True when a citation names one of the expected documents.
    pub cites_expected: bool,
    /// Generation attempts.
    pub attempts: u32,
    /// The answer text.
    pub answer: String,
    /// The standalone question retrieval ran on, when the planner rewrote the question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<String>,
    /// The sub-questions (or a comparison's sides) each retrieved on its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The run's trace ID.
    pub trace_id: String,
}

/// Answer-level figures over a golden set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AnswerSummary {
    /// Cases run.
    pub cases: usize,
    /// Cases per final status.
    pub answered: usize,
    /// Ended `not_found`.
    pub not_found: usize,
    /// Ended `blocked`.
    pub blocked: usize,
    /// Ended `cannot_retrieve`.
    pub cannot_retrieve: usize,
    /// Read as small talk and replied to without retrieval.
    pub small_talk: usize,
    /// Cases marked `citationMustBeValid` that produced an answer (answered or blocked).
    pub citation_checked: usize,
    /// Of those, answers whose citations all come from this round's retrieval.
    pub citation_valid: usize,
    /// Answers accepted on the first attempt.
    pub first_attempt: usize,
    /// Cases with `noAnswer`.
    pub no_answer_cases: usize,
    /// Of those, runs that ended `not_found`.
    pub no_answer_not_found: usize,
    /// Answerable cases (with expected documents).
    pub answerable: usize,
    /// Of those, runs that ended `answered`.
    pub answerable_answered: usize,
    /// Of those, answers citing at least one expected document.
    pub answerable_cites_expected: usize,
    /// Sentences of answers shown that state something.
    pub claims: usize,
    /// Of those, sentences the blocks they cite support.
    pub claims_supported: usize,
    /// Sum over answered answerable cases of the share of the question's terms the answer
    /// holds (offline answer relevance), or of the judge's yes (1) and no (0).
    pub relevance_sum: f64,
    /// Who graded faithfulness and answer relevance: `lexical-v1` (the answerer's own check,
    /// 1.0 by construction for what it shows) or a judge's identity (an independent reading).
    pub graded_by: String,
    /// Readings the judge could not give (that case's figures are the offline ones).
    pub judge_failures: usize,
    /// Sum over answerable cases of the context's average precision (evidence in an expected
    /// document, rank-weighted).
    pub context_precision_sum: f64,
    /// Sum over answerable cases of the context's recall (gold spans overlapped by the
    /// context, or expected documents in it when a case has no spans).
    pub context_recall_sum: f64,
    /// Cases with `mustCite` (several-part questions).
    pub must_cite_cases: usize,
    /// Of those, answers citing every listed document.
    pub must_cite_met: usize,
    /// Answerable cases that are a turn of a conversation (with `history`); a follow-up the
    /// knowledge base cannot answer counts in the no-answer figures instead.
    pub conversation_cases: usize,
    /// Of those, answers citing an expected document.
    pub conversation_cites_expected: usize,
    /// Answerable cases with `answerMustContain`.
    pub fact_cases: usize,
    /// Of those, answers stating every listed fact.
    pub fact_met: usize,
    /// The cases graded per `split` of the set (`dev`, `held_out`).
    pub by_split: std::collections::BTreeMap<String, CaseGrades>,
    /// The cases graded per `kind` of case.
    pub by_kind: std::collections::BTreeMap<String, CaseGrades>,
    /// Evidence in an expected document found by the lexical route only.
    pub relevant_lexical_only: usize,
    /// … by the dense route only.
    pub relevant_dense_only: usize,
    /// … by both routes.
    pub relevant_both: usize,
    /// Total run time of each case's last question, in milliseconds.
    #[serde(skip)]
    pub latencies: Vec<f64>,
    /// Time per phase (`plan`, `retrieval`, `generation`), each case's last question.
    #[serde(skip)]
    pub stage_ms: std::collections::BTreeMap<String, Vec<f64>>,
}

/// How the cases of one part of a set did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaseGrades {
    /// Cases.
    pub cases: usize,
    /// Right: an answerable case answered citing an expected document and stating every fact
    /// it lists; a case without material ended `not_found`.
    pub right: usize,
    /// Answerable cases answered citing an expected document (facts not checked).
    pub cites_expected: usize,
}

/// True when `answer` states `fact`: found in it with white space ignored on both sides.
fn states(answer: &str, fact: &str) -> bool {
    let squeeze = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    squeeze(answer).contains(&squeeze(fact))
}

fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    Some((v[i] * 10.0).round() / 10.0)
}

/// Average precision of `frame`'s evidence against the expected documents.
fn context_precision(frame: &AnswerFrame, relevant: &HashSet<String>) -> f64 {
    let (mut hits, mut sum) = (0usize, 0.0);
    for (i, e) in frame.evidence.iter().enumerate() {
        if relevant.contains(e.doc_id.as_str()) {
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    if hits == 0 { 0.0 } else { sum / hits as f64 }
}

/// Share of `query`'s gold spans the context overlaps (of its expected documents present,
/// without spans).
fn context_recall(frame: &AnswerFrame, query: &EvalQuery) -> f64 {
    if query.spans.is_empty() {
        let present = query
            .relevant
            .iter()
            .filter(|d| {
                frame
                    .evidence
                    .iter()
                    .any(|e| e.doc_id.as_str() == d.as_str())
            })
            .count();
        // Any expected document answers the question: one present is full recall.
        return if present > 0 { 1.0 } else { 0.0 };
    }
    let covered = query
        .spans
        .iter()
        .filter(|s| {
            frame
                .evidence
                .iter()
                .any(|e| e.doc_id.as_str() == s.doc_id && e.start < s.end && s.start < e.end)
        })
        .count();
    covered as f64 / query.spans.len() as f64
}

impl AnswerSummary {
    /// The figures as JSON, with the shares computed: `citation_validity`,
    /// `no_answer_not_found_rate`, `answered_rate` and `cites_expected_rate`.
    pub fn to_json(&self) -> serde_json::Value {
        let share = |a: usize, b: usize| {
            if b == 0 {
                serde_json::Value::Null
            } else {
                ((a as f64 / b as f64 * 10_000.0).round() / 10_000.0).into()
            }
        };
        let mut v = serde_json::to_value(self).unwrap_or_default();
        v["citation_validity"] = share(self.citation_valid, self.citation_checked);
        v["no_answer_not_found_rate"] = share(self.no_answer_not_found, self.no_answer_cases);
        v["answered_rate"] = share(self.answerable_answered, self.answerable);
        v["cites_expected_rate"] = share(self.answerable_cites_expected, self.answerable_answered);
        v["faithfulness"] = share(self.claims_supported, self.claims);
        let mean = |sum: f64, n: usize| {
            if n == 0 {
                serde_json::Value::Null
            } else {
                ((sum / n as f64 * 10_000.0).round() / 10_000.0).into()
            }
        };
        v["answer_relevance"] = mean(self.relevance_sum, self.answerable_answered);
        v["context_precision"] = mean(self.context_precision_sum, self.answerable);
        v["context_recall"] = mean(self.context_recall_sum, self.answerable);
        v["must_cite_rate"] = share(self.must_cite_met, self.must_cite_cases);
        v["fact_rate"] = share(self.fact_met, self.fact_cases);
        v["no_answer_rate"] = share(self.no_answer_not_found, self.no_answer_cases);
        let relevant = self.relevant_lexical_only + self.relevant_dense_only + self.relevant_both;
        v["route_contribution"] = serde_json::json!({
            "lexical_only": self.relevant_lexical_only,
            "dense_only": self.relevant_dense_only,
            "both": self.relevant_both,
            "lexical_only_share": share(self.relevant_lexical_only, relevant),
            "dense_only_share": share(self.relevant_dense_only, relevant),
            "both_share": share(self.relevant_both, relevant),
        });
        v["latency_ms"] = serde_json::json!({
            "p50": percentile(&self.latencies, 0.5),
            "p95": percentile(&self.latencies, 0.95),
        });
        v["stage_p50_ms"] = self
            .stage_ms
            .iter()
            .map(|(k, ms)| (k.clone(), serde_json::json!(percentile(ms, 0.5))))
            .collect::<serde_json::Map<_, _>>()
            .into();
        v
    }
}

/// A judge grading answers, and where it reads the cited chunks' text.
pub struct Grader<'g> {
    /// Reads each claim against the chunks it cites, and the answer against the question.
    pub judge: &'g dyn Judge,
    /// The chunks of a cited document at the revision the citation names.
    pub chunks: &'g dyn DocumentChunks,
}

impl std::fmt::Debug for Grader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grader")
            .field("judge", &self.judge.identity())
            .finish()
    }
}

/// The judge's grades of one answered frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JudgeGrades {
    /// Sentences of the answer that state something.
    stated: usize,
    /// Of those, sentences the blocks they cite support.
    supported: usize,
    /// 1 when the judge reads the answer as answering the question, 0 otherwise.
    relevance: f64,
}

/// The text of every block `frame` cites, once per marker, read at the revision each
/// citation names; the judge's error when a cited chunk's text is gone.
fn cited_blocks(
    chunks: &dyn DocumentChunks,
    frame: &AnswerFrame,
) -> Result<Vec<(u32, String)>, JudgeError> {
    let mut blocks: Vec<(u32, String)> = Vec::new();
    for c in &frame.citations {
        if blocks.iter().any(|(m, _)| *m == c.marker) {
            continue;
        }
        let text = Revision::new(&c.revision)
            .ok()
            .and_then(|r| chunks.chunks(&c.doc_id, &r).ok().flatten())
            .and_then(|chunks| chunks.into_iter().find(|k| *k.chunk_id() == c.chunk_id))
            .map(|k| k.content().to_string())
            .ok_or_else(|| JudgeError::NoVerdict(format!("the text of {} is gone", c.chunk_id)))?;
        blocks.push((c.marker, text));
    }
    Ok(blocks)
}

/// The judge's grades of one answered frame, or the judge's error.
fn judge_grades(
    grader: &Grader<'_>,
    frame: &AnswerFrame,
    question: &str,
) -> Result<JudgeGrades, JudgeError> {
    let blocks = cited_blocks(grader.chunks, frame)?;
    let blocks: Vec<(u32, &str)> = blocks.iter().map(|(m, t)| (*m, t.as_str())).collect();
    let mut checks = support::check(&frame.answer, question, &blocks);
    zhiku_domain::usecases::apply_judge(&mut checks, &blocks, grader.judge)?;
    let stated = checks
        .iter()
        .filter(|c| c.verdict != support::ClaimVerdict::NotAClaim)
        .count();
    let supported = checks
        .iter()
        .filter(|c| c.verdict == support::ClaimVerdict::Supported)
        .count();
    let relevant = grader
        .judge
        .relevant(question, &support::strip_markers(&frame.answer))?;
    Ok(JudgeGrades {
        stated,
        supported,
        relevance: if relevant { 1.0 } else { 0.0 },
    })
}

/// The question a frame answered: its standalone rewrite, or the question as asked.
fn question_of(frame: &AnswerFrame) -> &str {
    frame.rewritten.as_deref().unwrap_or(&frame.question)
}

/// Asks `case`: the earlier questions of its conversation first, each answer sent back with
/// the next question; returns the frame of its last question.
fn ask_case(
    answerer: &Answerer<'_>,
    filter: &Filter,
    case: &EvalQuery,
    new_trace_id: &dyn Fn() -> String,
) -> Result<AnswerFrame, AskError> {
    let mut turns: Vec<Turn> = Vec::new();
    for earlier in &case.history {
        let f = answerer.converse(&turns, earlier, filter, &new_trace_id())?;
        turns.push(Turn {
            question: f.question,
            answer: f.answer,
            rewritten: f.rewritten,
        });
    }
    answerer.converse(&turns, &case.text, filter, &new_trace_id())
}

/// What one case's citations say: whether they are valid, and whether one names an expected
/// document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cited {
    /// The answer cites, and every citation names a chunk of this round's evidence.
    pub(crate) valid: bool,
    /// A citation names one of the case's expected documents.
    pub(crate) expected: bool,
}

impl Cited {
    fn of(frame: &AnswerFrame, case: &EvalQuery) -> Self {
        let round: HashSet<&str> = frame.evidence.iter().map(|e| e.chunk_id.as_str()).collect();
        Self {
            valid: frame.status == AnswerStatus::Answered
                && !frame.citations.is_empty()
                && frame
                    .citations
                    .iter()
                    .all(|c| round.contains(c.chunk_id.as_str())),
            expected: frame
                .citations
                .iter()
                .any(|c| case.relevant.contains(c.doc_id.as_str())),
        }
    }
}

/// What grading reads of one run: a frame just answered, or a run read back from its trace
/// ([`crate::recorded`]).
pub(crate) struct Graded<'a> {
    pub(crate) status: AnswerStatus,
    pub(crate) attempts: u32,
    pub(crate) answer: &'a str,
    /// The documents the answer cites.
    pub(crate) cited_docs: HashSet<&'a str>,
    pub(crate) latency_ms: f64,
    pub(crate) stages_ms: &'a [PhaseTime],
    /// The answerer's own support check: sentences stating something, and supported.
    pub(crate) support: Option<(usize, usize)>,
}

impl<'a> Graded<'a> {
    fn of(frame: &'a AnswerFrame) -> Self {
        Self {
            status: frame.status,
            attempts: frame.attempts,
            answer: &frame.answer,
            cited_docs: frame.citations.iter().map(|c| c.doc_id.as_str()).collect(),
            latency_ms: frame.latency_ms,
            stages_ms: &frame.stages_ms,
            support: frame.support.as_ref().map(|s| (s.claims, s.supported)),
        }
    }
}

impl AnswerSummary {
    /// The judge's grades of `frame` when it was answered; a reading the judge could not give
    /// is counted, and leaves that case's figures to the offline check.
    fn judged_by(&mut self, grader: &Grader<'_>, frame: &AnswerFrame) -> Option<JudgeGrades> {
        if frame.status != AnswerStatus::Answered {
            return None;
        }
        judge_grades(grader, frame, question_of(frame))
            .inspect_err(|_| self.judge_failures += 1)
            .ok()
    }

    /// Records one case's answer: its time, claims, status, citations, context and outcome.
    fn record(
        &mut self,
        case: &EvalQuery,
        frame: &AnswerFrame,
        judged: Option<&JudgeGrades>,
        cited: Cited,
    ) {
        self.record_run(case, &Graded::of(frame), judged, cited);
        if !case.no_answer && !case.relevant.is_empty() {
            self.record_context(case, frame, judged);
        }
    }

    /// Records what one case's run shows, whatever it was read from: its time, claims,
    /// status, citations and outcome (not its context, which only a frame holds).
    pub(crate) fn record_run(
        &mut self,
        case: &EvalQuery,
        run: &Graded<'_>,
        judged: Option<&JudgeGrades>,
        cited: Cited,
    ) {
        self.cases += 1;
        self.record_times(run);
        self.record_claims(run, judged);
        self.record_status(run.status);
        self.record_citations(case, run, cited);
        self.record_outcome(case, run.status, cited);
    }

    /// The run time of the case's last question, whole and per phase.
    fn record_times(&mut self, run: &Graded<'_>) {
        self.latencies.push(run.latency_ms);
        for phase in run.stages_ms {
            let group = phase
                .stage
                .split('.')
                .next()
                .unwrap_or_default()
                .to_string();
            self.stage_ms.entry(group).or_default().push(phase.ms);
        }
    }

    /// The claims stated and supported: the judge's reading when it gave one, else the
    /// answerer's own check.
    fn record_claims(&mut self, run: &Graded<'_>, judged: Option<&JudgeGrades>) {
        match (judged, run.support) {
            (Some(g), _) => {
                self.claims += g.stated;
                self.claims_supported += g.supported;
            }
            (None, Some((claims, supported))) => {
                self.claims += claims;
                self.claims_supported += supported;
            }
            (None, None) => {}
        }
    }

    fn record_status(&mut self, status: AnswerStatus) {
        match status {
            AnswerStatus::Answered => self.answered += 1,
            AnswerStatus::NotFound => self.not_found += 1,
            AnswerStatus::Blocked => self.blocked += 1,
            AnswerStatus::CannotRetrieve => self.cannot_retrieve += 1,
            AnswerStatus::SmallTalk => self.small_talk += 1,
        }
    }

    /// Citation validity (of the cases that ask for it), first attempts, the documents a
    /// several-part question must cite, and the turns of conversations citing what they should.
    fn record_citations(&mut self, case: &EvalQuery, run: &Graded<'_>, cited: Cited) {
        let answered = run.status == AnswerStatus::Answered;
        let produced = matches!(run.status, AnswerStatus::Answered | AnswerStatus::Blocked);
        if case.citation_must_be_valid && produced {
            self.citation_checked += 1;
            self.citation_valid += usize::from(cited.valid);
        }
        if answered && run.attempts == 1 {
            self.first_attempt += 1;
        }
        if !case.must_cite.is_empty() {
            let cited_docs = &run.cited_docs;
            self.must_cite_cases += 1;
            self.must_cite_met += usize::from(
                answered
                    && case
                        .must_cite
                        .iter()
                        .all(|d| cited_docs.contains(d.as_str())),
            );
        }
        if !case.history.is_empty() && !case.no_answer {
            self.conversation_cases += 1;
            self.conversation_cites_expected += usize::from(answered && cited.expected);
        }
        let facts = case
            .answer_must_contain
            .iter()
            .all(|f| states(run.answer, f));
        if !case.answer_must_contain.is_empty() && !case.no_answer {
            self.fact_cases += 1;
            self.fact_met += usize::from(answered && facts);
        }
        let cites = answered && cited.expected;
        let right = if case.no_answer {
            run.status == AnswerStatus::NotFound
        } else {
            cites && facts
        };
        let parts = [
            case.split.as_ref().map(|k| (&mut self.by_split, k)),
            case.kind.as_ref().map(|k| (&mut self.by_kind, k)),
        ];
        for (grades, key) in parts.into_iter().flatten() {
            let g = grades.entry(key.clone()).or_default();
            g.cases += 1;
            g.right += usize::from(right);
            g.cites_expected += usize::from(!case.no_answer && cites);
        }
    }

    /// An answerable case's context (precision, recall, the routes that found its relevant
    /// evidence) and, when answered, its answer's relevance: the judge's reading when it gave
    /// one, else the share of the question's terms the answer holds.
    fn record_context(
        &mut self,
        case: &EvalQuery,
        frame: &AnswerFrame,
        judged: Option<&JudgeGrades>,
    ) {
        self.context_precision_sum += context_precision(frame, &case.relevant);
        self.context_recall_sum += context_recall(frame, case);
        for e in frame
            .evidence
            .iter()
            .filter(|e| case.relevant.contains(e.doc_id.as_str()))
        {
            match (
                e.scores.contains_key(&Route::Lexical),
                e.scores.contains_key(&Route::Dense),
            ) {
                (true, true) => self.relevant_both += 1,
                (true, false) => self.relevant_lexical_only += 1,
                (false, true) => self.relevant_dense_only += 1,
                (false, false) => {}
            }
        }
        if frame.status == AnswerStatus::Answered {
            self.relevance_sum += match judged {
                Some(g) => g.relevance,
                None => {
                    support::support(question_of(frame), &support::strip_markers(&frame.answer))
                }
            };
        }
    }

    /// Whether a no-answer case ended `not_found`, and an answerable one answered citing an
    /// expected document.
    fn record_outcome(&mut self, case: &EvalQuery, status: AnswerStatus, cited: Cited) {
        if case.no_answer {
            self.no_answer_cases += 1;
            self.no_answer_not_found += usize::from(status == AnswerStatus::NotFound);
        } else if !case.relevant.is_empty() {
            self.answerable += 1;
            if status == AnswerStatus::Answered {
                self.answerable_answered += 1;
                self.answerable_cites_expected += usize::from(cited.expected);
            }
        }
    }
}

/// Asks every case of `set` and grades the answers: statuses, citation validity against each
/// round's own evidence, and whether no-answer cases end `not_found`. With a `grader`,
/// faithfulness and answer relevance are the judge's readings of each answer shown (the
/// answerer's own check stays whatever it was configured with).
pub fn evaluate_answers(
    answerer: &Answerer<'_>,
    filter: &Filter,
    set: &EvalSet,
    grader: Option<&Grader<'_>>,
    new_trace_id: &dyn Fn() -> String,
    on_case: &mut dyn FnMut(&AnswerResult),
) -> Result<AnswerSummary, AskError> {
    let mut s = AnswerSummary {
        graded_by: grader.map_or_else(
            || support::LEXICAL_CHECK.to_string(),
            |g| g.judge.identity(),
        ),
        ..AnswerSummary::default()
    };
    for case in set.queries.iter().filter(|c| !c.text.trim().is_empty()) {
        let frame = ask_case(answerer, filter, case, new_trace_id)?;
        let judged = grader.and_then(|g| s.judged_by(g, &frame));
        let cited = Cited::of(&frame, case);
        s.record(case, &frame, judged.as_ref(), cited);
        on_case(&AnswerResult {
            id: case.id.clone(),
            status: frame.status,
            citations_valid: cited.valid,
            cites_expected: cited.expected,
            attempts: frame.attempts,
            answer: frame.answer,
            rewritten: frame.rewritten,
            parts: frame.parts,
            trace_id: frame.trace_id,
        });
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::states;

    #[test]
    fn a_fact_is_stated_whatever_the_spacing() {
        assert!(states("报销单须在出差结束后30天内提交[1]。", "30 天"));
        assert!(states("The stipend is 1,000 CNY [1].", "1,000"));
        assert!(!states("每晚不超过 500 元[1]。", "600"));
    }
}
