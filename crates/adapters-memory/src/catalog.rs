//! The catalog kept in memory: the reference [`CatalogStore`].

use std::sync::{Arc, RwLock};

use zhiku_domain::ports::{CatalogError, CatalogStore, StoredCatalog};

/// A [`CatalogStore`] in memory. Clones are handles onto the same place: a save through one is
/// what a load through any other returns. A save swaps the whole value under a lock, so it is
/// atomic; nothing outlives the process.
#[derive(Debug, Clone, Default)]
pub struct MemoryCatalogStore {
    saved: Arc<RwLock<Option<StoredCatalog>>>,
}

impl MemoryCatalogStore {
    /// A store in which nothing was saved yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl CatalogStore for MemoryCatalogStore {
    fn load(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        Ok(self.saved.read().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn save(&self, catalog: &StoredCatalog) -> Result<(), CatalogError> {
        // Cloned before the lock is taken, so a panicking clone leaves the old value in place.
        let copy = catalog.clone();
        *self.saved.write().unwrap_or_else(|e| e.into_inner()) = Some(copy);
        Ok(())
    }
}
