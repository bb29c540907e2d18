//! The folder as the source of truth: re-reading a document's file when a hit is checked.

use std::path::Path;

use zhiku_domain::DocId;
use zhiku_domain::ports::{SourceError, SourcePaths, SourceRecord, SourceStore};

use crate::loader::{LoaderConfig, load_path};

/// Re-reads a document's file from the knowledge-base folder at check time, so edits and
/// deletions made since indexing are noticed.
/// It borrows the folder's settings and the recorded paths: one is built per query.
pub struct FolderSource<'a> {
    root: &'a Path,
    sources: &'a dyn SourcePaths,
    config: &'a LoaderConfig,
}

impl std::fmt::Debug for FolderSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderSource")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl<'a> FolderSource<'a> {
    /// A source over `root`, locating documents by the manifest's source paths.
    pub fn new(root: &'a Path, sources: &'a dyn SourcePaths, config: &'a LoaderConfig) -> Self {
        Self {
            root,
            sources,
            config,
        }
    }
}

impl SourceStore for FolderSource<'_> {
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError> {
        let Some(rel) = self.sources.path_of(doc)? else {
            return Ok(None);
        };
        let rel = rel.as_str();
        let path = self.root.join(rel);
        if !path.exists() {
            return Ok(None);
        }
        match load_path(&path, rel, self.config) {
            // The file now claims another id: the indexed document is gone from the source.
            Ok(current) if current.id() != doc => Ok(None),
            Ok(current) => Ok(Some(SourceRecord {
                revision: current.revision().clone(),
                scope: current.attributes().scope.clone(),
                visible: true,
            })),
            // Unreadable now: the evidence cannot be vouched for.
            Err(_) => Ok(None),
        }
    }
}
