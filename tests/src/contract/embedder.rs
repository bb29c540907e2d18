//! Properties every [`Embedder`] has.

use zhiku_domain::Normalization;
use zhiku_domain::ports::Embedder;

/// Texts the properties embed: Chinese, English, mixed, long and short.
pub const TEXTS: &[&str] = &[
    "切分策略改变后 chunkId 会怎样？",
    "Hybrid retrieval fuses dense and lexical routes with reciprocal rank fusion.",
    "bge-small-zh-v1.5 的维度是 512。",
    "HTTP 404 错误",
    "a",
    "知识库中没有找到相关资料。这一句稍微长一些，用来检查批量填充不会改变结果。",
];

/// The same text gives the same vector on every call.
pub fn embeddings_are_deterministic(embedder: &dyn Embedder) {
    let a = embedder.embed_documents(TEXTS).unwrap();
    let b = embedder.embed_documents(TEXTS).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        embedder.embed_query(TEXTS[0]).unwrap(),
        embedder.embed_query(TEXTS[0]).unwrap()
    );
}

/// Every vector has exactly the reported number of dimensions, one per input, in order.
pub fn embeddings_have_the_reported_dimension(embedder: &dyn Embedder) {
    let out = embedder.embed_documents(TEXTS).unwrap();
    assert_eq!(out.len(), TEXTS.len());
    for e in &out {
        assert_eq!(e.values().len(), embedder.space().dims());
        assert!(e.values().iter().all(|v| v.is_finite()));
    }
}

/// Every vector carries the embedder's space identity.
pub fn embeddings_carry_the_space_identity(embedder: &dyn Embedder) {
    for e in embedder.embed_documents(TEXTS).unwrap() {
        assert_eq!(e.space(), embedder.space().identity());
    }
}

/// In an L2-normalised space every vector has unit length.
pub fn normalised_spaces_give_unit_vectors(embedder: &dyn Embedder) {
    if embedder.space().normalization() != Normalization::L2 {
        return;
    }
    for e in embedder.embed_documents(TEXTS).unwrap() {
        assert!((e.norm() - 1.0).abs() < 1e-3, "norm {}", e.norm());
    }
    assert!((embedder.embed_query(TEXTS[1]).unwrap().norm() - 1.0).abs() < 1e-3);
}

/// An empty batch gives an empty list.
pub fn empty_batch_gives_no_vectors(embedder: &dyn Embedder) {
    assert!(embedder.embed_documents(&[]).unwrap().is_empty());
}

/// The empty string is valid input.
pub fn empty_text_is_valid(embedder: &dyn Embedder) {
    let out = embedder.embed_documents(&[""]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].values().len(), embedder.space().dims());
}

/// Query embeddings live in the same space as document embeddings.
pub fn query_embeddings_share_the_space(embedder: &dyn Embedder) {
    let q = embedder.embed_query("怎么切分文档？").unwrap();
    assert_eq!(q.space(), embedder.space().identity());
    assert_eq!(q.values().len(), embedder.space().dims());
}

/// A batch is embedded exactly as each text alone, within `tolerance` per component.
pub fn batch_equals_single_embeddings(embedder: &dyn Embedder, tolerance: f32) {
    let batch = embedder.embed_documents(TEXTS).unwrap();
    for (text, in_batch) in TEXTS.iter().zip(&batch) {
        let alone = embedder.embed_documents(&[text]).unwrap().remove(0);
        let worst = alone
            .values()
            .iter()
            .zip(in_batch.values())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            worst <= tolerance,
            "{text:?}: batch and single differ by {worst}"
        );
    }
}
