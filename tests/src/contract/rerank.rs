//! Properties every [`Reranker`] has.

use zhiku_domain::Chunk;
use zhiku_domain::ports::{RerankCandidate, Reranker};

use super::fixtures::Spec;

/// The question the properties ask, and candidates of which the second answers it.
pub const QUESTION: &str = "故宫是哪个朝代修建的？";

/// Candidates: off-topic, the answer, a near copy of the answer, English, and an empty-ish one.
pub fn candidates() -> Vec<Chunk> {
    vec![
        Spec::new("weather", "s", "北京春天多风，秋天天气晴朗，适合出游。")
            .locale("zh-CN")
            .title("北京天气")
            .chunk(),
        Spec::new(
            "palace",
            "s",
            "故宫始建于明朝永乐四年，是明清两代的皇家宫殿。",
        )
        .locale("zh-CN")
        .title("故宫")
        .chunk(),
        Spec::new(
            "palace-copy",
            "s",
            "故宫始建于明朝永乐四年，是明清两代的皇家宫殿。",
        )
        .locale("zh-CN")
        .title("故宫")
        .chunk(),
        Spec::new(
            "metro",
            "s",
            "The Beijing subway has more than twenty lines.",
        )
        .title("Metro")
        .chunk(),
        Spec::new("dot", "s", "。").locale("zh-CN").chunk(),
    ]
}

/// `chunks` as a reranker receives them from fusion: in this order, fused ranks 1, 2, …, and
/// RRF-like fused scores.
pub fn presented(chunks: &[Chunk]) -> Vec<RerankCandidate<'_>> {
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| RerankCandidate {
            chunk,
            fused_rank: i + 1,
            fused_score: 1.0 / (61.0 + i as f64),
        })
        .collect()
}

/// One finite score per candidate.
pub fn one_finite_score_per_candidate(reranker: &dyn Reranker) {
    let chunks = candidates();
    let scores = reranker.rerank(QUESTION, &presented(&chunks)).unwrap();
    assert_eq!(scores.len(), chunks.len());
    assert!(scores.iter().all(|s| s.is_finite()), "{scores:?}");
    assert!(!reranker.name().trim().is_empty());
}

/// How far two scorings of the same pair may differ: float noise, relative to the score (at
/// least 1). A model server batches concurrent sequences together and its sums run in another
/// order per batch: llama.cpp's server was seen to move a score by 4e-5 between requests, and to
/// score two identical passages of one request 3e-5 apart.
pub const SCORE_NOISE: f64 = 2e-4;

/// Whether `a` and `b` are the same scores up to [`SCORE_NOISE`].
pub fn same_scores(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= SCORE_NOISE * x.abs().max(1.0))
}

/// The same question and candidates give the same scores (up to float noise).
pub fn reranking_is_deterministic(reranker: &dyn Reranker) {
    let chunks = candidates();
    let a = reranker.rerank(QUESTION, &presented(&chunks)).unwrap();
    let b = reranker.rerank(QUESTION, &presented(&chunks)).unwrap();
    assert!(same_scores(&a, &b), "{a:?} vs {b:?}");
}

/// An empty list gives an empty list.
pub fn no_candidates_give_no_scores(reranker: &dyn Reranker) {
    assert!(reranker.rerank(QUESTION, &[]).unwrap().is_empty());
}

/// The candidate that answers the question scores above the off-topic ones, even when the
/// fused ranking put it last.
pub fn the_answer_outscores_off_topic_candidates(reranker: &dyn Reranker) {
    let mut chunks = candidates();
    // The answer last of all.
    let answer = chunks.remove(1);
    chunks.remove(1);
    chunks.push(answer);
    let scores = reranker.rerank(QUESTION, &presented(&chunks)).unwrap();
    let last = *scores.last().unwrap();
    for (i, s) in scores.iter().enumerate().take(scores.len() - 1) {
        assert!(
            last > *s,
            "candidate {i} ({s}) ≥ the answer ({last}): {scores:?}"
        );
    }
}

/// Scores are given per candidate: presenting the candidates in another order (with the same
/// fused ranks) permutes the scores alike.
pub fn scores_follow_their_candidates(reranker: &dyn Reranker) {
    let chunks = candidates();
    let forward = presented(&chunks);
    let mut backward = forward.clone();
    backward.reverse();
    let a = reranker.rerank(QUESTION, &forward).unwrap();
    let mut b = reranker.rerank(QUESTION, &backward).unwrap();
    b.reverse();
    assert!(same_scores(&a, &b), "{a:?} vs {b:?}");
}
