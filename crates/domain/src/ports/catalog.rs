//! The catalog store port: where the record of what has been indexed is kept between runs.
//!
//! The indexes hold chunks; the catalog says which chunks each document should have, at which
//! revision, under which policy, space and analyzer, and where each document came from. Writers
//! commit the indexes first and save the catalog last, so a crash in between leaves chunks the
//! catalog does not list (orphans, which the consistency check removes), never a catalog entry
//! whose chunks were not written.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::contracts::DocId;
use crate::contracts::{Catalog, CatalogChanges, CatalogEntry};

use super::errors::BoxError;

/// What a knowledge base's documents were loaded from. Serialised as
/// `{"kind": "folder", "root": …}`, `{"kind": "beir", "dir": …}` or `{"kind": "cluster"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Origin {
    /// A folder of Markdown and text files.
    Folder {
        /// Absolute path of the folder.
        root: PathBuf,
    },
    /// A BEIR corpus.
    Beir {
        /// Absolute path of the BEIR directory.
        dir: PathBuf,
    },
    /// The knowledge base's own documents collection on its cluster, which `index` fills
    /// from a folder and the API writes: what every replica reads, wherever it runs.
    Cluster,
}

/// How many documents a catalog lists and how many chunks they have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogCounts {
    /// Indexed documents.
    pub documents: usize,
    /// Their chunks.
    pub chunks: usize,
}

impl CatalogCounts {
    /// The counts of `catalog`.
    pub fn of(catalog: &Catalog) -> Self {
        Self {
            documents: catalog.docs.len(),
            chunks: catalog.chunk_count(),
        }
    }
}

/// Everything a knowledge base records about its indexed documents, saved and loaded as one
/// unit: the [`Catalog`], the path each document was read from, each file's stamp, and the
/// origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCatalog {
    /// Policy, space, analyzer and every indexed document's revision and chunk IDs.
    pub catalog: Catalog,
    /// Each document's source path, relative to the origin.
    pub sources: BTreeMap<DocId, String>,
    /// The document store's stamp of each source path when its document was indexed (see
    /// [`DocumentStore::load_changed`](super::DocumentStore::load_changed)): a file whose stamp
    /// is the same next time is not read again. Paths without a stamp are always read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stamps: BTreeMap<String, String>,
    /// The indexes' commit generations when this catalog was saved (see
    /// [`VectorIndex::generation`](super::VectorIndex::generation)).
    #[serde(default, skip_serializing_if = "Generations::is_unknown")]
    pub generations: Generations,
    /// Where the documents came from; `None` before the first indexing run names one.
    pub origin: Option<Origin>,
}

impl StoredCatalog {
    /// A catalog with no documents, no source paths and no origin.
    pub fn empty(catalog: Catalog) -> Self {
        Self {
            catalog,
            sources: BTreeMap::new(),
            stamps: BTreeMap::new(),
            generations: Generations::default(),
            origin: None,
        }
    }

    /// This catalog without its rows: `catalog.docs`, `sources` and `stamps` empty, the rest
    /// as it is. Costs the header, not the catalog (a store of a million documents saves one
    /// document without copying the others).
    pub fn header(&self) -> Self {
        let c = &self.catalog;
        Self {
            generations: self.generations,
            origin: self.origin.clone(),
            ..Self::empty(Catalog::new(c.policy, c.space.clone(), c.analyzer.clone()))
        }
    }

    /// The stamps of the paths `sources` still records; the rest are dropped (a removed or
    /// moved document's stamp must not vouch for whatever lies at its old path later).
    pub fn stamps_of_sources(&self, stamps: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        self.sources
            .values()
            .filter_map(|path| stamps.get(path).map(|s| (path.clone(), s.clone())))
            .collect()
    }

    /// Applies a run's catalog changes in place, recording in `changed` what they replace. A
    /// removed document loses its source path, and the stamp of that path goes with it.
    pub fn apply(&mut self, changes: &CatalogChanges, changed: &mut Changed) {
        for (id, entry) in changes.written() {
            changed.note_doc(self, id);
            self.catalog.docs.insert(id.clone(), entry.clone());
        }
        for id in changes.removed() {
            changed.note_doc(self, id);
            self.catalog.docs.remove(id);
            if let Some(path) = self.sources.remove(id) {
                self.set_stamp(&path, None, changed);
            }
        }
    }

