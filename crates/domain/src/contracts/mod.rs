//! Contracts: validated value types shared by every part of zhiku.

mod access;
mod catalog;
mod chunk;
mod conversation;
mod document;
mod evidence;
mod filter;
mod policy;
mod position;
#[cfg(test)]
mod roundtrip_tests;
mod section;
mod space;
mod time;
mod values;

pub use access::{Access, AccessRule, MAX_READERS, Principal, RESTRICTED_TERM, reader_index_term};
pub use catalog::{Catalog, CatalogChanges, CatalogEntry, DocAbout};
pub use chunk::{Chunk, ChunkId, ChunkRecord, PageSpan};
pub use conversation::{Intent, Plan, Turn};
pub use document::{
    DocAttributes, Document, DocumentBuilder, Metadata, SOURCE_REF_KEY, SOURCE_URL_KEY,
    canonical_text, metadata_term,
};
pub use evidence::{GenerationRequest, Sampling, SourceBlock, SourceRecord};
pub use filter::Filter;
pub use policy::{CHUNKER_VERSION, ChunkingPolicy, OLDEST_CHUNKER_VERSION};
pub use position::{LOW_CONFIDENCE, LineBox, PageBox};
pub use section::{SectionId, normalise_heading};
pub use space::{Embedding, EmbeddingSpace, Normalization, Pooling, cosine};
pub use time::{TimeToLive, Timestamp};
pub use values::{
    DocId, InvalidValue, Locale, MAX_READER_NAME, Reader, Revision, Scope, Source, Title,
    sha256_hex,
};
