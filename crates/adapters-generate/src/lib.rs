//! Generators: what turns a question and numbered evidence into cited answer text.
//!
//! - [`ExtractiveGenerator`] — the offline default. Deterministic, no model: it picks the
//!   evidence sentences that cover the question best and cites each with its `[n]` marker, or
//!   answers with the no-material sentence when no sentence covers enough of the question.
//! - [`OpenAiGenerator`] — any server speaking the OpenAI chat-completions protocol (hosted
//!   APIs, vLLM, llama.cpp, Ollama), blocking HTTP with timeouts, optionally streamed.
//!
//! - [`FallbackGenerator`] — a chain of generators: when one is unreachable or times out,
//!   the next answers (a backup server, then the extractive generator), with a notice and the
//!   name of the generator that answered.
//!
//! All implement the domain's [`Generator`](zhiku_domain::ports::Generator) port; citation
//! validation happens in the domain, never here.
//!
//! - [`LlmReranker`] — a [`Reranker`](zhiku_domain::ports::Reranker) over the same kind of
//!   chat server: the model orders the numbered candidates listwise (RankGPT style, sliding
//!   windows); it shares the HTTP call with [`OpenAiGenerator`].
//! - [`LlmPlanner`] — a [`Planner`](zhiku_domain::ports::Planner) that asks the same chat
//!   model to make a follow-up question standalone (the rules read intent and parts).
//! - [`LlmJudge`] — a [`Judge`](zhiku_domain::ports::Judge) over the same kind of server:
//!   yes-or-no readings of a claim against its evidence, a text against a question, a
//!   finding offered for write-back.

mod chat;
mod extractive;
mod fallback;
mod judge;
mod openai;
mod planner;
mod rerank;

pub use extractive::{ExtractiveConfig, ExtractiveGenerator};
pub use fallback::FallbackGenerator;
pub use judge::LlmJudge;
pub use openai::{OpenAiConfig, OpenAiGenerator};
pub use planner::LlmPlanner;
pub use rerank::{ListwiseOutcome, LlmRerankConfig, LlmReranker};
