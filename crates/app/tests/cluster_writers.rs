//! Two replicas of one knowledge base kept whole on Qdrant (profile `cluster`: routes, catalog
//! and documents), each with its own folders as two machines would have, writing the same
//! document at the same time: every round ends with exactly one revision on record and the
//! chunks of that revision, and only those, in both routes. The writers take turns through the
//! catalog's lease on the server; nothing on either machine serialises them.
//!
//! Set `ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334` (the gRPC port of a Qdrant server) to run
//! it; without it it prints `SKIPPED` and checks nothing. The hashing embedder stands in for a
//! model.

use std::path::Path;
use std::sync::{Arc, Barrier};

use zhiku_adapters_qdrant::{Bm25, QdrantCatalogStore, QdrantConfig, QdrantLexicalIndex};
use zhiku_app::config::Config;
use zhiku_app::wiring::store::{Purpose, Store};
use zhiku_domain::ports::{CatalogStore, LexicalIndex, Origin};
use zhiku_domain::{DocId, Filter, Scope};
use zhiku_service::{Caller, KnowledgeBase, NewDocument};

fn server(test: &str) -> Option<String> {
    zhiku_tests::local::qdrant_server("cluster_writers", test)
}

/// The variables of one replica: the cluster profile on `url`, knowledge base `kb`.
fn env(url: &str, kb: &str) -> impl Fn(&str) -> Option<String> {
    let (url, kb) = (url.to_string(), kb.to_string());
    move |name: &str| match name {
        "ZHIKU_EMBEDDER" => Some("hashing".into()),
        "ZHIKU_QDRANT_URL" => Some(url.clone()),
        "ZHIKU_QDRANT_KNOWLEDGE_BASE" => Some(kb.clone()),
        "ZHIKU_QDRANT_TIMEOUT_MS" => Some("5000".into()),
        // On a cluster, the test collections' layout (as contract_qdrant.rs takes it).
        "ZHIKU_QDRANT_SHARDS" => std::env::var("ZHIKU_TEST_QDRANT_SHARDS").ok(),
        "ZHIKU_QDRANT_REPLICATION" => std::env::var("ZHIKU_TEST_QDRANT_REPLICATION").ok(),
        _ => None,
    }
}

/// A replica: its own (empty) folder and store folder, the shared knowledge base on the server.
fn replica(folder: &Path, url: &str, kb: &str) -> KnowledgeBase {
    std::fs::create_dir_all(folder).unwrap();
    let root = folder.canonicalize().unwrap();
    let config = Config::resolve(None, Some("cluster"), &env(url, kb)).unwrap();
    let store = Store::open(&root.join(".zhiku"), config, Purpose::Write, Some(&root)).unwrap();
    zhiku_app::wiring::open_service(store, Some(Origin::Folder { root }))
        .unwrap()
        .0
}

fn writer() -> Caller {
    Caller {
        name: "replica".into(),
        scopes: vec![Scope::new("default").unwrap()],
        write: true,
        principal: None,
        operator: false,
    }
}

/// A body of several chunks, different for every writer and round.
fn body(who: &str, round: usize) -> String {
    (0..6)
        .map(|p| {
            format!(
                "## 第{p}节\n\n{who} 在第 {round} 轮写下的段落 {p}：发货截止时间与仓库编号 {round}{p} 有关。{}\n",
                "补充说明。".repeat(30)
            )
        })
        .collect()
}

/// Replica A's put of the shared document in `round`.
fn shared(round: usize) -> NewDocument {
    NewDocument {
        id: "shared".into(),
        path: None,
        title: None,
        text: body("A", round),
        scope: None,
        locale: None,
        metadata: Default::default(),
    }
}

/// One replica of a fresh knowledge base named after `tag`, with the shared document put once;
/// the settings that reach its collections, and what drops them.
fn one_replica(
    url: &str,
    tag: &str,
) -> (
    Arc<KnowledgeBase>,
    QdrantConfig,
    String,
    Cleanup,
    tempfile::TempDir,
) {
    let kb = format!("{tag}{}", std::process::id());
    let settings = QdrantConfig {
        knowledge_base: Some(kb.clone()),
        ..QdrantConfig::with_url(url)
    };
    let cleanup = Cleanup(settings.clone(), kb.clone());
    let folders = tempfile::tempdir().unwrap();
    let replica = Arc::new(replica(&folders.path().join("a"), url, &kb));
    replica.put_document(&writer(), shared(0)).unwrap();
    (replica, settings, kb, cleanup, folders)
}

