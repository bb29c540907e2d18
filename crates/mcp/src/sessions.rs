//! Bounds on the MCP sessions of `/mcp`: how many are open at once in all and per caller, and
//! how long an idle one lives.
//!
//! rmcp's session manager keeps every session it creates (a worker task and its buffers, about
//! 50 KiB) until the client closes it or it idles out, and has no limit of its own: a read-only
//! token opened 3,000 sessions in 2 s (+163 MiB). Its `create_session` does not see the request,
//! so the bound is a layer in front of the service: a request that opens a session (a `POST`
//! without `Mcp-Session-Id`) takes a slot of its caller (the token's name, or the anonymous
//! caller) before rmcp sees it, or is refused at once — `429 Too Many Requests` when the caller
//! holds [`SessionLimits::per_caller`] already, `503 Service Unavailable` when the server holds
//! [`SessionLimits::total`] — both with `Retry-After` and the server's error shape. The slot
//! becomes the session rmcp answers with (its `Mcp-Session-Id`), or is given back when none was
//! made. A session closed by the client (`DELETE`) frees its slot at once; one that idled out
//! (or ended otherwise) is found gone from the session manager when a slot is next wanted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use zhiku_service::Caller;

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How many MCP sessions may be open at once, and how long an idle one lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// In all.
    pub total: usize,
    /// Per caller (a token's name; every anonymous caller together).
    pub per_caller: usize,
    /// A session with no request for this long is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    /// 256 in all, 16 per caller, 5 minutes idle (rmcp's own idle time).
    fn default() -> Self {
        Self {
            total: 256,
            per_caller: 16,
            idle: Duration::from_secs(300),
        }
    }
}

/// Who holds which session, and the slots taken by sessions being opened.
#[derive(Debug, Default)]
struct Held {
    /// Open sessions (by ID) and their caller.
    owners: HashMap<String, String>,
    /// Sessions being opened, per caller.
    opening: HashMap<String, usize>,
}

impl Held {
    fn of(&self, caller: &str) -> usize {
        self.owners.values().filter(|c| *c == caller).count()
            + self.opening.get(caller).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.owners.len() + self.opening.values().sum::<usize>()
    }

    fn release(&mut self, caller: &str) {
        if let Some(n) = self.opening.get_mut(caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.opening.remove(caller);
            }
        }
    }
}

/// The session bound of one `/mcp` service.
#[derive(Debug)]
pub(crate) struct Sessions {
    limits: SessionLimits,
    manager: Arc<LocalSessionManager>,
    held: Mutex<Held>,
}

/// Why a session was not opened.
enum Full {
    Caller,
    Server,
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits, manager: Arc<LocalSessionManager>) -> Self {
        Self {
            limits,
            manager,
            held: Mutex::new(Held::default()),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(&self, held: &Held, caller: &str) -> Result<(), Full> {
        if held.of(caller) >= self.limits.per_caller {
            Err(Full::Caller)
        } else if held.total() >= self.limits.total {
            Err(Full::Server)
        } else {
            Ok(())
        }
    }

    /// Takes a slot for a session `caller` opens, forgetting first the sessions that ended
    /// (idled out) when the bound would refuse it.
    async fn take(&self, caller: &str) -> Result<(), Full> {
        if self.check(&self.held(), caller).is_err() {
            let live: HashSet<String> = self
                .manager
                .sessions
                .read()
                .await
                .keys()
                .map(|id| id.to_string())
                .collect();
            self.held().owners.retain(|id, _| live.contains(id));
        }
        let mut held = self.held();
        self.check(&held, caller)?;
        *held.opening.entry(caller.to_string()).or_default() += 1;
        Ok(())
    }

    /// The slot `caller` took becomes session `id`, or is given back when none was opened.
    fn settle(&self, caller: &str, id: Option<String>) {
        let mut held = self.held();
        held.release(caller);
        if let Some(id) = id {
            held.owners.insert(id, caller.to_string());
        }
    }

    fn forget(&self, id: &str) {
        self.held().owners.remove(id);
    }

    fn refusal(&self, full: Full, caller: &str) -> Response {
        let (status, code, message) = match full {
            Full::Caller => (
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sessions",
                format!(
                    "{caller} holds {} MCP sessions already (serve.mcp_max_sessions_per_token); close one (DELETE /mcp with its Mcp-Session-Id) or let one idle out, then retry",
                    self.limits.per_caller
                ),
            ),
            Full::Server => (
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_sessions",
                format!(
                    "the server holds {} MCP sessions already (serve.mcp_max_sessions); retry shortly",
                    self.limits.total
                ),
            ),
        };
        let mut response = (
            status,
            axum::Json(json!({"error": {"code": code, "message": message}})),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("10"));
        response
    }
}

/// The layer in front of rmcp's service (see the module docs).
pub(crate) async fn bound(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match (request.method().clone(), session) {
        (Method::POST, None) => {
            let caller = request
                .extensions()
                .get::<Caller>()
                .map_or_else(String::new, |c| c.name.clone());
            if let Err(full) = sessions.take(&caller).await {
                return sessions.refusal(full, &caller);
            }
            let response = next.run(request).await;
            let opened = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            sessions.settle(&caller, opened);
            response
        }
        (Method::DELETE, Some(id)) => {
            let response = next.run(request).await;
            if response.status().is_success() {
                sessions.forget(&id);
            }
            response
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_caller_and_in_all_and_given_back() {
        let limits = SessionLimits {
            total: 3,
            per_caller: 2,
            idle: Duration::from_secs(1),
        };
        let sessions = Sessions::new(limits, Arc::new(LocalSessionManager::default()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            // Opened but not yet answered: slots held.
            sessions.take("a").await.ok().unwrap();
            sessions.take("a").await.ok().unwrap();
            assert!(matches!(sessions.take("a").await, Err(Full::Caller)));
            sessions.take("b").await.ok().unwrap();
            assert!(matches!(sessions.take("c").await, Err(Full::Server)));
            // A request that opened nothing gives its slot back.
            sessions.settle("b", None);
            sessions.take("c").await.ok().unwrap();
            // Sessions the manager no longer has (idled out) are forgotten when a slot is
            // wanted.
            sessions.settle("a", Some("s1".into()));
            sessions.settle("a", Some("s2".into()));
            assert_eq!(sessions.held().owners.len(), 2);
            sessions.take("a").await.ok().unwrap();
            assert_eq!(
                sessions.held().owners.len(),
                0,
                "none is live in the manager"
            );
            // A session closed by its client frees its slot at once.
            sessions.settle("a", Some("s3".into()));
            sessions.forget("s3");
            assert_eq!(sessions.held().of("a"), 0);
        });
    }
}
