//! The one HTTP client of every OpenAI-compatible endpoint: a JSON request with a deadline,
//! retried with backoff while the failure is temporary (embeddings, `/rerank`), or sent once
//! and read as it streams (chat completions), and every failure classified by one rule
//! ([`classify`]) into an [`HttpError`] that each adapter maps onto its port's error
//! ([`EmbedError`](zhiku_domain::ports::EmbedError), [`RerankError`](zhiku_domain::ports::RerankError),
//! [`GenerateError`](zhiku_domain::ports::GenerateError), ...).

use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest wait between two attempts, whatever the server's `Retry-After` asks for: a caller
/// waiting on a query must not hang.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: none).
    pub retries: u32,
    /// The first wait; each further wait doubles, up to [`MAX_RETRY_WAIT`].
    pub backoff: Duration,
}

/// What kind of failure a request ended in, after any retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpErrorKind {
    /// Not connected, timed out, the connection dropped, or the URL cannot be requested.
    Unreachable,
    /// 408, 429 or 5xx, still so after the retries.
    Temporary,
    /// 400, 413, 422 and other 4xx but the ones below: the request was refused as malformed.
    Refused,
    /// 401, 403, 404, 405, 501, or a reply that is not JSON: retrying cannot help.
    Permanent,
}

/// A failed request: its kind, the HTTP status when there was one, and what happened (naming
/// the URL, and the setting to change when there is one).
#[derive(Debug, Clone)]
pub(crate) struct HttpError {
    pub(crate) kind: HttpErrorKind,
    pub(crate) status: Option<u16>,
    /// What [`classify`] made of the status, when the server answered one.
    pub(crate) class: Option<Class>,
    pub(crate) message: String,
}

impl HttpError {
    /// A temporary failure given up on: a status the server kept answering, or none reached.
    fn given_up(status: Option<u16>, message: String) -> Self {
        Self {
            kind: if status.is_some() {
                HttpErrorKind::Temporary
            } else {
                HttpErrorKind::Unreachable
            },
            status,
            class: status.map(|_| Class::Temporary),
            message,
        }
    }
}

/// The settings a failure message points at, named as the configuration names them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hints {
    /// The setting naming the API key's environment variable (401/403).
    pub(crate) api_key: &'static str,
    /// What to check when the server answers 404.
    pub(crate) not_found: &'static str,
    /// The setting that makes requests smaller (413).
    pub(crate) batch: &'static str,
    /// The setting that shortens each input (an input over the model's token limit).
    pub(crate) input: &'static str,
}

/// One failed attempt, before it is known whether it is retried.
enum Failure {
    /// Temporary: not connected, timed out, 408, 429 or 5xx. `wait` is the server's
    /// `Retry-After`, when it gave one.
    Temporary {
        message: String,
        status: Option<u16>,
        wait: Option<Duration>,
    },
    /// Retrying cannot help.
    Permanent(HttpError),
}

#[derive(Clone)]
pub(crate) struct Client {
    agent: ureq::Agent,
    timeout: Duration,
    api_key: Option<String>,
    policy: RetryPolicy,
    hints: Hints,
}

