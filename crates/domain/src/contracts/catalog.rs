//! What has been indexed: the state the incremental indexer diffs against.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::contracts::{
    Access, ChunkId, ChunkingPolicy, DocId, Document, Revision, Scope, Timestamp,
};

/// The indexed state of one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The indexed revision.
    pub revision: Revision,
    /// [`Document::fingerprint`](crate::Document::fingerprint) of the indexed version.
    pub fingerprint: String,
    /// The document's chunk IDs, in order.
    pub chunk_ids: Vec<ChunkId>,
    /// What the document said about itself when it was indexed, so that serving it needs no
    /// read of its source. `None` in catalogs written before it was kept: the next refresh
    /// reads such a document again and fills it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<DocAbout>,
    /// When this version (this fingerprint) was indexed; `None` in catalogs written before it
    /// was kept, and for an indexer given no time. A `ttl` counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<Timestamp>,
    /// When the document stops being evidence (its `expires_at`, or `indexed_at` + `ttl`,
    /// whichever comes first); `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// A document's title, source and scope, as indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocAbout {
    /// Its title (the first heading when it declares none).
    pub title: String,
    /// Its source path (relative to the knowledge-base root) or corpus name.
    pub source: String,
    /// The scope that decides who may read it.
    pub scope: Scope,
    /// Who may read it inside its scope (absent: everyone who may read the scope).
    #[serde(default, skip_serializing_if = "Access::is_unruled_open")]
    pub access: Access,
}

impl DocAbout {
    /// What `doc` says about itself.
    pub fn of(doc: &Document) -> Self {
        let a = doc.attributes();
        Self {
            title: a.title.to_string(),
            source: a.source.to_string(),
            scope: a.scope.clone(),
            access: a.access.clone(),
        }
    }
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

/// What a run changes in a catalog, document by document: the entries it writes and the
/// documents it removes. Applying it costs what changed, not the size of the catalog, so a
/// one-document ingest into a knowledge base of a million chunks copies nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChanges {
    written: BTreeMap<DocId, CatalogEntry>,
    removed: BTreeSet<DocId>,
}

impl CatalogChanges {
    /// Records `entry` as document `id`'s (it replaces an earlier change of `id`).
    pub fn write(&mut self, id: DocId, entry: CatalogEntry) {
        self.removed.remove(&id);
        self.written.insert(id, entry);
    }

    /// Records that document `id` goes (it replaces an earlier change of `id`).
    pub fn remove(&mut self, id: DocId) {
        self.written.remove(&id);
        self.removed.insert(id);
    }

    /// True when nothing changes.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }

    /// The entries written, by document.
    pub fn written(&self) -> &BTreeMap<DocId, CatalogEntry> {
        &self.written
    }

    /// The documents removed.
    pub fn removed(&self) -> &BTreeSet<DocId> {
        &self.removed
    }

    /// Every document the changes touch.
    pub fn docs(&self) -> impl Iterator<Item = &DocId> {
        self.written.keys().chain(&self.removed)
    }

    /// Document `id`'s entry once the changes are applied to `catalog`.
    pub fn entry<'a>(&'a self, catalog: &'a Catalog, id: &DocId) -> Option<&'a CatalogEntry> {
        if self.removed.contains(id) {
            return None;
        }
        self.written.get(id).or_else(|| catalog.docs.get(id))
    }

    /// Applies the changes to `catalog` in place; returns the changes that undo them.
    pub fn apply_to(&self, catalog: &mut Catalog) -> CatalogChanges {
        let mut undo = CatalogChanges::default();
        for (id, entry) in &self.written {
            match catalog.docs.insert(id.clone(), entry.clone()) {
                Some(old) => undo.write(id.clone(), old),
                None => undo.remove(id.clone()),
            }
        }
        for id in &self.removed {
            if let Some(old) = catalog.docs.remove(id) {
                undo.write(id.clone(), old);
            }
        }
        undo
    }

    /// `catalog` with the changes applied, as a new catalog.
    pub fn applied(&self, catalog: &Catalog) -> Catalog {
        let mut next = catalog.clone();
        self.apply_to(&mut next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> CatalogEntry {
        CatalogEntry {
            revision: Revision::of_content(text),
            fingerprint: text.to_string(),
            chunk_ids: Vec::new(),
            about: None,
            indexed_at: None,
            expires_at: None,
        }
    }

    fn id(s: &str) -> DocId {
        DocId::new(s).unwrap()
    }

    #[test]
    fn changes_apply_and_undo_exactly() {
        let policy = ChunkingPolicy::with_sizes(640, 64).unwrap();
        let mut catalog = Catalog::new(policy, None, "a/1".into());
        catalog.docs.insert(id("kept"), entry("kept"));
        catalog.docs.insert(id("changed"), entry("old"));
        catalog.docs.insert(id("gone"), entry("gone"));
        let before = catalog.clone();

        let mut changes = CatalogChanges::default();
        changes.write(id("changed"), entry("new"));
        changes.write(id("added"), entry("added"));
        changes.remove(id("gone"));
        changes.remove(id("never there"));
        // A later change of the same document replaces the earlier one.
        changes.write(id("twice"), entry("first"));
        changes.remove(id("twice"));

        assert_eq!(changes.entry(&catalog, &id("changed")), Some(&entry("new")));
        assert_eq!(changes.entry(&catalog, &id("kept")), Some(&entry("kept")));
        assert_eq!(changes.entry(&catalog, &id("gone")), None);
        let next = changes.applied(&catalog);
        let undo = changes.apply_to(&mut catalog);
        assert_eq!(catalog, next);
        assert_eq!(catalog.docs.len(), 3);
        assert_eq!(catalog.docs.get(&id("changed")), Some(&entry("new")));
        assert!(!catalog.docs.contains_key(&id("gone")));
        undo.apply_to(&mut catalog);
        assert_eq!(catalog, before);
    }
}
