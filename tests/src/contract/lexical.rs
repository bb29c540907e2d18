//! Properties every [`LexicalIndex`] has. Each function takes an empty index.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use zhiku_domain::ports::{IndexError, LexicalIndex, ScoredChunk};
use zhiku_domain::{ChunkId, DocId, Filter, Scope};

use super::fixtures::{Spec, check_filter_cases, filter_case_specs};

pub use super::access::{
    reader_filter_is_the_ranking_over_what_the_reader_may_read,
    updating_an_absent_record_stores_nothing,
};

fn scope(s: &str) -> Filter {
    Filter::for_scope(Scope::new(s).expect("scope"))
}

fn ids(hits: &[ScoredChunk]) -> Vec<String> {
    hits.iter()
        .map(|h| h.chunk.chunk_id().to_string())
        .collect()
}

fn doc(id: &str) -> DocId {
    DocId::new(id).expect("doc id")
}

fn put(index: &dyn LexicalIndex, specs: &[&Spec]) {
    let chunks: Vec<_> = specs.iter().map(|s| s.chunk()).collect();
    index.upsert(&chunks).unwrap();
    index.commit().unwrap();
}

/// Upserting a chunk and committing makes it findable by its words, Chinese and English.
pub fn upsert_then_search_finds_it(index: &dyn LexicalIndex) {
    let zh = Spec::new("zh", "s", "向量索引把文本变成向量，然后按相似度检索。").locale("zh");
    let en = Spec::new("en", "s", "The lexical index ranks chunks with BM25.");
    let other = Spec::new("other", "s", "天气预报说明天下雨。Weather is unrelated.");
    put(index, &[&zh, &en, &other]);
    let hits = index.search("向量索引", 1, &scope("s")).unwrap();
    assert_eq!(ids(&hits), vec![zh.chunk().chunk_id().to_string()]);
    let hits = index.search("BM25 lexical", 1, &scope("s")).unwrap();
    assert_eq!(ids(&hits), vec![en.chunk().chunk_id().to_string()]);
    assert!(hits[0].score > 0.0);
    assert_eq!(index.count().unwrap(), 3);
}

/// Upserting an ID that is present replaces the chunk; it is never duplicated.
pub fn reupsert_replaces_the_chunk(index: &dyn LexicalIndex) {
    let first = Spec::new("a", "s", "alpha beta").title("old");
    put(index, &[&first]);
    let second = Spec::new("a", "s", "alpha beta").title("renamed");
    put(index, &[&second]);
    assert_eq!(index.count().unwrap(), 1);
    let hits = index.search("alpha", 10, &scope("s")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk.doc().title.as_str(), "renamed");
    assert_eq!(
        ids(&index.search("renamed", 10, &scope("s")).unwrap()).len(),
        1,
        "the new title is searchable"
    );
    assert!(
        index.search("old", 10, &scope("s")).unwrap().is_empty(),
        "the old title is gone"
    );
}

/// Deleting a document removes all of its chunks and nothing else.
pub fn delete_document_removes_only_its_chunks(index: &dyn LexicalIndex) {
    let a: Vec<Spec> = (0..5)
        .map(|i| Spec::new("a", "s", format!("shared word a{i}")).at(i * 20))
        .collect();
    let b = Spec::new("b", "s", "shared word b");
    let mut all: Vec<&Spec> = a.iter().collect();
    all.push(&b);
    put(index, &all);
    index.delete_document(&doc("a")).unwrap();
    index.commit().unwrap();
    assert_eq!(index.count().unwrap(), 1);
    assert!(index.chunk_ids(&doc("a")).unwrap().is_empty());
    assert_eq!(
        ids(&index.search("shared word", 10, &scope("s")).unwrap()),
        vec![b.chunk().chunk_id().to_string()]
    );
    index.delete_document(&doc("never-indexed")).unwrap();
}

/// Deleting chunks by ID removes exactly those; absent IDs are ignored.
pub fn delete_chunks_removes_only_those(index: &dyn LexicalIndex) {
    let specs: Vec<Spec> = (0..3)
        .map(|i| Spec::new("a", "s", format!("gamma c{i}")).at(i * 20))
        .collect();
    put(index, &specs.iter().collect::<Vec<_>>());
    let gone = specs[1].chunk().chunk_id().clone();
    let absent = ChunkId::parse("zz:0:0000000000000000").unwrap();
    index.delete_chunks(&[gone.clone(), absent]).unwrap();
    index.commit().unwrap();
    let left = index.chunk_ids(&doc("a")).unwrap();
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&gone));
    assert_eq!(index.search("gamma", 10, &scope("s")).unwrap().len(), 2);
}

