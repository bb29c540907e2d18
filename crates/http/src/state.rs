//! What every handler shares, and the steps every route takes: admission of the caller, then
//! its work on the blocking pool within the gate.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use zhiku_service::{Caller, KbError, SharedKb};

use crate::admission::Gate;
use crate::error::ApiResult;
use crate::logging;
use crate::metrics;
use crate::settings::{Admission, Denied, ServeSettings, Tokens};

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub(crate) kb: SharedKb,
    pub(crate) tokens: Arc<Tokens>,
    pub(crate) limits: Arc<ServeSettings>,
    pub(crate) gate: Gate,
    pub(crate) metrics_guard: Arc<metrics::Guard>,
}

impl AppState {
    /// State over `kb` with these settings and tokens.
    pub fn new(kb: SharedKb, limits: ServeSettings, tokens: Tokens) -> Self {
        // A metrics token that cannot be read closes `/metrics` (`zhiku serve` refuses to start).
        let metrics_guard =
            metrics::Guard::from_settings(&limits).unwrap_or(metrics::Guard::Closed);
        Self {
            kb,
            gate: Gate::new(limits.max_concurrent, limits.timeout_ms),
            metrics_guard: Arc::new(metrics_guard),
            tokens: Arc::new(tokens),
            limits: Arc::new(limits),
        }
    }

    /// The workers every transport takes its work's worker from (MCP included).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }
}

/// Runs a use case on the blocking pool within the concurrency and time limits.
pub(crate) async fn run<T, F>(state: &AppState, work: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, KbError> + Send + 'static,
{
    Ok(state.gate.run(work).await?)
}

/// The caller a request's `Authorization` header makes: a configured token at once, a
/// person's JWT once the identity provider's keys verify it (on the blocking pool).
pub(crate) async fn admit(state: &AppState, headers: &HeaderMap) -> Result<Caller, Denied> {
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match state.tokens.admission(authorization)? {
        Admission::Caller(caller) => Ok(caller),
        Admission::Person(people, token) => {
            match tokio::task::spawn_blocking(move || people.admit(&token)).await {
                Ok(result) => result,
                Err(_) => Err(Denied::ProviderUnavailable(
                    "the verification failed".into(),
                )),
            }
        }
    }
}

/// Runs the rest of an admitted request as `caller`, naming the caller in its log line.
pub(crate) async fn proceed(caller: Caller, mut request: Request, next: Next) -> Response {
    let name = logging::CallerName(caller.name.clone());
    request.extensions_mut().insert(caller);
    let mut response = next.run(request).await;
    response.extensions_mut().insert(name);
    response
}
