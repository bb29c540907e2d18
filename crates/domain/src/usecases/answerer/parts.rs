//! What a run retrieves: one retrieval per part of the question, once more in another wording
//! when the evidence is thin, and the parts' evidence merged into one round.

use std::collections::{BTreeMap, BTreeSet};

use crate::contracts::ChunkId;
use crate::rules::budget::RetrievalBudget;
use crate::rules::support;
use zhiku_text as text;

use super::super::retriever::{Evidence, Retrieval, RetrieveError, RouteReport};

/// Share of a question's terms the best of its first pieces of evidence must hold; below it
/// the evidence is thin and the question is retrieved once more in another wording. Measured
/// on the golden sets over `examples/kb` (see `evals/README.md`): answerable questions' best
/// evidence holds a median 0.78 of their terms, 8 of 72 fall below 0.34; 5 of the 6
/// unanswerable ones do.
pub const THIN_EVIDENCE_FLOOR: f64 = 0.34;

/// How much of `question` the best of the first three pieces of evidence holds (its title,
/// headings and text), as a share of the question's terms.
pub fn evidence_coverage(question: &str, retrieval: &Retrieval) -> f64 {
    if text::terms(question).is_empty() {
        return 1.0;
    }
    retrieval
        .evidence
        .iter()
        .take(3)
        .map(|e| {
            let doc = e.chunk.doc();
            let all = format!(
                "{}\n{}\n{}",
                doc.title.as_ref() as &str,
                e.chunk.heading_path().join("\n"),
                e.chunk.indexed_text()
            );
            support::support(question, &all)
        })
        .fold(0.0, f64::max)
}

/// Another wording worth retrieving for `question`: one that says something else and fits
/// within `limit` characters.
pub(super) fn usable_wording(
    other: Option<String>,
    question: &str,
    limit: usize,
) -> Option<String> {
    other
        .filter(|o| o.trim() != question.trim())
        .filter(|o| o.chars().nth(limit).is_none())
}

/// The round of a run from its parts' retrievals: one part's as it is, several merged.
pub(super) fn one_round(mut retrievals: Vec<Retrieval>, budget: RetrievalBudget) -> Retrieval {
    if retrievals.len() == 1 {
        retrievals.pop().expect("one retrieval")
    } else {
        merge(retrievals, budget)
    }
}

/// The answer of a run no route could retrieve for, naming each route's status.
pub(super) fn cannot_retrieve_answer(routes: &[RouteReport]) -> String {
    format!(
        "cannot retrieve: {}",
        RetrieveError::CannotRetrieve {
            routes: routes.to_vec()
        }
        .to_string()
        .trim_start_matches("cannot retrieve: ")
    )
}

/// The evidence of several parts' retrievals as one round: their pieces taken in turn (each
/// part's best first), each chunk once, within `budget`.
fn merge(retrievals: Vec<Retrieval>, budget: RetrievalBudget) -> Retrieval {
    let mut out = Retrieval {
        evidence: Vec::new(),
        dropped: Vec::new(),
        budget_dropped: Vec::new(),
        ocr_twins: Vec::new(),
        truncated: false,
        routes: retrievals
            .first()
            .map(|r| r.routes.clone())
            .unwrap_or_default(),
        candidates: BTreeMap::new(),
        rerank: None,
        timings: Vec::new(),
    };
    let mut seen: BTreeSet<ChunkId> = BTreeSet::new();
    let mut chars = 0;
    let deepest = retrievals
        .iter()
        .map(|r| r.evidence.len())
        .max()
        .unwrap_or(0);
    for depth in 0..deepest {
        for r in &retrievals {
            let Some(e) = r.evidence.get(depth) else {
                continue;
            };
            if !seen.insert(e.chunk_id.clone()) {
                continue;
            }
            let len = e.chunk.char_len();
            if out.evidence.len() >= budget.max_chunks() || chars + len > budget.max_chars() {
                out.budget_dropped.push(e.chunk_id.clone());
                continue;
            }
            chars += len;
            out.evidence.push(Evidence {
                rank: out.evidence.len() + 1,
                ..e.clone()
            });
        }
    }
    for r in retrievals {
        out.dropped.extend(r.dropped);
        out.ocr_twins.extend(r.ocr_twins);
        for id in r.budget_dropped {
            if seen.insert(id.clone()) {
                out.budget_dropped.push(id);
            }
        }
        for (route, hits) in r.candidates {
            out.candidates.entry(route).or_default().extend(hits);
        }
    }
    out.truncated = !out.budget_dropped.is_empty();
    out
}
