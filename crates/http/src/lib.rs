//! `zhiku serve`: the knowledge base over HTTP (axum), with the web page at `/` and the MCP
//! server at `/mcp`.
//!
//! Every route but `/healthz` first checks the `Host` header (DNS rebinding,
//! [`ServeSettings::host_allowed`]); every `/v1` route and `/mcp` then pass the bearer-token
//! check ([`settings::Tokens`]); the caller it yields is the only source of scopes. Use cases
//! run on the blocking pool (the ports are synchronous), at most `max_concurrent` at once (503
//! beyond), each within `timeout_ms` (504 beyond), whatever the transport
//! ([`admission::Gate`]). Bodies are capped at `max_body_bytes` (413) and must arrive within
//! `body_timeout_ms` (408); connections are bounded by [`conn`].

pub mod admission;
pub mod api;
pub mod compat;
pub mod conn;
mod error;
pub mod logging;
pub mod metrics;
pub mod settings;
mod state;

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use zhiku_domain::ports::{TraceEvent, TraceSink};

use zhiku_service::error::Missing;
use zhiku_service::new_trace_id;
use zhiku_service::{Caller, DocumentView, KbError, SearchResult, Status, SweepReport};

use self::api::{
    AskRequest, BatchRequest, DocumentRequest, MAX_BATCH_DOCUMENTS, Page, SearchRequest,
};
use self::settings::Denied;

pub use self::error::ApiError;
use self::error::ApiResult;
pub use self::state::AppState;
use self::state::{admit, proceed, run};

/// The OpenAPI document of this API.
pub const OPENAPI: &str = include_str!("openapi.json");
const PAGE: &str = include_str!("page.html");

/// Refuses a request whose `Host` does not name this server (DNS rebinding).
async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next().and_then(|v| v.to_str().ok());
    // One Host header (RFC 9112 §3.2: more is a bad request), and an absolute-form request
    // target names the host the request is for: both must be this server.
    let one_host = hosts.next().is_none();
    let target_allowed = request
        .uri()
        .authority()
        .is_none_or(|a| state.limits.host_allowed(Some(a.as_str())));
    if one_host && target_allowed && state.limits.host_allowed(host) {
        return next.run(request).await;
    }
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "the Host header does not name this server; add the name to [serve] allowed_hosts",
    )
    .into_response()
}

/// Reads the whole body within `body_timeout_ms` (408 beyond) and `max_body_bytes` (413
/// beyond), so a slow body never holds a worker or a connection for longer.
async fn read_body(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let limit = state.limits.max_body_bytes;
    let collect = async {
        let mut stream = body.into_data_stream();
        let mut buf = Vec::new();
        while let Some(chunk) = tokio_stream::StreamExt::next(&mut stream).await {
            let chunk = chunk.map_err(|e| {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e.to_string())
            })?;
            if buf.len() + chunk.len() > limit {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!("the request body is larger than {limit} bytes"),
                ));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok::<_, ApiError>(buf)
    };
    let deadline = Duration::from_millis(state.limits.body_timeout_ms);
    match tokio::time::timeout(deadline, collect).await {
        Ok(Ok(buf)) => next.run(Request::from_parts(parts, Body::from(buf))).await,
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!(
                "the request body did not arrive within {} ms",
                state.limits.body_timeout_ms
            ),
        )
        .into_response(),
    }
}

/// Admits the request by its bearer token and attaches the [`Caller`]: a configured token at
/// once, a person's JWT after the identity provider's keys verify it (on the blocking pool: it
/// may fetch them).
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match admit(&state, request.headers()).await {
        Ok(caller) => proceed(caller, request, next).await,
        Err(denied) => denial(denied).into_response(),
    }
}