/// A filter for scope A never returns a chunk of scope B, even when B's chunks match better.
pub fn scope_filter_never_leaks(index: &dyn LexicalIndex) {
    let bs: Vec<Spec> = (0..20)
        .map(|i| Spec::new("b", "team-b", format!("secret plan secret plan {i}")).at(i * 40))
        .collect();
    let a = Spec::new(
        "a",
        "team-a",
        "the plan, mentioned once among many other words here",
    );
    let mut all: Vec<&Spec> = bs.iter().collect();
    all.push(&a);
    put(index, &all);
    assert_eq!(
        ids(&index.search("secret plan", 5, &scope("team-a")).unwrap()),
        vec![a.chunk().chunk_id().to_string()]
    );
    assert!(
        index
            .search("secret plan", 5, &scope("team-c"))
            .unwrap()
            .is_empty()
    );
    let both =
        Filter::for_scopes([Scope::new("team-a").unwrap(), Scope::new("team-b").unwrap()]).unwrap();
    assert_eq!(index.search("plan", 50, &both).unwrap().len(), 21);
}

/// Property over random data: every hit of a scoped search is in one of the filter's scopes,
/// and every matching chunk of that scope is found.
pub fn scope_filter_never_leaks_on_random_data(index: &dyn LexicalIndex) {
    let scopes = ["s0", "s1", "s2"];
    let words = ["apple", "banana", "cherry", "苹果", "香蕉"];
    let mut runner = TestRunner::new(Config {
        cases: 16,
        ..Config::default()
    });
    let round = std::cell::Cell::new(0usize);
    runner
        .run(
            &(
                prop::collection::vec((0usize..3, 0usize..5), 1..25),
                0usize..3,
                0usize..5,
                1usize..30,
            ),
            |(points, wanted, word, k)| {
                round.set(round.get() + 1);
                let name = format!("r{}", round.get());
                let specs: Vec<Spec> = points
                    .iter()
                    .enumerate()
                    .map(|(i, (s, w))| {
                        Spec::new(name.as_str(), scopes[*s], format!("{} item{i}", words[*w]))
                            .at(i * 20)
                    })
                    .collect();
                put(index, &specs.iter().collect::<Vec<_>>());
                let filter = scope(scopes[wanted]).with_doc_ids([doc(&name)]);
                let hits = index.search(words[word], k, &filter).unwrap();
                let expected = points
                    .iter()
                    .filter(|(s, w)| *s == wanted && *w == word)
                    .count();
                prop_assert_eq!(hits.len(), expected.min(k));
                for h in &hits {
                    prop_assert_eq!(h.chunk.doc().scope.as_str(), scopes[wanted]);
                }
                index.delete_document(&doc(&name)).unwrap();
                index.commit().unwrap();
                Ok(())
            },
        )
        .unwrap();
}

