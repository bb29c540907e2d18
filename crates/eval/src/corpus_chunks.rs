//! A BEIR corpus's passages as the chunks an answer's context reads around its evidence
//! (the [`DocumentChunks`] port), for an evaluation over an index built from the corpus.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use zhiku_domain::chunker::chunk_document;
use zhiku_domain::ports::{DocumentChunks, SourceError};
use zhiku_domain::{Chunk, ChunkingPolicy, DocId, Document, Revision, Scope};

use crate::beir::{Passage, passage_document};

/// The passages of a corpus as documents of one scope, chunked with the index's policy. The
/// documents are made on the first read, so an evaluation that reads none pays nothing.
#[derive(Debug)]
pub struct CorpusChunks<'a> {
    passages: &'a [Passage],
    scope: Scope,
    policy: ChunkingPolicy,
    docs: OnceLock<Result<BTreeMap<DocId, Document>, String>>,
}

impl<'a> CorpusChunks<'a> {
    /// The chunks of `passages`, each a document in `scope`, cut by `policy`.
    pub fn new(passages: &'a [Passage], scope: Scope, policy: ChunkingPolicy) -> Self {
        Self {
            passages,
            scope,
            policy,
            docs: OnceLock::new(),
        }
    }

    fn docs(&self) -> Result<&BTreeMap<DocId, Document>, SourceError> {
        let docs = self.docs.get_or_init(|| {
            let mut docs = BTreeMap::new();
            for p in self.passages {
                let d = passage_document(p, &self.scope).map_err(|e| format!("{e:#}"))?;
                docs.insert(d.id().clone(), d);
            }
            Ok(docs)
        });
        docs.as_ref().map_err(|e| SourceError::Unavailable {
            adapter: "beir-corpus",
            message: e.clone(),
        })
    }
}

impl DocumentChunks for CorpusChunks<'_> {
    fn chunks(&self, doc: &DocId, revision: &Revision) -> Result<Option<Vec<Chunk>>, SourceError> {
        Ok(self
            .docs()?
            .get(doc)
            .filter(|d| d.revision() == revision)
            .map(|d| chunk_document(d, &self.policy)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(id: &str, text: &str) -> Passage {
        Passage {
            id: id.into(),
            title: String::new(),
            text: text.into(),
        }
    }

    /// A passage's chunks are served at its revision only; an unknown passage has none.
    #[test]
    fn a_passage_is_chunked_at_its_own_revision_only() {
        let passages = [passage("p1", "第一段。第二段。")];
        let policy = ChunkingPolicy::default();
        let chunks = CorpusChunks::new(&passages, Scope::default_scope(), policy);
        let id = DocId::new("p1").unwrap();
        let revision = Revision::of_content("第一段。第二段。");
        let got = chunks.chunks(&id, &revision).unwrap().unwrap();
        assert!(!got.is_empty());
        assert!(got.iter().all(|c| c.doc_id() == &id));
        let other = Revision::of_content("changed");
        assert!(chunks.chunks(&id, &other).unwrap().is_none());
        let unknown = DocId::new("p2").unwrap();
        assert!(chunks.chunks(&unknown, &revision).unwrap().is_none());
    }
}
