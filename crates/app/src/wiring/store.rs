//! Opening a knowledge base's store: the adapters its profile picks, checked against what the
//! store recorded, wired into a [`zhiku_service::Store`].
//!
//! Layout of a store directory (default `.zhiku/` beside the knowledge base):
//!
//! ```text
//! catalog.sqlite  the catalog (SQLite, WAL): policy, embedding space, analyzer, the indexes'
//!                 generations, every document's revision, fingerprint, chunk IDs, source path
//!                 and file stamp, one row each
//! lexical/        the tantivy index: terms and chunk IDs (the records are read from
//!                 vectors.sqlite when the store has one, so the text is stored once)
//! vectors.sqlite  the vector index's truth (when the store has an embedding space): chunk
//!                 records, f32 vectors, commit generation (SQLite, WAL)
//! vectors.usearch the HNSW graph's last snapshot (the commits after it are replayed on open)
//! writer.lock     the store lock: held by the one process that may write (holds its pid)
//! ```
//!
//! No entry of a store is a symbolic link: every open of a store refuses one anywhere inside
//! it ([`refuse_linked_entries`]) before any file is opened, and the store's own files are
//! opened with `O_NOFOLLOW` (SQLite's `SQLITE_OPEN_NOFOLLOW`), so a link planted in the store
//! (say `writer.lock` pointing at a file elsewhere) is never truncated, written or read through.
//!
//! Every process that writes (`index`, `index --rebuild`, a refreshing `search` or `ask`,
//! `serve`, `mcp`) opens the store with [`Store::open`], which takes the store lock first; a
//! second writer is refused with [`StoreLocked::Busy`], and destructive steps (the deletions of
//! `--rebuild`) happen only under the lock, which they never delete. Read-only commands open it
//! with [`Store::open_read_only`]: no lock, no repair, nothing written; they read the last
//! committed state (tantivy's committed meta, the catalog's last transaction, and the vector
//! file, which is only ever replaced by rename), beside a running writer.
//!
//! A store written before the catalog moved to SQLite has a `manifest.json` (one JSON document
//! rewritten whole on every save) instead: the first writing open copies it into
//! `catalog.sqlite` and then removes it (a crash in between leaves both, and the next open
//! removes the manifest); a read-only open reads it as it is. Likewise a store written before
//! the ANN index has a `vectors.bin` (every record and vector, rewritten whole on every
//! commit): the first writing open copies its vectors into the index in one commit (nothing is
//! embedded again), then removes it; a read-only open searches it exactly, in memory.
//!
//! With `vectors = "qdrant"` (profile `prod`) the vectors live in a Qdrant collection instead
//! (see [`crate::qdrant`]); catalog and lexical index stay on disk. A server that
//! cannot be reached fails `index` before anything is recorded, and makes a read-only open fall
//! back to lexical retrieval with a notice.
//!
//! Writes are crash-safe: both indexes commit first, then the catalog is saved in one
//! transaction, recording the generations the indexes committed. A writing open removes the
//! files a killed tantivy writer left behind; then, when both indexes still carry the recorded
//! generations, nothing committed since the catalog was saved and nothing needs checking (O(1)).
//! Otherwise it checks chunk by chunk that catalog, vectors and lexical index agree and on a
//! mismatch repairs from the catalog in one step: documents with missing chunks are dropped
//! from the catalog and from both indexes (queued for re-indexing), then every chunk the
//! catalog does not list is deleted, so the first check after any crash finds the store
//! consistent. `zhiku verify` always checks chunk by chunk. A store built with another chunking
//! policy, embedding space or analyzer is refused with the difference and the rebuild command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;
use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};

use zhiku_adapters_fs::manifest::ManifestFile;
use zhiku_adapters_fs::vector_file;
use zhiku_adapters_memory::{HashingEmbedder, MemoryCatalogStore, MemoryVectorIndex};
use zhiku_adapters_openai::OpenAiEmbedder;
use zhiku_adapters_sqlite::SqliteCatalog;
use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_adapters_usearch::{AnnVectorIndex, RecordFile};
use zhiku_domain::ports::{
    CatalogStore, ChunkRecords, Embedder, IndexError, LexicalIndex, StoredCatalog, VectorIndex,
    VectorIndexExt,
};
use zhiku_domain::usecases::{Catalog, Consistency};
use zhiku_domain::{ChunkId, DocId};
use zhiku_service::Dense;

