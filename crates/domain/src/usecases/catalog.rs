//! What has been indexed: the state the incremental indexer diffs against.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::contracts::{ChunkId, ChunkingPolicy, DocId, Revision};

/// The indexed state of one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The indexed revision.
    pub revision: Revision,
    /// [`Document::fingerprint`](crate::Document::fingerprint) of the indexed version.
    pub fingerprint: String,
    /// The document's chunk IDs, in order.
    pub chunk_ids: Vec<ChunkId>,
}

/// The indexed state of a knowledge base: chunking policy, embedding space, analyzer, and
/// every document's revision and chunk IDs. Persisted by the application as its manifest; the
/// indexer never mutates a catalog in place, so a failed run leaves the old one intact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// The policy every chunk was cut with.
    pub policy: ChunkingPolicy,
    /// The identity of the embedding space of the stored vectors; `None` when the knowledge base
    /// is indexed lexically only.
    pub space: Option<String>,
    /// The lexical analyzer identity.
    pub analyzer: String,
    /// Indexed documents.
    pub docs: BTreeMap<DocId, CatalogEntry>,
}

impl Catalog {
    /// An empty catalog for a configuration.
    pub fn new(policy: ChunkingPolicy, space: Option<String>, analyzer: String) -> Self {
        Self {
            policy,
            space,
            analyzer,
            docs: BTreeMap::new(),
        }
    }

    /// Number of chunks over all documents.
    pub fn chunk_count(&self) -> usize {
        self.docs.values().map(|e| e.chunk_ids.len()).sum()
    }

    /// Names the first configuration difference between this catalog and a requested
    /// configuration: `(what, recorded, requested)`.
    pub fn config_difference(
        &self,
        policy: &ChunkingPolicy,
        space: Option<&str>,
        analyzer: &str,
    ) -> Option<(&'static str, String, String)> {
        if self.policy != *policy {
            return Some(("chunking policy", self.policy.describe(), policy.describe()));
        }
        if self.space.as_deref() != space {
            let show = |s: Option<&str>| s.unwrap_or("none (lexical only)").to_string();
            return Some(("embedding space", show(self.space.as_deref()), show(space)));
        }
        if self.analyzer != analyzer {
            return Some((
                "lexical analyzer",
                self.analyzer.clone(),
                analyzer.to_string(),
            ));
        }
        None
    }
}
