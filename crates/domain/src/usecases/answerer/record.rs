//! The trace steps of an answer run, each built by a pure function from what the run decided,
//! and the thin function that records a retrieval's steps.

use crate::contracts::{ChunkId, EmbeddingSpace, Filter};
use crate::ports::{
    AnswerStep, BudgetStep, CitedChunk, ContextStep, DroppedChunk, FusedEntry, FusionStep,
    GenerationRequest, GenerationStep, IntentStep, QueryStep, RankedHit, ReformulationStep,
    RejectionStep, RerankScore, RerankStep, RevisionCheckStep, RewriteStep, RouteOutcome,
    RouteScore, RouteStep, SourceBlock, Stage,
};
use crate::rules::budget::RetrievalBudget;
use crate::rules::fusion::{FusionConfig, Route};
use crate::rules::revision::DropReason;

use super::super::retriever::{RerankReport, Retrieval, RouteReport, RouteStatus};
use super::attempt::{Rejection, Round};
use super::frame::{AnswerFrame, TokenUsage};
use super::parts::THIN_EVIDENCE_FLOOR;
use super::planning::Planned;
use super::policy::AnswerPolicy;
use super::run::Run;

/// Records `retrieval`'s steps: each route, fusion, the revision check, the reranking (when a
/// reranker ran) and the budget.
pub(super) fn record_retrieval(
    run: &Run<'_>,
    retrieval: &Retrieval,
    dense_space: Option<&EmbeddingSpace>,
    fusion: &FusionConfig,
    budget: RetrievalBudget,
) {
    for r in &retrieval.routes {
        run.emit(Stage::Route(retrieved_route_step(
            retrieval,
            r,
            dense_space,
        )));
    }
    run.emit(Stage::Fusion(fusion_step(retrieval, fusion)));
    run.emit(Stage::RevisionCheck(revision_step(retrieval)));
    if let Some(rerank) = &retrieval.rerank {
        run.emit(Stage::Rerank(rerank_step(
            rerank,
            stage_ms(retrieval, "rerank"),
        )));
    }
    run.emit(Stage::Budget(budget_step(retrieval, budget)));
}

/// The question as asked, with the filter it runs in and the policy's mode and `k`.
pub(super) fn query_step(question: &str, filter: &Filter, policy: &AnswerPolicy) -> QueryStep {
    QueryStep {
        doc_ids: filter.doc_ids().map(|ids| ids.iter().cloned().collect()),
        k: policy.k,
        locale: filter.locale().cloned(),
        metadata: filter.metadata().map(|(k, v)| format!("{k}={v}")).collect(),
        mode: policy.mode.code().to_string(),
        question: question.to_string(),
        readers: filter.readers().map(|r| r.iter().cloned().collect()),
        request_id: None,
        scopes: filter.scopes().iter().cloned().collect(),
    }
}

/// How the plan rewrote `question` after `history_turns` turns.
pub(super) fn rewrite_step(
    history: &[crate::ports::Turn],
    question: &str,
    planned: &Planned,
    tokens: Option<&TokenUsage>,
) -> RewriteStep {
    RewriteStep {
        history_turns: history.len(),
        earlier_questions: crate::ports::earlier_questions(
            history.iter().map(|t| t.question.as_str()),
        ),
        method: planned.method.clone(),
        notice: planned.notice.clone(),
        original: question.to_string(),
        rewritten: planned.plan.standalone.clone(),
        rule: planned.plan.rewrite.clone(),
        history_turns_read: tokens.map(|t| t.history_turns),
        history_tokens: tokens.map(|t| t.history),
    }
}

/// What the plan read the question as, and whether it is retrieved for.
pub(super) fn intent_step(planned: &Planned) -> IntentStep {
    let plan = &planned.plan;
    IntentStep {
        intent: plan.intent.code().to_string(),
        method: planned.method.clone(),
        parts: plan.parts.clone(),
        retrieve: plan.intent != crate::ports::Intent::SmallTalk,
        reason: plan.reason.clone(),
        confidence: plan.confidence,
    }
}

/// Another wording of `question` retrieved for thin evidence: how much of the question each
/// retrieval's evidence covers, and which was kept.
pub(super) fn reformulation_step(
    question: &str,
    other: String,
    before: f64,
    after: f64,
    kept_other: bool,
) -> ReformulationStep {
    ReformulationStep {
        coverage_after: after,
        coverage_before: before,
        floor: THIN_EVIDENCE_FLOOR,
        kept: if kept_other {
            "reformulated"
        } else {
            "original"
        }
        .to_string(),
        question: question.to_string(),
        reformulated: other,
    }
}

/// Generation skipped, and why.
pub(super) fn skipped(reason: &str) -> Stage {
    Stage::Generation(GenerationStep::Skipped {
        reason: reason.to_string(),
        skipped: true,
    })
}