/// Drops the knowledge base's collections however the test ends.
struct Cleanup(QdrantConfig, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = zhiku_adapters_qdrant::QdrantVectorIndex::drop_kb_collections(&self.0, &self.1);
    }
}

#[test]
fn two_replicas_writing_one_document_leave_one_revision_and_its_chunks_only() {
    let Some(url) = server("two_replicas_writing_one_document") else {
        return;
    };
    let kb = format!("writers{}", std::process::id());
    let settings = QdrantConfig {
        knowledge_base: Some(kb.clone()),
        ..QdrantConfig::with_url(&url)
    };
    let _cleanup = Cleanup(settings.clone(), kb.clone());
    let folders = tempfile::tempdir().unwrap();
    let a = Arc::new(replica(&folders.path().join("a"), &url, &kb));
    let b = Arc::new(replica(&folders.path().join("b"), &url, &kb));
    let catalog = QdrantCatalogStore::open(&settings, &kb).unwrap();
    let lexical = QdrantLexicalIndex::open(&settings, &kb, Bm25::default()).unwrap();
    let shared = DocId::new("shared").unwrap();

    let rounds = 12;
    for round in 0..rounds {
        let start = Arc::new(Barrier::new(2));
        // Every fourth round one replica deletes while the other writes.
        let deletes = round % 4 == 3;
        let threads: Vec<_> = [("A", Arc::clone(&a)), ("B", Arc::clone(&b))]
            .into_iter()
            .map(|(who, kb)| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    if deletes && who == "B" {
                        // Absent already (A has not written yet) is fine too.
                        let _ = kb.delete_document(&writer(), "shared");
                        return None;
                    }
                    let put = kb
                        .put_document(
                            &writer(),
                            NewDocument {
                                id: "shared".into(),
                                path: None,
                                title: Some(format!("{who} {round}")),
                                text: body(who, round),
                                scope: None,
                                locale: None,
                                metadata: Default::default(),
                            },
                        )
                        .unwrap_or_else(|e| panic!("{who} round {round}: {e}"));
                    Some(put.revision)
                })
            })
            .collect();
        let written: Vec<Option<String>> = threads.into_iter().map(|t| t.join().unwrap()).collect();

        let stored = catalog.load().unwrap().expect("a catalog on record");
        let in_lexical = lexical.chunk_ids(&shared).unwrap();
        match stored.catalog.docs.get(&shared) {
            Some(entry) => {
                // One of this round's writes is the one on record, whole.
                assert!(
                    written
                        .iter()
                        .flatten()
                        .any(|r| *r == entry.revision.to_string()),
                    "round {round}: {} is none of {written:?}",
                    entry.revision
                );
                let mut listed = entry.chunk_ids.clone();
                listed.sort();
                assert_eq!(
                    in_lexical, listed,
                    "round {round}: the lexical route holds exactly the recorded revision's chunks"
                );
                let hits = lexical
                    .search(
                        "发货截止时间",
                        100,
                        &Filter::for_scope(Scope::new("default").unwrap()),
                    )
                    .unwrap();
                assert!(hits.iter().all(|h| listed.contains(h.chunk.chunk_id())));
            }
            None => {
                assert!(deletes, "round {round}: only a delete leaves no document");
                assert!(in_lexical.is_empty(), "round {round}: {in_lexical:?}");
            }
        }
    }

    // A third process sees one consistent store: every recorded chunk in both routes, no
    // other chunk anywhere.
    let folder = folders.path().join("checker");
    std::fs::create_dir_all(&folder).unwrap();
    let config = Config::resolve(None, Some("cluster"), &env(&url, &kb)).unwrap();
    let checker = Store::open_read_only(&folder.join(".zhiku"), config, Some(&folder)).unwrap();
    let problems = checker.problems().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    // Both replicas serve the document on record (or its absence) once they follow it, read
    // from the cluster: neither machine's folder holds it.
    std::thread::sleep(zhiku_service::FOLLOW_EVERY);
    let recorded = catalog.load().unwrap().unwrap();
    let on_record = recorded.catalog.docs.contains_key(&shared);
    for replica in [&a, &b] {
        let listed = replica.documents(&writer(), 0, 10).0;
        assert_eq!(
            listed.iter().any(|d| d.id.as_str() == "shared"),
            on_record,
            "{listed:?}"
        );
        if let Some(entry) = recorded.catalog.docs.get(&shared) {
            let view = replica.document(&writer(), "shared").unwrap();
            assert_eq!(view.revision, entry.revision.to_string());
        }
    }
    for machine in ["a", "b"] {
        let api = folders.path().join(machine).join("api");
        assert!(!api.exists(), "a put wrote into {}", api.display());
    }
}

