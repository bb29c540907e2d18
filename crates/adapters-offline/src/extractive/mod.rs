//! The extractive generator: answers with the evidence's own sentences.
//!
//! Each source block is read as Markdown-ish structure before anything is scored: headings,
//! bold lead-in labels ("**Term.** definition"), questions (an FAQ's "问：…？"), sentences that
//! introduce a list ("…依次经过这些环节："), list items, tables and code. Only sentences that
//! read as an answer are quoted — prose and list items, or an introducing sentence together
//! with its items — while headings, labels and questions lend their terms to the sentences
//! under them as context. A quoted sentence keeps its words verbatim; only inline Markdown
//! markup (`**`, backticks, link syntax) and list or FAQ labels are taken off.
//!
//! One file per role: `block.rs` reads a block's structure into units, `candidate.rs` gives
//! every unit its terms and context, `score.rs` weighs the question's terms and picks the
//! sentences, `semantic.rs` lets the embedder's similarity count, and `compose.rs` writes the
//! cited answer, within `config.rs`'s tuning; this module holds the generator and its
//! [`Generator`] implementation.

mod block;
mod candidate;
mod compose;
mod config;
mod score;
mod semantic;
#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock};

use zhiku_domain::ports::{Embedder, GenerateError, GenerationRequest, Generator};

use candidate::{add_document_leads, add_lone_characters, match_terms, read_sources};
use compose::render;
pub use config::ExtractiveConfig;
use score::{Scoring, asked_terms, frame_terms, named_terms, pick, term_weights};
use semantic::{Neutral, add_semantic};

/// Answers with the sentences of the evidence that cover the question best, each cited with its
/// source's marker. Deterministic: the same request (and embedder) always gives the same answer.
///
/// Scoring: the question's terms (CJK bigrams, Latin words lightly stemmed, question words
/// removed; Traditional characters folded to Simplified for matching only) are weighted by how
/// rare they are among the evidence's sentences; a sentence's coverage is the weight of the
/// question terms it contains — and, at [`ExtractiveConfig::context_weight`], of those its
/// headings and labels contain — over the weight of all question terms, nudged by the source's
/// rank. A CJK bigram found nowhere whose characters the question's other, found, bigrams hold
/// spans a word boundary ("时文" in "…时文档…") and weighs nothing. With an embedder (the dense
/// route's), a paraphrase that shares no word can still be answered, by the one sentence whose
/// meaning stands out (see [`with_embedder`](Self::with_embedder)). Sentences are picked
/// greedily by the weight of question terms they add, then put back in the evidence's order.
#[derive(Clone, Default)]
pub struct ExtractiveGenerator {
    config: ExtractiveConfig,
    embedder: Option<Arc<dyn Embedder>>,
    /// The neutral sentences under `embedder`, embedded on first use (`None`: it failed).
    neutral: Arc<OnceLock<Option<Neutral>>>,
}

impl std::fmt::Debug for ExtractiveGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtractiveGenerator")
            .field("config", &self.config)
            .field(
                "embedder",
                &self
                    .embedder
                    .as_ref()
                    .map(|e| e.space().identity().to_string()),
            )
            .finish()
    }
}

impl ExtractiveGenerator {
    /// A generator with `config`, purely lexical.
    pub fn new(config: ExtractiveConfig) -> Self {
        Self {
            config,
            embedder: None,
            neutral: Arc::default(),
        }
    }

    /// The same generator, also scoring sentences by their similarity to the question under
    /// `embedder` (the dense route's), so that a paraphrase can find its sentence. Should the
    /// embedder fail, the answer is the lexical one.
    ///
    /// Similarity is calibrated per question: `(cos − b) / (1 − b)`, where `b` is the question's
    /// mean similarity to neutral sentences of its script. Even so, on the golden set a
    /// sentence that merely shares the knowledge base's subject was as similar to a question
    /// the knowledge base cannot answer ("Does zhiku support image or audio search?": 0.52 under
    /// multilingual-e5-small, 0.61 under all-MiniLM-L6-v2) as answering sentences were to
    /// theirs (0.05 to 0.76): a sentence embedding tells what a text is about, not whether it
    /// answers. So similarity decides nothing on its own unless one sentence stands out: at
    /// least [`semantic_field`](ExtractiveConfig::semantic_field) distinct sentences, and the
    /// most similar above the next by [`semantic_margin`](ExtractiveConfig::semantic_margin).
    /// That sentence's coverage is then the higher of its lexical and its calibrated semantic
    /// one; every other sentence is scored lexically.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self.neutral = Arc::default();
        self
    }

    /// The answer for `request` (the no-material sentence when nothing covers the question).
    pub fn compose(&self, request: &GenerationRequest) -> String {
        let mut question = match_terms(&request.question);
        if question.is_empty() {
            return request.no_material.clone();
        }
        // What the question asks of its subject is looked for as such: "有多长" for "长".
        let asked = asked_terms(&request.question);
        question.extend(asked.iter().cloned());
        let (blocks, mut candidates) = read_sources(request);
        add_document_leads(request, &blocks, &mut candidates);
        add_lone_characters(&question, &mut candidates);
        if let Some(embedder) = &self.embedder {
            add_semantic(
                embedder.as_ref(),
                &self.neutral,
                &self.config,
                &request.question,
                &blocks,
                &mut candidates,
            );
        }
        let weight = term_weights(&question, &frame_terms(&request.question), &candidates);
        let named = named_terms(&request.question);
        let Some(scoring) = Scoring::new(weight, asked, named, &request.question, &self.config)
        else {
            return request.no_material.clone();
        };
        match pick(&self.config, &blocks, &candidates, &scoring) {
            Some(picked) => render(&self.config, &blocks, &candidates, &picked),
            None => request.no_material.clone(),
        }
    }
}

impl Generator for ExtractiveGenerator {
    fn identity(&self) -> String {
        match &self.embedder {
            None => format!(
                "extractive-v2(min_coverage={},max_sentences={})",
                self.config.min_coverage, self.config.max_sentences
            ),
            Some(e) => format!(
                "extractive-v2(min_coverage={},max_sentences={},semantic={},margin={})",
                self.config.min_coverage,
                self.config.max_sentences,
                e.space().identity(),
                self.config.semantic_margin
            ),
        }
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        Ok(self.compose(request))
    }
}
