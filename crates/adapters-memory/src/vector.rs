//! Exact cosine search in memory.

use std::sync::RwLock;

use zhiku_domain::ports::{
    ChunkRecords, EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk, VectorIndex,
    VectorIndexExt, rank_and_truncate,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Embedding, EmbeddingSpace, Filter};

use crate::table::{Row, Table};

/// An exact (brute-force) vector index: every search scores every stored vector that passes the
/// filter, so its results are the ground truth approximate indexes are measured against.
#[derive(Debug)]
pub struct MemoryVectorIndex {
    space: EmbeddingSpace,
    table: RwLock<Table<Vec<f32>>>,
}

impl MemoryVectorIndex {
    /// An empty index for `space`.
    pub fn new(space: EmbeddingSpace) -> Self {
        Self {
            space,
            table: RwLock::new(Table::default()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table<Vec<f32>>> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table<Vec<f32>>> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of every stored chunk and its vector, in chunk-ID order.
    pub fn snapshot(&self) -> Vec<(Chunk, Vec<f32>)> {
        self.read()
            .rows
            .values()
            .map(|row| (row.chunk.clone(), row.payload.clone()))
            .collect()
    }
}

/// Scales `values` to unit length (zero vectors stay zero).
fn normalised(values: &[f32]) -> Vec<f32> {
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm == 0.0 {
        values.to_vec()
    } else {
        values.iter().map(|v| v / norm).collect()
    }
}

impl VectorIndex for MemoryVectorIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: "memory",
            persistent: false,
            max_k: 10_000,
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        // Validate everything first so a refused batch changes nothing.
        for item in items {
            self.check_space(&item.embedding)?;
        }
        let mut table = self.write();
        for item in items {
            table.put(Row::new(
                item.chunk.clone(),
                item.embedding.values().to_vec(),
            ));
        }
        Ok(())
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        let mut table = self.write();
        Ok(chunks.iter().filter(|c| table.update(c)).count())
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        let mut table = self.write();
        for id in ids {
            table.remove(id);
        }
        Ok(())
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        self.write().remove_document(doc);
        Ok(())
    }

    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        self.check_space(query)?;
        let q = normalised(query.values());
        let table = self.read();
        let mut hits: Vec<ScoredChunk> = table
            .rows
            .values()
            .filter(|row| row.passes(filter))
            .map(|row| ScoredChunk {
                chunk: row.chunk.clone(),
                score: zhiku_domain::cosine(&q, &row.payload),
            })
            .collect();
        rank_and_truncate(&mut hits, k);
        Ok(hits)
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        Ok(self.read().ids_of(doc))
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        Ok(self.read().all_ids())
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        let table = self.read();
        ids.iter()
            .map(|id| {
                table
                    .rows
                    .get(id)
                    .map(|row| {
                        self.space
                            .embedding(row.payload.clone(), false)
                            .map_err(|e| IndexError::backend("memory", e))
                    })
                    .transpose()
            })
            .collect()
    }

    fn count(&self) -> Result<usize, IndexError> {
        Ok(self.read().len())
    }

    fn commit(&self) -> Result<(), IndexError> {
        Ok(())
    }
}

impl ChunkRecords for MemoryVectorIndex {
    fn records(&self, ids: &[ChunkId]) -> Result<Vec<Option<Chunk>>, IndexError> {
        let table = self.read();
        Ok(ids
            .iter()
            .map(|id| table.rows.get(id).map(|row| row.chunk.clone()))
            .collect())
    }
}