/// The answer to a request that was not admitted.
fn denial(denied: Denied) -> Response {
    let (status, code, message) = match denied {
        Denied::Missing => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a bearer token is required (Authorization: Bearer …)".to_string(),
        ),
        Denied::Unknown => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the bearer token is not recognised".to_string(),
        ),
        Denied::Refused(reason) => {
            tracing::info!(target: "zhiku::access", reason, "identity token refused");
            (
                StatusCode::UNAUTHORIZED,
                "invalid_token",
                format!("the identity token is refused: {reason}; sign in again"),
            )
        }
        Denied::ProviderUnavailable(message) => {
            tracing::warn!(target: "zhiku::access", message, "identity provider unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the identity provider cannot be reached to verify the token; retry shortly"
                    .to_string(),
            )
        }
    };
    let mut response = ApiError::new(status, code, message).into_response();
    if status == StatusCode::UNAUTHORIZED {
        let challenge = if code == "invalid_token" {
            "Bearer error=\"invalid_token\""
        } else {
            "Bearer"
        };
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    response
}

/// The whole application: API, page, OpenAPI document and (when given) the MCP service.
pub fn router(state: AppState, mcp: Option<Router<AppState>>) -> Router {
    let mut protected = Router::new()
        .route("/v1/search", post(search))
        .route("/v1/ask", post(ask))
        .route("/v1/documents", post(put_document).get(list_documents))
        .route("/v1/knowledge", post(add_knowledge))
        .route("/v1/documents:batch", post(put_documents))
        .route(
            "/v1/documents/{*id}",
            get(get_document)
                .delete(delete_document)
                .layer(middleware::from_fn(section_methods)),
        )
        .route("/v1/originals/{*id}", get(get_original))
        .route("/v1/status", get(status))
        .route("/v1/admin/sweep", post(sweep))
        .route("/v1/traces/{id}", get(trace))
        .route("/v1/models", get(compat::models))
        .route("/v1/chat/completions", post(compat::chat_completions));
    if let Some(mcp) = mcp {
        protected = protected.merge(mcp);
    }
    // Layers run outside in: the token check before any body is read.
    let protected = protected
        .layer(middleware::from_fn_with_state(state.clone(), read_body))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate));
    // Dify's external-knowledge API answers refusals in Dify's own error format.
    let dify = Router::new()
        .route("/v1/dify/retrieval", post(compat::dify_retrieval))
        .layer(middleware::from_fn_with_state(state.clone(), read_body))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            compat::dify_authenticate,
        ));
    let protected = protected.merge(dify);
    // Health stays outside the Host check: it tells nothing, and probes (load balancers,
    // orchestrators) address the server by whatever name or address they were given.
    Router::new()
        .route("/", get(page))
        .route("/v1/auth/config", get(sign_in_config))
        .route("/v1/openapi.json", get(openapi))
        .route("/metrics", get(scrape_metrics))
        .merge(protected)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), check_host))
        .route("/healthz", get(healthz))
        .layer(DefaultBodyLimit::max(state.limits.max_body_bytes))
        // Outermost: request ID, log line and request metrics for every response.
        .layer(middleware::from_fn(logging::access))
        .with_state(state)
}

