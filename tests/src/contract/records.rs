//! Properties of a [`ChunkRecords`] store, and a lexical index that keeps its records in one.
//!
//! The embedded store's lexical index keeps only chunk IDs and reads each hit's record from the
//! vector index, which the indexer writes with the same chunks. [`LexicalOverRecords`] is that
//! pair seen as one [`LexicalIndex`] (every write goes to both, as the indexer's do), so the
//! whole lexical contract runs against an index whose text lives elsewhere.

use std::sync::Arc;

use serde_json::json;
use zhiku_domain::ports::{
    ChunkRecords, EmbeddedChunk, IndexCapabilities, IndexError, LexicalIndex, ScoredChunk,
    VectorIndex,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Filter};

use super::fixtures::{Spec, axis, embedded};

/// A vector index and its records: the same store in its two roles.
pub struct RecordsUnderTest {
    /// Written through.
    pub vectors: Arc<dyn VectorIndex>,
    /// Read back.
    pub records: Arc<dyn ChunkRecords>,
}

impl std::fmt::Debug for RecordsUnderTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordsUnderTest")
            .field("adapter", &self.vectors.capabilities().adapter)
            .finish()
    }
}

impl RecordsUnderTest {
    /// One store as both.
    pub fn of<T: VectorIndex + ChunkRecords + 'static>(store: Arc<T>) -> Self {
        Self {
            vectors: store.clone(),
            records: store,
        }
    }
}

fn put(store: &RecordsUnderTest, specs: &[&Spec]) {
    let items: Vec<EmbeddedChunk> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| embedded(s, axis(i % 8)))
        .collect();
    store.vectors.upsert(&items).unwrap();
}

fn some(chunk: &Spec) -> Option<Chunk> {
    Some(chunk.chunk())
}

/// One answer per ID asked, in that order, each the stored chunk with every attribute; `None`
/// for an ID never stored; an ID asked twice is answered twice.
pub fn records_answer_each_id_in_order(store: &RecordsUnderTest) {
    let a = Spec::new("docs/甲.md", "s", "甲的内容 alpha")
        .at(12)
        .locale("zh-CN")
        .title("甲 A")
        .metadata(json!({"tags": ["x"], "n": 2}));
    let b = Spec::new("b", "t", "beta");
    put(store, &[&a, &b]);
    store.vectors.commit().unwrap();
    let missing = Spec::new("never", "s", "never stored").chunk();
    let ids = [
        b.chunk().chunk_id().clone(),
        missing.chunk_id().clone(),
        a.chunk().chunk_id().clone(),
        b.chunk().chunk_id().clone(),
    ];
    assert_eq!(
        store.records.records(&ids).unwrap(),
        vec![some(&b), None, some(&a), some(&b)]
    );
    assert!(store.records.records(&[]).unwrap().is_empty());
}

/// The records follow the writes a search of the store would see: a re-upsert with new
/// document attributes answers the new ones, deleted chunks and documents answer `None`,
/// before and after the commit.
pub fn records_follow_the_writes(store: &RecordsUnderTest) {
    let a = Spec::new("a", "s", "alpha");
    let b = Spec::new("b", "s", "beta");
    let c = Spec::new("c", "s", "gamma");
    put(store, &[&a, &b, &c]);
    store.vectors.commit().unwrap();
    let retitled = Spec::new("a", "s", "alpha").title("新标题");
    assert_eq!(retitled.chunk().chunk_id(), a.chunk().chunk_id());
    put(store, &[&retitled]);
    store
        .vectors
        .delete_chunks(&[b.chunk().chunk_id().clone()])
        .unwrap();
    store
        .vectors
        .delete_document(&DocId::new("c").unwrap())
        .unwrap();
    let ids: Vec<ChunkId> = [&a, &b, &c]
        .iter()
        .map(|s| s.chunk().chunk_id().clone())
        .collect();
    let want = vec![some(&retitled), None, None];
    assert_eq!(store.records.records(&ids).unwrap(), want);
    store.vectors.commit().unwrap();
    assert_eq!(store.records.records(&ids).unwrap(), want);
}

/// A lexical index that keeps its records in a vector index, and that vector index, written
/// together as the indexer writes them (see the [module documentation](self)).
pub struct LexicalOverRecords {
    /// The lexical index, given `vectors` as its records.
    pub lexical: Box<dyn LexicalIndex>,
    /// Where the records live.
    pub vectors: Arc<dyn VectorIndex>,
}

impl std::fmt::Debug for LexicalOverRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalOverRecords")
            .field("lexical", &self.lexical.capabilities().adapter)
            .field("records", &self.vectors.capabilities().adapter)
            .finish()
    }
}

impl LexicalIndex for LexicalOverRecords {
    fn capabilities(&self) -> IndexCapabilities {
        self.lexical.capabilities()
    }

    fn analyzer(&self) -> String {
        self.lexical.analyzer()
    }

    fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError> {
        let items: Vec<EmbeddedChunk> = chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| EmbeddedChunk {
                chunk: chunk.clone(),
                embedding: axis(i % 8),
            })
            .collect();
        self.vectors.upsert(&items)?;
        self.lexical.upsert(chunks)
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        self.vectors.update_records(chunks)?;
        self.lexical.update_records(chunks)
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        self.vectors.delete_chunks(ids)?;
        self.lexical.delete_chunks(ids)
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        self.vectors.delete_document(doc)?;
        self.lexical.delete_document(doc)
    }

    fn search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.lexical.search(query, k, filter)
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        self.lexical.chunk_ids(doc)
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.lexical.all_chunk_ids()
    }

    fn count(&self) -> Result<usize, IndexError> {
        self.lexical.count()
    }

    fn commit(&self) -> Result<(), IndexError> {
        self.vectors.commit()?;
        self.lexical.commit()
    }

    fn generation(&self) -> Result<Option<u64>, IndexError> {
        self.lexical.generation()
    }
}
