//! The OpenAI-compatible embedder of `embedder = "openai"`, from the `embed_*` keys.

use anyhow::Result;
use zhiku_adapters_openai::OpenAiEmbedderConfig;

use crate::config::{Config, EmbedServer};

/// The adapter's configuration from `config`'s `embed_*` keys, the API key read from the
/// variable `embed_api_key_env` names (absent or empty: no key is sent).
pub fn openai_embedder_config(config: &Config) -> Result<OpenAiEmbedderConfig> {
    let s: &EmbedServer = &config.embed_server;
    let api_key = std::env::var(&s.api_key_env).ok().filter(|k| !k.is_empty());
    s.to_config(config.embed_batch, api_key)
        .map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use zhiku_adapters_openai::InputStyle;

    use super::*;

    #[test]
    fn the_keys_become_the_adapters_configuration() {
        let env = |k: &str| match k {
            "ZHIKU_EMBED_INPUT" => Some("prefix".to_string()),
            "ZHIKU_EMBED_QUERY_PREFIX" => Some("Q: ".to_string()),
            "ZHIKU_EMBED_MAX_TOKENS" => Some("512".to_string()),
            "ZHIKU_EMBED_API_KEY_ENV" => Some("ZHIKU_TEST_SURELY_UNSET_KEY_VAR".to_string()),
            _ => None,
        };
        let config = Config::resolve(None, None, &env).unwrap();
        let c = openai_embedder_config(&config).unwrap();
        assert_eq!(c.base_url, "http://127.0.0.1:8089/v1");
        assert_eq!(c.model, None);
        assert_eq!(c.api_key, None);
        assert_eq!(
            c.input,
            Some(InputStyle::Prefix {
                query: "Q: ".into(),
                document: String::new()
            })
        );
        assert_eq!((c.max_batch, c.max_tokens), (32, Some(512)));
        assert_eq!(c.timeout, Duration::from_secs(120));
    }
}
