//! Properties every [`CatalogStore`] has. Each function takes an *opener*: a function that
//! returns a new handle onto one place (a fresh place per test), so a property can save through
//! one handle and load through another, as a restarted process would. For the memory adapter an
//! opener clones one store; for a file adapter it opens the same path again.

use std::collections::BTreeMap;
use std::path::PathBuf;

use zhiku_domain::ports::{
    CatalogCounts, CatalogStore, Changed, Generations, Origin, StoredCatalog,
};
use zhiku_domain::usecases::{Catalog, CatalogChanges, CatalogEntry, DocAbout};
use zhiku_domain::{Access, AccessRule, ChunkingPolicy, DocId, Revision, Scope, Timestamp};

use super::fixtures::Spec;

/// Opens a new handle onto the place under test.
pub type OpenCatalogStore = dyn Fn() -> Box<dyn CatalogStore>;

/// A catalog of `docs` (each with `chunks` chunks), their source paths and stamps, and `origin`.
pub fn stored_catalog(docs: &[(&str, usize)], origin: Option<Origin>) -> StoredCatalog {
    let policy = ChunkingPolicy::with_sizes(640, 64).expect("policy");
    let mut catalog = Catalog::new(
        policy,
        Some("hashing-384/1".to_string()),
        "contract-analyzer/1".to_string(),
    );
    let mut sources = BTreeMap::new();
    let mut stamps = BTreeMap::new();
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
                // Half the entries as an earlier format wrote them (nothing about the document).
                about: (chunks % 2 == 1).then(|| DocAbout {
                    title: format!("《{doc}》"),
                    source: format!("notes/{doc}.md"),
                    scope: Scope::new(if chunks % 4 == 1 { "public" } else { "team-a" })
                        .expect("scope"),
                    // Some with readers of their own (they must round-trip).
                    access: if chunks % 3 == 1 {
                        Access::parse(["group:hr", "user:li.lei@corp"], AccessRule::Document)
                            .expect("readers")
                    } else {
                        Access::everyone()
                    },
                }),
                // A third with the retention times an indexer records (they must round-trip).
                indexed_at: (chunks % 3 == 0)
                    .then(|| Timestamp::from_unix(1_700_000_000 + *chunks as i64)),
                expires_at: (chunks % 6 == 0)
                    .then(|| Timestamp::parse("2030-01-01T00:00:00Z").expect("timestamp")),
            },
        );
        sources.insert(id, format!("notes/{doc}.md"));
        stamps.insert(format!("notes/{doc}.md"), format!("stamp of {doc}"));
    }
    StoredCatalog {
        catalog,
        sources,
        stamps,
        generations: Generations {
            lexical: Some(docs.len() as u64 + 7),
            vectors: None,
        },
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

/// A load for reading returns what was saved, stamps aside (it may leave them out); and a
/// handle that loaded for reading and then saves what changed still stores exactly the new
/// catalog, stamps included.
pub fn a_load_for_reading_is_the_catalog_but_its_stamps(open: &OpenCatalogStore) {
    let store = open();
    let saved = stored_catalog(&[("a", 3), ("guides/切分", 1)], folder("/kb/notes"));
    store.save(&saved).unwrap();
    let mut read = open().load_for_reading().unwrap().expect("a saved catalog");
    assert!(read.stamps.is_empty() || read.stamps == saved.stamps);
    read.stamps = saved.stamps.clone();
    assert_eq!(read, saved);

    let reader = open();
    let mut next = reader.load_for_reading().unwrap().expect("a saved catalog");
    next.stamps = saved.stamps.clone();
    let mut changed = Changed::default();
    next.set_stamp("notes/a.md", Some("a new stamp"), &mut changed);
    reader.save_changed(&next, &changed).unwrap();
    assert_eq!(open().load().unwrap(), Some(next));
}

/// A header is what was saved without the document rows, with their counts; the source paths
/// of listed documents are looked up exactly; both follow later saves; and a handle that read
/// only the header still saves exactly what it is given.
pub fn a_header_is_the_catalog_without_its_rows(open: &OpenCatalogStore) {
    assert!(open().load_header().unwrap().is_none(), "nothing saved yet");
    let saved = stored_catalog(
        &[("a", 3), ("guides/切分", 1), ("b", 0)],
        folder("/kb/notes"),
    );
    open().save(&saved).unwrap();
    let (header, counts) = open().load_header().unwrap().expect("a saved catalog");
    let mut bare = saved.clone();
    bare.catalog.docs.clear();
    bare.sources.clear();
    bare.stamps.clear();
    assert_eq!(header, bare);
    assert_eq!(
        counts,
        CatalogCounts {
            documents: 3,
            chunks: 4
        }
    );
    let id = |s: &str| DocId::new(s).unwrap();
    let paths = open()
        .source_paths(&[id("guides/切分"), id("missing"), id("a")])
        .unwrap();
    let expected: BTreeMap<DocId, String> = [
        (id("a"), "notes/a.md".to_string()),
        (id("guides/切分"), "notes/guides/切分.md".to_string()),
    ]
    .into();
    assert_eq!(paths, expected);
    assert!(open().source_paths(&[]).unwrap().is_empty());

    // A handle that read the header saves what changed: the whole catalog lands exactly.
    let writer = open();
    writer.load_header().unwrap();
    let mut next = saved.clone();
    let mut changed = Changed::default();
    let mut changes = CatalogChanges::default();
    changes.remove(id("a"));
    next.apply(&changes, &mut changed);
    writer.save_changed(&next, &changed).unwrap();
    assert_eq!(open().load().unwrap().as_ref(), Some(&next));
    let (_, counts) = open().load_header().unwrap().unwrap();
    assert_eq!(
        counts,
        CatalogCounts {
            documents: 2,
            chunks: 1
        }
    );
    assert!(open().source_paths(&[id("a")]).unwrap().is_empty());

    // A handle that loaded everything saves by difference: the counts follow the change.
    let full = open();
    let mut after = full.load().unwrap().unwrap();
    let extra = stored_catalog(&[("c", 5)], None);
    let mut changed = Changed::default();
    let mut changes = CatalogChanges::default();
    changes.write(id("c"), extra.catalog.docs[&id("c")].clone());
    changes.remove(id("guides/切分"));
    after.apply(&changes, &mut changed);
    full.save_changed(&after, &changed).unwrap();
    let (_, counts) = open().load_header().unwrap().unwrap();
    assert_eq!(
        counts,
        CatalogCounts {
            documents: 2,
            chunks: 5
        }
    );
    assert_eq!(
        counts,
        CatalogCounts::of(&open().load().unwrap().unwrap().catalog)
    );
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

/// Saves that change a little, interleaved between two handles, load back exactly: a store that
/// writes only what changed since its own last save must notice the other handle's saves.
pub fn interleaved_small_saves_load_exactly(open: &OpenCatalogStore) {
    let a = open();
    let b = open();
    let base = stored_catalog(&[("a", 2), ("b", 1), ("c", 3)], folder("/kb/one"));
    a.save(&base).unwrap();
    assert_eq!(b.load().unwrap(), Some(base.clone()));

    // b drops "a" and re-stamps "c"; then a, still remembering `base`, changes "b" only.
    let mut by_b = base.clone();
    by_b.catalog.docs.remove(&DocId::new("a").unwrap());
    by_b.sources.remove(&DocId::new("a").unwrap());
    by_b.stamps.remove("notes/a.md");
    by_b.stamps.insert("notes/c.md".into(), "touched".into());
    b.save(&by_b).unwrap();
    let mut by_a = base.clone();
    by_a.catalog
        .docs
        .get_mut(&DocId::new("b").unwrap())
        .unwrap()
        .fingerprint = "new".into();
    by_a.generations.vectors = Some(3);
    a.save(&by_a).unwrap();
    assert_eq!(open().load().unwrap(), Some(by_a.clone()));
    assert_eq!(b.load().unwrap(), Some(by_a.clone()));

    // Many one-document saves in a row through one handle.
    let mut next = by_a;
    for i in 0..20 {
        let more = stored_catalog(&[(&format!("d{i}"), 1)], None);
        next.catalog.docs.extend(more.catalog.docs);
        next.sources.extend(more.sources);
        next.stamps.extend(more.stamps);
        if i % 3 == 0 {
            next.catalog
                .docs
                .remove(&DocId::new(format!("d{}", i / 2)).unwrap());
        }
        a.save(&next).unwrap();
    }
    assert_eq!(open().load().unwrap(), Some(next.clone()));
    assert_eq!(b.load().unwrap(), Some(next));
}

/// Saves of what changed (documents written, moved and removed, stamps set and dropped, the
/// header changed), through one handle while another handle saves whole catalogs in between,
/// always load back exactly the catalog the writer holds.
pub fn saving_what_changed_stores_exactly_the_new_catalog(open: &OpenCatalogStore) {
    let writer = open();
    let other = open();
    let mut stored = stored_catalog(&[("a", 2), ("b", 1), ("c", 3)], folder("/kb/one"));
    writer.save(&stored).unwrap();
    let id = |s: &str| DocId::new(s).unwrap();
    for round in 0..12u64 {
        let mut changes = CatalogChanges::default();
        let fresh = stored_catalog(&[(&format!("n{round}"), (round % 3) as usize)], None);
        for (doc, entry) in fresh.catalog.docs {
            changes.write(doc, entry);
        }
        if round % 2 == 0 {
            let mut entry = stored.catalog.docs[&id("a")].clone();
            entry.fingerprint = format!("a in round {round}");
            changes.write(id("a"), entry);
        }
        if round >= 2 && round % 3 == 2 {
            changes.remove(id(&format!("n{}", round - 2)));
        }
        let mut changed = Changed::default();
        stored.apply(&changes, &mut changed);
        stored.set_source(
            &id(&format!("n{round}")),
            &format!("new/{round}.md"),
            &mut changed,
        );
        stored.set_stamp(&format!("new/{round}.md"), Some("stamped"), &mut changed);
        if round % 4 == 1 {
            // A move: the old path's stamp goes.
            stored.set_source(&id("b"), &format!("moved/b{round}.md"), &mut changed);
        }
        stored.generations.lexical = Some(100 + round);
        writer.save_changed(&stored, &changed).unwrap();
        assert_eq!(
            open().load().unwrap(),
            Some(stored.clone()),
            "round {round}"
        );
        if round % 5 == 3 {
            // Another handle saves behind the writer's back: the writer's next partial save
            // must not write onto what it no longer knows.
            let mut theirs = stored.clone();
            theirs.catalog.docs.remove(&id("c"));
            theirs.stamps.insert("stray.md".into(), "theirs".into());
            other.save(&theirs).unwrap();
        }
    }
    assert_eq!(open().load().unwrap(), Some(stored));
}
