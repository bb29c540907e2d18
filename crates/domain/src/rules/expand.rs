//! What of a document around the evidence reaches an answer's context: the evidence chunks
//! alone, the section (or small document) the evidence concentrates in, or each chunk with its
//! neighbours.
//!
//! Whatever the policy, the context is made of whole chunks of the index, each its own block
//! with its own marker, so every part of it can be cited and a citation names a chunk of this
//! round; and it stays within the budget (chunks and characters).

use std::collections::BTreeSet;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::contracts::{Chunk, ChunkId, DocId};
use crate::rules::budget::RetrievalBudget;

/// How an answer's context is built from the evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextPolicy {
    /// The evidence chunks in rank order, as many as the budget holds.
    #[default]
    Chunks,
    /// When the evidence concentrates in one section or one small document that fits the
    /// budget, that section (or document) as its chunks, in document order, then the other
    /// evidence as the rest of the budget allows.
    Section,
    /// Each evidence chunk, in rank order, followed by the chunks before and after it in its
    /// document, as the budget allows.
    Neighbours,
}

impl ContextPolicy {
    /// `chunks`, `section` or `neighbours`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Chunks => "chunks",
            Self::Section => "section",
            Self::Neighbours => "neighbours",
        }
    }
}

impl FromStr for ContextPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chunks" => Ok(Self::Chunks),
            "section" => Ok(Self::Section),
            "neighbours" | "neighbors" => Ok(Self::Neighbours),
            other => Err(format!(
                "context {other:?}: use chunks, section or neighbours"
            )),
        }
    }
}

/// One block of the context: a chunk, and the rank of the evidence it is (`None` for a chunk
/// brought in around the evidence).
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The chunk.
    pub chunk: Chunk,
    /// Its index among the evidence, when it is evidence.
    pub evidence: Option<usize>,
}

/// The blocks of the context for `evidence` (in rank order, after the revision check) under
/// `policy` within `budget`. `chunks_of` gives a document's chunks in order at the revision of
/// its evidence (`None`: not known now; the evidence alone is used).
pub fn expand<'c>(
    policy: ContextPolicy,
    evidence: &[Chunk],
    chunks_of: &dyn Fn(&DocId) -> Option<&'c [Chunk]>,
    budget: RetrievalBudget,
) -> Vec<Block> {
    let mut ctx = Picker::new(budget);
    match policy {
        ContextPolicy::Chunks => {}
        ContextPolicy::Section => {
            if let Some(unit) = evidence
                .first()
                .and_then(|anchor| section_unit(anchor, evidence, chunks_of, budget))
            {
                for chunk in unit {
                    ctx.push(chunk, evidence);
                }
            }
        }
        ContextPolicy::Neighbours => {
            for e in evidence {
                if !ctx.push(e, evidence) {
                    continue;
                }
                let Some(all) = chunks_of(e.doc_id()) else {
                    continue;
                };
                let Some(at) = all.iter().position(|c| c.chunk_id() == e.chunk_id()) else {
                    continue;
                };
                if at > 0 {
                    ctx.push(&all[at - 1], evidence);
                }
                if let Some(next) = all.get(at + 1) {
                    ctx.push(next, evidence);
                }
            }
            return ctx.done();
        }
    }
    for e in evidence {
        ctx.push(e, evidence);
    }
    ctx.done()
}

/// The section around `anchor` (the best evidence) to send whole: the largest of its
/// enclosing sections, from the whole document down to its own, that fits the budget and in
/// which the evidence concentrates: it holds another piece of the evidence too, or it is small
/// (at most half the budget's characters).
fn section_unit<'c>(
    anchor: &Chunk,
    evidence: &[Chunk],
    chunks_of: &dyn Fn(&DocId) -> Option<&'c [Chunk]>,
    budget: RetrievalBudget,
) -> Option<Vec<&'c Chunk>> {
    let all = chunks_of(anchor.doc_id())?;
    if !all.iter().any(|c| c.chunk_id() == anchor.chunk_id()) {
        return None;
    }
    let path = anchor.heading_path();
    (0..=path.len()).find_map(|depth| {
        let unit = super::section::subtree(all, &path[..depth]);
        let chars: usize = unit.iter().map(|c| c.char_len()).sum();
        let fits = unit.len() <= budget.max_chunks() && chars <= budget.max_chars();
        let ids: BTreeSet<&ChunkId> = unit.iter().map(|c| c.chunk_id()).collect();
        let held = evidence
            .iter()
            .filter(|e| ids.contains(e.chunk_id()))
            .count();
        let concentrated = held >= 2 || chars * 2 <= budget.max_chars();
        (fits && concentrated).then_some(unit)
    })
}

/// Blocks within a budget, each chunk once.
struct Picker {
    budget: RetrievalBudget,
    blocks: Vec<Block>,
    ids: BTreeSet<ChunkId>,
    chars: usize,
}

impl Picker {
    fn new(budget: RetrievalBudget) -> Self {
        Self {
            budget,
            blocks: Vec::new(),
            ids: BTreeSet::new(),
            chars: 0,
        }
    }

