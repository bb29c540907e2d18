//! The embedded store (`vectors = "ann"`, profile `local`): catalog, lexical index and vectors
//! all in the store folder, the vectors in the ANN index (usearch over SQLite), or, in a store
//! of an earlier version, in the vector file it is migrated from.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use zhiku_adapters_fs::vector_file;
use zhiku_adapters_memory::MemoryVectorIndex;
use zhiku_adapters_usearch::{AnnVectorIndex, RecordFile};
use zhiku_domain::EmbeddingSpace;
use zhiku_domain::ports::{ChunkRecords, IndexError, VectorIndex, VectorIndexExt};

use super::access::Access;
use super::catalog;
use super::lexical::{self, Records};
use super::opened::Store;
use super::request::Request;
use super::steps::{self, Opening, Vectors};
use crate::config::Config;

/// Opens the embedded store the request names. The lexical index reads its records from the
/// vector index; a reader without the dense route (no embedder) still reads them there, from
/// the vector store's file opened for records alone, and a writer without one keeps them in
/// the lexical index (a store built without vectors).
pub(super) fn open(request: Request<'_>) -> Result<Store> {
    let lock = steps::lock(&request)?;
    if request.access == Access::Rebuilding {
        steps::discard_for_rebuild(request.dir)?;
    }
    steps::remove_discarded(&request)?;
    let mut opening = Opening::start(request, lock, catalog::open)?;
    let records = opening.open_dense(|opening, space| {
        let request = &opening.request;
        let (index, records) = open_ann(
            request.dir,
            &request.config,
            space,
            request.access.is_read_only(),
        )
        .map_err(|e| request.rebuild_or(e))?;
        Ok(Some(Vectors {
            index,
            records: Some(records),
        }))
    })?;
    let request = &opening.request;
    let lexical = lexical::open(request, || match records {
        Some(records) => Ok(Some(records)),
        None if request.access.is_read_only() => records_alone(request),
        None => Ok(None),
    })?;
    opening.finish(lexical)
}

/// The chunk records of the vector store's file, opened for records alone.
fn records_alone(request: &Request<'_>) -> Result<Records> {
    Ok(RecordFile::open_read_only(request.dir)
        .map_err(|e| request.rebuild_or(e))?
        .map(|file| Arc::new(file) as Arc<dyn ChunkRecords>))
}

/// The embedded vector index in `dir`. A writing open moves the vectors of an earlier version's
/// `vectors.bin` into it first (one commit; the file is removed only after it, so a crash in
/// between leaves both and the next open, finding the index committed, just removes the file).
/// A read-only open of a store not migrated yet searches the vector file in memory, exactly; of
/// a store with no vectors yet, an empty index.
fn open_ann(
    dir: &Path,
    config: &Config,
    space: &EmbeddingSpace,
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
        migrate_vector_file(dir, &index, space)?;
    }
    Ok(both(Arc::new(index)))
}

/// Moves the vectors of `vectors.bin` in `dir` into `index` (unless it already committed
/// them), then removes the file.
fn migrate_vector_file(
    dir: &Path,
    index: &AnnVectorIndex,
    space: &EmbeddingSpace,
) -> Result<(), IndexError> {
    let legacy = dir.join(vector_file::FILE_NAME);
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
    Ok(())
}

/// A vector index in both of its roles: searched, and read for the lexical index's records.
type SearchedAndRead = (Arc<dyn VectorIndex>, Arc<dyn ChunkRecords>);

/// One vector index as both of its roles.
fn both<T: VectorIndex + ChunkRecords + 'static>(index: Arc<T>) -> SearchedAndRead {
    (index.clone(), index)
}
