//! The reranker port.

use crate::contracts::Chunk;

use super::errors::RerankError;

/// One candidate of a reranking: a retrieved chunk that survived the revision check.
#[derive(Debug, Clone, Copy)]
pub struct RerankCandidate<'a> {
    /// The chunk, with its document's attributes (title, locale, metadata).
    pub chunk: &'a Chunk,
    /// 1-based rank after fusion.
    pub fused_rank: usize,
    /// The fused score (comparable within one retrieval only).
    pub fused_score: f64,
}

impl RerankCandidate<'_> {
    /// What a model reads of the candidate: the document's title and the chunk's heading path
    /// (`title > h1 > h2`, repeats dropped), a newline, then the chunk's text, at most
    /// `max_chars` characters in all (cut on a character boundary).
    pub fn passage(&self, max_chars: usize) -> String {
        let mut head: Vec<&str> = Vec::new();
        let title = self.chunk.doc().title.as_str().trim();
        if !title.is_empty() {
            head.push(title);
        }
        for heading in self.chunk.heading_path() {
            let heading = heading.trim();
            if !heading.is_empty() && head.last() != Some(&heading) {
                head.push(heading);
            }
        }
        let text = if head.is_empty() {
            self.chunk.indexed_text().into_owned()
        } else {
            format!("{}\n{}", head.join(" > "), self.chunk.indexed_text())
        };
        match text.char_indices().nth(max_chars) {
            Some((cut, _)) => text[..cut].to_string(),
            None => text,
        }
    }
}

/// Scores the top of a fused ranking against the question, between fusion and the budget.
///
/// # Contract
///
/// - [`rerank`](Self::rerank) MUST return exactly one finite score per candidate, in input
///   order; higher means more relevant. The caller orders by score, ties by fused rank.
/// - A reranker never adds or removes candidates: one that wants a candidate gone (a
///   near-duplicate of a better one) gives it a lower score.
/// - Reranking MUST be deterministic: the same question and candidates give the same scores.
/// - Scores MUST NOT depend on the candidates' order of presentation beyond what the reranker
///   declares it uses (the fused rank is given explicitly for rerankers that keep a prior).
/// - An empty list returns an empty list without calling out.
/// - When the model cannot be loaded or reached, it MUST fail fast with
///   [`RerankError::Unavailable`], never hang: the retriever then keeps the fused order and
///   says so.
pub trait Reranker: Send + Sync {
    /// What scores: adapter and model, e.g. `rules-v1`, `cross-encoder:bge-reranker-base`.
    fn name(&self) -> &str;

    /// Scores `candidates` for `query`.
    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError>;
}
