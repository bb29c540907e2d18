//! A BEIR corpus as a read-only [`DocumentStore`]: its passages are the documents, all in one
//! scope; nothing can be put or removed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use zhiku_domain::ports::{
    DocumentError, DocumentStore, DocumentStoreCapabilities, LoadedDocuments, SourcePaths,
    SourceStore,
};
use zhiku_domain::{DocId, Document, Scope};

use crate::beir::{load_beir, passage_document};
use crate::corpus_source::CorpusSource;

/// The corpus in a BEIR directory.
#[derive(Debug)]
pub struct CorpusDocuments {
    dir: PathBuf,
    scope: Scope,
    /// The passages as last loaded: they are not files, so a read is served from here.
    loaded: Mutex<Option<BTreeMap<DocId, Document>>>,
}

impl CorpusDocuments {
    /// The corpus in `dir`; every passage is in `scope`.
    pub fn new(dir: PathBuf, scope: Scope) -> Self {
        Self {
            dir,
            scope,
            loaded: Mutex::new(None),
        }
    }

    fn documents(&self) -> Result<Vec<Document>, DocumentError> {
        let set = load_beir(&self.dir).map_err(|e| DocumentError::Io(format!("{e:#}")))?;
        set.corpus
            .iter()
            .map(|p| passage_document(p, &self.scope))
            .collect::<anyhow::Result<Vec<_>>>()
            .map_err(|e| DocumentError::Invalid(format!("{e:#}")))
    }
}

impl DocumentStore for CorpusDocuments {
    fn capabilities(&self) -> DocumentStoreCapabilities {
        DocumentStoreCapabilities {
            adapter: "beir",
            writable: false,
        }
    }

    fn load_all(&self) -> Result<LoadedDocuments, DocumentError> {
        let documents = self.documents()?;
        *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) = Some(
            documents
                .iter()
                .map(|d| (d.id().clone(), d.clone()))
                .collect(),
        );
        Ok(LoadedDocuments {
            documents,
            ..LoadedDocuments::default()
        })
    }

    fn read(&self, id: &DocId, _path: &str) -> Result<Option<Document>, DocumentError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.is_none() {
            *loaded = Some(
                self.documents()?
                    .into_iter()
                    .map(|d| (d.id().clone(), d))
                    .collect(),
            );
        }
        Ok(loaded.as_ref().and_then(|m| m.get(id).cloned()))
    }

    fn source_store<'a>(&'a self, _recorded: &'a dyn SourcePaths) -> Box<dyn SourceStore + 'a> {
        Box::new(CorpusSource::new(self.dir.clone(), self.scope.clone()))
    }
}
