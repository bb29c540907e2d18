//! Retrieval and answer grading: hit@k, recall@k, MRR, nDCG, span hits, citation validity.
//!
//! Every metric is computed over a ranked list in which repeated IDs count once (at their
//! best rank), so metrics stay within [0, 1]. An empty ranked list is a miss (0), never an
//! error. A query with no relevant items scores 0.

use std::collections::HashSet;
use std::hash::Hash;

/// Removes repeats, keeping the first occurrence.
pub fn dedup_ranked<T: Eq + Hash + Clone>(ranked: &[T]) -> Vec<T> {
    let mut seen = HashSet::new();
    ranked.iter().filter(|x| seen.insert(*x)).cloned().collect()
}

/// 1-based rank of the first relevant item, if any.
pub fn first_relevant_rank<T: Eq + Hash + Clone>(
    ranked: &[T],
    relevant: &HashSet<T>,
) -> Option<usize> {
    dedup_ranked(ranked)
        .iter()
        .position(|x| relevant.contains(x))
        .map(|p| p + 1)
}

/// 1 when a relevant item is in the top `k`, else 0.
pub fn hit_at_k<T: Eq + Hash + Clone>(ranked: &[T], relevant: &HashSet<T>, k: usize) -> f64 {
    match first_relevant_rank(ranked, relevant) {
        Some(rank) if rank <= k => 1.0,
        _ => 0.0,
    }
}

/// Share of relevant items found in the top `k`.
pub fn recall_at_k<T: Eq + Hash + Clone>(ranked: &[T], relevant: &HashSet<T>, k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let found = dedup_ranked(ranked)
        .iter()
        .take(k)
        .filter(|x| relevant.contains(*x))
        .count();
    found as f64 / relevant.len() as f64
}

/// Reciprocal rank of the first relevant item within the top `k`.
pub fn mrr_at_k<T: Eq + Hash + Clone>(ranked: &[T], relevant: &HashSet<T>, k: usize) -> f64 {
    match first_relevant_rank(ranked, relevant) {
        Some(rank) if rank <= k => 1.0 / rank as f64,
        _ => 0.0,
    }
}

/// Normalised discounted cumulative gain at `k` with binary relevance.
pub fn ndcg_at_k<T: Eq + Hash + Clone>(ranked: &[T], relevant: &HashSet<T>, k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let dcg: f64 = dedup_ranked(ranked)
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, x)| relevant.contains(*x))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(k))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    dcg / ideal
}

/// A gold answer span: the character range `[start, end)` of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldSpan {
    /// Document holding the answer.
    pub doc_id: String,
    /// First character.
    pub start: usize,
    /// Last character, exclusive.
    pub end: usize,
}

/// A retrieved chunk's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLocation {
    /// Its document.
    pub doc_id: String,
    /// First character.
    pub start: usize,
    /// Last character, exclusive.
    pub end: usize,
}

/// 1 when one of the top `k` chunks comes from a gold span's document and its range overlaps
/// the span, else 0.
pub fn span_hit_at_k(chunks: &[ChunkLocation], gold: &[GoldSpan], k: usize) -> f64 {
    let hit = chunks.iter().take(k).any(|c| {
        gold.iter()
            .any(|g| g.doc_id == c.doc_id && c.start < g.end && g.start < c.end)
    });
    if hit { 1.0 } else { 0.0 }
}

/// Share of answers whose citations were all valid; `None` when there were no answers.
pub fn citation_validity_rate(valid: &[bool]) -> Option<f64> {
    if valid.is_empty() {
        return None;
    }
    Some(valid.iter().filter(|v| **v).count() as f64 / valid.len() as f64)
}

/// Running means of the standard retrieval metrics over queries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricTotals {
    /// Queries graded.
    pub queries: usize,
    /// Σ hit@1.
    pub hit1: f64,
    /// Σ hit@5.
    pub hit5: f64,
    /// Σ hit@10.
    pub hit10: f64,
    /// Σ recall@10.
    pub recall10: f64,
    /// Σ MRR@10.
    pub mrr10: f64,
    /// Σ nDCG@10.
    pub ndcg10: f64,
    /// Queries that had gold spans.
    pub span_queries: usize,
    /// Σ span hit@5.
    pub span_hit5: f64,
}

