//! The indexer and retriever use cases over the reference adapters.

use std::sync::atomic::{AtomicBool, Ordering};

use zhiku_adapters_memory::{
    HashingEmbedder, MemoryLexicalIndex, MemorySourceStore, MemoryVectorIndex,
};
use zhiku_domain::ports::{EmbedError, Embedder, LexicalIndex, SourceRecord, VectorIndex};
use zhiku_domain::rules::budget::RetrievalBudget;
use zhiku_domain::rules::fusion::{FusionConfig, Route};
use zhiku_domain::usecases::{
    Catalog, Indexer, IndexerError, RetrievalMode, RetrievalRequest, RetrieveError, Retriever,
    RouteStatus, SyncMode,
};
use zhiku_domain::{
    Access, AccessRule, ChunkingPolicy, DocId, Document, Embedding, EmbeddingSpace, Filter,
    Principal, Revision, Scope, Source,
};

struct Kb {
    embedder: HashingEmbedder,
    vectors: MemoryVectorIndex,
    lexical: MemoryLexicalIndex,
    source: MemorySourceStore,
    catalog: Catalog,
}

fn policy() -> ChunkingPolicy {
    ChunkingPolicy::with_sizes(120, 16).unwrap()
}

fn doc(id: &str, scope: &str, content: &str) -> Document {
    Document::builder(
        DocId::new(id).unwrap(),
        Source::new(format!("kb/{id}")).unwrap(),
        content,
    )
    .scope(Scope::new(scope).unwrap())
    .build()
}

fn long_doc(tail: &str) -> String {
    let mut s = String::from("# 增量索引\n\n");
    for i in 0..6 {
        s.push_str(&format!(
            "第{i}段：索引器比较指纹，没有变化的文档被跳过，变化的文档只嵌入新的块。\n\n"
        ));
    }
    s.push_str(tail);
    s
}

impl Kb {
    fn new() -> Self {
        let embedder = HashingEmbedder::new(256).unwrap();
        let vectors = MemoryVectorIndex::new(embedder.space().clone());
        let lexical = MemoryLexicalIndex::new();
        let catalog = Indexer::hybrid(policy(), &embedder, &vectors, &lexical)
            .unwrap()
            .empty_catalog();
        Self {
            embedder,
            vectors,
            lexical,
            source: MemorySourceStore::new(),
            catalog,
        }
    }

    fn index(
        &mut self,
        docs: Vec<Document>,
        mode: SyncMode,
    ) -> zhiku_domain::usecases::IndexReport {
        for d in &docs {
            self.source.put(d);
        }
        let indexer =
            Indexer::hybrid(policy(), &self.embedder, &self.vectors, &self.lexical).unwrap();
        let (catalog, report) = indexer.run(&self.catalog, docs, mode, &mut |_| {}).unwrap();
        self.catalog = catalog;
        report
    }

    fn retriever(&self) -> Retriever<'_> {
        Retriever::new(&self.source)
            .with_dense(&self.embedder, &self.vectors)
            .with_lexical(&self.lexical)
    }
}

fn scope(s: &str) -> Filter {
    Filter::for_scope(Scope::new(s).unwrap())
}

fn request<'q>(query: &'q str, filter: &'q Filter, mode: RetrievalMode) -> RetrievalRequest<'q> {
    RetrievalRequest {
        query,
        filter,
        mode,
        k: 5,
        budget: None,
    }
}

#[test]
fn first_index_embeds_everything_and_fills_both_indexes() {
    let mut kb = Kb::new();
    let report = kb.index(
        vec![
            doc("a", "s", &long_doc("结尾。")),
            doc("b", "s", "short note"),
        ],
        SyncMode::Full,
    );
    let chunks = kb.catalog.chunk_count();
    assert_eq!(report.docs_added, 2);
    assert_eq!(report.chunks_embedded, chunks);
    assert_eq!(report.chunks_reused, 0);
    assert_eq!(kb.vectors.count().unwrap(), chunks);
    assert_eq!(kb.lexical.count().unwrap(), chunks);
    assert!(chunks > 3, "the long document was cut into several chunks");
}

