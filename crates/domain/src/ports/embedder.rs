//! The embedder port.

use crate::contracts::{Embedding, EmbeddingSpace};

use super::errors::EmbedError;

/// Turns text into vectors of one [`EmbeddingSpace`].
///
/// # Contract
///
/// - [`space`](Self::space) MUST describe every vector the embedder returns: each returned
///   [`Embedding`] carries that space's identity and exactly `space().dims()` finite values.
/// - When the space's normalisation is L2, every returned vector MUST have unit length
///   (within 1e-3).
/// - Embedding MUST be deterministic: the same text gives the same vector on every call.
/// - [`embed_documents`](Self::embed_documents) MUST return one vector per input, in input
///   order, and MUST embed a batch as it embeds each text alone (within float tolerance):
///   batching and padding are invisible to the caller.
/// - [`embed_query`](Self::embed_query) MAY differ from embedding the same text as a document
///   (instruction prefixes for retrieval models), but MUST live in the same space.
/// - Input longer than the model's maximum sequence is truncated and the returned embedding
///   reports it ([`Embedding::truncated`]); it is never silently cut.
/// - An empty batch returns an empty list. An empty string is valid input.
/// - When the model cannot be loaded or reached, methods MUST fail fast with
///   [`EmbedError::Unavailable`], never hang.
pub trait Embedder: Send + Sync {
    /// The space of every vector this embedder produces.
    fn space(&self) -> &EmbeddingSpace;

    /// Embeds passages for indexing.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError>;

    /// Embeds a search query.
    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError>;
}
