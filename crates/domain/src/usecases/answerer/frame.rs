//! What a run shows its caller: the answer frame, its citations and evidence, how the run
//! ended, and the pure functions that build them from the run's outcome.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::contracts::{ChunkId, DocId, PageBox, PageSpan, SectionId};
use crate::ports::{GenerateError, Intent, PhaseTime, Plan, ServedUsage, SourceError};
use crate::rules::budget::TokenBudget;
use crate::rules::citation;
use crate::rules::fusion::Route;
use zhiku_text as text;

use super::super::retriever::{Evidence, Retrieval, RouteReport};
use super::cards::SourceCard;

/// How a run ended. The four are never confused: "nothing relevant" is `not_found`, "could not
/// look" is `cannot_retrieve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// An answer whose citations all name this round's evidence.
    Answered,
    /// Retrieval ran and found nothing that answers the question.
    NotFound,
    /// No retrieval route could run.
    CannotRetrieve,
    /// The generator kept producing answers whose citations failed; nothing is shown.
    Blocked,
    /// Small talk (a greeting, thanks): replied to directly, nothing retrieved or cited.
    SmallTalk,
}

impl AnswerStatus {
    /// `answered`, `not_found`, `cannot_retrieve` or `blocked`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::NotFound => "not_found",
            Self::CannotRetrieve => "cannot_retrieve",
            Self::Blocked => "blocked",
            Self::SmallTalk => "small_talk",
        }
    }
}

/// One citation of an answer, resolved to its chunk and document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Citation {
    /// The `[n]` marker in the answer.
    pub marker: u32,
    /// The cited chunk.
    pub chunk_id: ChunkId,
    /// Its document.
    pub doc_id: DocId,
    /// The document title.
    pub title: String,
    /// Where the document came from: its path, or its reference at the source it was synced
    /// from (`docs/a.md@3f2c1e0a9b7d`, a page's URL).
    pub source: String,
    /// Where a browser shows the document at its source (a permalink), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The headings above the cited chunk, outermost first.
    pub heading_path: Vec<String>,
    /// The section the cited chunk sits in (its document and heading path): read it whole with
    /// `zhiku read DOC#SECTION` or `GET /v1/documents/{id}/sections/{section}`.
    pub section: SectionId,
    /// The pages of the document the cited chunk lies on (a PDF's), as `[first, last]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageSpan>,
    /// The page the quote itself is on: the chunk's first page plus the page breaks before
    /// the quote in its text (a chunk over pages 1–2 quoted on page 2 says 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The document revision the chunk was read from (checked against the source this round).
    pub revision: String,
    /// The sentence of the chunk that best supports the citing text.
    pub quote: String,
    /// Where the quote stands on its page: the boxes of the lines it is on (a PDF's or a
    /// picture's; empty for a document read without positions). Fractions of the page from
    /// its top-left corner; `GET /v1/originals/{id}/pages/{n}` serves the page.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<PageBox>,
    /// True when the cited text was read by OCR (a scan or a picture), not a text layer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ocr: bool,
    /// True when OCR read a line of the quote with low confidence
    /// ([`LOW_CONFIDENCE`](crate::contracts::LOW_CONFIDENCE)): check it on the page.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub low_confidence: bool,
}

/// One piece of this round's evidence, as shown beside the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceSummary {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// 1-based rank after fusion, checks and budget.
    pub rank: usize,
    /// The fused score.
    pub score: f64,
    /// Each route's own score for the chunk.
    pub scores: BTreeMap<Route, f32>,
    /// Each route's rank for the chunk.
    pub route_ranks: BTreeMap<Route, usize>,
    /// The document.
    pub doc_id: DocId,
    /// The document title.
    pub title: String,
    /// Where the document came from.
    pub source: String,
    /// The section the chunk sits in.
    pub section: SectionId,
    /// Offset of the chunk's first character in its document's text.
    pub start: usize,
    /// Offset after its last character.
    pub end: usize,
    /// True for a chunk the context policy brought in around the evidence (of its section, or
    /// a neighbour), which no route ranked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub around: bool,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerFrame {
    /// The question as asked.
    pub question: String,
    /// The standalone question retrieval ran on, when it differs from the question (a
    /// follow-up read in its conversation, a greeting dropped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<String>,
    /// What the question was: `knowledge`, `multi_part`, `comparison` or `small_talk`.
    pub intent: Intent,
    /// The sub-questions of a several-part question (the sides of a comparison), each
    /// retrieved on its own and answered in turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The answer text (with `[n]` markers), the no-material sentence, or why there is no
    /// answer. Never uncited generator text.
    pub answer: String,
    /// How the run ended.
    pub status: AnswerStatus,
    /// The answer's citations, in marker order.
    pub citations: Vec<Citation>,
    /// The documents behind the answer, one card each: what of each the generator saw and
    /// cited, its revision and when it was indexed, and whether it changed at its source
    /// since (cited documents first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceCard>,
    /// The evidence the generator saw, in rank order.
    pub evidence: Vec<EvidenceSummary>,
    /// Each route's status.
    pub routes: Vec<RouteReport>,
    /// The run's trace ID.
    pub trace_id: String,
    /// True when the budget left evidence out.
    pub retrieval_truncated: bool,
    /// Generation attempts made.
    pub attempts: u32,
    /// The identity of the generator that answered (empty when generation did not run).
    pub generator: String,
    /// How the answer came about, when it is worth saying (a generator fell back to another).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Total run time in milliseconds.
    pub latency_ms: f64,
    /// Time per phase of the run, in order (`plan`, `retrieval`, `generation.<attempt>`).
    pub stages_ms: Vec<PhaseTime>,
    /// The support check of the answer shown (absent when nothing was answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<SupportSummary>,
    /// The run in tokens: history read, context, prompt and answer, with the limits that
    /// applied (absent when the answerer counts no tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenUsage>,
}

