//! What a generator is given and what a source says now: the data the generator and source
//! ports exchange, defined here so that the rules which build and check them (context
//! rendering, the revision re-check) need no port.

use super::chunk::{ChunkId, PageSpan};
use super::values::{Revision, Scope};

/// The current state of a document at its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRecord {
    /// The revision the source holds now.
    pub revision: Revision,
    /// The scope the source assigns now.
    pub scope: Scope,
    /// False when the source hides the document (unpublished, embargoed).
    pub visible: bool,
}

/// One piece of evidence as the generator sees it: numbered, with its provenance. The text is
/// untrusted data from the knowledge base, never instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceBlock {
    /// The citation marker number, from 1: the answer cites this block as `[marker]`.
    pub marker: u32,
    /// The chunk behind the block.
    pub chunk_id: ChunkId,
    /// The document title.
    pub title: String,
    /// Where the document came from.
    pub source: String,
    /// The chunk's heading path, outermost first.
    pub heading_path: Vec<String>,
    /// The pages of its document the chunk lies on (a PDF's).
    pub pages: Option<PageSpan>,
    /// The chunk's text.
    pub text: String,
}

/// How a model samples an answer, as a caller asks (unset: the generator's configuration).
/// Generators that do not sample (the extractive one) ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sampling {
    /// The sampling temperature in thousandths (the OpenAI API's 0.0 to 2.0 is 0 to 2000).
    pub temperature_milli: Option<u16>,
    /// The most tokens the answer may take (a generator keeps its own cap when that is lower).
    pub max_tokens: Option<u32>,
}

impl Sampling {
    /// The highest temperature accepted, in thousandths.
    pub const MAX_TEMPERATURE_MILLI: u16 = 2000;

    /// Sampling at `temperature` (0.0 to 2.0) with at most `max_tokens` tokens; `None` for a
    /// temperature out of range or not a number.
    pub fn new(temperature: Option<f64>, max_tokens: Option<u32>) -> Option<Self> {
        let temperature_milli = match temperature {
            None => None,
            Some(t) if (0.0..=2.0).contains(&t) => Some((t * 1000.0).round() as u16),
            Some(_) => return None,
        };
        Some(Self {
            temperature_milli,
            max_tokens,
        })
    }

    /// The temperature, when one was asked for.
    pub fn temperature(&self) -> Option<f64> {
        self.temperature_milli.map(|t| f64::from(t) / 1000.0)
    }
}

/// One generation request.
///
/// Model generators send [`system`](Self::system) and [`prompt`](Self::prompt), which already
/// embed the delimited sources and any feedback; strategies that work on structure (the
/// extractive generator) read [`question`](Self::question) and [`sources`](Self::sources).
/// Both views describe the same request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationRequest {
    /// System instructions.
    pub system: String,
    /// The user turn: question, delimited sources and feedback from a rejected attempt.
    pub prompt: String,
    /// The question as asked.
    pub question: String,
    /// This round's evidence, numbered from 1.
    pub sources: Vec<SourceBlock>,
    /// Why the previous attempt was rejected, if this is a retry.
    pub feedback: Option<String>,
    /// The attempt number, from 1.
    pub attempt: u32,
    /// The exact text to answer with when the sources do not answer the question.
    pub no_material: String,
    /// How the caller asked the model to sample.
    pub sampling: Sampling,
}
