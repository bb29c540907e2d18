//! Chat completions, `POST {base}/chat/completions`: the one call the generator, the planner,
//! the judge and the listwise reranker make, over the crate's one HTTP client ([`crate::http`]).
//!
//! [`ChatClient`] sends a request once (no retries: a generator that fails is followed by the
//! next in the answerer's chain) within the caller's deadline, and reports failures as a
//! [`ChatError`] that each port maps to its own error type. Whether a status is temporary is
//! decided by [`http::classify`], the same rule the embedder and the `/rerank` client follow.

use std::time::{Duration, Instant};

use serde_json::Value;
use zhiku_domain::ports::ServedUsage;

use crate::http::{self, Class, HttpError, HttpErrorKind, RetryPolicy};

/// Where and how to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
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

impl ChatConfig {
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

/// The settings a chat failure points at.
const CHAT_HINTS: http::Hints = http::Hints {
    api_key: "llm_api_key_env",
    not_found: "is llm_url the API base up to /v1, and llm_model served?",
    // The context sent is what makes a chat request large.
    batch: "context_chars",
    input: "context_chars",
};

/// What went wrong with one chat request, before it is named in a port's error type.
#[derive(Debug)]
pub(crate) enum ChatError {
    /// Not reached, refused, or no (complete) reply in time.
    Unavailable(String),
    /// The server answered an error status; `class` is what the one rule makes of it.
    Status {
        code: u16,
        class: Class,
        message: String,
    },
    /// The server answered something that is not a chat completion.
    Malformed(String),
}

impl ChatError {
    /// True when asking again later may succeed (408, 429, 500, 502–599: [`http::classify`]).
    pub(crate) fn is_temporary(&self) -> bool {
        matches!(
            self,
            ChatError::Status {
                class: Class::Temporary,
                ..
            }
        )
    }

    /// True when the request itself was refused (400, 413, 422, or an input over the model's
    /// token limit).
    pub(crate) fn is_invalid_input(&self) -> bool {
        match self {
            ChatError::Status { code, class, .. } => {
                matches!(code, 400 | 413 | 422) || *class == Class::TooLong
            }
            _ => false,
        }
    }
}

impl From<HttpError> for ChatError {
    fn from(e: HttpError) -> Self {
        match (e.kind, e.status, e.class) {
            (HttpErrorKind::Unreachable, _, _) | (_, None, _) | (_, _, None) => {
                ChatError::Unavailable(e.message)
            }
            (_, Some(code), Some(class)) => ChatError::Status {
                code,
                class,
                message: e.message,
            },
        }
    }
}

/// A blocking chat-completions client.
#[derive(Debug, Clone)]
pub(crate) struct ChatClient {
    http: http::Client,
    endpoint: String,
    timeout: Duration,
}

impl ChatClient {
    /// A client for `config`'s base URL, key and timeout (connecting gets a fifth of it, at
    /// most 5 s).
    pub(crate) fn new(config: &ChatConfig) -> Self {
        let once = RetryPolicy {
            retries: 0,
            backoff: Duration::ZERO,
        };
        let http = http::Client::new(config.timeout, config.api_key.clone(), once, CHAT_HINTS);
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Self {
            http,
            endpoint,
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
        Ok(self.http.post_once(&self.endpoint, body, deadline)?)
    }

    /// Sends a non-streaming `body` and returns `choices[0].message.content`.
    pub(crate) fn complete(
        &self,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<String, ChatError> {
        self.complete_counted(body, deadline).map(|(text, _)| text)
    }

    /// [`complete`](Self::complete), with the server's `usage` when its reply holds one
    /// (both counts, each a plausible number; anything else is no usage).
    pub(crate) fn complete_counted(
        &self,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<(String, Option<ServedUsage>), ChatError> {
        let response = self.post(body, deadline)?;
        let value: Value = response.into_json().map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut {
                self.timed_out("timed out reading the reply")
            } else {
                self.malformed(e)
            }
        })?;
        let text = value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.malformed("no choices[0].message.content"))?;
        Ok((text, served_usage(&value)))
    }

    /// An unavailable error naming the endpoint.
    pub(crate) fn timed_out(&self, what: impl std::fmt::Display) -> ChatError {
        ChatError::Unavailable(format!("{}: {what}", self.endpoint))
    }

    /// A malformed-reply error naming the endpoint.
    pub(crate) fn malformed(&self, what: impl std::fmt::Display) -> ChatError {
        ChatError::Malformed(format!("{} sent a malformed reply: {what}", self.endpoint))
    }
}

/// The most tokens a reply's `usage` may claim for one count before it is taken as garbage.
const MAX_USAGE_TOKENS: u64 = 100_000_000;

/// An OpenAI-compatible reply's `usage`: its prompt and completion tokens, both present and
/// plausible, or nothing.
pub(crate) fn served_usage(reply: &Value) -> Option<ServedUsage> {
    let count = |key: &str| {
        reply
            .pointer(&format!("/usage/{key}"))
            .and_then(Value::as_u64)
            .filter(|&n| n <= MAX_USAGE_TOKENS)
            .and_then(|n| usize::try_from(n).ok())
    };
    Some(ServedUsage {
        prompt_tokens: count("prompt_tokens")?,
        completion_tokens: count("completion_tokens")?,
    })
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn a_replys_usage_is_read_only_when_whole_and_plausible() {
        let reply = |usage: Value| serde_json::json!({"choices": [], "usage": usage});
        assert_eq!(
            served_usage(&reply(
                serde_json::json!({"prompt_tokens": 812, "completion_tokens": 40, "total_tokens": 852})
            )),
            Some(ServedUsage {
                prompt_tokens: 812,
                completion_tokens: 40
            })
        );
        for bad in [
            serde_json::json!({"prompt_tokens": 812}),
            serde_json::json!({"prompt_tokens": -1, "completion_tokens": 3}),
            serde_json::json!({"prompt_tokens": "812", "completion_tokens": 3}),
            serde_json::json!({"prompt_tokens": 1e300, "completion_tokens": 3}),
            serde_json::json!({"prompt_tokens": u64::MAX, "completion_tokens": 3}),
            serde_json::json!(null),
        ] {
            assert_eq!(served_usage(&reply(bad.clone())), None, "{bad}");
        }
        assert_eq!(served_usage(&serde_json::json!({"choices": []})), None);
    }
}
