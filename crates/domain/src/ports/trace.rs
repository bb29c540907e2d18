//! The trace port: every run's steps as typed events.
//!
//! An event is `{"trace_id", "stage", "data"}` on the wire, in a stream and in a trace file:
//! `stage` names the step and `data` holds its details. [`Stage`] gives each step its fields.
//! The JSON is a published format (the web page, the OpenAPI document and stored trace files
//! read it), so the types follow it exactly:
//!
//! - the fields of every step are declared in alphabetical order, the order the keys have
//!   always had, so an event serialised directly (a stream) and one serialised through
//!   `serde_json::Value` (a trace file) are the same bytes;
//! - scores are `f64`: the routes' own `f32` scores were always written widened;
//! - an optional value is written as `null`, except where a key was only ever present
//!   sometimes (the request ID of the query step, the revisions of a dropped chunk).
//!
//! Reading is lenient where writing is exact: a step this version does not know, or whose
//! details do not match its type, is kept whole as [`Stage::Other`], so one odd line never
//! hides the rest of a stored trace.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::generator::ServedUsage;
use crate::contracts::{ChunkId, DocId, Locale, Reader, Revision, Scope};
use crate::rules::fusion::Route;

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// The run this event belongs to.
    pub trace_id: String,
    /// The step and its details (the `stage` and `data` keys).
    #[serde(flatten)]
    pub stage: Stage,
}

impl TraceEvent {
    /// An event of run `trace_id`.
    pub fn new(trace_id: impl Into<String>, stage: Stage) -> Self {
        Self {
            trace_id: trace_id.into(),
            stage,
        }
    }
}

/// An event as a trace file holds it: with the wall-clock time it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTraceEvent {
    /// Milliseconds since the Unix epoch when the sink received the event (absent only in
    /// lines written by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// The event.
    #[serde(flatten)]
    pub event: TraceEvent,
}

/// A step of an answer run, tagged by its `stage` name with its details under `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", content = "data")]
pub enum Stage {
    /// `query`: what was asked, within which filter; opens every run.
    #[serde(rename = "query")]
    Query(QueryStep),
    /// `rewrite`: the question read in its conversation, made standalone for retrieval.
    #[serde(rename = "rewrite")]
    Rewrite(RewriteStep),
    /// `intent`: what the question is (knowledge, several parts, small talk), before anything
    /// is retrieved.
    #[serde(rename = "intent")]
    Intent(IntentStep),
    /// `sub_question`: the part of a several-part question the retrieval steps after it are
    /// for.
    #[serde(rename = "sub_question")]
    SubQuestion(SubQuestionStep),
    /// `reformulation`: a retrieval that found little, run once more with another wording.
    #[serde(rename = "reformulation")]
    Reformulation(ReformulationStep),
    /// `retrieval.route`: one retrieval route's outcome and its best hits.
    #[serde(rename = "retrieval.route")]
    Route(RouteStep),
    /// `fusion`: the routes' candidates merged into one ranking.
    #[serde(rename = "fusion")]
    Fusion(FusionStep),
    /// `revision_check`: candidates checked against the source, the stale ones dropped.
    #[serde(rename = "revision_check")]
    RevisionCheck(RevisionCheckStep),
    /// `rerank`: the checked candidates' top reordered by a reranker, or why it was not.
    #[serde(rename = "rerank")]
    Rerank(RerankStep),
    /// `budget`: what of the evidence fits the context.
    #[serde(rename = "budget")]
    Budget(BudgetStep),
    /// `token_budget`: the round's source blocks counted in tokens, and what a token limit on
    /// the context left out (recorded when the answerer counts tokens).
    #[serde(rename = "token_budget")]
    TokenBudget(TokenBudgetStep),
    /// `context`: the request an attempt sends to the generator.
    #[serde(rename = "context")]
    Context(ContextStep),
    /// `prompt`: the exact text an attempt sends to the generator (recorded only when the
    /// prompt log is on; kept and shown like every other step of the trace).
    #[serde(rename = "prompt")]
    Prompt(PromptStep),
    /// `generation`: an attempt's generator call, or why there was none.
    #[serde(rename = "generation")]
    Generation(GenerationStep),
    /// `citation_validation`: an attempt whose answer passed the citation rules.
    #[serde(rename = "citation_validation")]
    CitationValidation(ValidationStep),
    /// `citation_rejected`: an attempt whose citations failed, and whether another follows.
    #[serde(rename = "citation_rejected")]
    CitationRejected(RejectionStep),
    /// `support_check`: each sentence of an attempt's answer against the blocks it cites.
    #[serde(rename = "support_check")]
    SupportCheck(SupportStep),
    /// `answer`: how the run ended; closes every run that produced a frame or failed in the
    /// generator.
    #[serde(rename = "answer")]
    Answer(AnswerStep),
    /// A step read back from a trace that this version has no type for (an unknown name, or
    /// details that do not match the named step's type), kept as it was.
    #[serde(untagged)]
    Other {
        /// The step name as written.
        stage: String,
        /// The details as written (`null` when the line had none).
        #[serde(default)]
        data: Value,
    },
}