#[test]
fn unchanged_documents_are_skipped_and_embed_nothing() {
    let mut kb = Kb::new();
    let docs = || {
        vec![
            doc("a", "s", &long_doc("结尾。")),
            doc("b", "s", "short note"),
        ]
    };
    kb.index(docs(), SyncMode::Full);
    let report = kb.index(docs(), SyncMode::Full);
    assert_eq!(report.docs_skipped, 2);
    assert_eq!(report.chunks_embedded, 0);
    assert_eq!(report.chunks_removed, 0);
}

#[test]
fn an_edited_paragraph_re_embeds_only_changed_chunks() {
    let mut kb = Kb::new();
    kb.index(vec![doc("a", "s", &long_doc("结尾。"))], SyncMode::Full);
    let before = kb.catalog.docs[&DocId::new("a").unwrap()].chunk_ids.clone();
    let report = kb.index(
        vec![doc("a", "s", &long_doc("新的结尾，完全不同的内容。"))],
        SyncMode::Full,
    );
    let after = kb.catalog.docs[&DocId::new("a").unwrap()].chunk_ids.clone();
    let kept = before.iter().filter(|id| after.contains(id)).count();
    assert_eq!(report.docs_changed, 1);
    assert!(kept >= 2, "earlier chunks keep their IDs");
    assert_eq!(report.chunks_reused, kept);
    assert_eq!(report.chunks_embedded, after.len() - kept);
    assert_eq!(report.chunks_removed, before.len() - kept);
    assert_eq!(kb.vectors.count().unwrap(), after.len());
    assert_eq!(kb.lexical.count().unwrap(), after.len());
    // Reused chunks were re-stored with the new revision, so the revision check keeps them.
    let f = scope("s");
    let got = kb
        .retriever()
        .retrieve(&request("第0段 索引器", &f, RetrievalMode::Hybrid))
        .unwrap();
    assert!(got.dropped.is_empty(), "{:?}", got.dropped);
    let revision = Revision::of_content(&long_doc("新的结尾，完全不同的内容。"));
    assert!(
        got.evidence
            .iter()
            .all(|e| e.chunk.doc().revision == revision)
    );
}

#[test]
fn an_access_change_replaces_records_without_embedding() {
    let mut kb = Kb::new();
    let text = "the bonus plan pays three months of salary";
    kb.index(vec![doc("a", "s", text)], SyncMode::Full);
    let hr_only = Document::builder(DocId::new("a").unwrap(), Source::new("kb/a").unwrap(), text)
        .scope(Scope::new("s").unwrap())
        .access(Access::parse(["group:hr"], AccessRule::Document).unwrap())
        .build();
    let report = kb.index(vec![hr_only], SyncMode::Full);
    assert_eq!(
        (
            report.docs_changed,
            report.chunks_embedded,
            report.chunks_reused
        ),
        (1, 0, 1)
    );
    let person = |groups: &[&str]| {
        scope("s").for_principal(&Principal::new("someone@corp", groups).unwrap())
    };
    let query = kb.embedder.embed_query("bonus plan").unwrap();
    for (groups, found) in [(&[][..], false), (&["hr"][..], true)] {
        let f = person(groups);
        assert_eq!(!kb.vectors.search(&query, 5, &f).unwrap().is_empty(), found);
        assert_eq!(
            !kb.lexical.search("bonus", 5, &f).unwrap().is_empty(),
            found
        );
    }
    // The stored record says the new readers; a whole-scope caller still finds it.
    let hits = kb.vectors.search(&query, 5, &scope("s")).unwrap();
    assert_eq!(hits[0].chunk.doc().access.terms(), vec!["group:hr"]);
}

