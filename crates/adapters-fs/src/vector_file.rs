//! A [`MemoryVectorIndex`] persisted to one file, for the embedded store.
//!
//! Format (version 1): a first line of JSON `{"format": "zhiku-vectors/1", "space": …, "count": n}`,
//! then `n` records, each `u32` little-endian length, that many bytes of chunk-record JSON, and
//! `dims` little-endian `f32`s. [`commit`](VectorIndex::commit) writes a temporary file, syncs it
//! and renames it over the old one, so a crash leaves either the old or the new file whole.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zhiku_adapters_memory::MemoryVectorIndex;
use zhiku_domain::ports::{EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk, VectorIndex};
use zhiku_domain::{Chunk, ChunkId, ChunkRecord, DocId, Embedding, EmbeddingSpace, Filter};

use crate::atomic::write_atomically_with;

const FORMAT: &str = "zhiku-vectors/1";
const ADAPTER: &str = "memory-file";

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    space: EmbeddingSpace,
    count: usize,
}

fn backend(e: impl std::error::Error + Send + Sync + 'static) -> IndexError {
    IndexError::backend(ADAPTER, e)
}

/// A memory vector index loaded from and committed to a file.
#[derive(Debug)]
pub struct FileVectorIndex {
    path: PathBuf,
    inner: MemoryVectorIndex,
}

impl FileVectorIndex {
    /// Opens `path` for `space`, or starts empty when the file does not exist. A file written for
    /// another space is refused with [`IndexError::SpaceMismatch`].
    pub fn open(path: &Path, space: EmbeddingSpace) -> Result<Self, IndexError> {
        let inner = MemoryVectorIndex::new(space.clone());
        if path.exists() {
            let file = File::open(path).map_err(backend)?;
            let mut reader = BufReader::new(file);
            let mut first = String::new();
            reader.read_line(&mut first).map_err(backend)?;
            let header: Header = serde_json::from_str(&first).map_err(|e| {
                IndexError::backend(ADAPTER, format!("{}: bad header: {e}", path.display()))
            })?;
            if header.format != FORMAT {
                return Err(IndexError::ConfigMismatch {
                    what: "vector file format",
                    expected: header.format,
                    found: FORMAT.into(),
                });
            }
            if header.space != space {
                return Err(IndexError::SpaceMismatch {
                    expected: header.space.identity().to_string(),
                    found: space.identity().to_string(),
                });
            }
            let mut items = Vec::with_capacity(header.count);
            let mut len = [0u8; 4];
            let mut values = vec![0u8; space.dims() * 4];
            for _ in 0..header.count {
                reader.read_exact(&mut len).map_err(backend)?;
                let mut json = vec![0u8; u32::from_le_bytes(len) as usize];
                reader.read_exact(&mut json).map_err(backend)?;
                reader.read_exact(&mut values).map_err(backend)?;
                let record: ChunkRecord = serde_json::from_slice(&json).map_err(backend)?;
                let chunk = Chunk::from_record(record).map_err(backend)?;
                let floats = values
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                let embedding = space.embedding(floats, false).map_err(backend)?;
                items.push(EmbeddedChunk { chunk, embedding });
            }
            inner.upsert(&items)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            inner,
        })
    }

    /// The file this index commits to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn save(&self) -> Result<(), IndexError> {
        let rows = self.inner.snapshot();
        let header = Header {
            format: FORMAT.into(),
            space: self.inner.space().clone(),
            count: rows.len(),
        };
        write_atomically_with(&self.path, &mut |out| {
            serde_json::to_writer(&mut *out, &header)?;
            out.write_all(b"\n")?;
            for (chunk, values) in &rows {
                let json = serde_json::to_vec(&chunk.to_record())?;
                let len = u32::try_from(json.len()).map_err(std::io::Error::other)?;
                out.write_all(&len.to_le_bytes())?;
                out.write_all(&json)?;
                for v in values {
                    out.write_all(&v.to_le_bytes())?;
                }
            }
            Ok(())
        })
        .map_err(|e| backend(std::io::Error::other(format!("{e:#}"))))
    }
}

impl VectorIndex for FileVectorIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: ADAPTER,
            persistent: true,
            ..self.inner.capabilities()
        }
    }

    fn space(&self) -> &EmbeddingSpace {
        self.inner.space()
    }

    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        self.inner.upsert(items)
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        self.inner.delete_chunks(ids)
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        self.inner.delete_document(doc)
    }

    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.inner.search(query, k, filter)
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        self.inner.chunk_ids(doc)
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.inner.all_chunk_ids()
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        self.inner.embeddings(ids)
    }

    fn count(&self) -> Result<usize, IndexError> {
        self.inner.count()
    }

    fn commit(&self) -> Result<(), IndexError> {
        self.save()
    }
}
