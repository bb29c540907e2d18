//! The reranker the configuration picks.
//!
//! The rule reranker is built at once. A model-backed one (a cross-encoder's weights, a
//! reranking server, the chat model) is built on its first question, so that commands which
//! never rerank (`index`, `status`, …) neither load weights nor call a server. When it cannot
//! be built, that reranking fails as unavailable with the reason (the retriever keeps the fused
//! order and says so) and the next question tries again: a reranking server that was down at
//! the first question is used once it is up, without a restart.

use std::sync::OnceLock;
use std::time::Duration;

use zhiku_adapters_candle::{CrossEncoder, CrossEncoderOptions, ModelSource};
use zhiku_adapters_offline::RuleReranker;
use zhiku_adapters_openai::{LlmRerankConfig, LlmReranker, OpenAiReranker, OpenAiRerankerConfig};
use zhiku_domain::ports::{RerankCandidate, RerankError, Reranker};

use super::generator::chat_config;
use crate::config::{Config, RerankerKind};

/// The reranker `config` asks for, if any.
pub fn reranker_for(config: &Config) -> Option<Box<dyn Reranker>> {
    Some(match config.reranker {
        RerankerKind::None => return None,
        RerankerKind::Rules => Box::new(RuleReranker::default()),
        RerankerKind::CrossEncoder => {
            let model = config.cross_encoder_model().to_string();
            Box::new(Deferred::new(
                "candle-cross-encoder",
                format!("cross-encoder:{model}"),
                move || {
                    CrossEncoder::load(&ModelSource::parse(&model), &CrossEncoderOptions::default())
                        .map(|r| Box::new(r) as Box<dyn Reranker>)
                        .map_err(|e| e.to_string())
                },
            ))
        }
        RerankerKind::Http => {
            let mut c = OpenAiRerankerConfig::new(&config.rerank_url);
            c.model = Some(config.rerank_model.clone()).filter(|m| !m.is_empty());
            c.api_key = std::env::var(&config.rerank_api_key_env)
                .ok()
                .filter(|k| !k.is_empty());
            c.timeout = Duration::from_millis(config.rerank_timeout_ms);
            c.max_chars = config.rerank_chars;
            Box::new(Deferred::new(
                "http-rerank",
                format!("http-rerank:{}", config.rerank_url),
                move || {
                    OpenAiReranker::connect(c.clone())
                        .map(|r| Box::new(r) as Box<dyn Reranker>)
                        .map_err(|e| e.to_string())
                },
            ))
        }
        // The chat server's own deadline (`llm_timeout_ms`): a listwise pass is a generation.
        RerankerKind::Llm => Box::new(LlmReranker::new(LlmRerankConfig::new(chat_config(config)))),
    })
}

type Build = Box<dyn Fn() -> Result<Box<dyn Reranker>, String> + Send + Sync>;

/// A reranker built on first use.
struct Deferred {
    adapter: &'static str,
    label: String,
    build: Build,
    /// Set once a build succeeds; failures are not kept.
    built: OnceLock<Box<dyn Reranker>>,
}

impl Deferred {
    fn new(
        adapter: &'static str,
        label: String,
        build: impl Fn() -> Result<Box<dyn Reranker>, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            adapter,
            label,
            build: Box::new(build),
            built: OnceLock::new(),
        }
    }
}

impl Reranker for Deferred {
    fn name(&self) -> &str {
        match self.built.get() {
            Some(r) => r.name(),
            None => &self.label,
        }
    }

    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(r) = self.built.get() {
            return r.rerank(query, candidates);
        }
        match (self.build)() {
            // Two first questions at once may both build; one result is kept.
            Ok(r) => self.built.get_or_init(|| r).rerank(query, candidates),
            Err(message) => Err(RerankError::Unavailable {
                adapter: self.adapter,
                message,
            }),
        }
    }
}
