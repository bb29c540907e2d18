//! The extractive generator's tuning: how much of the question an answer must cover, how
//! long it may be, and how context, rank and similarity weigh.

/// Tuning of the extractive strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExtractiveConfig {
    /// Share of the question's term weight the best sentence must cover (its own terms fully,
    /// its headings' and labels' at [`context_weight`](Self::context_weight)); below it the
    /// answer is the no-material sentence.
    pub min_coverage: f64,
    /// Most sentences in an answer (a list introduced by a sentence counts as one).
    pub max_sentences: usize,
    /// Most characters in an answer, markers excluded (the best sentence is always kept).
    pub max_chars: usize,
    /// A further sentence is kept only when it covers at least this share of the best one.
    pub keep_ratio: f64,
    /// What a question term found only in a sentence's context (title, headings, label, the
    /// FAQ question it answers, the sentence introducing its list) counts for.
    pub context_weight: f64,
    /// With an embedder: how far the sentence most similar to the question must stand above
    /// the next one, both on the calibrated scale (see [`ExtractiveGenerator::with_embedder`](super::ExtractiveGenerator::with_embedder)),
    /// for its similarity to count as coverage.
    pub semantic_margin: f64,
    /// With an embedder: how many distinct quotable sentences the evidence must hold for one of
    /// them to stand out; in a smaller field any sentence is the most similar.
    pub semantic_field: usize,
    /// How much a sentence's score falls with its source's rank: divided by
    /// `1 + rank_decay × (rank − 1)`. The retrieval's order (fusion, title weight, reranker)
    /// judges a whole chunk better than sentence overlap does.
    pub rank_decay: f64,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        Self {
            min_coverage: 0.4,
            max_sentences: 3,
            max_chars: 360,
            keep_ratio: 0.6,
            context_weight: 0.5,
            semantic_margin: 0.3,
            semantic_field: 4,
            rank_decay: 0.25,
        }
    }
}
