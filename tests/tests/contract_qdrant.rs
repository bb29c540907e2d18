//! The vector-index contract suite and adapter tests on a real Qdrant server.
//!
//! Set `ZHIKU_TEST_QDRANT_URL` to the gRPC URL of a Qdrant server (e.g.
//! `ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334`). Every test works in its own collection,
//! named `zhiku_test_…`, and drops it afterwards. Without the variable every test prints a
//! `SKIPPED` line naming it and checks nothing: these tests never pass against a fake.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use zhiku_adapters_qdrant::{
    Bm25, MERGE_AT, QdrantCatalogStore, QdrantConfig, QdrantLexicalIndex, QdrantVectorIndex,
};
use zhiku_domain::ports::{
    CatalogStore, EmbeddedChunk, IndexError, LexicalIndex, ScoredChunk, VectorIndex,
};
use zhiku_domain::{ChunkId, DocId, EmbeddingSpace, Filter};

/// The server's URL, or `None` after printing the loud notice.
fn server(test: &str) -> Option<String> {
    zhiku_tests::local::qdrant_server("qdrant", test)
}

/// A collection name no other test (or test run) uses.
fn unique_collection(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "zhiku_test_{tag}_{}_{}_{nanos:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The adapter's settings for `url`; on a cluster, `ZHIKU_TEST_QDRANT_SHARDS` and
/// `ZHIKU_TEST_QDRANT_REPLICATION` (1 when unset) shape every test collection.
fn config(url: &str) -> QdrantConfig {
    let knob = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(1)
    };
    QdrantConfig {
        batch_size: 128,
        shard_number: knob("ZHIKU_TEST_QDRANT_SHARDS"),
        replication_factor: knob("ZHIKU_TEST_QDRANT_REPLICATION"),
        ..QdrantConfig::with_url(url)
    }
}

/// A vector index in a collection of its own, dropped when the test is done with it.
fn scratch(url: &str, tag: &str, space: EmbeddingSpace) -> QdrantVectorIndex {
    let name = unique_collection(tag);
    QdrantVectorIndex::open_collection(&config(url), &name, space, None)
        .unwrap_or_else(|e| panic!("cannot open {name} on {url}: {e}"))
        .dropped_with_handle()
}

mod qdrant_vector {
    use super::*;

    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| -> Option<Box<dyn VectorIndex>> {
        let url = server("vector_index_contract")?;
        Some(Box::new(scratch(&url, "contract", space)))
    });
}

/// The lexical route on the server: sparse vectors of zhiku's analyzer terms.
mod qdrant_lexical {
    use super::*;

    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        let url = server("lexical_index_contract")?;
        let name = unique_collection("lexical");
        Some(Box::new(
            QdrantLexicalIndex::open_collection(&config(&url), &name, Bm25::default())
                .unwrap_or_else(|e| panic!("cannot open {name} on {url}: {e}"))
                .dropped_with_handle(),
        ))
    });
}

/// The catalog on the server: each test's handles share one fresh collection, dropped when
/// the last handle goes.
mod qdrant_catalog {
    use std::sync::Arc;

    use super::*;
    use zhiku_tests::contract::catalog::OpenCatalogStore;

    /// Drops the collection when the test's opener goes.
    struct Dropper(QdrantCatalogStore);

    impl Drop for Dropper {
        fn drop(&mut self) {
            let _ = self.0.drop_collection();
        }
    }

    zhiku_tests::catalog_store_contract!(|()| -> Option<Box<OpenCatalogStore>> {
        let url = server("catalog_store_contract")?;
        let name = unique_collection("catalog");
        let config = config(&url);
        let keeper = Arc::new(Dropper(
            QdrantCatalogStore::open_collection(&config, &name).unwrap(),
        ));
        Some(Box::new(move || {
            let _keep = &keeper;
            Box::new(QdrantCatalogStore::open_collection(&config, &name).unwrap())
        }))
    });
}

/// The documents of a knowledge base on the server (what replicas read, re-check and write
/// without a folder).
mod qdrant_documents {
    use super::*;
    use zhiku_adapters_qdrant::QdrantDocuments;
    use zhiku_domain::{Document, Scope, Source, Title};
    use zhiku_tests::contract::documents::DocumentPlace;

