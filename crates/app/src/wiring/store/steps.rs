//! The steps every opener of a store shares, in the order they run: [`lock`] the store,
//! [`discard_for_rebuild`] and [`remove_discarded`], then an [`Opening`]:
//! [`Opening::start`] picks the embedder, opens and loads the catalog and checks it is
//! compatible, [`Opening::open_dense`] opens the dense route, and [`Opening::finish`] hands the
//! ports, with the lexical index, to the service, which repairs a writing open.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use zhiku_adapters_fs::lock::{StoreLock, refuse_linked_entries};
use zhiku_adapters_fs::vector_file;
use zhiku_adapters_sqlite::CATALOG_FILE;
use zhiku_domain::EmbeddingSpace;
use zhiku_domain::ports::{
    CatalogCounts, CatalogStore, Embedder, LexicalIndex, StoredCatalog, VectorIndex,
};
use zhiku_domain::usecases::Catalog;
use zhiku_service::{Dense, Parts, Repair, StrayFiles};

use super::access::Access;
use super::catalog;
use super::compatible::check_compatible;
use super::embedder::{SharedEmbedder, resolve_embedder};
use super::lexical::{Lexical, Records};
use super::opened::Store;
use super::request::Request;

/// A vector index as the dense route uses it: searched, and maybe read for the lexical
/// index's records.
pub(super) struct Vectors {
    /// The index.
    pub(super) index: Arc<dyn VectorIndex>,
    /// The same index as the store of chunk records, when it keeps them.
    pub(super) records: Records,
}

/// Refuses a store kept on disk with a symbolic link anywhere inside, before anything is
/// opened (the libraries below open their files by name and would follow it), then takes its
/// lock for a writing open. A store that lives in memory has neither.
pub(super) fn lock(request: &Request<'_>) -> Result<Option<StoreLock>> {
    if !request.config.is_persistent() {
        return Ok(None);
    }
    if request.config.on_cluster() {
        // Writers on any machine take turns through the catalog's lease on the cluster; the
        // folder only names the knowledge base when `[qdrant] knowledge_base` does not.
        std::fs::create_dir_all(request.dir)
            .with_context(|| format!("cannot create store {}", request.dir.display()))?;
        return Ok(None);
    }
    refuse_linked_entries(request.dir)?;
    if request.access.is_read_only() {
        return Ok(None);
    }
    Ok(Some(StoreLock::acquire(request.dir)?))
}

/// Discards everything in the store folder but the lock, under the lock: the lexical folder in
/// one rename (a kill while deleting it file by file must not leave a meta.json naming deleted
/// segments), then the catalog and the vector index. What a kind keeps elsewhere (a server's
/// collections) its opener discards first, so that a failure there changes nothing.
pub(super) fn discard_for_rebuild(dir: &Path) -> Result<()> {
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

/// Removes, under the lock of a writing open, what a rebuild moved away (and maybe a killed
/// rebuild left).
pub(super) fn remove_discarded(request: &Request<'_>) -> Result<()> {
    let discarded = request.dir.join("lexical.discarded");
    if !request.access.is_read_only() && discarded.exists() {
        std::fs::remove_dir_all(&discarded)
            .with_context(|| format!("cannot remove {}", discarded.display()))?;
    }
    Ok(())
}

/// A store being opened: what the steps so far picked, loaded and opened, for the next.
pub(super) struct Opening<'a> {
    /// What the open is asked for.
    pub(super) request: Request<'a>,
    /// The store lock, for a writing open of a store on disk.
    lock: Option<StoreLock>,
    /// The adapters picked and why (`port`, `choice`), in the order `status` shows them.
    pub(super) picked: Vec<(String, String)>,
    /// Why the dense route is missing, when it is.
    pub(super) notice: Option<String>,
    /// The configured embedder, when it could be loaded.
    embedder: Option<Arc<dyn Embedder>>,
    catalog_store: Box<dyn CatalogStore>,
    /// The catalog as last saved (or empty, for a new store).
    recorded: StoredCatalog,
    /// What the catalog's rows hold, when only its header was loaded.
    counts: Option<CatalogCounts>,
    /// The dense route, once opened.
    dense: Option<Dense>,
}

