//! Source cards: the answer's evidence grouped by document — what of each document the
//! generator saw and cited, at which revision, and whether the document changed at its source
//! since it was indexed (its matching chunks were then left out by the revision check).

use serde::Serialize;

use crate::contracts::{ChunkId, DocId, PageSpan, SectionId, Timestamp};
use crate::rules::revision::DropReason;

use super::super::retriever::{Dropped, Evidence};

/// One document behind an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceCard {
    /// The document.
    pub doc_id: DocId,
    /// Its title (empty for a document only known as changed, until the service names it).
    pub title: String,
    /// Where it came from: its path, or its reference at a synced source.
    pub source: String,
    /// Where a browser shows it at its source, when it has a permalink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The revision the chunks used were read from (checked against the source this round);
    /// for a changed document, the revision that was indexed.
    pub revision: String,
    /// When that revision was indexed (filled by the service from its catalog).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<Timestamp>,
    /// The answer's markers that cite it, in order.
    pub markers: Vec<u32>,
    /// Its chunks in the context the generator saw.
    pub chunks_used: usize,
    /// Of those, the chunks the answer cites.
    pub chunks_cited: usize,
    /// The sections the chunks used sit in, best-ranked first.
    pub sections: Vec<CardSection>,
    /// The pages the chunks used lie on, as `[first, last]` (documents with pages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageSpan>,
    /// Set when the document changed at its source since it was indexed: its chunks that
    /// matched were not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<SourceChange>,
}

impl SourceCard {
    /// The card of `doc_id` at `revision` with nothing used, cited or said of it yet.
    fn of(doc_id: &DocId, revision: String) -> Self {
        Self {
            doc_id: doc_id.clone(),
            title: String::new(),
            source: String::new(),
            url: None,
            revision,
            indexed_at: None,
            markers: Vec::new(),
            chunks_used: 0,
            chunks_cited: 0,
            sections: Vec::new(),
            pages: None,
            changed: None,
        }
    }
}

/// A section of a card's document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardSection {
    /// The section (read it whole at `/v1/documents/{id}/sections/{section}`).
    pub section: SectionId,
    /// Its headings, outermost first.
    pub heading_path: Vec<String>,
}

/// How a document changed since it was indexed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceChange {
    /// `stale_revision` (the source holds another revision) or `deleted`.
    pub reason: String,
    /// The revision at the source now, for a stale one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,
    /// Chunks of it that matched and were left out.
    pub chunks_left_out: usize,
}

/// The cards of an answer citing `cited` (marker, chunk): a card per document of `evidence`
/// (the context the generator saw),
/// the cited ones first in the order of their first marker, then the others by their best
/// rank; then a card per document the revision check found changed (stale or deleted) among
/// `dropped`. A document dropped as not visible or expired gets no card: the caller learns
/// nothing of it.
pub(super) fn source_cards(
    cited: &[(u32, &ChunkId)],
    evidence: &[Evidence],
    dropped: &[Dropped],
) -> Vec<SourceCard> {
    let mut cards: Vec<SourceCard> = Vec::new();
    for e in evidence {
        let at = match cards.iter().position(|c| &c.doc_id == e.chunk.doc_id()) {
            Some(at) => at,
            None => {
                let doc = e.chunk.doc();
                cards.push(SourceCard {
                    title: doc.title.to_string(),
                    source: doc.reference().to_string(),
                    url: doc.link().map(str::to_string),
                    ..SourceCard::of(e.chunk.doc_id(), doc.revision.to_string())
                });
                cards.len() - 1
            }
        };
        let card = &mut cards[at];
        card.chunks_used += 1;
        let cites: Vec<u32> = cited
            .iter()
            .filter(|(_, id)| **id == e.chunk_id)
            .map(|(marker, _)| *marker)
            .collect();
        if !cites.is_empty() {
            card.chunks_cited += 1;
            card.markers.extend(cites);
        }
        if !card
            .sections
            .iter()
            .any(|s| &s.section == e.chunk.section())
        {
            card.sections.push(CardSection {
                section: e.chunk.section().clone(),
                heading_path: e.chunk.heading_path().to_vec(),
            });
        }
        card.pages = widen(card.pages, e.chunk.pages());
    }
    for card in &mut cards {
        card.markers.sort_unstable();
        card.markers.dedup();
    }
    // Cited first, by first marker; the stable sort keeps the rest in rank order.
    cards.sort_by_key(|c| c.markers.first().copied().unwrap_or(u32::MAX));
    let mut seen = std::collections::BTreeSet::new();
    for d in dropped {
        if !seen.insert(&d.chunk_id) {
            continue;
        }
        let (reason, current) = match &d.reason {
            DropReason::StaleRevision { current, .. } => ("stale_revision", Some(current)),
            DropReason::Deleted => ("deleted", None),
            DropReason::NotVisible | DropReason::Expired { .. } => continue,
        };
        if let Some(card) = cards.iter_mut().find(|c| c.doc_id == d.doc_id) {
            if let Some(change) = card.changed.as_mut() {
                change.chunks_left_out += 1;
            }
            continue;
        }
        let indexed = match &d.reason {
            DropReason::StaleRevision { indexed, .. } => indexed.to_string(),
            _ => String::new(),
        };
        cards.push(SourceCard {
            changed: Some(SourceChange {
                reason: reason.to_string(),
                current_revision: current.map(|r| r.to_string()),
                chunks_left_out: 1,
            }),
            ..SourceCard::of(&d.doc_id, indexed)
        });
    }
    cards
}

/// The pages of `a` and `b` together.
fn widen(a: Option<PageSpan>, b: Option<PageSpan>) -> Option<PageSpan> {
    match (a, b) {
        (Some(a), Some(b)) => PageSpan::new(a.first().min(b.first()), a.last().max(b.last())).ok(),
        (a, b) => a.or(b),
    }
}
