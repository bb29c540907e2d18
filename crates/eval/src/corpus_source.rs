//! A BEIR corpus as the source of truth: passages are re-read from `corpus.jsonl` once, on the
//! first check.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use zhiku_domain::ports::{SourceError, SourceRecord, SourceStore};
use zhiku_domain::{DocId, Revision, Scope};

use crate::beir::Passage;

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