impl Stage {
    /// The step name, as written in the `stage` key.
    pub fn name(&self) -> &str {
        match self {
            Self::Query(_) => "query",
            Self::Rewrite(_) => "rewrite",
            Self::Intent(_) => "intent",
            Self::SubQuestion(_) => "sub_question",
            Self::Reformulation(_) => "reformulation",
            Self::SupportCheck(_) => "support_check",
            Self::Route(_) => "retrieval.route",
            Self::Fusion(_) => "fusion",
            Self::RevisionCheck(_) => "revision_check",
            Self::Rerank(_) => "rerank",
            Self::Budget(_) => "budget",
            Self::TokenBudget(_) => "token_budget",
            Self::Context(_) => "context",
            Self::Prompt(_) => "prompt",
            Self::Generation(_) => "generation",
            Self::CitationValidation(_) => "citation_validation",
            Self::CitationRejected(_) => "citation_rejected",
            Self::Answer(_) => "answer",
            Self::Other { stage, .. } => stage,
        }
    }

    /// The scopes a run searched: present on a typed `query` step only. Whoever may see a
    /// trace is decided from these, so a `query` step that did not read back typed yields
    /// `None` (and the trace is shown to nobody).
    pub fn scopes(&self) -> Option<&[Scope]> {
        match self {
            Self::Query(q) => Some(&q.scopes),
            _ => None,
        }
    }

    /// The reader terms a run was held to: present on a typed `query` step of a person's run
    /// only. A person may see a trace only when it is their own run.
    pub fn readers(&self) -> Option<&[Reader]> {
        match self {
            Self::Query(q) => q.readers.as_deref(),
            _ => None,
        }
    }
}

/// `query`: the question and the filter the caller's identity allowed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryStep {
    /// The documents the filter is restricted to, or `None` for all.
    pub doc_ids: Option<Vec<DocId>>,
    /// Candidates asked of each route.
    pub k: usize,
    /// The locale filter.
    pub locale: Option<Locale>,
    /// Metadata conditions, each as `key=value`.
    pub metadata: Vec<String>,
    /// The retrieval mode: `hybrid`, `lexical` or `dense`.
    pub mode: String,
    /// The question as asked.
    pub question: String,
    /// The reader terms the search was held to, when the caller acted for a person (their
    /// `user:…`, groups and `*`): whose run it is. Absent for a caller that reads whole scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<Vec<Reader>>,
    /// The transport request that started the run, when a transport names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The scopes searched, sorted.
    pub scopes: Vec<Scope>,
}