    /// Adds `chunk` when it is not in yet and fits; true when it is in afterwards.
    fn push(&mut self, chunk: &Chunk, evidence: &[Chunk]) -> bool {
        if self.ids.contains(chunk.chunk_id()) {
            return true;
        }
        let len = chunk.char_len();
        if self.blocks.len() >= self.budget.max_chunks()
            || self.chars + len > self.budget.max_chars()
        {
            return false;
        }
        self.chars += len;
        self.ids.insert(chunk.chunk_id().clone());
        self.blocks.push(Block {
            chunk: chunk.clone(),
            evidence: evidence
                .iter()
                .position(|e| e.chunk_id() == chunk.chunk_id()),
        });
        true
    }

    fn done(self) -> Vec<Block> {
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::chunk_document;
    use crate::{ChunkingPolicy, Document, Source};

    const TEXT: &str = "# A\n\naaaa aaaa aaaa.\n\n## A1\n\nbbbb bbbb bbbb.\n\n## A2\n\ncccc cccc cccc.\n\n# B\n\ndddd dddd dddd.\n\neeee eeee eeee.\n\nffff ffff ffff.\n";

    fn chunks() -> Vec<Chunk> {
        let d =
            Document::builder(DocId::new("d").unwrap(), Source::new("d").unwrap(), TEXT).build();
        chunk_document(&d, &ChunkingPolicy::with_sizes(24, 0).unwrap())
    }

    fn texts(blocks: &[Block]) -> Vec<String> {
        blocks
            .iter()
            .map(|b| b.chunk.content().trim().replace('\n', " "))
            .collect()
    }

    fn run(policy: ContextPolicy, ev: &[usize], budget: (usize, usize)) -> Vec<Block> {
        let all = chunks();
        let evidence: Vec<Chunk> = ev.iter().map(|&i| all[i].clone()).collect();
        let of = |_: &DocId| Some(all.as_slice());
        // `all` outlives the call: collect owned blocks.
        let budget = RetrievalBudget::new(budget.0, budget.1).unwrap();
        expand(policy, &evidence, &of, budget)
    }

    #[test]
    fn chunks_keep_the_evidence_in_rank_order_within_the_budget() {
        let all = chunks();
        assert!(
            all.len() >= 6,
            "{:?}",
            texts(&run(ContextPolicy::Chunks, &[0], (9, 999)))
        );
        let out = run(ContextPolicy::Chunks, &[3, 0, 5], (2, 999));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].chunk, all[3]);
        assert_eq!(out[1].evidence, Some(1));
    }

    #[test]
    fn a_section_holding_the_evidence_is_sent_whole_in_document_order() {
        let all = chunks();
        // Evidence in A1 and A2: the document (six chunks) does not fit four blocks; section A
        // (three chunks) fits and holds two pieces of evidence.
        let out = run(ContextPolicy::Section, &[2, 1, 4], (4, 999));
        assert_eq!(out.len(), 4);
        let got: Vec<&ChunkId> = out.iter().map(|b| b.chunk.chunk_id()).collect();
        assert_eq!(&got[..3], [&all[0], &all[1], &all[2]].map(|c| c.chunk_id()));
        assert_eq!(out[0].evidence, None);
        assert_eq!(out[2].evidence, Some(0));
        // The rest of the budget still takes the other evidence.
        assert_eq!(out[3].chunk, all[4]);
        // A document that fits whole is sent whole.
        let out = run(ContextPolicy::Section, &[2, 1], (6, 999));
        assert_eq!(
            out.iter().map(|b| &b.chunk).collect::<Vec<_>>(),
            all.iter().collect::<Vec<_>>()
        );
        // Too small a budget for any enclosing section: the evidence alone.
        let out = run(ContextPolicy::Section, &[2, 1], (1, 999));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].chunk, all[2]);
    }

    #[test]
    fn neighbours_come_after_their_evidence_within_the_budget() {
        let all = chunks();
        let out = run(ContextPolicy::Neighbours, &[4, 0], (4, 999));
        let got: Vec<&Chunk> = out.iter().map(|b| &b.chunk).collect();
        assert_eq!(got, [&all[4], &all[3], &all[5], &all[0]]);
        // Each chunk once, every block a chunk of the document.
        let out = run(ContextPolicy::Neighbours, &[1, 2], (9, 999));
        let ids: BTreeSet<&ChunkId> = out.iter().map(|b| b.chunk.chunk_id()).collect();
        assert_eq!(ids.len(), out.len());
        assert!(out.iter().all(|b| all.contains(&b.chunk)));
        let chars: usize = out.iter().map(|b| b.chunk.char_len()).sum();
        let out = run(ContextPolicy::Neighbours, &[1, 2], (9, chars - 1));
        assert!(out.iter().map(|b| b.chunk.char_len()).sum::<usize>() < chars);
    }

    #[test]
    fn policies_parse_by_name() {
        for p in [
            ContextPolicy::Chunks,
            ContextPolicy::Section,
            ContextPolicy::Neighbours,
        ] {
            assert_eq!(p.code().parse::<ContextPolicy>(), Ok(p));
        }
        assert!("all".parse::<ContextPolicy>().is_err());
    }
}
