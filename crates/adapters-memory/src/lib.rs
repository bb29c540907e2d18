//! Reference in-memory adapters for every zhiku port.
//!
//! These are the executable specification of the port contracts: they run on every
//! `cargo test`, pass the whole contract suite, and back the `dev` profile. Nothing here touches
//! a file.
//!
//! - [`MemoryVectorIndex`]: exact cosine search over normalised vectors.
//! - [`MemoryLexicalIndex`]: BM25 over a simple analyzer (CJK unigrams and bigrams, Latin
//!   words), the reference for lexical adapters.
//! - [`HashingEmbedder`]: the test double embedder. It hashes tokens into a fixed number of
//!   dimensions: deterministic and fast, with **no semantics** beyond shared tokens.
//! - [`MemoryCatalogStore`]: the catalog kept in memory, shared by its clones.
//! - [`MemorySourceStore`], [`MemoryTraceSink`].
//! - [`MemoryDocumentSource`] and [`MemoryMirror`]: a document source and a sync's mirror.

mod analyzer;
mod catalog;
mod document_source;
mod embedder;
mod lexical;
mod source;
mod table;
mod trace;
mod vector;

pub use analyzer::simple_tokens;
pub use catalog::MemoryCatalogStore;
pub use document_source::{MemoryDocumentSource, MemoryMirror};
pub use embedder::HashingEmbedder;
pub use lexical::MemoryLexicalIndex;
pub use source::MemorySourceStore;
pub use trace::MemoryTraceSink;
pub use vector::MemoryVectorIndex;