    fn seeded(_: ()) -> Option<Box<DocumentPlace>> {
        let url = server("writable_document_store_contract")?;
        let store = QdrantDocuments::open_collection(&config(&url), &unique_collection("docs"))
            .unwrap()
            .dropped_with_handle();
        let doc = |id: &str, path: &str, scope: &str, title: &str, text: &str| {
            Document::builder(DocId::new(id).unwrap(), Source::new(path).unwrap(), text)
                .scope(Scope::new(scope).unwrap())
                .title(Title::new(title).unwrap())
                .build()
        };
        let install = doc(
            "install",
            "guide/install.md",
            "alpha",
            "安装",
            "# 安装\n\n先下载，再安装。\n",
        );
        let notes = doc(
            "notes",
            "notes.md",
            "beta",
            "Notes",
            "# Notes\n\nPlain notes.\n",
        );
        store
            .put_documents(
                &[(&install, "guide/install.md"), (&notes, "notes.md")],
                true,
            )
            .unwrap();
        Some(Box::new(DocumentPlace {
            store: Box::new(store),
            seeded: vec![DocId::new("install").unwrap(), DocId::new("notes").unwrap()],
            guard: Box::new(()),
        }))
    }

    zhiku_tests::writable_document_store_contract!(seeded);
}

mod adapter {
    use super::*;
    use serde_json::json;
    use zhiku_adapters_memory::{
        HashingEmbedder, MemoryLexicalIndex, MemorySourceStore, MemoryVectorIndex,
    };
    use zhiku_domain::ports::Embedder;
    use zhiku_domain::rules::fusion::Route;
    use zhiku_domain::usecases::{
        Indexer, IndexerError, RetrievalMode, RetrievalRequest, Retriever, RouteStatus, SyncMode,
    };
    use zhiku_domain::{ChunkingPolicy, Document, Locale, Normalization, Pooling, Scope, Source};
    use zhiku_tests::contract::fixtures::{Spec, axis, embedded, other_space, space, vector};

    fn scope(s: &str) -> Filter {
        Filter::for_scope(Scope::new(s).unwrap())
    }

    fn doc(id: &str) -> DocId {
        DocId::new(id).unwrap()
    }

    /// `n` chunks of one document, spread over the axes so they have different scores.
    fn many(doc: &str, scope: &'static str, n: usize) -> Vec<EmbeddedChunk> {
        (0..n)
            .map(|i| {
                embedded(
                    &Spec::new(doc, scope, format!("{doc} chunk {i}")).at(i * 100),
                    vector(i % 8, (i % 97) as f32 / 50.0),
                )
            })
            .collect()
    }

    #[test]
    fn reupserting_the_same_chunks_keeps_the_point_count() {
        let Some(url) = server("reupserting_the_same_chunks_keeps_the_point_count") else {
            return;
        };
        let index = scratch(&url, "reupsert", space());
        let items = many("a", "s", 500);
        index.upsert(&items).unwrap();
        assert_eq!(index.count().unwrap(), 500);
        index.upsert(&items).unwrap();
        index.upsert(&items[..100]).unwrap();
        index.commit().unwrap();
        assert_eq!(
            index.count().unwrap(),
            500,
            "re-upserts replace, never duplicate"
        );
        // Duplicates inside one call: the last write wins.
        let first = embedded(&Spec::new("b", "s", "same").title("old"), axis(1));
        let last = embedded(&Spec::new("b", "s", "same").title("new"), axis(2));
        index.upsert(&[first, last]).unwrap();
        assert_eq!(index.count().unwrap(), 501);
        let hit = &index
            .search(&axis(2), 1, &scope("s").with_doc_ids([doc("b")]))
            .unwrap()[0];
        assert_eq!(hit.chunk.doc().title.as_str(), "new");
        assert!((hit.score - 1.0).abs() < 1e-4);
    }

    #[test]
    fn deleting_a_document_removes_thousands_of_points() {
        let Some(url) = server("deleting_a_document_removes_thousands_of_points") else {
            return;
        };
        let index = scratch(&url, "delete_doc", space());
        let big = many("big", "s", 3000);
        let small = many("small", "s", 7);
        index.upsert(&big).unwrap();
        index.upsert(&small).unwrap();
        index.commit().unwrap();
        assert_eq!(index.count().unwrap(), 3007);
        // Listing pages through the scroll API (3 pages of 1000 and one more).
        let listed = index.chunk_ids(&doc("big")).unwrap();
        let mut want: Vec<ChunkId> = big.iter().map(|i| i.chunk.chunk_id().clone()).collect();
        want.sort();
        assert_eq!(listed, want);
        assert_eq!(index.all_chunk_ids().unwrap().len(), 3007);

        index.delete_document(&doc("big")).unwrap();
        index.commit().unwrap();
        assert_eq!(index.count().unwrap(), 7);
        assert!(index.chunk_ids(&doc("big")).unwrap().is_empty());
        assert_eq!(index.chunk_ids(&doc("small")).unwrap().len(), 7);
        let hits = index.search(&axis(0), 50, &scope("s")).unwrap();
        assert_eq!(hits.len(), 7);
        assert!(hits.iter().all(|h| h.chunk.doc_id().as_str() == "small"));
    }

