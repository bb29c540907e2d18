//! Ports: the traits adapters implement.
//!
//! Ports are synchronous and object-safe (`&dyn Port`, `Arc<dyn Port>`). The application runs
//! use cases off its async executor (for example in `spawn_blocking`), so a CPU-bound embedder
//! never stalls a server, and an adapter over a network client owns the runtime it needs.
//!
//! Every port has one semantic error type. Each variant says whether retrying can help
//! ([`is_temporary`](IndexError::is_temporary)); adapters keep their own error types private and
//! map them into these.

mod audit;
mod catalog;
mod clock;
mod document_source;
mod documents;
mod embedder;
mod errors;
mod generator;
mod identity;
mod index;
mod judge;
mod ocr;
mod planner;
mod rerank;
mod source;
mod tokens;
mod trace;

pub use audit::{AuditEntry, AuditError, AuditLog, MemoryAuditLog};
pub use catalog::{
    CatalogCounts, CatalogError, CatalogStore, Changed, Generations, Origin, StoredCatalog,
    WriteTurn,
};
pub use clock::{Clock, FixedWallClock, FrozenClock, WallClock, elapsed_ms};
pub use document_source::{
    DocumentSource, MirrorError, MirroredItem, ScanError, ScanEvent, ScanRequest, Scanned,
    SourceItem, SourceMirror, SyncOutcome, SyncState, is_item_path, is_source_name,
};
pub use documents::{
    DocumentError, DocumentStore, DocumentStoreCapabilities, KnownFile, LoadedDocuments,
    PageRequest, PreparedPut, PutRequest, SkippedFile, Staged,
};
pub use embedder::Embedder;
pub use errors::{
    BoxError, EmbedError, GenerateError, IndexError, OcrError, RerankError, SourceError,
};
pub use generator::{Generated, GenerationRequest, Generator, ServedUsage, SourceBlock};
pub use identity::{BrowserSignIn, Identity, IdentityError, IdentityVerifier};
pub use index::{
    ChunkRecords, EmbeddedChunk, IndexCapabilities, LexicalIndex, ScoredChunk, VectorIndex,
    VectorIndexExt, rank_and_truncate,
};
pub use judge::{Judge, JudgeError};
pub use ocr::{Ocr, OcrImage, OcrLine, OcrPage, PixelBox, turn_clockwise};
pub(crate) use planner::as_asked;
pub use planner::{AS_ASKED_PLANNER, AsAsked, Intent, Plan, PlanError, Planner, Turn};
pub use rerank::{RerankCandidate, Reranker};
pub use source::{DocumentChunks, SourcePaths, SourceRecord, SourceStore};
pub use tokens::TokenCounter;
pub use trace::{
    AnswerStep, BudgetStep, CitedChunk, ContextStep, DroppedChunk, EARLIER_QUESTION_CHARS,
    EARLIER_QUESTIONS_KEPT, FusedEntry, FusionStep, GenerationStep, IntentStep, NullTraceSink,
    PhaseTime, PromptStep, QueryStep, RankedHit, ReformulationStep, RejectionStep, RerankScore,
    RerankStep, RevisionCheckStep, RewriteStep, RouteOutcome, RouteScore, RouteStep, Stage,
    StoredTraceEvent, SubQuestionStep, SupportStep, TokenBudgetStep, TraceEvent, TraceSink,
    TraceStore, ValidationStep, earlier_questions,
};
