//! The store whose vectors live in memory (`vectors = "memory"`, profile `dev`): gone when the
//! process ends. Its catalog and lexical index live in memory too, unless the configuration
//! keeps the lexical index on disk (then the catalog is on disk beside it).

use std::sync::Arc;

use anyhow::Result;
use zhiku_adapters_memory::MemoryVectorIndex;

use super::access::Access;
use super::catalog;
use super::lexical;
use super::opened::Store;
use super::request::Request;
use super::steps::{self, Opening, Vectors};

/// Opens the in-memory store the request names.
pub(super) fn open(request: Request<'_>) -> Result<Store> {
    let lock = steps::lock(&request)?;
    if request.access == Access::Rebuilding {
        steps::discard_for_rebuild(request.dir)?;
    }
    steps::remove_discarded(&request)?;
    let mut opening = Opening::start(request, lock, catalog::open)?;
    opening.open_dense(|_, space| {
        Ok(Some(Vectors {
            index: Arc::new(MemoryVectorIndex::new(space.clone())),
            records: None,
        }))
    })?;
    let lexical = lexical::open(&opening.request, || Ok(None))?;
    opening.finish(lexical)
}
