//! The retrieval evaluation runner: any retrieval mode over an evaluation set, graded with the
//! domain's metrics.
//!
//! Document-level metrics rank each document by its best-ranked chunk (a document appears once);
//! span metrics use the chunks themselves. Queries with empty text count as misses with a
//! warning. Document IDs play no part in ranking.

use std::collections::HashSet;

use serde::Serialize;
use zhiku_domain::Filter;
use zhiku_domain::rules::grading::{
    ChunkLocation, MetricTotals, first_relevant_rank, span_hit_at_k,
};
use zhiku_domain::usecases::{RetrievalMode, RetrievalRequest, RetrieveError, Retriever};

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
    let request = RetrievalRequest {
        query: &query.text,
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

/// Evaluates every query of `set`, passing each result to `on_query`.
pub fn evaluate(
    retriever: &Retriever<'_>,
    filter: &Filter,
    mode: RetrievalMode,
    set: &EvalSet,
    on_query: &mut dyn FnMut(&QueryResult),
) -> Result<Summary, RetrieveError> {
    let mut summary = Summary::default();
    for query in &set.queries {
        let result = evaluate_query(retriever, filter, mode, query, &mut summary)?;
        on_query(&result);
    }
    Ok(summary)
}
