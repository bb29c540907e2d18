//! Structured logs of `zhiku serve` and the request ID.
//!
//! Every request gets an ID: a well-formed `X-Request-Id` of the client is kept, anything else
//! is replaced by a fresh random UUID. The ID is returned in the `X-Request-Id` header of every
//! response (errors included), is the `request_id` of the request's log line, and is recorded
//! in the `query` step of an answer's trace, so a log line, a client's report and a stored
//! trace can be joined.
//!
//! One line per request goes to stderr, as text or JSON (`--log-format`), through `tracing`:
//! `request_id`, `method`, `route` (the matched route template, never the raw path, which may
//! hold document IDs), `caller` (the token's configured name, never the token), `status` and
//! `latency_ms` (until the response head; a streamed answer goes on after it). A request whose
//! client went away before the response gets its line too, with status 499. The level comes
//! from `ZHIKU_LOG` or else `RUST_LOG` (default `info`).

use std::time::Instant;

use anyhow::{Context, Result};
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The request ID header.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client-given request ID that is kept.
pub const MAX_REQUEST_ID: usize = 128;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, its fields at the top level.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("{other:?} is not a log format: use text or json")),
        }
    }
}

/// Installs the process's log subscriber: `format` lines on stderr, filtered by `ZHIKU_LOG`
/// (or else `RUST_LOG`, default `info`).
pub fn init(format: LogFormat) -> Result<()> {
    let spec = ["ZHIKU_LOG", "RUST_LOG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "info".to_string());
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(&spec)
        .with_context(|| format!("the log filter {spec:?} (ZHIKU_LOG or RUST_LOG) is not valid"))?;
    use tracing_subscriber::layer::SubscriberExt;
    let registry = tracing_subscriber::registry().with(filter);
    let done = match format {
        LogFormat::Text => tracing::subscriber::set_global_default(
            registry.with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(false),
            ),
        ),
        LogFormat::Json => tracing::subscriber::set_global_default(
            registry.with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    done.context("a log subscriber is already installed")
}

/// A client's request ID when it is one to keep: 1 to [`MAX_REQUEST_ID`] characters of
/// `A-Z a-z 0-9 - _ . :`. Anything else (control characters, spaces, quotes, an overlong
/// value) could forge or break a log line, so it is replaced.
pub fn valid_request_id(value: &str) -> bool {
    (1..=MAX_REQUEST_ID).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// A fresh request ID: a random (v4) UUID.
pub fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The request ID of a request that passed [`access`] (which puts the kept or generated ID in
/// the request's own `X-Request-Id` header).
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid_request_id(v))
        .map(str::to_string)
}

/// Who the request was admitted as, set on the response by the authentication step so the log
/// line can name the caller: the token's configured name only.
#[derive(Debug, Clone)]
pub struct CallerName(pub String);

/// The method as a log field and metric label: the standard ones by name, any other `OTHER`
/// (a client must not be able to mint label values).
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The route as a log field and metric label: the matched template (`/v1/documents/{*id}`),
/// `/mcp` for everything under it, `unmatched` for the fallback.
pub fn route_label(matched: Option<&MatchedPath>) -> String {
    match matched.map(MatchedPath::as_str) {
        Some(p) if p == "/mcp" || p.starts_with("/mcp/") => "/mcp".to_string(),
        Some(p) => p.to_string(),
        None => "unmatched".to_string(),
    }
}

/// The outermost middleware: assigns the request ID, runs the request inside a span that
/// carries it, returns it in the response header, writes the request's log line and counts
/// the request in the metrics.
pub async fn access(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid_request_id(v))
        .map(str::to_string)
        .unwrap_or_else(new_request_id);
    let value = HeaderValue::from_str(&id).expect("request IDs are visible ASCII");
    request
        .headers_mut()
        .insert(X_REQUEST_ID.clone(), value.clone());
    let route = route_label(request.extensions().get::<MatchedPath>());
    let method = method_label(request.method());
    let span = tracing::info_span!("request", request_id = %id);
    let mut abandoned = Abandoned {
        id: id.clone(),
        method,
        route: route.clone(),
        started,
        armed: true,
    };
    let mut response = next.run(request).instrument(span).await;
    abandoned.armed = false;
    let elapsed = started.elapsed();
    response.headers_mut().insert(X_REQUEST_ID.clone(), value);
    let caller = response.extensions_mut().remove::<CallerName>();
    let status = response.status();
    crate::metrics::observe_request(&route, method, status, response.headers(), elapsed);
    tracing::info!(
        target: "zhiku::http",
        request_id = %id,
        method,
        route = %route,
        caller = caller.as_ref().map(|c| c.0.as_str()),
        status = status.as_u16(),
        latency_ms = (elapsed.as_secs_f64() * 1e6).round() / 1e3,
        "request"
    );
    response
}

/// The log line of a request whose client went away before its response was ready (the
/// server drops the request then, and [`access`] never reaches its own line): status 499, as
/// proxies write it. Work the request handed to a worker thread (a write) may still complete.
struct Abandoned {
    id: String,
    method: &'static str,
    route: String,
    started: Instant,
    armed: bool,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let elapsed = self.started.elapsed();
        tracing::info!(
            target: "zhiku::http",
            request_id = %self.id,
            method = self.method,
            route = %self.route,
            status = 499u16,
            latency_ms = (elapsed.as_secs_f64() * 1e6).round() / 1e3,
            "request abandoned by the client before its response; work it started may still complete"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_bounded_request_ids_are_kept() {
        for good in ["a", "0f8e-11:x_y.z", &"x".repeat(MAX_REQUEST_ID)] {
            assert!(valid_request_id(good), "{good}");
        }
        for bad in [
            "",
            "a b",
            "a\"b",
            "a\nb",
            "a\\b",
            "ü",
            "a=b",
            "{\"x\":1}",
            &"x".repeat(MAX_REQUEST_ID + 1),
        ] {
            assert!(!valid_request_id(bad), "{bad:?}");
        }
        let a = new_request_id();
        assert!(valid_request_id(&a));
        assert_ne!(a, new_request_id());
    }
}