/// `rewrite`: the question as asked and as retrieved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteStep {
    /// Earlier turns the caller sent.
    pub history_turns: usize,
    /// The planner that read the question (`rules-v1`, or a model's identity).
    pub method: String,
    /// Why the configured planner was not used (it failed; the rules planned instead).
    pub notice: Option<String>,
    /// The question as asked.
    pub original: String,
    /// The standalone question retrieval runs on.
    pub rewritten: String,
    /// The rewrite that applied (`replace_topic`, `replace_aspect`, `add_condition`,
    /// `own_question`, `implicit_subject`, `resolve_pronoun`, `carry_question`,
    /// `standard_form`, `comparison`, a model's `llm`), or `None` when the question was taken as asked.
    pub rule: Option<String>,
    /// Earlier turns the planner read: the most recent ones within the history's token limit
    /// (recorded when the answerer counts tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_turns_read: Option<usize>,
    /// Tokens of the turns the planner read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_tokens: Option<usize>,
    /// The questions of the earlier turns sent, oldest first: the last
    /// [`EARLIER_QUESTIONS_KEPT`] of them, each cut at [`EARLIER_QUESTION_CHARS`] characters —
    /// enough to tell which conversation a follow-up belonged to when a recorded run is graded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_questions: Vec<String>,
}

/// Earlier questions a `rewrite` step keeps.
pub const EARLIER_QUESTIONS_KEPT: usize = 20;
/// Characters of each earlier question a `rewrite` step keeps.
pub const EARLIER_QUESTION_CHARS: usize = 200;

/// The earlier questions of `history` as a `rewrite` step keeps them.
pub fn earlier_questions<'q>(history: impl DoubleEndedIterator<Item = &'q str>) -> Vec<String> {
    let mut kept: Vec<String> = history
        .rev()
        .take(EARLIER_QUESTIONS_KEPT)
        .map(|q| q.chars().take(EARLIER_QUESTION_CHARS).collect())
        .collect();
    kept.reverse();
    kept
}

/// `intent`: what the question is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentStep {
    /// `knowledge`, `multi_part`, `comparison` or `small_talk`.
    pub intent: String,
    /// The planner that decided.
    pub method: String,
    /// The sub-questions of a several-part question, each retrieved on its own.
    pub parts: Vec<String>,
    /// Whether retrieval runs (not for small talk).
    pub retrieve: bool,
    /// Why the planner read the question so (a model planner's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How sure the planner was, from 0 to 1 (a model planner's own estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

/// `sub_question`: which part the following retrieval steps are for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubQuestionStep {
    /// 1-based part.
    pub index: usize,
    /// The part, standalone.
    pub question: String,
    /// Parts in all.
    pub total: usize,
}

/// `reformulation`: a thin retrieval run again with another wording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReformulationStep {
    /// Share of the question's terms the best evidence of the reformulated retrieval holds.
    pub coverage_after: f64,
    /// The same share for the first retrieval.
    pub coverage_before: f64,
    /// The share below which evidence counts as thin.
    pub floor: f64,
    /// `reformulated` when the second retrieval's evidence is used, `original` otherwise.
    pub kept: String,
    /// The question retrieved first.
    pub question: String,
    /// The other wording retrieved second.
    pub reformulated: String,
}

/// `support_check`: every sentence of one attempt's answer, against what it cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupportStep {
    /// 1-based attempt.
    pub attempt: u32,
    /// One check per sentence, in the answer's order.
    pub claims: Vec<crate::rules::support::ClaimCheck>,
    /// Share of a claim's terms its cited blocks must hold.
    pub floor: f64,
    /// The check's identity (`lexical-v1`).
    pub method: String,
    /// Whether every sentence passed.
    pub ok: bool,
}

/// Whether a retrieval route ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteOutcome {
    /// The route ran.
    Ran,
    /// The route could not run (the step's `reason` says why).
    Unavailable,
    /// The mode did not ask for the route.
    NotRequested,
}

/// `retrieval.route`: one route's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteStep {
    /// The embedding space searched (dense route only).
    pub embedding_space: Option<String>,
    /// Candidates the route returned.
    pub hit_count: usize,
    /// The best candidates (at most 20), in rank order.
    pub hits: Vec<RankedHit>,
    /// Time the route took.
    pub ms: f64,
    /// Why the route could not run.
    pub reason: Option<String>,
    /// The route.
    pub route: Route,
    /// Whether it ran.
    pub status: RouteOutcome,
}