/// A replica waiting for the write lease another process holds goes on answering searches;
/// its write completes once the lease is released.
#[test]
fn a_replica_waiting_for_the_lease_goes_on_answering() {
    let Some(url) = server("a_replica_waiting_for_the_lease_goes_on_answering") else {
        return;
    };
    let (replica, settings, kb, _cleanup, _folders) = one_replica(&url, "waiting");
    // Another process takes the lease and keeps it.
    let other = QdrantCatalogStore::open(&settings, &kb).unwrap();
    assert!(
        other
            .acquire(
                std::time::Duration::from_secs(60),
                std::time::Duration::ZERO
            )
            .unwrap()
    );
    let writer_thread = {
        let replica = Arc::clone(&replica);
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            replica.put_document(&writer(), shared(1)).unwrap();
            started.elapsed()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    let query = zhiku_service::SearchQuery {
        query: "发货截止时间".into(),
        k: Some(3),
        mode: zhiku_domain::usecases::RetrievalMode::Lexical,
        metadata: Vec::new(),
        locale: None,
        request_id: None,
    };
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let found = replica.search(&writer(), &query).unwrap();
        assert!(!found.hits.is_empty());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "a search waited {:?} behind a write waiting for the lease",
            started.elapsed()
        );
    }
    assert!(
        !writer_thread.is_finished(),
        "the write waits for the lease"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    other.release(true).unwrap();
    let waited = writer_thread.join().unwrap();
    assert!(
        waited >= std::time::Duration::from_millis(900),
        "{waited:?}"
    );
    let view = replica.document(&writer(), "shared").unwrap();
    assert_eq!(view.text, body("A", 1));
}

/// A writer killed midway on another machine (its turn never finished, its lease lapses)
/// left a chunk no catalog lists; the next write of a running replica repairs the store
/// first, so it is consistent again without a restart.
#[test]
fn a_running_replica_repairs_what_a_killed_writer_left() {
    let Some(url) = server("a_running_replica_repairs_what_a_killed_writer_left") else {
        return;
    };
    let (replica, settings, kb, _cleanup, folders) = one_replica(&url, "healing");
    // The killed writer: took a turn, wrote a chunk, never finished nor released.
    let killed = QdrantCatalogStore::open(&settings, &kb).unwrap();
    assert!(
        killed
            .acquire(
                std::time::Duration::from_millis(800),
                std::time::Duration::from_secs(5)
            )
            .unwrap()
    );
    let lexical = QdrantLexicalIndex::open(&settings, &kb, Bm25::default()).unwrap();
    let ghost =
        zhiku_tests::contract::fixtures::Spec::new("ghost", "default", "发货截止时间的幽灵片段")
            .chunk();
    lexical.upsert(&[ghost]).unwrap();
    let ghost_id = DocId::new("ghost").unwrap();
    assert_eq!(lexical.chunk_ids(&ghost_id).unwrap().len(), 1);
    // The running replica's next write waits for the lease to lapse, then repairs first.
    replica.put_document(&writer(), shared(1)).unwrap();
    assert!(
        lexical.chunk_ids(&ghost_id).unwrap().is_empty(),
        "the orphan is gone"
    );
    let folder = folders.path().join("checker");
    std::fs::create_dir_all(&folder).unwrap();
    let config = Config::resolve(None, Some("cluster"), &env(&url, &kb)).unwrap();
    let checker = Store::open_read_only(&folder.join(".zhiku"), config, Some(&folder)).unwrap();
    let problems = checker.problems().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    // A killed writer that left nothing behind: the next write checks, finds the store
    // consistent and vouches for it, so the turn after that trusts it again.
    assert!(
        killed
            .acquire(
                std::time::Duration::from_millis(800),
                std::time::Duration::from_secs(5)
            )
            .unwrap()
    );
    replica.put_document(&writer(), shared(2)).unwrap();
    let probe = QdrantCatalogStore::open(&settings, &kb).unwrap();
    let (turn, _) = probe.begin_write().unwrap();
    assert_eq!(probe.earlier_turns_finished(), Some(true));
    turn.finish();
}