    /// Every `Filter` field, alone and combined, selects in Qdrant exactly what the reference
    /// semantics (the exact memory index) selects, in the same order with the same scores.
    #[test]
    fn every_filter_field_is_translated_like_the_reference() {
        let Some(url) = server("every_filter_field_is_translated_like_the_reference") else {
            return;
        };
        let index = scratch(&url, "filters", space());
        let reference = MemoryVectorIndex::new(space());
        let specs = [
            Spec::new("zh-doc", "team-a", "zh 1")
                .locale("zh-CN")
                .metadata(json!({"tags": ["x", "y"], "year": 2024, "draft": false})),
            Spec::new("zh-doc", "team-a", "zh 2")
                .at(10)
                .locale("zh-CN")
                .metadata(json!({"tags": ["x", "y"], "year": 2024, "draft": false})),
            Spec::new("hant", "team-a", "hant")
                .locale("zh-Hant-TW")
                .metadata(json!({"tags": "z", "year": 2023, "score": 1.5})),
            Spec::new("en-doc", "team-b", "en")
                .locale("en")
                .metadata(json!({"tags": ["y"], "year": 2023, "draft": true})),
            Spec::new("en-gb", "team-c", "en-gb")
                .locale("en-GB")
                .metadata(json!({"nested": {"tags": "x"}, "year": "2024"})),
        ];
        let items: Vec<EmbeddedChunk> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| embedded(s, vector(3, i as f32 / 4.0)))
            .collect();
        index.upsert(&items).unwrap();
        reference.upsert(&items).unwrap();
        let scopes = |names: &[&str]| {
            Filter::for_scopes(names.iter().map(|s| Scope::new(s).unwrap())).unwrap()
        };
        let all = || scopes(&["team-a", "team-b", "team-c"]);
        let meta = |f: Filter, k: &str, v: &str| f.with_metadata(k, v).unwrap();
        let locale = |f: Filter, l: &str| f.with_locale(Locale::new(l).unwrap());
        let cases: Vec<(&str, Filter, usize)> = vec![
            ("one scope", scopes(&["team-a"]), 3),
            ("two scopes", scopes(&["team-a", "team-b"]), 4),
            ("unknown scope", scopes(&["team-z"]), 0),
            (
                "doc ids",
                all().with_doc_ids([doc("zh-doc"), doc("en-gb")]),
                3,
            ),
            (
                "doc ids outside the scope",
                scopes(&["team-b"]).with_doc_ids([doc("zh-doc")]),
                0,
            ),
            ("no doc ids", all().with_doc_ids([]), 0),
            ("locale language", locale(all(), "zh"), 3),
            ("locale region", locale(all(), "zh-CN"), 2),
            ("locale case", locale(all(), "zh-cn"), 2),
            ("locale script", locale(all(), "zh-Hant"), 1),
            ("locale en", locale(all(), "en"), 2),
            ("locale en-US", locale(all(), "en-US"), 0),
            ("array element", meta(all(), "tags", "x"), 2),
            ("scalar string", meta(all(), "tags", "z"), 1),
            ("array or scalar", meta(all(), "tags", "y"), 3),
            ("number", meta(all(), "year", "2023"), 2),
            (
                "string that looks like a number",
                meta(all(), "year", "2024"),
                3,
            ),
            ("float", meta(all(), "score", "1.5"), 1),
            ("bool", meta(all(), "draft", "true"), 1),
            (
                "a key only inside a nested object",
                meta(all(), "tags", "x").with_doc_ids([doc("en-gb")]),
                0,
            ),
            (
                "two metadata pairs",
                meta(meta(all(), "tags", "y"), "year", "2023"),
                1,
            ),
            (
                "everything at once",
                meta(
                    meta(locale(scopes(&["team-a", "team-b"]), "zh"), "tags", "y"),
                    "year",
                    "2024",
                )
                .with_doc_ids([doc("zh-doc"), doc("en-doc")]),
                2,
            ),
        ];
        for (name, filter, expected) in cases {
            let got = index.search(&axis(3), 10, &filter).unwrap();
            let want = reference.search(&axis(3), 10, &filter).unwrap();
            let ids = |h: &[ScoredChunk]| {
                h.iter()
                    .map(|x| x.chunk.chunk_id().to_string())
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&got), ids(&want), "{name}");
            assert_eq!(got.len(), expected, "{name}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g.score - w.score).abs() < 1e-4,
                    "{name}: {} vs {}",
                    g.score,
                    w.score
                );
                assert_eq!(g.chunk, w.chunk, "{name}");
            }
        }
    }

    #[test]
    fn reopening_checks_the_recorded_space_and_policy() {
        let Some(url) = server("reopening_checks_the_recorded_space_and_policy") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("reopen");
        let first =
            QdrantVectorIndex::open_collection(&config, &name, space(), Some("policy-1")).unwrap();
        let guard = first.dropped_with_handle();
        guard
            .upsert(&[embedded(&Spec::new("a", "s", "kept"), axis(1))])
            .unwrap();
        guard.commit().unwrap();

        // The same space reopens and finds the committed chunk.
        let again =
            QdrantVectorIndex::open_collection(&config, &name, space(), Some("policy-1")).unwrap();
        let hits = again.search(&axis(1), 5, &scope("s")).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].chunk.content(), "kept");
        drop(again);

        // Another model with the same dimension: the embedded store's typed error.
        let err =
            QdrantVectorIndex::open_collection(&config, &name, other_space(), Some("policy-1"))
                .unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
        assert!(err.to_string().contains("contract-suite"), "{err}");
        assert!(!err.is_temporary());
        // Another dimension.
        let wider =
            EmbeddingSpace::new("contract-suite", "v1", 9, Pooling::None, Normalization::L2)
                .unwrap();
        let err = QdrantVectorIndex::open_collection(&config, &name, wider, None).unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
        // Another chunking policy.
        let err = QdrantVectorIndex::open_collection(&config, &name, space(), Some("policy-2"))
            .unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::ConfigMismatch {
                    what: "chunking policy",
                    ..
                }
            ),
            "{err}"
        );
        // Nothing was changed by the refused opens.
        assert_eq!(guard.count().unwrap(), 1);

        // Collection names keep spaces apart on their own.
        let c = QdrantConfig::default();
        assert_ne!(
            c.collection_name("kb", &space()),
            c.collection_name("kb", &other_space())
        );
    }

    #[test]
    fn a_bad_address_is_a_clear_temporary_error() {
        let Some(_url) = server("a_bad_address_is_a_clear_temporary_error") else {
            return;
        };
        let port = zhiku_tests::local::unused_local_port();
        let config = QdrantConfig {
            max_retries: 1,
            initial_backoff: Duration::from_millis(10),
            timeout: Duration::from_secs(2),
            ..QdrantConfig::with_url(format!("http://127.0.0.1:{port}"))
        };
        let err = QdrantVectorIndex::open_collection(&config, "zhiku_test_never", space(), None)
            .unwrap_err();
        assert!(matches!(err, IndexError::Unavailable { .. }), "{err}");
        assert!(err.is_temporary());
        assert!(
            err.to_string().contains(&format!("127.0.0.1:{port}")),
            "{err}"
        );
    }

    /// A TCP forwarder in front of the real server: cutting it is a real network failure.
    struct Forwarder {
        runtime: Option<tokio::runtime::Runtime>,
        port: u16,
    }

    impl Forwarder {
        fn start(upstream: &str) -> Self {
            let upstream = upstream
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let listener = runtime
                .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .unwrap();
            let port = listener.local_addr().unwrap().port();
            runtime.spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                }
            });
            Self {
                runtime: Some(runtime),
                port,
            }
        }

        fn url(&self) -> String {
            format!("http://127.0.0.1:{}", self.port)
        }

        /// Closes the listener and every forwarded connection.
        fn cut(&mut self) {
            if let Some(runtime) = self.runtime.take() {
                runtime.shutdown_timeout(Duration::from_secs(2));
            }
        }
    }

    impl Drop for Forwarder {
        fn drop(&mut self) {
            self.cut();
        }
    }

    fn kb_doc(id: &str, content: &str) -> Document {
        Document::builder(doc(id), Source::new(format!("kb/{id}")).unwrap(), content)
            .scope(Scope::new("s").unwrap())
            .build()
    }

    /// The server goes away while zhiku is running: searches fall back to the lexical route and
    /// say why, indexing fails with a clear temporary error and hands back no new catalog.
    #[test]
    fn the_retriever_falls_back_to_lexical_when_the_server_goes_away() {
        let Some(url) = server("the_retriever_falls_back_to_lexical_when_the_server_goes_away")
        else {
            return;
        };
        let mut forwarder = Forwarder::start(&url);
        let embedder = HashingEmbedder::new(64).unwrap();
        let name = unique_collection("fallback");
        let config = QdrantConfig {
            max_retries: 2,
            initial_backoff: Duration::from_millis(20),
            timeout: Duration::from_secs(3),
            ..QdrantConfig::with_url(forwarder.url())
        };
        let vectors =
            QdrantVectorIndex::open_collection(&config, &name, embedder.space().clone(), None)
                .unwrap();
        // Dropped through the direct connection once the test is over.
        let cleanup = QdrantVectorIndex::open_collection(
            &QdrantConfig::with_url(&url),
            &name,
            embedder.space().clone(),
            None,
        )
        .unwrap()
        .dropped_with_handle();
        let lexical = MemoryLexicalIndex::new();
        let source = MemorySourceStore::new();
        let policy = ChunkingPolicy::with_sizes(200, 20).unwrap();
        let docs = vec![
            kb_doc(
                "rrf",
                "Reciprocal rank fusion merges the dense and the lexical route.",
            ),
            kb_doc(
                "chunk",
                "The chunker cuts Markdown by headings and paragraphs.",
            ),
            kb_doc(
                "scope",
                "Every search is scoped to what the caller may read.",
            ),
        ];
        for d in &docs {
            source.put(d);
        }
        let indexer = Indexer::hybrid(policy, &embedder, &vectors, &lexical).unwrap();
        let (catalog, _) = indexer
            .run(&indexer.empty_catalog(), docs, SyncMode::Full, &mut |_| {})
            .unwrap();
        assert_eq!(cleanup.count().unwrap(), 3);

        let filter = scope("s");
        let request = RetrievalRequest {
            query: "rank fusion of routes",
            filter: &filter,
            mode: RetrievalMode::Hybrid,
            k: 3,
            budget: None,
        };
        let retriever = Retriever::new(&source)
            .with_dense(&embedder, &vectors)
            .with_lexical(&lexical);
        let before = retriever.retrieve(&request).unwrap();
        assert_eq!(before.routes_ran(), vec![Route::Dense, Route::Lexical]);

        forwarder.cut();

        let err = vectors
            .search(&embedder.embed_query("rank").unwrap(), 3, &filter)
            .unwrap_err();
        assert!(matches!(err, IndexError::Unavailable { .. }), "{err}");
        assert!(err.is_temporary());

        let after = retriever.retrieve(&request).unwrap();
        assert_eq!(after.routes_ran(), vec![Route::Lexical]);
        let dense = after
            .routes
            .iter()
            .find(|r| r.route == Route::Dense)
            .unwrap();
        match &dense.status {
            RouteStatus::Unavailable { reason } => {
                assert!(reason.contains("qdrant is unavailable"), "{reason}");
                assert!(reason.contains(&forwarder.url()), "{reason}");
            }
            other => panic!("dense route should be unavailable, got {other:?}"),
        }
        assert!(!after.evidence.is_empty());
        assert_eq!(after.evidence[0].chunk.doc_id().as_str(), "rrf");

        // Indexing a change now fails with the vector index's temporary error.
        let changed = vec![kb_doc("rrf", "Reciprocal rank fusion, changed.")];
        let err = indexer
            .run(&catalog, changed, SyncMode::Partial, &mut |_| {})
            .unwrap_err();
        match &err {
            IndexerError::Vectors(e) => assert!(e.is_temporary(), "{e}"),
            other => panic!("expected a vector index error, got {other}"),
        }
        // The server itself is fine: the direct connection still sees the three chunks.
        assert_eq!(cleanup.count().unwrap(), 3);
    }

    /// The lexical collection measures its average lengths on its first write, records them,
    /// and every later handle (a reopen, another replica) weighs with the recorded ones; a
    /// rebuild's drop of the knowledge base's collections takes the lexical one too.
    #[test]
    fn lexical_averages_are_measured_once_and_kept_and_a_rebuild_drops_the_collection() {
        let Some(url) = server("lexical_averages_are_measured_once_and_kept") else {
            return;
        };
        let config = config(&url);
        let kb = unique_collection("kb");
        let first = QdrantLexicalIndex::open(&config, &kb, Bm25::default()).unwrap();
        let other = QdrantLexicalIndex::open(&config, &kb, Bm25::default()).unwrap();
        assert_eq!(first.bm25().avg_len, None, "nothing written yet");
        let long = "检索 排序 融合 向量 词法 召回 重排 上下文 引用 答案 ".repeat(3);
        first
            .upsert(&[
                Spec::new("a", "s", long.clone()).title("混合检索").chunk(),
                Spec::new("b", "s", "检索").title("检索").chunk(),
            ])
            .unwrap();
        let recorded = first.bm25();
        let (avg, avg_title) = (recorded.avg_len.unwrap(), recorded.avg_title_len.unwrap());
        assert!(avg > 10.0 && avg_title >= 1.0, "{recorded:?}");
        // The other handle opened before the first write: it reads the recorded averages on
        // its first write instead of measuring its own (one short chunk).
        other
            .upsert(&[Spec::new("c", "s", "重排").chunk()])
            .unwrap();
        assert_eq!(other.bm25(), recorded);
        // A reopen reads them from the collection's metadata, which a cluster applies through
        // its consensus: on a loaded cluster that takes a moment.
        let mut reopened = QdrantLexicalIndex::open(&config, &kb, Bm25::default()).unwrap();
        for _ in 0..100 {
            if reopened.bm25() == recorded {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            reopened = QdrantLexicalIndex::open(&config, &kb, Bm25::default()).unwrap();
        }
        assert_eq!(reopened.bm25(), recorded);
        assert_eq!(reopened.count().unwrap(), 3);
        let hits = reopened.search("检索", 10, &scope("s")).unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        let dropped = QdrantVectorIndex::drop_kb_collections(&config, &kb).unwrap();
        assert_eq!(dropped, vec![reopened.collection().to_string()]);
    }

    /// The writer lease: a second handle waits while the first holds it and takes it (in a
    /// new epoch) once it lapses; the first, having lost it, cannot save any more; a save by
    /// the holder goes through.
    #[test]
    fn the_writer_lease_is_exclusive_and_a_writer_that_lost_it_cannot_save() {
        let Some(url) = server("the_writer_lease_is_exclusive") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("lease");
        let first = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let second = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let stored = zhiku_tests::contract::catalog::stored_catalog(&[("a", 2)], None);
        let ttl = Duration::from_millis(1500);
        assert!(first.acquire(ttl, Duration::ZERO).unwrap());
        first.save(&stored).unwrap();
        // Held: the second handle gives up after its wait.
        let started = std::time::Instant::now();
        assert!(!second.acquire(ttl, Duration::from_millis(300)).unwrap());
        assert!(started.elapsed() >= Duration::from_millis(300));
        let held = first.lease_on_record().unwrap();
        assert_eq!(held.owner, first.owner());
        // Lapsed: the second takes it in a new epoch, and the first's saves are refused.
        assert!(second.acquire(ttl, Duration::from_secs(5)).unwrap());
        let taken = second.lease_on_record().unwrap();
        assert_eq!(taken.owner, second.owner());
        assert_eq!(taken.epoch, held.epoch + 1);
        let other = zhiku_tests::contract::catalog::stored_catalog(&[("b", 1)], None);
        let refused = first.save(&other).unwrap_err();
        assert!(refused.is_temporary(), "{refused}");
        assert!(refused.to_string().contains("lease"), "{refused}");
        assert_eq!(
            second.load().unwrap(),
            Some(stored.clone()),
            "nothing of the refused save"
        );
        second.save(&other).unwrap();
        assert_eq!(first.load().unwrap(), Some(other));
        second.release(true).unwrap();
        assert!(first.lease_on_record().unwrap().owner.is_empty());
        first.drop_collection().unwrap();
    }

    /// A catalog of the first `n` of `names`, one chunk each.
    fn numbered_catalog(names: &[String], n: usize) -> zhiku_domain::ports::StoredCatalog {
        let docs: Vec<(&str, usize)> = names[..n].iter().map(|s| (s.as_str(), 1)).collect();
        zhiku_tests::contract::catalog::stored_catalog(&docs, None)
    }

    /// What a save of `names[from..to]` (new documents, each with a stamp) touched.
    fn numbered_changes(names: &[String], from: usize, to: usize) -> zhiku_domain::ports::Changed {
        zhiku_domain::ports::Changed {
            docs: names[from..to]
                .iter()
                .map(|d| (DocId::new(d).unwrap(), (None, None)))
                .collect(),
            stamps: names[from..to]
                .iter()
                .map(|d| (format!("notes/{d}.md"), None))
                .collect(),
        }
    }

    /// One-document saves after a large indexing commit fold only what came after it: the
    /// large commit stays as it is (not rewritten with every merge), the live commits stay
    /// bounded, no merged rows are left dead, and the catalog reads back whole.
    #[test]
    fn saves_after_a_large_commit_fold_only_the_small_ones() {
        let Some(url) = server("saves_after_a_large_commit_fold_only_the_small_ones") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("merge");
        let store = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let (turn, _) = store.begin_write().unwrap();
        let names: Vec<String> = (0..760).map(|i| format!("d{i:04}")).collect();
        let catalog_of = |n: usize| numbered_catalog(&names, n);
        let changed = |from: usize, to: usize| numbered_changes(&names, from, to);
        store.save(&catalog_of(200)).unwrap();
        store
            .save_changed(&catalog_of(700), &changed(200, 700))
            .unwrap();
        let large = store.live_commits().unwrap()[1];
        for n in 701..=760 {
            store
                .save_changed(&catalog_of(n), &changed(n - 1, n))
                .unwrap();
        }
        let live = store.live_commits().unwrap();
        assert!(live.len() <= MERGE_AT + 1, "{} live commits", live.len());
        assert_eq!(live[1], large, "the large commit was rewritten: {live:?}");
        assert_eq!(store.load().unwrap(), Some(catalog_of(760)));
        // The head, two rows (entry, stamp) per document, nothing dead.
        assert_eq!(store.points().unwrap(), 1 + 2 * 760);
        turn.finish();
        store.drop_collection().unwrap();
    }

    /// An indexing run's equal batches, saved while the lease is renewed again and again (as
    /// the turn's renewer does on a busy node), fold as a binary counter carries and leave no
    /// dead rows: a merge that crossed a renewal is made on the renewed head, and one that is
    /// dropped takes its rows with it. A save that touched no row adds no commit.
    #[test]
    fn batches_saved_across_lease_renewals_leave_no_dead_rows() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use zhiku_domain::ports::Changed;
        let Some(url) = server("batches_saved_across_lease_renewals_leave_no_dead_rows") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("renewals");
        let store = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let ttl = zhiku_adapters_qdrant::LEASE_TTL;
        assert!(store.acquire(ttl, Duration::ZERO).unwrap());
        let names: Vec<String> = (0..640).map(|i| format!("d{i:04}")).collect();
        let catalog_of = |n: usize| numbered_catalog(&names, n);
        let changed = |from: usize, to: usize| numbered_changes(&names, from, to);
        let done = AtomicBool::new(false);
        let renewals = std::thread::scope(|s| {
            let renewer = s.spawn(|| {
                let mut renewals = 0;
                while !done.load(Ordering::Relaxed) {
                    if !store.acquire(ttl, Duration::ZERO).unwrap() {
                        break;
                    }
                    renewals += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
                renewals
            });
            // Stops the renewer however this thread leaves the scope (a failed save panics).
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let stop = Stop(&done);
            store.save(&catalog_of(40)).unwrap();
            for n in (80..=640).step_by(40) {
                store
                    .save_changed(&catalog_of(n), &changed(n - 40, n))
                    .unwrap();
            }
            // Nothing touched: the header alone.
            store
                .save_changed(&catalog_of(640), &Changed::default())
                .unwrap();
            drop(stop);
            renewer.join().unwrap()
        });
        assert!(renewals > 10, "only {renewals} renewals crossed the saves");
        assert_eq!(store.load().unwrap(), Some(catalog_of(640)));
        let live = store.live_commits().unwrap();
        // 16 batches of 40 after a first of 40: sizes shrink oldest to newest, so at most
        // about log2(16) + 2 commits stay live.
        assert!(live.len() <= 6, "{} live commits", live.len());
        assert_eq!(store.points().unwrap(), 1 + 2 * 640, "dead rows were left");
        store.release(true).unwrap();
        store.drop_collection().unwrap();
    }

    /// A turn taken through the port holds the lease until it is dropped, renewing it; the
    /// catalog it returns is the one another handle saved since.
    #[test]
    fn a_write_turn_holds_the_lease_and_brings_the_catalog_on_record() {
        let Some(url) = server("a_write_turn_holds_the_lease") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("turn");
        let a = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let b = QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let first = zhiku_tests::contract::catalog::stored_catalog(&[("a", 1)], None);
        a.save(&first).unwrap();
        assert_eq!(b.load().unwrap(), Some(first.clone()));
        let second = zhiku_tests::contract::catalog::stored_catalog(&[("a", 1), ("b", 2)], None);
        a.save(&second).unwrap();
        let (turn, fresh) = b.begin_write().unwrap();
        assert_eq!(fresh, Some(second.clone()), "b starts from a's last save");
        assert_eq!(a.lease_on_record().unwrap().owner, b.owner());
        assert!(
            !a.acquire(zhiku_adapters_qdrant::LEASE_TTL, Duration::from_millis(200))
                .unwrap()
        );
        assert_eq!(b.moved().unwrap(), None, "nothing moved since");
        drop(turn);
        assert!(a.lease_on_record().unwrap().owner.is_empty(), "released");
        assert!(
            a.acquire(zhiku_adapters_qdrant::LEASE_TTL, Duration::ZERO)
                .unwrap()
        );
        a.release(true).unwrap();
        a.drop_collection().unwrap();
    }

    /// The audit trail on the server: entries from two handles (two replicas) read back whole
    /// and in the order they were appended, through either handle.
    #[test]
    fn the_audit_trail_keeps_every_entry_in_order_across_handles() {
        let Some(url) = server("the_audit_trail_keeps_every_entry_in_order") else {
            return;
        };
        use zhiku_adapters_qdrant::QdrantAuditLog;
        use zhiku_domain::ports::{AuditEntry, AuditLog};
        let config = config(&url);
        let name = unique_collection("audit");
        let a = QdrantAuditLog::open_collection(&config, &name).unwrap();
        let b = QdrantAuditLog::open_collection(&config, &name).unwrap();
        assert!(a.entries().unwrap().is_empty());
        let entry = |i: usize, who: &str| AuditEntry {
            at: zhiku_domain::Timestamp::from_unix(1_700_000_000 + i as i64),
            who: who.into(),
            doc_id: format!("notes/{i}"),
            scope: "default".into(),
            decision: if i.is_multiple_of(2) {
                "accepted"
            } else {
                "refused"
            }
            .into(),
            reason: "new".into(),
            detail: format!("第 {i} 条"),
            duplicate_of: (i == 3).then(|| "notes/1".to_string()),
            content_hash: format!("{i:064x}"),
        };
        let mut written = Vec::new();
        for i in 0..6 {
            let e = entry(i, if i.is_multiple_of(2) { "a" } else { "b" });
            if i.is_multiple_of(2) {
                a.append(&e).unwrap()
            } else {
                b.append(&e).unwrap()
            }
            written.push(e);
        }
        assert_eq!(a.entries().unwrap(), written);
        assert_eq!(b.entries().unwrap(), written);
        a.drop_collection().unwrap();
    }

    /// Whether earlier writes finished: a turn dropped midway (a failed or killed write)
    /// leaves the store unvouched until a later finished turn checked it chunk by chunk; a
    /// finished turn after an unvouched one does not vouch by itself.
    #[test]
    fn an_unfinished_turn_is_remembered_until_a_check_vouches() {
        let Some(url) = server("an_unfinished_turn_is_remembered") else {
            return;
        };
        let config = config(&url);
        let name = unique_collection("turns");
        let store = || QdrantCatalogStore::open_collection(&config, &name).unwrap();
        let (first, second, third, fourth) = (store(), store(), store(), store());
        first
            .save(&zhiku_tests::contract::catalog::stored_catalog(
                &[("a", 1)],
                None,
            ))
            .unwrap();
        // A new catalog's first turn has nothing earlier to trust.
        let (turn, _) = first.begin_write().unwrap();
        assert_eq!(first.earlier_turns_finished(), Some(false));
        turn.finish();
        let (turn, _) = second.begin_write().unwrap();
        assert_eq!(
            second.earlier_turns_finished(),
            Some(false),
            "nothing vouched yet"
        );
        second.vouch_consistent();
        turn.finish();
        let (turn, _) = third.begin_write().unwrap();
        assert_eq!(
            third.earlier_turns_finished(),
            Some(true),
            "vouched and finished"
        );
        drop(turn); // a write that failed midway
        let (turn, _) = fourth.begin_write().unwrap();
        assert_eq!(
            fourth.earlier_turns_finished(),
            Some(false),
            "the dropped turn is remembered"
        );
        turn.finish(); // finished, but vouched for nothing
        let (turn, _) = first.begin_write().unwrap();
        assert_eq!(
            first.earlier_turns_finished(),
            Some(false),
            "still unvouched"
        );
        first.vouch_consistent();
        turn.finish();
        let (turn, _) = second.begin_write().unwrap();
        assert_eq!(second.earlier_turns_finished(), Some(true));
        assert_eq!(
            third.earlier_turns_finished(),
            None,
            "only the holder of a turn may trust it"
        );
        turn.finish();
        first.drop_collection().unwrap();
    }
}
