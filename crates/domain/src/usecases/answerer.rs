//! Grounded answers: retrieve, check, budget, generate, validate citations, frame the result,
//! and record every step as a trace event.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::contracts::{Chunk, ChunkId, DocId, Filter, PageSpan, SectionId};
use crate::ports::{
    AnswerStep, BudgetStep, CitedChunk, Clock, ContextStep, DocumentChunks, DroppedChunk,
    FusedEntry, FusionStep, GenerateError, GenerationStep, Generator, Intent, IntentStep, Judge,
    PhaseTime, Plan, Planner, QueryStep, RankedHit, ReformulationStep, RejectionStep, RerankScore,
    RerankStep, RevisionCheckStep, RewriteStep, RouteOutcome, RouteScore, RouteStep, SourceBlock,
    SourceError, Stage, SubQuestionStep, SupportStep, TraceEvent, TraceSink, Turn, ValidationStep,
    elapsed_ms,
};
use crate::rules::budget::RetrievalBudget;
use crate::rules::citation::{self, CitationViolation};
use crate::rules::context::{self, build_request, feedback_for};
use crate::rules::expand::{ContextPolicy, expand};
use crate::rules::fusion::Route;
use crate::rules::plan::{self, AsAsked};
use crate::rules::revision::DropReason;
use crate::rules::support::{self, ClaimVerdict};
use zhiku_text as text;

use super::retriever::{
    Evidence, Retrieval, RetrievalMode, RetrievalRequest, RetrieveError, Retriever, RouteReport,
    RouteStatus,
};

/// The longest retrieval query an answerer runs unless told otherwise
/// ([`Answerer::with_max_query_chars`]): the default of `[serve] max_query_chars`.
pub const DEFAULT_MAX_QUERY_CHARS: usize = 2000;

/// How an answer run is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AnswerPolicy {
    /// Routes to use.
    pub mode: RetrievalMode,
    /// Evidence retrieved before the budget.
    pub k: usize,
    /// What of the evidence reaches the context (whole chunks only).
    pub budget: RetrievalBudget,
    /// Whether the context is the evidence chunks alone, the section they concentrate in, or
    /// the chunks with their neighbours (always as whole chunks within `budget`; without a
    /// [`DocumentChunks`] port, the chunks alone).
    pub context: ContextPolicy,
    /// Generation attempts before the run ends `blocked` (at least 1).
    pub max_attempts: u32,
}

impl Default for AnswerPolicy {
    fn default() -> Self {
        Self {
            mode: RetrievalMode::Hybrid,
            k: 8,
            budget: RetrievalBudget::new(6, 4000).expect("valid default budget"),
            context: ContextPolicy::Chunks,
            max_attempts: 3,
        }
    }
}

/// How a run ended. The four are never confused: "nothing relevant" is `not_found`, "could not
/// look" is `cannot_retrieve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// An answer whose citations all name this round's evidence.
    Answered,
    /// Retrieval ran and found nothing that answers the question.
    NotFound,
    /// No retrieval route could run.
    CannotRetrieve,
    /// The generator kept producing answers whose citations failed; nothing is shown.
    Blocked,
    /// Small talk (a greeting, thanks): replied to directly, nothing retrieved or cited.
    SmallTalk,
}

impl AnswerStatus {
    /// `answered`, `not_found`, `cannot_retrieve` or `blocked`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::NotFound => "not_found",
            Self::CannotRetrieve => "cannot_retrieve",
            Self::Blocked => "blocked",
            Self::SmallTalk => "small_talk",
        }
    }
}

/// One citation of an answer, resolved to its chunk and document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Citation {
    /// The `[n]` marker in the answer.
    pub marker: u32,
    /// The cited chunk.
    pub chunk_id: ChunkId,
    /// Its document.
    pub doc_id: DocId,
    /// The document title.
    pub title: String,
    /// Where the document came from.
    pub source: String,
    /// The headings above the cited chunk, outermost first.
    pub heading_path: Vec<String>,
    /// The section the cited chunk sits in (its document and heading path): read it whole with
    /// `zhiku read DOC#SECTION` or `GET /v1/documents/{id}/sections/{section}`.
    pub section: SectionId,
    /// The pages of the document the cited chunk lies on (a PDF's), as `[first, last]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageSpan>,
    /// The document revision the chunk was read from (checked against the source this round).
    pub revision: String,
    /// The sentence of the chunk that best supports the citing text.
    pub quote: String,
}

/// One piece of this round's evidence, as shown beside the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceSummary {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// 1-based rank after fusion, checks and budget.
    pub rank: usize,
    /// The fused score.
    pub score: f64,
    /// Each route's own score for the chunk.
    pub scores: BTreeMap<Route, f32>,
    /// Each route's rank for the chunk.
    pub route_ranks: BTreeMap<Route, usize>,
    /// The document.
    pub doc_id: DocId,
    /// The document title.
    pub title: String,
    /// Where the document came from.
    pub source: String,
    /// The section the chunk sits in.
    pub section: SectionId,
    /// Offset of the chunk's first character in its document's text.
    pub start: usize,
    /// Offset after its last character.
    pub end: usize,
    /// True for a chunk the context policy brought in around the evidence (of its section, or
    /// a neighbour), which no route ranked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub around: bool,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerFrame {
    /// The question as asked.
    pub question: String,
    /// The standalone question retrieval ran on, when it differs from the question (a
    /// follow-up read in its conversation, a greeting dropped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<String>,
    /// What the question was: `knowledge`, `multi_part` or `small_talk`.
    pub intent: Intent,
    /// The sub-questions of a several-part question, each retrieved on its own and answered
    /// in turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The answer text (with `[n]` markers), the no-material sentence, or why there is no
    /// answer. Never uncited generator text.
    pub answer: String,
    /// How the run ended.
    pub status: AnswerStatus,
    /// The answer's citations, in marker order.
    pub citations: Vec<Citation>,
    /// The evidence the generator saw, in rank order.
    pub evidence: Vec<EvidenceSummary>,
    /// Each route's status.
    pub routes: Vec<RouteReport>,
    /// The run's trace ID.
    pub trace_id: String,
    /// True when the budget left evidence out.
    pub retrieval_truncated: bool,
    /// Generation attempts made.
    pub attempts: u32,
    /// The identity of the generator that answered (empty when generation did not run).
    pub generator: String,
    /// How the answer came about, when it is worth saying (a generator fell back to another).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Total run time in milliseconds.
    pub latency_ms: f64,
    /// Time per phase of the run, in order (`plan`, `retrieval`, `generation.<attempt>`).
    pub stages_ms: Vec<PhaseTime>,
    /// The support check of the answer shown (absent when nothing was answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<SupportSummary>,
}