    /// Records `path` as document `id`'s source, recording in `changed` what it replaces. A
    /// moved document's old path loses its stamp.
    pub fn set_source(&mut self, id: &DocId, path: &str, changed: &mut Changed) {
        if self.sources.get(id).map(String::as_str) == Some(path) {
            return;
        }
        changed.note_doc(self, id);
        if let Some(old) = self.sources.insert(id.clone(), path.to_string()) {
            self.set_stamp(&old, None, changed);
        }
    }

    /// Sets (or, with `None`, drops) the stamp of `path`, recording in `changed` what it
    /// replaces.
    pub fn set_stamp(&mut self, path: &str, stamp: Option<&str>, changed: &mut Changed) {
        if self.stamps.get(path).map(String::as_str) == stamp {
            return;
        }
        changed
            .stamps
            .entry(path.to_string())
            .or_insert_with(|| self.stamps.get(path).cloned());
        match stamp {
            Some(stamp) => self.stamps.insert(path.to_string(), stamp.to_string()),
            None => self.stamps.remove(path),
        };
    }

    /// Puts back what `changed` recorded: the catalog as it was before those changes.
    pub fn revert(&mut self, changed: Changed) {
        for (id, (entry, source)) in changed.docs {
            match entry {
                Some(entry) => self.catalog.docs.insert(id.clone(), entry),
                None => self.catalog.docs.remove(&id),
            };
            match source {
                Some(source) => self.sources.insert(id, source),
                None => self.sources.remove(&id),
            };
        }
        for (path, stamp) in changed.stamps {
            match stamp {
                Some(stamp) => self.stamps.insert(path, stamp),
                None => self.stamps.remove(&path),
            };
        }
    }
}

/// The documents and stamps a change of a [`StoredCatalog`] touched, each with what it held
/// before the change (so the change can be [reverted](StoredCatalog::revert), and a
/// [`CatalogStore`] can write only their rows). The header (policy, space, analyzer, origin,
/// generations) is always saved whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changed {
    /// Each touched document's entry and source path before the change.
    pub docs: BTreeMap<DocId, (Option<CatalogEntry>, Option<String>)>,
    /// Each touched path's stamp before the change.
    pub stamps: BTreeMap<String, Option<String>>,
}

impl Changed {
    /// Remembers document `id`'s state in `stored`, unless an earlier change did.
    fn note_doc(&mut self, stored: &StoredCatalog, id: &DocId) {
        self.docs.entry(id.clone()).or_insert_with(|| {
            (
                stored.catalog.docs.get(id).cloned(),
                stored.sources.get(id).cloned(),
            )
        });
    }

    /// True when no document and no stamp was touched.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.stamps.is_empty()
    }
}

/// The commit generations of both indexes, as recorded with a catalog. `None` where an index
/// keeps none (or had none when the catalog was saved).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generations {
    /// The lexical index's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexical: Option<u64>,
    /// The vector index's (none without a dense route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<u64>,
}

impl Generations {
    /// True when nothing is recorded.
    pub fn is_unknown(&self) -> bool {
        self.lexical.is_none() && self.vectors.is_none()
    }

    /// True when `current` proves both indexes (of a store with a dense route) hold exactly
    /// what they held when `self` was recorded: each keeps a generation, and each equals the
    /// recorded one.
    pub fn vouch_for(&self, current: &Generations) -> bool {
        self.vouch_for_lexical(current) && same_generation(self.vectors, current.vectors)
    }

    /// As [`Self::vouch_for`], for a store without a dense route: the lexical index alone.
    pub fn vouch_for_lexical(&self, current: &Generations) -> bool {
        same_generation(self.lexical, current.lexical)
    }
}

/// True when a generation was recorded and the index still carries it.
fn same_generation(recorded: Option<u64>, now: Option<u64>) -> bool {
    recorded.is_some() && recorded == now
}

