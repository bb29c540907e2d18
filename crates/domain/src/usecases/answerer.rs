//! Grounded answers: retrieve, check, budget, generate, validate citations, frame the result,
//! and record every step as a trace event.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::contracts::{Chunk, ChunkId, DocId, Filter, PageSpan, SectionId};
use crate::ports::{
    AnswerStep, BudgetStep, CitedChunk, Clock, ContextStep, DocumentChunks, DroppedChunk,
    FusedEntry, FusionStep, GenerateError, GenerationStep, Generator, PhaseTime, QueryStep,
    RankedHit, RejectionStep, RerankScore, RerankStep, RevisionCheckStep, RouteOutcome, RouteScore,
    RouteStep, SourceBlock, SourceError, Stage, TraceEvent, TraceSink, ValidationStep, elapsed_ms,
};
use crate::rules::budget::RetrievalBudget;
use crate::rules::citation::{self, CitationViolation};
use crate::rules::context::{self, build_request, feedback_for};
use crate::rules::expand::{ContextPolicy, expand};
use crate::rules::fusion::Route;
use crate::rules::revision::DropReason;
use crate::rules::text;

use super::retriever::{
    Evidence, Retrieval, RetrievalMode, RetrievalRequest, RetrieveError, Retriever, RouteReport,
    RouteStatus,
};

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
}

impl AnswerStatus {
    /// `answered`, `not_found`, `cannot_retrieve` or `blocked`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::NotFound => "not_found",
            Self::CannotRetrieve => "cannot_retrieve",
            Self::Blocked => "blocked",
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
}

impl std::fmt::Debug for Answerer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerer")
            .field("generator", &self.generator.identity())
            .field("policy", &self.policy)
            .finish()
    }
}

struct Run<'r> {
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
        }
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
        let now = self.clock.now();
        let mut run = Run {
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
        let request = RetrievalRequest {
            query: question,
            filter,
            mode: self.policy.mode,
            k: self.policy.k,
            // A context policy that reads around the evidence applies the budget itself.
            budget: (!self.expands()).then_some(self.policy.budget),
        };
        let retrieval = match self.retriever.retrieve(&request) {
            Ok(r) => r,
            Err(RetrieveError::CannotRetrieve { routes }) => {
                run.lap("retrieval");
                for r in &routes {
                    run.emit(Stage::Route(route_step(r, None, &[], 0.0)));
                }
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
                        question,
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
            Err(RetrieveError::Source(e)) => return Err(AskError::Source(e)),
            Err(RetrieveError::InvalidInput(m)) => return Err(AskError::InvalidInput(m)),
        };
        let retrieval = self.shape_context(retrieval);
        run.lap("retrieval");
        self.record_retrieval(&run, &retrieval);

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
                    question,
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

        let round: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
        let round_set: BTreeSet<ChunkId> = round.iter().cloned().collect();
        let mut generator = self.generator.identity();
        let mut feedback = None;
        for attempt in 1..=self.policy.max_attempts {
            let gen_request = build_request(question, sources.clone(), feedback.take(), attempt);
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
            let resolved = citation::resolve(&text, &round);
            if resolved.written == 0 && context::is_no_material(&text) {
                run.emit(Stage::CitationValidation(ValidationStep::NoMaterial {
                    attempt,
                    no_material: true,
                    ok: true,
                }));
                return Ok(self.finish(
                    &mut run,
                    Frame {
                        question,
                        answer: context::no_material_for(question).to_string(),
                        status: AnswerStatus::NotFound,
                        citations: Vec::new(),
                        routes: retrieval.routes.clone(),
                        retrieval: Some(&retrieval),
                        attempts: attempt,
                        generator,
                    },
                ));
            }
            // Defence in depth: every resolved ID must be in this round's set.
            let verdict = resolved.check().and_then(|()| {
                let cited: Vec<ChunkId> = resolved.cited.iter().map(|(_, id)| id.clone()).collect();
                citation::validate(&cited, &round_set)
            });
            match verdict {
                Ok(()) => {
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
                    let citations = citations_for(&text, &resolved.cited, &retrieval.evidence);
                    return Ok(self.finish(
                        &mut run,
                        Frame {
                            question,
                            answer: text,
                            status: AnswerStatus::Answered,
                            citations,
                            routes: retrieval.routes.clone(),
                            retrieval: Some(&retrieval),
                            attempts: attempt,
                            generator,
                        },
                    ));
                }
                Err(violation) => {
                    let bad = match &violation {
                        CitationViolation::AnswerHasNoCitation => Vec::new(),
                        CitationViolation::CitationNotInThisRound { ids } => ids.clone(),
                    };
                    run.emit(Stage::CitationRejected(RejectionStep {
                        allowed: round.clone(),
                        attempt,
                        bad,
                        code: violation.code().to_string(),
                        retry: attempt < self.policy.max_attempts,
                    }));
                    feedback = Some(feedback_for(&violation, sources.len()));
                }
            }
        }
        let answer = format!(
            "No answer is shown: the generator's citations failed validation {} times.",
            self.policy.max_attempts
        );
        Ok(self.finish(
            &mut run,
            Frame {
                question,
                answer,
                status: AnswerStatus::Blocked,
                citations: Vec::new(),
                routes: retrieval.routes.clone(),
                retrieval: Some(&retrieval),
                attempts: self.policy.max_attempts,
                generator,
            },
        ))
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
                        DropReason::Deleted | DropReason::NotVisible => (None, None),
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
            question: frame.question.to_string(),
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

struct Frame<'f> {
    question: &'f str,
    answer: String,
    status: AnswerStatus,
    citations: Vec<Citation>,
    retrieval: Option<&'f Retrieval>,
    routes: Vec<RouteReport>,
    attempts: u32,
    generator: String,
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
