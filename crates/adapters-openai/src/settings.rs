//! The embeddings server as a configuration names it (the `embed_*` keys), and how those
//! settings become the adapter's [`OpenAiEmbedderConfig`]: the keys' type is owned here, by the
//! adapter they configure, so a new key or input style is added in one crate.

use std::time::Duration;

use crate::embedder::OpenAiEmbedderConfig;
use crate::http::RetryPolicy;
use crate::input::InputStyle;

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

/// The values `embed_input` takes: `auto`, `prefix` and every [`InputStyle::preset`] name.
pub const EMBED_INPUTS: [&str; 7] = [
    "auto",
    "input_type",
    "e5",
    "bge-zh",
    "bge-en",
    "none",
    "prefix",
];

impl EmbedServer {
    /// Refuses an `input` that is not one of [`EMBED_INPUTS`].
    pub fn check(&self) -> Result<(), String> {
        if EMBED_INPUTS.contains(&self.input.as_str()) {
            Ok(())
        } else {
            Err(format!(
                "embed_input must be one of {}",
                EMBED_INPUTS.join(", ")
            ))
        }
    }

    /// The adapter's configuration: requests of at most `max_batch` inputs, `api_key` sent when
    /// given (the caller reads it from the variable [`api_key_env`](Self::api_key_env) names).
    pub fn to_config(
        &self,
        max_batch: usize,
        api_key: Option<String>,
    ) -> Result<OpenAiEmbedderConfig, String> {
        let input = match self.input.as_str() {
            "auto" => None,
            "prefix" => Some(InputStyle::Prefix {
                query: self.query_prefix.clone(),
                document: self.document_prefix.clone(),
            }),
            name => match InputStyle::preset(name) {
                Some(style) => Some(style),
                None => return Err(format!("embed_input {name:?} is not a known input style")),
            },
        };
        Ok(OpenAiEmbedderConfig {
            base_url: self.url.clone(),
            model: Some(self.model.trim().to_string()).filter(|m| !m.is_empty()),
            api_key,
            input,
            revision: self.revision.clone(),
            max_batch,
            timeout: Duration::from_millis(self.timeout_ms),
            retry: RetryPolicy {
                retries: self.retries,
                backoff: Duration::from_millis(250),
            },
            normalize: self.normalize,
            max_tokens: Some(self.max_tokens).filter(|n| *n > 0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_input_style_is_a_preset() {
        for name in EMBED_INPUTS {
            if !matches!(name, "auto" | "prefix") {
                assert!(InputStyle::preset(name).is_some(), "{name}");
            }
        }
    }
}