pub use super::qdrant::VectorsUnavailable;
use crate::config::{Config, EmbedderKind, LexicalKind, VectorsKind};
pub use zhiku_adapters_fs::atomic::write_atomically;
pub use zhiku_adapters_fs::lock::{LOCK_FILE, StoreLock, StoreLocked, refuse_linked_entries};
pub use zhiku_adapters_sqlite::CATALOG_FILE;
pub use zhiku_domain::ports::Origin;

/// The store refused to open because it was built with another configuration.
#[derive(Debug, thiserror::Error)]
#[error(
    "the store at {store} was built with {what} {recorded}, but this run uses {requested}.\n  \
     Rebuild it: zhiku index --rebuild{kb_flag}"
)]
pub struct NeedsRebuild {
    /// The store folder, as the message shows it.
    pub store: String,
    /// What differs: `chunking policy`, `lexical analyzer`, `embedding space`, ...
    pub what: String,
    /// What the store was built with.
    pub recorded: String,
    /// What this run would use.
    pub requested: String,
    /// ` --kb DIR` when known.
    pub kb_flag: String,
}

impl NeedsRebuild {
    /// The rebuild a mismatch of `what` calls for, in the store at `dir`.
    fn of(
        dir: &Path,
        kb_hint: Option<&Path>,
        what: &str,
        recorded: String,
        requested: String,
    ) -> Self {
        Self {
            store: dir.display().to_string(),
            what: what.to_string(),
            recorded,
            requested,
            kb_flag: kb_hint
                .map(|k| format!(" --kb {}", k.display()))
                .unwrap_or_default(),
        }
    }
}

/// The one mapping of an index adapter's refusal to open into "rebuild the store": a
/// mismatched space or configuration means the store was built otherwise; anything else stays
/// the adapter's error.
fn rebuild_or(e: IndexError, dir: &Path, kb_hint: Option<&Path>) -> anyhow::Error {
    match e {
        IndexError::SpaceMismatch { expected, found } => {
            anyhow!(NeedsRebuild::of(
                dir,
                kb_hint,
                "embedding space",
                expected,
                found
            ))
        }
        IndexError::ConfigMismatch {
            what,
            expected,
            found,
        } => anyhow!(NeedsRebuild::of(dir, kb_hint, what, expected, found)),
        other => anyhow!(other),
    }
}

/// What [`Store::check_and_repair`] found and did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Repair {
    /// Chunks present in an index but not in the manifest, deleted.
    pub orphans_removed: usize,
    /// Documents with chunks missing from an index, dropped from the manifest and from both
    /// indexes so the next `zhiku index` re-indexes them.
    pub docs_requeued: Vec<String>,
    /// Files in the lexical index that its committed state does not reference (left by a writer
    /// killed mid-commit), removed before writing.
    pub stray_files_removed: Vec<String>,
}

impl Repair {
    /// True when something was repaired.
    pub fn repaired(&self) -> bool {
        self.orphans_removed > 0
            || !self.docs_requeued.is_empty()
            || !self.stray_files_removed.is_empty()
    }

    /// One line saying what was repaired.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.stray_files_removed.is_empty() {
            parts.push(format!(
                "{} stray lexical-index files removed ({})",
                self.stray_files_removed.len(),
                self.stray_files_removed.join(", ")
            ));
        }
        if self.orphans_removed > 0 {
            parts.push(format!("{} orphan chunks removed", self.orphans_removed));
        }
        if !self.docs_requeued.is_empty() {
            parts.push(format!(
                "{} documents with missing chunks dropped and queued for re-indexing ({})",
                self.docs_requeued.len(),
                self.docs_requeued.join(", ")
            ));
        }
        parts.join("; ")
    }
}

/// How the store will be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Searching only: a missing embedder degrades to lexical retrieval.
    Read,
    /// Indexing: every configured index must be writable.
    Write,
}