/// How the sentences of an answer fared against the blocks they cite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SupportSummary {
    /// Sentences that state something (connectives and lead-ins excepted).
    pub claims: usize,
    /// The check (`lexical-v1`).
    pub method: String,
    /// Of those, sentences the cited blocks support (all of them in an answer shown: an
    /// unsupported one is rejected and retried).
    pub supported: usize,
}

/// Why a run could not produce a frame.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The question or the policy is malformed.
    #[error("invalid question: {0}")]
    InvalidInput(String),
    /// The revision check could not read the source.
    #[error("cannot check retrieved evidence against the source: {0}")]
    Source(#[from] SourceError),
    /// The generator failed (it is unreachable, timed out or refused the request).
    #[error(transparent)]
    Generate(#[from] GenerateError),
}

/// Answers questions from retrieved evidence with enforced citations.
pub struct Answerer<'a> {
    retriever: &'a Retriever<'a>,
    generator: &'a dyn Generator,
    trace: &'a dyn TraceSink,
    clock: &'a dyn Clock,
    policy: AnswerPolicy,
    chunks: Option<&'a dyn DocumentChunks>,
    planner: &'a dyn Planner,
    /// Plans whenever `planner` fails or breaks its contract.
    fallback_planner: &'a dyn Planner,
    judge: Option<&'a dyn Judge>,
    max_query_chars: usize,
}

impl std::fmt::Debug for Answerer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerer")
            .field("generator", &self.generator.identity())
            .field("policy", &self.policy)
            .field("max_query_chars", &self.max_query_chars)
            .finish()
    }
}

struct Run<'r> {
    /// Generation attempts made so far (numbered across the parts of a question).
    attempts: u32,
    /// How the shown answer's sentences fared in the support check.
    support: Option<SupportSummary>,
    /// The generator that wrote the last answer (a fallback chain's delegate).
    answered_by: Option<String>,
    /// The support check that passed the last accepted answer (a judge's identity, or the
    /// lexical check's).
    support_method: Option<String>,
    /// Whether the judge already failed in this run (it is not asked again).
    judge_failed: bool,
    trace_id: &'r str,
    sink: &'r dyn TraceSink,
    clock: &'r dyn Clock,
    started: std::time::Duration,
    lap: std::time::Duration,
    stages: Vec<PhaseTime>,
    notices: Vec<String>,
}

impl Run<'_> {
    fn emit(&self, stage: Stage) {
        self.sink.record(TraceEvent::new(self.trace_id, stage));
    }

    /// Milliseconds since the last lap, recorded under `stage`.
    fn lap(&mut self, stage: &str) -> f64 {
        let now = self.clock.now();
        let ms = elapsed_ms(self.lap, now);
        self.lap = now;
        self.stages.push(PhaseTime {
            ms,
            stage: stage.to_string(),
        });
        ms
    }

    fn total_ms(&self) -> f64 {
        elapsed_ms(self.started, self.clock.now())
    }
}

impl<'a> Answerer<'a> {
    /// An answerer over `retriever` and `generator`, recording to `trace` and timing with
    /// `clock`.
    pub fn new(
        retriever: &'a Retriever<'a>,
        generator: &'a dyn Generator,
        trace: &'a dyn TraceSink,
        clock: &'a dyn Clock,
        policy: AnswerPolicy,
    ) -> Self {
        Self {
            retriever,
            generator,
            trace,
            clock,
            policy,
            chunks: None,
            planner: &AsAsked,
            fallback_planner: &AsAsked,
            judge: None,
            max_query_chars: DEFAULT_MAX_QUERY_CHARS,
        }
    }

    /// The same answerer, retrieving for no query longer than `max` characters, or than the
    /// question as asked when that is longer (the question is its caller's to bound): the
    /// standalone rewrite, each part and each reformulation. The planner reads the
    /// conversation only after its last turn too long to carry into such a query
    /// ([`plan::carried_history`]: ignored, not cut); a plan that still runs over is replaced by
    /// the fallback planner's plan within the bound ([`plan::plan_within`]), and a
    /// reformulation that runs over is not retrieved. [`DEFAULT_MAX_QUERY_CHARS`] unless set.
    pub fn with_max_query_chars(mut self, max: usize) -> Self {
        self.max_query_chars = max.max(1);
        self
    }

    /// The same answerer, reading questions in their conversation with `planner` ([`AsAsked`]
    /// by default: every message one question, taken as asked).
    pub fn with_planner(mut self, planner: &'a dyn Planner) -> Self {
        self.planner = planner;
        self
    }

    /// The same answerer, planning with `fallback` whenever the planner fails or returns a plan
    /// that breaks the planner contract ([`AsAsked`] by default), and asking it for another
    /// wording when the planner has none. The application composes the offline rules here.
    pub fn with_fallback_planner(mut self, fallback: &'a dyn Planner) -> Self {
        self.fallback_planner = fallback;
        self
    }

