//! The resolved configuration itself: one typed [`Config`] per run, with what the rest of the
//! binary asks of it. How it is resolved lives beside it ([`super::resolve`] in `mod.rs`,
//! [`super::assemble`]); this module depends on neither.

use std::path::{Path, PathBuf};

use zhiku_adapters_qdrant::QdrantConfig;
use zhiku_adapters_usearch::AnnSettings;
use zhiku_domain::rules::budget::RetrievalBudget;
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::rules::fusion::FusionConfig;
use zhiku_domain::rules::vocabulary::Synonyms;
use zhiku_domain::{ChunkingPolicy, Scope};
use zhiku_http::settings::ServeSettings;

use super::kinds::{
    EmbedServer, EmbedderKind, FallbackStep, GeneratorKind, JudgeKind, LexicalKind, OcrKind,
    PlannerKind, RerankerKind, VectorsKind,
};

/// How scans and pictures are read: the engine and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrSettings {
    /// The engine.
    pub kind: OcrKind,
    /// Tesseract's languages.
    pub languages: String,
    /// The Tesseract program.
    pub program: String,
    /// Longest OCR of one page, in seconds.
    pub page_seconds: u64,
    /// The PP-OCR models' folder, the home folder resolved.
    pub models: PathBuf,
    /// The ONNX Runtime library PP-OCR runs on; `None`: the one in `models`.
    pub runtime: Option<PathBuf>,
    /// The PDFium library that draws PDF pages (text pages shown with a quote highlighted,
    /// scans whose picture no decoder here reads); `None`: pages are not drawn.
    pub pdfium: Option<PathBuf>,
}

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
    /// Most pixels of one page picture.
    pub max_image_pixels: u64,
    /// How scans and pictures are read.
    pub ocr: OcrSettings,
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
    /// Seconds between `serve`'s retention sweeps (`sweep_every`; `None`: never).
    pub sweep_every_secs: Option<u64>,
    /// The team's synonym groups (`synonyms`).
    pub synonyms: Synonyms,
    /// The lexical analyzer: jieba with the team's user dictionary (`dictionary`,
    /// `dictionary_file`).
    pub analyzer: zhiku_analyzer::Analyzer,
    /// `dictionary_file` as configured, read by [`Config::resolve`] (relative to the
    /// configuration file's folder).
    pub dictionary_file: Option<std::path::PathBuf>,
    /// Who reads a question in its conversation.
    pub planner: PlannerKind,
    /// The model planner's deadline in milliseconds.
    pub planner_timeout_ms: u64,
    /// Who judges claims, answers and write-backs beside the rules.
    pub judge: JudgeKind,
    /// Generation attempts before an answer run ends `blocked`.
    pub ask_attempts: u32,
    /// What an answer's context may hold (`context_chunks`, `context_chars`).
    pub context: RetrievalBudget,
    /// The generator's `tokenizer.json` (`generator_tokenizer`; `None`: the estimate).
    pub generator_tokenizer: Option<std::path::PathBuf>,
    /// Whether answer prompts are kept in traces (`prompt_log`).
    pub prompt_log: bool,
    /// Limits in tokens (`context_tokens`, `history_tokens`, `answer_tokens`).
    pub tokens: zhiku_domain::rules::budget::TokenBudget,
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
    /// Who may read a document that names no readers itself (`access_rules`,
    /// `scope_readers`).
    pub access: zhiku_service::AccessPolicy,
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
    /// The sources synced into the folder (`[[sources]]`, from `zhiku.toml` only).
    pub sources: Vec<super::sources::SourceTable>,
}

impl Config {
    /// True when every piece of the store lives on the Qdrant deployment (profile `cluster`:
    /// both routes, and so the catalog): nothing that a query or a write needs is kept on this
    /// machine, and writers take turns through the catalog's lease instead of a lock file.
    pub fn on_cluster(&self) -> bool {
        self.lexical == LexicalKind::Qdrant
    }

    /// True when the store persists (a lexical or vector index on disk or on a server), so its
    /// catalog must too.
    pub fn is_persistent(&self) -> bool {
        self.lexical != LexicalKind::Ram || self.vectors == VectorsKind::Ann
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
            tokens: self.tokens,
            fusion: self.fusion.clone(),
            locale_boost: self.locale_boost,
            rerank_depth: self.rerank_depth,
            index_batch: self.index_batch,
            limits: self.serve.query_limits(),
            scope_caps: self.scope_caps.clone(),
            access: self.access.clone(),
            write_back: self.write_back,
        }
    }

    /// Where `zhiku.toml` is looked for when `--config` is not given: the knowledge base root.
    pub fn default_file(kb: &Path) -> Option<PathBuf> {
        let candidate = kb.join("zhiku.toml");
        candidate.is_file().then_some(candidate)
    }
}
