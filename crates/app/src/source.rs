//! Source stores over the real origins: re-reading a folder's files, or a BEIR corpus file.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use zhiku_domain::ports::{SourceError, SourceRecord, SourceStore};
use zhiku_domain::{DocId, Revision, Scope};

use crate::beir::Passage;
use crate::loader::{LoaderConfig, load_path};

/// Re-reads a document's file from the knowledge-base folder at check time, so edits and
/// deletions made since indexing are noticed.
#[derive(Debug)]
pub struct FolderSource {
    root: PathBuf,
    sources: BTreeMap<DocId, String>,
    config: LoaderConfig,
}

impl FolderSource {
    /// A source over `root`, locating documents by the manifest's source paths.
    pub fn new(root: PathBuf, sources: BTreeMap<DocId, String>, config: LoaderConfig) -> Self {
        Self {
            root,
            sources,
            config,
        }
    }
}

impl SourceStore for FolderSource {
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError> {
        let Some(rel) = self.sources.get(doc) else {
            return Ok(None);
        };
        let path = self.root.join(rel);
        if !path.exists() {
            return Ok(None);
        }
        match load_path(&path, rel, &self.config) {
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

/// A BEIR corpus as the source: passages are read once, on first use.
#[derive(Debug)]
pub struct CorpusSource {
    dir: PathBuf,
    scope: Scope,
    revisions: OnceLock<Result<HashMap<String, Revision>, String>>,
}

impl CorpusSource {
    /// A source over the corpus in `dir`; every passage is in `scope`.
    pub fn new(dir: PathBuf, scope: Scope) -> Self {
        Self {
            dir,
            scope,
            revisions: OnceLock::new(),
        }
    }
}

impl SourceStore for CorpusSource {
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError> {
        let revisions = self.revisions.get_or_init(|| {
            let text = std::fs::read_to_string(self.dir.join("corpus.jsonl"))
                .map_err(|e| e.to_string())?;
            let mut map = HashMap::new();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let p: Passage = serde_json::from_str(line).map_err(|e| e.to_string())?;
                map.insert(p.id, Revision::of_content(&p.text));
            }
            Ok(map)
        });
        let revisions = revisions.as_ref().map_err(|e| SourceError::Unavailable {
            adapter: "beir-corpus",
            message: format!("{}: {e}", self.dir.display()),
        })?;
        Ok(revisions.get(doc.as_str()).map(|revision| SourceRecord {
            revision: revision.clone(),
            scope: self.scope.clone(),
            visible: true,
        }))
    }
}