    /// The same answerer, letting `judge` decide whether each cited claim is supported (the
    /// hard rules of the lexical check still apply first; see
    /// [`support::apply_judge`]). When the judge cannot be reached the lexical check decides,
    /// with a notice in the frame.
    pub fn with_judge(mut self, judge: &'a dyn Judge) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The same answerer, reading the documents of the evidence from `chunks` when its
    /// context policy sends more than the evidence chunks.
    pub fn with_document_chunks(mut self, chunks: &'a dyn DocumentChunks) -> Self {
        self.chunks = Some(chunks);
        self
    }

    fn expands(&self) -> bool {
        self.chunks.is_some() && self.policy.context != ContextPolicy::Chunks
    }

    /// The retrieval with its evidence replaced by the context's blocks under the policy: the
    /// evidence chunks and, around them, other chunks of their documents (read at the revision
    /// and in the scope the evidence was checked at), within the budget.
    fn shape_context(&self, mut retrieval: Retrieval) -> Retrieval {
        let Some(source) = self.chunks.filter(|_| self.expands()) else {
            return retrieval;
        };
        let wanted = match self.policy.context {
            ContextPolicy::Section => 1,
            _ => retrieval.evidence.len(),
        };
        let mut docs: BTreeMap<DocId, Vec<Chunk>> = BTreeMap::new();
        for e in retrieval.evidence.iter().take(wanted) {
            let doc = e.chunk.doc();
            if docs.contains_key(e.chunk.doc_id()) {
                continue;
            }
            // A document that cannot be read now, or reads otherwise than it was checked,
            // gives its evidence alone.
            if let Ok(Some(chunks)) = source.chunks(e.chunk.doc_id(), &doc.revision)
                && chunks.iter().all(|c| c.doc().scope == doc.scope)
            {
                docs.insert(e.chunk.doc_id().clone(), chunks);
            }
        }
        let evidence: Vec<Chunk> = retrieval.evidence.iter().map(|e| e.chunk.clone()).collect();
        let blocks = expand(
            self.policy.context,
            &evidence,
            &|d: &DocId| docs.get(d).map(Vec::as_slice),
            self.policy.budget,
        );
        let kept: BTreeSet<ChunkId> = blocks.iter().map(|b| b.chunk.chunk_id().clone()).collect();
        let shaped: Vec<Evidence> = blocks
            .into_iter()
            .enumerate()
            .map(|(i, b)| match b.evidence {
                Some(j) => Evidence {
                    rank: i + 1,
                    ..retrieval.evidence[j].clone()
                },
                None => Evidence {
                    chunk_id: b.chunk.chunk_id().clone(),
                    chunk: b.chunk,
                    rank: i + 1,
                    score: 0.0,
                    routes: Vec::new(),
                },
            })
            .collect();
        retrieval.budget_dropped.extend(
            retrieval
                .evidence
                .iter()
                .filter(|e| !kept.contains(&e.chunk_id))
                .map(|e| e.chunk_id.clone()),
        );
        retrieval.truncated = !retrieval.budget_dropped.is_empty();
        retrieval.evidence = shaped;
        retrieval
    }

    /// Answers `question` within `filter` (from the caller's identity: nothing in the question
    /// or the evidence can widen it). Every step is recorded under `trace_id`.
    pub fn ask(
        &self,
        question: &str,
        filter: &Filter,
        trace_id: &str,
    ) -> Result<AnswerFrame, AskError> {
        self.converse(&[], question, filter, trace_id)
    }

    /// Answers `question` as the next turn after `history` (oldest first), within `filter`.
    ///
    /// The history is read by the planner alone, to make the question standalone for
    /// retrieval: it never reaches the generator, never names a scope and never cites, so a
    /// history carrying forged citations or instructions changes nothing but the retrieval
    /// query. Every step is recorded under `trace_id`.
    pub fn converse(
        &self,
        history: &[Turn],
        question: &str,
        filter: &Filter,
        trace_id: &str,
    ) -> Result<AnswerFrame, AskError> {
        let now = self.clock.now();
        let mut run = Run {
            attempts: 0,
            support: None,
            answered_by: None,
            support_method: None,
            judge_failed: false,
            trace_id,
            sink: self.trace,
            clock: self.clock,
            started: now,
            lap: now,
            stages: Vec::new(),
            notices: Vec::new(),
        };
        if self.policy.max_attempts == 0 {
            return Err(AskError::InvalidInput(
                "max_attempts must be at least 1".into(),
            ));
        }
        run.emit(Stage::Query(QueryStep {
            doc_ids: filter.doc_ids().map(|ids| ids.iter().cloned().collect()),
            k: self.policy.k,
            locale: filter.locale().cloned(),
            metadata: filter.metadata().map(|(k, v)| format!("{k}={v}")).collect(),
            mode: self.policy.mode.code().to_string(),
            question: question.to_string(),
            request_id: None,
            scopes: filter.scopes().iter().cloned().collect(),
        }));
        let (plan, method, notice) = self.plan(history, question);
        run.lap("plan");
        run.emit(Stage::Rewrite(RewriteStep {
            history_turns: history.len(),
            method: method.clone(),
            notice,
            original: question.to_string(),
            rewritten: plan.standalone.clone(),
            rule: plan.rewrite.clone(),
        }));
        run.emit(Stage::Intent(IntentStep {
            intent: plan.intent.code().to_string(),
            method: method.clone(),
            parts: plan.parts.clone(),
            retrieve: plan.intent != Intent::SmallTalk,
        }));
        let asked = Asked {
            question,
            rewritten: (plan.standalone.trim() != question.trim()).then(|| plan.standalone.clone()),
            intent: plan.intent,
            parts: plan.parts.clone(),
        };
        if plan.intent == Intent::SmallTalk {
            run.emit(Stage::Generation(GenerationStep::Skipped {
                reason: "small talk: replied without retrieval".to_string(),
                skipped: true,
            }));
            let answer = plan.reply.clone().unwrap_or_default();
            return Ok(self.finish(
                &mut run,
                Frame {
                    asked,
                    answer,
                    status: AnswerStatus::SmallTalk,
                    citations: Vec::new(),
                    retrieval: None,
                    routes: Vec::new(),
                    attempts: 0,
                    generator: String::new(),
                },
            ));
        }
        let parts: Vec<String> = if plan.intent == Intent::MultiPart {
            plan.parts.clone()
        } else {
            vec![plan.standalone.clone()]
        };
        let mut retrievals = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            if parts.len() > 1 {
                run.emit(Stage::SubQuestion(SubQuestionStep {
                    index: i + 1,
                    question: part.clone(),
                    total: parts.len(),
                }));
            }
            match self.retrieve_part(&mut run, part, filter)? {
                Ok(r) => retrievals.push(r),
                Err(routes) => {
                    let answer = format!(
                        "cannot retrieve: {}",
                        RetrieveError::CannotRetrieve {
                            routes: routes.clone()
                        }
                        .to_string()
                        .trim_start_matches("cannot retrieve: ")
                    );
                    return Ok(self.finish(
                        &mut run,
                        Frame {
                            asked,
                            answer,
                            status: AnswerStatus::CannotRetrieve,
                            citations: Vec::new(),
                            retrieval: None,
                            routes,
                            attempts: 0,
                            generator: String::new(),
                        },
                    ));
                }
            }
        }
        let retrieval = if retrievals.len() == 1 {
            retrievals.pop().expect("one retrieval")
        } else {
            merge(retrievals, self.policy.budget)
        };

        let sources: Vec<SourceBlock> = retrieval
            .evidence
            .iter()
            .enumerate()
            // Citation-shaped text in a document is neutralised: only markers the generator
            // writes are citations, so evidence cannot cite, block or redirect an answer.
            .map(|(i, e)| SourceBlock {
                marker: i as u32 + 1,
                chunk_id: e.chunk_id.clone(),
                title: citation::neutralise(e.chunk.doc().title.as_ref()).into_owned(),
                source: citation::neutralise(e.chunk.doc().source.as_ref()).into_owned(),
                heading_path: e
                    .chunk
                    .heading_path()
                    .iter()
                    .map(|h| citation::neutralise(h).into_owned())
                    .collect(),
                pages: e.chunk.pages(),
                text: citation::neutralise(e.chunk.content()).into_owned(),
            })
            .collect();
        if sources.is_empty() {
            run.emit(Stage::Generation(GenerationStep::Skipped {
                reason: "no evidence survived retrieval".to_string(),
                skipped: true,
            }));
            let answer = context::no_material_for(question).to_string();
            return Ok(self.finish(
                &mut run,
                Frame {
                    asked,
                    answer,
                    status: AnswerStatus::NotFound,
                    citations: Vec::new(),
                    routes: retrieval.routes.clone(),
                    retrieval: Some(&retrieval),
                    attempts: 0,
                    generator: String::new(),
                },
            ));
        }

        let generator = self.generator.identity();
        let round = Round::new(&sources);
        let mut outcomes = Vec::with_capacity(parts.len());
        let mut attempts = 0;
        for part in &parts {
            let outcome = self.answer_part(&mut run, part, &sources, &round)?;
            attempts += outcome.attempts();
            outcomes.push(outcome);
        }
        let claims: usize = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Answered { claims, .. } => *claims,
                _ => 0,
            })
            .sum();
        let (answer, status, cited) = combine(question, &parts, outcomes, self.policy.max_attempts);
        let support = (status == AnswerStatus::Answered).then(|| SupportSummary {
            claims,
            method: run
                .support_method
                .clone()
                .unwrap_or_else(|| support::LEXICAL_CHECK.to_string()),
            supported: claims,
        });
        let citations = citations_for(&answer, &cited, &retrieval.evidence);
        run.support = support;
        let generator = run.answered_by.clone().unwrap_or(generator);
        Ok(self.finish(
            &mut run,
            Frame {
                asked,
                answer,
                status,
                citations,
                routes: retrieval.routes.clone(),
                retrieval: Some(&retrieval),
                attempts,
                generator,
            },
        ))
    }

    /// The plan for `question` after `history`: the configured planner's, or the fallback
    /// planner's when it fails or returns a plan that breaks the planner contract (then with a
    /// notice).
    fn plan(&self, history: &[Turn], question: &str) -> (Plan, String, Option<String>) {
        let limit = self.query_limit(question);
        let history = plan::carried_history(history, question, limit);
        let fallback = self.fallback_planner;
        let rules = || plan::plan_within(fallback, history, question, limit);
        match self.planner.plan(history, question) {
            Ok(p) if plan_is_sound(&p, question) && plan::plan_fits(&p, limit) => {
                (p, self.planner.identity(), None)
            }
            // The rules' own plan over the bound: the rules again, within it.
            // The fallback's own plan over the bound: the fallback again, within it.
            Ok(_) if self.planner.identity() == fallback.identity() => {
                (rules(), fallback.identity(), None)
            }
            Ok(_) => (
                rules(),
                fallback.identity(),
                Some(format!(
                    "{} returned an unusable plan; {} planned instead",
                    self.planner.identity(),
                    planned_by(fallback)
                )),
            ),
            Err(e) => (
                rules(),
                fallback.identity(),
                Some(format!("{e}; {} planned instead", planned_by(fallback))),
            ),
        }
    }

    /// The longest query retrieved for `question`: the configured bound, or the question's
    /// own length when that is longer.
    fn query_limit(&self, question: &str) -> usize {
        self.max_query_chars.max(question.chars().count())
    }

    /// Retrieves for one standalone question, once more with the planner's other wording when
    /// the evidence is thin; `Err` with the routes' reports when no route could run.
    fn retrieve_part(
        &self,
        run: &mut Run<'_>,
        question: &str,
        filter: &Filter,
    ) -> Result<Result<Retrieval, Vec<RouteReport>>, AskError> {
        let first = match self.retrieve_once(run, question, filter)? {
            Ok(r) => r,
            Err(routes) => return Ok(Err(routes)),
        };
        let before = evidence_coverage(question, &first);
        if before >= THIN_EVIDENCE_FLOOR {
            return Ok(Ok(first));
        }
        let Some(other) = self
            .planner
            .reformulate(question)
            .or_else(|| self.fallback_planner.reformulate(question))
            .filter(|o| o.trim() != question.trim())
            .filter(|o| o.chars().nth(self.query_limit(question)).is_none())
        else {
            return Ok(Ok(first));
        };
        let second = match self.retrieve_once(run, &other, filter)? {
            Ok(r) => r,
            Err(_) => return Ok(Ok(first)),
        };
        let after = evidence_coverage(question, &second);
        let better = after > before;
        run.emit(Stage::Reformulation(ReformulationStep {
            coverage_after: after,
            coverage_before: before,
            floor: THIN_EVIDENCE_FLOOR,
            kept: if better { "reformulated" } else { "original" }.to_string(),
            question: question.to_string(),
            reformulated: other,
        }));
        Ok(Ok(if better { second } else { first }))
    }

    fn retrieve_once(
        &self,
        run: &mut Run<'_>,
        question: &str,
        filter: &Filter,
    ) -> Result<Result<Retrieval, Vec<RouteReport>>, AskError> {
        let request = RetrievalRequest {
            query: question,
            filter,
            mode: self.policy.mode,
            k: self.policy.k,
            // A context policy that reads around the evidence applies the budget itself.
            budget: (!self.expands()).then_some(self.policy.budget),
        };
        match self.retriever.retrieve(&request) {
            Ok(r) => {
                let r = self.shape_context(r);
                run.lap("retrieval");
                self.record_retrieval(run, &r);
                Ok(Ok(r))
            }
            Err(RetrieveError::CannotRetrieve { routes }) => {
                run.lap("retrieval");
                for r in &routes {
                    run.emit(Stage::Route(route_step(r, None, &[], 0.0)));
                }
                Ok(Err(routes))
            }
            Err(RetrieveError::Source(e)) => Err(AskError::Source(e)),
            Err(RetrieveError::InvalidInput(m)) => Err(AskError::InvalidInput(m)),
        }
    }

    /// Generates the answer to one (part of a) question over this round's sources, checking
    /// every attempt's citations and the support of each of its sentences, retrying with
    /// feedback.
    fn answer_part(
        &self,
        run: &mut Run<'_>,
        question: &str,
        sources: &[SourceBlock],
        round: &Round,
    ) -> Result<Outcome, AskError> {
        let mut generator = self.generator.identity();
        let mut feedback = None;
        let first = run.attempts + 1;
        let last = run.attempts + self.policy.max_attempts;
        for attempt in first..=last {
            run.attempts = attempt;
            let gen_request = build_request(question, sources.to_vec(), feedback.take(), attempt);
            run.emit(Stage::Context(ContextStep {
                attempt,
                feedback: gen_request.feedback.clone(),
                prompt_chars: gen_request.prompt.chars().count(),
                source_chars: sources.iter().map(|s| s.text.chars().count()).sum(),
                sources: sources.len(),
                system_chars: gen_request.system.chars().count(),
            }));
            let output = self.generator.generate_attributed(&gen_request);
            let ms = run.lap(&format!("generation.{attempt}"));
            let (text, notices) = match output {
                Ok(g) => {
                    generator = g.generator;
                    run.answered_by = Some(generator.clone());
                    (g.text, g.notices)
                }
                Err(e) => {
                    run.emit(Stage::Generation(GenerationStep::Failed {
                        attempt,
                        error: e.to_string(),
                        generator: generator.clone(),
                        ms,
                        temporary: e.is_temporary(),
                    }));
                    run.emit(Stage::Answer(AnswerStep::Failed {
                        error: e.to_string(),
                        latency_ms: run.total_ms(),
                        status: "error".to_string(),
                    }));
                    return Err(AskError::Generate(e));
                }
            };
            run.emit(Stage::Generation(GenerationStep::Produced {
                answer_chars: text.chars().count(),
                attempt,
                generator: generator.clone(),
                ms,
                notices: notices.clone(),
            }));
            run.notices.extend(notices);
            let text = text.trim().to_string();
            let resolved = citation::resolve(&text, &round.ids);
            if resolved.written == 0 && context::is_no_material(&text) {
                run.emit(Stage::CitationValidation(ValidationStep::NoMaterial {
                    attempt,
                    no_material: true,
                    ok: true,
                }));
                return Ok(Outcome::NoMaterial {
                    attempts: attempt + 1 - first,
                });
            }
            // Defence in depth: every resolved ID must be in this round's set.
            let verdict = resolved.check().and_then(|()| {
                let cited: Vec<ChunkId> = resolved.cited.iter().map(|(_, id)| id.clone()).collect();
                citation::validate(&cited, &round.set)
            });
            let retry = attempt < last;
            if let Err(violation) = verdict {
                let bad = match &violation {
                    CitationViolation::AnswerHasNoCitation => Vec::new(),
                    CitationViolation::CitationNotInThisRound { ids } => ids.clone(),
                };
                run.emit(Stage::CitationRejected(RejectionStep {
                    allowed: round.ids.clone(),
                    attempt,
                    bad,
                    code: violation.code().to_string(),
                    retry,
                }));
                feedback = Some(feedback_for(&violation, sources.len()));
                continue;
            }
            // Each sentence against the blocks it cites.
            let blocks = round.blocks(sources);
            let blocks: Vec<(u32, &str)> = blocks.iter().map(|(m, t)| (*m, t.as_str())).collect();
            let mut claims = support::check(&text, question, &blocks);
            let method = self.judge_claims(run, &mut claims, &blocks);
            // An answer must state something: markers alone ("[1] [2] [3]") say nothing.
            let ok = claims.iter().all(|c| c.verdict.passes())
                && claims.iter().any(|c| c.verdict == ClaimVerdict::Supported);
            run.emit(Stage::SupportCheck(SupportStep {
                attempt,
                claims: claims.clone(),
                floor: support::SUPPORT_FLOOR,
                method: method.clone(),
                ok,
            }));
            if !ok && claims.iter().all(|c| c.verdict.passes()) {
                run.emit(Stage::CitationRejected(RejectionStep {
                    allowed: round.ids.clone(),
                    attempt,
                    bad: Vec::new(),
                    code: "answer_states_nothing".to_string(),
                    retry,
                }));
                feedback = Some(
                    "Your previous answer stated nothing: answer the question in sentences, each \
                     followed by the number of the source that states it, or reply with the \
                     no-material sentence."
                        .to_string(),
                );
                continue;
            }
            if !ok {
                let uncited = claims.iter().any(|c| c.verdict == ClaimVerdict::Uncited);
                let unsupported = claims
                    .iter()
                    .any(|c| c.verdict == ClaimVerdict::NotSupported);
                let bad: BTreeSet<String> = claims
                    .iter()
                    .filter(|c| c.verdict == ClaimVerdict::NotSupported)
                    .flat_map(|c| c.cited.iter().map(|m| format!("[{m}]")))
                    .collect();
                run.emit(Stage::CitationRejected(RejectionStep {
                    allowed: round.ids.clone(),
                    attempt,
                    bad: bad.into_iter().collect(),
                    code: if unsupported || !uncited {
                        "claim_not_supported"
                    } else {
                        "uncited_claim"
                    }
                    .to_string(),
                    retry,
                }));
                feedback = Some(support::feedback(&claims));
                continue;
            }
            run.emit(Stage::CitationValidation(ValidationStep::Cited {
                attempt,
                cited: resolved
                    .cited
                    .iter()
                    .map(|(marker, id)| CitedChunk {
                        chunk_id: id.clone(),
                        marker: *marker,
                    })
                    .collect(),
                ok: true,
            }));
            let stated = claims
                .iter()
                .filter(|c| c.verdict != ClaimVerdict::NotAClaim)
                .count();
            run.support_method = Some(method);
            return Ok(Outcome::Answered {
                text,
                cited: resolved.cited,
                claims: stated,
                attempts: attempt + 1 - first,
            });
        }
        Ok(Outcome::Blocked {
            attempts: last + 1 - first,
        })
    }

    /// Lets the judge, if any, decide the claims the hard rules let through; returns the
    /// check that decided (the judge's identity, or the lexical check's when there is no
    /// judge or it failed — said once per run in the frame's notices).
    fn judge_claims(
        &self,
        run: &mut Run<'_>,
        claims: &mut [support::ClaimCheck],
        blocks: &[(u32, &str)],
    ) -> String {
        let Some(judge) = self.judge.filter(|_| !run.judge_failed) else {
            return support::LEXICAL_CHECK.to_string();
        };
        match support::apply_judge(claims, blocks, judge) {
            Ok(_) => judge.identity(),
            Err(e) => {
                run.judge_failed = true;
                run.notices.push(format!(
                    "the support judge {} gave no verdict ({e}): the lexical check decided",
                    judge.identity()
                ));
                support::LEXICAL_CHECK.to_string()
            }
        }
    }

    fn record_retrieval(&self, run: &Run<'_>, retrieval: &Retrieval) {
        let ms = |stage: &str| {
            retrieval
                .timings
                .iter()
                .find(|t| t.stage == stage)
                .map_or(0.0, |t| t.ms)
        };
        for r in &retrieval.routes {
            let space = match r.route {
                Route::Dense => self
                    .retriever
                    .dense_space()
                    .map(|s| s.identity().to_string()),
                Route::Lexical => None,
            };
            let hits = retrieval
                .candidates
                .get(&r.route)
                .map(Vec::as_slice)
                .unwrap_or_default();
            run.emit(Stage::Route(route_step(
                r,
                space,
                hits,
                ms(&format!("retrieval.{}", r.route)),
            )));
        }
        let fusion = self.retriever.fusion();
        run.emit(Stage::Fusion(FusionStep {
            fused: retrieval
                .evidence
                .iter()
                .map(|e| FusedEntry::Kept {
                    chunk_id: e.chunk_id.clone(),
                    routes: e
                        .routes
                        .iter()
                        .map(|h| RouteScore {
                            rank: h.rank,
                            route: h.route,
                            score: f64::from(h.score),
                        })
                        .collect(),
                    score: e.score,
                })
                .chain(
                    retrieval
                        .budget_dropped
                        .iter()
                        .map(|id| FusedEntry::LeftOut {
                            chunk_id: id.clone(),
                            left_out_by_budget: true,
                        }),
                )
                .collect(),
            k: fusion.k,
            method: fusion.method_name(),
            ms: ms("fusion"),
            weights: fusion.weights.clone(),
        }));
        run.emit(Stage::RevisionCheck(RevisionCheckStep {
            dropped: retrieval
                .dropped
                .iter()
                .map(|d| {
                    let (indexed, current) = match &d.reason {
                        DropReason::StaleRevision { indexed, current } => {
                            (Some(indexed.clone()), Some(current.clone()))
                        }
                        DropReason::Deleted
                        | DropReason::NotVisible
                        | DropReason::Expired { .. } => (None, None),
                    };
                    DroppedChunk {
                        chunk_id: d.chunk_id.clone(),
                        current,
                        doc_id: d.doc_id.clone(),
                        indexed,
                        reason: d.reason.code().to_string(),
                    }
                })
                .collect(),
            kept: retrieval.evidence.len() + retrieval.budget_dropped.len(),
            ms: ms("revision_check"),
        }));
        if let Some(rerank) = &retrieval.rerank {
            let reason = match &rerank.status {
                RouteStatus::Unavailable { reason } => Some(reason.clone()),
                _ => None,
            };
            run.emit(Stage::Rerank(RerankStep {
                reranker: rerank.reranker.clone(),
                status: if reason.is_some() {
                    "unavailable"
                } else {
                    "ran"
                }
                .to_string(),
                reason,
                scored: rerank
                    .scores
                    .iter()
                    .map(|e| RerankScore {
                        chunk_id: e.chunk_id.clone(),
                        score: e.score,
                        fused_rank: e.fused_rank,
                    })
                    .collect(),
                ms: ms("rerank"),
            }));
        }
        let budget = self.policy.budget;
        run.emit(Stage::Budget(BudgetStep {
            chars_used: retrieval.evidence.iter().map(|e| e.chunk.char_len()).sum(),
            kept: retrieval.evidence.len(),
            left_out: retrieval.budget_dropped.clone(),
            max_chars: budget.max_chars(),
            max_chunks: budget.max_chunks(),
            ms: ms("budget"),
            retrieval_truncated: retrieval.truncated,
        }));
    }

    fn finish(&self, run: &mut Run<'_>, frame: Frame<'_>) -> AnswerFrame {
        let latency_ms = run.total_ms();
        let (evidence, truncated) = match frame.retrieval {
            Some(r) => (r.evidence.iter().map(summarise).collect(), r.truncated),
            None => (Vec::new(), false),
        };
        let out = AnswerFrame {
            question: frame.asked.question.to_string(),
            rewritten: frame.asked.rewritten,
            intent: frame.asked.intent,
            parts: frame.asked.parts,
            answer: frame.answer,
            status: frame.status,
            citations: frame.citations,
            evidence,
            routes: frame.routes,
            trace_id: run.trace_id.to_string(),
            retrieval_truncated: truncated,
            attempts: frame.attempts,
            generator: frame.generator,
            notices: std::mem::take(&mut run.notices),
            latency_ms,
            stages_ms: run.stages.clone(),
            support: run.support.take(),
        };
        let routes_ran: Vec<Route> = out
            .routes
            .iter()
            .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
            .map(|r| r.route)
            .collect();
        run.emit(Stage::Answer(AnswerStep::Finished {
            answer_chars: out.answer.chars().count(),
            attempts: out.attempts,
            citations: out
                .citations
                .iter()
                .map(|c| CitedChunk {
                    chunk_id: c.chunk_id.clone(),
                    marker: c.marker,
                })
                .collect(),
            latency_ms,
            retrieval_truncated: out.retrieval_truncated,
            routes_ran,
            stages_ms: run.stages.clone(),
            status: out.status.code().to_string(),
        }));
        out
    }
}

