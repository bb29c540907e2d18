//! The one delete path (an API delete and a retention sweep go through it), and putting a
//! document back in both indexes where a failed change left it.

use anyhow::{Result, anyhow};
use zhiku_domain::ports::{DocumentStore, Staged};
use zhiku_domain::usecases::{Catalog, CatalogEntry, IndexReport, SyncMode};
use zhiku_domain::{DocId, Document};

use crate::error::{Step, Unavailable};
use crate::{KbError, Store};

/// Removes recorded document `id` from `documents` (moved aside first), both indexes and the
/// catalog, together: the one delete path (an API delete and a retention sweep). When the
/// indexes or the catalog cannot be changed, the document is put back and re-indexed; a writer
/// killed midway leaves the moved-aside file, which the next refresh puts back
/// ([`DocumentStore::settle`]), so the store never lists a document it does not hold.
pub(crate) fn remove_recorded(
    store: &mut Store,
    documents: &dyn DocumentStore,
    id: &DocId,
) -> Result<IndexReport, KbError> {
    let rel = store.recorded.sources.get(id).cloned();
    // Move the document aside before any index changes.
    let (current, staged) = match &rel {
        Some(rel) => {
            let (current, staged) = documents.remove(id, rel, &store.recorded.sources)?;
            (current, Some(staged))
        }
        None => (None, None),
    };
    let removed = {
        let store = &*store;
        store
            .indexer()
            .map_err(KbError::Internal)
            .and_then(|indexer| {
                indexer
                    .remove(&store.recorded.catalog, std::slice::from_ref(id))
                    .map_err(|e| {
                        KbError::from(Unavailable::Step {
                            step: Step::Remove,
                            reason: e.to_string(),
                        })
                    })
            })
    };
    // Puts the file back and re-indexes it where a route already dropped it.
    let undo_all = |store: &mut Store, staged: Option<Box<dyn Staged>>, current| {
        if let Some(s) = staged {
            s.undo();
        }
        if let Ok(entry) = reindex(store, id, current) {
            set_entry(&mut store.recorded.catalog, id, entry);
        }
    };
    let (changes, report) = match removed {
        Ok(done) => done,
        Err(e) => {
            undo_all(store, staged, current);
            return Err(e);
        }
    };
    if let Err(e) = store.commit(|stored, changed| stored.apply(&changes, changed)) {
        undo_all(store, staged, current);
        return Err(KbError::Internal(anyhow!(
            "cannot save the manifest; nothing was deleted: {:#}",
            anyhow::Error::from(e)
        )));
    }
    if let Some(s) = staged {
        s.keep();
    }
    Ok(report)
}

/// Puts document `id` back in both indexes as `doc` (or out of them when there is none),
/// whatever a failed or unrecorded change left there: every chunk of the document is removed
/// from both indexes, then `doc` is indexed again. Returns the document's catalog entry that
/// matches the indexes now (`None`: not indexed).
pub(crate) fn reindex(
    store: &Store,
    id: &DocId,
    doc: Option<Document>,
) -> Result<Option<CatalogEntry>> {
    let indexer = store.indexer()?;
    // `remove` acts on the documents the catalog lists: list this one whatever it held.
    let mut start = indexer.empty_catalog();
    start.docs.insert(
        id.clone(),
        CatalogEntry {
            revision: zhiku_domain::Revision::of_content(""),
            fingerprint: String::new(),
            chunk_ids: Vec::new(),
            about: None,
            indexed_at: None,
            expires_at: None,
        },
    );
    indexer.remove(&start, std::slice::from_ref(id))?;
    Ok(match doc {
        Some(doc) => {
            let empty = indexer.empty_catalog();
            let prepared = indexer.prepare(&empty, [doc], SyncMode::Partial, &mut |_| {})?;
            let (changes, _) = indexer.apply(prepared)?;
            changes.written().get(id).cloned()
        }
        None => None,
    })
}

/// Sets (or, with `None`, drops) document `id`'s entry in the catalog in memory.
pub(crate) fn set_entry(catalog: &mut Catalog, id: &DocId, entry: Option<CatalogEntry>) {
    match entry {
        Some(entry) => catalog.docs.insert(id.clone(), entry),
        None => catalog.docs.remove(id),
    };
}
