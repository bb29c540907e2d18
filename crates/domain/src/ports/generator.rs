//! The text generation port.

pub use crate::contracts::{GenerationRequest, SourceBlock};

use super::errors::GenerateError;

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
    /// The tokens the generator's server says it read and wrote for this answer, when it says
    /// (an OpenAI-compatible server's `usage`); `None` for a generator that counts nothing.
    pub usage: Option<ServedUsage>,
}

/// Tokens as a generator's server counted them: its own tokenizer's figures, read back to
/// check the answerer's count against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServedUsage {
    /// Tokens of the request (system prompt, prompt and the chat template's own).
    pub prompt_tokens: usize,
    /// Tokens of the answer.
    pub completion_tokens: usize,
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
///   delegates MUST name the delegate that answered, and wrappers MUST forward it, with the
///   server's token `usage` when the delegate read one (never made up: `None` otherwise).
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
            usage: None,
        })
    }
}
