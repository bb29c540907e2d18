//! Properties every [`CatalogStore`] has. Each function takes an *opener*: a function that
//! returns a new handle onto one place (a fresh place per test), so a property can save through
//! one handle and load through another, as a restarted process would. For the memory adapter an
//! opener clones one store; for a file adapter it opens the same path again.

use std::collections::BTreeMap;
use std::path::PathBuf;

use zhiku_domain::ports::{CatalogStore, Origin, StoredCatalog};
use zhiku_domain::usecases::{Catalog, CatalogEntry};
use zhiku_domain::{ChunkingPolicy, DocId, Revision};

use super::fixtures::Spec;

/// Opens a new handle onto the place under test.
pub type OpenCatalogStore = dyn Fn() -> Box<dyn CatalogStore>;

/// A catalog of `docs` (each with `chunks` chunks), their source paths and `origin`.
pub fn stored_catalog(docs: &[(&str, usize)], origin: Option<Origin>) -> StoredCatalog {
    let policy = ChunkingPolicy::with_sizes(640, 64).expect("policy");
    let mut catalog = Catalog::new(
        policy,
        Some("hashing-384/1".to_string()),
        "contract-analyzer/1".to_string(),
    );
    let mut sources = BTreeMap::new();
    for (doc, chunks) in docs {
        let id = DocId::new(*doc).expect("doc id");
        let chunk_ids = (0..*chunks)
            .map(|i| {
                Spec::new(*doc, "s", format!("{doc} part {i}"))
                    .at(i * 11)
                    .chunk()
                    .chunk_id()
                    .clone()
            })
            .collect();
        catalog.docs.insert(
            id.clone(),
            CatalogEntry {
                revision: Revision::of_content(doc),
                fingerprint: format!("fingerprint of {doc}"),
                chunk_ids,
            },
        );
        sources.insert(id, format!("notes/{doc}.md"));
    }
    StoredCatalog {
        catalog,
        sources,
        origin,
    }
}

fn folder(root: &str) -> Option<Origin> {
    Some(Origin::Folder {
        root: PathBuf::from(root),
    })
}

/// A place where nothing was saved loads as `None`, through any handle.
pub fn fresh_store_loads_nothing(open: &OpenCatalogStore) {
    assert_eq!(open().load().unwrap(), None);
    assert_eq!(open().load().unwrap(), None);
}

/// A saved catalog loads back equal in every field: documents with revisions, fingerprints and
/// chunk IDs, policy, space, analyzer, source paths and origin (each kind, and none).
pub fn save_then_load_round_trips(open: &OpenCatalogStore) {
    let store = open();
    for origin in [
        folder("/kb/笔记 notes"),
        Some(Origin::Beir {
            dir: PathBuf::from("/data/scifact"),
        }),
        None,
    ] {
        let saved = stored_catalog(&[("a", 3), ("guides/切分", 1), ("empty", 0)], origin);
        store.save(&saved).unwrap();
        assert_eq!(store.load().unwrap(), Some(saved));
    }
}

/// A second save replaces the first entirely: documents, source paths and origin of the first
/// that the second does not hold are gone.
pub fn a_second_save_replaces_the_first(open: &OpenCatalogStore) {
    let store = open();
    let first = stored_catalog(&[("a", 2), ("b", 1)], folder("/kb/one"));
    store.save(&first).unwrap();
    let mut second = stored_catalog(&[("c", 4)], None);
    second.catalog.space = None;
    second.catalog.analyzer = "another-analyzer/2".into();
    store.save(&second).unwrap();
    let loaded = store.load().unwrap().expect("a saved catalog");
    assert_eq!(loaded, second);
    assert!(!loaded.catalog.docs.contains_key(&DocId::new("a").unwrap()));
    assert!(!loaded.sources.contains_key(&DocId::new("b").unwrap()));
    assert_eq!(loaded.origin, None);
}

/// Handles onto the same place see each other's last save, including a handle opened after
/// the saving one is gone (a restart).
pub fn another_handle_sees_the_last_save(open: &OpenCatalogStore) {
    let first = stored_catalog(&[("a", 1)], folder("/kb/one"));
    {
        let writer = open();
        writer.save(&first).unwrap();
    }
    let reader = open();
    assert_eq!(reader.load().unwrap(), Some(first));
    let second = stored_catalog(&[("b", 2)], folder("/kb/two"));
    let writer = open();
    writer.save(&second).unwrap();
    assert_eq!(reader.load().unwrap(), Some(second.clone()));
    assert_eq!(open().load().unwrap(), Some(second));
}
