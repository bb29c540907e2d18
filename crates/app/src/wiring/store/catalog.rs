//! The catalog step of an open: where the catalog of a store lives, and how much of it an
//! access loads.

use std::path::Path;

use anyhow::{Context, Result};
use zhiku_adapters_fs::manifest::ManifestFile;
use zhiku_adapters_memory::MemoryCatalogStore;
use zhiku_adapters_qdrant::QdrantCatalogStore;
use zhiku_adapters_sqlite::SqliteCatalog;
use zhiku_domain::ports::{CatalogCounts, CatalogStore, StoredCatalog};

use super::access::Access;
use super::request::Request;

/// The catalog store of the request's store: a catalog collection on the Qdrant deployment for
/// the cluster profile, `catalog.sqlite` in the folder of a store kept on disk ([`on_disk`]),
/// otherwise one in memory.
pub(super) fn open(request: &Request<'_>) -> Result<Box<dyn CatalogStore>> {
    if request.config.on_cluster() {
        let settings = &request.config.qdrant;
        let kb = crate::wiring::qdrant::kb_name_of(settings, request.dir)?;
        let store = QdrantCatalogStore::open(settings, &kb)
            .with_context(|| format!("the catalog on Qdrant at {}", settings.url))?;
        return Ok(Box::new(store));
    }
    if request.config.is_persistent() {
        on_disk(request)
    } else {
        Ok(Box::new(MemoryCatalogStore::new()))
    }
}

/// The catalog of the store in the request's folder: `catalog.sqlite`, after moving a
/// `manifest.json` of an earlier version into it (a writing open) or reading that manifest as
/// it is (a read-only one, [`read_only_on_disk`]).
fn on_disk(request: &Request<'_>) -> Result<Box<dyn CatalogStore>> {
    let dir = request.dir;
    if request.access.is_read_only() {
        return Ok(read_only_on_disk(dir));
    }
    let catalog = SqliteCatalog::in_store(dir);
    let manifest = ManifestFile::in_store(dir);
    if !manifest.path().exists() {
        return Ok(Box::new(catalog));
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

/// The catalog of the store in `dir`, to read: a `manifest.json` of an earlier version as it
/// is, else `catalog.sqlite`.
fn read_only_on_disk(dir: &Path) -> Box<dyn CatalogStore> {
    let manifest = ManifestFile::read_only_in_store(dir);
    if manifest.path().exists() {
        Box::new(manifest)
    } else {
        Box::new(SqliteCatalog::read_only_in_store(dir))
    }
}

/// The recorded catalog, as much of it as `access` needs: a writer loads everything; a
/// reading process never refreshes, so it does without the stamps; one that answers queries
/// does without every document row (the counts say what the rows hold).
pub(super) fn load(
    catalog_store: &dyn CatalogStore,
    access: Access,
) -> Result<(Option<StoredCatalog>, Option<CatalogCounts>)> {
    Ok(match access {
        Access::ToQuery => match catalog_store.load_header()? {
            Some((stored, counts)) => (Some(stored), Some(counts)),
            None => (None, None),
        },
        Access::ReadOnly => (catalog_store.load_for_reading()?, None),
        Access::Writing(_) | Access::Rebuilding => (catalog_store.load()?, None),
    })
}
