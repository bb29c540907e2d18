//! The embedded store and the composition root: the only place that picks adapters.
//!
//! Layout of a store directory (default `.zhiku/` beside the knowledge base):
//!
//! ```text
//! manifest.json   policy, embedding space, analyzer, every document's revision, fingerprint,
//!                 chunk IDs and source path
//! lexical/        the tantivy index
//! vectors.bin     the vector file (when the store has an embedding space)
//! writer.lock     the store lock: held by the one process that may write (holds its pid)
//! ```
//!
//! Every process that writes (`index`, `index --rebuild`, a refreshing `search` or `ask`,
//! `serve`, `mcp`) opens the store with [`Store::open`], which takes the store lock first; a
//! second writer is refused with [`StoreLocked::Busy`], and destructive steps (the deletions of
//! `--rebuild`) happen only under the lock, which they never delete. Read-only commands open it
//! with [`Store::open_read_only`]: no lock, no repair, nothing written; they read the last
//! committed state (tantivy's committed meta, and the manifest and vector file, which are only
//! ever replaced by rename), beside a running writer or on a folder that cannot be written.
//!
//! With `vectors = "qdrant"` (profile `prod`) the vectors live in a Qdrant collection instead of
//! `vectors.bin` (see [`crate::qdrant`]); manifest and lexical index stay on disk. A server that
//! cannot be reached fails `index` before anything is recorded, and makes a read-only open fall
//! back to lexical retrieval with a notice.
//!
//! Writes are crash-safe: both indexes commit first, then the manifest is replaced atomically
//! (write, fsync, rename). On a writing open the store removes the files a killed tantivy
//! writer left behind, then checks that manifest, vectors and lexical index agree; on a mismatch
//! it repairs from the manifest in one step: documents with missing chunks are dropped from the
//! manifest and from both indexes (queued for re-indexing), then every chunk the manifest does
//! not list is deleted, so the first check after any crash finds the store consistent. A store built with another chunking policy,
//! embedding space or analyzer is refused with the difference and the rebuild command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};
use zhiku_adapters_memory::{FileVectorIndex, HashingEmbedder, MemoryVectorIndex};
use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::{Embedder, LexicalIndex, VectorIndex};
use zhiku_domain::usecases::{Catalog, Consistency, Indexer, Retriever};
use zhiku_domain::{ChunkId, DocId};

use crate::config::{Config, EmbedderKind, LexicalKind, VectorsKind};
pub use zhiku_adapters_fs::atomic::write_atomically;
pub use zhiku_adapters_fs::lock::{LOCK_FILE, StoreLock, StoreLocked};

/// The on-disk manifest format.
pub const MANIFEST_FORMAT: &str = "zhiku-store/1";

/// What the knowledge base was loaded from (plain data, owned by the domain).
pub use zhiku_domain::ports::Origin;

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// What was indexed.
    pub catalog: Catalog,
    /// Each document's source path (relative to the origin).
    pub sources: BTreeMap<DocId, String>,
    /// Where the documents came from.
    pub origin: Option<Origin>,
}

/// The store refused to open because it was built with another configuration.
#[derive(Debug, thiserror::Error)]
#[error(
    "the store at {store} was built with {what} {recorded}, but this run uses {requested}.\n  \
     Rebuild it: zhiku index --rebuild{kb_flag}"
)]
pub struct NeedsRebuild {
    /// Store directory.
    pub store: String,
    /// What differs.
    pub what: String,
    /// Recorded value.
    pub recorded: String,
    /// Requested value.
    pub requested: String,
    /// ` --kb DIR` when known.
    pub kb_flag: String,
}

/// The vector server cannot be reached, so nothing can be indexed now.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot index: the vector index is unreachable ({reason}); nothing was recorded, run zhiku index again once the server is back"
)]
pub struct VectorsUnavailable {
    /// The adapter's error.
    pub reason: String,
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

/// An opened knowledge base: its adapters and manifest.
pub struct Store {
    /// Store directory.
    pub dir: PathBuf,
    /// The resolved configuration.
    pub config: Config,
    /// The manifest (in memory; [`Store::save_manifest`] persists it).
    pub manifest: Manifest,
    /// The lexical index.
    pub lexical: TantivyLexicalIndex,
    /// Embedder and vector index, when the dense route is available.
    pub dense: Option<(Box<dyn Embedder>, Arc<dyn VectorIndex>)>,
    /// Why the dense route is unavailable, when it is.
    pub dense_notice: Option<String>,
    /// The adapters picked and why, for `zhiku status`.
    pub picked: Vec<(String, String)>,
    /// What the consistency check repaired on open.
    pub repair: Repair,
    /// The store lock, `None` for a read-only open (or a store that is not on disk).
    lock: Option<StoreLock>,
    read_only: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("picked", &self.picked)
            .finish()
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
    }
}

