//! Use cases over the ports: indexing and retrieval.

mod catalog;
mod indexer;
mod retriever;

pub use catalog::{Catalog, CatalogEntry};
pub use indexer::{IndexReport, Indexer, IndexerError, Progress, SyncMode};
pub use retriever::{
    Dropped, Evidence, Retrieval, RetrievalMode, RetrievalRequest, RetrieveError, Retriever,
    RouteHit, RouteReport, RouteStatus,
};