impl MetricTotals {
    /// Adds one query's document ranking.
    pub fn add<T: Eq + Hash + Clone>(&mut self, ranked: &[T], relevant: &HashSet<T>) {
        self.queries += 1;
        self.hit1 += hit_at_k(ranked, relevant, 1);
        self.hit5 += hit_at_k(ranked, relevant, 5);
        self.hit10 += hit_at_k(ranked, relevant, 10);
        self.recall10 += recall_at_k(ranked, relevant, 10);
        self.mrr10 += mrr_at_k(ranked, relevant, 10);
        self.ndcg10 += ndcg_at_k(ranked, relevant, 10);
    }

    /// Adds one query's chunk locations against its gold spans.
    pub fn add_spans(&mut self, chunks: &[ChunkLocation], gold: &[GoldSpan]) {
        self.span_queries += 1;
        self.span_hit5 += span_hit_at_k(chunks, gold, 5);
    }

    /// The mean of a sum over the graded queries (0 when none).
    pub fn mean(&self, sum: f64) -> f64 {
        if self.queries == 0 {
            0.0
        } else {
            sum / self.queries as f64
        }
    }

    /// The mean span hit@5, if any query had spans.
    pub fn span_hit5_mean(&self) -> Option<f64> {
        (self.span_queries > 0).then(|| self.span_hit5 / self.span_queries as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&'static str]) -> HashSet<&'static str> {
        items.iter().copied().collect()
    }

    #[test]
    fn standard_metrics() {
        let ranked = ["x", "a", "y", "b"];
        let rel = set(&["a", "b"]);
        assert_eq!(hit_at_k(&ranked, &rel, 1), 0.0);
        assert_eq!(hit_at_k(&ranked, &rel, 2), 1.0);
        assert_eq!(recall_at_k(&ranked, &rel, 2), 0.5);
        assert_eq!(mrr_at_k(&ranked, &rel, 10), 0.5);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        assert!((ndcg_at_k(&ranked, &rel, 10) - dcg / ideal).abs() < 1e-12);
    }

    #[test]
    fn repeats_never_push_metrics_above_one() {
        let ranked = ["a", "a", "a", "a"];
        let rel = set(&["a"]);
        assert_eq!(recall_at_k(&ranked, &rel, 10), 1.0);
        assert_eq!(ndcg_at_k(&ranked, &rel, 10), 1.0);
        assert_eq!(mrr_at_k(&ranked, &rel, 10), 1.0);
    }

    #[test]
    fn empty_results_are_misses() {
        let ranked: [&str; 0] = [];
        let rel = set(&["a"]);
        assert_eq!(hit_at_k(&ranked, &rel, 10), 0.0);
        assert_eq!(ndcg_at_k(&ranked, &rel, 10), 0.0);
        assert_eq!(ndcg_at_k(&["a"], &set(&[]), 10), 0.0);
        let mut totals = MetricTotals::default();
        assert_eq!(totals.mean(totals.hit1), 0.0);
        totals.add(&ranked, &rel);
        assert_eq!(totals.queries, 1);
    }

    #[test]
    fn span_hits_need_the_right_document_and_overlap() {
        let gold = [GoldSpan {
            doc_id: "d".into(),
            start: 10,
            end: 20,
        }];
        let at = |doc: &str, s, e| ChunkLocation {
            doc_id: doc.into(),
            start: s,
            end: e,
        };
        assert_eq!(span_hit_at_k(&[at("d", 0, 11)], &gold, 5), 1.0);
        assert_eq!(span_hit_at_k(&[at("d", 20, 30)], &gold, 5), 0.0);
        assert_eq!(span_hit_at_k(&[at("e", 0, 100)], &gold, 5), 0.0);
        assert_eq!(span_hit_at_k(&[], &gold, 5), 0.0);
        assert_eq!(citation_validity_rate(&[true, false]), Some(0.5));
        assert_eq!(citation_validity_rate(&[]), None);
    }
}
