//! Properties every [`VectorIndex`] has. Each function takes an empty index of
//! [`fixtures::space`](super::fixtures::space).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use zhiku_domain::ports::{IndexError, VectorIndex};
use zhiku_domain::{ChunkId, DocId, EmbeddingSpace, Filter, Normalization, Pooling, Scope};

use super::fixtures::{
    Spec, axis, check_filter_cases, embedded, filter_case_specs, other_space, space, vector,
    vector_in,
};

pub use super::access::{
    reader_filter_is_the_search_over_what_the_reader_may_read,
    updating_an_absent_vector_record_stores_nothing,
};

fn scope(s: &str) -> Filter {
    Filter::for_scope(Scope::new(s).expect("scope"))
}

fn ids(hits: &[zhiku_domain::ports::ScoredChunk]) -> Vec<String> {
    hits.iter()
        .map(|h| h.chunk.chunk_id().to_string())
        .collect()
}

fn doc(id: &str) -> DocId {
    DocId::new(id).expect("doc id")
}

/// Upserting a chunk and committing makes it the best match for its own vector.
pub fn upsert_then_search_finds_it(index: &dyn VectorIndex) {
    let spec = Spec::new("a", "s", "alpha");
    index.upsert(&[embedded(&spec, axis(0))]).unwrap();
    index
        .upsert(&[embedded(&Spec::new("b", "s", "beta"), axis(3))])
        .unwrap();
    index.commit().unwrap();
    let hits = index.search(&axis(0), 1, &scope("s")).unwrap();
    assert_eq!(ids(&hits), vec![spec.chunk().chunk_id().to_string()]);
    assert!(
        (hits[0].score - 1.0).abs() < 1e-4,
        "cosine of a vector with itself is 1"
    );
    assert_eq!(index.count().unwrap(), 2);
}

/// Upserting an ID that is present replaces the chunk and its vector; it is never duplicated.
pub fn reupsert_replaces_the_chunk(index: &dyn VectorIndex) {
    let spec = Spec::new("a", "s", "alpha");
    index.upsert(&[embedded(&spec, axis(0))]).unwrap();
    index.commit().unwrap();
    let replaced = Spec::new("a", "s", "alpha").title("new title");
    index.upsert(&[embedded(&replaced, axis(5))]).unwrap();
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), 1);
    let hits = index.search(&axis(5), 10, &scope("s")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk.doc().title.as_str(), "new title");
    assert!(
        (hits[0].score - 1.0).abs() < 1e-4,
        "the vector was replaced too"
    );
}

/// Deleting a document removes all of its chunks and nothing else.
pub fn delete_document_removes_only_its_chunks(index: &dyn VectorIndex) {
    let a: Vec<Spec> = (0..5)
        .map(|i| Spec::new("a", "s", format!("a{i}")).at(i * 10))
        .collect();
    let b = Spec::new("b", "s", "b0");
    let mut items: Vec<_> = a.iter().map(|s| embedded(s, axis(0))).collect();
    items.push(embedded(&b, axis(0)));
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    index.delete_document(&doc("a")).unwrap();
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), 1);
    assert!(index.chunk_ids(&doc("a")).unwrap().is_empty());
    let hits = index.search(&axis(0), 10, &scope("s")).unwrap();
    assert_eq!(ids(&hits), vec![b.chunk().chunk_id().to_string()]);
    index.delete_document(&doc("never-indexed")).unwrap();
}

/// Deleting chunks by ID removes exactly those; absent IDs are ignored.
pub fn delete_chunks_removes_only_those(index: &dyn VectorIndex) {
    let specs: Vec<Spec> = (0..3)
        .map(|i| Spec::new("a", "s", format!("c{i}")).at(i * 10))
        .collect();
    let items: Vec<_> = specs.iter().map(|s| embedded(s, axis(1))).collect();
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    let gone = specs[1].chunk().chunk_id().clone();
    let absent = ChunkId::parse("zz:0:0000000000000000").unwrap();
    index.delete_chunks(&[gone.clone(), absent]).unwrap();
    index.commit().unwrap();
    let left = index.chunk_ids(&doc("a")).unwrap();
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&gone));
}

