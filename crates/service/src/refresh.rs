//! Bringing a store up to date with its documents.

use std::collections::BTreeSet;

use anyhow::Result;
use zhiku_domain::DocId;
use zhiku_domain::ports::{DocumentStore, LoadedDocuments, Origin, SkippedFile, StoredCatalog};
use zhiku_domain::usecases::{IndexReport, Progress, SyncMode};

use crate::Store;

/// The outcome of bringing a store up to date with its origin.
#[derive(Debug)]
pub struct Refreshed {
    /// What the indexer did.
    pub report: IndexReport,
    /// Files that could not be loaded (their earlier documents are kept).
    pub skipped: Vec<SkippedFile>,
    /// Documents in the knowledge base afterwards.
    pub docs: usize,
}

/// Loads every document of `documents` (from `origin`) and indexes them incrementally; the
/// catalog is saved after both indexes committed. Files that cannot be read keep their
/// previously indexed documents.
pub fn refresh(
    store: &mut Store,
    documents: &dyn DocumentStore,
    origin: Origin,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    // What a writer killed mid-ingest or mid-delete left is settled first: an unrecorded
    // delete's file goes back, temporary files go.
    if !store.is_read_only() {
        let recorded: Vec<&str> = store
            .recorded
            .sources
            .values()
            .map(String::as_str)
            .collect();
        for done in documents.settle(&recorded) {
            tracing::info!(target: "zhiku::store", %done, "settled a killed writer's leftover");
        }
    }
    let loaded = documents.load_all()?;
    index_loaded(store, origin, loaded, on_progress)
}

/// [`refresh`] for documents already loaded from `origin`.
pub(crate) fn index_loaded(
    store: &mut Store,
    origin: Origin,
    loaded: LoadedDocuments,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    let LoadedDocuments { documents, skipped } = loaded;
    let skipped_paths: BTreeSet<&str> = skipped.iter().map(|s| s.path.as_str()).collect();
    let keep: BTreeSet<DocId> = store
        .recorded
        .sources
        .iter()
        .filter(|(_, path)| skipped_paths.contains(path.as_str()))
        .map(|(id, _)| id.clone())
        .collect();
    let paths: Vec<(DocId, String)> = documents
        .iter()
        .map(|d| (d.id().clone(), d.attributes().source.to_string()))
        .collect();
    let count = documents.len();
    let (catalog, report) = {
        let indexer = store.indexer()?;
        indexer.run(
            &store.recorded.catalog,
            documents,
            SyncMode::FullKeeping(keep.clone()),
            on_progress,
        )?
    };
    let mut sources = store.recorded.sources.clone();
    sources.retain(|id, _| catalog.docs.contains_key(id));
    sources.extend(paths);
    store.commit_catalog(StoredCatalog {
        catalog,
        sources,
        origin: Some(origin),
    })?;
    Ok(Refreshed {
        report,
        skipped,
        docs: count + keep.len(),
    })
}
