//! The text generation port.

use crate::contracts::{ChunkId, PageSpan};

use super::errors::GenerateError;

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
}

/// What a generation produced, and which generator produced it: a generator that delegates
/// (a fallback chain) names the one that answered and says why the others did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The answer text.
    pub text: String,
    /// The identity of the generator that wrote it.
    pub generator: String,
    /// What the caller should know about how it was written (a generator that failed and was
    /// fallen back from), in order; usually empty.
    pub notices: Vec<String>,
}

/// Produces text from a prompt.
///
/// # Contract
///
/// - [`identity`](Self::identity) names the strategy or model (recorded in traces).
/// - [`generate`](Self::generate) returns the whole answer text, citing sources with `[n]`
///   markers, or exactly [`GenerationRequest::no_material`] when the sources do not answer.
///   It MUST NOT hang: network generators apply a timeout and report
///   [`GenerateError::Unavailable`].
/// - [`generate_streaming`](Self::generate_streaming) passes text deltas to `on_delta` as they
///   arrive and returns the whole text; the default calls `generate` and emits one delta.
/// - [`generate_attributed`](Self::generate_attributed) is `generate` with the identity of
///   whoever wrote the text; the default names [`identity`](Self::identity). A generator that
///   delegates MUST name the delegate that answered, and wrappers MUST forward it.
pub trait Generator: Send + Sync {
    /// The strategy or model identity.
    fn identity(&self) -> String;

    /// Generates the answer text.
    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError>;

    /// Generates, passing deltas as they arrive.
    fn generate_streaming(
        &self,
        request: &GenerationRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<String, GenerateError> {
        let text = self.generate(request)?;
        on_delta(&text);
        Ok(text)
    }

    /// Generates the answer text, saying which generator wrote it.
    fn generate_attributed(&self, request: &GenerationRequest) -> Result<Generated, GenerateError> {
        Ok(Generated {
            text: self.generate(request)?,
            generator: self.identity(),
            notices: Vec::new(),
        })
    }
}