/// A candidate of one route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankedHit {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// 1-based rank within the route.
    pub rank: usize,
    /// The route's own score.
    pub score: f64,
}

/// `fusion`: the merged ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionStep {
    /// Every candidate that survived the revision check, in fused order, then those the budget
    /// left out.
    pub fused: Vec<FusedEntry>,
    /// The reciprocal-rank-fusion constant (unused by a convex combination).
    pub k: f64,
    /// The fusion method (`reciprocal_rank_fusion`, `convex_min_max`, `convex_z_score`, with
    /// `+confidence` when route weights followed route confidence).
    pub method: String,
    /// Time fusion took.
    pub ms: f64,
    /// Per-route weights; routes not listed weigh 1.
    pub weights: BTreeMap<Route, f64>,
}

/// One entry of the fused ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum FusedEntry {
    /// Evidence that reached the context.
    Kept {
        /// The chunk.
        chunk_id: ChunkId,
        /// Each route's rank and score for it.
        routes: Vec<RouteScore>,
        /// The fused score.
        score: f64,
    },
    /// A chunk the budget left out.
    LeftOut {
        /// The chunk.
        chunk_id: ChunkId,
        /// Always `true`.
        left_out_by_budget: bool,
    },
}

/// A route's view of one fused chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteScore {
    /// 1-based rank within the route.
    pub rank: usize,
    /// The route.
    pub route: Route,
    /// The route's own score.
    pub score: f64,
}

/// `rerank`: what the reranker did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankStep {
    /// The reranker's name.
    pub reranker: String,
    /// `ran`, or `unavailable` (the fused order was kept).
    pub status: String,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The scored candidates in their new order.
    pub scored: Vec<RerankScore>,
    /// Time reranking took.
    pub ms: f64,
}

/// One candidate's reranker score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankScore {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The reranker's score.
    pub score: f64,
    /// Its 1-based rank after fusion.
    pub fused_rank: usize,
}

/// `revision_check`: candidates checked against the source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionCheckStep {
    /// The candidates dropped, with why.
    pub dropped: Vec<DroppedChunk>,
    /// Candidates kept (before the budget).
    pub kept: usize,
    /// Time the check took.
    pub ms: f64,
}

/// A candidate the revision check dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedChunk {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The revision at the source now (`stale_revision` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Revision>,
    /// Its document.
    pub doc_id: DocId,
    /// The revision the chunk was indexed from (`stale_revision` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed: Option<Revision>,
    /// `stale_revision`, `deleted`, `not_visible` or `expired`.
    pub reason: String,
}

/// `budget`: what of the evidence fits the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetStep {
    /// Characters of the evidence kept.
    pub chars_used: usize,
    /// Chunks kept.
    pub kept: usize,
    /// Chunks left out, in rank order.
    pub left_out: Vec<ChunkId>,
    /// The character budget.
    pub max_chars: usize,
    /// The chunk budget.
    pub max_chunks: usize,
    /// Time the budget took.
    pub ms: f64,
    /// True when the budget left evidence out.
    pub retrieval_truncated: bool,
    /// The sources of the evidence kept that OCR read (scans, pictures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ocr_sources: Vec<String>,
    /// Evidence read by OCR left out because a text layer's chunk said the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ocr_twins: Vec<ChunkId>,
}

/// `context`: the sizes of one attempt's generation request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextStep {
    /// 1-based attempt.
    pub attempt: u32,
    /// What the attempt was told about the previous one's citations.
    pub feedback: Option<String>,
    /// Characters of the prompt.
    pub prompt_chars: usize,
    /// Characters of the source texts.
    pub source_chars: usize,
    /// Sources in the context.
    pub sources: usize,
    /// Characters of the system prompt.
    pub system_chars: usize,
    /// Tokens of the system prompt and the prompt together (recorded when the answerer counts
    /// tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<usize>,
    /// The most tokens the answer may take, when a limit was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answer_tokens: Option<u32>,
}