fn manifest_path(dir: &Path) -> PathBuf {
    dir.join("manifest.json")
}

fn read_manifest(dir: &Path) -> Result<Option<Manifest>> {
    let path = manifest_path(dir);
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let manifest: Manifest = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a valid zhiku manifest; rebuild with zhiku index --rebuild",
            path.display()
        )
    })?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(anyhow!(
            "{} has format {:?}, this build reads {MANIFEST_FORMAT:?}; rebuild with zhiku index --rebuild",
            path.display(),
            manifest.format
        ));
    }
    Ok(Some(manifest))
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
        Self::open_with(dir, config, purpose, false, rebuild, kb_hint)
    }

    /// Opens the last committed state of the store in `dir` for reading: no lock, no repair,
    /// nothing created or written, so it works beside a running writer and on a read-only
    /// folder. A missing store reads as empty.
    pub fn open_read_only(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_with(dir, config, Purpose::Read, true, false, kb_hint)
    }

    fn open_with(
        dir: &Path,
        config: Config,
        purpose: Purpose,
        read_only: bool,
        rebuild: bool,
        kb_hint: Option<&Path>,
    ) -> Result<Self> {
        let persistent = config.lexical == LexicalKind::Disk || config.vectors == VectorsKind::File;
        let lock = if persistent && !read_only {
            Some(StoreLock::acquire(dir)?)
        } else {
            None
        };
        if rebuild && read_only {
            return Err(anyhow!("a read-only open cannot rebuild the store"));
        }
        let discarded = dir.join("lexical.discarded");
        if rebuild {
            if config.vectors == VectorsKind::Qdrant {
                crate::qdrant::drop_before_rebuild(&config.qdrant, dir)?;
            }
            // Everything but the lock, which this process holds. The lexical folder is first
            // renamed away in one step: a kill while deleting it file by file must not leave a
            // meta.json that names deleted segments.
            let lexical = dir.join("lexical");
            if lexical.exists() {
                if discarded.exists() {
                    std::fs::remove_dir_all(&discarded)
                        .with_context(|| format!("cannot remove {}", discarded.display()))?;
                }
                std::fs::rename(&lexical, &discarded)
                    .with_context(|| format!("cannot move {} away", lexical.display()))?;
            }
            for name in [
                "manifest.json",
                "manifest.tmp",
                "vectors.bin",
                "vectors.tmp",
            ] {
                let path = dir.join(name);
                if path.exists() {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {}", path.display()))?;
                }
            }
        }
        // What a rebuild moved away (and maybe a killed rebuild left) goes under the lock.
        if !read_only && discarded.exists() {
            std::fs::remove_dir_all(&discarded)
                .with_context(|| format!("cannot remove {}", discarded.display()))?;
        }
        let kb_flag = kb_hint
            .map(|k| format!(" --kb {}", k.display()))
            .unwrap_or_default();
        let needs_rebuild = |what: &str, recorded: String, requested: String| NeedsRebuild {
            store: dir.display().to_string(),
            what: what.to_string(),
            recorded,
            requested,
            kb_flag: kb_flag.clone(),
        };

        let mut picked = vec![("profile".to_string(), config.profile.clone())];
        let (embedder, embedder_why) = resolve_embedder(&config);
        picked.push(("embedder".into(), embedder_why.clone()));
        let policy = config.policy()?;
        let recorded = if persistent {
            read_manifest(dir)?
        } else {
            None
        };
        let requested_space = embedder.as_ref().map(|e| e.space().identity().to_string());

        // The lexical index: always present.
        let lexical = match config.lexical {
            LexicalKind::Ram => TantivyLexicalIndex::in_ram(LexicalConfig::default())?,
            LexicalKind::Disk => {
                let path = dir.join("lexical");
                let opened = if read_only {
                    TantivyLexicalIndex::open_read_only(&path, LexicalConfig::default())
                } else {
                    TantivyLexicalIndex::open_or_create(&path, LexicalConfig::default())
                };
                opened.map_err(|e| match e {
                    zhiku_domain::ports::IndexError::ConfigMismatch {
                        what,
                        expected,
                        found,
                    } => {
                        anyhow!(needs_rebuild(what, expected, found))
                    }
                    other => anyhow!(other),
                })?
            }
        };
        picked.push((
            "lexical".into(),
            format!(
                "tantivy {} ({})",
                if config.lexical == LexicalKind::Disk {
                    "on disk"
                } else {
                    "in RAM"
                },
                lexical.analyzer()
            ),
        ));

        let mut dense_notice = None;
        let mut manifest = match recorded {
            Some(m) => {
                let c = &m.catalog;
                if c.policy != policy {
                    return Err(needs_rebuild(
                        "chunking policy",
                        c.policy.describe(),
                        policy.describe(),
                    )
                    .into());
                }
                if c.analyzer != lexical.analyzer() {
                    return Err(needs_rebuild(
                        "lexical analyzer",
                        c.analyzer.clone(),
                        lexical.analyzer(),
                    )
                    .into());
                }
                match (&c.space, &requested_space, purpose) {
                    (a, b, _) if a == b => {}
                    (Some(recorded), None, Purpose::Read) => {
                        dense_notice = Some(format!(
                            "the store's vectors ({recorded}) cannot be queried: {embedder_why}"
                        ));
                    }
                    (None, Some(_), Purpose::Read) => {
                        dense_notice = Some("the store was built without vectors (lexical only); `zhiku index --rebuild` adds the dense route".into());
                    }
                    (recorded, requested, _) => {
                        let show = |s: &Option<String>| {
                            s.clone()
                                .unwrap_or_else(|| format!("no vectors ({embedder_why})"))
                        };
                        return Err(needs_rebuild(
                            "embedding space",
                            show(recorded),
                            show(requested),
                        )
                        .into());
                    }
                }
                m
            }
            None => Manifest {
                format: MANIFEST_FORMAT.into(),
                catalog: Catalog::new(policy, requested_space.clone(), lexical.analyzer()),
                sources: BTreeMap::new(),
                origin: None,
            },
        };
        if embedder.is_none() && dense_notice.is_none() {
            dense_notice = Some(embedder_why.clone());
        }

        // Qdrant first: an unreachable server turns the dense route off for reading and stops
        // writing before anything is touched.
        let qdrant_vectors = match (&embedder, &manifest.catalog.space, config.vectors) {
            (Some(e), Some(space), VectorsKind::Qdrant) if space == e.space().identity() => {
                crate::qdrant::open_for_store(
                    &config.qdrant,
                    dir,
                    e.space(),
                    &policy.fingerprint(),
                    purpose == Purpose::Read,
                    &mut picked,
                    &mut dense_notice,
                )
                .map_err(|e| {
                    match e.downcast::<zhiku_domain::ports::IndexError>() {
                        Ok(zhiku_domain::ports::IndexError::SpaceMismatch { expected, found }) => {
                            anyhow!(needs_rebuild("embedding space", expected, found))
                        }
                        Ok(zhiku_domain::ports::IndexError::ConfigMismatch {
                            what,
                            expected,
                            found,
                        }) => anyhow!(needs_rebuild(what, expected, found)),
                        Ok(other) => anyhow!(other),
                        Err(other) => other,
                    }
                })?
            }
            _ => None,
        };
        let embedder =
            embedder.filter(|_| config.vectors != VectorsKind::Qdrant || qdrant_vectors.is_some());

        // The vector index, in the space the manifest records.
        let dense: Option<(Box<dyn Embedder>, Arc<dyn VectorIndex>)> = match (
            embedder,
            &manifest.catalog.space,
        ) {
            (Some(embedder), Some(space)) if space == embedder.space().identity() => {
                let vectors: Arc<dyn VectorIndex> = match config.vectors {
                    VectorsKind::Memory => {
                        Arc::new(MemoryVectorIndex::new(embedder.space().clone()))
                    }
                    VectorsKind::File => {
                        let path = dir.join("vectors.bin");
                        Arc::new(
                            FileVectorIndex::open(&path, embedder.space().clone()).map_err(
                                |e| match e {
                                    zhiku_domain::ports::IndexError::SpaceMismatch {
                                        expected,
                                        found,
                                    } => {
                                        anyhow!(needs_rebuild("embedding space", expected, found))
                                    }
                                    other => anyhow!(other),
                                },
                            )?,
                        )
                    }
                    VectorsKind::Qdrant => match &qdrant_vectors {
                        Some(index) => index.clone(),
                        None => {
                            return Err(anyhow!(
                                "profile {} asks for Qdrant vectors, but the Qdrant collection is not open; see the notice above, or use --profile local",
                                config.profile
                            ));
                        }
                    },
                };
                picked.push((
                    "vectors".into(),
                    format!("{} in {}", vectors.capabilities().adapter, embedder.space()),
                ));
                Some((embedder, vectors))
            }
            _ => {
                picked.push(("vectors".into(), "none: the dense route is off".into()));
                None
            }
        };
        if dense.is_some() {
            dense_notice = None;
        }
        if manifest.catalog.space.is_none() && manifest.catalog.docs.is_empty() {
            manifest.catalog.space = dense
                .as_ref()
                .map(|(e, _)| e.space().identity().to_string());
        }

        let mut store = Store {
            dir: dir.to_path_buf(),
            config,
            manifest,
            lexical,
            dense,
            dense_notice,
            picked,
            repair: Repair::default(),
            lock,
            read_only,
        };
        if !read_only {
            let stray_files_removed = store.lexical.swept_files().to_vec();
            store.repair = store.check_and_repair()?;
            store.repair.stray_files_removed = stray_files_removed;
        }
        Ok(store)
    }

    /// True when opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// True when this process holds the store lock.
    pub fn holds_lock(&self) -> bool {
        self.lock.is_some()
    }

    /// Compares manifest, lexical index and vectors chunk by chunk and repairs from the manifest
    /// in one step: documents with a chunk missing from an index are dropped from the manifest
    /// and from both indexes (the next `zhiku index` re-indexes them), then every chunk the
    /// manifest no longer lists is deleted. Indexes commit before the manifest is replaced, so a
    /// crash during the repair leaves a state the next repair finishes.
    pub fn check_and_repair(&mut self) -> Result<Repair> {
        if self.read_only {
            return Err(anyhow!(
                "the store at {} was opened read-only and cannot be repaired",
                self.dir.display()
            ));
        }
        // A writing open lists no stray files (it swept them): the repair is about chunks.
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let (catalog, done) =
            Consistency::new(&self.lexical, vectors).repair(&self.manifest.catalog)?;
        if done.is_empty() {
            return Ok(Repair::default());
        }
        self.manifest.catalog = catalog;
        for id in &done.docs_requeued {
            self.manifest.sources.remove(id);
        }
        if self.is_persistent() {
            self.save_manifest()?;
        }
        Ok(Repair {
            orphans_removed: done.orphans_removed,
            docs_requeued: done.docs_requeued.iter().map(ToString::to_string).collect(),
            stray_files_removed: Vec::new(),
        })
    }

    /// A full consistency check: every manifest chunk in every index, nothing else there.
    pub fn problems(&self) -> Result<Problems> {
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let chunks = Consistency::new(&self.lexical, vectors).check(&self.manifest.catalog)?;
        // A writing open swept what a killed writer left before its first write (reported in
        // `repair`); whatever is unreferenced later is this process's own work in progress (a
        // commit's background merge), not damage. Only a read-only open lists stray files.
        let stray_files = if self.config.lexical == LexicalKind::Disk && self.read_only {
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
        let Some(later) = read_manifest(&self.dir)? else {
            return Ok(());
        };
        let listed: BTreeSet<&ChunkId> = later
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
                Ok(id) => later.catalog.docs.get(&id) == self.manifest.catalog.docs.get(&id),
                Err(_) => true,
            });
        Ok(())
    }

    /// True when the store lives on disk.
    pub fn is_persistent(&self) -> bool {
        self.config.lexical == LexicalKind::Disk || self.config.vectors == VectorsKind::File
    }

    /// Persists the manifest atomically (call only after both indexes committed).
    pub fn save_manifest(&self) -> Result<()> {
        if !self.is_persistent() {
            return Ok(());
        }
        if self.read_only {
            return Err(anyhow!(
                "the store at {} was opened read-only; its manifest cannot be written",
                self.dir.display()
            ));
        }
        let json = serde_json::to_vec_pretty(&self.manifest)?;
        write_atomically(&manifest_path(&self.dir), &json)
    }

    /// An indexer over this store's adapters.
    pub fn indexer(&self) -> Result<Indexer<'_>> {
        let policy = self.config.policy()?;
        Ok(match &self.dense {
            Some((embedder, vectors)) => {
                Indexer::hybrid(policy, embedder.as_ref(), vectors.as_ref(), &self.lexical)?
            }
            None => Indexer::lexical_only(policy, &self.lexical),
        })
    }

    /// A retriever over this store's routes, checking hits against `source`.
    pub fn retriever<'a>(
        &'a self,
        source: &'a dyn zhiku_domain::ports::SourceStore,
    ) -> Retriever<'a> {
        let r = Retriever::new(source)
            .with_lexical(&self.lexical)
            .with_candidates(self.config.candidates);
        match &self.dense {
            Some((embedder, vectors)) => r.with_dense(embedder.as_ref(), vectors.as_ref()),
            None => r.without_dense(
                self.dense_notice
                    .clone()
                    .unwrap_or_else(|| "no embedder".into()),
            ),
        }
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
