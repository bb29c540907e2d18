//! The generator the configuration picks.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use zhiku_adapters_candle::TokenizerFile;
use zhiku_adapters_offline::EstimatedTokens;
use zhiku_adapters_offline::{ExtractiveGenerator, FallbackGenerator};
use zhiku_adapters_openai::{ChatConfig, OpenAiGenerator};
use zhiku_domain::ports::{Embedder, Generator, TokenCounter};

use crate::config::{Config, FallbackStep, GeneratorKind};

/// What counts the generator's tokens: its `tokenizer.json` when `generator_tokenizer` names
/// one (a file that does not load is an error, not a silent estimate), the estimate otherwise.
pub fn token_counter_for(config: &Config) -> Result<Arc<dyn TokenCounter>> {
    Ok(match &config.generator_tokenizer {
        Some(path) => Arc::new(
            TokenizerFile::load(path).map_err(|e| anyhow::anyhow!("generator_tokenizer: {e}"))?,
        ),
        None => Arc::new(EstimatedTokens),
    })
}

/// The generator the configuration asks for; the extractive one also scores sentences with
/// `embedder` (the knowledge base's dense route) when there is one.
pub fn generator_for(
    config: &Config,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<Box<dyn Generator>> {
    Ok(match config.generator {
        GeneratorKind::Extractive => Box::new(extractive(embedder)),
        GeneratorKind::Openai => {
            let primary = OpenAiGenerator::new(chat_config(config));
            if config.generator_fallback.is_empty() {
                return Ok(Box::new(primary));
            }
            // The chat server first, then the configured fallbacks, in order.
            let mut chain: Vec<Arc<dyn Generator>> = vec![Arc::new(primary)];
            for step in &config.generator_fallback {
                chain.push(match step {
                    FallbackStep::Chat { url, model } => {
                        let mut c = chat_config(config);
                        c.base_url.clone_from(url);
                        c.model.clone_from(model);
                        Arc::new(OpenAiGenerator::new(c))
                    }
                    FallbackStep::Extractive => Arc::new(extractive(embedder.clone())),
                });
            }
            Box::new(FallbackGenerator::new(chain).expect("the chain holds the chat server"))
        }
    })
}

/// The chat-completions server of `llm_url` / `llm_model`, its key and limits.
pub fn chat_config(config: &Config) -> ChatConfig {
    let mut c = ChatConfig::new(&config.llm_url, &config.llm_model);
    c.api_key = std::env::var(&config.llm_api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    c.timeout = Duration::from_millis(config.llm_timeout_ms);
    c.max_tokens = config.llm_max_tokens;
    c
}

/// The extractive generator, semantic with `embedder`, lexical without.
pub fn extractive(embedder: Option<Arc<dyn Embedder>>) -> ExtractiveGenerator {
    match embedder {
        Some(e) => ExtractiveGenerator::default().with_embedder(e),
        None => ExtractiveGenerator::default(),
    }
}
