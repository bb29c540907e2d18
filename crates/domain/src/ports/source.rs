//! The source-of-truth port used to re-check hits after retrieval.

use std::collections::BTreeMap;

pub use crate::contracts::SourceRecord;
use crate::contracts::{Chunk, DocId, Revision};

use super::errors::SourceError;

/// Where documents really live (a folder, a corpus file, a database).
///
/// # Contract
///
/// - [`lookup`](Self::lookup) MUST report the document's state at the source now, not what was
///   indexed: `Ok(None)` when it was deleted or never existed, otherwise its current revision,
///   scope and visibility.
/// - It MUST NOT fail for an unknown document; failures are reserved for an unreadable source.
pub trait SourceStore: Send + Sync {
    /// The current state of `doc`.
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError>;
}

/// The source path the catalog recorded for each indexed document: the catalog's map when it
/// is in memory, or a lookup of one document at a time in the catalog store when a process that
/// only answers queries did not load it (see
/// [`CatalogStore::source_paths`](super::CatalogStore::source_paths)).
///
/// # Contract
///
/// [`path_of`](Self::path_of) returns the recorded path of `doc`, `Ok(None)` for a document with
/// none; an error only when the record cannot be read.
pub trait SourcePaths: Send + Sync {
    /// The recorded source path of `doc`.
    fn path_of(&self, doc: &DocId) -> Result<Option<String>, SourceError>;
}

impl SourcePaths for BTreeMap<DocId, String> {
    fn path_of(&self, doc: &DocId) -> Result<Option<String>, SourceError> {
        Ok(self.get(doc).cloned())
    }
}

/// A document's chunks as the index holds them: for reading a section of it, and for an answer's
/// context around its evidence.
///
/// # Contract
///
/// [`chunks`](Self::chunks) returns every chunk of `doc`, in order, exactly as indexing cut it
/// (same IDs), when the source holds `revision` of it now; `Ok(None)` when it holds another
/// revision or none. An error only when the source cannot be read.
pub trait DocumentChunks: Send + Sync {
    /// The chunks of `doc` at `revision`.
    fn chunks(&self, doc: &DocId, revision: &Revision) -> Result<Option<Vec<Chunk>>, SourceError>;
}
