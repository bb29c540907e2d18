//! The one HTTP call both OpenAI-compatible adapters make: `POST {base}/chat/completions`.
//!
//! [`ChatClient`] owns the agent, the endpoint and the key, and reports failures as a
//! [`ChatError`] that each port maps to its own error type with the same rules: connection
//! failures and timeouts are unavailable, 408/429/5xx temporary, 400/413/422 invalid input,
//! other statuses permanent, an unreadable reply malformed.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::openai::OpenAiConfig;

/// What went wrong with one chat request, before it is named in a port's error type.
#[derive(Debug)]
pub(crate) enum ChatError {
    /// Not reached, refused, or no (complete) reply in time.
    Unavailable(String),
    /// The server answered an error status.
    Status { code: u16, message: String },
    /// The server answered something that is not a chat completion.
    Malformed(String),
}

impl ChatError {
    /// True for the statuses a retry may cure (408, 429, 5xx).
    pub(crate) fn status_is_temporary(code: u16) -> bool {
        matches!(code, 408 | 429 | 500..=599)
    }

    /// True for the statuses that say the request itself was refused (400, 413, 422).
    pub(crate) fn status_is_invalid_input(code: u16) -> bool {
        matches!(code, 400 | 413 | 422)
    }
}

/// A blocking chat-completions client over ureq.
#[derive(Debug, Clone)]
pub(crate) struct ChatClient {
    agent: ureq::Agent,
    endpoint: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl ChatClient {
    /// A client for `config`'s base URL, key and timeout (connecting gets a fifth of it).
    pub(crate) fn new(config: &OpenAiConfig) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.timeout / 5)
            .timeout(config.timeout)
            .build();
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Self {
            agent,
            endpoint,
            api_key: config.api_key.clone(),
            timeout: config.timeout,
        }
    }

    /// The whole-request deadline of the configuration.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `body`; a reply with a success status is returned unread. With a `deadline`, the
    /// request gets no more than the time left before it (and fails at once when none is left).
    pub(crate) fn post(
        &self,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<ureq::Response, ChatError> {
        let mut call = self
            .agent
            .post(&self.endpoint)
            .set("Content-Type", "application/json");
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out("no time left before the deadline"));
            }
            call = call.timeout(left.min(self.timeout));
        }
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        call.send_json(body).map_err(|e| self.map_error(e))
    }

    /// Sends a non-streaming `body` and returns `choices[0].message.content`.
    pub(crate) fn complete(
        &self,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<String, ChatError> {
        let response = self.post(body, deadline)?;
        let value: Value = response.into_json().map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut {
                self.timed_out("timed out reading the reply")
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

    /// An unavailable error naming the endpoint.
    pub(crate) fn timed_out(&self, what: impl std::fmt::Display) -> ChatError {
        ChatError::Unavailable(format!("{}: {what}", self.endpoint))
    }

    /// A malformed-reply error naming the endpoint.
    pub(crate) fn malformed(&self, what: impl std::fmt::Display) -> ChatError {
        ChatError::Malformed(format!("{} sent a malformed reply: {what}", self.endpoint))
    }

    fn map_error(&self, error: ureq::Error) -> ChatError {
        match error {
            ureq::Error::Status(code, response) => {
                let detail = response
                    .into_string()
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect::<String>();
                ChatError::Status {
                    code,
                    message: format!("{} answered HTTP {code}: {detail}", self.endpoint),
                }
            }
            // ureq's message names the URL already.
            ureq::Error::Transport(t) => ChatError::Unavailable(t.to_string()),
        }
    }
}