#[test]
fn a_scope_change_is_re_indexed_without_embedding() {
    let mut kb = Kb::new();
    kb.index(
        vec![doc("a", "public", "release notes for version two")],
        SyncMode::Full,
    );
    let report = kb.index(
        vec![doc("a", "secret", "release notes for version two")],
        SyncMode::Full,
    );
    assert_eq!(
        (
            report.docs_changed,
            report.chunks_embedded,
            report.chunks_reused
        ),
        (1, 0, 1)
    );
    let public = scope("public");
    assert!(
        kb.vectors
            .search(&kb.embedder.embed_query("release").unwrap(), 5, &public)
            .unwrap()
            .is_empty()
    );
    assert!(kb.lexical.search("release", 5, &public).unwrap().is_empty());
    assert_eq!(
        kb.lexical
            .search("release", 5, &scope("secret"))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn full_sync_removes_missing_documents_and_partial_sync_does_not() {
    let mut kb = Kb::new();
    kb.index(
        vec![doc("a", "s", "alpha text"), doc("b", "s", "beta text")],
        SyncMode::Full,
    );
    let report = kb.index(vec![doc("c", "s", "gamma text")], SyncMode::Partial);
    assert_eq!(report.docs_removed, 0);
    assert_eq!(kb.lexical.count().unwrap(), 3);
    let report = kb.index(vec![doc("c", "s", "gamma text")], SyncMode::Full);
    assert_eq!(
        (
            report.docs_removed,
            report.chunks_removed,
            report.docs_skipped
        ),
        (2, 2, 1)
    );
    assert_eq!(kb.vectors.count().unwrap(), 1);
    assert_eq!(kb.lexical.count().unwrap(), 1);
    assert!(
        kb.lexical
            .chunk_ids(&DocId::new("a").unwrap())
            .unwrap()
            .is_empty()
    );
    assert!(
        kb.vectors
            .chunk_ids(&DocId::new("b").unwrap())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn duplicate_ids_and_other_configurations_are_refused() {
    let mut kb = Kb::new();
    let indexer = Indexer::hybrid(policy(), &kb.embedder, &kb.vectors, &kb.lexical).unwrap();
    let err = indexer
        .run(
            &kb.catalog,
            vec![doc("a", "s", "x"), doc("a", "s", "y")],
            SyncMode::Full,
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, IndexerError::DuplicateDocument(_)), "{err}");
    kb.index(vec![doc("a", "s", "x")], SyncMode::Full);
    let other = ChunkingPolicy::with_sizes(200, 16).unwrap();
    let indexer = Indexer::hybrid(other, &kb.embedder, &kb.vectors, &kb.lexical).unwrap();
    let err = indexer
        .run(
            &kb.catalog,
            vec![doc("a", "s", "x")],
            SyncMode::Full,
            &mut |_| {},
        )
        .unwrap_err();
    assert!(err.to_string().contains("chunking policy"), "{err}");
    let lexical_only = Indexer::lexical_only(policy(), &kb.lexical);
    let err = lexical_only
        .run(&kb.catalog, vec![], SyncMode::Full, &mut |_| {})
        .unwrap_err();
    assert!(err.to_string().contains("embedding space"), "{err}");
}

/// An embedder that can be switched off, to test failure paths.
struct Flaky {
    inner: HashingEmbedder,
    down: AtomicBool,
}

impl Embedder for Flaky {
    fn space(&self) -> &EmbeddingSpace {
        self.inner.space()
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EmbedError::Unavailable {
                adapter: "flaky",
                message: "switched off".into(),
            });
        }
        self.inner.embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EmbedError::Unavailable {
                adapter: "flaky",
                message: "switched off".into(),
            });
        }
        self.inner.embed_query(text)
    }
}

#[test]
fn a_failing_embedder_fails_the_run_and_keeps_the_catalog() {
    let kb = Kb::new();
    let flaky = Flaky {
        inner: kb.embedder.clone(),
        down: AtomicBool::new(true),
    };
    let indexer = Indexer::hybrid(policy(), &flaky, &kb.vectors, &kb.lexical).unwrap();
    let err = indexer
        .run(
            &kb.catalog,
            vec![doc("a", "s", "x")],
            SyncMode::Full,
            &mut |_| {},
        )
        .unwrap_err();
    assert!(matches!(err, IndexerError::Embed(_)));
    assert!(kb.catalog.docs.is_empty());
    assert_eq!(
        kb.lexical.count().unwrap(),
        0,
        "nothing was written before embedding succeeded"
    );
}