/// Errors of [`CatalogStore`].
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The backing store cannot be reached now (disk full, permission denied, server down).
    /// Temporary: the same call may succeed later.
    #[error("catalog store {adapter} is unavailable: {message}")]
    Unavailable {
        /// Adapter name, e.g. `memory`, `file`.
        adapter: &'static str,
        /// What happened.
        message: String,
    },
    /// What is stored is not a catalog this build can read (corrupt, truncated, or written by
    /// something else). Permanent: only a rebuild replaces it.
    #[error("{location} is not a valid zhiku manifest; rebuild with zhiku index --rebuild")]
    Unreadable {
        /// Where the catalog is stored, e.g. the manifest's path.
        location: String,
        /// Why it could not be read.
        #[source]
        source: BoxError,
    },
    /// The stored catalog has a format version this build does not read. Permanent: only a
    /// rebuild replaces it.
    #[error(
        "{location} has format {found:?}, this build reads {expected:?}; rebuild with zhiku index --rebuild"
    )]
    FormatMismatch {
        /// Where the catalog is stored.
        location: String,
        /// The format this build reads.
        expected: String,
        /// The format recorded in the store.
        found: String,
    },
    /// The store was opened read-only. Permanent for this handle.
    #[error("catalog store {adapter} at {location} is read-only; the catalog cannot be saved")]
    ReadOnly {
        /// Adapter name.
        adapter: &'static str,
        /// Where the catalog is stored.
        location: String,
    },
    /// Any other failure.
    #[error("catalog store {adapter} failed: {source}")]
    Backend {
        /// Adapter name.
        adapter: &'static str,
        /// The adapter's own error.
        #[source]
        source: BoxError,
        /// Whether a retry may succeed.
        temporary: bool,
    },
}

impl CatalogError {
    /// True when retrying the same call later may succeed.
    pub fn is_temporary(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Backend { temporary, .. } => *temporary,
            Self::Unreadable { .. } | Self::FormatMismatch { .. } | Self::ReadOnly { .. } => false,
        }
    }

    /// True when the stored catalog must be rebuilt before this build can use it.
    pub fn needs_rebuild(&self) -> bool {
        matches!(self, Self::Unreadable { .. } | Self::FormatMismatch { .. })
    }
}

/// Keeps one [`StoredCatalog`] between runs.
///
/// # Contract
///
/// - [`load`](Self::load) MUST return `Ok(None)` when nothing was ever saved in this place, and
///   otherwise the last successfully saved catalog, equal in every field (documents with their
///   revisions, fingerprints and chunk IDs, policy, space, analyzer, source paths, stamps,
///   origin).
/// - [`save`](Self::save) MUST replace the stored catalog entirely: nothing of an earlier save
///   survives that the new one does not hold.
/// - A save MUST be atomic: a load (by this or any other handle, now or after a crash) sees
///   either the previous catalog or the new one, never a mix; after a failed save the previous
///   catalog still loads.
/// - Handles opened onto the same place (the same file, the same shared memory) MUST see each
///   other's saves once `save` returns; a persistent adapter MUST return the last save after a
///   restart.
/// - Stored data this build cannot read MUST be reported as [`CatalogError::Unreadable`] or
///   [`CatalogError::FormatMismatch`], never silently replaced or read as empty.
/// - [`save_changed`](Self::save_changed) MUST leave the store holding exactly `catalog`, as
///   [`save`](Self::save) would, atomically. It MAY write only the rows of what `changed` lists
///   when it can tell that the store holds what this handle last loaded or saved, and MUST save
///   the whole catalog when it cannot (another handle saved in between).
/// - [`load_header`](Self::load_header) MUST return the header of what
///   [`load`](Self::load) returns (policy, space, analyzer, generations, origin) with no
///   document rows, and the numbers of documents and chunks those rows hold;
///   [`source_paths`](Self::source_paths) MUST return exactly the listed documents' entries of
///   its `sources`.
/// - An adapter MAY refuse [`save`](Self::save) with [`CatalogError::ReadOnly`] when opened for
///   reading only; its loads still MUST work.
/// - [`earlier_turns_finished`](Self::earlier_turns_finished), when it says anything, MUST say
///   `Some(false)` after a turn that was not finished until a later finished turn
///   [vouched](Self::vouch_consistent) for the store: a finished write after a killed one does
///   not undo what the killed one left.
/// - An adapter that several processes write at once MUST serialise their writes through
///   [`begin_write`](Self::begin_write): while one handle holds a [`WriteTurn`], another
///   handle's `begin_write` waits (and fails after a bounded wait, temporarily), and a
///   `begin_write` or [`moved`](Self::moved) that returns a catalog returns the last one saved.
///   A handle whose turn was taken from it (it outlived the adapter's lease) MUST have its
///   saves refused, never recorded.
pub trait CatalogStore: Send + Sync {
    /// The last saved catalog, or `None` when none was ever saved.
    fn load(&self) -> Result<Option<StoredCatalog>, CatalogError>;

