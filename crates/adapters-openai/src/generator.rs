//! A generator over any OpenAI-compatible chat-completions server.

use std::io::{BufRead, BufReader};
use std::time::Instant;

use serde_json::{Value, json};
use zhiku_domain::ports::{GenerateError, GenerationRequest, Generator};

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
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
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
