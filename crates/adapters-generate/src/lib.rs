//! Generators: what turns a question and numbered evidence into cited answer text.
//!
//! - [`ExtractiveGenerator`] — the offline default. Deterministic, no model: it picks the
//!   evidence sentences that cover the question best and cites each with its `[n]` marker, or
//!   answers with the no-material sentence when no sentence covers enough of the question.
//! - [`OpenAiGenerator`] — any server speaking the OpenAI chat-completions protocol (hosted
//!   APIs, vLLM, llama.cpp, Ollama), blocking HTTP with timeouts, optionally streamed.
//!
//! Both implement the domain's [`Generator`](zhiku_domain::ports::Generator) port; citation
//! validation happens in the domain, never here.

mod chat;
mod extractive;
mod openai;

pub use extractive::{ExtractiveConfig, ExtractiveGenerator};
pub use openai::{OpenAiConfig, OpenAiGenerator};
