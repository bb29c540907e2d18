//! Use cases over the ports: indexing, retrieval and grounded answers.

mod answerer;
mod catalog;
mod indexer;
mod retriever;

pub use answerer::{
    AnswerFrame, AnswerPolicy, AnswerStatus, Answerer, AskError, Citation, EvidenceSummary,
};
pub use catalog::{Catalog, CatalogEntry};
pub use indexer::{IndexReport, Indexer, IndexerError, Prepared, Progress, SyncMode};
pub use retriever::{
    Dropped, Evidence, Retrieval, RetrievalMode, RetrievalRequest, RetrieveError, Retriever,
    RouteHit, RouteReport, RouteStatus, StageTiming,
};