/// A filter for scope A never returns a chunk of scope B, even when B's chunks match better.
pub fn scope_filter_never_leaks(index: &dyn VectorIndex) {
    let mut items = Vec::new();
    for i in 0..20 {
        items.push(embedded(
            &Spec::new("b", "team-b", format!("b{i}")).at(i * 10),
            axis(0),
        ));
    }
    let a = Spec::new("a", "team-a", "a");
    items.push(embedded(&a, vector(0, 0.9)));
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    let hits = index.search(&axis(0), 5, &scope("team-a")).unwrap();
    assert_eq!(ids(&hits), vec![a.chunk().chunk_id().to_string()]);
    let none = index.search(&axis(0), 5, &scope("team-c")).unwrap();
    assert!(none.is_empty());
    let both =
        Filter::for_scopes([Scope::new("team-a").unwrap(), Scope::new("team-b").unwrap()]).unwrap();
    assert_eq!(index.search(&axis(0), 50, &both).unwrap().len(), 21);
}

/// Property over random data: every hit of a scoped search is in one of the filter's scopes.
pub fn scope_filter_never_leaks_on_random_data(index: &dyn VectorIndex) {
    let scopes = ["s0", "s1", "s2"];
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let round = std::cell::Cell::new(0usize);
    runner
        .run(
            &(
                prop::collection::vec((0usize..3, 0usize..8, -1.0f32..1.0), 1..30),
                0usize..3,
                0usize..8,
                1usize..40,
            ),
            |(points, wanted, query_axis, k)| {
                round.set(round.get() + 1);
                let doc_name = format!("r{}", round.get());
                let items: Vec<_> = points
                    .iter()
                    .enumerate()
                    .map(|(i, (s, ax, tilt))| {
                        embedded(
                            &Spec::new(doc_name.as_str(), scopes[*s], format!("p{i}")).at(i),
                            vector(*ax, *tilt),
                        )
                    })
                    .collect();
                index.upsert(&items).unwrap();
                index.commit().unwrap();
                let filter = scope(scopes[wanted]).with_doc_ids([doc(&doc_name)]);
                let hits = index.search(&axis(query_axis), k, &filter).unwrap();
                let expected = points.iter().filter(|(s, _, _)| *s == wanted).count();
                prop_assert_eq!(hits.len(), expected.min(k));
                for h in &hits {
                    prop_assert_eq!(h.chunk.doc().scope.as_str(), scopes[wanted]);
                }
                index.delete_document(&doc(&doc_name)).unwrap();
                index.commit().unwrap();
                Ok(())
            },
        )
        .unwrap();
}

/// Document, locale and metadata conditions are applied inside the search (or refused as
/// unsupported, never ignored).
pub fn other_filters_apply_inside_the_search(index: &dyn VectorIndex) {
    let (zh, en) = filter_case_specs("zh", "en");
    index
        .upsert(&[embedded(&zh, axis(2)), embedded(&en, axis(2))])
        .unwrap();
    index.commit().unwrap();
    check_filter_cases(&index.capabilities(), &zh, &en, &|f| {
        index.search(&axis(2), 10, f)
    });
}

/// A search returns at most `k` chunks.
pub fn k_is_respected(index: &dyn VectorIndex) {
    let items: Vec<_> = (0..12)
        .map(|i| {
            embedded(
                &Spec::new("a", "s", format!("c{i}")).at(i),
                vector(0, i as f32 / 10.0),
            )
        })
        .collect();
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    for k in [1, 5, 12, 100] {
        assert_eq!(
            index.search(&axis(0), k, &scope("s")).unwrap().len(),
            k.min(12)
        );
    }
}

/// `k == 0` is invalid input.
pub fn k_zero_is_invalid(index: &dyn VectorIndex) {
    let err = index.search(&axis(0), 0, &scope("s")).unwrap_err();
    assert!(matches!(err, IndexError::InvalidInput(_)), "{err}");
}

