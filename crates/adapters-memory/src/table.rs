//! A table of chunks keyed by ID, with a per-document index and precomputed filter terms.
//! Shared by the memory vector and lexical indexes.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_domain::{Chunk, ChunkId, DocId, Filter};

/// A stored chunk with its filter terms and an adapter-specific payload.
#[derive(Debug, Clone)]
pub(crate) struct Row<T> {
    pub(crate) chunk: Chunk,
    pub(crate) locale_terms: Vec<String>,
    pub(crate) metadata_terms: Vec<String>,
    pub(crate) payload: T,
}

impl<T> Row<T> {
    pub(crate) fn new(chunk: Chunk, payload: T) -> Self {
        let locale_terms = chunk.doc().locale.match_terms();
        let metadata_terms = chunk.doc().metadata.filter_terms();
        Self {
            chunk,
            locale_terms,
            metadata_terms,
            payload,
        }
    }

    pub(crate) fn passes(&self, filter: &Filter) -> bool {
        filter.matches_terms(
            self.chunk.doc_id(),
            &self.chunk.doc().scope,
            &self.locale_terms,
            &self.metadata_terms,
        ) && filter.admits(&self.chunk.doc().access)
    }
}

#[derive(Debug)]
pub(crate) struct Table<T> {
    pub(crate) rows: BTreeMap<ChunkId, Row<T>>,
    by_doc: BTreeMap<DocId, BTreeSet<ChunkId>>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            rows: BTreeMap::new(),
            by_doc: BTreeMap::new(),
        }
    }
}

impl<T> Table<T> {
    /// Inserts or replaces a row; returns the replaced row.
    pub(crate) fn put(&mut self, row: Row<T>) -> Option<Row<T>> {
        let id = row.chunk.chunk_id().clone();
        self.by_doc
            .entry(row.chunk.doc_id().clone())
            .or_default()
            .insert(id.clone());
        self.rows.insert(id, row)
    }

    /// Replaces the chunk of a stored row, keeping its payload; false when none is stored.
    pub(crate) fn update(&mut self, chunk: &Chunk) -> bool {
        let Some(old) = self.remove(chunk.chunk_id()) else {
            return false;
        };
        self.put(Row::new(chunk.clone(), old.payload));
        true
    }

    /// Removes a row by ID.
    pub(crate) fn remove(&mut self, id: &ChunkId) -> Option<Row<T>> {
        let row = self.rows.remove(id)?;
        if let Some(ids) = self.by_doc.get_mut(row.chunk.doc_id()) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_doc.remove(row.chunk.doc_id());
            }
        }
        Some(row)
    }

    /// Removes every row of a document.
    pub(crate) fn remove_document(&mut self, doc: &DocId) -> Vec<Row<T>> {
        let ids = self.by_doc.remove(doc).unwrap_or_default();
        ids.iter().filter_map(|id| self.rows.remove(id)).collect()
    }

    /// A document's chunk IDs, sorted.
    pub(crate) fn ids_of(&self, doc: &DocId) -> Vec<ChunkId> {
        self.by_doc
            .get(doc)
            .map(|ids| ids.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every stored chunk ID, sorted (the rows are keyed by ID, so each appears once).
    pub(crate) fn all_ids(&self) -> Vec<ChunkId> {
        self.rows.keys().cloned().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
}
