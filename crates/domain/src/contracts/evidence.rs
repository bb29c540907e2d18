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