#[test]
fn hybrid_retrieval_reports_which_route_found_each_hit() {
    let mut kb = Kb::new();
    kb.index(
        vec![
            doc("a", "s", "reciprocal rank fusion merges ranked lists"),
            doc("b", "s", "jieba segments Chinese text into words"),
            doc("c", "other", "reciprocal rank fusion in another scope"),
        ],
        SyncMode::Full,
    );
    let f = scope("s");
    let got = kb
        .retriever()
        .retrieve(&request(
            "reciprocal rank fusion",
            &f,
            RetrievalMode::Hybrid,
        ))
        .unwrap();
    assert_eq!(got.routes_ran(), vec![Route::Dense, Route::Lexical]);
    let top = &got.evidence[0];
    assert_eq!(top.chunk.doc_id().as_str(), "a");
    let routes: Vec<Route> = top.routes.iter().map(|r| r.route).collect();
    assert_eq!(routes, vec![Route::Dense, Route::Lexical]);
    assert!(
        got.evidence
            .iter()
            .all(|e| e.chunk.doc().scope.as_str() == "s"),
        "the filter applies to both routes"
    );
    assert_eq!(top.rank, 1);
}

#[test]
fn stale_deleted_and_invisible_hits_are_dropped_with_a_reason() {
    let mut kb = Kb::new();
    kb.index(
        vec![
            doc("stale", "s", "shared topic one"),
            doc("gone", "s", "shared topic two"),
            doc("hidden", "s", "shared topic three"),
            doc("fine", "s", "shared topic four"),
        ],
        SyncMode::Full,
    );
    let id = |s: &str| DocId::new(s).unwrap();
    kb.source
        .put(&doc("stale", "s", "shared topic one, edited at the source"));
    kb.source.remove(&id("gone"));
    kb.source.set(
        id("hidden"),
        SourceRecord {
            revision: Revision::of_content("shared topic three"),
            scope: Scope::new("s").unwrap(),
            visible: false,
        },
    );
    let f = scope("s");
    let got = kb
        .retriever()
        .retrieve(&request("shared topic", &f, RetrievalMode::Lexical))
        .unwrap();
    let kept: Vec<&str> = got
        .evidence
        .iter()
        .map(|e| e.chunk.doc_id().as_str())
        .collect();
    assert_eq!(kept, vec!["fine"]);
    let mut reasons: Vec<(String, &str)> = got
        .dropped
        .iter()
        .map(|d| (d.doc_id.to_string(), d.reason.code()))
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        vec![
            ("gone".into(), "deleted"),
            ("hidden".into(), "not_visible"),
            ("stale".into(), "stale_revision")
        ]
    );
}

#[test]
fn an_unavailable_dense_route_falls_back_to_lexical_and_says_why() {
    let mut kb = Kb::new();
    kb.index(
        vec![doc("a", "s", "fallback keeps answering")],
        SyncMode::Full,
    );
    let flaky = Flaky {
        inner: kb.embedder.clone(),
        down: AtomicBool::new(true),
    };
    let retriever = Retriever::new(&kb.source)
        .with_dense(&flaky, &kb.vectors)
        .with_lexical(&kb.lexical);
    let f = scope("s");
    let got = retriever
        .retrieve(&request("fallback", &f, RetrievalMode::Hybrid))
        .unwrap();
    assert_eq!(got.routes_ran(), vec![Route::Lexical]);
    assert!(
        matches!(&got.routes[0].status, RouteStatus::Unavailable { reason } if reason.contains("switched off"))
    );
    assert_eq!(got.evidence.len(), 1);
}

#[test]
fn no_route_is_cannot_retrieve_and_no_match_is_an_empty_result() {
    let mut kb = Kb::new();
    kb.index(vec![doc("a", "s", "some content")], SyncMode::Full);
    let flaky = Flaky {
        inner: kb.embedder.clone(),
        down: AtomicBool::new(true),
    };
    let dense_only = Retriever::new(&kb.source).with_dense(&flaky, &kb.vectors);
    let f = scope("s");
    let err = dense_only
        .retrieve(&request("content", &f, RetrievalMode::Hybrid))
        .unwrap_err();
    assert!(matches!(err, RetrieveError::CannotRetrieve { .. }), "{err}");
    let none = kb
        .retriever()
        .retrieve(&request("完全无关的问题", &f, RetrievalMode::Lexical))
        .unwrap();
    assert!(none.evidence.is_empty());
    assert_eq!(none.routes_ran(), vec![Route::Lexical]);
}

