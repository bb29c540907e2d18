//! Bringing a store up to date with its documents.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use anyhow::Result;
use zhiku_domain::ports::{
    Changed, DocumentStore, KnownFile, LoadedDocuments, Origin, SkippedFile, StoredCatalog,
};
use zhiku_domain::rules::retention::Swept;
use zhiku_domain::usecases::{IndexReport, IndexerError, Progress, SyncMode};
use zhiku_domain::{DocId, Document};

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
    /// Documents the retention sweep that ends a refresh removed (expired, or beyond their
    /// scope's cap).
    pub swept: Vec<Swept>,
}

/// Loads the documents of `documents` (from `origin`) and indexes them incrementally; the
/// catalog is saved after both indexes committed. A file whose stamp is the one recorded when
/// its document was indexed is not read again (its document stands); files that cannot be
/// read keep their previously indexed documents. A writable store is then swept
/// ([`crate::retention`]): expired documents, and the oldest beyond a scope's cap, are removed.
pub fn refresh(
    store: &mut Store,
    documents: &dyn DocumentStore,
    origin: Origin,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    // One write: another process writing the same store waits, and what it saved before is
    // where this run starts.
    let turn = store.begin_write()?;
    settle(store, documents);
    let known = known_files(store, &origin);
    let loaded = documents.load_changed(&known)?;
    let mut refreshed = index_loaded(store, origin, loaded, on_progress)?;
    let swept = crate::retention::sweep_store(store, documents)?;
    refreshed.docs = refreshed.docs.saturating_sub(swept.removed.len());
    refreshed.report += &swept.report;
    refreshed.swept = swept.removed;
    turn.finish();
    Ok(refreshed)
}