/// A route's step: its status, its embedding space (the dense route's), its first hits.
pub(super) fn route_step(
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

/// The step of route `r` of `retrieval`, with its candidates and time.
fn retrieved_route_step(
    retrieval: &Retrieval,
    r: &RouteReport,
    dense_space: Option<&EmbeddingSpace>,
) -> RouteStep {
    let space = match r.route {
        Route::Dense => dense_space.map(|s| s.identity().to_string()),
        Route::Lexical => None,
    };
    let hits = retrieval
        .candidates
        .get(&r.route)
        .map(Vec::as_slice)
        .unwrap_or_default();
    route_step(
        r,
        space,
        hits,
        stage_ms(retrieval, &format!("retrieval.{}", r.route)),
    )
}

/// Milliseconds `retrieval` spent in `stage` (0 when it did not time it).
fn stage_ms(retrieval: &Retrieval, stage: &str) -> f64 {
    retrieval
        .timings
        .iter()
        .find(|t| t.stage == stage)
        .map_or(0.0, |t| t.ms)
}

/// The fused evidence kept, each with its routes' ranks and scores, then what the budget left
/// out.
fn fusion_step(retrieval: &Retrieval, fusion: &FusionConfig) -> FusionStep {
    FusionStep {
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
        ms: stage_ms(retrieval, "fusion"),
        weights: fusion.weights.clone(),
    }
}

/// The hits the revision check dropped, each with why (and a stale one's two revisions).
fn revision_step(retrieval: &Retrieval) -> RevisionCheckStep {
    RevisionCheckStep {
        dropped: retrieval
            .dropped
            .iter()
            .map(|d| {
                let (indexed, current) = match &d.reason {
                    DropReason::StaleRevision { indexed, current } => {
                        (Some(indexed.clone()), Some(current.clone()))
                    }
                    DropReason::Deleted | DropReason::NotVisible | DropReason::Expired { .. } => {
                        (None, None)
                    }
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
        ms: stage_ms(retrieval, "revision_check"),
    }
}

/// Whether the reranker ran, and its score of each candidate.
fn rerank_step(rerank: &RerankReport, ms: f64) -> RerankStep {
    let reason = match &rerank.status {
        RouteStatus::Unavailable { reason } => Some(reason.clone()),
        _ => None,
    };
    RerankStep {
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
        ms,
    }
}

/// What the budget kept of the evidence and what it left out.
fn budget_step(retrieval: &Retrieval, budget: RetrievalBudget) -> BudgetStep {
    BudgetStep {
        chars_used: retrieval.evidence.iter().map(|e| e.chunk.char_len()).sum(),
        kept: retrieval.evidence.len(),
        left_out: retrieval.budget_dropped.clone(),
        max_chars: budget.max_chars(),
        max_chunks: budget.max_chunks(),
        ms: stage_ms(retrieval, "budget"),
        retrieval_truncated: retrieval.truncated,
        ocr_sources: retrieval
            .evidence
            .iter()
            .filter(|e| crate::rules::ocr::is_ocr(&e.chunk))
            .map(|e| e.chunk.doc().source.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        ocr_twins: retrieval.ocr_twins.clone(),
    }
}

/// What attempt `attempt` sends the generator.
pub(super) fn context_step(
    attempt: u32,
    request: &GenerationRequest,
    sources: &[SourceBlock],
    prompt_tokens: Option<usize>,
) -> ContextStep {
    ContextStep {
        attempt,
        feedback: request.feedback.clone(),
        prompt_chars: request.prompt.chars().count(),
        source_chars: sources.iter().map(|s| s.text.chars().count()).sum(),
        sources: sources.len(),
        system_chars: request.system.chars().count(),
        prompt_tokens,
        max_answer_tokens: request.sampling.max_tokens,
    }
}

/// An attempt's answer rejected, and whether another attempt follows.
pub(super) fn rejection_step(
    round: &Round,
    attempt: u32,
    retry: bool,
    rejection: &Rejection,
) -> RejectionStep {
    RejectionStep {
        allowed: round.ids.clone(),
        attempt,
        bad: rejection.bad.clone(),
        code: rejection.code.clone(),
        retry,
    }
}

/// The chunks an answer cites, each with its marker.
pub(super) fn cited_chunks(cited: &[(u32, ChunkId)]) -> Vec<CitedChunk> {
    cited
        .iter()
        .map(|(marker, id)| CitedChunk {
            chunk_id: id.clone(),
            marker: *marker,
            doc_id: None,
        })
        .collect()
}

/// How the run ended, from the frame it shows.
pub(super) fn finished_step(out: &AnswerFrame) -> AnswerStep {
    let routes_ran: Vec<Route> = out
        .routes
        .iter()
        .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
        .map(|r| r.route)
        .collect();
    AnswerStep::Finished {
        answer: Some(out.answer.clone()),
        answer_chars: out.answer.chars().count(),
        attempts: out.attempts,
        citations: out
            .citations
            .iter()
            .map(|c| CitedChunk {
                chunk_id: c.chunk_id.clone(),
                marker: c.marker,
                doc_id: Some(c.doc_id.clone()),
            })
            .collect(),
        latency_ms: out.latency_ms,
        retrieval_truncated: out.retrieval_truncated,
        routes_ran,
        stages_ms: out.stages_ms.clone(),
        status: out.status.code().to_string(),
    }
}