    /// The last saved catalog for a process that only reads: everything [`load`](Self::load)
    /// returns, except that `stamps` MAY be left empty (they serve a refresh, which such a
    /// process never runs). The default loads everything.
    fn load_for_reading(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        self.load()
    }

    /// The last saved catalog's header, for a process that answers queries and looks up only
    /// the few documents they return: what [`load_for_reading`](Self::load_for_reading)
    /// returns with `catalog.docs`, `sources` and `stamps` left empty, and the counts of what
    /// they hold. The default loads everything and counts it.
    fn load_header(&self) -> Result<Option<(StoredCatalog, CatalogCounts)>, CatalogError> {
        Ok(self
            .load_for_reading()?
            .map(|stored| (stored.header(), CatalogCounts::of(&stored.catalog))))
    }

    /// The source paths the last saved catalog records for `ids` (a document without one is
    /// left out): a point lookup, for a process that loaded only the header. The default loads
    /// everything.
    fn source_paths(&self, ids: &[DocId]) -> Result<BTreeMap<DocId, String>, CatalogError> {
        let Some(stored) = self.load_for_reading()? else {
            return Ok(BTreeMap::new());
        };
        Ok(ids
            .iter()
            .filter_map(|id| stored.sources.get(id).map(|p| (id.clone(), p.clone())))
            .collect())
    }

    /// Replaces the stored catalog with `catalog`, atomically.
    fn save(&self, catalog: &StoredCatalog) -> Result<(), CatalogError>;

    /// Replaces the stored catalog with `catalog`, which differs from the one this handle last
    /// loaded or saved only in the header and in what `changed` lists. Adapters that cannot
    /// write part of a catalog save it whole.
    fn save_changed(&self, catalog: &StoredCatalog, changed: &Changed) -> Result<(), CatalogError> {
        let _ = changed;
        self.save(catalog)
    }

    /// Takes the right to write the store for one write (an index run, a put, a delete, a
    /// sweep, a repair), across every process that writes this catalog, waiting a bounded time
    /// while another holds it (then a temporary error). Returns the right, held until the
    /// [`WriteTurn`] is dropped, and the catalog on record when it moved since this handle last
    /// loaded or saved (another process saved): the write starts from that one. A store only
    /// one process can write (the embedded store, behind its file lock) has nothing to take:
    /// the default.
    fn begin_write(&self) -> Result<(WriteTurn, Option<StoredCatalog>), CatalogError> {
        Ok((WriteTurn::default(), None))
    }

    /// The catalog on record when it moved since this handle last loaded or saved (another
    /// process saved): how a process that serves queries beside writers elsewhere sees their
    /// saves. Costs one small read when nothing moved. The default: nothing moves.
    fn moved(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        Ok(None)
    }

    /// Whether every earlier turn, of every process, was [finished](WriteTurn::finish), asked
    /// by the holder of a turn: `Some(true)` when none was killed or failed midway since the
    /// store was last checked chunk by chunk, so the indexes hold exactly what the catalog on
    /// record lists and a writer needs no check; `Some(false)` when one was, so the writer
    /// checks and repairs first; `None` when the store cannot tell (the default: the indexes'
    /// generations decide).
    fn earlier_turns_finished(&self) -> Option<bool> {
        None
    }

    /// Tells the store, during a turn, that the indexes were checked chunk by chunk against the
    /// catalog (and repaired) in it: once the turn is finished, later turns may trust
    /// [`earlier_turns_finished`](Self::earlier_turns_finished) again after a turn that was
    /// not. The default has nothing to record.
    fn vouch_consistent(&self) {}
}

/// The right to write a store, taken by [`CatalogStore::begin_write`] and given up when it
/// ends: by [`finish`](Self::finish) once the write completed (its indexes and catalog agree),
/// or dropped (an error or a panic midway: the store then assumes they may not).
#[derive(Default)]
pub struct WriteTurn {
    release: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl WriteTurn {
    /// A turn that runs `release` when it ends, with true when it was finished.
    pub fn releasing(release: impl FnOnce(bool) + Send + 'static) -> Self {
        Self {
            release: Some(Box::new(release)),
        }
    }

    /// Ends the turn of a write that completed.
    pub fn finish(mut self) {
        if let Some(release) = self.release.take() {
            release(true);
        }
    }
}

impl std::fmt::Debug for WriteTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTurn")
            .field("held", &self.release.is_some())
            .finish()
    }
}

