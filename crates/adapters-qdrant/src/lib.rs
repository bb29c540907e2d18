//! zhiku's [`VectorIndex`](zhiku_domain::ports::VectorIndex) and
//! [`LexicalIndex`](zhiku_domain::ports::LexicalIndex) on a Qdrant server, for knowledge bases
//! that outgrow one machine.
//!
//! [`QdrantLexicalIndex`] keeps the lexical route as sparse vectors of zhiku's analyzer terms in
//! a collection of their own (BM25 weights written here, IDF by the server).
//!
//! [`QdrantVectorIndex`] keeps one knowledge base in one embedding space per collection, talks
//! gRPC through `qdrant-client`, and applies the domain [`Filter`](zhiku_domain::Filter) inside
//! Qdrant's search as payload conditions (scope is the tenant key). See
//! [`payload`] for the layout of a point and [`QdrantConfig`] for the settings.
//!
//! Its contract tests run against a real server: set `ZHIKU_TEST_QDRANT_URL` (e.g.
//! `http://127.0.0.1:6334`); without it they print `SKIPPED`.

mod audit;
mod catalog;
mod collection;
mod config;
mod documents;
mod error;
mod index;
mod lexical;
mod nodes;
pub mod payload;

pub use audit::QdrantAuditLog;
pub use catalog::{LEASE_TTL, LEASE_WAIT, Lease, MERGE_AT, QdrantCatalogStore};
pub use config::{DEFAULT_HNSW_EF, QdrantConfig};
pub use documents::{Kept, QdrantDocuments};
pub use index::QdrantVectorIndex;
pub use lexical::{Bm25, QdrantLexicalIndex, term_index, title_index};