/// What was asked, as the frame reports it.
struct Asked<'f> {
    question: &'f str,
    rewritten: Option<String>,
    intent: Intent,
    parts: Vec<String>,
}

struct Frame<'f> {
    asked: Asked<'f>,
    answer: String,
    status: AnswerStatus,
    citations: Vec<Citation>,
    retrieval: Option<&'f Retrieval>,
    routes: Vec<RouteReport>,
    attempts: u32,
    generator: String,
}

/// Share of a question's terms the best of its first pieces of evidence must hold; below it
/// the evidence is thin and the question is retrieved once more in another wording. Measured
/// on the golden sets over `examples/kb` (see `evals/README.md`): answerable questions' best
/// evidence holds a median 0.78 of their terms, 8 of 72 fall below 0.34; 5 of the 6
/// unanswerable ones do.
pub const THIN_EVIDENCE_FLOOR: f64 = 0.34;

/// How much of `question` the best of the first three pieces of evidence holds (its title,
/// headings and text), as a share of the question's terms.
pub fn evidence_coverage(question: &str, retrieval: &Retrieval) -> f64 {
    if text::terms(question).is_empty() {
        return 1.0;
    }
    retrieval
        .evidence
        .iter()
        .take(3)
        .map(|e| {
            let doc = e.chunk.doc();
            let all = format!(
                "{}\n{}\n{}",
                doc.title.as_ref() as &str,
                e.chunk.heading_path().join("\n"),
                e.chunk.content()
            );
            support::support(question, &all)
        })
        .fold(0.0, f64::max)
}