/// An opened knowledge base: the service's store with the folder it lives in and the
/// configuration that picked its adapters.
pub struct Store {
    /// The store folder (`<kb>/.zhiku` unless `--store` says otherwise).
    pub dir: PathBuf,
    /// The resolved configuration.
    pub config: Config,
    /// What the consistency check repaired on open.
    pub repair: Repair,
    /// The dense route's embedder, shared with the extractive generator (which scores
    /// sentences against the question with it); none without a dense route.
    embedder: Option<Arc<dyn Embedder>>,
    core: zhiku_service::Store,
    holds_lock: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("picked", &self.core.picked)
            .finish()
    }
}

impl std::ops::Deref for Store {
    type Target = zhiku_service::Store;

    fn deref(&self) -> &Self::Target {
        &self.core
    }
}

impl std::ops::DerefMut for Store {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.core
    }
}

/// Resolves the configured embedder, or says why there is none.
pub fn resolve_embedder(config: &Config) -> (Option<Box<dyn Embedder>>, String) {
    match config.embedder {
        EmbedderKind::None => (None, "embedder = none: lexical retrieval only".into()),
        EmbedderKind::Hashing => match HashingEmbedder::new(384) {
            Ok(e) => (
                Some(Box::new(e)),
                "hashing test double (no semantics)".into(),
            ),
            Err(e) => (None, format!("hashing embedder: {e}")),
        },
        EmbedderKind::Candle => {
            let source = ModelSource::parse(&config.model);
            let options = EmbedderOptions {
                batch_size: config.embed_batch,
                ..EmbedderOptions::default()
            };
            match CandleEmbedder::load(&source, &options) {
                Ok(e) => {
                    let why = format!("candle {} (max {} tokens)", e.space(), e.max_seq_length());
                    (Some(Box::new(e)), why)
                }
                Err(e) => (
                    None,
                    format!(
                        "embedder unavailable, retrieval is lexical only: {e} (set ZHIKU_MODEL to a model folder or hub id)"
                    ),
                ),
            }
        }
        EmbedderKind::Openai => {
            let connected = super::embed_server::openai_embedder_config(config)
                .map_err(|e| e.to_string())
                .and_then(|c| OpenAiEmbedder::connect(c).map_err(|e| e.to_string()));
            match connected {
                Ok(e) => {
                    let why = e.describe();
                    (Some(Box::new(e)), why)
                }
                Err(e) => (
                    None,
                    format!(
                        "embedder unavailable, retrieval is lexical only: {e} (embed_url / ZHIKU_EMBED_URL names the server)"
                    ),
                ),
            }
        }
    }
}

