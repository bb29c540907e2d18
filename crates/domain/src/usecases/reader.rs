//! Reading a document in order: the whole of it or one section with its subsections, at the
//! revision the source holds now, chunked exactly as indexing cut it.

use crate::chunker::chunk_document;
use crate::contracts::{Chunk, ChunkingPolicy, DocId, Document, Revision, SectionId};
use crate::ports::{DocumentChunks, DocumentError, DocumentStore, SourceError, SourcePaths};
use crate::rules::section::{self, ReadError, Reading};

/// The documents of a [`DocumentStore`] at their recorded paths, chunked with the index's
/// policy: what a read returns, and the port an answer's context reads around its evidence.
pub struct DocumentReader<'a> {
    documents: &'a dyn DocumentStore,
    paths: &'a dyn SourcePaths,
    policy: ChunkingPolicy,
}

impl std::fmt::Debug for DocumentReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentReader")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<'a> DocumentReader<'a> {
    /// Reads `documents` at the paths `paths` recorded, chunking with `policy` (the index's).
    pub fn new(
        documents: &'a dyn DocumentStore,
        paths: &'a dyn SourcePaths,
        policy: ChunkingPolicy,
    ) -> Self {
        Self {
            documents,
            paths,
            policy,
        }
    }

    /// The document `id` as its source holds it now (`None`: not recorded, or gone).
    pub fn document(&self, id: &DocId) -> Result<Option<Document>, DocumentError> {
        let Some(path) = self
            .paths
            .path_of(id)
            .map_err(|e| DocumentError::Io(e.to_string()))?
        else {
            return Ok(None);
        };
        Ok(self.documents.read(id, &path)?.filter(|doc| doc.id() == id))
    }

    /// `doc` whole (`section: None`) or the subtree of `section`, at most `max_chars`
    /// characters, with its chunks as indexed.
    pub fn read(
        &self,
        doc: &Document,
        section: Option<&SectionId>,
        max_chars: usize,
    ) -> Result<Reading, ReadError> {
        section::read(doc, &chunk_document(doc, &self.policy), section, max_chars)
    }
}

impl DocumentChunks for DocumentReader<'_> {
    fn chunks(&self, doc: &DocId, revision: &Revision) -> Result<Option<Vec<Chunk>>, SourceError> {
        let found = self.document(doc).map_err(|e| SourceError::Unavailable {
            adapter: self.documents.capabilities().adapter,
            message: e.to_string(),
        })?;
        Ok(found
            .filter(|d| d.revision() == revision)
            .map(|d| chunk_document(&d, &self.policy)))
    }
}