impl Drop for WriteTurn {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn changes_revert_to_exactly_what_was_stored() {
        let policy = crate::ChunkingPolicy::with_sizes(640, 64).unwrap();
        let entry = |text: &str| CatalogEntry {
            revision: crate::Revision::of_content(text),
            fingerprint: text.to_string(),
            chunk_ids: Vec::new(),
            about: None,
            indexed_at: None,
            expires_at: None,
        };
        let id = |s: &str| DocId::new(s).unwrap();
        let mut stored = StoredCatalog::empty(Catalog::new(policy, None, "a/1".into()));
        for doc in ["a", "b", "c"] {
            stored.catalog.docs.insert(id(doc), entry(doc));
            stored.sources.insert(id(doc), format!("{doc}.md"));
            stored
                .stamps
                .insert(format!("{doc}.md"), format!("stamp {doc}"));
        }
        let before = stored.clone();
        let mut changes = CatalogChanges::default();
        changes.write(id("a"), entry("a2"));
        changes.write(id("new"), entry("new"));
        changes.remove(id("b"));
        let mut changed = Changed::default();
        stored.apply(&changes, &mut changed);
        stored.set_source(&id("a"), "moved/a.md", &mut changed);
        stored.set_source(&id("new"), "new.md", &mut changed);
        stored.set_stamp("c.md", Some("stamp c2"), &mut changed);
        stored.set_stamp("new.md", Some("stamp new"), &mut changed);

        assert_eq!(stored.catalog.docs.get(&id("a")), Some(&entry("a2")));
        assert!(!stored.catalog.docs.contains_key(&id("b")));
        assert!(!stored.sources.contains_key(&id("b")));
        // A removed or moved document's old path keeps no stamp.
        assert!(!stored.stamps.contains_key("b.md") && !stored.stamps.contains_key("a.md"));
        assert_eq!(
            changed.docs.keys().map(DocId::as_str).collect::<Vec<_>>(),
            ["a", "b", "new"]
        );
        assert_eq!(
            changed
                .stamps
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            ["a.md", "b.md", "c.md", "new.md"]
        );
        stored.revert(changed);
        assert_eq!(stored, before);

        // The header is the catalog without its rows, whatever else it records.
        stored.origin = Some(Origin::Folder {
            root: PathBuf::from("/kb"),
        });
        let header = stored.header();
        let mut rowless = stored.clone();
        rowless.catalog.docs.clear();
        rowless.sources.clear();
        rowless.stamps.clear();
        assert_eq!(header, rowless);
    }

    #[test]
    fn origin_keeps_the_manifest_shape() {
        let folder = Origin::Folder {
            root: PathBuf::from("/kb/notes"),
        };
        let beir = Origin::Beir {
            dir: PathBuf::from("/data/scifact"),
        };
        assert_eq!(
            serde_json::to_value(&folder).unwrap(),
            json!({"kind": "folder", "root": "/kb/notes"})
        );
        assert_eq!(
            serde_json::to_value(&beir).unwrap(),
            json!({"kind": "beir", "dir": "/data/scifact"})
        );
        for origin in [folder, beir] {
            let text = serde_json::to_string(&origin).unwrap();
            assert_eq!(serde_json::from_str::<Origin>(&text).unwrap(), origin);
        }
    }

    #[test]
    fn unreadable_and_foreign_formats_say_how_to_rebuild() {
        let unreadable = CatalogError::Unreadable {
            location: "/kb/.zhiku/manifest.json".into(),
            source: "expected value at line 1 column 1".into(),
        };
        assert_eq!(
            unreadable.to_string(),
            "/kb/.zhiku/manifest.json is not a valid zhiku manifest; rebuild with zhiku index --rebuild"
        );
        let foreign = CatalogError::FormatMismatch {
            location: "/kb/.zhiku/manifest.json".into(),
            expected: "zhiku-store/1".into(),
            found: "zhiku-store/0".into(),
        };
        assert_eq!(
            foreign.to_string(),
            "/kb/.zhiku/manifest.json has format \"zhiku-store/0\", this build reads \"zhiku-store/1\"; rebuild with zhiku index --rebuild"
        );
        for e in [&unreadable, &foreign] {
            assert!(e.needs_rebuild() && !e.is_temporary());
        }
        let busy = CatalogError::Unavailable {
            adapter: "file",
            message: "disk full".into(),
        };
        assert!(busy.is_temporary() && !busy.needs_rebuild());
    }
}