/// Settles what a writer killed mid-ingest or mid-delete left in `documents` (an unrecorded
/// delete's file goes back, temporary files go), before a refresh reads them. Nothing for a
/// read-only store.
pub(crate) fn settle(store: &Store, documents: &dyn DocumentStore) {
    if store.is_read_only() {
        return;
    }
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

/// What the catalog recorded of each source path, for [`DocumentStore::load_changed`]: the
/// stamps taken from `origin` (trusted only for the origin they were taken from), except for
/// a document whose entry does not describe it yet, or whose recorded readers no longer follow
/// the access rules (its text is unchanged: nothing is embedded, its records are replaced).
pub(crate) fn known_files(store: &Store, origin: &Origin) -> BTreeMap<String, KnownFile> {
    if store.recorded.origin.as_ref() != Some(origin) {
        return BTreeMap::new();
    }
    store
        .recorded
        .sources
        .iter()
        .filter(|(doc, _)| {
            store
                .recorded
                .catalog
                .docs
                .get(*doc)
                .and_then(|e| e.about.as_ref())
                .is_some_and(|about| !store.settings.access.is_stale(about))
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
}

/// [`refresh`] for documents already loaded from `origin`.
///
/// The documents are indexed in steps of [`Settings::index_batch`](crate::Settings): a step's
/// chunks and vectors are all that is held at once (a 1M-chunk build in one step peaked at 10 GiB),
/// and each step ends with both indexes committed and the catalog saved, so a build killed
/// midway keeps the steps it finished, and the next run recognises their files by their
/// stamps. A last step removes the documents that are gone and settles the stamps.
pub(crate) fn index_loaded(
    store: &mut Store,
    origin: Origin,
    loaded: LoadedDocuments,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Refreshed> {
    let batch = store.settings.index_batch.max(1);
    let LoadedDocuments {
        documents,
        skipped,
        unchanged,
        stamps,
    } = loaded;
    // Documents that name no readers take those of the folder rules and scope defaults.
    let documents: Vec<Document> = documents
        .into_iter()
        .map(|d| store.settings.access.apply(d))
        .collect();
    // Two files claiming one ID fail the run before anything is written, as one step would.
    let mut ids: HashSet<&DocId> = HashSet::with_capacity(documents.len());
    if let Some(twice) = documents.iter().find(|d| !ids.insert(d.id())) {
        return Err(IndexerError::DuplicateDocument(twice.id().clone()).into());
    }
    let standing = Standing::of(store, &documents, &skipped, &unchanged);
    let count = documents.len();
    let mut report = IndexReport::default();
    let mut embedded_before = 0;
    let mut documents = documents.into_iter().peekable();
    while documents.peek().is_some() {
        let part: Vec<Document> = documents.by_ref().take(batch).collect();
        let done = index_step(store, &origin, part, &stamps, &mut |p| {
            on_progress(Progress {
                embedded: embedded_before + p.embedded,
                to_embed: embedded_before + p.to_embed,
            })
        })?;
        embedded_before += done.chunks_embedded;
        report += &done;
    }
    report += &remove_gone(store, origin, standing.ids, &stamps)?;
    // Documents recognised by their stamp were skipped as unchanged, only earlier.
    report.docs_skipped += standing.recognised;
    Ok(Refreshed {
        report,
        skipped,
        docs: count + standing.kept,
        swept: Vec::new(),
    })
}

/// The documents that stand after a refresh.
#[derive(Debug)]
struct Standing {
    /// Every document read, and every recorded one whose file was not read (unchanged, or
    /// unreadable now): the last step removes the others.
    ids: BTreeSet<DocId>,
    /// Recorded documents whose file was not read.
    kept: usize,
    /// Recorded documents whose file was recognised by its stamp as unchanged.
    recognised: usize,
}

impl Standing {
    fn of(
        store: &Store,
        documents: &[Document],
        skipped: &[SkippedFile],
        unchanged: &[String],
    ) -> Self {
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
        let recognised = store
            .recorded
            .sources
            .values()
            .filter(|path| unchanged.contains(path.as_str()))
            .count();
        // Everything read stands too, for the last step, which removes what is gone.
        let kept = keep.len();
        let mut ids = keep;
        ids.extend(documents.iter().map(|d| d.id().clone()));
        Self {
            ids,
            kept,
            recognised,
        }
    }
}

/// One step: indexes `part` in both indexes, then saves the catalog with each document's
/// source path and stamp. Returns what the indexer did.
fn index_step(
    store: &mut Store,
    origin: &Origin,
    part: Vec<Document>,
    stamps: &BTreeMap<String, String>,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<IndexReport> {
    let paths: Vec<(DocId, String)> = part
        .iter()
        .map(|d| (d.id().clone(), d.attributes().source.to_string()))
        .collect();
    let (changes, done) = {
        let indexer = store.indexer()?;
        let prepared = indexer.prepare(
            &store.recorded.catalog,
            part,
            SyncMode::Partial,
            on_progress,
        )?;
        indexer.apply(prepared)?
    };
    store.commit(|stored, changed| {
        stored.apply(&changes, changed);
        stored.origin = Some(origin.clone());
        for (id, path) in &paths {
            if stored.catalog.docs.contains_key(id) {
                stored.set_source(id, path, changed);
                if let Some(stamp) = stamps.get(path) {
                    stored.set_stamp(path, Some(stamp), changed);
                }
            }
        }
    })?;
    Ok(done)
}

/// The last step: documents that do not stand are removed, the vector index checkpoints, and
/// the catalog is saved with the stamps settled. Returns what the indexer did.
fn remove_gone(
    store: &mut Store,
    origin: Origin,
    standing: BTreeSet<DocId>,
    stamps: &BTreeMap<String, String>,
) -> Result<IndexReport> {
    let (changes, done) = {
        let indexer = store.indexer()?;
        let prepared = indexer.prepare(
            &store.recorded.catalog,
            std::iter::empty(),
            SyncMode::FullKeeping(standing),
            &mut |_| {},
        )?;
        indexer.apply(prepared)?
    };
    // Every run asks the vector index to checkpoint, which brings its derived structures (the
    // graph snapshot and what is written with it) up to the last step when replaying the rest
    // on the next open would cost more, or when they are missing: an unchanged run over a
    // store of an earlier version writes what its readers map. The catalog records generations
    // only, which a checkpoint does not change.
    if let Some((_, vectors)) = &store.dense {
        vectors.checkpoint()?;
    }
    // Only what differs is written: an unchanged refresh saves the header alone.
    store.commit(|stored, changed| {
        stored.apply(&changes, changed);
        stored.origin = Some(origin);
        settle_stamps(stored, stamps, changed);
    })?;
    Ok(done)
}

/// Every source path keeps the stamp the store took now; no other path keeps one.
fn settle_stamps(
    stored: &mut StoredCatalog,
    stamps: &BTreeMap<String, String>,
    changed: &mut Changed,
) {
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
}
