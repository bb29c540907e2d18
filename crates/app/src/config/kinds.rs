//! The values a key of the configuration names: which adapter fills each port (`vectors`,
//! `embedder`, `lexical`, `generator`, `judge`, `reranker`), and the shapes some keys resolve
//! into (the embeddings server, the generator's fallback chain).

use serde::{Deserialize, Serialize};

/// The embeddings server's settings (`embed_*`) are the OpenAI adapter's type, as `[qdrant]` is
/// the Qdrant adapter's.
pub use zhiku_adapters_openai::EMBED_INPUTS;
pub use zhiku_adapters_openai::EmbedServer;

/// Where vectors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorsKind {
    /// In memory, gone when the process ends.
    Memory,
    /// The embedded store's approximate-nearest-neighbour index (usearch over SQLite,
    /// `[ann]`). `"file"`, the vector file of earlier versions, is read as this: such a store
    /// is migrated on its first writing open.
    #[serde(alias = "file")]
    Ann,
    /// A Qdrant server.
    Qdrant,
}

/// Which embedder produces vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// No embedder: lexical retrieval only.
    None,
    /// The hashing test double (no semantics).
    Hashing,
    /// A BERT-family model run by candle.
    Candle,
    /// An OpenAI-compatible `/v1/embeddings` server (`embed_url`, `embed_model`, ...: see
    /// [`EmbedServer`]).
    Openai,
}

/// Which OCR engine reads scans and pictures (PDF pages without a text layer, image files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OcrKind {
    /// No OCR: image files and pages without a text layer are reported, not read.
    Off,
    /// Debian's Tesseract 5 program (`ocr_program`, `ocr_languages`).
    Tesseract,
    /// PP-OCRv6 small run by ONNX Runtime (`ocr_models`, `ocr_runtime`; fetched by
    /// `scripts/fetch-ocr-models.sh`).
    Ppocr,
}

/// Which reranker reorders the fused candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankerKind {
    /// No reranking: the fused order.
    None,
    /// The rule reranker (no model): question-term coverage with rarity weights, title and
    /// heading match, the fused rank, near-duplicate suppression.
    Rules,
    /// A cross-encoder (BERT or XLM-RoBERTa sequence classifier) run by candle: `rerank_model`,
    /// a folder or a hub id.
    #[serde(rename = "cross-encoder")]
    CrossEncoder,
    /// A reranking server (`POST /v1/rerank` or TEI's `/rerank`): `rerank_url`, `rerank_model`.
    Http,
    /// The chat model of `llm_url` / `llm_model`, ranking the candidates listwise.
    Llm,
}

/// Where the lexical index lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LexicalKind {
    /// tantivy in RAM.
    Ram,
    /// tantivy in the store directory.
    Disk,
    /// Sparse vectors of the same analyzer's terms in a Qdrant collection (`[qdrant]`), beside
    /// the vectors: only with `vectors = "qdrant"`.
    Qdrant,
}

/// One step of the chain an unreachable or timed-out chat server falls back along
/// (`generator_fallback`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FallbackStep {
    /// Another OpenAI-compatible server (`"URL"` or `"URL MODEL"`; without a model,
    /// `llm_model`), with `llm_url`'s key variable, timeout and token limit.
    Chat {
        /// Its API base, up to `/v1`.
        url: String,
        /// The model asked for.
        model: String,
    },
    /// The offline extractive generator (`"extractive"`): it cannot be unreachable, so it
    /// ends the chain.
    Extractive,
}

/// What writes answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GeneratorKind {
    /// The offline extractive strategy (no model).
    Extractive,
    /// An OpenAI-compatible chat-completions server (`llm_url`, `llm_model`).
    Openai,
}

/// Who reads a question in its conversation (`planner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlannerKind {
    /// The chat model when answers come from one (`generator = "openai"`), else the rules.
    Auto,
    /// The offline rules alone.
    Rules,
    /// The chat model of `llm_url` / `llm_model`, the rules standing in when it fails.
    Llm,
}

/// Who decides whether an answer's claims are supported, grades answers in `eval --answers`
/// and has the last word on write-back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeKind {
    /// The offline rules alone (the lexical support check, the write-back rules).
    Lexical,
    /// The chat model of `llm_url` / `llm_model`, after the rules' hard checks.
    Llm,
}

/// The default model of the candle embedder.
pub const DEFAULT_MODEL: &str = "BAAI/bge-small-zh-v1.5";