#[test]
fn the_budget_keeps_whole_chunks_and_flags_truncation() {
    let mut kb = Kb::new();
    kb.index(vec![doc("a", "s", &long_doc("结尾。"))], SyncMode::Full);
    let f = scope("s");
    let mut req = request("索引器 指纹", &f, RetrievalMode::Hybrid);
    req.budget = Some(RetrievalBudget::new(2, 10_000).unwrap());
    let got = kb.retriever().retrieve(&req).unwrap();
    assert_eq!(got.evidence.len(), 2);
    assert!(got.truncated);
    assert!(!got.budget_dropped.is_empty());
    req.budget = Some(RetrievalBudget::new(10, 130).unwrap());
    let got = kb.retriever().retrieve(&req).unwrap();
    let used: usize = got.evidence.iter().map(|e| e.chunk.char_len()).sum();
    assert!(used <= 130);
    for e in &got.evidence {
        assert_eq!(
            e.chunk.content().chars().count(),
            e.chunk.char_len(),
            "chunks are never cut"
        );
    }
}

#[test]
fn route_weights_really_apply() {
    let mut kb = Kb::new();
    kb.index(
        vec![
            doc("a", "s", "alpha beta"),
            doc("b", "s", "alpha alpha alpha"),
        ],
        SyncMode::Full,
    );
    let f = scope("s");
    let mut weights = FusionConfig::default();
    weights.weights.insert(Route::Dense, 0.0);
    let lexical_only = kb
        .retriever()
        .with_fusion(weights)
        .retrieve(&request("alpha", &f, RetrievalMode::Hybrid))
        .unwrap();
    let plain = kb
        .retriever()
        .retrieve(&request("alpha", &f, RetrievalMode::Lexical))
        .unwrap();
    let order = |r: &zhiku_domain::usecases::Retrieval| {
        r.evidence
            .iter()
            .map(|e| e.chunk_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&lexical_only), order(&plain));
    for (w, p) in lexical_only.evidence.iter().zip(&plain.evidence) {
        assert!(
            (w.score - p.score).abs() < 1e-12,
            "a zero weight removes the dense contribution"
        );
    }
}

mod consistency {
    use std::sync::atomic::AtomicUsize;

    use zhiku_domain::ports::{EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk};
    use zhiku_domain::usecases::{ChunkProblems, Consistency};
    use zhiku_domain::{Chunk, ChunkId};
    use zhiku_tests::contract::fixtures::Spec;

    use super::*;

    /// An indexed knowledge base of a long document (several chunks) and a short one.
    fn indexed() -> Kb {
        let mut kb = Kb::new();
        kb.index(
            vec![
                doc("a", "s", &long_doc("结尾。")),
                doc("b", "s", "short note"),
            ],
            SyncMode::Full,
        );
        assert!(kb.catalog.docs[&DocId::new("a").unwrap()].chunk_ids.len() > 2);
        kb
    }

    fn stray(kb: &Kb, doc: &str, text: &str) -> EmbeddedChunk {
        EmbeddedChunk {
            chunk: Spec::new(doc, "s", text).chunk(),
            embedding: kb.embedder.embed_documents(&[text]).unwrap().remove(0),
        }
    }