/// An empty index returns an empty list.
pub fn empty_index_returns_nothing(index: &dyn VectorIndex) {
    assert!(index.search(&axis(0), 10, &scope("s")).unwrap().is_empty());
    assert_eq!(index.count().unwrap(), 0);
    assert!(index.chunk_ids(&doc("a")).unwrap().is_empty());
}

/// A vector of another space is refused, by upsert and by search, and changes nothing.
pub fn wrong_space_is_refused(index: &dyn VectorIndex) {
    let foreign = vector_in(&other_space(), 0, 0.0);
    let err = index
        .upsert(&[embedded(&Spec::new("a", "s", "x"), foreign.clone())])
        .unwrap_err();
    assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
    let err = index.search(&foreign, 1, &scope("s")).unwrap_err();
    assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), 0);
    assert_eq!(index.space(), &space());
}

/// A vector of another dimension is refused.
pub fn wrong_dimension_is_refused(index: &dyn VectorIndex) {
    let wider = EmbeddingSpace::new(
        "contract-suite",
        "v1",
        space().dims() + 1,
        Pooling::None,
        Normalization::L2,
    )
    .unwrap();
    let v = vector_in(&wider, 0, 0.0);
    let good = embedded(&Spec::new("ok", "s", "ok"), axis(0));
    let err = index
        .upsert(&[good, embedded(&Spec::new("a", "s", "x"), v.clone())])
        .unwrap_err();
    assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
    assert!(matches!(
        index.search(&v, 1, &scope("s")).unwrap_err(),
        IndexError::SpaceMismatch { .. }
    ));
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), 0, "a refused batch changes nothing");
}

/// Equal scores are ordered by ascending chunk ID.
pub fn ties_are_ordered_by_chunk_id(index: &dyn VectorIndex) {
    let items: Vec<_> = ["d", "b", "e", "a", "c"]
        .iter()
        .map(|d| embedded(&Spec::new(*d, "s", "same"), axis(4)))
        .collect();
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    let got = ids(&index.search(&axis(4), 10, &scope("s")).unwrap());
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted);
    assert_eq!(got.len(), 5);
}

/// Results come in descending score order and the score is the cosine similarity.
pub fn results_are_ordered_by_score(index: &dyn VectorIndex) {
    let tilts = [0.0f32, 0.3, 0.6, 1.0, 2.0];
    let items: Vec<_> = tilts
        .iter()
        .enumerate()
        .map(|(i, t)| embedded(&Spec::new("a", "s", format!("t{i}")).at(i), vector(6, *t)))
        .collect();
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    let hits = index.search(&axis(6), 5, &scope("s")).unwrap();
    let contents: Vec<&str> = hits.iter().map(|h| h.chunk.content()).collect();
    assert_eq!(contents, vec!["t0", "t1", "t2", "t3", "t4"]);
    for (hit, tilt) in hits.iter().zip(tilts) {
        let cosine = 1.0 / (1.0 + tilt * tilt).sqrt();
        assert!(
            (hit.score - cosine).abs() < 1e-3,
            "score {} vs cosine {cosine}",
            hit.score
        );
    }
}

/// `chunk_ids` lists exactly a document's chunks, sorted.
pub fn chunk_ids_lists_a_documents_chunks(index: &dyn VectorIndex) {
    let specs: Vec<Spec> = (0..4)
        .map(|i| Spec::new("a", "s", format!("c{i}")).at(i * 7))
        .collect();
    let mut items: Vec<_> = specs.iter().map(|s| embedded(s, axis(0))).collect();
    items.push(embedded(&Spec::new("b", "s", "other"), axis(0)));
    index.upsert(&items).unwrap();
    index.commit().unwrap();
    let mut want: Vec<ChunkId> = specs.iter().map(|s| s.chunk().chunk_id().clone()).collect();
    want.sort();
    assert_eq!(index.chunk_ids(&doc("a")).unwrap(), want);
}

