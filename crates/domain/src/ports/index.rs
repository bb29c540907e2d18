//! The two index ports: dense vectors and lexical (BM25) text.

use crate::contracts::{Chunk, ChunkId, DocId, Embedding, EmbeddingSpace, Filter};

use super::errors::IndexError;

/// What an index adapter can do. Capabilities are data: an operation or argument an adapter
/// does not support is refused with [`IndexError::Unsupported`], never silently ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCapabilities {
    /// Adapter name, e.g. `memory`, `tantivy`, `qdrant`.
    pub adapter: &'static str,
    /// Survives a restart once committed.
    pub persistent: bool,
    /// Largest `k` a search accepts.
    pub max_k: usize,
    /// Largest number of items one `upsert` call accepts, if bounded.
    pub upsert_max_batch: Option<usize>,
    /// Filters on document ids are applied inside the search.
    pub filter_doc_ids: bool,
    /// Filters on locale are applied inside the search.
    pub filter_locale: bool,
    /// Filters on metadata equality are applied inside the search.
    pub filter_metadata: bool,
}

impl IndexCapabilities {
    /// Checks `k` and the filter against these capabilities before a search runs.
    pub fn check_search(&self, k: usize, filter: &Filter) -> Result<(), IndexError> {
        if k == 0 {
            return Err(IndexError::InvalidInput("k must be at least 1".into()));
        }
        if k > self.max_k {
            return Err(IndexError::InvalidInput(format!(
                "k = {k} exceeds the {} adapter's maximum of {}",
                self.adapter, self.max_k
            )));
        }
        let unsupported = |operation| {
            Err(IndexError::Unsupported {
                adapter: self.adapter,
                operation,
            })
        };
        if filter.doc_ids().is_some() && !self.filter_doc_ids {
            return unsupported("filtering by document id");
        }
        if filter.locale().is_some() && !self.filter_locale {
            return unsupported("filtering by locale");
        }
        if filter.metadata().next().is_some() && !self.filter_metadata {
            return unsupported("filtering by metadata");
        }
        Ok(())
    }
}

/// A chunk returned by a search, with the index's score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredChunk {
    /// The stored chunk, with all its attributes.
    pub chunk: Chunk,
    /// Similarity (cosine for vectors, BM25 for text).
    pub score: f32,
}

/// A chunk and its vector, ready to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Its vector.
    pub embedding: Embedding,
}

/// A dense vector index of chunks in one embedding space.
///
/// # Contract
///
/// - An index holds vectors of exactly one [`EmbeddingSpace`], fixed when it is created or
///   opened. Upserting or searching with an [`Embedding`] of another space or dimension MUST fail
///   with [`IndexError::SpaceMismatch`] and change nothing.
/// - [`upsert`](Self::upsert) stores each chunk under its [`ChunkId`]; upserting an ID that is
///   present MUST replace the stored chunk and vector (never duplicate it).
/// - Writes MAY become visible before [`commit`](Self::commit) and MUST be visible to searches
///   and durable (for persistent adapters) once `commit` returns. A failed write or commit MUST
///   leave the previously committed state readable.
/// - [`delete_document`](Self::delete_document) removes every chunk of the document and nothing
///   else; [`delete_chunks`](Self::delete_chunks) removes the listed chunks. Deleting something
///   absent succeeds.
/// - [`search`](Self::search) returns at most `k` chunks that pass the [`Filter`] (applied inside
///   the search, before ranking, never after), ordered by descending score with ties broken by
///   ascending chunk ID. `k == 0` or `k > capabilities().max_k` is
///   [`IndexError::InvalidInput`]; a filter condition the adapter cannot apply is
///   [`IndexError::Unsupported`]. An empty index returns an empty list.
/// - The score is the cosine similarity of the query and the stored vector.
/// - [`update_records`](Self::update_records) replaces the stored record (attributes, access,
///   positions) of each listed chunk that is stored, keeping its vector, and skips the others;
///   it MUST NOT re-embed or rewrite vectors, and a search after the usual visibility rules
///   filters on the new attributes (an access change takes effect without re-embedding).
/// - Reader filters ([`Filter::readers`]) apply like every other condition: inside the search,
///   so a person's top `k` is the top `k` of what they may read.
/// - [`all_chunk_ids`](Self::all_chunk_ids) MUST list every stored chunk, whatever its document
///   or scope, exactly once, sorted ascending: after committed upserts and deletes it equals the
///   IDs that survived. It is how a consistency check finds chunks no catalog lists.
/// - [`generation`](Self::generation) MAY return `None` (the adapter keeps no generation). When
///   it returns a number, that number MUST change with every commit that changed what is stored
///   and MUST be read in O(1) (no scan); a handle reopened onto the same place MUST return the
///   number the last commit left. The catalog records it at each save, so an open whose indexes
///   still carry the recorded generations skips the chunk-by-chunk consistency check.
pub trait VectorIndex: Send + Sync {
    /// What this adapter supports.
    fn capabilities(&self) -> IndexCapabilities;

    /// The space of the stored vectors.
    fn space(&self) -> &EmbeddingSpace;

    /// Inserts or replaces chunks with their vectors.
    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError>;

    /// Replaces the records of stored chunks, keeping their vectors; returns how many were
    /// stored (the others are skipped).
    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError>;

    /// Removes the listed chunks.
    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError>;

    /// Removes every chunk of a document.
    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError>;

    /// The `k` nearest chunks that pass `filter`.
    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError>;

    /// The IDs of a document's stored chunks, sorted.
    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError>;