/// `GET /metrics`, behind its own guard ([`metrics::Guard`]).
async fn scrape_metrics(State(state): State<AppState>, request: Request) -> Response {
    metrics::scrape(&state.metrics_guard, state.kb.clone(), request).await
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

async fn page(State(state): State<AppState>) -> impl IntoResponse {
    // The page exchanges the sign-in code at the provider's token endpoint: that origin, and
    // no other, is added to where it may connect.
    let provider = match sign_in(&state).await {
        Ok(Some((b, _, _))) => origin(&b.token_endpoint),
        _ => None,
    };
    let csp = format!(
        "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' blob:; connect-src 'self'{}",
        provider.map(|o| format!(" {o}")).unwrap_or_default()
    );
    (
        [(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_str(&csp).unwrap_or(HeaderValue::from_static("default-src 'self'")),
        )],
        Html(PAGE),
    )
}

/// The provider's sign-in endpoints with the page's client ID and scope, when the page signs
/// people in; `Err` when the provider cannot be asked now.
async fn sign_in(
    state: &AppState,
) -> Result<Option<(zhiku_domain::ports::BrowserSignIn, String, String)>, String> {
    let Some(people) = state.tokens.people() else {
        return Ok(None);
    };
    let Some((client_id, scope)) = people.sign_in.clone() else {
        return Ok(None);
    };
    let verifier = people.verifier().clone();
    match tokio::task::spawn_blocking(move || verifier.browser_sign_in()).await {
        Ok(Ok(found)) => Ok(found.map(|b| (b, client_id, scope))),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// `scheme://host[:port]` of an http(s) URL.
fn origin(url: &str) -> Option<String> {
    let uri: axum::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str().filter(|s| *s == "https" || *s == "http")?;
    let authority = uri.authority()?;
    // Only what a CSP source may hold: no quotes, spaces or semicolons can come through.
    Some(format!("{scheme}://{authority}")).filter(|o| {
        o.chars()
            .all(|c| c.is_ascii_graphic() && !"';,".contains(c))
    })
}

/// `GET /v1/auth/config`: how the page signs a person in at the identity provider
/// (authorization code + PKCE, a public client); 404 when it does not.
async fn sign_in_config(State(state): State<AppState>) -> Response {
    match sign_in(&state).await {
        Ok(Some((b, client_id, scope))) => Json(json!({
            "authorization_endpoint": b.authorization_endpoint,
            "token_endpoint": b.token_endpoint,
            "end_session_endpoint": b.end_session_endpoint,
            "client_id": client_id,
            "scope": scope,
        }))
        .into_response(),
        Ok(None) => ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server has no sign-in ([serve.oidc] with client_id)",
        )
        .into_response(),
        Err(e) => {
            tracing::warn!(target: "zhiku::access", error = %e, "identity provider unavailable for sign-in");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the identity provider cannot be reached; retry shortly",
            )
            .into_response()
        }
    }
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<SearchRequest>, JsonRejection>,
) -> ApiResult<Json<SearchResult>> {
    let Json(r) = body?;
    let q = api::query(&r.query, "query", r.k, r.mode, &r.filter, &state.limits)?;
    let kb = state.kb.clone();
    let result = run(&state, move || kb.search(&caller, &q)).await?;
    Ok(Json(result))
}

/// Forwards trace events to a stream as they happen.
struct ChannelSink(mpsc::UnboundedSender<Event>);

impl TraceSink for ChannelSink {
    fn record(&self, event: TraceEvent) {
        if let Ok(e) = Event::default().event("stage").json_data(&event) {
            // A client that went away no longer listens; the run goes on regardless.
            let _ = self.0.send(e);
        }
    }
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}

async fn ask(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Json<AskRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let Json(r) = body?;
    let history = api::history(&r)?;
    let mut q = api::query(
        &r.question,
        "question",
        r.k,
        r.mode,
        &r.filter,
        &state.limits,
    )?;
    q.request_id = logging::request_id(&headers);
    let trace_id = new_trace_id();
    let kb = state.kb.clone();
    if !(r.stream || wants_stream(&headers)) {
        let frame = run(&state, move || {
            kb.converse(&caller, &q, &history, &trace_id, None)
        })
        .await?;
        return Ok(Json(frame).into_response());
    }
    // The worker is taken before the stream starts: overload is a 503 like the JSON path.
    let permit = state.gate.admit()?;
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let sink_tx = tx.clone();
    if let Ok(first) = Event::default()
        .event("trace")
        .json_data(json!({"trace_id": trace_id}))
    {
        let _ = tx.send(first);
    }
    let gate = state.gate.clone();
    tokio::spawn(async move {
        let result = gate
            .run_admitted(permit, move || {
                let sink = ChannelSink(sink_tx);
                kb.converse(&caller, &q, &history, &trace_id, Some(&sink))
            })
            .await
            .map_err(ApiError::from);
        let event = match result {
            Ok(frame) => Event::default().event("answer").json_data(&frame),
            Err(e) => Event::default()
                .event("error")
                .json_data(json!({"error": {"code": e.code, "message": e.message}})),
        };
        if let Ok(event) = event {
            let _ = tx.send(event);
        }
    });
    let stream =
        tokio_stream::StreamExt::map(UnboundedReceiverStream::new(rx), Ok::<_, Infallible>);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn put_document(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<DocumentRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let Json(r) = body?;
    let kb = state.kb.clone();
    let done = run(&state, move || kb.put_document(&caller, r.into()))
        .await
        .inspect_err(|e| metrics::ingest_result(e.status, None))?;
    metrics::ingest_result(StatusCode::OK, Some(&done.report));
    let status = if done.report.docs_added > 0 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(done)).into_response())
}

