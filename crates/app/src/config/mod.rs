//! Configuration: `zhiku.toml` (optional), profiles, and `ZHIKU_*` environment overrides,
//! resolved once by one precedence rule ([`resolver`]) into parsed values.
//!
//! Precedence, lowest first: built-in defaults, the profile's adapters, the file's top-level
//! keys and tables, the file's `[profiles.NAME]` table, `ZHIKU_*` variables; command-line flags
//! are applied last by the command that takes them.
//!
//! Profiles pick adapters:
//! - `dev`: vectors in memory, hashing embedder, tantivy in RAM (nothing persists).
//! - `local` (default): the embedded store on disk (tantivy + the ANN vector index, `[ann]`,
//!   the adapter's [`AnnSettings`]), the candle embedder when a model is available, otherwise
//!   lexical retrieval with a notice.
//! - `prod`: vectors on a Qdrant server (`[qdrant]`, `ZHIKU_QDRANT_*`, the adapter's
//!   [`QdrantConfig`]), manifest and tantivy on disk, candle.
//!
//! Each section's type is owned by the crate it configures: `[qdrant]` by the Qdrant adapter,
//! `[ann]` by the embedded vector index, `[serve]` by the HTTP transport.

mod resolver;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use toml::Table;
use zhiku_adapters_qdrant::QdrantConfig;
use zhiku_adapters_usearch::AnnSettings;
use zhiku_domain::rules::budget::RetrievalBudget;
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::rules::fusion::{FusionConfig, FusionMethod, Normalisation, Route};
use zhiku_domain::{ChunkingPolicy, Scope};
use zhiku_http::settings::{ServeSettings, ServeTable};

use resolver::{EnvKey, Resolver, var};

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

/// The keys of the `[embedder]` table form and the flat keys they stand for.
const EMBEDDER_TABLE: [(&str, &str); 13] = [
    ("kind", "embedder"),
    ("batch", "embed_batch"),
    ("url", "embed_url"),
    ("model", "embed_model"),
    ("api_key_env", "embed_api_key_env"),
    ("timeout_ms", "embed_timeout_ms"),
    ("retries", "embed_retries"),
    ("input", "embed_input"),
    ("query_prefix", "embed_query_prefix"),
    ("document_prefix", "embed_document_prefix"),
    ("revision", "embed_revision"),
    ("normalize", "embed_normalize"),
    ("max_tokens", "embed_max_tokens"),
];