/// Discards everything in the store folder but the lock, under the lock: the Qdrant
/// collections first (a failure changes nothing), then the lexical folder in one rename (a kill
/// while deleting it file by file must not leave a meta.json naming deleted segments), then the
/// catalog and the vector index.
fn discard_for_rebuild(dir: &Path, config: &Config) -> Result<()> {
    if config.vectors == VectorsKind::Qdrant {
        super::qdrant::drop_before_rebuild(&config.qdrant, dir)?;
    }
    let discarded = dir.join("lexical.discarded");
    let lexical = dir.join("lexical");
    if lexical.exists() {
        if discarded.exists() {
            std::fs::remove_dir_all(&discarded)
                .with_context(|| format!("cannot remove {}", discarded.display()))?;
        }
        std::fs::rename(&lexical, &discarded)
            .with_context(|| format!("cannot move {} away", lexical.display()))?;
    }
    let catalog = [
        "manifest.json",
        "manifest.tmp",
        CATALOG_FILE,
        "catalog.sqlite-wal",
        "catalog.sqlite-shm",
        "catalog.sqlite-journal",
    ];
    let legacy_vectors = [vector_file::FILE_NAME, vector_file::TEMP_NAME];
    for name in legacy_vectors
        .into_iter()
        .chain(zhiku_adapters_usearch::FILES)
        .chain(catalog)
    {
        let path = dir.join(name);
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// The catalog of the store in `dir`: `catalog.sqlite`, after moving a `manifest.json` of an
/// earlier version into it (a writing open) or reading that manifest as it is (a read-only
/// one).
fn open_catalog(dir: &Path, read_only: bool) -> Result<Box<dyn CatalogStore>> {
    let catalog = SqliteCatalog::in_store(dir, read_only);
    let manifest = ManifestFile::in_store(dir, read_only);
    if !manifest.path().exists() {
        return Ok(Box::new(catalog));
    }
    if read_only {
        return Ok(Box::new(manifest));
    }
    // A crash after the copy and before the removal leaves both: the database is the newer.
    if catalog.load()?.is_none()
        && let Some(stored) = manifest.load()?
    {
        catalog.save(&stored)?;
        tracing::info!(
            target: "zhiku::store",
            docs = stored.catalog.docs.len(),
            "moved manifest.json into {}",
            catalog.path().display()
        );
    }
    std::fs::remove_file(manifest.path())
        .with_context(|| format!("cannot remove {}", manifest.path().display()))?;
    Ok(Box::new(catalog))
}

/// The embedded vector index in `dir`. A writing open moves the vectors of an earlier version's
/// `vectors.bin` into it first (one commit; the file is removed only after it, so a crash in
/// between leaves both and the next open, finding the index committed, just removes the file).
/// A read-only open of a store not migrated yet searches the vector file in memory, exactly; of
/// a store with no vectors yet, an empty index.
fn open_ann(
    dir: &Path,
    config: &Config,
    space: &zhiku_domain::EmbeddingSpace,
    read_only: bool,
) -> Result<SearchedAndRead, IndexError> {
    let legacy = dir.join(vector_file::FILE_NAME);
    let options = config.ann.options();
    if read_only {
        if dir.join(zhiku_adapters_usearch::DATABASE_FILE).exists() {
            return Ok(both(Arc::new(AnnVectorIndex::open_read_only(
                dir,
                space.clone(),
                options,
            )?)));
        }
        let index = MemoryVectorIndex::new(space.clone());
        if let Some(items) = vector_file::read(&legacy, space)? {
            index.upsert(&items)?;
        }
        return Ok(both(Arc::new(index)));
    }
    let index = AnnVectorIndex::open(dir, space.clone(), options)?;
    if legacy.exists() {
        if index.generation() == 0 {
            let items = vector_file::read(&legacy, space)?.unwrap_or_default();
            index.upsert_batched(&items)?;
            index.commit()?;
            index.checkpoint()?;
            tracing::info!(
                target: "zhiku::store",
                vectors = items.len(),
                "moved {} into {}",
                legacy.display(),
                dir.join(zhiku_adapters_usearch::DATABASE_FILE).display()
            );
        }
        for name in [vector_file::FILE_NAME, vector_file::TEMP_NAME] {
            let path = dir.join(name);
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| {
                    IndexError::backend("store", format!("cannot remove {}: {e}", path.display()))
                })?;
            }
        }
    }
    Ok(both(Arc::new(index)))
}

/// A vector index in both of its roles: searched, and read for the lexical index's records.
type SearchedAndRead = (Arc<dyn VectorIndex>, Arc<dyn ChunkRecords>);

/// The store of chunk records a lexical index may read instead of keeping its own.
type Records = Option<Arc<dyn ChunkRecords>>;

/// One vector index as both of its roles.
fn both<T: VectorIndex + ChunkRecords + 'static>(index: Arc<T>) -> SearchedAndRead {
    (index.clone(), index)
}

/// The lexical index the configuration asks for. On disk beside an embedded vector store, the
/// text lives once: the lexical index keeps chunk IDs and reads records from `records`, the
/// vector index the same process writes. A reader without the dense route (no embedder) still
/// reads them there, from the vector store's file opened for records alone; a writer without
/// one keeps records in the lexical index (a store built without vectors).
fn open_lexical(
    dir: &Path,
    config: &Config,
    read_only: bool,
    kb_hint: Option<&Path>,
    records: Records,
) -> Result<TantivyLexicalIndex> {
    Ok(match config.lexical {
        LexicalKind::Ram => TantivyLexicalIndex::in_ram(LexicalConfig::default())?,
        LexicalKind::Disk => {
            let path = dir.join("lexical");
            let opened = if read_only {
                TantivyLexicalIndex::open_read_only(&path, LexicalConfig::default())
            } else {
                TantivyLexicalIndex::open_or_create(&path, LexicalConfig::default())
            };
            let lexical = opened.map_err(|e| rebuild_or(e, dir, kb_hint))?;
            let records = match records {
                Some(records) => Some(records),
                None if read_only && config.vectors == VectorsKind::Ann => {
                    RecordFile::open_read_only(dir)
                        .map_err(|e| rebuild_or(e, dir, kb_hint))?
                        .map(|file| Arc::new(file) as Arc<dyn ChunkRecords>)
                }
                None => None,
            };
            match records {
                Some(records) => lexical.with_records_in(records),
                None => lexical,
            }
        }
    })
}

