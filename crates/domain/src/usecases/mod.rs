//! Use cases over the ports: indexing, retrieval, grounded answers, and the consistency check
//! and repair of a catalog against its indexes.

mod answerer;
mod bounded_plan;
mod consistency;
mod indexer;
mod judging;
mod reader;
mod retriever;
mod sync;

pub use answerer::{
    AnswerFrame, AnswerPolicy, AnswerStatus, Answerer, AskError, CardSection, Citation,
    DEFAULT_MAX_QUERY_CHARS, EvidenceSummary, SourceCard, SourceChange, SupportSummary,
    THIN_EVIDENCE_FLOOR, TokenUsage, evidence_coverage,
};
// The catalog is a contract (ports store it); re-exported where the use cases always had it.
pub use crate::contracts::{Catalog, CatalogChanges, CatalogEntry, DocAbout};
pub use bounded_plan::plan_within;
pub use consistency::{Checked, ChunkProblems, ChunkRepair, Consistency};
pub use indexer::{IndexReport, Indexer, IndexerError, Prepared, Progress, SyncMode};
pub use judging::apply_judge;
pub use reader::DocumentReader;
pub use retriever::{
    Dropped, Evidence, RerankReport, RerankedEntry, Retrieval, RetrievalMode, RetrievalRequest,
    RetrieveError, Retriever, RouteHit, RouteReport, RouteStatus, StageTiming,
};
pub use sync::{SyncError, SyncPolicy, sync_source};
