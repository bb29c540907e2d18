//! A generator over any OpenAI-compatible chat-completions server.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zhiku_domain::ports::{GenerateError, GenerationRequest, Generator};

const ADAPTER: &str = "openai";

/// Where and how to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API base, ending before `/chat/completions` (e.g. `http://127.0.0.1:8088/v1`).
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Bearer token, when the server wants one (read from the environment by the caller).
    pub api_key: Option<String>,
    /// Whole-request deadline; connecting gets at most a fifth of it.
    pub timeout: Duration,
    /// Upper bound on generated tokens.
    pub max_tokens: u32,
    /// Sampling temperature (0 for reproducible answers).
    pub temperature: f32,
}

impl OpenAiConfig {
    /// A configuration with a 60 s timeout, 512 tokens and temperature 0.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            max_tokens: 512,
            temperature: 0.0,
        }
    }
}

/// Chat completions over blocking HTTP (ureq). Connection failures and timeouts are
/// [`GenerateError::Unavailable`]; 408/429/5xx are temporary backend errors; other 4xx are
/// permanent.
#[derive(Debug, Clone)]
pub struct OpenAiGenerator {
    config: OpenAiConfig,
    agent: ureq::Agent,
    endpoint: String,
}

impl OpenAiGenerator {
    /// A generator for `config`. No request is made until the first answer.
    pub fn new(config: OpenAiConfig) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.timeout / 5)
            .timeout(config.timeout)
            .build();
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Self {
            config,
            agent,
            endpoint,
        }
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

    fn post(&self, body: &Value) -> Result<ureq::Response, GenerateError> {
        let mut call = self
            .agent
            .post(&self.endpoint)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        call.send_json(body).map_err(|e| self.map_error(e))
    }

    fn map_error(&self, error: ureq::Error) -> GenerateError {
        match error {
            ureq::Error::Status(code, response) => {
                let detail = response
                    .into_string()
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect::<String>();
                let message = format!("{} answered HTTP {code}: {detail}", self.endpoint);
                match code {
                    408 | 429 | 500..=599 => GenerateError::Backend {
                        adapter: ADAPTER,
                        source: message.into(),
                        temporary: true,
                    },
                    400 | 413 | 422 => GenerateError::InvalidInput(message),
                    _ => GenerateError::Backend {
                        adapter: ADAPTER,
                        source: message.into(),
                        temporary: false,
                    },
                }
            }
            ureq::Error::Transport(t) => GenerateError::Unavailable {
                adapter: ADAPTER,
                message: format!("{}: {t}", self.endpoint),
            },
        }
    }

    fn malformed(&self, what: impl std::fmt::Display) -> GenerateError {
        GenerateError::Backend {
            adapter: ADAPTER,
            source: format!("{} sent a malformed reply: {what}", self.endpoint).into(),
            temporary: false,
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
        let response = self.post(&self.body(request, false))?;
        let value: Value = response.into_json().map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut {
                GenerateError::Unavailable {
                    adapter: ADAPTER,
                    message: format!("{}: timed out reading the reply", self.endpoint),
                }
            } else {
                self.malformed(e)
            }
        })?;
        value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.malformed("no choices[0].message.content"))
    }

    fn generate_streaming(
        &self,
        request: &GenerationRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<String, GenerateError> {
        let deadline = Instant::now() + self.config.timeout;
        let response = self.post(&self.body(request, true))?;
        let reader = BufReader::new(response.into_reader());
        let mut text = String::new();
        for line in reader.lines() {
            let line = line.map_err(|e| GenerateError::Unavailable {
                adapter: ADAPTER,
                message: format!("{}: stream broke: {e}", self.endpoint),
            })?;
            if Instant::now() > deadline {
                return Err(GenerateError::Unavailable {
                    adapter: ADAPTER,
                    message: format!(
                        "{}: no complete answer within {:?}",
                        self.endpoint, self.config.timeout
                    ),
                });
            }
            let Some(data) = line.strip_prefix("data:") else {
                continue; // comments, event names, keep-alives and blank separators
            };
            let data = data.trim();
            if data == "[DONE]" {
                return Ok(text);
            }
            let event: Value = serde_json::from_str(data).map_err(|e| self.malformed(e))?;
            if let Some(delta) = event
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                && !delta.is_empty()
            {
                text.push_str(delta);
                on_delta(delta);
            }
        }
        // Some servers close the stream without [DONE]; what arrived is the answer.
        Ok(text)
    }
}
