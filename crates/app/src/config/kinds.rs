//! The values a key of the configuration names: which adapter fills each port (`vectors`,
//! `embedder`, `lexical`, `generator`, `judge`, `reranker`), and the shapes some keys resolve
//! into (the embeddings server, the generator's fallback chain).

use serde::{Deserialize, Serialize};

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

/// The OpenAI-compatible embeddings server of `embedder = "openai"`: the `embed_*` keys (or the
/// `[embedder]` table's keys without the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedServer {
    /// The API base, up to `/v1`.
    pub url: String,
    /// The model name sent; empty: the one model the server lists.
    pub model: String,
    /// The environment variable holding the API key (the key itself never sits in a file).
    pub api_key_env: String,
    /// Deadline of one request in milliseconds.
    pub timeout_ms: u64,
    /// Retries of a temporary failure (connection, 429, 5xx) with backoff.
    pub retries: u32,
    /// How queries and passages are presented: `auto` (by model name and server), `input_type`,
    /// `e5`, `bge-zh`, `bge-en`, `none`, or `prefix` (`query_prefix`/`document_prefix`).
    pub input: String,
    /// Before each query when `input = "prefix"`.
    pub query_prefix: String,
    /// Before each passage when `input = "prefix"`.
    pub document_prefix: String,
    /// The declared model revision, part of the embedding space's identity.
    pub revision: String,
    /// L2-normalise the server's vectors (and declare the space L2).
    pub normalize: bool,
    /// The model's maximum input in tokens, for the truncation estimate; 0: not detected.
    pub max_tokens: usize,
}

/// The values `embed_input` takes.
pub const EMBED_INPUTS: [&str; 7] = [
    "auto",
    "input_type",
    "e5",
    "bge-zh",
    "bge-en",
    "none",
    "prefix",
];

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
