//! Bringing a store up to date with its documents.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use zhiku_domain::DocId;
use zhiku_domain::ports::{DocumentStore, KnownFile, LoadedDocuments, Origin, SkippedFile};
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

/// Loads the documents of `documents` (from `origin`) and indexes them incrementally; the
/// catalog is saved after both indexes committed. A file whose stamp is the one recorded when
/// its document was indexed is not read again (its document stands); files that cannot be
/// read keep their previously indexed documents.
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
    // Stamps are trusted only for the origin they were taken from.
    let known: BTreeMap<String, KnownFile> = if store.recorded.origin.as_ref() == Some(&origin) {
        store
            .recorded
            .sources
            .iter()
            // A document whose entry does not describe it yet is read again, to describe it.
            .filter(|(doc, _)| {
                store
                    .recorded
                    .catalog
                    .docs
                    .get(*doc)
                    .is_some_and(|e| e.about.is_some())
            })
            .filter_map(|(doc, path)| {
                let stamp = store.recorded.stamps.get(path)?;
                Some((
                    path.clone(),
                    KnownFile {
                        doc: doc.clone(),
                        stamp: stamp.clone(),
                    },
                ))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    let loaded = documents.load_changed(&known)?;
    index_loaded(store, origin, loaded, on_progress)
}

/// [`refresh`] for documents already loaded from `origin`.
pub(crate) fn index_loaded(
    store: &mut Store,
    origin: Origin,
    loaded: LoadedDocuments,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    let LoadedDocuments {
        documents,
        skipped,
        unchanged,
        stamps,
    } = loaded;
    // Recorded documents stand where their file was not read: unchanged, or unreadable now.
    let unchanged: BTreeSet<&str> = unchanged.iter().map(String::as_str).collect();
    let not_read: BTreeSet<&str> = skipped
        .iter()
        .map(|s| s.path.as_str())
        .chain(unchanged.iter().copied())
        .collect();
    let keep: BTreeSet<DocId> = store
        .recorded
        .sources
        .iter()
        .filter(|(_, path)| not_read.contains(path.as_str()))
        .map(|(id, _)| id.clone())
        .collect();
    let paths: Vec<(DocId, String)> = documents
        .iter()
        .map(|d| (d.id().clone(), d.attributes().source.to_string()))
        .collect();
    let count = documents.len();
    let recognised = store
        .recorded
        .sources
        .values()
        .filter(|path| unchanged.contains(path.as_str()))
        .count();
    let (changes, mut report) = {
        let indexer = store.indexer()?;
        let prepared = indexer.prepare(
            &store.recorded.catalog,
            documents,
            SyncMode::FullKeeping(keep.clone()),
            on_progress,
        )?;
        indexer.apply(prepared)?
    };
    // Documents recognised by their stamp were skipped as unchanged, only earlier.
    report.docs_skipped += recognised;
    // Only what differs is written: an unchanged refresh saves the header alone.
    store.commit(|stored, changed| {
        stored.apply(&changes, changed);
        stored.origin = Some(origin);
        for (id, path) in &paths {
            if stored.catalog.docs.contains_key(id) {
                stored.set_source(id, path, changed);
            }
        }
        // Every source path keeps the stamp the store took now; no other path keeps one.
        let sourced: BTreeSet<&str> = stored.sources.values().map(String::as_str).collect();
        let stale: Vec<String> = stored
            .stamps
            .keys()
            .filter(|p| !sourced.contains(p.as_str()) || !stamps.contains_key(p.as_str()))
            .cloned()
            .collect();
        let fresh: Vec<(&String, &String)> = stamps
            .iter()
            .filter(|(p, _)| sourced.contains(p.as_str()))
            .collect();
        for path in stale {
            stored.set_stamp(&path, None, changed);
        }
        for (path, stamp) in fresh {
            stored.set_stamp(path, Some(stamp), changed);
        }
    })?;
    Ok(Refreshed {
        report,
        skipped,
        docs: count + keep.len(),
    })
}
