//! An opened store as the composition root keeps it: the service's store, with the folder it
//! lives in, the configuration that picked its adapters and what its open repaired.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zhiku_domain::ports::Embedder;
use zhiku_service::Repair;

use crate::config::Config;

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
    pub(super) embedder: Option<Arc<dyn Embedder>>,
    pub(super) core: zhiku_service::Store,
    pub(super) holds_lock: bool,
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

impl Store {
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