/// Whether the recorded catalog can be used with this run's policy, analyzer and embedding
/// space. A reader without the recorded space still searches lexically: the notice says why.
fn check_compatible(
    recorded: &Catalog,
    requested: &Catalog,
    purpose: Purpose,
    embedder_why: &str,
    rebuild: &dyn Fn(&str, String, String) -> NeedsRebuild,
) -> Result<Option<String>, NeedsRebuild> {
    if recorded.policy != requested.policy {
        return Err(rebuild(
            "chunking policy",
            recorded.policy.describe(),
            requested.policy.describe(),
        ));
    }
    if recorded.analyzer != requested.analyzer {
        return Err(rebuild(
            "lexical analyzer",
            recorded.analyzer.clone(),
            requested.analyzer.clone(),
        ));
    }
    match (&recorded.space, &requested.space, purpose) {
        (a, b, _) if a == b => Ok(None),
        (Some(recorded), None, Purpose::Read) => Ok(Some(format!(
            "the store's vectors ({recorded}) cannot be queried: {embedder_why}"
        ))),
        (None, Some(_), Purpose::Read) => Ok(Some("the store was built without vectors (lexical only); `zhiku index --rebuild` adds the dense route".into())),
        (recorded, requested, _) => {
            let show = |s: &Option<String>| {
                s.clone()
                    .unwrap_or_else(|| format!("no vectors ({embedder_why})"))
            };
            Err(rebuild("embedding space", show(recorded), show(requested)))
        }
    }
}

/// One embedder shared by the dense route and the extractive generator.
struct SharedEmbedder(Arc<dyn Embedder>);

impl Embedder for SharedEmbedder {
    fn space(&self) -> &zhiku_domain::EmbeddingSpace {
        self.0.space()
    }

    fn embed_documents(
        &self,
        texts: &[&str],
    ) -> Result<Vec<zhiku_domain::Embedding>, zhiku_domain::ports::EmbedError> {
        self.0.embed_documents(texts)
    }

    fn embed_query(
        &self,
        text: &str,
    ) -> Result<zhiku_domain::Embedding, zhiku_domain::ports::EmbedError> {
        self.0.embed_query(text)
    }
}

/// The dense route in the space `catalog` records, when the embedder speaks it; `picked` and
/// `notice` say what was chosen and why a route is missing.
#[allow(clippy::too_many_arguments)]
fn open_dense(
    dir: &Path,
    config: &Config,
    embedder: Option<Box<dyn Embedder>>,
    catalog: &Catalog,
    purpose: Purpose,
    read_only: bool,
    kb_hint: Option<&Path>,
    picked: &mut Vec<(String, String)>,
    notice: &mut Option<String>,
) -> Result<(Option<Dense>, Records)> {
    let Some(embedder) =
        embedder.filter(|e| catalog.space.as_deref() == Some(e.space().identity()))
    else {
        picked.push(("vectors".into(), "none: the dense route is off".into()));
        return Ok((None, None));
    };
    let mut records = None;
    let vectors: Arc<dyn VectorIndex> = match config.vectors {
        VectorsKind::Memory => Arc::new(MemoryVectorIndex::new(embedder.space().clone())),
        VectorsKind::Ann => {
            let (vectors, both) = open_ann(dir, config, embedder.space(), read_only)
                .map_err(|e| rebuild_or(e, dir, kb_hint))?;
            records = Some(both);
            vectors
        }
        // Qdrant: an unreachable server turns the dense route off for reading and stops
        // writing before anything is touched.
        VectorsKind::Qdrant => {
            let opened = super::qdrant::open_for_store(
                &config.qdrant,
                dir,
                embedder.space(),
                &config.policy.fingerprint(),
                purpose == Purpose::Read,
                picked,
                notice,
            )
            .map_err(|e| match e.downcast::<IndexError>() {
                Ok(e) => rebuild_or(e, dir, kb_hint),
                Err(other) => other,
            })?;
            match opened {
                Some(index) => index,
                None => {
                    picked.push(("vectors".into(), "none: the dense route is off".into()));
                    return Ok((None, None));
                }
            }
        }
    };
    picked.push((
        "vectors".into(),
        format!("{} in {}", vectors.capabilities().adapter, embedder.space()),
    ));
    Ok((Some((embedder, vectors)), records))
}

