//! One store-level contract, run against the two stores a knowledge base can live in: the
//! embedded store on disk (profile `local`) and the store kept whole on Qdrant (profile
//! `cluster`: vectors, lexical route, catalog). Each property opens the store as the binary
//! does and checks what a user relies on whatever the store: the catalog read back after a
//! reopen, both routes finding what the catalog lists and nothing else, an incremental refresh
//! that reads no unchanged file and embeds no unchanged chunk, removal, the retention sweep, a
//! consistent `verify`, and writers that never interleave.
//!
//! The cluster runs need `ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334` (the gRPC port of a Qdrant
//! server); without it they print `SKIPPED` and check nothing. The hashing embedder stands in
//! for a model.

use std::path::PathBuf;

use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};
use zhiku_app::config::Config;
use zhiku_app::wiring::store::{Purpose, Store, StoreLocked};
use zhiku_domain::ports::Origin;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_service::{Refreshed, SearchQuery};

/// Where a property runs: a knowledge-base folder, and the store it is indexed into.
struct Place {
    root: PathBuf,
    _folder: tempfile::TempDir,
    /// The Qdrant URL and knowledge-base name of a cluster store; none for the embedded one.
    cluster: Option<(String, String)>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some((url, kb)) = &self.cluster {
            let _ = QdrantVectorIndex::drop_kb_collections(&QdrantConfig::with_url(url), kb);
        }
    }
}

impl Place {
    fn embedded() -> Self {
        let folder = tempfile::tempdir().unwrap();
        Self {
            root: folder.path().canonicalize().unwrap(),
            _folder: folder,
            cluster: None,
        }
    }

