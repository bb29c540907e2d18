//! The text generation port.

use super::errors::GenerateError;

/// One generation request: instructions and the user turn (which embeds the evidence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationRequest {
    /// System instructions.
    pub system: String,
    /// The prompt: question, delimited evidence and any feedback from a rejected attempt.
    pub prompt: String,
}

/// Produces text from a prompt.
///
/// # Contract
///
/// - [`identity`](Self::identity) names the strategy or model (recorded in traces).
/// - [`generate`](Self::generate) returns the whole answer text. It MUST NOT hang: network
///   generators apply a timeout and report [`GenerateError::Unavailable`].
/// - [`generate_streaming`](Self::generate_streaming) passes text deltas to `on_delta` as they
///   arrive and returns the whole text; the default calls `generate` and emits one delta.
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
}
