//! The units of every source block as candidates for the answer, each with its terms for
//! matching and the terms of its context (the sentence before it, its document's opening
//! sentence), and the terms themselves: Simplified, Latin words lightly stemmed.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_domain::ports::GenerationRequest;
use zhiku_text::{is_cjk, terms, to_simplified};

use super::block::{Kind, Unit, parse_block};

/// A unit of some block, scored.
pub(super) struct Candidate {
    pub(super) marker: u32,
    pub(super) block: usize,
    pub(super) index: usize,
    pub(super) kind: Kind,
    pub(super) text: String,
    pub(super) line: usize,
    pub(super) terms: BTreeSet<String>,
    pub(super) context: BTreeSet<String>,
    /// The text it is read under: its title, headings and label, the sentence before it.
    pub(super) read_with: String,
    /// The semantic coverage from the embedder, if any.
    pub(super) semantic: f64,
    /// Whether it answers a question of the evidence (an FAQ's).
    pub(super) answers_question: bool,
}

/// Every source block read into units, and every unit as a candidate with its terms and the
/// terms of its context (the sentence before it in its paragraph included).
pub(super) fn read_sources(request: &GenerationRequest) -> (Vec<Vec<Unit>>, Vec<Candidate>) {
    let mut blocks: Vec<Vec<Unit>> = Vec::new();
    let mut candidates = Vec::new();
    for (b, block) in request.sources.iter().enumerate() {
        let units = parse_block(block);
        for (index, u) in units.iter().enumerate() {
            let mut context = match_terms(&u.context);
            let mut read_with = u.context.clone();
            // A sentence is read in its paragraph: the one before it may name its subject.
            if let Some(prev) = index.checked_sub(1).map(|p| &units[p])
                && prev.para == u.para
                && matches!(prev.kind, Kind::Prose | Kind::Intro)
            {
                context.extend(match_terms(&prev.text));
                read_with.push('\n');
                read_with.push_str(&prev.text);
            }
            let mut terms = match_terms(&u.text);
            terms.extend(match_terms(&u.label));
            context.retain(|t| !terms.contains(t));
            candidates.push(Candidate {
                marker: block.marker,
                block: b,
                index,
                kind: u.kind,
                text: u.text.clone(),
                line: u.line,
                terms,
                context,
                read_with,
                semantic: 0.0,
                answers_question: u.answers_question,
            });
        }
        blocks.push(units);
    }
    (blocks, candidates)
}

/// A document's opening sentence names its subject ("zhiku is a Cargo workspace …"): when the
/// evidence holds a document's first chunk, the terms of its first sentence are context for
/// every sentence of that document's blocks.
pub(super) fn add_document_leads(
    request: &GenerationRequest,
    blocks: &[Vec<Unit>],
    candidates: &mut [Candidate],
) {
    let leads: BTreeMap<&str, BTreeSet<String>> = request
        .sources
        .iter()
        .zip(blocks)
        .filter(|(s, _)| s.chunk_id.start() == 0)
        .filter_map(|(s, units)| {
            let lead = units.iter().find(|u| u.kind == Kind::Prose)?;
            Some((s.source.as_str(), match_terms(&lead.text)))
        })
        .collect();
    if leads.is_empty() {
        return;
    }
    for c in candidates.iter_mut() {
        if let Some(lead) = leads.get(request.sources[c.block].source.as_str()) {
            c.context
                .extend(lead.iter().filter(|t| !c.terms.contains(*t)).cloned());
        }
    }
}

/// A lone Chinese character of the question ("前" of "之前", "做" of "怎么做") is a term of
/// its own only where function characters surround it; in the evidence the same character is
/// usually inside a bigram ("排序之前生效": "前生"). A unit holds it when one of its bigrams does.
pub(super) fn add_lone_characters(question: &BTreeSet<String>, candidates: &mut [Candidate]) {
    let lone: Vec<(&str, char)> = question
        .iter()
        .filter_map(|t| {
            let mut chars = t.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if is_cjk(c) => Some((t.as_str(), c)),
                _ => None,
            }
        })
        .collect();
    if lone.is_empty() {
        return;
    }
    let holds = |set: &BTreeSet<String>, c: char| set.iter().any(|t| t.contains(c));
    for cand in candidates.iter_mut() {
        for &(t, c) in &lone {
            if cand.terms.contains(t) {
                continue;
            }
            if holds(&cand.terms, c) {
                cand.terms.insert(t.to_string());
                cand.context.remove(t);
            } else if holds(&cand.context, c) {
                cand.context.insert(t.to_string());
            }
        }
    }
}

/// The terms of `text` for matching: the domain's terms of its Simplified form, Latin words
/// lightly stemmed, minus a few words that carry nothing in a question.
pub(super) fn match_terms(text: &str) -> BTreeSet<String> {
    terms(&to_simplified(text))
        .into_iter()
        .filter(|t| !EXTRA_STOP.contains(&t.as_str()))
        .map(|t| stem(&t))
        .collect()
}

/// English words the domain's list keeps that say nothing about what a question asks.
const EXTRA_STOP: &[&str] = &[
    "多少", "几种", "几个", "多久", "多长", "多大", "哪里", "哪儿", "没", "么办", "情况", "况下",
    "时候", "about", "also", "been", "being", "could", "get", "had", "has", "have", "into", "many",
    "much", "our", "should", "so", "than", "their", "them", "then", "these", "they", "those", "up",
    "us", "we", "will", "would",
];

/// A light English stemmer for matching only: plural and verb endings, a final e, a doubled
/// final consonant ("crates" and "crate", "stored" and "store", "running" and "run").
fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_string();
    }
    let mut w = word.to_string();
    for (suffix, keep) in [
        ("ies", 3),
        ("sses", 4),
        ("ing", 3),
        ("ed", 3),
        ("es", 3),
        ("s", 3),
    ] {
        if w.len() >= suffix.len() + keep && w.ends_with(suffix) {
            if suffix == "s" && (w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
                break;
            }
            w.truncate(w.len() - suffix.len());
            if suffix == "ies" {
                w.push('y');
            } else if suffix == "sses" {
                w.push_str("ss");
            }
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    let b = w.as_bytes();
    if b.len() > 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiouls".contains(&b[b.len() - 1]) {
        w.pop();
    }
    w
}