/// A run's sizes in tokens, counted with the generator's tokenizer or an estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenUsage {
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// True when the counts are the generator's own tokenizer's, false for an estimate.
    pub exact: bool,
    /// Earlier turns the planner read (the most recent within `budget.history`).
    pub history_turns: usize,
    /// Their tokens.
    pub history: usize,
    /// Tokens of the source blocks the generator saw, each as rendered.
    pub context: usize,
    /// Tokens of the run's largest request (system prompt and prompt): what the model's
    /// window had to hold (0 when nothing was generated).
    pub prompt: usize,
    /// Tokens of the answer shown (0 when nothing was generated).
    pub answer: usize,
    /// The limits in tokens that applied (`null`: none).
    pub budget: TokenBudget,
    /// The generator server's own counts for the answer shown, when it gave them (an
    /// OpenAI-compatible server's `usage`): its tokenizer's figures beside the ones above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served: Option<ServedUsage>,
}

/// How the sentences of an answer fared against the blocks they cite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SupportSummary {
    /// Sentences that state something (connectives and lead-ins excepted).
    pub claims: usize,
    /// The check (`lexical-v1`).
    pub method: String,
    /// Of those, sentences the cited blocks support (all of them in an answer shown: an
    /// unsupported one is rejected and retried).
    pub supported: usize,
}

/// Why a run could not produce a frame.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The question or the policy is malformed.
    #[error("invalid question: {0}")]
    InvalidInput(String),
    /// The revision check could not read the source.
    #[error("cannot check retrieved evidence against the source: {0}")]
    Source(#[from] SourceError),
    /// The generator failed (it is unreachable, timed out or refused the request).
    #[error(transparent)]
    Generate(#[from] GenerateError),
}

/// What was asked, as the frame reports it.
pub(super) struct Asked<'f> {
    pub(super) question: &'f str,
    pub(super) rewritten: Option<String>,
    pub(super) intent: Intent,
    pub(super) parts: Vec<String>,
}

impl<'f> Asked<'f> {
    /// `question` as `plan` read it: the standalone rewrite when it differs from the question.
    pub(super) fn of(question: &'f str, plan: &Plan) -> Self {
        Self {
            question,
            rewritten: (plan.standalone.trim() != question.trim()).then(|| plan.standalone.clone()),
            intent: plan.intent,
            parts: plan.parts.clone(),
        }
    }
}

/// What a run decided, before the recording adds its trace ID, timings and notices.
pub(super) struct Frame<'f> {
    pub(super) asked: Asked<'f>,
    pub(super) answer: String,
    pub(super) status: AnswerStatus,
    pub(super) citations: Vec<Citation>,
    pub(super) retrieval: Option<&'f Retrieval>,
    pub(super) routes: Vec<RouteReport>,
    pub(super) attempts: u32,
    pub(super) generator: String,
}

impl<'f> Frame<'f> {
    /// A run that ended before generation (small talk, nothing retrievable, no evidence): no
    /// citation, no attempt, no generator.
    pub(super) fn ungenerated(
        asked: Asked<'f>,
        answer: String,
        status: AnswerStatus,
        routes: Vec<RouteReport>,
        retrieval: Option<&'f Retrieval>,
    ) -> Self {
        Self {
            asked,
            answer,
            status,
            citations: Vec::new(),
            retrieval,
            routes,
            attempts: 0,
            generator: String::new(),
        }
    }
}

pub(super) fn summarise(e: &Evidence) -> EvidenceSummary {
    EvidenceSummary {
        chunk_id: e.chunk_id.clone(),
        rank: e.rank,
        score: e.score,
        scores: e.routes.iter().map(|r| (r.route, r.score)).collect(),
        route_ranks: e.routes.iter().map(|r| (r.route, r.rank)).collect(),
        doc_id: e.chunk.doc_id().clone(),
        title: e.chunk.doc().title.to_string(),
        source: e.chunk.doc().reference().to_string(),
        section: e.chunk.section().clone(),
        start: e.chunk.start(),
        end: e.chunk.end(),
        around: e.routes.is_empty(),
    }
}