/// A plan the answerer can follow: a standalone question of sensible length, two to
/// [`plan::MAX_PARTS`] parts exactly when it has several, a reply exactly for small talk.
fn plan_is_sound(p: &Plan, question: &str) -> bool {
    let limit = question.chars().count() * 4 + 400;
    let fits = |s: &str| !s.trim().is_empty() && s.chars().count() <= limit;
    fits(&p.standalone)
        && match p.intent {
            Intent::MultiPart => {
                (2..=plan::MAX_PARTS).contains(&p.parts.len()) && p.parts.iter().all(|s| fits(s))
            }
            Intent::Knowledge => p.parts.is_empty(),
            Intent::SmallTalk => {
                p.parts.is_empty() && p.reply.as_deref().is_some_and(|r| !r.trim().is_empty())
            }
        }
}

/// This round's citable chunks, in marker order.
struct Round {
    ids: Vec<ChunkId>,
    set: BTreeSet<ChunkId>,
}

impl Round {
    fn new(sources: &[SourceBlock]) -> Self {
        let ids: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
        Self {
            set: ids.iter().cloned().collect(),
            ids,
        }
    }

    /// Each block's marker and what it says (title, headings, text) for the support check.
    fn blocks(&self, sources: &[SourceBlock]) -> Vec<(u32, String)> {
        sources
            .iter()
            .map(|s| {
                (
                    s.marker,
                    format!("{}\n{}\n{}", s.title, s.heading_path.join("\n"), s.text),
                )
            })
            .collect()
    }
}

