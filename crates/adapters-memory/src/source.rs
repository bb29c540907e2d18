//! An in-memory source of truth.

use std::collections::HashMap;
use std::sync::RwLock;

use zhiku_domain::ports::{SourceError, SourceRecord, SourceStore};
use zhiku_domain::{DocId, Document};

/// Documents' current state, set by the test or the application.
#[derive(Debug, Default)]
pub struct MemorySourceStore {
    records: RwLock<HashMap<DocId, SourceRecord>>,
}

impl MemorySourceStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `doc` as current and visible.
    pub fn put(&self, doc: &Document) {
        self.set(
            doc.id().clone(),
            SourceRecord {
                revision: doc.revision().clone(),
                scope: doc.attributes().scope.clone(),
                visible: true,
            },
        );
    }

    /// Sets a document's state.
    pub fn set(&self, id: DocId, record: SourceRecord) {
        self.records
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, record);
    }

    /// Marks a document deleted.
    pub fn remove(&self, id: &DocId) {
        self.records
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

impl SourceStore for MemorySourceStore {
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError> {
        Ok(self
            .records
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(doc)
            .cloned())
    }
}
