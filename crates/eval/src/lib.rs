//! Offline evaluation of retrieval and answers.
//!
//! - [`beir`] reads a BEIR directory (corpus, queries, qrels) and zhiku's golden sets.
//! - [`runner`] runs every query of a set through a retriever or an answerer and grades it with
//!   the domain's metrics.
//! - [`corpus_documents`] is the BEIR corpus as a read-only document store.
//! - [`corpus_source`] is the BEIR corpus as the source of truth that hits are re-checked against.
//!
//! No adapter is named here: the binary builds the indexes an evaluation runs over.

pub mod beir;
pub mod corpus_documents;
pub mod corpus_source;
pub mod runner;