/// How answering one (part of a) question ended.
enum Outcome {
    Answered {
        text: String,
        cited: Vec<(u32, ChunkId)>,
        /// Sentences that state something (each supported by what it cites).
        claims: usize,
        attempts: u32,
    },
    NoMaterial {
        attempts: u32,
    },
    Blocked {
        attempts: u32,
    },
}

impl Outcome {
    fn attempts(&self) -> u32 {
        match self {
            Self::Answered { attempts, .. }
            | Self::NoMaterial { attempts }
            | Self::Blocked { attempts } => *attempts,
        }
    }
}

fn blocked_sentence(times: u32) -> String {
    format!("No answer is shown: the generator's citations failed validation {times} times.")
}

/// The answer of a run from its parts' outcomes: one part's answer as it is; several parts
/// each under its sub-question, answered when any part is.
fn combine(
    question: &str,
    parts: &[String],
    outcomes: Vec<Outcome>,
    max_attempts: u32,
) -> (String, AnswerStatus, Vec<(u32, ChunkId)>) {
    if let [only] = outcomes.as_slice() {
        return match only {
            Outcome::Answered { text, cited, .. } => {
                (text.clone(), AnswerStatus::Answered, cited.clone())
            }
            Outcome::NoMaterial { .. } => (
                context::no_material_for(question).to_string(),
                AnswerStatus::NotFound,
                Vec::new(),
            ),
            Outcome::Blocked { .. } => (
                blocked_sentence(max_attempts),
                AnswerStatus::Blocked,
                Vec::new(),
            ),
        };
    }
    let mut sections = Vec::with_capacity(parts.len());
    let mut cited: Vec<(u32, ChunkId)> = Vec::new();
    let (mut answered, mut blocked) = (false, false);
    for (part, outcome) in parts.iter().zip(outcomes) {
        let body = match outcome {
            Outcome::Answered { text, cited: c, .. } => {
                answered = true;
                for pair in c {
                    if !cited.contains(&pair) {
                        cited.push(pair);
                    }
                }
                text
            }
            Outcome::NoMaterial { .. } => context::no_material_for(part).to_string(),
            Outcome::Blocked { .. } => {
                blocked = true;
                blocked_sentence(max_attempts)
            }
        };
        sections.push(format!("{}\n{body}", part.trim()));
    }
    let status = if answered {
        AnswerStatus::Answered
    } else if blocked {
        AnswerStatus::Blocked
    } else {
        AnswerStatus::NotFound
    };
    if status != AnswerStatus::Answered {
        cited.clear();
    }
    (sections.join("\n\n"), status, cited)
}