/// Property over random data: a filtered top-k is the first k of the unfiltered ranking
/// restricted to the filter — same chunks, same scores, same order — across several commits
/// (segments) and deletes. An index that prunes its ranking (block-max WAND) must not let a
/// chunk the filter excludes raise the bar, nor drop an allowed chunk below it.
///
/// "Same" is up to a sum's last bits ([`super::check_same_ranking`]).
pub fn filtered_top_k_is_the_filtered_ranking(index: &dyn LexicalIndex) {
    let scopes = ["s0", "s1", "s2"];
    let words = ["apple", "banana", "cherry", "苹果", "香蕉", "葡萄"];
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let round = std::cell::Cell::new(0usize);
    runner
        .run(
            &(
                prop::collection::vec((0usize..3, prop::collection::vec(0usize..6, 1..8)), 1..60),
                prop::collection::btree_set(0usize..3, 1..3),
                prop::collection::vec(0usize..6, 1..3),
                1usize..12,
                0usize..4,
            ),
            |(points, wanted, query, k, batches)| {
                round.set(round.get() + 1);
                let name = format!("t{}", round.get());
                let specs: Vec<Spec> = points
                    .iter()
                    .enumerate()
                    .map(|(i, (s, ws))| {
                        let text: Vec<&str> = ws.iter().map(|w| words[*w]).collect();
                        Spec::new(
                            name.as_str(),
                            scopes[*s],
                            format!("{} n{i}", text.join(" ")),
                        )
                        .at(i * 40)
                    })
                    .collect();
                // Several commits make several segments; every third chunk is deleted again.
                let per = specs.len().div_ceil(batches + 1);
                for part in specs.chunks(per.max(1)) {
                    put(index, &part.iter().collect::<Vec<_>>());
                }
                let gone: Vec<ChunkId> = specs
                    .iter()
                    .step_by(3)
                    .map(|s| s.chunk().chunk_id().clone())
                    .collect();
                index.delete_chunks(&gone).unwrap();
                index.commit().unwrap();

                let text: Vec<&str> = query.iter().map(|w| words[*w]).collect();
                let text = text.join(" ");
                let mine = |f: Filter| f.with_doc_ids([doc(&name)]);
                let filter = mine(
                    Filter::for_scopes(wanted.iter().map(|s| Scope::new(scopes[*s]).unwrap()))
                        .unwrap(),
                );
                let all = mine(
                    Filter::for_scopes(scopes.iter().map(|s| Scope::new(*s).unwrap())).unwrap(),
                );
                let hits = index.search(&text, k, &filter).unwrap();
                let ranking: Vec<(String, f32)> = index
                    .search(&text, specs.len() + 1, &all)
                    .unwrap()
                    .into_iter()
                    .filter(|h| {
                        wanted
                            .iter()
                            .any(|s| h.chunk.doc().scope.as_str() == scopes[*s])
                    })
                    .map(|h| (h.chunk.chunk_id().to_string(), h.score))
                    .collect();
                let got: Vec<(String, f32)> = hits
                    .iter()
                    .map(|h| (h.chunk.chunk_id().to_string(), h.score))
                    .collect();
                super::check_same_ranking(&got, &ranking, k).map_err(TestCaseError::fail)?;
                index.delete_document(&doc(&name)).unwrap();
                index.commit().unwrap();
                Ok(())
            },
        )
        .unwrap();
}

/// Document, locale and metadata conditions are applied inside the search (or refused as
/// unsupported, never ignored).
pub fn other_filters_apply_inside_the_search(index: &dyn LexicalIndex) {
    let (zh, en) = filter_case_specs("检索 retrieval", "retrieval 检索");
    put(index, &[&zh, &en]);
    check_filter_cases(&index.capabilities(), &zh, &en, &|f| {
        index.search("retrieval", 10, f)
    });
}

/// A search returns at most `k` chunks.
pub fn k_is_respected(index: &dyn LexicalIndex) {
    let specs: Vec<Spec> = (0..12)
        .map(|i| Spec::new("a", "s", format!("delta {}", "x ".repeat(i))).at(i * 40))
        .collect();
    put(index, &specs.iter().collect::<Vec<_>>());
    for k in [1, 5, 12, 100] {
        assert_eq!(
            index.search("delta", k, &scope("s")).unwrap().len(),
            k.min(12)
        );
    }
}

/// `k == 0` is invalid input.
pub fn k_zero_is_invalid(index: &dyn LexicalIndex) {
    let err = index.search("anything", 0, &scope("s")).unwrap_err();
    assert!(matches!(err, IndexError::InvalidInput(_)), "{err}");
}

