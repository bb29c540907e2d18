//! Offline evaluation of retrieval and answers.
//!
//! - [`beir`] reads a BEIR directory (corpus, queries, qrels) and zhiku's golden sets.
//! - [`runner`] runs every query of a set through a retriever or an answerer and grades it with
//!   the domain's metrics.
//! - [`recorded`] grades answer runs read back from a trace log, without asking again.
//! - [`context`] measures what an answer's context holds under a context policy.
//! - [`corpus_chunks`] is a BEIR corpus's passages as the chunks a context reads around evidence.
//! - [`corpus_documents`] is the BEIR corpus as a read-only document store.
//! - [`corpus_source`] is the BEIR corpus as the source of truth that hits are re-checked against.
//!
//! No adapter is named here: the binary builds the indexes an evaluation runs over.

pub mod beir;
pub mod context;
pub mod corpus_chunks;
pub mod corpus_documents;
pub mod corpus_source;
pub mod recorded;
pub mod runner;
