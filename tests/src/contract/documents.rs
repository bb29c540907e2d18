//! Properties every [`DocumentStore`] has. Each function takes a [`DocumentPlace`]: a store
//! holding the seed documents its factory put there, and whatever keeps that place alive.
//! Read-only stores pass the common properties and [`read_only_refuses_writes`]; writable ones
//! the common properties and the write properties.

use std::collections::BTreeMap;

use zhiku_domain::ports::{DocumentError, DocumentStore, KnownFile, PutRequest};
use zhiku_domain::{DocId, Scope};

/// A document store under test.
pub struct DocumentPlace {
    /// The store.
    pub store: Box<dyn DocumentStore>,
    /// The IDs of the documents the factory put there, sorted.
    pub seeded: Vec<DocId>,
    /// Keeps the place (a temporary folder) alive.
    pub guard: Box<dyn std::any::Any>,
}

impl std::fmt::Debug for DocumentPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentPlace")
            .field("adapter", &self.store.capabilities().adapter)
            .field("seeded", &self.seeded)
            .finish()
    }
}

/// Each loaded document with the path the service would record for it (its source).
fn recorded(place: &DocumentPlace) -> BTreeMap<DocId, String> {
    place
        .store
        .load_all()
        .expect("load")
        .documents
        .iter()
        .map(|d| (d.id().clone(), d.attributes().source.to_string()))
        .collect()
}

/// `load_all` returns exactly the seeded documents.
pub fn load_all_returns_every_document(place: &DocumentPlace) {
    let loaded = place.store.load_all().expect("load");
    let mut ids: Vec<DocId> = loaded.documents.iter().map(|d| d.id().clone()).collect();
    ids.sort();
    assert_eq!(ids, place.seeded);
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
}

/// `load_changed`, given what `load_all` stamped, returns with its unchanged paths' known
/// documents exactly what `load_all` returns; a store that stamps files skips at least one.
pub fn load_changed_agrees_with_load_all(place: &DocumentPlace) {
    let full = place.store.load_all().expect("load");
    let known: BTreeMap<String, KnownFile> = full
        .documents
        .iter()
        .filter_map(|d| {
            let path = d.attributes().source.to_string();
            let stamp = full.stamps.get(&path)?.clone();
            Some((
                path,
                KnownFile {
                    doc: d.id().clone(),
                    stamp,
                },
            ))
        })
        .collect();
    let changed = place.store.load_changed(&known).expect("load changed");
    let mut got: Vec<(DocId, String)> = changed
        .documents
        .iter()
        .map(|d| (d.id().clone(), d.fingerprint()))
        .collect();
    for path in &changed.unchanged {
        let k = known
            .get(path)
            .unwrap_or_else(|| panic!("{path} reported unchanged but was not known"));
        let doc = full.documents.iter().find(|d| d.id() == &k.doc).unwrap();
        got.push((doc.id().clone(), doc.fingerprint()));
        assert_eq!(
            changed.stamps.get(path),
            Some(&k.stamp),
            "an unchanged path keeps its stamp"
        );
    }
    got.sort();
    let mut want: Vec<(DocId, String)> = full
        .documents
        .iter()
        .map(|d| (d.id().clone(), d.fingerprint()))
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(changed.skipped, full.skipped);
    if !known.is_empty() {
        assert!(
            !changed.unchanged.is_empty(),
            "the store stamps files but recognised none as unchanged"
        );
    }
}

/// `read` of a loaded document at its recorded path returns that document, unchanged.
pub fn read_returns_each_loaded_document(place: &DocumentPlace) {
    let loaded = place.store.load_all().expect("load");
    for doc in &loaded.documents {
        let path = doc.attributes().source.to_string();
        let read = place
            .store
            .read(doc.id(), &path)
            .expect("read")
            .expect("present");
        assert_eq!(read.id(), doc.id());
        assert_eq!(read.revision(), doc.revision());
        assert_eq!(read.attributes().scope, doc.attributes().scope);
    }
}

/// The source store vouches for every loaded document at its current revision and scope.
pub fn source_store_vouches_for_loaded_documents(place: &DocumentPlace) {
    let paths = recorded(place);
    let source = place.store.source_store(&paths);
    for doc in place.store.load_all().expect("load").documents {
        let record = source.lookup(doc.id()).expect("lookup").expect("present");
        assert_eq!(&record.revision, doc.revision());
        assert_eq!(record.scope, doc.attributes().scope);
        assert!(record.visible);
    }
    let unknown = DocId::new("never-stored").unwrap();
    assert!(source.lookup(&unknown).expect("lookup").is_none());
}

fn request<'a>(
    id: &'a DocId,
    scope: &'a Scope,
    path: Option<&'a str>,
    text: &'a str,
    recorded: &'a BTreeMap<DocId, String>,
    metadata: &'a BTreeMap<String, serde_json::Value>,
    visible: &'a (dyn Fn(&DocId) -> bool + Sync),
) -> PutRequest<'a> {
    PutRequest {
        id,
        scope,
        path,
        title: Some("Contract"),
        locale: None,
        metadata,
        text,
        recorded,
        visible,
        sees: &|_| true,
    }
}

