//! The catalog step of an open: where the catalog of a store lives, and how much of it an
//! access loads.

use anyhow::{Context, Result};
use zhiku_adapters_fs::manifest::ManifestFile;
use zhiku_adapters_memory::MemoryCatalogStore;
use zhiku_adapters_sqlite::SqliteCatalog;
use zhiku_domain::ports::{CatalogCounts, CatalogStore, StoredCatalog};

use super::access::Access;
use super::request::Request;

/// The catalog store of the request's store: `catalog.sqlite` in the folder of a store kept on
/// disk ([`on_disk`]), otherwise one in memory.
pub(super) fn open(request: &Request<'_>) -> Result<Box<dyn CatalogStore>> {
    if request.config.is_persistent() {
        on_disk(request)
    } else {
        Ok(Box::new(MemoryCatalogStore::new()))
    }
}

/// The catalog of the store in the request's folder: `catalog.sqlite`, after moving a
/// `manifest.json` of an earlier version into it (a writing open) or reading that manifest as
/// it is (a read-only one).
fn on_disk(request: &Request<'_>) -> Result<Box<dyn CatalogStore>> {
    let (dir, read_only) = (request.dir, request.access.is_read_only());
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