impl Store {
    /// Opens (or creates) the store in `dir` for writing: takes the store lock first (a second
    /// writer gets [`StoreLocked`]), removes what a killed writer left, and repairs the store
    /// from its manifest. With `rebuild`, everything in it but the lock is discarded first,
    /// under the lock.
    pub fn open(
        dir: &Path,
        config: Config,
        purpose: Purpose,
        rebuild: bool,
        kb_hint: Option<&Path>,
    ) -> Result<Self> {
        Self::open_with(dir, config, purpose, false, rebuild, kb_hint, false)
    }

    /// Opens the last committed state of the store in `dir` for reading: no lock, no repair,
    /// nothing created or written, so it works beside a running writer and on a read-only
    /// folder. A missing store reads as empty.
    pub fn open_read_only(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_with(dir, config, Purpose::Read, true, false, kb_hint, false)
    }

    /// Opens the last committed state read-only, as [`Store::open_read_only`] does, for a
    /// process that answers queries or shows the status: only the catalog's header is loaded
    /// (its counts say what the rows hold), and the source paths of the documents a query
    /// checks are looked up one by one. What costs an open at a million chunks is then the
    /// indexes' own maps, not the catalog.
    pub fn open_to_query(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_with(dir, config, Purpose::Read, true, false, kb_hint, true)
    }