/// `all_chunk_ids` lists every stored chunk of every document and scope once, sorted: after
/// upserts across documents, a re-upsert, the delete of one chunk and of one document and a
/// commit, exactly the surviving IDs.
pub fn all_chunk_ids_lists_exactly_the_surviving_chunks(index: &dyn VectorIndex) {
    assert!(index.all_chunk_ids().unwrap().is_empty());
    let a: Vec<Spec> = (0..3)
        .map(|i| Spec::new("a", "s", format!("a{i}")).at(i * 5))
        .collect();
    let b: Vec<Spec> = (0..2)
        .map(|i| Spec::new("b", "t", format!("b{i}")).at(i * 5))
        .collect();
    let c = Spec::new("c/deep.md", "u", "gone");
    let mut items: Vec<_> = a.iter().chain(&b).map(|s| embedded(s, axis(1))).collect();
    items.push(embedded(&c, axis(2)));
    index.upsert(&items).unwrap();
    // Upserting a present chunk again must not list it twice.
    index.upsert(&[embedded(&a[0], axis(3))]).unwrap();
    index
        .delete_chunks(&[a[1].chunk().chunk_id().clone()])
        .unwrap();
    index.delete_document(&doc("c/deep.md")).unwrap();
    index.commit().unwrap();
    let mut want: Vec<ChunkId> = [&a[0], &a[2], &b[0], &b[1]]
        .iter()
        .map(|s| s.chunk().chunk_id().clone())
        .collect();
    want.sort();
    assert_eq!(index.all_chunk_ids().unwrap(), want);
}

/// `embeddings` returns the stored vectors, and `None` for absent chunks.
pub fn embeddings_returns_stored_vectors(index: &dyn VectorIndex) {
    let spec = Spec::new("a", "s", "x");
    let v = vector(3, 0.5);
    index.upsert(&[embedded(&spec, v.clone())]).unwrap();
    index.commit().unwrap();
    let absent = ChunkId::parse("zz:0:0000000000000000").unwrap();
    let got = index
        .embeddings(&[spec.chunk().chunk_id().clone(), absent])
        .unwrap();
    assert_eq!(got.len(), 2);
    let stored = got[0].as_ref().expect("stored vector");
    assert_eq!(stored.space(), v.space());
    for (a, b) in stored.values().iter().zip(v.values()) {
        assert!((a - b).abs() < 1e-5);
    }
    assert!(got[1].is_none());
}

/// A returned chunk equals the stored one: content, offsets, headings and every attribute.
pub fn stored_chunks_round_trip(index: &dyn VectorIndex) {
    let spec = Spec::new("guides/切分.md", "s", "切分策略 chunking 🚀\r\n")
        .at(17)
        .locale("zh-CN")
        .title("切分 Chunking")
        .metadata(json!({"tags": ["a", "b"], "n": 1.5, "ok": true, "nested": {"x": 1}}));
    index.upsert(&[embedded(&spec, axis(7))]).unwrap();
    index.commit().unwrap();
    let hits = index.search(&axis(7), 1, &scope("s")).unwrap();
    assert_eq!(hits[0].chunk, spec.chunk());
}

/// A generation, when the adapter keeps one, changes with each commit that changed something
/// and stays put otherwise.
pub fn generation_moves_with_commits(index: &dyn VectorIndex) {
    let before = index.generation().expect("generation");
    let spec = Spec::new("gen", "s", "generation");
    index.upsert(&[embedded(&spec, axis(0))]).unwrap();
    index.commit().unwrap();
    let after_upsert = index.generation().expect("generation");
    assert_eq!(
        index.generation().expect("generation"),
        after_upsert,
        "stable between commits"
    );
    index.delete_document(&DocId::new("gen").unwrap()).unwrap();
    index.commit().unwrap();
    let after_delete = index.generation().expect("generation");
    super::check_generations(before, after_upsert, after_delete);
}

// --- Approximate indexes ------------------------------------------------------------------
//
// Properties of an approximate (ANN) index, measured against `MemoryVectorIndex`, the exact
// reference: 2,000 random unit vectors of 64 dimensions (seeded) in 200 documents of 10
// scopes, 100 random queries. Each function takes an empty index of
// [`fixtures::ann_space`](super::fixtures::ann_space).