/// The evidence of several parts' retrievals as one round: their pieces taken in turn (each
/// part's best first), each chunk once, within `budget`.
fn merge(retrievals: Vec<Retrieval>, budget: RetrievalBudget) -> Retrieval {
    let mut out = Retrieval {
        evidence: Vec::new(),
        dropped: Vec::new(),
        budget_dropped: Vec::new(),
        truncated: false,
        routes: retrievals
            .first()
            .map(|r| r.routes.clone())
            .unwrap_or_default(),
        candidates: BTreeMap::new(),
        rerank: None,
        timings: Vec::new(),
    };
    let mut seen: BTreeSet<ChunkId> = BTreeSet::new();
    let mut chars = 0;
    let deepest = retrievals
        .iter()
        .map(|r| r.evidence.len())
        .max()
        .unwrap_or(0);
    for depth in 0..deepest {
        for r in &retrievals {
            let Some(e) = r.evidence.get(depth) else {
                continue;
            };
            if !seen.insert(e.chunk_id.clone()) {
                continue;
            }
            let len = e.chunk.char_len();
            if out.evidence.len() >= budget.max_chunks() || chars + len > budget.max_chars() {
                out.budget_dropped.push(e.chunk_id.clone());
                continue;
            }
            chars += len;
            out.evidence.push(Evidence {
                rank: out.evidence.len() + 1,
                ..e.clone()
            });
        }
    }
    for r in retrievals {
        out.dropped.extend(r.dropped);
        for id in r.budget_dropped {
            if seen.insert(id.clone()) {
                out.budget_dropped.push(id);
            }
        }
        for (route, hits) in r.candidates {
            out.candidates.entry(route).or_default().extend(hits);
        }
    }
    out.truncated = !out.budget_dropped.is_empty();
    out
}