    fn open_with(
        dir: &Path,
        config: Config,
        purpose: Purpose,
        read_only: bool,
        rebuild: bool,
        kb_hint: Option<&Path>,
        header_only: bool,
    ) -> Result<Self> {
        let persistent = config.is_persistent();
        // A symbolic link anywhere in the store is refused before anything is opened: the
        // libraries below open their files by name and would follow it.
        if persistent {
            refuse_linked_entries(dir)?;
        }
        let lock = if persistent && !read_only {
            Some(StoreLock::acquire(dir)?)
        } else {
            None
        };
        if rebuild && read_only {
            return Err(anyhow!("a read-only open cannot rebuild the store"));
        }
        if rebuild {
            discard_for_rebuild(dir, &config)?;
        }
        // What a rebuild moved away (and maybe a killed rebuild left) goes under the lock.
        let discarded = dir.join("lexical.discarded");
        if !read_only && discarded.exists() {
            std::fs::remove_dir_all(&discarded)
                .with_context(|| format!("cannot remove {}", discarded.display()))?;
        }
        let needs_rebuild = |what: &str, recorded: String, requested: String| {
            NeedsRebuild::of(dir, kb_hint, what, recorded, requested)
        };

        let mut picked = vec![("profile".to_string(), config.profile.clone())];
        let (embedder, embedder_why) = resolve_embedder(&config);
        picked.push(("embedder".into(), embedder_why.clone()));
        let catalog_store: Box<dyn CatalogStore> = if persistent {
            open_catalog(dir, read_only)?
        } else {
            Box::new(MemoryCatalogStore::new())
        };
        let requested = Catalog::new(
            config.policy,
            embedder.as_ref().map(|e| e.space().identity().to_string()),
            zhiku_adapters_tantivy::ANALYZER_IDENTITY.to_string(),
        );
        // A reading process never refreshes, so it does without the stamps; one that answers
        // queries does without every document row.
        let mut counts = None;
        let loaded = if header_only {
            catalog_store.load_header()?.map(|(stored, c)| {
                counts = Some(c);
                stored
            })
        } else if read_only {
            catalog_store.load_for_reading()?
        } else {
            catalog_store.load()?
        };
        let (mut recorded, mut notice) = match loaded {
            Some(recorded) => {
                let notice = check_compatible(
                    &recorded.catalog,
                    &requested,
                    purpose,
                    &embedder_why,
                    &needs_rebuild,
                )?;
                (recorded, notice)
            }
            None => (StoredCatalog::empty(requested), None),
        };
        if embedder.is_none() && notice.is_none() {
            notice = Some(embedder_why.clone());
        }
        let shared: Option<Arc<dyn Embedder>> = embedder.map(Arc::from);
        let (dense, records) = open_dense(
            dir,
            &config,
            shared
                .clone()
                .map(|e| Box::new(SharedEmbedder(e)) as Box<dyn Embedder>),
            &recorded.catalog,
            purpose,
            read_only,
            kb_hint,
            &mut picked,
            &mut notice,
        )?;
        let lexical = open_lexical(dir, &config, read_only, kb_hint, records)?;
        picked.push((
            "lexical".into(),
            format!(
                "tantivy {} ({}{})",
                if config.lexical == LexicalKind::Disk {
                    "on disk"
                } else {
                    "in RAM"
                },
                lexical.analyzer(),
                if lexical.records_elsewhere() {
                    "; records in the vector store"
                } else {
                    ""
                }
            ),
        ));
        if dense.is_some() {
            notice = None;
        }
        let has_dense = dense.is_some();
        let no_docs = counts.map_or(recorded.catalog.docs.is_empty(), |c| c.documents == 0);
        if recorded.catalog.space.is_none() && no_docs {
            recorded.catalog.space = dense
                .as_ref()
                .map(|(e, _)| e.space().identity().to_string());
        }
        let swept = lexical.swept_files().to_vec();
        let mut core = zhiku_service::Store::new(
            config.service_settings(),
            Arc::new(lexical),
            dense,
            notice,
            picked,
            recorded,
            catalog_store,
            read_only,
        );
        if let Some(reranker) = super::rerank::reranker_for(&config) {
            core.picked.push((
                "reranker".into(),
                format!("{} (top {})", reranker.name(), config.rerank_depth),
            ));
            core = core.with_reranker(reranker);
        }
        let holds_lock = lock.is_some();
        if let Some(lock) = lock {
            core = core.holding(lock);
        }
        if let Some(counts) = counts {
            core = core.header_only(counts);
        }
        let mut store = Store {
            dir: dir.to_path_buf(),
            config,
            repair: Repair::default(),
            embedder: shared.filter(|_| has_dense),
            core,
            holds_lock,
        };
        if !read_only {
            store.repair = store.check_and_repair()?;
            store.repair.stray_files_removed = swept;
        }
        Ok(store)
    }