/// `prompt`: what one attempt sent to the generator, exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptStep {
    /// 1-based attempt.
    pub attempt: u32,
    /// The system prompt.
    pub system: String,
    /// The prompt: the numbered source blocks, the question and any feedback.
    pub prompt: String,
    /// The most tokens the answer was allowed, when a limit was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The sampling temperature asked for, in thousandths, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_milli: Option<u16>,
}

/// `token_budget`: the round's source blocks in tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBudgetStep {
    /// The tokenizer that counted (`tokenizer.json:…`, or an estimate's name).
    pub tokenizer: String,
    /// True when the counts are the generator's own tokenizer's.
    pub exact: bool,
    /// Tokens of the source blocks kept, each counted as rendered in the prompt.
    pub source_tokens: usize,
    /// The context's token limit, when one is set.
    pub max_source_tokens: Option<usize>,
    /// Source blocks kept.
    pub kept: usize,
    /// Chunks the token limit left out, whole.
    pub left_out: Vec<ChunkId>,
}

/// `generation`: one attempt's call, or why no call was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum GenerationStep {
    /// Generation did not run.
    Skipped {
        /// Why.
        reason: String,
        /// Always `true`.
        skipped: bool,
    },
    /// The generator failed; the run ends with an error.
    Failed {
        /// 1-based attempt.
        attempt: u32,
        /// The generator's error.
        error: String,
        /// The generator's identity.
        generator: String,
        /// Time the call took.
        ms: f64,
        /// Whether a retry may succeed.
        temporary: bool,
    },
    /// The generator answered.
    Produced {
        /// Characters of the raw answer.
        answer_chars: usize,
        /// Tokens of the raw answer (recorded when the answerer counts tokens).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer_tokens: Option<usize>,
        /// 1-based attempt.
        attempt: u32,
        /// The identity of the generator that answered.
        generator: String,
        /// Time the call took.
        ms: f64,
        /// How the answer came about when it was not the configured generator's (a fallback).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notices: Vec<String>,
        /// The tokens the generator's server says it read and wrote, when it says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        served: Option<ServedUsage>,
    },
}

/// `citation_validation`: an attempt's answer passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum ValidationStep {
    /// The answer is the no-material sentence: nothing to cite.
    NoMaterial {
        /// 1-based attempt.
        attempt: u32,
        /// Always `true`.
        no_material: bool,
        /// Always `true`.
        ok: bool,
    },
    /// Every citation names this round's evidence.
    Cited {
        /// 1-based attempt.
        attempt: u32,
        /// The citations, in the answer's order.
        cited: Vec<CitedChunk>,
        /// Always `true`.
        ok: bool,
    },
}

/// A citation marker and the chunk it resolved to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitedChunk {
    /// The cited chunk.
    pub chunk_id: ChunkId,
    /// The `[n]` marker.
    pub marker: u32,
    /// The cited chunk's document (absent in traces written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_id: Option<DocId>,
}

/// `citation_rejected`: an attempt's citations failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectionStep {
    /// This round's evidence, the only chunks an answer may cite.
    pub allowed: Vec<ChunkId>,
    /// 1-based attempt.
    pub attempt: u32,
    /// The offending citations as written (markers or IDs), sorted.
    pub bad: Vec<String>,
    /// `answer_has_no_citation`, `citation_not_in_this_round`, `claim_not_supported` or
    /// `uncited_claim`.
    pub code: String,
    /// Whether another attempt follows.
    pub retry: bool,
}

/// `answer`: how the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum AnswerStep {
    /// The run produced a frame.
    Finished {
        /// The answer text shown (absent in traces written before it was kept), so that a
        /// recorded run can be graded without asking again (`zhiku eval --from-traces`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        /// Characters of the answer text shown.
        answer_chars: usize,
        /// Generation attempts made.
        attempts: u32,
        /// The answer's citations, in marker order.
        citations: Vec<CitedChunk>,
        /// Total run time.
        latency_ms: f64,
        /// True when the budget left evidence out.
        retrieval_truncated: bool,
        /// The routes that ran.
        routes_ran: Vec<Route>,
        /// Time per phase, in order.
        stages_ms: Vec<PhaseTime>,
        /// `answered`, `not_found`, `cannot_retrieve`, `blocked` or `small_talk`.
        status: String,
    },
    /// The generator failed and the run produced no frame.
    Failed {
        /// The generator's error.
        error: String,
        /// Total run time.
        latency_ms: f64,
        /// Always `error`.
        status: String,
    },
}

