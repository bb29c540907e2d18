//! A folder indexed into a knowledge base kept on a cluster (profile `cluster`): the folder is
//! read as always (stamps, workers, skipped files), and what it holds is brought into the
//! knowledge base's documents collection, which every replica reads, re-checks against and
//! writes through the API. The catalog then records the cluster as the origin.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_adapters_fs::folder::FolderDocuments;
use zhiku_adapters_qdrant::QdrantDocuments;
use zhiku_domain::ports::{
    DocumentError, DocumentStore, DocumentStoreCapabilities, KnownFile, LoadedDocuments,
    PreparedPut, PutRequest, SourcePaths, SourceStore, Staged,
};
use zhiku_domain::{DocId, Document};

/// A folder read into the cluster's documents collection.
pub struct Imported {
    /// Where the documents are read from.
    pub folder: FolderDocuments,
    /// Where they are kept for every replica.
    pub cluster: QdrantDocuments,
}

impl std::fmt::Debug for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imported")
            .field("folder", &self.folder.root())
            .field("cluster", &self.cluster.collection())
            .finish()
    }
}

impl Imported {
    /// The folder's documents now (`known` as the folder store takes it), brought into the
    /// collection: what the folder holds is written there, what came from the folder and is
    /// gone from it is removed, and what was put through the API stays and is loaded (or
    /// listed unchanged) beside the folder's, so a refresh keeps it.
    fn import(
        &self,
        known: &BTreeMap<String, KnownFile>,
    ) -> Result<LoadedDocuments, DocumentError> {
        let mut loaded = self.folder.load_changed(known)?;
        let in_folder: BTreeSet<String> = loaded
            .documents
            .iter()
            .map(|d| d.attributes().source.to_string())
            .chain(loaded.unchanged.iter().cloned())
            .chain(loaded.skipped.iter().map(|s| s.path.clone()))
            .collect();
        let read: Vec<(&Document, &str)> = loaded
            .documents
            .iter()
            .map(|d| (d, d.attributes().source.as_str()))
            .collect();
        self.cluster.put_documents(&read, true)?;
        let mut gone: Vec<DocId> = Vec::new();
        for kept in self.cluster.all()? {
            if in_folder.contains(&kept.path) {
                continue;
            }
            if kept.from_folder {
                gone.push(kept.document.id().clone());
                continue;
            }
            let stamp = QdrantDocuments::stamp(&kept.document);
            let same = known
                .get(&kept.path)
                .is_some_and(|k| &k.doc == kept.document.id() && k.stamp == stamp);
            loaded.stamps.insert(kept.path.clone(), stamp);
            if same {
                loaded.unchanged.push(kept.path);
            } else {
                loaded.documents.push(kept.document);
            }
        }
        self.cluster.remove_documents(&gone)?;
        Ok(loaded)
    }
}

impl DocumentStore for Imported {
    fn capabilities(&self) -> DocumentStoreCapabilities {
        self.cluster.capabilities()
    }

    fn load_all(&self) -> Result<LoadedDocuments, DocumentError> {
        self.import(&BTreeMap::new())
    }

    fn load_changed(
        &self,
        known: &BTreeMap<String, KnownFile>,
    ) -> Result<LoadedDocuments, DocumentError> {
        self.import(known)
    }

    fn read(&self, id: &DocId, path: &str) -> Result<Option<Document>, DocumentError> {
        self.cluster.read(id, path)
    }

    fn original(&self, id: &DocId, path: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        self.folder.original(id, path)
    }

    fn source_store<'a>(&'a self, recorded: &'a dyn SourcePaths) -> Box<dyn SourceStore + 'a> {
        self.cluster.source_store(recorded)
    }

    fn root(&self) -> Option<&std::path::Path> {
        Some(self.folder.root())
    }

    fn settle(&self, recorded: &[&str]) -> Vec<String> {
        self.folder.settle(recorded)
    }

    fn prepare_put(&self, put: &PutRequest<'_>) -> Result<PreparedPut, DocumentError> {
        self.cluster.prepare_put(put)
    }

    fn write(&self, prepared: &PreparedPut) -> Result<Box<dyn Staged>, DocumentError> {
        self.cluster.write(prepared)
    }

    fn remove(
        &self,
        id: &DocId,
        path: &str,
        recorded: &BTreeMap<DocId, String>,
    ) -> Result<(Option<Document>, Box<dyn Staged>), DocumentError> {
        self.cluster.remove(id, path, recorded)
    }
}
