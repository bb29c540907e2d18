//! A generator over any OpenAI-compatible chat-completions server.

use std::io::{BufRead, BufReader};
use std::time::Instant;

use serde_json::{Value, json};
use zhiku_domain::ports::{GenerateError, Generated, GenerationRequest, Generator};

use crate::chat::{ChatClient, ChatConfig, ChatError};

const ADAPTER: &str = "openai";

/// Chat completions over blocking HTTP (ureq). Connection failures and timeouts are
/// [`GenerateError::Unavailable`]; 408/429/5xx are temporary backend errors; other 4xx are
/// permanent.
#[derive(Debug, Clone)]
pub struct OpenAiGenerator {
    config: ChatConfig,
    client: ChatClient,
}

impl OpenAiGenerator {
    /// A generator for `config`. No request is made until the first answer.
    pub fn new(config: ChatConfig) -> Self {
        let client = ChatClient::new(&config);
        Self { config, client }
    }

    fn body(&self, request: &GenerationRequest, stream: bool) -> Value {
        json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.prompt},
            ],
            // The caller's sampling where asked; the answer never longer than configured.
            "temperature": request
                .sampling
                .temperature()
                .unwrap_or(f64::from(self.config.temperature)),
            "max_tokens": request
                .sampling
                .max_tokens
                .map_or(self.config.max_tokens, |m| m.clamp(1, self.config.max_tokens)),
            "stream": stream,
        })
    }
}

impl From<ChatError> for GenerateError {
    fn from(error: ChatError) -> Self {
        match error {
            ChatError::Unavailable(message) => GenerateError::Unavailable {
                adapter: ADAPTER,
                message,
            },
            ChatError::Status { ref message, .. } if error.is_invalid_input() => {
                GenerateError::InvalidInput(message.clone())
            }
            ChatError::Status { ref message, .. } => GenerateError::Backend {
                adapter: ADAPTER,
                source: message.clone().into(),
                temporary: error.is_temporary(),
            },
            ChatError::Malformed(message) => GenerateError::Backend {
                adapter: ADAPTER,
                source: message.into(),
                temporary: false,
            },
        }
    }
}

impl Generator for OpenAiGenerator {
    fn identity(&self) -> String {
        format!(
            "openai-compatible:{}@{}",
            self.config.model, self.config.base_url
        )
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        Ok(self.client.complete(&self.body(request, false), None)?)
    }

    /// The answer with the server's `usage`, when its reply holds one.
    fn generate_attributed(&self, request: &GenerationRequest) -> Result<Generated, GenerateError> {
        let (text, usage) = self
            .client
            .complete_counted(&self.body(request, false), None)?;
        Ok(Generated {
            text,
            generator: self.identity(),
            notices: Vec::new(),
            usage,
        })
    }

    fn generate_streaming(
        &self,
        request: &GenerationRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<String, GenerateError> {
        let deadline = Instant::now() + self.config.timeout;
        let response = self.client.post(&self.body(request, true), None)?;
        let reader = BufReader::new(response.into_reader());
        let mut text = String::new();
        for line in reader.lines() {
            let line = line.map_err(|e| self.client.timed_out(format!("stream broke: {e}")))?;
            if Instant::now() > deadline {
                return Err(self
                    .client
                    .timed_out(format!(
                        "no complete answer within {:?}",
                        self.config.timeout
                    ))
                    .into());
            }
            let Some(data) = line.strip_prefix("data:") else {
                continue; // comments, event names, keep-alives and blank separators
            };
            let data = data.trim();
            if data == "[DONE]" {
                break;
            }
            let event: Value = serde_json::from_str(data).map_err(|e| self.client.malformed(e))?;
            if let Some(delta) = event
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                && !delta.is_empty()
            {
                text.push_str(delta);
                on_delta(delta);
            }
        }
        // Some servers close the stream without [DONE]; what arrived is the answer. Nothing
        // at all is asked for once more, without streaming: some servers stream an empty
        // reply (a template or a stop sequence) for a request they answer whole.
        if text.trim().is_empty() {
            let text = self.generate(request)?;
            on_delta(&text);
            return Ok(text);
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::Sampling;
    use zhiku_domain::rules::context::build_request;

    #[test]
    fn a_callers_sampling_reaches_the_model_within_the_configured_length() {
        let g = OpenAiGenerator::new(ChatConfig::new("http://127.0.0.1:9/v1", "m"));
        let mut request = build_request("问题？", Vec::new(), None, 1);
        let body = g.body(&request, false);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["max_tokens"], 512);
        request.sampling = Sampling::new(Some(0.7), Some(100)).unwrap();
        let body = g.body(&request, true);
        assert!((body["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-9);
        assert_eq!(body["max_tokens"], 100);
        // Longer than configured: the operator's cap holds.
        request.sampling = Sampling::new(None, Some(100_000)).unwrap();
        assert_eq!(g.body(&request, false)["max_tokens"], 512);
        assert!(Sampling::new(Some(2.5), None).is_none());
        assert!(Sampling::new(Some(f64::NAN), None).is_none());
    }
}