mod approximate {
    use std::collections::BTreeSet;

    use zhiku_adapters_memory::MemoryVectorIndex;
    use zhiku_domain::ports::{EmbeddedChunk, VectorIndex, VectorIndexExt};
    use zhiku_domain::{ChunkId, Embedding, Filter, Scope};

    use super::super::fixtures::{Rng, ann_corpus_in, random_unit};

    pub(super) const DOCS: usize = 200;
    pub(super) const PER_DOC: usize = 10;
    pub(super) const QUERIES: usize = 100;
    pub(super) const K: usize = 10;
    pub(super) const MIN_RECALL: f64 = 0.95;

    /// The corpus stored in both the index under test and the exact reference.
    pub(super) fn load(index: &dyn VectorIndex) -> (Vec<EmbeddedChunk>, MemoryVectorIndex) {
        let items = ann_corpus_in(index.space(), 15, DOCS, PER_DOC);
        index.upsert_batched(&items).unwrap();
        index.commit().unwrap();
        let exact = MemoryVectorIndex::new(index.space().clone());
        exact.upsert(&items).unwrap();
        assert_eq!(index.count().unwrap(), items.len());
        (items, exact)
    }

    pub(super) fn queries(index: &dyn VectorIndex, seed: u64) -> Vec<Embedding> {
        let mut rng = Rng::new(seed);
        (0..QUERIES)
            .map(|_| random_unit(&mut rng, index.space()))
            .collect()
    }

    pub(super) fn scope_filter(names: &[&str]) -> Filter {
        Filter::for_scopes(names.iter().map(|s| Scope::new(*s).unwrap())).unwrap()
    }

    pub(super) fn ids(hits: &[zhiku_domain::ports::ScoredChunk]) -> Vec<ChunkId> {
        hits.iter().map(|h| h.chunk.chunk_id().clone()).collect()
    }

    /// Mean recall@K of `index` against `exact` over the queries, each with the filter
    /// `filter_of(query number)`; also checks each result list is ordered by score.
    pub(super) fn recall(
        index: &dyn VectorIndex,
        exact: &dyn VectorIndex,
        queries: &[Embedding],
        filter_of: &dyn Fn(usize) -> Filter,
    ) -> f64 {
        let mut sum = 0.0;
        for (i, q) in queries.iter().enumerate() {
            let filter = filter_of(i);
            let want: BTreeSet<ChunkId> = ids(&exact.search(q, K, &filter).unwrap())
                .into_iter()
                .collect();
            let hits = index.search(q, K, &filter).unwrap();
            assert!(hits.len() <= K);
            assert!(
                hits.windows(2).all(|w| w[0].score >= w[1].score),
                "results are ordered by descending score"
            );
            let got: BTreeSet<ChunkId> = ids(&hits).into_iter().collect();
            assert_eq!(got.len(), hits.len(), "no chunk is returned twice");
            sum += want.intersection(&got).count() as f64 / want.len().max(1) as f64;
        }
        sum / queries.len() as f64
    }

    /// Asserts `recall` reaches [`MIN_RECALL`], and prints it (it is the figure to watch).
    pub(super) fn require(index: &dyn VectorIndex, what: &str, recall: f64) {
        crate::contract::notice(&format!(
            "{}: {what} recall@{K} = {recall:.3}",
            index.capabilities().adapter
        ));
        assert!(
            recall >= MIN_RECALL,
            "{what} recall@{K} = {recall:.3} < {MIN_RECALL}"
        );
    }
}

/// Recall@10 over every scope is at least 0.95 against the exact index.
pub fn approximate_recall_at_10(index: &dyn VectorIndex) {
    let (_, exact) = approximate::load(index);
    let all = approximate::scope_filter(&super::fixtures::ANN_SCOPES);
    let r = approximate::recall(index, &exact, &approximate::queries(index, 1), &|_| {
        all.clone()
    });
    approximate::require(index, "unfiltered", r);
}