/// The answer text that cites `marker`: each sentence containing it.
fn citing_text(answer: &str, marker: u32) -> String {
    let needle = format!("[{marker}]");
    let parts: Vec<String> = text::sentences(answer)
        .into_iter()
        .filter(|s| s.contains(&needle) || citation::markers(s).contains(&marker))
        .collect();
    if parts.is_empty() {
        answer.to_string()
    } else {
        parts.join(" ")
    }
}

/// The sentence of `content` sharing the most terms with `claim`.
fn best_quote(content: &str, claim: &str) -> String {
    let claim_terms = text::terms(claim);
    let mut best: Option<(usize, String)> = None;
    for sentence in text::sentences(content) {
        let overlap = text::terms(&sentence).intersection(&claim_terms).count();
        if best.as_ref().is_none_or(|(b, _)| overlap > *b) {
            best = Some((overlap, sentence));
        }
    }
    let quote = best.map(|(_, s)| s).unwrap_or_default();
    if quote.chars().count() > 300 {
        let mut q: String = quote.chars().take(299).collect();
        q.push('…');
        q
    } else {
        quote
    }
}

/// The page `quote` is on in a chunk of `content` over `pages`: the first page plus the page
/// breaks (form feeds, see `zhiku-formats`) before where the quote starts. `None` without
/// pages; the first page when the quote is not found as written.
fn quote_page(content: &str, pages: Option<PageSpan>, at: Option<usize>) -> Option<u32> {
    let pages = pages?;
    let breaks = content[..at.unwrap_or(0)].matches('\u{c}').count() as u32;
    Some((pages.first() + breaks).min(pages.last()))
}

/// The byte where `quote` (its first 40 characters, a trailing `…` dropped) starts in
/// `content`; `None` when it is not found as written.
fn quote_at(content: &str, quote: &str) -> Option<usize> {
    let head: String = quote.trim_end_matches('…').chars().take(40).collect();
    (!head.is_empty())
        .then(|| content.find(head.as_str()))
        .flatten()
}

/// The characters of `content` the quote found at byte `at` covers.
fn quote_chars(content: &str, quote: &str, at: usize) -> (usize, usize) {
    let start = content[..at].chars().count();
    (start, start + quote.trim_end_matches('…').chars().count())
}

pub(super) fn citations_for(
    answer: &str,
    cited: &[(u32, ChunkId)],
    evidence: &[Evidence],
) -> Vec<Citation> {
    let mut out: Vec<Citation> = cited
        .iter()
        .filter_map(|(marker, id)| {
            let e = evidence.iter().find(|e| &e.chunk_id == id)?;
            let doc = e.chunk.doc();
            let quote = best_quote(e.chunk.content(), &citing_text(answer, *marker));
            let at = quote_at(e.chunk.content(), &quote);
            let page = quote_page(e.chunk.content(), e.chunk.pages(), at);
            let boxes: Vec<PageBox> = at
                .map(|at| quote_chars(e.chunk.content(), &quote, at))
                .map(|(start, end)| e.chunk.boxes_of(start, end))
                .unwrap_or_default()
                .into_iter()
                .filter(|b| page.is_none_or(|p| b.page == p))
                .collect();
            Some(Citation {
                page,
                ocr: crate::rules::ocr::is_ocr(&e.chunk),
                low_confidence: boxes.iter().any(PageBox::is_doubtful),
                boxes,
                marker: *marker,
                chunk_id: id.clone(),
                doc_id: e.chunk.doc_id().clone(),
                title: doc.title.to_string(),
                source: doc.reference().to_string(),
                url: doc.link().map(str::to_string),
                heading_path: e.chunk.heading_path().to_vec(),
                section: e.chunk.section().clone(),
                pages: e.chunk.pages(),
                revision: doc.revision.to_string(),
                quote,
            })
        })
        .collect();
    out.sort_by_key(|c| c.marker);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page of `quote` as the citation finds it.
    fn page_of(content: &str, pages: Option<PageSpan>, quote: &str) -> Option<u32> {
        quote_page(content, pages, quote_at(content, quote))
    }

    #[test]
    fn a_quote_is_placed_on_its_own_page() {
        let content = "第一页的内容。\n\n\u{c}\n\n保修期为三年。\n\n\u{c}\n\n第三页。";
        let span = PageSpan::new(4, 6).ok();
        assert_eq!(page_of(content, span, "第一页的内容。"), Some(4));
        assert_eq!(page_of(content, span, "保修期为三年。"), Some(5));
        assert_eq!(page_of(content, span, "第三页。"), Some(6));
        // Not found as written: the chunk's first page; no pages: none.
        assert_eq!(page_of(content, span, "别处"), Some(4));
        assert_eq!(page_of(content, None, "保修期为三年。"), None);
        // A truncated quote is found by its start.
        assert_eq!(page_of(content, span, "保修期为…"), Some(5));
    }
}
