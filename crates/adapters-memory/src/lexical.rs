//! BM25 in memory: the reference lexical index.

use std::collections::HashMap;
use std::sync::RwLock;

use zhiku_domain::ports::{
    IndexCapabilities, IndexError, LexicalIndex, ScoredChunk, rank_and_truncate,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Filter};

use crate::analyzer::simple_tokens;
use crate::table::{Row, Table};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Okapi BM25 (k1 = 1.2, b = 0.75) over title and content analysed by [`simple_tokens`].
/// Title tokens count twice. Exact and unoptimised: a reference, not a production index.
#[derive(Debug, Default)]
pub struct MemoryLexicalIndex {
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Each row's term frequencies and length.
    table: Table<(HashMap<String, u32>, u32)>,
    /// Term → chunks containing it.
    postings: HashMap<String, HashMap<ChunkId, u32>>,
    total_len: u64,
}

impl State {
    fn remove_row(&mut self, row: &Row<(HashMap<String, u32>, u32)>) {
        let id = row.chunk.chunk_id();
        for term in row.payload.0.keys() {
            if let Some(list) = self.postings.get_mut(term) {
                list.remove(id);
                if list.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.total_len -= u64::from(row.payload.1);
    }
}

impl MemoryLexicalIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }
}

fn term_frequencies(chunk: &Chunk) -> (HashMap<String, u32>, u32) {
    let mut tf: HashMap<String, u32> = HashMap::new();
    let mut len = 0;
    let title = chunk.doc().title.as_str();
    for (text, weight) in [(title, 2), (chunk.indexed_text().as_ref(), 1)] {
        for token in simple_tokens(text) {
            *tf.entry(token).or_default() += weight;
            len += weight;
        }
    }
    (tf, len)
}

impl LexicalIndex for MemoryLexicalIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: "memory-bm25",
            persistent: false,
            max_k: 10_000,
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn analyzer(&self) -> String {
        "memory-simple/1 (cjk unigram+bigram, lower-cased words)".to_string()
    }

    fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError> {
        let mut state = self.write();
        for chunk in chunks {
            if let Some(old) = state.table.remove(chunk.chunk_id()) {
                state.remove_row(&old);
            }
            let payload = term_frequencies(chunk);
            for (term, tf) in &payload.0 {
                state
                    .postings
                    .entry(term.clone())
                    .or_default()
                    .insert(chunk.chunk_id().clone(), *tf);
            }
            state.total_len += u64::from(payload.1);
            state.table.put(Row::new(chunk.clone(), payload));
        }
        Ok(())
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        // The title counts in a chunk's terms: an updated record is indexed again.
        let stored: Vec<Chunk> = {
            let state = self.read();
            chunks
                .iter()
                .filter(|c| state.table.rows.contains_key(c.chunk_id()))
                .cloned()
                .collect()
        };
        self.upsert(&stored)?;
        Ok(stored.len())
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        let mut state = self.write();
        for id in ids {
            if let Some(row) = state.table.remove(id) {
                state.remove_row(&row);
            }
        }
        Ok(())
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        let mut state = self.write();
        for row in state.table.remove_document(doc) {
            state.remove_row(&row);
        }
        Ok(())
    }

    fn search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        let state = self.read();
        let n = state.table.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let avg_len = state.total_len as f32 / n as f32;
        let mut terms = simple_tokens(query);
        terms.sort();
        terms.dedup();
        let mut scores: HashMap<&ChunkId, f32> = HashMap::new();
        for term in &terms {
            let Some(list) = state.postings.get(term) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = ((n as f32 - df + 0.5) / (df + 0.5) + 1.0).ln();
            for (id, tf) in list {
                let Some(row) = state.table.rows.get(id) else {
                    continue;
                };
                if !row.passes(filter) {
                    continue;
                }
                let tf = *tf as f32;
                let len = row.payload.1 as f32;
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len));
                *scores.entry(id).or_default() += s;
            }
        }
        let mut hits: Vec<ScoredChunk> = scores
            .into_iter()
            .filter_map(|(id, score)| {
                state.table.rows.get(id).map(|row| ScoredChunk {
                    chunk: row.chunk.clone(),
                    score,
                })
            })
            .collect();
        rank_and_truncate(&mut hits, k);
        Ok(hits)
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        Ok(self.read().table.ids_of(doc))
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        Ok(self.read().table.all_ids())
    }

    fn count(&self) -> Result<usize, IndexError> {
        Ok(self.read().table.len())
    }

    fn commit(&self) -> Result<(), IndexError> {
        Ok(())
    }
}
