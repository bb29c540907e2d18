//! The zhiku application service: one knowledge base as a long-lived service over `dyn` ports,
//! shared by every transport (the CLI, HTTP, MCP).
//!
//! - [`Store`] — the opened ports of one knowledge base (lexical index, embedder and vector
//!   index, catalog store) with the catalog in memory; every writer commits the indexes, then
//!   [`Store::commit_catalog`] (the catalog is saved last).
//! - [`Store::check_and_repair`] and [`Store::problems`] — whether catalog and indexes agree,
//!   and the repair from the catalog when they do not.
//! - [`refresh`] — brings the indexes up to date with a [`DocumentStore`](zhiku_domain::ports::DocumentStore).
//! - [`KnowledgeBase`] — search, ask, documents, ingest and delete for a [`Caller`] whose scopes
//!   the transport established; what the caller may not see is reported as not found.
//! - [`KbError`] — why a call failed, each kind with a typed value of what it is about
//!   ([`error`]), mapped by each transport to its own codes.
//! - [`SearchQuery`] and [`QueryLimits`] — the bounds every transport applies to a query.
//! - [`KnowledgeBase::evaluate`] and [`evaluate_corpus`] — the retriever, answerer and grader
//!   an offline evaluation runs its cases through ([`Evaluation`]).
//!
//! No adapter, no async runtime and no web framework is named here: the composition root picks
//! the adapters and the transports drive this crate.

mod access;
mod caller;
mod clock;
pub mod error;
mod evaluate;
mod ids;
mod kb;
mod put;
mod query;
mod refresh;
mod removal;
mod repair;
mod retention;
mod store;
mod trace;
mod views;
mod writeback;

pub use access::AccessPolicy;
pub use caller::Caller;
pub use clock::{MonotonicClock, SystemWallClock, new_trace_id};
pub use error::{INTERNAL_MESSAGE, KbError};
pub use evaluate::{Answering, CorpusEvaluation, Evaluation, evaluate_corpus};
pub use kb::{
    FOLLOW_EVERY, KnowledgeBase, MAX_HISTORY_TURNS, MAX_READ_CHARS, MAX_TURN_CHARS, PAGE_PNG_SIDE,
    Planners, SharedKb,
};
pub use query::{QueryLimits, SearchQuery, filter_for};
pub use refresh::{Refreshed, refresh};
pub use repair::{Problems, Reanalysis, Repair};
pub use retention::{SweepReport, sweep_store};
pub use store::{Dense, DuplicatePolicy, Parts, Settings, Store, StrayFiles, WriteBackPolicy};
pub use trace::{Tee, WithRequestId};
pub use views::{
    ChunkView, DocInfo, DocumentView, Hit, Ingested, NewDocument, SearchResult, SectionView,
    SourceStatus, Status,
};
pub use writeback::{KnowledgeWrite, WriteBackOutcome};
/// One earlier turn of a conversation, as callers send it back with a question.
pub use zhiku_domain::ports::Turn;