/// Time one phase of a run took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseTime {
    /// Milliseconds.
    pub ms: f64,
    /// `retrieval` or `generation.<attempt>`.
    pub stage: String,
}

/// Receives trace events.
///
/// # Contract
///
/// - [`record`](Self::record) MUST NOT fail the run: a sink that cannot write reports the
///   problem through its own channel and drops the event.
/// - Events of one run arrive in the order the run produced them.
pub trait TraceSink: Send + Sync {
    /// Records one event.
    fn record(&self, event: TraceEvent);
}

/// A sink that discards events.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullTraceSink;

impl TraceSink for NullTraceSink {
    fn record(&self, _event: TraceEvent) {}
}

/// A trace sink whose runs can be read back (the trace endpoint, `zhiku ask --trace`).
///
/// # Contract
///
/// - [`read`](Self::read) returns a finished run's events in the order they were recorded, and
///   an empty list for an unknown or malformed trace ID.
/// - [`finish`](Self::finish) makes a run that ended without its final event readable.
pub trait TraceStore: TraceSink {
    /// Makes what was recorded of `trace_id` readable.
    fn finish(&self, trace_id: &str);

    /// The recorded events of `trace_id`, as stored.
    fn read(&self, trace_id: &str) -> Result<Vec<StoredTraceEvent>, super::BoxError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query() -> QueryStep {
        QueryStep {
            doc_ids: None,
            k: 8,
            locale: None,
            metadata: vec!["kind=guide".into()],
            mode: "hybrid".into(),
            question: "块的 ID？".into(),
            readers: None,
            request_id: None,
            scopes: vec![Scope::new("public").unwrap()],
        }
    }