fn route_step(
    r: &RouteReport,
    space: Option<String>,
    hits: &[(ChunkId, f32)],
    ms: f64,
) -> RouteStep {
    let (status, reason) = match &r.status {
        RouteStatus::Ran { .. } => (RouteOutcome::Ran, None),
        RouteStatus::Unavailable { reason } => (RouteOutcome::Unavailable, Some(reason.clone())),
        RouteStatus::NotRequested => (RouteOutcome::NotRequested, None),
    };
    RouteStep {
        embedding_space: space,
        hit_count: hits.len(),
        hits: hits
            .iter()
            .take(20)
            .enumerate()
            .map(|(i, (id, score))| RankedHit {
                chunk_id: id.clone(),
                rank: i + 1,
                score: f64::from(*score),
            })
            .collect(),
        ms,
        reason,
        route: r.route,
        status,
    }
}

fn summarise(e: &Evidence) -> EvidenceSummary {
    EvidenceSummary {
        chunk_id: e.chunk_id.clone(),
        rank: e.rank,
        score: e.score,
        scores: e.routes.iter().map(|r| (r.route, r.score)).collect(),
        route_ranks: e.routes.iter().map(|r| (r.route, r.rank)).collect(),
        doc_id: e.chunk.doc_id().clone(),
        title: e.chunk.doc().title.to_string(),
        source: e.chunk.doc().source.to_string(),
        section: e.chunk.section().clone(),
        start: e.chunk.start(),
        end: e.chunk.end(),
        around: e.routes.is_empty(),
    }
}

/// The answer text that cites `marker`: each sentence containing it.
fn citing_text(answer: &str, marker: u32) -> String {
    let needle = format!("[{marker}]");
    let parts: Vec<String> = text::sentences(answer)
        .into_iter()
        .filter(|s| s.contains(&needle) || citation::markers(s).contains(&marker))
        .collect();
    if parts.is_empty() {
        answer.to_string()
    } else {
        parts.join(" ")
    }
}

/// The sentence of `content` sharing the most terms with `claim`.
fn best_quote(content: &str, claim: &str) -> String {
    let claim_terms = text::terms(claim);
    let mut best: Option<(usize, String)> = None;
    for sentence in text::sentences(content) {
        let overlap = text::terms(&sentence).intersection(&claim_terms).count();
        if best.as_ref().is_none_or(|(b, _)| overlap > *b) {
            best = Some((overlap, sentence));
        }
    }
    let quote = best.map(|(_, s)| s).unwrap_or_default();
    if quote.chars().count() > 300 {
        let mut q: String = quote.chars().take(299).collect();
        q.push('…');
        q
    } else {
        quote
    }
}

fn citations_for(answer: &str, cited: &[(u32, ChunkId)], evidence: &[Evidence]) -> Vec<Citation> {
    let mut out: Vec<Citation> = cited
        .iter()
        .filter_map(|(marker, id)| {
            let e = evidence.iter().find(|e| &e.chunk_id == id)?;
            let doc = e.chunk.doc();
            Some(Citation {
                marker: *marker,
                chunk_id: id.clone(),
                doc_id: e.chunk.doc_id().clone(),
                title: doc.title.to_string(),
                source: doc.source.to_string(),
                heading_path: e.chunk.heading_path().to_vec(),
                section: e.chunk.section().clone(),
                pages: e.chunk.pages(),
                revision: doc.revision.to_string(),
                quote: best_quote(e.chunk.content(), &citing_text(answer, *marker)),
            })
        })
        .collect();
    out.sort_by_key(|c| c.marker);
    out
}

/// How a notice names the planner that stood in: "the rules" for the offline rules planner
/// (`rules-…`), its identity otherwise.
fn planned_by(planner: &dyn Planner) -> String {
    let identity = planner.identity();
    if identity.starts_with("rules") {
        "the rules".to_string()
    } else {
        identity
    }
}