/// Rewrites an `[embedder]` table (`kind = "openai"`, `url = ...`) of `table` into the flat
/// keys it stands for. Returns whether there was one.
fn flatten_embedder_table(table: &mut Table, place: &str) -> Result<bool> {
    let Some(toml::Value::Table(inner)) = table.get("embedder").cloned() else {
        return Ok(false);
    };
    table.remove("embedder");
    for (key, value) in inner {
        let Some((_, flat)) = EMBEDDER_TABLE.iter().find(|(k, _)| *k == key) else {
            let known: Vec<&str> = EMBEDDER_TABLE.iter().map(|(k, _)| *k).collect();
            bail!(
                "unknown key {key:?} in {place}[embedder] (known: {})",
                known.join(", ")
            );
        };
        if table.contains_key(*flat) {
            bail!("{place}[embedder] {key} and the key {flat} both set the same value: keep one");
        }
        table.insert((*flat).to_string(), value);
    }
    Ok(true)
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

/// The fusion keys as one [`FusionConfig`], checked.
fn fusion_config(keys: &Keys) -> Result<FusionConfig> {
    let missing = |what: &str| anyhow::anyhow!("the built-in default of {what} is missing");
    let mut weights = std::collections::BTreeMap::new();
    weights.insert(
        Route::Dense,
        keys.fusion_dense_weight
            .ok_or_else(|| missing("fusion_dense_weight"))?,
    );
    weights.insert(
        Route::Lexical,
        keys.fusion_lexical_weight
            .ok_or_else(|| missing("fusion_lexical_weight"))?,
    );
    let floor = keys.dense_floor.ok_or_else(|| missing("dense_floor"))?;
    let min = keys
        .dense_min_score
        .ok_or_else(|| missing("dense_min_score"))?;
    let config = FusionConfig {
        method: keys.fusion.ok_or_else(|| missing("fusion"))?,
        k: keys.fusion_k.ok_or_else(|| missing("fusion_k"))?,
        weights,
        normalisation: keys
            .fusion_normalisation
            .ok_or_else(|| missing("fusion_normalisation"))?,
        confidence: keys
            .fusion_confidence
            .ok_or_else(|| missing("fusion_confidence"))?,
        // 0 is no floor; a minimum similarity of -1 lets every cosine through.
        dense_floor: (floor > 0.0).then_some(floor),
        dense_min_score: (min > -1.0).then_some(min),
    };
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid fusion settings: {e}"))?;
    Ok(config)
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

/// Parses `generator_fallback`: each entry `extractive` (last) or `URL [MODEL]`.
fn fallback_steps(entries: &[String], llm_model: &str) -> Result<Vec<FallbackStep>> {
    let mut steps = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let entry = entry.trim();
        if entry.is_empty() || entry == "none" {
            continue;
        }
        if steps.last() == Some(&FallbackStep::Extractive) {
            bail!("generator_fallback: {entry:?} comes after \"extractive\", which never fails");
        }
        if entry == "extractive" {
            steps.push(FallbackStep::Extractive);
            continue;
        }
        let mut parts = entry.split_whitespace();
        let url = parts.next().unwrap_or_default();
        let model = parts.next().unwrap_or(llm_model);
        if !(url.starts_with("http://") || url.starts_with("https://")) || parts.next().is_some() {
            bail!(
                "generator_fallback entry {} ({entry:?}): write \"extractive\" or \"URL [MODEL]\" with an http(s) URL",
                i + 1
            );
        }
        steps.push(FallbackStep::Chat {
            url: url.to_string(),
            model: model.to_string(),
        });
    }
    Ok(steps)
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

/// The resolved configuration of one run, parsed once.
#[derive(Debug, Clone)]
pub struct Config {
    /// The profile name.
    pub profile: String,
    /// Where vectors live.
    pub vectors: VectorsKind,
    /// Which embedder produces vectors.
    pub embedder: EmbedderKind,
    /// Where the lexical index lives.
    pub lexical: LexicalKind,
    /// Model id or local folder for the candle embedder.
    pub model: String,
    /// How documents are cut into chunks (`max_chars`, `overlap_chars`).
    pub policy: ChunkingPolicy,
    /// The scopes the local user may read (the CLI's trusted identity); never empty.
    pub scopes: Vec<Scope>,
    /// Scope of documents that do not declare one.
    pub default_scope: Scope,
    /// The loader skips text files (Markdown, text, HTML, CSV) larger than this, and files whose
    /// extracted text is larger.
    pub max_file_bytes: u64,
    /// The loader skips PDF, Office and EPUB files larger than this.
    pub max_document_bytes: u64,
    /// Most bytes unpacked from one zip package (docx, pptx, xlsx, epub).
    pub max_unpacked_bytes: u64,
    /// Most pages of one PDF (slides of a deck, chapters of a book).
    pub max_pages: usize,
    /// Longest extraction of one file, in seconds.
    pub max_extract_seconds: u64,
    /// Address space of one extraction worker process, in bytes.
    pub max_extract_memory: u64,
    /// Follow symbolic links whose target is inside the knowledge-base folder (links to outside
    /// it are never followed).
    pub follow_links_inside: bool,
    /// Evidence per search when a command does not say.
    pub k: usize,
    /// Candidates each route returns before fusion.
    pub candidates: usize,
    /// Texts per embedder forward pass (per request for `embedder = "openai"`).
    pub embed_batch: usize,
    /// The embeddings server of `embedder = "openai"`.
    pub embed_server: EmbedServer,
    /// Documents per step of `index` (chunked, embedded, committed and recorded together).
    pub index_batch: usize,
    /// What writes answers.
    pub generator: GeneratorKind,
    /// Base URL of the OpenAI-compatible API (up to `/v1`).
    pub llm_url: String,
    /// Model name sent to the server.
    pub llm_model: String,
    /// The environment variable holding the API key (the key itself never sits in a file).
    pub llm_api_key_env: String,
    /// Generation deadline in milliseconds.
    pub llm_timeout_ms: u64,
    /// Most tokens generated per answer.
    pub llm_max_tokens: u32,
    /// What answers when the chat server of `llm_url` is unreachable or times out, in order
    /// (`generator = "openai"` only; empty: the error is the run's).
    pub generator_fallback: Vec<FallbackStep>,
    /// Who judges claims, answers and write-backs beside the rules.
    pub judge: JudgeKind,
    /// Generation attempts before an answer run ends `blocked`.
    pub ask_attempts: u32,
    /// What an answer's context may hold (`context_chunks`, `context_chars`).
    pub context: RetrievalBudget,
    /// What of the documents around the evidence that context holds (`answer_context`:
    /// `chunks`, `section` or `neighbours`).
    pub answer_context: ContextPolicy,
    /// How the routes are fused (`fusion`, `fusion_k`, `fusion_dense_weight`,
    /// `fusion_lexical_weight`, `fusion_normalisation`, `fusion_confidence`, `dense_floor`,
    /// `dense_min_score`).
    pub fusion: FusionConfig,
    /// How much evidence in the question's language is preferred (`locale_boost`, 0: off).
    pub locale_boost: f64,
    /// The reranker between fusion and the budget (`reranker`).
    pub reranker: RerankerKind,
    /// Candidates the reranker scores (`rerank_depth`).
    pub rerank_depth: usize,
    /// The cross-encoder's folder or hub id, or the model a reranking server is asked for
    /// (`rerank_model`; empty: `BAAI/bge-reranker-base` for the cross-encoder, whatever the
    /// server serves for `http`). See [`Config::cross_encoder_model`].
    pub rerank_model: String,
    /// The reranking server of `reranker = "http"` (`rerank_url`).
    pub rerank_url: String,
    /// The environment variable holding the reranking server's key (`rerank_api_key_env`).
    pub rerank_api_key_env: String,
    /// Milliseconds a reranking request may take (`rerank_timeout_ms`).
    pub rerank_timeout_ms: u64,
    /// Most characters of one (question, passage) pair sent to a reranking server
    /// (`rerank_chars`): the question takes up to half.
    pub rerank_chars: usize,
    /// The most documents each listed scope keeps (`scope_caps = ["web=200"]`,
    /// `ZHIKU_SCOPE_CAPS=web=200,cache=50`): the sweep of every index run (and `zhiku sweep`)
    /// evicts a capped scope's oldest documents, by indexing time, beyond it.
    pub scope_caps: std::collections::BTreeMap<Scope, usize>,
    /// How an agent's write-back is judged: `write_back_duplicates` (`refuse` or `merge`),
    /// `write_back_near_duplicate` (Jaccard of 5-character shingles, 0 to 1, default 0.6),
    /// `write_back_min_chars` (default 20).
    pub write_back: zhiku_service::WriteBackPolicy,
    /// The Qdrant server (`[qdrant]`, `ZHIKU_QDRANT_*`), used when `vectors = "qdrant"`.
    pub qdrant: QdrantConfig,
    /// The embedded vector index (`[ann]`, `ZHIKU_ANN_*`), used when `vectors = "ann"`.
    pub ann: AnnSettings,
    /// The HTTP server (`[serve]`, `ZHIKU_SERVE_*`).
    pub serve: ServeSettings,
    /// Where each value came from, for `zhiku status`.
    pub origins: Vec<(String, String)>,
}

/// The top-level keys, as every layer may write them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    vectors: Option<VectorsKind>,
    embedder: Option<EmbedderKind>,
    lexical: Option<LexicalKind>,
    model: Option<String>,
    max_chars: Option<usize>,
    overlap_chars: Option<usize>,
    scopes: Option<Vec<String>>,
    default_scope: Option<String>,
    max_file_bytes: Option<u64>,
    max_document_bytes: Option<u64>,
    max_unpacked_bytes: Option<u64>,
    max_pages: Option<usize>,
    max_extract_seconds: Option<u64>,
    max_extract_memory: Option<u64>,
    follow_links_inside: Option<bool>,
    k: Option<usize>,
    candidates: Option<usize>,
    embed_batch: Option<usize>,
    embed_url: Option<String>,
    embed_model: Option<String>,
    embed_api_key_env: Option<String>,
    embed_timeout_ms: Option<u64>,
    embed_retries: Option<u32>,
    embed_input: Option<String>,
    embed_query_prefix: Option<String>,
    embed_document_prefix: Option<String>,
    embed_revision: Option<String>,
    embed_normalize: Option<bool>,
    embed_max_tokens: Option<usize>,
    index_batch: Option<usize>,
    generator: Option<GeneratorKind>,
    llm_url: Option<String>,
    llm_model: Option<String>,
    llm_api_key_env: Option<String>,
    llm_timeout_ms: Option<u64>,
    llm_max_tokens: Option<u32>,
    generator_fallback: Option<Vec<String>>,
    judge: Option<JudgeKind>,
    ask_attempts: Option<u32>,
    context_chunks: Option<usize>,
    context_chars: Option<usize>,
    answer_context: Option<ContextPolicy>,
    fusion: Option<FusionMethod>,
    fusion_k: Option<f64>,
    fusion_dense_weight: Option<f64>,
    fusion_lexical_weight: Option<f64>,
    fusion_normalisation: Option<Normalisation>,
    fusion_confidence: Option<bool>,
    dense_floor: Option<f64>,
    dense_min_score: Option<f64>,
    locale_boost: Option<f64>,
    reranker: Option<RerankerKind>,
    rerank_depth: Option<usize>,
    rerank_model: Option<String>,
    rerank_url: Option<String>,
    rerank_api_key_env: Option<String>,
    rerank_timeout_ms: Option<u64>,
    rerank_chars: Option<usize>,
    scope_caps: Option<Vec<String>>,
    write_back_duplicates: Option<zhiku_service::DuplicatePolicy>,
    write_back_near_duplicate: Option<f64>,
    write_back_min_chars: Option<usize>,
}

/// `scope_caps`: each entry `scope=N` (N ≥ 1), a scope at most once.
fn scope_caps(entries: &[String]) -> Result<std::collections::BTreeMap<Scope, usize>> {
    let mut caps = std::collections::BTreeMap::new();
    for entry in entries {
        let Some((scope, cap)) = entry.split_once('=') else {
            bail!("scope_caps entry {entry:?} must be scope=N, such as web=200");
        };
        let scope = Scope::new(scope.trim())
            .with_context(|| format!("scope_caps entry {entry:?} names no valid scope"))?;
        let cap: usize = match cap.trim().parse() {
            Ok(n) if n >= 1 => n,
            _ => bail!("scope_caps entry {entry:?}: the cap must be a whole number ≥ 1"),
        };
        if caps.insert(scope.clone(), cap).is_some() {
            bail!("scope_caps names scope {scope} twice");
        }
    }
    Ok(caps)
}

/// The least address space an extraction worker can run in (its program, a job's 256 MiB
/// stack, the PDF reader's own, and the file).
const MIN_EXTRACT_MEMORY: u64 = 1 << 30;

/// The top-level keys, in the order `status` lists them.
const KEYS: [&str; 62] = [
    "vectors",
    "embedder",
    "lexical",
    "model",
    "max_chars",
    "overlap_chars",
    "scopes",
    "default_scope",
    "max_file_bytes",
    "max_document_bytes",
    "max_unpacked_bytes",
    "max_pages",
    "max_extract_seconds",
    "max_extract_memory",
    "follow_links_inside",
    "k",
    "candidates",
    "embed_batch",
    "embed_url",
    "embed_model",
    "embed_api_key_env",
    "embed_timeout_ms",
    "embed_retries",
    "embed_input",
    "embed_query_prefix",
    "embed_document_prefix",
    "embed_revision",
    "embed_normalize",
    "embed_max_tokens",
    "index_batch",
    "generator",
    "llm_url",
    "llm_model",
    "llm_api_key_env",
    "llm_timeout_ms",
    "llm_max_tokens",
    "generator_fallback",
    "judge",
    "ask_attempts",
    "context_chunks",
    "context_chars",
    "answer_context",
    "fusion",
    "fusion_k",
    "fusion_dense_weight",
    "fusion_lexical_weight",
    "fusion_normalisation",
    "fusion_confidence",
    "dense_floor",
    "dense_min_score",
    "locale_boost",
    "reranker",
    "rerank_depth",
    "rerank_model",
    "rerank_url",
    "rerank_api_key_env",
    "rerank_timeout_ms",
    "rerank_chars",
    "scope_caps",
    "write_back_duplicates",
    "write_back_near_duplicate",
    "write_back_min_chars",
];

/// `zhiku.toml` as written: checked whole before any layer is used, so a mistyped key is
/// reported with the file's name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read for its checks; the values are merged from the raw table
struct File {
    profile: Option<String>,
    #[serde(flatten)]
    base: Keys,
    #[serde(default)]
    profiles: std::collections::BTreeMap<String, Keys>,
    qdrant: Option<QdrantConfig>,
    ann: Option<AnnSettings>,
    serve: Option<ServeTable>,
}

/// The variables of the top-level keys.
const ENV: [EnvKey; 62] = [
    var("vectors", "ZHIKU_VECTORS"),
    var("embedder", "ZHIKU_EMBEDDER"),
    var("lexical", "ZHIKU_LEXICAL"),
    var("model", "ZHIKU_MODEL"),
    var("max_chars", "ZHIKU_MAX_CHARS"),
    var("overlap_chars", "ZHIKU_OVERLAP_CHARS"),
    EnvKey {
        key: "scopes",
        var: "ZHIKU_SCOPES",
        list: true,
    },
    var("default_scope", "ZHIKU_DEFAULT_SCOPE"),
    var("max_file_bytes", "ZHIKU_MAX_FILE_BYTES"),
    var("max_document_bytes", "ZHIKU_MAX_DOCUMENT_BYTES"),
    var("max_unpacked_bytes", "ZHIKU_MAX_UNPACKED_BYTES"),
    var("max_pages", "ZHIKU_MAX_PAGES"),
    var("max_extract_seconds", "ZHIKU_MAX_EXTRACT_SECONDS"),
    var("max_extract_memory", "ZHIKU_MAX_EXTRACT_MEMORY"),
    var("follow_links_inside", "ZHIKU_FOLLOW_LINKS_INSIDE"),
    var("k", "ZHIKU_K"),
    var("candidates", "ZHIKU_CANDIDATES"),
    var("embed_batch", "ZHIKU_EMBED_BATCH"),
    var("embed_url", "ZHIKU_EMBED_URL"),
    var("embed_model", "ZHIKU_EMBED_MODEL"),
    var("embed_api_key_env", "ZHIKU_EMBED_API_KEY_ENV"),
    var("embed_timeout_ms", "ZHIKU_EMBED_TIMEOUT_MS"),
    var("embed_retries", "ZHIKU_EMBED_RETRIES"),
    var("embed_input", "ZHIKU_EMBED_INPUT"),
    var("embed_query_prefix", "ZHIKU_EMBED_QUERY_PREFIX"),
    var("embed_document_prefix", "ZHIKU_EMBED_DOCUMENT_PREFIX"),
    var("embed_revision", "ZHIKU_EMBED_REVISION"),
    var("embed_normalize", "ZHIKU_EMBED_NORMALIZE"),
    var("embed_max_tokens", "ZHIKU_EMBED_MAX_TOKENS"),
    var("index_batch", "ZHIKU_INDEX_BATCH"),
    var("generator", "ZHIKU_GENERATOR"),
    var("llm_url", "ZHIKU_LLM_URL"),
    var("llm_model", "ZHIKU_LLM_MODEL"),
    var("llm_api_key_env", "ZHIKU_LLM_API_KEY_ENV"),
    var("llm_timeout_ms", "ZHIKU_LLM_TIMEOUT_MS"),
    var("llm_max_tokens", "ZHIKU_LLM_MAX_TOKENS"),
    EnvKey {
        key: "generator_fallback",
        var: "ZHIKU_GENERATOR_FALLBACK",
        list: true,
    },
    var("judge", "ZHIKU_JUDGE"),
    var("ask_attempts", "ZHIKU_ASK_ATTEMPTS"),
    var("context_chunks", "ZHIKU_CONTEXT_CHUNKS"),
    var("context_chars", "ZHIKU_CONTEXT_CHARS"),
    var("answer_context", "ZHIKU_ANSWER_CONTEXT"),
    var("fusion", "ZHIKU_FUSION"),
    var("fusion_k", "ZHIKU_FUSION_K"),
    var("fusion_dense_weight", "ZHIKU_FUSION_DENSE_WEIGHT"),
    var("fusion_lexical_weight", "ZHIKU_FUSION_LEXICAL_WEIGHT"),
    var("fusion_normalisation", "ZHIKU_FUSION_NORMALISATION"),
    var("fusion_confidence", "ZHIKU_FUSION_CONFIDENCE"),
    var("dense_floor", "ZHIKU_DENSE_FLOOR"),
    var("dense_min_score", "ZHIKU_DENSE_MIN_SCORE"),
    var("locale_boost", "ZHIKU_LOCALE_BOOST"),
    var("reranker", "ZHIKU_RERANKER"),
    var("rerank_depth", "ZHIKU_RERANK_DEPTH"),
    var("rerank_model", "ZHIKU_RERANK_MODEL"),
    var("rerank_url", "ZHIKU_RERANK_URL"),
    var("rerank_api_key_env", "ZHIKU_RERANK_API_KEY_ENV"),
    var("rerank_timeout_ms", "ZHIKU_RERANK_TIMEOUT_MS"),
    var("rerank_chars", "ZHIKU_RERANK_CHARS"),
    EnvKey {
        key: "scope_caps",
        var: "ZHIKU_SCOPE_CAPS",
        list: true,
    },
    var("write_back_duplicates", "ZHIKU_WRITE_BACK_DUPLICATES"),
    var(
        "write_back_near_duplicate",
        "ZHIKU_WRITE_BACK_NEAR_DUPLICATE",
    ),
    var("write_back_min_chars", "ZHIKU_WRITE_BACK_MIN_CHARS"),
];

/// The variables of `[qdrant]`.
const QDRANT_ENV: [EnvKey; 9] = [
    var("url", "ZHIKU_QDRANT_URL"),
    var("api_key", "ZHIKU_QDRANT_API_KEY"),
    var("collection_prefix", "ZHIKU_QDRANT_COLLECTION_PREFIX"),
    var("timeout_ms", "ZHIKU_QDRANT_TIMEOUT_MS"),
    var("shards", "ZHIKU_QDRANT_SHARDS"),
    var("replication", "ZHIKU_QDRANT_REPLICATION"),
    var("batch", "ZHIKU_QDRANT_BATCH"),
    var("hnsw_ef", "ZHIKU_QDRANT_HNSW_EF"),
    var("exact", "ZHIKU_QDRANT_EXACT"),
];

/// The variables of `[ann]`.
const ANN_ENV: [EnvKey; 4] = [
    var("quantization", "ZHIKU_ANN_QUANTIZATION"),
    var("ef", "ZHIKU_ANN_EF"),
    var("rescore", "ZHIKU_ANN_RESCORE"),
    var("exact_scan_below", "ZHIKU_ANN_EXACT_SCAN_BELOW"),
];

/// The keys of `[ann]` whose origin `status` shows.
const ANN_KEYS: [&str; 4] = ["quantization", "ef", "rescore", "exact_scan_below"];

/// The keys of `[qdrant]` whose origin `status` shows (the API key's value never is).
const QDRANT_KEYS: [&str; 8] = [
    "url",
    "collection_prefix",
    "timeout_ms",
    "shards",
    "replication",
    "batch",
    "hnsw_ef",
    "exact",
];

/// The variables of `[serve]`.
const SERVE_ENV: [EnvKey; 7] = [
    var("bind", "ZHIKU_SERVE_BIND"),
    var("timeout_ms", "ZHIKU_SERVE_TIMEOUT_MS"),
    var("header_timeout_ms", "ZHIKU_SERVE_HEADER_TIMEOUT_MS"),
    var("body_timeout_ms", "ZHIKU_SERVE_BODY_TIMEOUT_MS"),
    var("idle_timeout_ms", "ZHIKU_SERVE_IDLE_TIMEOUT_MS"),
    var("shutdown_timeout_ms", "ZHIKU_SERVE_SHUTDOWN_TIMEOUT_MS"),
    var("max_connections", "ZHIKU_SERVE_MAX_CONNECTIONS"),
];

/// The adapters a built-in profile picks.
fn builtin(profile: &str) -> Result<Table> {
    let (vectors, embedder, lexical) = match profile {
        "dev" => ("memory", "hashing", "ram"),
        "local" => ("ann", "candle", "disk"),
        "prod" => ("qdrant", "candle", "disk"),
        other => bail!(
            "unknown profile {other:?}: use dev, local or prod, or define [profiles.{other}] in zhiku.toml"
        ),
    };
    Ok(Table::from_iter(
        [
            ("vectors", vectors),
            ("embedder", embedder),
            ("lexical", lexical),
        ]
        .map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string()))),
    ))
}