/// Never shows the API key.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(crate) fn new(
        timeout: Duration,
        api_key: Option<String>,
        policy: RetryPolicy,
        hints: Hints,
    ) -> Self {
        // Connecting gets a fifth of the deadline, at most 5 s: a host that does not answer is
        // reported quickly, not after every retry's full timeout.
        let connect = (timeout / 5).min(Duration::from_secs(5));
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(connect)
            .timeout(timeout)
            .build();
        Self {
            agent,
            timeout,
            api_key,
            policy,
            hints,
        }
    }

    /// GETs `url` once (no retries): for discovery, where a failure only means "unknown".
    pub(crate) fn get_once(&self, url: &str) -> Result<Value, String> {
        let mut call = self.agent.get(url);
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let response = call.call().map_err(|e| e.to_string())?;
        response.into_json().map_err(|e| e.to_string())
    }

    /// POSTs `body` to `url`, retrying temporary failures.
    pub(crate) fn post(&self, url: &str, body: &Value) -> Result<Value, HttpError> {
        let mut attempt = 0u32;
        loop {
            match self.attempt(url, body) {
                Ok(value) => return Ok(value),
                Err(Failure::Permanent(e)) => return Err(e),
                Err(Failure::Temporary {
                    message,
                    status,
                    wait,
                }) => {
                    if attempt >= self.policy.retries {
                        let tries = attempt + 1;
                        let message = format!(
                            "{message} (after {tries} attempt{})",
                            if tries == 1 { "" } else { "s" }
                        );
                        return Err(HttpError::given_up(status, message));
                    }
                    let backoff = self.policy.backoff.saturating_mul(1u32 << attempt.min(16));
                    std::thread::sleep(wait.unwrap_or(backoff).min(MAX_RETRY_WAIT));
                    attempt += 1;
                }
            }
        }
    }

    fn attempt(&self, url: &str, body: &Value) -> Result<Value, Failure> {
        let response = self.send(url, body, None)?;
        response.into_json::<Value>().map_err(|e| {
            if is_cut_off(&e) {
                Failure::Temporary {
                    message: format!("{url}: reading the reply failed: {e}"),
                    status: None,
                    wait: None,
                }
            } else {
                Failure::Permanent(HttpError {
                    kind: HttpErrorKind::Permanent,
                    status: None,
                    class: None,
                    message: format!("{url} sent a reply that is not JSON: {e}"),
                })
            }
        })
    }

    /// POSTs `body` to `url` once, within `deadline` when there is one (failing at once when
    /// no time is left), and returns a successful reply unread (a stream is read as it comes).
    /// A failure is classified by [`classify`], the one rule every endpoint of this crate
    /// follows; the caller decides whether to retry (chat requests are not retried: the
    /// answerer's generator chain falls back instead).
    pub(crate) fn post_once(
        &self,
        url: &str,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<ureq::Response, HttpError> {
        self.send(url, body, deadline).map_err(|f| match f {
            Failure::Permanent(e) => e,
            Failure::Temporary {
                message, status, ..
            } => HttpError::given_up(status, message),
        })
    }

    fn send(
        &self,
        url: &str,
        body: &Value,
        deadline: Option<Instant>,
    ) -> Result<ureq::Response, Failure> {
        let mut call = self.agent.post(url).set("Content-Type", "application/json");
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::Temporary {
                    message: format!("{url}: no time left before the deadline"),
                    status: None,
                    wait: None,
                });
            }
            call = call.timeout(left.min(self.timeout));
        }
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        match call.send_json(body) {
            Ok(response) => Ok(response),
            Err(ureq::Error::Status(code, response)) => {
                let wait = response.header("Retry-After").and_then(retry_after);
                let detail: String = response
                    .into_string()
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect();
                let message = format!("{url} answered HTTP {code}: {}", detail.trim());
                Err(match classify(code, &detail) {
                    Class::Temporary => Failure::Temporary {
                        message,
                        status: Some(code),
                        wait,
                    },
                    class => Failure::Permanent(HttpError {
                        kind: class.kind(),
                        status: Some(code),
                        class: Some(class),
                        message: self.hints.explain(class, message),
                    }),
                })
            }
            Err(ureq::Error::Transport(t)) => match t.kind() {
                ureq::ErrorKind::InvalidUrl
                | ureq::ErrorKind::UnknownScheme
                | ureq::ErrorKind::InsecureRequestHttpsOnly
                | ureq::ErrorKind::InvalidProxyUrl => Err(Failure::Permanent(HttpError {
                    kind: HttpErrorKind::Unreachable,
                    status: None,
                    class: None,
                    message: format!("{url} cannot be requested: {t}"),
                })),
                // ureq's message names the URL already.
                _ => Err(Failure::Temporary {
                    message: t.to_string(),
                    status: None,
                    wait: None,
                }),
            },
        }
    }
}

/// Whether reading a reply failed because the connection was cut or timed out (worth another
/// attempt), rather than because the reply is not what was expected.
pub(crate) fn is_cut_off(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::UnexpectedEof
    )
}