async fn add_knowledge(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<api::KnowledgeRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let Json(r) = body?;
    let kb = state.kb.clone();
    let outcome = run(&state, move || kb.add_knowledge(&caller, r.into())).await?;
    Ok(Json(outcome).into_response())
}

async fn put_documents(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<BatchRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let Json(r) = body?;
    if r.documents.is_empty() || r.documents.len() > MAX_BATCH_DOCUMENTS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("a batch holds 1 to {MAX_BATCH_DOCUMENTS} documents"),
        ));
    }
    let kb = state.kb.clone();
    let news = r.documents.into_iter().map(Into::into).collect();
    let (documents, report) = run(&state, move || kb.put_documents(&caller, news))
        .await
        .inspect_err(|e| metrics::ingest_result(e.status, None))?;
    metrics::ingest_result(StatusCode::OK, Some(&report));
    Ok(Json(serde_json::json!({ "documents": documents, "report": report })).into_response())
}

async fn list_documents(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    page: Result<Query<Page>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let Query(page) = page?;
    let limit = page.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) || page.offset > u32::MAX as usize {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "limit must be between 1 and 1000 and offset at most 4294967295",
        ));
    }
    let kb = state.kb.clone();
    let (docs, total) = run(&state, move || {
        Ok(kb.documents(&caller, page.offset, limit))
    })
    .await?;
    Ok(Json(
        json!({"documents": docs, "total": total, "offset": page.offset, "limit": limit}),
    ))
}

/// `GET /v1/documents/{id}` (a document with its chunks) and
/// `GET /v1/documents/{id}/sections/{section}` (a section with its subsections, in reading
/// order). A document ID may hold `/`, so both share one wildcard route: a path ending in
/// `/sections/` and a section ID (16 lower-case hex digits) is a section read.
async fn get_document(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let kb = state.kb.clone();
    if let Some((doc, section)) = section_path(&id) {
        let (doc, section) = (doc.to_string(), section.to_string());
        let read = run(&state, move || {
            kb.read_document(&caller, &doc, Some(&section))
        })
        .await?;
        return Ok(Json(read).into_response());
    }
    let doc = run(&state, move || kb.document(&caller, &id)).await?;
    Ok(Json::<DocumentView>(doc).into_response())
}

/// A section is read, never deleted: any other method than `GET`/`HEAD` on a section path is
/// 405 with `Allow: GET,HEAD` (the shared wildcard route would otherwise advertise `DELETE`).
async fn section_methods(request: Request, next: Next) -> Response {
    let is_section = request
        .uri()
        .path()
        .strip_prefix("/v1/documents/")
        .and_then(section_path)
        .is_some();
    let readable = matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    );
    if is_section && !readable {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, HeaderValue::from_static("GET,HEAD"))],
        )
            .into_response();
    }
    next.run(request).await
}

/// `{id}/sections/{section}` split into the document ID and the section, when the tail has the
/// shape of a section ID.
fn section_path(path: &str) -> Option<(&str, &str)> {
    let (doc, section) = path.rsplit_once("/sections/")?;
    let hex = section.len() == 16
        && section
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !doc.is_empty()).then_some((doc, section))
}