/// The built-in value of every top-level key.
fn defaults() -> Table {
    let policy = ChunkingPolicy::default();
    let text = format!(
        r#"
vectors = "ann"
embedder = "candle"
lexical = "disk"
model = "{DEFAULT_MODEL}"
max_chars = {}
overlap_chars = {}
scopes = ["default", "public"]
default_scope = "default"
max_file_bytes = {}
max_document_bytes = {}
max_unpacked_bytes = {}
max_pages = {}
max_extract_seconds = {}
max_extract_memory = {}
follow_links_inside = false
k = 8
candidates = 50
embed_batch = 32
embed_url = "http://127.0.0.1:8089/v1"
embed_model = ""
embed_api_key_env = "ZHIKU_EMBED_API_KEY"
embed_timeout_ms = 120000
embed_retries = 3
embed_input = "auto"
embed_query_prefix = ""
embed_document_prefix = ""
embed_revision = "unversioned"
embed_normalize = true
embed_max_tokens = 0
index_batch = 4096
generator = "extractive"
llm_url = "http://127.0.0.1:8088/v1"
llm_model = "local"
llm_api_key_env = "ZHIKU_LLM_API_KEY"
llm_timeout_ms = 60000
llm_max_tokens = 512
generator_fallback = ["extractive"]
judge = "lexical"
ask_attempts = 3
context_chunks = 6
context_chars = 4000
answer_context = "chunks"
fusion = "convex"
fusion_k = 60.0
fusion_dense_weight = 0.2
fusion_lexical_weight = 1.0
fusion_normalisation = "min_max"
fusion_confidence = false
dense_floor = 0.0
dense_min_score = -1.0
locale_boost = 0.1
reranker = "none"
rerank_depth = 20
rerank_model = ""
rerank_url = "http://127.0.0.1:8090"
rerank_api_key_env = "ZHIKU_RERANK_API_KEY"
rerank_timeout_ms = 30000
rerank_chars = 480
scope_caps = []
write_back_duplicates = "refuse"
write_back_near_duplicate = 0.6
write_back_min_chars = 20
"#,
        policy.max_chars(),
        policy.overlap_chars(),
        // The loader's own defaults (`LoaderConfig::default`, which the wiring test compares).
        10u64 << 20,
        200u64 << 20,
        512u64 << 20,
        10_000,
        60,
        4u64 << 30,
    );
    toml::from_str(&text).expect("the built-in defaults parse")
}

