//! What the generator sees: the context's blocks under the context policy (the evidence and,
//! around it, whole chunks of its documents, within the budget) and the numbered source blocks
//! made of them.

use std::collections::{BTreeMap, BTreeSet};

use crate::contracts::{Chunk, ChunkId, DocId};
use crate::ports::{DocumentChunks, SourceBlock};
use crate::rules::budget::RetrievalBudget;
use crate::rules::citation;
use crate::rules::expand::{ContextPolicy, expand};

use super::super::retriever::{Evidence, Retrieval};

/// The chunks of the evidence's documents the context may read around it, by document: of the
/// best piece's document alone for [`ContextPolicy::Section`], else of every piece's. A
/// document that cannot be read now, or reads otherwise than it was checked (another
/// revision, another scope), is left out: its evidence stands alone.
pub(super) fn read_documents(
    source: &dyn DocumentChunks,
    policy: ContextPolicy,
    evidence: &[Evidence],
) -> BTreeMap<DocId, Vec<Chunk>> {
    let wanted = match policy {
        ContextPolicy::Section => 1,
        _ => evidence.len(),
    };
    let mut docs: BTreeMap<DocId, Vec<Chunk>> = BTreeMap::new();
    for e in evidence.iter().take(wanted) {
        let doc = e.chunk.doc();
        if docs.contains_key(e.chunk.doc_id()) {
            continue;
        }
        if let Ok(Some(chunks)) = source.chunks(e.chunk.doc_id(), &doc.revision)
            && chunks.iter().all(|c| c.doc().scope == doc.scope)
        {
            docs.insert(e.chunk.doc_id().clone(), chunks);
        }
    }
    docs
}

/// The retrieval with its evidence replaced by the context's blocks under `policy`: the
/// evidence chunks and, around them, other chunks of `docs`, within `budget`; evidence the
/// blocks leave out counts as left out by the budget.
pub(super) fn shape(
    mut retrieval: Retrieval,
    docs: &BTreeMap<DocId, Vec<Chunk>>,
    policy: ContextPolicy,
    budget: RetrievalBudget,
) -> Retrieval {
    let evidence: Vec<Chunk> = retrieval.evidence.iter().map(|e| e.chunk.clone()).collect();
    let blocks = expand(
        policy,
        &evidence,
        &|d: &DocId| docs.get(d).map(Vec::as_slice),
        budget,
    );
    let kept: BTreeSet<ChunkId> = blocks.iter().map(|b| b.chunk.chunk_id().clone()).collect();
    let shaped: Vec<Evidence> = blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| match b.evidence {
            Some(j) => Evidence {
                rank: i + 1,
                ..retrieval.evidence[j].clone()
            },
            None => Evidence {
                chunk_id: b.chunk.chunk_id().clone(),
                chunk: b.chunk,
                rank: i + 1,
                score: 0.0,
                routes: Vec::new(),
            },
        })
        .collect();
    retrieval.budget_dropped.extend(
        retrieval
            .evidence
            .iter()
            .filter(|e| !kept.contains(&e.chunk_id))
            .map(|e| e.chunk_id.clone()),
    );
    retrieval.truncated = !retrieval.budget_dropped.is_empty();
    retrieval.evidence = shaped;
    retrieval
}

/// This round's numbered source blocks, one per piece of evidence in rank order.
/// Citation-shaped text in a document is neutralised: only markers the generator writes are
/// citations, so evidence cannot cite, block or redirect an answer.
pub(super) fn source_blocks(evidence: &[Evidence]) -> Vec<SourceBlock> {
    evidence
        .iter()
        .enumerate()
        .map(|(i, e)| SourceBlock {
            marker: i as u32 + 1,
            chunk_id: e.chunk_id.clone(),
            title: citation::neutralise(e.chunk.doc().title.as_ref()).into_owned(),
            source: citation::neutralise(e.chunk.doc().reference()).into_owned(),
            heading_path: e
                .chunk
                .heading_path()
                .iter()
                .map(|h| citation::neutralise(h).into_owned())
                .collect(),
            pages: e.chunk.pages(),
            text: citation::neutralise(&e.chunk.indexed_text()).into_owned(),
        })
        .collect()
}