    fn cluster(test: &str) -> Option<Self> {
        let url = zhiku_tests::local::qdrant_server("store_contract::cluster", test)?;
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let kb = format!(
            "storecontract{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let folder = tempfile::tempdir().unwrap();
        Some(Self {
            root: folder.path().canonicalize().unwrap(),
            _folder: folder,
            cluster: Some((url, kb)),
        })
    }

    fn config(&self) -> Config {
        let cluster = self.cluster.clone();
        let env = move |name: &str| match (name, &cluster) {
            ("ZHIKU_EMBEDDER", _) => Some("hashing".to_string()),
            ("ZHIKU_QDRANT_URL", Some((url, _))) => Some(url.clone()),
            ("ZHIKU_QDRANT_KNOWLEDGE_BASE", Some((_, kb))) => Some(kb.clone()),
            // On a cluster, the test collections' layout (as contract_qdrant.rs takes it).
            ("ZHIKU_QDRANT_SHARDS", Some(_)) => std::env::var("ZHIKU_TEST_QDRANT_SHARDS").ok(),
            ("ZHIKU_QDRANT_REPLICATION", Some(_)) => {
                std::env::var("ZHIKU_TEST_QDRANT_REPLICATION").ok()
            }
            _ => None,
        };
        let profile = if self.cluster.is_some() {
            "cluster"
        } else {
            "local"
        };
        Config::resolve(None, Some(profile), &env).unwrap()
    }

    /// The store of machine `name` (each machine has its own store folder).
    fn open_as(&self, name: &str) -> anyhow::Result<Store> {
        Store::open(
            &self.root.join(format!(".zhiku-{name}")),
            self.config(),
            Purpose::Write,
            Some(&self.root),
        )
    }

    fn open(&self) -> Store {
        self.open_as("one").unwrap()
    }

    fn refresh(&self, store: &mut Store) -> Refreshed {
        zhiku_app::wiring::refresh(
            store,
            Origin::Folder {
                root: self.root.clone(),
            },
            &mut |_| {},
        )
        .unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Three documents of several sections each.
    fn seed(&self) {
        for (name, topic) in [
            ("发货", "发货截止"),
            ("退货", "退货流程"),
            ("报销", "差旅报销"),
        ] {
            self.write(&format!("{name}.md"), &document(topic, 0));
        }
    }
}

/// A document about `topic` of four sections, the `edited`-th one (from 1) changed.
fn document(topic: &str, edited: usize) -> String {
    let mut text = format!("# {topic}\n\n");
    for section in 1..=4 {
        let extra = if section == edited {
            "（本节已修订）"
        } else {
            ""
        };
        text.push_str(&format!(
            "## {topic}第{section}节\n\n{topic}的第{section}条规定{extra}：{}\n\n",
            "具体细则见附件。".repeat(40)
        ));
    }
    text
}

/// The document IDs of the hits of `query` in `mode`.
fn hit_docs(store: Store, query: &str, mode: RetrievalMode) -> Vec<String> {
    let (kb, _) = zhiku_app::wiring::open_service(store, None).unwrap();
    let caller = kb.local_caller();
    let q = SearchQuery {
        query: query.into(),
        k: Some(5),
        mode,
        metadata: Vec::new(),
        locale: None,
        request_id: None,
    };
    kb.search(&caller, &q)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.doc_id)
        .collect()
}

fn index_reads_back_after_a_reopen(place: &Place) {
    place.seed();
    let mut store = place.open();
    let refreshed = place.refresh(&mut store);
    assert_eq!(refreshed.report.docs_added, 3);
    assert!(refreshed.report.chunks_embedded > 3);
    let recorded = store.recorded.clone();
    drop(store);
    let reopened = place.open();
    assert_eq!(reopened.recorded.catalog, recorded.catalog);
    assert_eq!(reopened.recorded.sources, recorded.sources);
    assert_eq!(reopened.recorded.stamps, recorded.stamps);
    assert!(
        reopened.repair.docs_requeued.is_empty() && reopened.repair.orphans_removed == 0,
        "{:?}",
        reopened.repair
    );
}

fn both_routes_find_what_the_catalog_lists(place: &Place) {
    place.seed();
    let mut store = place.open();
    place.refresh(&mut store);
    drop(store);
    for mode in [
        RetrievalMode::Lexical,
        RetrievalMode::Dense,
        RetrievalMode::Hybrid,
    ] {
        let docs = hit_docs(place.open(), "退货流程的规定", mode);
        assert!(!docs.is_empty(), "{mode:?} found nothing");
        if mode != RetrievalMode::Dense {
            assert_eq!(docs[0], "退货.md", "{mode:?}: {docs:?}");
        }
    }
}

fn an_unchanged_refresh_reads_and_embeds_nothing(place: &Place) {
    place.seed();
    let mut store = place.open();
    place.refresh(&mut store);
    drop(store);
    let mut store = place.open();
    let again = place.refresh(&mut store);
    assert_eq!(
        (
            again.report.docs_added,
            again.report.docs_changed,
            again.report.chunks_embedded
        ),
        (0, 0, 0),
        "{:?}",
        again.report
    );
}

fn an_edit_reuses_the_unchanged_chunks(place: &Place) {
    place.seed();
    let mut store = place.open();
    let first = place.refresh(&mut store);
    place.write("退货.md", &document("退货流程", 2));
    let edited = place.refresh(&mut store);
    assert_eq!(edited.report.docs_changed, 1, "{:?}", edited.report);
    assert!(edited.report.chunks_reused > 0, "{:?}", edited.report);
    assert!(
        edited.report.chunks_embedded < first.report.chunks_embedded / 3,
        "{:?} after {:?}",
        edited.report,
        first.report
    );
    assert!(store.problems().unwrap().is_empty());
}

fn a_removed_file_leaves_no_trace(place: &Place) {
    place.seed();
    let mut store = place.open();
    place.refresh(&mut store);
    std::fs::remove_file(place.root.join("退货.md")).unwrap();
    let removed = place.refresh(&mut store);
    assert_eq!(removed.report.docs_removed, 1);
    assert!(store.problems().unwrap().is_empty());
    drop(store);
    let docs = hit_docs(place.open(), "退货流程的规定", RetrievalMode::Lexical);
    assert!(!docs.iter().any(|d| d == "退货.md"), "{docs:?}");
}

/// An expired document is swept at the end of a refresh: out of the catalog and both routes.
fn an_expired_document_is_swept(place: &Place) {
    place.seed();
    place.write(
        "过期.md",
        &format!(
            "---\nexpires_at: 2020-01-01T00:00:00Z\n---\n{}",
            document("过期通知", 0)
        ),
    );
    let mut store = place.open();
    let refreshed = place.refresh(&mut store);
    assert_eq!(refreshed.swept.len(), 1, "{:?}", refreshed.swept);
    assert_eq!(store.recorded.catalog.docs.len(), 3);
    assert!(store.problems().unwrap().is_empty());
    drop(store);
    let docs = hit_docs(place.open(), "过期通知的规定", RetrievalMode::Lexical);
    assert!(!docs.iter().any(|d| d == "过期.md"), "{docs:?}");
}

/// Two writers at once: the embedded store admits one writing process (a second one opening
/// the same store folder is refused with the store lock); the cluster store lets writers on
/// two machines (each its own store folder) both open and makes their writes take turns, so
/// the store ends consistent with every document.
fn writers_never_interleave(place: &Place) {
    place.seed();
    let first = place.open_as("one").unwrap();
    if place.cluster.is_none() {
        let refused = place
            .open_as("one")
            .expect_err("a second writer of the embedded store");
        assert!(refused.downcast_ref::<StoreLocked>().is_some(), "{refused}");
        return;
    }
    let second = place.open_as("two").unwrap();
    for i in 0..4 {
        place.write(
            &format!("新增/{i}.md"),
            &document(&format!("新增主题{i}"), 0),
        );
    }
    let threads: Vec<_> = [first, second]
        .into_iter()
        .map(|mut store| {
            let root = place.root.clone();
            std::thread::spawn(move || {
                zhiku_app::wiring::refresh(&mut store, Origin::Folder { root }, &mut |_| {})
                    .unwrap();
                store
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let checker = place.open_as("three").unwrap();
    assert_eq!(checker.recorded.catalog.docs.len(), 7);
    let problems = checker.problems().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
}

/// Runs each property against the embedded store and the cluster store.
macro_rules! store_contract {
    ($($property:ident),* $(,)?) => {
        mod embedded {
            $(
                #[test]
                fn $property() {
                    super::$property(&super::Place::embedded());
                }
            )*
        }
        mod cluster {
            $(
                #[test]
                fn $property() {
                    if let Some(place) = super::Place::cluster(stringify!($property)) {
                        super::$property(&place);
                    }
                }
            )*
        }
    };
}

store_contract!(
    index_reads_back_after_a_reopen,
    both_routes_find_what_the_catalog_lists,
    an_unchanged_refresh_reads_and_embeds_nothing,
    an_edit_reuses_the_unchanged_chunks,
    a_removed_file_leaves_no_trace,
    an_expired_document_is_swept,
    writers_never_interleave,
);