    fn catalogued(kb: &Kb) -> Vec<ChunkId> {
        let mut ids: Vec<ChunkId> = kb
            .catalog
            .docs
            .values()
            .flat_map(|e| e.chunk_ids.iter().cloned())
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn an_orphan_in_each_index_is_removed_and_the_catalog_kept() {
        let kb = indexed();
        let lexical_orphan = Spec::new("ghost", "s", "only lexical").chunk();
        kb.lexical
            .upsert(std::slice::from_ref(&lexical_orphan))
            .unwrap();
        let vector_orphan = stray(&kb, "a", "only in vectors");
        kb.vectors
            .upsert(std::slice::from_ref(&vector_orphan))
            .unwrap();

        let check = Consistency::new(&kb.lexical, Some(&kb.vectors));
        let problems = check.check(&kb.catalog).unwrap();
        assert_eq!(
            problems,
            ChunkProblems {
                lexical_orphans: vec![lexical_orphan.chunk_id().clone()],
                vector_orphans: vec![vector_orphan.chunk.chunk_id().clone()],
                docs_missing_chunks: vec![],
            }
        );
        // Without the dense route, only the lexical index is compared.
        let lexical_only = Consistency::new(&kb.lexical, None)
            .check(&kb.catalog)
            .unwrap();
        assert_eq!(lexical_only.lexical_orphans, problems.lexical_orphans);
        assert!(lexical_only.vector_orphans.is_empty());

        let (catalog, repair) = check.repair(&kb.catalog).unwrap();
        assert_eq!(repair.orphans_removed, 2);
        assert!(repair.docs_requeued.is_empty());
        assert_eq!(catalog, kb.catalog);
        assert_eq!(kb.lexical.all_chunk_ids().unwrap(), catalogued(&kb));
        assert_eq!(kb.vectors.all_chunk_ids().unwrap(), catalogued(&kb));
        assert!(check.check(&catalog).unwrap().is_empty());
    }

    #[test]
    fn a_document_missing_a_chunk_is_requeued_and_removed_from_both_indexes() {
        let kb = indexed();
        let a = DocId::new("a").unwrap();
        let b = DocId::new("b").unwrap();
        let a_chunks = kb.catalog.docs[&a].chunk_ids.clone();
        kb.vectors.delete_chunks(&a_chunks[1..2]).unwrap();

        let check = Consistency::new(&kb.lexical, Some(&kb.vectors));
        let problems = check.check(&kb.catalog).unwrap();
        assert_eq!(problems.docs_missing_chunks, vec![a.clone()]);
        assert!(problems.lexical_orphans.is_empty() && problems.vector_orphans.is_empty());

        let (catalog, repair) = check.repair(&kb.catalog).unwrap();
        assert_eq!(repair.docs_requeued, vec![a.clone()]);
        // Every surviving chunk of `a`: all of them lexically, all but one as vectors.
        assert_eq!(repair.orphans_removed, 2 * a_chunks.len() - 1);
        assert!(!catalog.docs.contains_key(&a));
        assert_eq!(catalog.docs.get(&b), kb.catalog.docs.get(&b));
        assert!(kb.lexical.chunk_ids(&a).unwrap().is_empty());
        assert!(kb.vectors.chunk_ids(&a).unwrap().is_empty());
        assert_eq!(
            kb.lexical.chunk_ids(&b).unwrap(),
            catalog.docs[&b].chunk_ids
        );
        assert_eq!(
            kb.vectors.chunk_ids(&b).unwrap(),
            catalog.docs[&b].chunk_ids
        );
        assert!(check.check(&catalog).unwrap().is_empty());
        let json = serde_json::to_value(&repair).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"orphans_removed": repair.orphans_removed, "docs_requeued": ["a"]})
        );
    }

    #[test]
    fn a_consistent_store_reports_nothing_and_writes_nothing() {
        let kb = indexed();
        let lexical = Watched::new(&kb.lexical);
        let vectors = Watched::new(&kb.vectors);
        let check = Consistency::new(&lexical, Some(&vectors));
        let problems = check.check(&kb.catalog).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let (catalog, repair) = check.repair(&kb.catalog).unwrap();
        assert!(repair.is_empty(), "{repair:?}");
        assert_eq!(catalog, kb.catalog);
        assert_eq!(lexical.writes(), 0);
        assert_eq!(vectors.writes(), 0);
        // The spy does see writes: a repair that has work to do reaches both indexes.
        kb.lexical
            .upsert(&[Spec::new("ghost", "s", "stray").chunk()])
            .unwrap();
        kb.vectors.upsert(&[stray(&kb, "ghost", "stray")]).unwrap();
        check.repair(&kb.catalog).unwrap();
        assert!(lexical.writes() > 0 && vectors.writes() > 0);
    }

    #[test]
    fn a_repair_from_a_check_lists_each_index_once() {
        let kb = indexed();
        let a = DocId::new("a").unwrap();
        let a_chunks = kb.catalog.docs[&a].chunk_ids.clone();
        kb.lexical
            .upsert(&[Spec::new("ghost", "s", "stray").chunk()])
            .unwrap();
        kb.vectors.upsert(&[stray(&kb, "ghost", "stray")]).unwrap();
        LexicalIndex::delete_chunks(&kb.lexical, &a_chunks[..1]).unwrap();
        let expected = Consistency::new(&kb.lexical, Some(&kb.vectors))
            .check(&kb.catalog)
            .unwrap();
        assert_eq!(expected.docs_missing_chunks, vec![a.clone()]);

        let lexical = Watched::new(&kb.lexical);
        let vectors = Watched::new(&kb.vectors);
        let check = Consistency::new(&lexical, Some(&vectors));
        let checked = check.inspect(&kb.catalog).unwrap();
        assert_eq!(checked.problems(), &expected);
        assert_eq!((lexical.writes(), vectors.writes()), (0, 0));
        let (catalog, repair) = check.repair_checked(&kb.catalog, checked).unwrap();
        assert_eq!((lexical.lists(), vectors.lists()), (1, 1));
        assert_eq!(repair.docs_requeued, vec![a.clone()]);
        // The ghost in each index, and what survived of `a`: all but one chunk lexically,
        // every one as vectors.
        assert_eq!(repair.orphans_removed, 2 + 2 * a_chunks.len() - 1);
        assert!(!catalog.docs.contains_key(&a));
        assert!(
            Consistency::new(&kb.lexical, Some(&kb.vectors))
                .check(&catalog)
                .unwrap()
                .is_empty()
        );
    }

    /// Passes every call to a memory index and counts the writes (upserts, deletes, commits)
    /// and the full listings.
    struct Watched<'a, T> {
        inner: &'a T,
        writes: AtomicUsize,
        lists: AtomicUsize,
    }

    impl<'a, T> Watched<'a, T> {
        fn new(inner: &'a T) -> Self {
            Self {
                inner,
                writes: AtomicUsize::new(0),
                lists: AtomicUsize::new(0),
            }
        }

        fn writes(&self) -> usize {
            self.writes.load(Ordering::SeqCst)
        }

        fn lists(&self) -> usize {
            self.lists.load(Ordering::SeqCst)
        }

        fn wrote(&self) {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl LexicalIndex for Watched<'_, MemoryLexicalIndex> {
        fn capabilities(&self) -> IndexCapabilities {
            self.inner.capabilities()
        }
        fn analyzer(&self) -> String {
            self.inner.analyzer()
        }
        fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError> {
            self.wrote();
            self.inner.upsert(chunks)
        }
        fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
            self.wrote();
            LexicalIndex::update_records(self.inner, chunks)
        }
        fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
            self.wrote();
            LexicalIndex::delete_chunks(self.inner, ids)
        }
        fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
            self.wrote();
            LexicalIndex::delete_document(self.inner, doc)
        }
        fn search(
            &self,
            query: &str,
            k: usize,
            filter: &Filter,
        ) -> Result<Vec<ScoredChunk>, IndexError> {
            self.inner.search(query, k, filter)
        }
        fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
            LexicalIndex::chunk_ids(self.inner, doc)
        }
        fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            LexicalIndex::all_chunk_ids(self.inner)
        }
        fn count(&self) -> Result<usize, IndexError> {
            LexicalIndex::count(self.inner)
        }
        fn commit(&self) -> Result<(), IndexError> {
            self.wrote();
            LexicalIndex::commit(self.inner)
        }
    }

    impl VectorIndex for Watched<'_, MemoryVectorIndex> {
        fn capabilities(&self) -> IndexCapabilities {
            self.inner.capabilities()
        }
        fn space(&self) -> &EmbeddingSpace {
            self.inner.space()
        }
        fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
            self.wrote();
            self.inner.upsert(items)
        }
        fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
            self.wrote();
            VectorIndex::update_records(self.inner, chunks)
        }
        fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
            self.wrote();
            VectorIndex::delete_chunks(self.inner, ids)
        }
        fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
            self.wrote();
            VectorIndex::delete_document(self.inner, doc)
        }
        fn search(
            &self,
            query: &Embedding,
            k: usize,
            filter: &Filter,
        ) -> Result<Vec<ScoredChunk>, IndexError> {
            self.inner.search(query, k, filter)
        }
        fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
            VectorIndex::chunk_ids(self.inner, doc)
        }
        fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            VectorIndex::all_chunk_ids(self.inner)
        }
        fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
            self.inner.embeddings(ids)
        }
        fn count(&self) -> Result<usize, IndexError> {
            VectorIndex::count(self.inner)
        }
        fn commit(&self) -> Result<(), IndexError> {
            self.wrote();
            VectorIndex::commit(self.inner)
        }
    }
}