    #[test]
    fn an_event_is_trace_id_stage_data_in_that_order() {
        let event = TraceEvent::new("t-1", Stage::Query(query()));
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"trace_id":"t-1","stage":"query","data":{"doc_ids":null,"k":8,"locale":null,"metadata":["kind=guide"],"mode":"hybrid","question":"块的 ID？","scopes":["public"]}}"#
        );
        // Through a Value (whose keys are sorted, as a trace file writes them): the same
        // details, byte for byte.
        let value = serde_json::to_value(&event).unwrap();
        let direct = serde_json::to_string(&event).unwrap();
        assert!(direct.contains(&value["data"].to_string()), "{direct}");
        let back: TraceEvent = serde_json::from_value(value).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn the_request_id_is_written_only_when_known() {
        let mut q = query();
        let without = serde_json::to_value(Stage::Query(q.clone())).unwrap();
        assert!(without["data"].get("request_id").is_none());
        q.request_id = Some("req-1".into());
        let with = serde_json::to_value(Stage::Query(q)).unwrap();
        assert_eq!(with["data"]["request_id"], "req-1");
        // Alphabetical, like the map it replaces: between question and scopes.
        let text = serde_json::to_string(&Stage::Query(
            serde_json::from_value(with["data"].clone()).unwrap(),
        ))
        .unwrap();
        assert!(text.contains(r#""question":"块的 ID？","request_id":"req-1","scopes""#));
    }

    #[test]
    fn unknown_or_malformed_steps_read_back_whole_as_other() {
        let lines = [
            // A step this version has no type for.
            r#"{"at_ms":5,"trace_id":"t","stage":"rerank","data":{"model":"x","kept":[1,2]}}"#,
            // A known name whose details do not fit its type (a missing and an extra key).
            r#"{"at_ms":6,"trace_id":"t","stage":"query","data":{"question":"q"}}"#,
            r#"{"at_ms":7,"trace_id":"t","stage":"budget","data":{"chars_used":1,"kept":1,"left_out":[],"max_chars":9,"max_chunks":1,"ms":0.0,"retrieval_truncated":false,"new_key":1}}"#,
            // A scope that no longer validates.
            r#"{"at_ms":8,"trace_id":"t","stage":"query","data":{"doc_ids":null,"k":8,"locale":null,"metadata":[],"mode":"hybrid","question":"q","scopes":["Not A Scope!"]}}"#,
            // No details at all.
            r#"{"at_ms":9,"trace_id":"t","stage":"answer"}"#,
        ];
        for line in lines {
            let e: StoredTraceEvent =
                serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}"));
            assert!(matches!(e.event.stage, Stage::Other { .. }), "{line}");
            assert_eq!(e.event.stage.scopes(), None, "{line}");
            assert_eq!(e.event.trace_id, "t");
            let original: Value = serde_json::from_str(line).unwrap();
            let again = serde_json::to_value(&e).unwrap();
            if original.get("data").is_some() {
                // Kept whole: written back, the line is what it was.
                assert_eq!(again, original, "{line}");
            } else {
                assert_eq!(again["data"], Value::Null);
            }
        }
        assert_eq!(
            serde_json::from_str::<StoredTraceEvent>(lines[0])
                .unwrap()
                .event
                .stage
                .name(),
            "rerank"
        );
    }

    #[test]
    fn a_stored_line_reads_back_typed_with_its_time() {
        let stored = StoredTraceEvent {
            at_ms: Some(1_700_000_000_000),
            event: TraceEvent::new("t", Stage::Query(query())),
        };
        let line = serde_json::to_value(&stored).unwrap().to_string();
        assert!(
            line.starts_with(r#"{"at_ms":1700000000000,"data":{"#),
            "{line}"
        );
        let back: StoredTraceEvent = serde_json::from_str(&line).unwrap();
        assert_eq!(back, stored);
        assert_eq!(
            back.event.stage.scopes(),
            Some(&[Scope::new("public").unwrap()][..])
        );
        // A line without its time still reads.
        let bare: StoredTraceEvent = serde_json::from_value(json!({
            "trace_id": "t", "stage": "context", "data": {"attempt": 1, "feedback": null,
            "prompt_chars": 3, "source_chars": 2, "sources": 1, "system_chars": 4}
        }))
        .unwrap();
        assert_eq!(bare.at_ms, None);
        assert!(matches!(
            bare.event.stage,
            Stage::Context(ContextStep { attempt: 1, .. })
        ));
    }

    #[test]
    fn each_shape_of_a_step_reads_back_as_its_own_variant() {
        let cases = [
            (
                json!({"stage": "generation", "data": {"reason": "none", "skipped": true}}),
                "skipped",
            ),
            (
                json!({"stage": "generation", "data": {"attempt": 1, "error": "e",
                    "generator": "g", "ms": 0.0, "temporary": true}}),
                "failed",
            ),
            (
                json!({"stage": "generation", "data": {"answer_chars": 3, "attempt": 1,
                    "generator": "g", "ms": 0.0}}),
                "produced",
            ),
            (
                json!({"stage": "answer", "data": {"error": "e", "latency_ms": 1.0,
                    "status": "error"}}),
                "answer failed",
            ),
            (
                json!({"stage": "citation_validation", "data": {"attempt": 1,
                    "no_material": true, "ok": true}}),
                "no material",
            ),
        ];
        for (value, shape) in cases {
            let stage: Stage = serde_json::from_value(value.clone()).unwrap();
            let got = match &stage {
                Stage::Generation(GenerationStep::Skipped { .. }) => "skipped",
                Stage::Generation(GenerationStep::Failed { .. }) => "failed",
                Stage::Generation(GenerationStep::Produced { .. }) => "produced",
                Stage::Answer(AnswerStep::Failed { .. }) => "answer failed",
                Stage::CitationValidation(ValidationStep::NoMaterial { .. }) => "no material",
                _ => "other",
            };
            assert_eq!(got, shape, "{value}");
            assert_eq!(serde_json::to_value(&stage).unwrap(), value);
        }
    }
}