/// What an error status says about the request, by the one rule of this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// 408, 429, 500, 502–599: asking again later may succeed.
    Temporary,
    /// An input over the model's token limit (400/413/422/500 saying so).
    TooLong,
    /// 413: the request as a whole is too large.
    TooLarge,
    /// 401, 403: the key is missing or wrong.
    Unauthorised,
    /// 404: no such endpoint or model.
    NotFound,
    /// 405, 501: the server does not offer this endpoint; asking again cannot help.
    NotImplemented,
    /// Any other status (400, 422, other 4xx): the request was refused as malformed.
    Refused,
}

impl Class {
    fn kind(self) -> HttpErrorKind {
        match self {
            Class::Temporary => HttpErrorKind::Temporary,
            Class::TooLong | Class::TooLarge | Class::Refused => HttpErrorKind::Refused,
            Class::Unauthorised | Class::NotFound | Class::NotImplemented => {
                HttpErrorKind::Permanent
            }
        }
    }
}

/// The one rule for an error status `code` with the start of its body `detail`.
pub(crate) fn classify(code: u16, detail: &str) -> Class {
    match code {
        // llama-server answers an input over its batch size with a 500; asking again cannot
        // help.
        400 | 413 | 422 | 500 if too_long(detail) => Class::TooLong,
        408 | 429 | 500 | 502..=599 => Class::Temporary,
        401 | 403 => Class::Unauthorised,
        404 => Class::NotFound,
        // Not implemented (llama-server without --reranking): asking again won't help.
        405 | 501 => Class::NotImplemented,
        413 => Class::TooLarge,
        _ => Class::Refused,
    }
}

impl Hints {
    /// `message` with the setting to change, when the class has one.
    fn explain(&self, class: Class, message: String) -> String {
        match class {
            Class::TooLong => format!(
                "{message} (an input is longer than the server's model takes: lower {})",
                self.input
            ),
            Class::Unauthorised => format!(
                "{message} (check the API key: the variable named by {})",
                self.api_key
            ),
            Class::NotFound => format!("{message} ({})", self.not_found),
            Class::TooLarge => {
                format!("{message} (the request is too large: lower {})", self.batch)
            }
            Class::Temporary | Class::NotImplemented | Class::Refused => message,
        }
    }
}

/// Whether an error body says an input exceeds the model's token limit (llama-server: "input
/// (N tokens) is too large to process", vLLM and TEI: "… is too long", "exceeds … context").
fn too_long(detail: &str) -> bool {
    let d = detail.to_lowercase();
    (d.contains("too large") || d.contains("too long") || d.contains("exceed"))
        && (d.contains("token") || d.contains("input") || d.contains("context"))
}

/// A `Retry-After` value in whole seconds (the HTTP-date form is not honoured: backoff applies).
fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_says_which_statuses_are_temporary() {
        for code in [408, 429, 500, 502, 503, 504, 599] {
            assert_eq!(classify(code, "busy"), Class::Temporary, "{code}");
        }
        // Not implemented is permanent for every endpoint, chat included (it was temporary
        // for chat requests while they had a client of their own).
        assert_eq!(classify(501, ""), Class::NotImplemented);
        assert_eq!(classify(405, ""), Class::NotImplemented);
        assert_eq!(
            classify(500, "input (530 tokens) is too large to process"),
            Class::TooLong
        );
        assert_eq!(classify(401, ""), Class::Unauthorised);
        assert_eq!(classify(404, ""), Class::NotFound);
        assert_eq!(classify(413, ""), Class::TooLarge);
        assert_eq!(classify(422, ""), Class::Refused);
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        assert_eq!(retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn token_limit_replies_are_recognised() {
        assert!(too_long(
            r#"{"error":{"code":500,"message":"input (530 tokens) is too large to process. increase the physical batch size (current batch size: 512)","type":"server_error"}}"#
        ));
        assert!(too_long(
            "Input validation error: `inputs` must have less than 512 tokens. Given: 600 (too long)"
        ));
        assert!(too_long(
            "This model's maximum context length is 512 tokens; the request exceeds it"
        ));
        assert!(!too_long("model is loading"));
        assert!(!too_long("internal error: out of memory"));
    }
}