    /// The dense route's embedder, when the store has a dense route.
    pub fn dense_embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.embedder.clone()
    }

    /// The service's store, for a [`zhiku_service::KnowledgeBase`] (the lock goes with it).
    pub fn into_service(self) -> zhiku_service::Store {
        self.core
    }

    /// True when this process holds the store lock.
    pub fn holds_lock(&self) -> bool {
        self.holds_lock
    }

    /// Compares manifest, lexical index and vectors chunk by chunk and repairs from the manifest
    /// in one step (see [`Consistency::repair`]); the manifest is saved after both indexes
    /// committed, so a crash during the repair leaves a state the next repair finishes. Skipped
    /// when both indexes still carry the generations recorded with the manifest.
    pub fn check_and_repair(&mut self) -> Result<Repair> {
        if self.is_read_only() {
            return Err(anyhow!(
                "the store at {} was opened read-only and cannot be repaired",
                self.dir.display()
            ));
        }
        // Both indexes still carry the generations saved with the catalog: nothing committed
        // since, so they hold what it lists (a crash after an index commit and before the
        // catalog save changes a generation). Checked in O(1) instead of chunk by chunk.
        if self.core.generations_match() {
            return Ok(Repair::default());
        }
        // A writing open lists no stray files (it swept them): the repair is about chunks.
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let (catalog, done) =
            Consistency::new(self.lexical.as_ref(), vectors).repair(&self.recorded.catalog)?;
        if done.is_empty() {
            // Consistent: record the generations the check vouched for, so the next open
            // need not check again.
            let current = self.core.generations();
            if !current.is_unknown() && current != self.recorded.generations {
                // Only the header changes: no document row is written.
                self.core.commit(|_, _| {})?;
            }
            return Ok(Repair::default());
        }
        let mut sources = self.recorded.sources.clone();
        for id in &done.docs_requeued {
            sources.remove(id);
        }
        let mut next = StoredCatalog {
            catalog,
            sources,
            stamps: BTreeMap::new(),
            generations: Default::default(),
            origin: self.recorded.origin.clone(),
        };
        // A requeued document's file must be read again.
        next.stamps = next.stamps_of_sources(&self.recorded.stamps);
        self.core.commit_catalog(next)?;
        Ok(Repair {
            orphans_removed: done.orphans_removed,
            docs_requeued: done.docs_requeued.iter().map(ToString::to_string).collect(),
            stray_files_removed: Vec::new(),
        })
    }

    /// A full consistency check: every manifest chunk in every index, nothing else there.
    pub fn problems(&self) -> Result<Problems> {
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let chunks =
            Consistency::new(self.lexical.as_ref(), vectors).check(&self.recorded.catalog)?;
        // A writing open swept what a killed writer left before its first write (reported in
        // `repair`); whatever is unreferenced later is this process's own work in progress (a
        // commit's background merge), not damage. Only a read-only open lists stray files.
        let stray_files = if self.config.lexical == LexicalKind::Disk && self.is_read_only() {
            TantivyLexicalIndex::stray_files(&self.dir.join("lexical"))?
        } else {
            Vec::new()
        };
        Ok(Problems {
            stray_files,
            lexical_orphans: chunks.lexical_orphans,
            vector_orphans: chunks.vector_orphans,
            docs_missing_chunks: chunks
                .docs_missing_chunks
                .iter()
                .map(ToString::to_string)
                .collect(),
        })
    }

    /// Beside a running writer, this store's manifest was read before the indexes, and writes
    /// may have committed in between (indexes first, then the manifest): what the manifest on
    /// disk now explains is such a write, not damage. Drops from `problems` the orphans the
    /// current manifest lists and the documents whose entry changed since this store's
    /// manifest was read.
    pub fn discount_later_writes(&self, problems: &mut Problems) -> Result<()> {
        let Some(later) = self.load_catalog()? else {
            return Ok(());
        };
        let listed: std::collections::BTreeSet<&ChunkId> = later
            .catalog
            .docs
            .values()
            .flat_map(|e| e.chunk_ids.iter())
            .collect();
        problems.lexical_orphans.retain(|id| !listed.contains(id));
        problems.vector_orphans.retain(|id| !listed.contains(id));
        problems
            .docs_missing_chunks
            .retain(|doc| match DocId::new(doc) {
                Ok(id) => later.catalog.docs.get(&id) == self.recorded.catalog.docs.get(&id),
                Err(_) => true,
            });
        Ok(())
    }

    /// Bytes the store occupies on disk.
    pub fn disk_bytes(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            match std::fs::read_dir(p) {
                Ok(entries) => entries
                    .flatten()
                    .map(|e| {
                        let path = e.path();
                        if path.is_dir() {
                            walk(&path)
                        } else {
                            e.metadata().map(|m| m.len()).unwrap_or(0)
                        }
                    })
                    .sum(),
                Err(_) => 0,
            }
        }
        walk(&self.dir)
    }
}

/// Inconsistencies between manifest and indexes.
#[derive(Debug, Default, Serialize)]
pub struct Problems {
    /// Files in the lexical index folder that its committed state does not reference: left by
    /// a writer killed mid-commit (the next writing open removes them), or the work in progress
    /// of a writer running now.
    pub stray_files: Vec<String>,
    /// Chunks in the lexical index that the manifest does not list.
    pub lexical_orphans: Vec<ChunkId>,
    /// Chunks in the vector index that the manifest does not list.
    pub vector_orphans: Vec<ChunkId>,
    /// Documents with at least one chunk missing from an index.
    pub docs_missing_chunks: Vec<String>,
}

impl Problems {
    /// True when manifest and indexes agree.
    pub fn is_empty(&self) -> bool {
        self.stray_files.is_empty()
            && self.lexical_orphans.is_empty()
            && self.vector_orphans.is_empty()
            && self.docs_missing_chunks.is_empty()
    }
}