/// The query of `GET /v1/originals/{id}/pages/{n}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// Clockwise quarter turns (0–3), as a citation's box says.
    #[serde(default)]
    turn: u16,
}

/// `{doc}/pages/{n}`: the document and page a page-picture path names.
fn page_path(id: &str) -> Option<(&str, u32)> {
    let (doc, page) = id.rsplit_once("/pages/")?;
    let page = (!page.is_empty() && page.bytes().all(|b| b.is_ascii_digit()))
        .then(|| page.parse().ok())
        .flatten()?;
    (!doc.is_empty()).then_some((doc, page))
}

/// What `GET /v1/originals/…` serves: a page's picture, or the file.
enum Original {
    Page(Vec<u8>),
    File(Vec<u8>, String),
}

/// `GET /v1/originals/{id}`: the file a document was read from, for a caller who may see it.
/// A PDF is served inline (the page opens it at a cited page); any other file only as a
/// download, and nothing of it runs or renders in this origin (`nosniff`, a sandboxing CSP).
///
/// `GET /v1/originals/{id}/pages/{n}?turn=T`: the picture of page `n` (a picture file's page,
/// a scanned PDF page, a PDF page with a text layer as PDFium draws it), turned `T` clockwise quarter turns as the citation's boxes say, as PNG
/// (at most 1,600 pixels a side). A document whose own ID ends in `/pages/{n}` is served as a
/// file.
async fn get_original(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> ApiResult<Response> {
    let kb = state.kb.clone();
    let turn = query.map(|Query(q)| q.turn).unwrap_or_default();
    let served = run(&state, move || {
        let file = kb.original(&caller, &id);
        match (file, page_path(&id)) {
            // Not a document of its own: a page of the document before `/pages/`.
            (Err(KbError::NotFound(Missing::Document { .. })), Some((doc, page))) => {
                kb.page_png(&caller, doc, page, turn).map(Original::Page)
            }
            (file, _) => file.map(|(bytes, rel)| Original::File(bytes, rel)),
        }
    })
    .await?;
    let (bytes, rel) = match served {
        Original::Page(png) => {
            return Ok((
                [
                    (header::CONTENT_TYPE, "image/png"),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                    (header::CACHE_CONTROL, "private, max-age=300"),
                ],
                png,
            )
                .into_response());
        }
        Original::File(bytes, rel) => (bytes, rel),
    };
    let name = rel.rsplit('/').next().unwrap_or("document").to_string();
    let is_pdf = bytes.starts_with(b"%PDF-");
    let (kind, disposition) = if is_pdf {
        ("application/pdf", "inline")
    } else {
        ("application/octet-stream", "attachment")
    };
    // RFC 6266/8187: an ASCII fallback name and the UTF-8 one, percent-encoded.
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b".-_~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut response = (
        [
            (header::CONTENT_TYPE, kind.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("{disposition}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        bytes,
    )
        .into_response();
    // A download never renders here; a PDF must not be sandboxed, or browsers refuse to show it
    // (their PDF viewers run no script of this origin).
    if !is_pdf {
        response.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox"),
        );
    }
    Ok(response)
}

async fn delete_document(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let kb = state.kb.clone();
    let doc_id = id.clone();
    let report = run(&state, move || kb.delete_document(&caller, &id)).await?;
    Ok(Json(json!({"doc_id": doc_id, "report": report})))
}

/// `POST /v1/admin/sweep`: the retention sweep over the caller's scopes now (a writing token).
async fn sweep(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<SweepReport>> {
    let kb = state.kb.clone();
    Ok(Json(run(&state, move || kb.sweep(&caller)).await?))
}

async fn status(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<Status>> {
    let kb = state.kb.clone();
    let status = run(&state, move || Ok(kb.status(&caller))).await?;
    Ok(Json(status))
}

async fn trace(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let kb = state.kb.clone();
    let trace_id = id.clone();
    let events = run(&state, move || kb.trace(&caller, &id)).await?;
    Ok(Json(json!({"trace_id": trace_id, "events": events})))
}