/// Recall@10 with a filter allowing one scope of ten is at least 0.95 against the exact index
/// under the same filter.
pub fn approximate_filtered_recall_one_scope_of_ten(index: &dyn VectorIndex) {
    let (_, exact) = approximate::load(index);
    let scopes = super::fixtures::ANN_SCOPES;
    let r = approximate::recall(index, &exact, &approximate::queries(index, 2), &|i| {
        approximate::scope_filter(&[scopes[i % scopes.len()]])
    });
    approximate::require(index, "one-scope-of-ten", r);
}

/// After deleting a random 30 % of the chunks (whole documents and single chunks) and
/// committing, no search returns a deleted chunk, every search still fills `k`, and recall
/// against the exact index of the survivors stays at least 0.95.
pub fn approximate_deleted_chunks_never_returned(index: &dyn VectorIndex) {
    use std::collections::BTreeSet;
    let (items, exact) = approximate::load(index);
    let mut rng = super::fixtures::Rng::new(30);
    let mut deleted: BTreeSet<ChunkId> = BTreeSet::new();
    // 20 whole documents (200 chunks)...
    while deleted.len() < 200 {
        let d = rng.below(approximate::DOCS);
        let doc_id = DocId::new(format!("d{d:04}")).unwrap();
        if deleted.iter().any(|id| id.doc_part() == doc_id.as_str()) {
            continue;
        }
        index.delete_document(&doc_id).unwrap();
        exact.delete_document(&doc_id).unwrap();
        for item in &items {
            if item.chunk.doc_id() == &doc_id {
                deleted.insert(item.chunk.chunk_id().clone());
            }
        }
    }
    // ...and single chunks up to 30 %.
    while deleted.len() < items.len() * 3 / 10 {
        let id = items[rng.below(items.len())].chunk.chunk_id().clone();
        if deleted.insert(id.clone()) {
            index.delete_chunks(std::slice::from_ref(&id)).unwrap();
            exact.delete_chunks(&[id]).unwrap();
        }
    }
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), items.len() - deleted.len());
    let scopes = super::fixtures::ANN_SCOPES;
    let all = approximate::scope_filter(&scopes);
    for (i, q) in approximate::queries(index, 3).iter().enumerate() {
        for filter in [
            all.clone(),
            approximate::scope_filter(&[scopes[i % scopes.len()]]),
        ] {
            for k in [approximate::K, 50] {
                let hits = index.search(q, k, &filter).unwrap();
                assert_eq!(hits.len(), k, "enough chunks survive to fill k = {k}");
                for hit in &hits {
                    assert!(
                        !deleted.contains(hit.chunk.chunk_id()),
                        "deleted chunk {} returned",
                        hit.chunk.chunk_id()
                    );
                }
            }
        }
    }
    let r = approximate::recall(index, &exact, &approximate::queries(index, 4), &|_| {
        all.clone()
    });
    approximate::require(index, "after 30 % deletes", r);
}

/// A search allowing a random subset of the ten scopes returns only chunks of those scopes,
/// and as many as `k` allows (the allowed scopes hold far more than `k`).
pub fn approximate_scope_never_leaks(index: &dyn VectorIndex) {
    let (_, _exact) = approximate::load(index);
    let scopes = super::fixtures::ANN_SCOPES;
    let mut rng = super::fixtures::Rng::new(40);
    for (i, q) in approximate::queries(index, 5).iter().enumerate() {
        let mut allowed: Vec<&str> = Vec::new();
        for _ in 0..=(i % 3) {
            allowed.push(scopes[rng.below(scopes.len())]);
        }
        let filter = approximate::scope_filter(&allowed);
        for k in [1, 100] {
            let hits = index.search(q, k, &filter).unwrap();
            assert_eq!(hits.len(), k);
            for hit in &hits {
                assert!(
                    allowed.contains(&hit.chunk.doc().scope.as_str()),
                    "scope {} leaked into a search of {allowed:?}",
                    hit.chunk.doc().scope
                );
            }
        }
    }
}
