//! The embedder the configuration picks (or why there is none), shared by the dense route and
//! the extractive generator.

use std::sync::Arc;

use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};
use zhiku_adapters_memory::HashingEmbedder;
use zhiku_adapters_openai::OpenAiEmbedder;
use zhiku_domain::ports::Embedder;

use crate::config::{Config, EmbedderKind};

/// Resolves the configured embedder, or says why there is none.
pub fn resolve_embedder(config: &Config) -> (Option<Box<dyn Embedder>>, String) {
    match config.embedder {
        EmbedderKind::None => (None, "embedder = none: lexical retrieval only".into()),
        EmbedderKind::Hashing => match HashingEmbedder::new(384) {
            Ok(e) => (
                Some(Box::new(e)),
                "hashing test double (no semantics)".into(),
            ),
            Err(e) => (None, format!("hashing embedder: {e}")),
        },
        EmbedderKind::Candle => {
            let source = ModelSource::parse(&config.model);
            let options = EmbedderOptions {
                batch_size: config.embed_batch,
                ..EmbedderOptions::default()
            };
            match CandleEmbedder::load(&source, &options) {
                Ok(e) => {
                    let why = format!("candle {} (max {} tokens)", e.space(), e.max_seq_length());
                    (Some(Box::new(e)), why)
                }
                Err(e) => (
                    None,
                    format!(
                        "embedder unavailable, retrieval is lexical only: {e} (set ZHIKU_MODEL to a model folder or hub id)"
                    ),
                ),
            }
        }
        EmbedderKind::Openai => {
            let connected = crate::wiring::embed_server::openai_embedder_config(config)
                .map_err(|e| e.to_string())
                .and_then(|c| OpenAiEmbedder::connect(c).map_err(|e| e.to_string()));
            match connected {
                Ok(e) => {
                    let why = e.describe();
                    (Some(Box::new(e)), why)
                }
                Err(e) => (
                    None,
                    format!(
                        "embedder unavailable, retrieval is lexical only: {e} (embed_url / ZHIKU_EMBED_URL names the server)"
                    ),
                ),
            }
        }
    }
}

/// One embedder shared by the dense route and the extractive generator.
pub(super) struct SharedEmbedder(pub(super) Arc<dyn Embedder>);

impl Embedder for SharedEmbedder {
    fn space(&self) -> &zhiku_domain::EmbeddingSpace {
        self.0.space()
    }

    fn embed_documents(
        &self,
        texts: &[&str],
    ) -> Result<Vec<zhiku_domain::Embedding>, zhiku_domain::ports::EmbedError> {
        self.0.embed_documents(texts)
    }

    fn embed_query(
        &self,
        text: &str,
    ) -> Result<zhiku_domain::Embedding, zhiku_domain::ports::EmbedError> {
        self.0.embed_query(text)
    }
}