impl<'a> Opening<'a> {
    /// Picks the embedder, opens the catalog store with `open_catalog` and loads as much of the
    /// catalog as the access needs, refusing one built with another configuration
    /// ([`NeedsRebuild`]); a reader that cannot use the recorded space gets a notice instead.
    pub(super) fn start(
        request: Request<'a>,
        lock: Option<StoreLock>,
        open_catalog: impl FnOnce(&Request<'_>) -> Result<Box<dyn CatalogStore>>,
    ) -> Result<Self> {
        let mut picked = vec![("profile".to_string(), request.config.profile.clone())];
        let (embedder, embedder_why) = resolve_embedder(&request.config);
        picked.push(("embedder".into(), embedder_why.clone()));
        let catalog_store = open_catalog(&request)?;
        if request.config.on_cluster() {
            let kb = crate::wiring::qdrant::kb_name_of(&request.config.qdrant, request.dir)?;
            picked.push((
                "catalog".into(),
                format!(
                    "qdrant collection {} on {} (writers take turns through its lease)",
                    request.config.qdrant.catalog_collection_name(&kb),
                    request.config.qdrant.url
                ),
            ));
        }
        let requested = Catalog::new(
            request.config.policy,
            embedder.as_ref().map(|e| e.space().identity().to_string()),
            zhiku_adapters_tantivy::ANALYZER_IDENTITY.to_string(),
        );
        let (loaded, counts) = catalog::load(catalog_store.as_ref(), request.access)?;
        let (recorded, mut notice) = match loaded {
            Some(recorded) => {
                let notice = check_compatible(
                    &recorded.catalog,
                    &requested,
                    request.access.purpose(),
                    &embedder_why,
                    &|what, recorded, requested| request.needs_rebuild(what, recorded, requested),
                )?;
                (recorded, notice)
            }
            None => (StoredCatalog::empty(requested), None),
        };
        if embedder.is_none() && notice.is_none() {
            notice = Some(embedder_why);
        }
        Ok(Self {
            request,
            lock,
            picked,
            notice,
            embedder: embedder.map(Arc::from),
            catalog_store,
            recorded,
            counts,
            dense: None,
        })
    }

    /// Opens the dense route when the embedder speaks the space the catalog records: the
    /// vector index `open_vectors` opens for that space, or none when it cannot be opened now
    /// and the store may open without it (`open_vectors` says why in `notice`). Returns the
    /// store of chunk records the lexical index may read.
    pub(super) fn open_dense(
        &mut self,
        open_vectors: impl FnOnce(&mut Self, &EmbeddingSpace) -> Result<Option<Vectors>>,
    ) -> Result<Records> {
        let recorded_space = self.recorded.catalog.space.as_deref();
        let Some(embedder) = self
            .embedder
            .clone()
            .filter(|e| recorded_space == Some(e.space().identity()))
        else {
            return Ok(self.dense_off());
        };
        let space = embedder.space().clone();
        let Some(Vectors { index, records }) = open_vectors(self, &space)? else {
            return Ok(self.dense_off());
        };
        self.picked.push((
            "vectors".into(),
            format!("{} in {}", index.capabilities().adapter, space),
        ));
        self.dense = Some((Box::new(SharedEmbedder(embedder)), index));
        Ok(records)
    }

    /// Records that the store opens without a dense route.
    fn dense_off(&mut self) -> Records {
        self.picked
            .push(("vectors".into(), "none: the dense route is off".into()));
        None
    }

    /// Hands the ports opened so far and `lexical` to the service; a writing open then has the
    /// service check the store and repair it from its catalog.
    pub(super) fn finish(mut self, lexical: Lexical) -> Result<Store> {
        self.picked.push(("lexical".into(), lexical.described));
        let access = self.request.access;
        let mut store = self.into_store(lexical.index, lexical.stray_files);
        if !access.is_read_only() {
            store.repair = Repair {
                stray_files_removed: lexical.swept,
                reanalysed: lexical.reanalysed,
                ..store.core.check_and_repair()?
            };
        }
        Ok(store)
    }

    /// The opened store: the service's, with the reranker, the lock and what only the
    /// composition root keeps.
    fn into_store(
        mut self,
        lexical: Arc<dyn LexicalIndex>,
        stray_files: Option<StrayFiles>,
    ) -> Store {
        if self.dense.is_some() {
            self.notice = None;
        }
        self.record_space_of_new_store();
        let reranker = crate::wiring::rerank::reranker_for(&self.request.config);
        if let Some(reranker) = &reranker {
            self.picked.push((
                "reranker".into(),
                format!(
                    "{} (top {})",
                    reranker.name(),
                    self.request.config.rerank_depth
                ),
            ));
        }
        let embedder = self.embedder.filter(|_| self.dense.is_some());
        let parts = Parts {
            settings: self.request.config.service_settings(),
            lexical,
            dense: self.dense,
            dense_notice: self.notice,
            picked: self.picked,
            recorded: self.recorded,
            catalog_store: self.catalog_store,
        };
        let mut core = match self.request.access {
            Access::Writing(_) | Access::Rebuilding => zhiku_service::Store::writing(parts),
            Access::ReadOnly | Access::ToQuery => zhiku_service::Store::read_only(parts),
        };
        if let Some(reranker) = reranker {
            core = core.with_reranker(reranker);
        }
        let holds_lock = self.lock.is_some();
        if let Some(lock) = self.lock {
            core = core.holding(lock);
        }
        if let Some(counts) = self.counts {
            core = core.header_only(counts);
        }
        if let Some(list) = stray_files {
            core = core.listing_stray_files(list);
        }
        Store {
            dir: self.request.dir.to_path_buf(),
            config: self.request.config,
            repair: Repair::default(),
            embedder,
            core,
            holds_lock,
        }
    }

    /// A store with no document and no recorded space takes the dense route's.
    fn record_space_of_new_store(&mut self) {
        let no_docs = self
            .counts
            .map_or(self.recorded.catalog.docs.is_empty(), |c| c.documents == 0);
        if self.recorded.catalog.space.is_none() && no_docs {
            self.recorded.catalog.space = self
                .dense
                .as_ref()
                .map(|(e, _)| e.space().identity().to_string());
        }
    }
}