/// An empty index returns an empty list.
pub fn empty_index_returns_nothing(index: &dyn LexicalIndex) {
    assert!(
        index
            .search("anything 任何", 10, &scope("s"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(index.count().unwrap(), 0);
    assert!(index.chunk_ids(&doc("a")).unwrap().is_empty());
}

/// A query with no searchable terms returns an empty list, not an error.
pub fn query_without_terms_returns_nothing(index: &dyn LexicalIndex) {
    put(index, &[&Spec::new("a", "s", "some words 一些词")]);
    for q in ["", "   ", "，。！？", "?!."] {
        assert!(
            index.search(q, 10, &scope("s")).unwrap().is_empty(),
            "query {q:?}"
        );
    }
}

/// Equal scores are ordered by ascending chunk ID.
pub fn ties_are_ordered_by_chunk_id(index: &dyn LexicalIndex) {
    let specs: Vec<Spec> = ["d", "b", "e", "a", "c"]
        .iter()
        .map(|d| Spec::new(*d, "s", "epsilon same text"))
        .collect();
    put(index, &specs.iter().collect::<Vec<_>>());
    let got = ids(&index.search("epsilon", 10, &scope("s")).unwrap());
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got.len(), 5);
    assert_eq!(got, sorted);
}

/// Results come in descending score order; more occurrences of a rare term rank higher.
pub fn results_are_ordered_by_score(index: &dyn LexicalIndex) {
    let once = Spec::new(
        "once",
        "s",
        "zeta appears once in this longer sentence about other things",
    );
    let twice = Spec::new("twice", "s", "zeta zeta twice");
    let none = Spec::new("none", "s", "nothing relevant here");
    put(index, &[&once, &twice, &none]);
    let hits = index.search("zeta", 10, &scope("s")).unwrap();
    assert_eq!(
        ids(&hits),
        vec![
            twice.chunk().chunk_id().to_string(),
            once.chunk().chunk_id().to_string()
        ]
    );
    assert!(hits[0].score >= hits[1].score);
}

/// `chunk_ids` lists exactly a document's chunks, sorted.
pub fn chunk_ids_lists_a_documents_chunks(index: &dyn LexicalIndex) {
    let specs: Vec<Spec> = (0..4)
        .map(|i| Spec::new("a", "s", format!("c{i}")).at(i * 7))
        .collect();
    let other = Spec::new("b", "s", "other");
    let mut all: Vec<&Spec> = specs.iter().collect();
    all.push(&other);
    put(index, &all);
    let mut want: Vec<ChunkId> = specs.iter().map(|s| s.chunk().chunk_id().clone()).collect();
    want.sort();
    assert_eq!(index.chunk_ids(&doc("a")).unwrap(), want);
}

/// `all_chunk_ids` lists every stored chunk of every document and scope once, sorted: after
/// upserts across documents, a re-upsert, the delete of one chunk and of one document and a
/// commit, exactly the surviving IDs.
pub fn all_chunk_ids_lists_exactly_the_surviving_chunks(index: &dyn LexicalIndex) {
    assert!(index.all_chunk_ids().unwrap().is_empty());
    let a: Vec<Spec> = (0..3)
        .map(|i| Spec::new("a", "s", format!("alpha {i}")).at(i * 9))
        .collect();
    let b: Vec<Spec> = (0..2)
        .map(|i| Spec::new("b", "t", format!("beta {i}")).at(i * 9))
        .collect();
    let c = Spec::new("c/deep.md", "u", "gone soon");
    let chunks: Vec<_> = a.iter().chain(&b).chain([&c]).map(|s| s.chunk()).collect();
    index.upsert(&chunks).unwrap();
    // Upserting a present chunk again must not list it twice.
    index.upsert(&[a[0].chunk()]).unwrap();
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

/// A returned chunk equals the stored one: content, offsets, headings and every attribute.
pub fn stored_chunks_round_trip(index: &dyn LexicalIndex) {
    let spec = Spec::new("guides/切分.md", "s", "切分策略 chunking 🚀\r\n")
        .at(17)
        .locale("zh-CN")
        .title("切分 Chunking")
        .metadata(json!({"tags": ["a", "b"], "n": 1.5, "ok": true, "nested": {"x": 1}}));
    put(index, &[&spec]);
    let hits = index.search("chunking", 1, &scope("s")).unwrap();
    assert_eq!(hits[0].chunk, spec.chunk());
}

/// The analyzer identity is non-empty and stable.
pub fn analyzer_is_named(index: &dyn LexicalIndex) {
    let name = index.analyzer();
    assert!(!name.trim().is_empty());
    assert_eq!(name, index.analyzer());
}

/// A generation, when the adapter keeps one, changes with each commit that changed something
/// and stays put otherwise.
pub fn generation_moves_with_commits(index: &dyn LexicalIndex) {
    let before = index.generation().expect("generation");
    index
        .upsert(&[Spec::new("gen", "s", "代数 generation").chunk()])
        .unwrap();
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