    /// The IDs of every stored chunk, sorted ascending, without duplicates.
    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError>;

    /// The stored vectors of the given chunks, `None` where a chunk is absent. Lets the indexer
    /// re-store an unchanged chunk with new document attributes without embedding it again.
    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError>;

    /// Number of stored chunks.
    fn count(&self) -> Result<usize, IndexError>;

    /// Makes previous writes visible and durable.
    fn commit(&self) -> Result<(), IndexError>;

    /// The generation of the last commit, if the adapter keeps one (see the contract).
    fn generation(&self) -> Result<Option<u64>, IndexError> {
        Ok(None)
    }

    /// Called after a bulk write (a whole `index` run) has committed, and when a server stops:
    /// an index that derives a structure from its commits and replays what came after it on
    /// open (an ANN graph and its snapshot) brings that structure up to the last commit now
    /// when the replay would cost the next open more than this costs. It changes nothing a
    /// search returns. The default has nothing to do.
    fn checkpoint(&self) -> Result<(), IndexError> {
        Ok(())
    }
}

/// Conveniences over [`VectorIndex`], implemented for every index.
pub trait VectorIndexExt: VectorIndex {
    /// Upserts in batches no larger than the adapter's `upsert_max_batch`.
    fn upsert_batched(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        let batch = self
            .capabilities()
            .upsert_max_batch
            .unwrap_or(usize::MAX)
            .max(1);
        for part in items.chunks(batch) {
            self.upsert(part)?;
        }
        Ok(())
    }

    /// Checks that `embedding` belongs to this index's space.
    fn check_space(&self, embedding: &Embedding) -> Result<(), IndexError> {
        let space = self.space();
        if embedding.space() != space.identity() {
            return Err(IndexError::SpaceMismatch {
                expected: space.identity().to_string(),
                found: embedding.space().to_string(),
            });
        }
        if embedding.values().len() != space.dims() {
            return Err(IndexError::SpaceMismatch {
                expected: format!("{} dims", space.dims()),
                found: format!("{} dims", embedding.values().len()),
            });
        }
        Ok(())
    }
}

impl<T: VectorIndex + ?Sized> VectorIndexExt for T {}

/// A lexical (full-text, BM25-style) index of chunks.
///
/// # Contract
///
/// - [`analyzer`](Self::analyzer) names the text analysis (tokenizer name, version and
///   dictionary). It is recorded with persistent indexes; opening one with another analyzer MUST
///   fail with [`IndexError::ConfigMismatch`].
/// - Upsert, delete, record update, visibility, durability, `k` and filter rules are those of
///   [`VectorIndex`] (an updated record is searched with its text as before).
/// - [`search`](Self::search) ranks chunks by relevance of their content and title to the query
///   text (higher score first, ties by ascending chunk ID). A query with no searchable terms
///   (empty, only punctuation or stop words) returns an empty list, not an error.
/// - [`all_chunk_ids`](Self::all_chunk_ids) MUST list every stored chunk, whatever its document
///   or scope, exactly once, sorted ascending: after committed upserts and deletes it equals the
///   IDs that survived.
/// - [`generation`](Self::generation) follows the rule of the vector index's.
pub trait LexicalIndex: Send + Sync {
    /// What this adapter supports.
    fn capabilities(&self) -> IndexCapabilities;

    /// The identity of the text analysis.
    fn analyzer(&self) -> String;

    /// Inserts or replaces chunks.
    fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError>;

    /// Replaces the records of stored chunks, keeping their vectors; returns how many were
    /// stored (the others are skipped).
    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError>;

    /// Removes the listed chunks.
    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError>;

    /// Removes every chunk of a document.
    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError>;

    /// The `k` best-matching chunks that pass `filter`.
    fn search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError>;

    /// The IDs of a document's stored chunks, sorted.
    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError>;

    /// The IDs of every stored chunk, sorted ascending, without duplicates.
    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError>;

    /// Number of stored chunks.
    fn count(&self) -> Result<usize, IndexError>;

    /// Makes previous writes visible and durable.
    fn commit(&self) -> Result<(), IndexError>;

    /// The generation of the last commit, if the adapter keeps one (see the contract).
    fn generation(&self) -> Result<Option<u64>, IndexError> {
        Ok(None)
    }
}

/// Where an index that keeps only chunk IDs reads back the chunks it found: the store that
/// holds each chunk's record once. The embedded store's vector index is one, so its lexical
/// index need not keep a second copy of every chunk's text.
///
/// # Contract
///
/// - [`records`](Self::records) returns one entry per requested ID, in the order asked, the
///   stored chunk with all its attributes, `None` where the store holds no such chunk (never
///   stored, deleted, or not committed where the reader cannot see it). Asking for an ID twice
///   answers twice.
/// - It reads what a search of the same store would return: a writing handle sees its own
///   uncommitted writes, a reader the last commit it loaded.
/// - It costs the chunks asked for, not the store: a point lookup each.
pub trait ChunkRecords: Send + Sync {
    /// The stored chunks of `ids`, `None` where absent.
    fn records(&self, ids: &[ChunkId]) -> Result<Vec<Option<Chunk>>, IndexError>;
}

/// Sorts by descending score, then ascending chunk ID, and keeps `k`: the ordering every
/// index adapter promises.
pub fn rank_and_truncate(hits: &mut Vec<ScoredChunk>, k: usize) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk.chunk_id().cmp(b.chunk.chunk_id()))
    });
    hits.truncate(k);
}