impl Config {
    /// Resolves the configuration from an optional file, a profile and the environment.
    pub fn resolve(
        file: Option<&Path>,
        profile: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let raw: Table = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read config {}", path.display()))?;
                let invalid = || format!("invalid config {}", path.display());
                let mut raw: Table = toml::from_str(&text).with_context(invalid)?;
                // `[embedder]` as a table is the flat `embed_*` keys written another way.
                let mut tables = flatten_embedder_table(&mut raw, "").with_context(invalid)?;
                if let Some(toml::Value::Table(profiles)) = raw.get_mut("profiles") {
                    for (name, p) in profiles.iter_mut() {
                        if let toml::Value::Table(p) = p {
                            tables |= flatten_embedder_table(p, &format!("[profiles.{name}] "))
                                .with_context(invalid)?;
                        }
                    }
                }
                let checked: File = if tables {
                    toml::Value::Table(raw.clone())
                        .try_into()
                        .with_context(invalid)?
                } else {
                    toml::from_str(&text).with_context(invalid)?
                };
                if let Some(q) = &checked.qdrant {
                    q.check()
                        .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
                }
                if let Some(a) = &checked.ann {
                    a.check()
                        .map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))?;
                }
                raw
            }
            None => Table::new(),
        };
        let from_file = raw.get("profile").and_then(|p| p.as_str());
        let (profile, profile_origin) = match (profile, env("ZHIKU_PROFILE"), from_file) {
            (Some(p), _, _) => (p.to_string(), "--profile"),
            (None, Some(p), _) if !p.is_empty() => (p, "ZHIKU_PROFILE"),
            (None, _, Some(p)) => (p.to_string(), "zhiku.toml"),
            _ => ("local".to_string(), "default"),
        };
        let profile_table = raw
            .get("profiles")
            .and_then(|p| p.get(&profile))
            .and_then(|t| t.as_table())
            .cloned();
        // A profile the file defines (not a built-in name) starts from `local`'s adapters.
        let base =
            if profile_table.is_some() && !matches!(profile.as_str(), "dev" | "local" | "prod") {
                builtin("local")?
            } else {
                builtin(&profile)?
            };

        let mut r = Resolver::default();
        r.origins.push((
            "profile".to_string(),
            format!("{profile} ({profile_origin})"),
        ));
        r.push("built-in default", defaults());
        r.push(format!("profile {profile}"), base);
        let mut top = raw.clone();
        top.remove("profile");
        top.remove("profiles");
        r.push("zhiku.toml", top);
        if let Some(t) = profile_table {
            r.push(format!("zhiku.toml [profiles.{profile}]"), t);
        }
        r.push_env::<Keys>(None, &ENV, env)?;
        r.push_env::<QdrantConfig>(Some("qdrant"), &QDRANT_ENV, env)?;
        r.push_env::<AnnSettings>(Some("ann"), &ANN_ENV, env)?;
        r.push_env::<ServeTable>(Some("serve"), &SERVE_ENV, env)?;

        let keys: Keys = r.resolve(None, &KEYS)?;
        let qdrant: QdrantConfig = r.resolve(Some("qdrant"), &QDRANT_KEYS)?;
        qdrant.check().map_err(anyhow::Error::msg)?;
        let ann: AnnSettings = r.resolve(Some("ann"), &ANN_KEYS)?;
        ann.check().map_err(anyhow::Error::msg)?;
        let serve = ServeSettings::from_table(r.resolve(Some("serve"), &[])?)?;
        // Every key is present: the defaults layer holds them all.
        let required = |what: &str| anyhow::anyhow!("the built-in default of {what} is missing");
        let fusion = fusion_config(&keys)?;
        let scopes = keys.scopes.ok_or_else(|| required("scopes"))?;
        if scopes.is_empty() {
            bail!("no scopes configured: set `scopes` in zhiku.toml or ZHIKU_SCOPES");
        }
        let config = Config {
            vectors: keys.vectors.ok_or_else(|| required("vectors"))?,
            embedder: keys.embedder.ok_or_else(|| required("embedder"))?,
            lexical: keys.lexical.ok_or_else(|| required("lexical"))?,
            model: keys.model.ok_or_else(|| required("model"))?,
            policy: ChunkingPolicy::with_sizes(
                keys.max_chars.ok_or_else(|| required("max_chars"))?,
                keys.overlap_chars
                    .ok_or_else(|| required("overlap_chars"))?,
            )?,
            scopes: scopes
                .iter()
                .map(|s| Ok(Scope::new(s)?))
                .collect::<Result<_>>()?,
            default_scope: Scope::new(
                &keys
                    .default_scope
                    .ok_or_else(|| required("default_scope"))?,
            )?,
            max_file_bytes: keys
                .max_file_bytes
                .ok_or_else(|| required("max_file_bytes"))?,
            max_document_bytes: keys
                .max_document_bytes
                .ok_or_else(|| required("max_document_bytes"))?,
            max_unpacked_bytes: keys
                .max_unpacked_bytes
                .ok_or_else(|| required("max_unpacked_bytes"))?,
            max_pages: keys
                .max_pages
                .filter(|n| *n > 0)
                .ok_or_else(|| required("max_pages (at least 1)"))?,
            max_extract_seconds: keys
                .max_extract_seconds
                .filter(|n| *n > 0)
                .ok_or_else(|| required("max_extract_seconds (at least 1)"))?,
            max_extract_memory: match keys.max_extract_memory {
                Some(n) if n >= MIN_EXTRACT_MEMORY => n,
                Some(n) => anyhow::bail!(
                    "max_extract_memory = {n} is too small: an extraction worker needs at least {MIN_EXTRACT_MEMORY} bytes (1 GiB)"
                ),
                None => return Err(required("max_extract_memory")),
            },
            follow_links_inside: keys
                .follow_links_inside
                .ok_or_else(|| required("follow_links_inside"))?,
            k: keys.k.ok_or_else(|| required("k"))?,
            candidates: keys.candidates.ok_or_else(|| required("candidates"))?,
            embed_batch: keys.embed_batch.ok_or_else(|| required("embed_batch"))?,
            embed_server: EmbedServer {
                url: keys.embed_url.ok_or_else(|| required("embed_url"))?,
                model: keys.embed_model.ok_or_else(|| required("embed_model"))?,
                api_key_env: keys
                    .embed_api_key_env
                    .ok_or_else(|| required("embed_api_key_env"))?,
                timeout_ms: keys
                    .embed_timeout_ms
                    .filter(|n| *n > 0)
                    .ok_or_else(|| required("embed_timeout_ms (at least 1)"))?,
                retries: keys
                    .embed_retries
                    .ok_or_else(|| required("embed_retries"))?,
                input: keys
                    .embed_input
                    .filter(|i| EMBED_INPUTS.contains(&i.as_str()))
                    .ok_or_else(|| {
                        anyhow::anyhow!("embed_input must be one of {}", EMBED_INPUTS.join(", "))
                    })?,
                query_prefix: keys
                    .embed_query_prefix
                    .ok_or_else(|| required("embed_query_prefix"))?,
                document_prefix: keys
                    .embed_document_prefix
                    .ok_or_else(|| required("embed_document_prefix"))?,
                revision: keys
                    .embed_revision
                    .ok_or_else(|| required("embed_revision"))?,
                normalize: keys
                    .embed_normalize
                    .ok_or_else(|| required("embed_normalize"))?,
                max_tokens: keys
                    .embed_max_tokens
                    .ok_or_else(|| required("embed_max_tokens"))?,
            },
            index_batch: keys
                .index_batch
                .filter(|n| *n > 0)
                .ok_or_else(|| required("index_batch (at least 1)"))?,
            generator: keys.generator.ok_or_else(|| required("generator"))?,
            llm_url: keys.llm_url.ok_or_else(|| required("llm_url"))?,
            llm_model: keys
                .llm_model
                .clone()
                .ok_or_else(|| required("llm_model"))?,
            llm_api_key_env: keys
                .llm_api_key_env
                .ok_or_else(|| required("llm_api_key_env"))?,
            llm_timeout_ms: keys
                .llm_timeout_ms
                .ok_or_else(|| required("llm_timeout_ms"))?,
            llm_max_tokens: keys
                .llm_max_tokens
                .ok_or_else(|| required("llm_max_tokens"))?,
            generator_fallback: fallback_steps(
                &keys
                    .generator_fallback
                    .ok_or_else(|| required("generator_fallback"))?,
                keys.llm_model.as_deref().unwrap_or_default(),
            )?,
            judge: keys.judge.ok_or_else(|| required("judge"))?,
            ask_attempts: keys.ask_attempts.ok_or_else(|| required("ask_attempts"))?,
            context: RetrievalBudget::new(
                keys.context_chunks
                    .ok_or_else(|| required("context_chunks"))?,
                keys.context_chars
                    .ok_or_else(|| required("context_chars"))?,
            )
            .map_err(|_| {
                anyhow::anyhow!("ask_attempts, context_chunks and context_chars must be at least 1")
            })?,
            answer_context: keys
                .answer_context
                .ok_or_else(|| required("answer_context"))?,
            fusion,
            locale_boost: match keys.locale_boost.ok_or_else(|| required("locale_boost"))? {
                b if b.is_finite() && b >= 0.0 => b,
                b => bail!("locale_boost must be a number ≥ 0, not {b}"),
            },
            reranker: keys.reranker.ok_or_else(|| required("reranker"))?,
            rerank_depth: match keys.rerank_depth.ok_or_else(|| required("rerank_depth"))? {
                0 => bail!("rerank_depth must be at least 1"),
                n => n,
            },
            rerank_model: keys.rerank_model.ok_or_else(|| required("rerank_model"))?,
            rerank_url: keys.rerank_url.ok_or_else(|| required("rerank_url"))?,
            rerank_api_key_env: keys
                .rerank_api_key_env
                .ok_or_else(|| required("rerank_api_key_env"))?,
            rerank_timeout_ms: match keys
                .rerank_timeout_ms
                .ok_or_else(|| required("rerank_timeout_ms"))?
            {
                0 => bail!("rerank_timeout_ms must be at least 1"),
                n => n,
            },
            rerank_chars: match keys.rerank_chars.ok_or_else(|| required("rerank_chars"))? {
                n if n < 2 => bail!("rerank_chars must be at least 2"),
                n => n,
            },
            scope_caps: scope_caps(&keys.scope_caps.ok_or_else(|| required("scope_caps"))?)?,
            write_back: zhiku_service::WriteBackPolicy {
                duplicates: keys
                    .write_back_duplicates
                    .ok_or_else(|| required("write_back_duplicates"))?,
                near_duplicate: match keys
                    .write_back_near_duplicate
                    .ok_or_else(|| required("write_back_near_duplicate"))?
                {
                    t if t > 0.0 && t <= 1.0 => t,
                    t => bail!("write_back_near_duplicate must be above 0 and at most 1, not {t}"),
                },
                min_chars: keys
                    .write_back_min_chars
                    .ok_or_else(|| required("write_back_min_chars"))?,
            },
            qdrant,
            ann,
            serve,
            profile,
            origins: std::mem::take(&mut r.origins),
        };
        if config.k == 0 {
            bail!("k must be at least 1");
        }
        if config.ask_attempts == 0 {
            bail!("ask_attempts, context_chunks and context_chars must be at least 1");
        }
        Ok(config)
    }

    /// True when the store lives on disk (a lexical index or vector index there).
    pub fn is_persistent(&self) -> bool {
        self.lexical == LexicalKind::Disk || self.vectors == VectorsKind::Ann
    }

    /// The cross-encoder `reranker = "cross-encoder"` loads: `rerank_model`, else the default.
    pub fn cross_encoder_model(&self) -> &str {
        match self.rerank_model.as_str() {
            "" => Self::DEFAULT_CROSS_ENCODER,
            model => model,
        }
    }

    /// The cross-encoder loaded when `rerank_model` is empty.
    pub const DEFAULT_CROSS_ENCODER: &'static str = "BAAI/bge-reranker-base";

    /// What the service needs of this configuration.
    pub fn service_settings(&self) -> zhiku_service::Settings {
        zhiku_service::Settings {
            profile: self.profile.clone(),
            policy: self.policy,
            trusted_scopes: self.scopes.clone(),
            k: self.k,
            candidates: self.candidates,
            context: self.context,
            ask_attempts: self.ask_attempts,
            answer_context: self.answer_context,
            fusion: self.fusion.clone(),
            locale_boost: self.locale_boost,
            rerank_depth: self.rerank_depth,
            index_batch: self.index_batch,
            limits: self.serve.query_limits(),
            scope_caps: self.scope_caps.clone(),
            write_back: self.write_back,
        }
    }

    /// Where `zhiku.toml` is looked for when `--config` is not given: the knowledge base root.
    pub fn default_file(kb: &Path) -> Option<PathBuf> {
        let candidate = kb.join("zhiku.toml");
        candidate.is_file().then_some(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_generator_fallback_chain_parses_and_ends_with_extractive_by_default() {
        let c = Config::resolve(None, None, &|_| None).unwrap();
        assert_eq!(c.generator_fallback, vec![FallbackStep::Extractive]);
        let env = |k: &str| {
            (k == "ZHIKU_GENERATOR_FALLBACK")
                .then(|| "http://10.0.0.2:8088/v1 backup,http://10.0.0.3/v1,extractive".to_string())
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(
            c.generator_fallback,
            vec![
                FallbackStep::Chat {
                    url: "http://10.0.0.2:8088/v1".into(),
                    model: "backup".into()
                },
                FallbackStep::Chat {
                    url: "http://10.0.0.3/v1".into(),
                    model: "local".into()
                },
                FallbackStep::Extractive,
            ]
        );
        let none = |k: &str| (k == "ZHIKU_GENERATOR_FALLBACK").then(|| "none".to_string());
        assert!(
            Config::resolve(None, None, &none)
                .unwrap()
                .generator_fallback
                .is_empty()
        );
        for bad in ["extractive,http://x/v1", "ftp://x", "http://x/v1 a b"] {
            let env = |k: &str| (k == "ZHIKU_GENERATOR_FALLBACK").then(|| bad.to_string());
            assert!(Config::resolve(None, None, &env).is_err(), "{bad}");
        }
    }

    #[test]
    fn profiles_pick_adapters_and_env_overrides_win() {
        let local = Config::resolve(None, None, &no_env).unwrap();
        assert_eq!(
            (local.vectors, local.embedder, local.lexical),
            (VectorsKind::Ann, EmbedderKind::Candle, LexicalKind::Disk)
        );
        let dev = Config::resolve(None, Some("dev"), &no_env).unwrap();
        assert_eq!(dev.embedder, EmbedderKind::Hashing);
        let env = |k: &str| match k {
            "ZHIKU_EMBEDDER" => Some("hashing".to_string()),
            "ZHIKU_MAX_CHARS" => Some("300".to_string()),
            "ZHIKU_SCOPES" => Some("a, b".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Hashing);
        assert_eq!(c.policy.max_chars(), 300);
        assert_eq!(
            c.scopes,
            vec![Scope::new("a").unwrap(), Scope::new("b").unwrap()]
        );
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "embedder" && o == "ZHIKU_EMBEDDER")
        );
        assert!(Config::resolve(None, Some("nope"), &no_env).is_err());
        let bad = |k: &str| (k == "ZHIKU_EMBEDDER").then(|| "gpt".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());
    }

    #[test]
    fn the_file_and_its_profiles_apply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(&path, "profile = \"team\"\nmax_chars = 400\n[profiles.team]\nembedder = \"none\"\nscopes = [\"team-a\"]\n").unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.profile, "team");
        assert_eq!(c.embedder, EmbedderKind::None);
        assert_eq!(c.policy.max_chars(), 400);
        assert_eq!(c.scopes, vec![Scope::new("team-a").unwrap()]);
        std::fs::write(&path, "unknown_key = 1\n").unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
    }

    #[test]
    fn qdrant_variables_win_over_the_table_and_bad_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(
            &path,
            "[qdrant]\nurl = \"http://q:6334\"\nshards = 3\nbatch = 64\n",
        )
        .unwrap();
        let env = |k: &str| match k {
            "ZHIKU_QDRANT_SHARDS" => Some("6".to_string()),
            "ZHIKU_QDRANT_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        let q = &c.qdrant;
        assert_eq!(q.url, "http://q:6334");
        assert_eq!((q.shard_number, q.batch_size), (6, 64));
        assert_eq!(q.replication_factor, 1);
        assert_eq!(q.api_key.as_deref(), Some("k"));
        assert!(!format!("{q:?}").contains("\"k\""));
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "qdrant.shards" && o == "ZHIKU_QDRANT_SHARDS")
        );
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "qdrant.url" && o == "zhiku.toml")
        );
        for (var, value) in [
            ("ZHIKU_QDRANT_TIMEOUT_MS", "soon"),
            ("ZHIKU_QDRANT_BATCH", "0"),
            ("ZHIKU_QDRANT_URL", "127.0.0.1:6334"),
        ] {
            let bad = |k: &str| (k == var).then(|| value.to_string());
            assert!(Config::resolve(None, None, &bad).is_err(), "{var}={value}");
        }
        std::fs::write(&path, "[qdrant]\nnope = 1\n").unwrap();
        assert!(Config::resolve(Some(&path), None, &no_env).is_err());
    }

    #[test]
    fn fusion_and_reranking_are_configured_and_checked() {
        let c = Config::resolve(None, None, &no_env).unwrap();
        // Measured (docs/measurements.md, "Fusion"): a convex combination, the dense route at 0.2.
        assert_eq!(c.fusion.method_name(), "convex_min_max");
        assert_eq!(c.fusion.weight(Route::Dense), 0.2);
        assert_eq!(c.reranker, RerankerKind::None);
        assert_eq!(c.fusion.dense_floor, None);
        assert_eq!(c.fusion.dense_min_score, None);
        let env = |k: &str| match k {
            "ZHIKU_FUSION" => Some("convex".to_string()),
            "ZHIKU_FUSION_NORMALISATION" => Some("z_score".to_string()),
            "ZHIKU_FUSION_DENSE_WEIGHT" => Some("0.3".to_string()),
            "ZHIKU_DENSE_FLOOR" => Some("0.9".to_string()),
            "ZHIKU_DENSE_MIN_SCORE" => Some("0.5".to_string()),
            "ZHIKU_RERANKER" => Some("rules".to_string()),
            "ZHIKU_RERANK_DEPTH" => Some("30".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.fusion.method_name(), "convex_z_score");
        assert_eq!(c.fusion.weight(Route::Dense), 0.3);
        assert_eq!(c.fusion.dense_floor, Some(0.9));
        assert_eq!(c.fusion.dense_min_score, Some(0.5));
        assert_eq!((c.reranker, c.rerank_depth), (RerankerKind::Rules, 30));
        let env = |k: &str| match k {
            "ZHIKU_RERANKER" => Some("cross-encoder".to_string()),
            "ZHIKU_RERANK_MODEL" => Some("/models/bge-reranker-base".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.reranker, RerankerKind::CrossEncoder);
        assert_eq!(c.rerank_model, "/models/bge-reranker-base");
        assert_eq!(c.service_settings().fusion, c.fusion);
        for (key, bad) in [
            ("ZHIKU_DENSE_FLOOR", "1.5"),
            ("ZHIKU_FUSION_DENSE_WEIGHT", "-1"),
            ("ZHIKU_RERANK_DEPTH", "0"),
            ("ZHIKU_RERANK_TIMEOUT_MS", "0"),
            ("ZHIKU_RERANK_CHARS", "1"),
            ("ZHIKU_RERANKER", "cohere"),
            ("ZHIKU_LOCALE_BOOST", "-0.1"),
            ("ZHIKU_FUSION", "average"),
        ] {
            let env = |k: &str| (k == key).then(|| bad.to_string());
            assert!(Config::resolve(None, None, &env).is_err(), "{key}={bad}");
        }
    }

    #[test]
    fn the_embeddings_server_is_configured_flat_or_as_a_table() {
        let env = |k: &str| match k {
            "ZHIKU_EMBEDDER" => Some("openai".to_string()),
            "ZHIKU_EMBED_URL" => Some("http://e:1/v1".to_string()),
            "ZHIKU_EMBED_INPUT" => Some("bge-zh".to_string()),
            _ => None,
        };
        let c = Config::resolve(None, None, &env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Openai);
        assert_eq!(c.embed_server.url, "http://e:1/v1");
        assert_eq!(c.embed_server.input, "bge-zh");
        assert_eq!(c.embed_server.api_key_env, "ZHIKU_EMBED_API_KEY");
        assert!(c.embed_server.normalize);
        let bad = |k: &str| (k == "ZHIKU_EMBED_INPUT").then(|| "fancy".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(
            &path,
            "[embedder]\nkind = \"openai\"\nurl = \"http://t:2/v1\"\nmodel = \"bge-m3\"\nbatch = 8\nrevision = \"r7\"\n\n[profiles.lex.embedder]\nkind = \"none\"\n",
        )
        .unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.embedder, EmbedderKind::Openai);
        assert_eq!(
            (c.embed_server.url.as_str(), c.embed_server.model.as_str()),
            ("http://t:2/v1", "bge-m3")
        );
        assert_eq!((c.embed_batch, c.embed_server.revision.as_str()), (8, "r7"));
        assert!(
            c.origins
                .iter()
                .any(|(k, o)| k == "embed_url" && o == "zhiku.toml")
        );
        let lex = Config::resolve(Some(&path), Some("lex"), &no_env).unwrap();
        assert_eq!(lex.embedder, EmbedderKind::None);
        // The variable still wins over the table.
        let env = |k: &str| (k == "ZHIKU_EMBED_URL").then(|| "http://v:3/v1".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.embed_server.url, "http://v:3/v1");
        for text in [
            "[embedder]\nkind = \"openai\"\nurl_typo = \"x\"\n",
            "embed_url = \"http://a/v1\"\n[embedder]\nurl = \"http://b/v1\"\n",
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(
                Config::resolve(Some(&path), None, &no_env).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn scope_caps_come_from_the_file_or_the_variable_and_bad_ones_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("zhiku.toml");
        std::fs::write(&path, "scope_caps = [\"web=200\"]\n").unwrap();
        let c = Config::resolve(Some(&path), None, &no_env).unwrap();
        assert_eq!(c.scope_caps.get(&Scope::new("web").unwrap()), Some(&200));
        let env = |k: &str| (k == "ZHIKU_SCOPE_CAPS").then(|| "web=5, cache=2".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.scope_caps.len(), 2);
        assert_eq!(
            c.service_settings().scope_caps[&Scope::new("web").unwrap()],
            5
        );
        assert!(
            Config::resolve(None, None, &no_env)
                .unwrap()
                .scope_caps
                .is_empty()
        );
        for bad in ["web", "web=0", "web=x", "bad scope=3", "web=1,web=2"] {
            let env = |k: &str| (k == "ZHIKU_SCOPE_CAPS").then(|| bad.to_string());
            let e = Config::resolve(None, None, &env).unwrap_err();
            assert!(format!("{e:#}").contains("scope_caps"), "{bad}: {e:#}");
        }
    }

    #[test]
    fn serve_variables_win_over_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zhiku.toml");
        std::fs::write(&path, "[serve]\nbind = \"127.0.0.1:1\"\nmax_k = 9\n").unwrap();
        let env = |k: &str| (k == "ZHIKU_SERVE_BIND").then(|| "127.0.0.1:2".to_string());
        let c = Config::resolve(Some(&path), None, &env).unwrap();
        assert_eq!(c.serve.bind, "127.0.0.1:2");
        assert_eq!(c.serve.max_k, 9);
        let bad = |k: &str| (k == "ZHIKU_SERVE_TIMEOUT_MS").then(|| "later".to_string());
        assert!(Config::resolve(None, None, &bad).is_err());
    }
}