/// A read-only store refuses puts and removes as unsupported and changes nothing.
pub fn read_only_refuses_writes(place: &DocumentPlace) {
    assert!(!place.store.capabilities().writable);
    let paths = recorded(place);
    let id = DocId::new("new-doc").unwrap();
    let scope = Scope::new("alpha").unwrap();
    let metadata = BTreeMap::new();
    let put = place.store.prepare_put(&request(
        &id,
        &scope,
        None,
        "body",
        &paths,
        &metadata,
        &|_| true,
    ));
    assert!(
        matches!(put, Err(DocumentError::Unsupported { .. })),
        "{put:?}"
    );
    let (first, path) = paths.iter().next().expect("a seeded document");
    let removed = place.store.remove(first, path, &paths);
    assert!(
        matches!(removed, Err(DocumentError::Unsupported { .. })),
        "{:?}",
        removed.err()
    );
    load_all_returns_every_document(place);
}

/// A prepared write changes nothing; written, it loads and reads back; undone, it is gone.
pub fn a_write_loads_back_and_its_undo_leaves_nothing(place: &DocumentPlace) {
    assert!(place.store.capabilities().writable);
    let paths = recorded(place);
    let id = DocId::new("contract-new").unwrap();
    let scope = Scope::new("alpha").unwrap();
    let metadata = BTreeMap::from([("team".to_string(), serde_json::json!("search"))]);
    let prepared = place
        .store
        .prepare_put(&request(
            &id,
            &scope,
            None,
            "# Contract\n\nA new document.\n",
            &paths,
            &metadata,
            &|_| true,
        ))
        .expect("prepare");
    assert_eq!(prepared.document.id(), &id);
    load_all_returns_every_document(place);
    let staged = place.store.write(&prepared).expect("write");
    let loaded = place.store.load_all().expect("load");
    let doc = loaded
        .documents
        .iter()
        .find(|d| d.id() == &id)
        .expect("the written document loads");
    assert_eq!(doc.attributes().scope, scope);
    assert_eq!(doc.revision(), prepared.document.revision());
    let read = place.store.read(&id, &prepared.path).expect("read");
    assert_eq!(
        read.map(|d| d.revision().clone()),
        Some(doc.revision().clone())
    );
    staged.undo();
    load_all_returns_every_document(place);
}

/// An overwrite of the caller's own document, undone, restores the previous one exactly.
pub fn an_undone_overwrite_restores_the_previous_document(place: &DocumentPlace) {
    let paths = recorded(place);
    let before = place.store.load_all().expect("load").documents;
    let old = before.first().expect("a seeded document").clone();
    let path = paths[old.id()].clone();
    let metadata = BTreeMap::new();
    let prepared = place
        .store
        .prepare_put(&request(
            old.id(),
            &old.attributes().scope,
            Some(&path),
            "Rewritten.\n",
            &paths,
            &metadata,
            &|_| true,
        ))
        .expect("prepare");
    assert_eq!(
        prepared.previous.as_ref().map(|d| d.revision()),
        Some(old.revision())
    );
    let staged = place.store.write(&prepared).expect("write");
    let changed = place
        .store
        .read(old.id(), &path)
        .expect("read")
        .expect("present");
    assert_ne!(changed.revision(), old.revision());
    staged.undo();
    let back = place
        .store
        .read(old.id(), &path)
        .expect("read")
        .expect("present");
    assert_eq!(back.revision(), old.revision());
}

/// A removed document is gone once kept; an undone remove puts it back.
pub fn remove_is_undone_or_kept(place: &DocumentPlace) {
    let paths = recorded(place);
    let (id, path) = paths.iter().next().expect("a seeded document");
    let (current, staged) = place.store.remove(id, path, &paths).expect("remove");
    assert_eq!(current.as_ref().map(|d| d.id()), Some(id));
    assert!(
        !place
            .store
            .load_all()
            .expect("load")
            .documents
            .iter()
            .any(|d| d.id() == id)
    );
    staged.undo();
    load_all_returns_every_document(place);
    let (_, staged) = place.store.remove(id, path, &paths).expect("remove");
    staged.keep();
    let left: Vec<DocId> = place
        .store
        .load_all()
        .expect("load")
        .documents
        .iter()
        .map(|d| d.id().clone())
        .collect();
    assert!(!left.contains(id), "{left:?}");
    assert_eq!(left.len(), place.seeded.len() - 1);
}

/// A write onto the path of a document the caller may not see is answered as not found, and
/// nothing changes.
pub fn another_callers_path_is_not_found(place: &DocumentPlace) {
    let paths = recorded(place);
    let (owner, path) = paths.iter().next().expect("a seeded document");
    let id = DocId::new("intruder").unwrap();
    let scope = Scope::new("alpha").unwrap();
    let metadata = BTreeMap::new();
    let hidden = |d: &DocId| d != owner;
    let put = place.store.prepare_put(&request(
        &id,
        &scope,
        Some(path),
        "Overwrite.\n",
        &paths,
        &metadata,
        &hidden,
    ));
    assert!(matches!(put, Err(DocumentError::NotFound(_))), "{put:?}");
    load_all_returns_every_document(place);
}