/// A reranker that prefers what the fused ranking put last, or fails, or miscounts.
struct Backwards {
    fail: bool,
    short: bool,
}

impl zhiku_domain::ports::Reranker for Backwards {
    fn name(&self) -> &str {
        "backwards"
    }

    fn rerank(
        &self,
        _query: &str,
        candidates: &[zhiku_domain::ports::RerankCandidate<'_>],
    ) -> Result<Vec<f64>, zhiku_domain::ports::RerankError> {
        if self.fail {
            return Err(zhiku_domain::ports::RerankError::Unavailable {
                adapter: "backwards",
                message: "down for the test".into(),
            });
        }
        let n = candidates.len() - usize::from(self.short);
        Ok(candidates
            .iter()
            .take(n)
            .map(|c| c.fused_rank as f64)
            .collect())
    }
}

#[test]
fn a_reranker_reorders_the_checked_top_and_can_lift_from_below_k() {
    let mut kb = Kb::new();
    let docs: Vec<Document> = (0..8)
        .map(|i| {
            doc(
                &format!("d{i}"),
                "s",
                &format!("融合 排序 第{i}篇 {}", "融合 ".repeat(8 - i)),
            )
        })
        .collect();
    kb.index(docs, SyncMode::Full);
    let f = scope("s");
    let mut req = request("融合", &f, RetrievalMode::Lexical);
    req.k = 3;
    let plain = kb.retriever().retrieve(&req).unwrap();
    assert!(plain.rerank.is_none());
    let fused: Vec<String> = plain
        .evidence
        .iter()
        .map(|e| e.chunk_id.to_string())
        .collect();

    let backwards = Backwards {
        fail: false,
        short: false,
    };
    let got = kb
        .retriever()
        .with_reranker(&backwards, 6)
        .retrieve(&req)
        .unwrap();
    let report = got.rerank.as_ref().unwrap();
    assert_eq!(report.reranker, "backwards");
    assert_eq!(report.status, RouteStatus::Ran { hits: 6 });
    assert_eq!(got.evidence.len(), 3, "k still bounds the evidence");
    // The sixth fused candidate is now first: reranking saw below k.
    assert_eq!(report.scores[0].fused_rank, 6);
    assert_eq!(got.evidence[0].chunk_id, report.scores[0].chunk_id);
    assert!(!fused.contains(&got.evidence[0].chunk_id.to_string()));
    let ranks: Vec<usize> = got.evidence.iter().map(|e| e.rank).collect();
    assert_eq!(ranks, vec![1, 2, 3]);
    assert!(got.timings.iter().any(|t| t.stage == "rerank"));

    // A failing or miscounting reranker keeps the fused order and says why.
    for broken in [
        Backwards {
            fail: true,
            short: false,
        },
        Backwards {
            fail: false,
            short: true,
        },
    ] {
        let got = kb
            .retriever()
            .with_reranker(&broken, 6)
            .retrieve(&req)
            .unwrap();
        let ids: Vec<String> = got
            .evidence
            .iter()
            .map(|e| e.chunk_id.to_string())
            .collect();
        assert_eq!(ids, fused);
        assert!(matches!(
            got.rerank.unwrap().status,
            RouteStatus::Unavailable { .. }
        ));
    }
}

#[test]
fn the_locale_boost_prefers_the_questions_language_without_filtering() {
    let mut kb = Kb::new();
    kb.index(
        vec![
            doc(
                "zh",
                "s",
                "BM25 BM25 BM25 是一种排序函数，按词频和文档长度打分。",
            ),
            doc(
                "en",
                "s",
                "BM25 is a ranking function over term frequencies.",
            ),
        ],
        SyncMode::Full,
    );
    let f = scope("s");
    let docs = |boost: f64, query: &str| -> Vec<String> {
        kb.retriever()
            .with_locale_boost(boost)
            .retrieve(&request(query, &f, RetrievalMode::Lexical))
            .unwrap()
            .evidence
            .iter()
            .map(|e| e.chunk.doc_id().to_string())
            .collect()
    };
    let plain = docs(0.0, "what is BM25");
    assert_eq!(plain.len(), 2);
    assert_eq!(
        docs(1.0, "what is BM25"),
        vec!["en", "zh"],
        "English first for an English question"
    );
    assert_eq!(docs(1.0, "BM25 是什么排序函数"), vec!["zh", "en"]);
    assert_eq!(docs(1.0, "what is BM25").len(), 2, "a boost, not a filter");
}
