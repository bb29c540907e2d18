//! Prometheus metrics at `/metrics`, in the OpenMetrics text format.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `zhiku_http_requests_total` | counter | `route` (template), `method`, `status` (`2xx`…) |
//! | `zhiku_http_request_duration_seconds` | histogram | the same |
//! | `zhiku_ingests_total` | counter | `result`: `created`, `updated`, `unchanged`, `rejected`, `failed` |
//! | `zhiku_documents`, `zhiku_chunks` | gauge | `scope` (computed at scrape time) |
//! | `zhiku_backend_errors_total` | counter | `backend`: `embedder`, `generator`, `qdrant` or `vector_index` |
//! | `zhiku_admission_rejections_total` | counter | `reason`: `busy` (503), `timeout` (504) |
//! | `zhiku_source_syncs_total` | counter | `source`, `result`: `ok`, `failed` |
//! | `zhiku_source_items`, `zhiku_source_up`, `zhiku_source_last_success_timestamp_seconds` | gauge | `source` (at scrape time) |
//!
//! The per-scope gauges name every scope, so `/metrics` is for the operator only: it needs
//! its own bearer token (`[serve] metrics_token_sha256` or `metrics_token_env`) or, when none
//! is configured, a request from a loopback address that names a loopback host. The bearer
//! tokens of `/v1` do not open it, and no token or caller name is ever a label.
//!
//! Backend errors are counted at the ports: the embedder, the vector index and the generator a
//! knowledge base runs with are wrapped ([`count_backend_errors`]), so an error counts once
//! wherever it surfaces (a search's dense route, an ingest, an answer).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use zhiku_domain::ports::{
    EmbedError, EmbeddedChunk, Embedder, GenerateError, GenerationRequest, Generator,
    IndexCapabilities, IndexError, ScoredChunk, VectorIndex,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Embedding, EmbeddingSpace, Filter};
use zhiku_service::{SharedKb, SourceStatus};

use crate::error::ApiError;
use crate::settings::{ServeSettings, token_digest};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the latency histogram's buckets, in seconds: 1 ms to a minute (the
/// default request deadline).
const LATENCY_BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: String,
    method: String,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabel {
    backend: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceResultLabel {
    source: String,
    result: String,
}

type HistogramFamily = Family<HttpLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The process's metrics.
#[derive(Debug)]
struct Metrics {
    registry: Registry,
    requests: Family<HttpLabels, Counter>,
    latency: HistogramFamily,
    ingests: Family<ResultLabel, Counter>,
    backend_errors: Family<BackendLabel, Counter>,
    rejections: Family<ReasonLabel, Counter>,
    documents: Family<ScopeLabel, Gauge>,
    chunks: Family<ScopeLabel, Gauge>,
    source_syncs: Family<SourceResultLabel, Counter>,
    source_items: Family<SourceLabel, Gauge>,
    source_up: Family<SourceLabel, Gauge>,
    source_success: Family<SourceLabel, Gauge>,
    /// One scrape at a time: the scope gauges are refilled by each.
    scrape: Mutex<()>,
}

/// Results of an ingest.
pub const INGEST_RESULTS: [&str; 5] = ["created", "updated", "unchanged", "rejected", "failed"];

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "zhiku_http_requests",
            "HTTP requests answered, by route template, method and status class",
            requests.clone(),
        );
        let latency = HistogramFamily::new_with_constructor(latency_histogram);
        registry.register_with_unit(
            "zhiku_http_request_duration",
            "Time to the response head, by route template, method and status class",
            Unit::Seconds,
            latency.clone(),
        );
        let ingests = Family::<ResultLabel, Counter>::default();
        registry.register(
            "zhiku_ingests",
            "Documents sent to POST /v1/documents, by result",
            ingests.clone(),
        );
        let backend_errors = Family::<BackendLabel, Counter>::default();
        registry.register(
            "zhiku_backend_errors",
            "Errors reported by the embedder, the vector index (qdrant or vector_index) and the generator",
            backend_errors.clone(),
        );
        let rejections = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "zhiku_admission_rejections",
            "Requests refused for load: busy (503, max_concurrent) or timeout (504, timeout_ms)",
            rejections.clone(),
        );
        let documents = Family::<ScopeLabel, Gauge>::default();
        registry.register(
            "zhiku_documents",
            "Documents served, by scope",
            documents.clone(),
        );
        let chunks = Family::<ScopeLabel, Gauge>::default();
        registry.register(
            "zhiku_chunks",
            "Chunks of the documents served, by scope",
            chunks.clone(),
        );
        let source_syncs = Family::<SourceResultLabel, Counter>::default();
        registry.register(
            "zhiku_source_syncs",
            "Syncs of each configured source, by result (ok, failed)",
            source_syncs.clone(),
        );
        let source_items = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "zhiku_source_items",
            "Items each source's mirror holds",
            source_items.clone(),
        );
        let source_up = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "zhiku_source_up",
            "1 when the source's last sync completed, 0 when it failed",
            source_up.clone(),
        );
        let source_success = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "zhiku_source_last_success_timestamp_seconds",
            "When the source's last complete sync began (Unix seconds)",
            source_success.clone(),
        );
        // Series that exist from the start, so a rate over them is defined before the first event.
        for result in INGEST_RESULTS {
            ingests.get_or_create_owned(&ResultLabel {
                result: result.into(),
            });
        }
        for reason in ["busy", "timeout"] {
            rejections.get_or_create_owned(&ReasonLabel {
                reason: reason.into(),
            });
        }
        backend_errors.get_or_create_owned(&BackendLabel {
            backend: "generator".into(),
        });
        Self {
            registry,
            requests,
            latency,
            ingests,
            backend_errors,
            rejections,
            documents,
            chunks,
            source_syncs,
            source_items,
            source_up,
            source_success,
            scrape: Mutex::new(()),
        }
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// Counts one answered request (called by the access middleware).
pub fn observe_request(
    route: &str,
    method: &str,
    status: StatusCode,
    headers: &HeaderMap,
    elapsed: Duration,
) {
    let labels = HttpLabels {
        route: route.to_string(),
        method: method.to_string(),
        status: format!("{}xx", status.as_u16() / 100),
    };
    METRICS.requests.get_or_create(&labels).inc();
    METRICS
        .latency
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
    // The admission gate's two refusals: 504 is only the deadline; a 503 is `busy` when it
    // says when to retry (a 503 for an unavailable backend does not).
    let reason = match status {
        StatusCode::GATEWAY_TIMEOUT => Some("timeout"),
        StatusCode::SERVICE_UNAVAILABLE if headers.contains_key(header::RETRY_AFTER) => {
            Some("busy")
        }
        _ => None,
    };
    if let Some(reason) = reason {
        admission_rejected(reason);
    }
}

/// Counts a request refused for load (`busy` or `timeout`).
pub fn admission_rejected(reason: &str) {
    METRICS
        .rejections
        .get_or_create(&ReasonLabel {
            reason: reason.to_string(),
        })
        .inc();
}

/// Counts an ingest by its result (one of [`INGEST_RESULTS`]).
pub fn ingest(result: &str) {
    METRICS
        .ingests
        .get_or_create(&ResultLabel {
            result: result.to_string(),
        })
        .inc();
}

/// The ingest result of a `POST /v1/documents` answer's status.
pub fn ingest_result(status: StatusCode, report: Option<&zhiku_domain::usecases::IndexReport>) {
    let result = match (status, report) {
        (_, Some(r)) if r.docs_added > 0 => "created",
        (_, Some(r)) if r.docs_changed > 0 => "updated",
        (_, Some(_)) => "unchanged",
        (s, None) if s.is_server_error() => "failed",
        _ => "rejected",
    };
    ingest(result);
}

fn backend_error(backend: &str) {
    METRICS
        .backend_errors
        .get_or_create(&BackendLabel {
            backend: backend.to_string(),
        })
        .inc();
}

fn touch_backend(backend: &str) {
    METRICS.backend_errors.get_or_create_owned(&BackendLabel {
        backend: backend.to_string(),
    });
}

/// The current metrics in the OpenMetrics text format, with the per-scope gauges set from
/// `scopes` (scope, documents, chunks).
pub fn exposition(scopes: &[(String, usize, usize)], sources: &[SourceStatus]) -> String {
    let _one = METRICS.scrape.lock().unwrap_or_else(|e| e.into_inner());
    METRICS.documents.clear();
    METRICS.chunks.clear();
    for (scope, docs, chunks) in scopes {
        let label = ScopeLabel {
            scope: scope.clone(),
        };
        METRICS.documents.get_or_create(&label).set(*docs as i64);
        METRICS.chunks.get_or_create(&label).set(*chunks as i64);
    }
    METRICS.source_items.clear();
    METRICS.source_up.clear();
    METRICS.source_success.clear();
    for s in sources {
        let label = SourceLabel {
            source: s.name.clone(),
        };
        METRICS
            .source_items
            .get_or_create(&label)
            .set(s.items as i64);
        if let Some(last) = &s.last {
            let up = i64::from(last.error.is_none());
            METRICS.source_up.get_or_create(&label).set(up);
        }
        if let Some(at) = s.last_success {
            METRICS.source_success.get_or_create(&label).set(at.unix());
        }
    }
    let mut out = String::new();
    encode(&mut out, &METRICS.registry).expect("writing to a String does not fail");
    out
}

/// Counts one sync of `source` (a configured source's name: the operator's, never a caller's).
pub fn count_source_sync(source: &str, ok: bool) {
    METRICS
        .source_syncs
        .get_or_create(&SourceResultLabel {
            source: source.to_string(),
            result: if ok { "ok" } else { "failed" }.to_string(),
        })
        .inc();
}

/// Who may read `/metrics`.
#[derive(Debug, Clone)]
pub enum Guard {
    /// A bearer token with this SHA-256 (hex).
    Token(String),
    /// No token configured: requests from a loopback address to a loopback host.
    Loopback,
    /// The configured token could not be read: nobody.
    Closed,
}

impl Guard {
    /// The guard `[serve]` asks for: `metrics_token_sha256`, or the token in the environment
    /// variable `metrics_token_env` (read now, so a missing variable fails at start), or
    /// loopback only.
    pub fn from_settings(s: &ServeSettings) -> Result<Self> {
        match (&s.metrics_token_sha256, &s.metrics_token_env) {
            (Some(_), Some(_)) => {
                bail!("[serve] give at most one of metrics_token_sha256 or metrics_token_env")
            }
            (Some(hex), None) => {
                let hex = hex.trim().to_ascii_lowercase();
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    bail!("[serve] metrics_token_sha256 must be 64 hex digits");
                }
                Ok(Self::Token(hex))
            }
            (None, Some(var)) => match std::env::var(var).ok().filter(|t| !t.is_empty()) {
                Some(token) => Ok(Self::Token(token_digest(&token))),
                None => {
                    bail!("[serve] metrics_token_env: the environment variable {var} is not set")
                }
            },
            (None, None) => Ok(Self::Loopback),
        }
    }

    /// Whether a request with these headers from `peer` may read the metrics.
    fn admit(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> Result<(), ApiError> {
        match self {
            Self::Token(digest) => {
                let token = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|h| {
                        let (scheme, rest) = h.trim().split_once(' ')?;
                        scheme
                            .eq_ignore_ascii_case("bearer")
                            .then(|| rest.trim())
                            .filter(|t| !t.is_empty())
                    });
                let given = token.map(token_digest).unwrap_or_default();
                // Every byte compared, so timing says nothing about how much matched.
                let same = given.len() == digest.len()
                    && given
                        .bytes()
                        .zip(digest.bytes())
                        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                        == 0;
                if same {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "unauthorized",
                        "the metrics token is required (Authorization: Bearer …)",
                    ))
                }
            }
            Self::Loopback => {
                let from_loopback = peer.is_some_and(|p| p.ip().to_canonical().is_loopback());
                let to_loopback = headers
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(loopback_host);
                if from_loopback && to_loopback {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        "without [serve] metrics_token_sha256 or metrics_token_env, /metrics answers loopback requests to a loopback host only",
                    ))
                }
            }
            Self::Closed => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "the metrics token could not be read at start",
            )),
        }
    }
}

/// `localhost`, `127.0.0.1:7878`, `[::1]:7878` and the like: a `Host` a DNS name of someone
/// else's site cannot be (DNS rebinding).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, _)) => ip,
            None => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// `GET /metrics`: the exposition of every metric over `kb`, for a request `guard` admits.
pub(crate) async fn scrape(guard: &Guard, kb: SharedKb, request: Request) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    if let Err(e) = guard.admit(request.headers(), peer) {
        return e.into_response();
    }
    let counted = tokio::task::spawn_blocking(move || (kb.counts_by_scope(), kb.sources())).await;
    let (scopes, sources) = match counted {
        Ok(counted) => counted,
        Err(e) => {
            return ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("cannot count the documents: {e}"),
            )
            .into_response();
        }
    };
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        exposition(&scopes, &sources),
    )
        .into_response()
}

/// A store's dense route: its embedder and vector index.
pub type Dense = Option<(Box<dyn Embedder>, Arc<dyn VectorIndex>)>;

/// Wraps the knowledge base's embedder and vector index so that their errors are counted.
pub fn count_backend_errors(dense: &mut Dense) {
    if let Some((embedder, vectors)) = dense.take() {
        let backend = if vectors.capabilities().adapter == "qdrant" {
            "qdrant"
        } else {
            "vector_index"
        };
        touch_backend("embedder");
        touch_backend(backend);
        *dense = Some((
            Box::new(CountedEmbedder(embedder)),
            Arc::new(CountedVectors {
                inner: vectors,
                backend,
            }),
        ));
    }
}

/// Wraps a generator so that its errors are counted.
pub fn count_generator_errors(generator: Box<dyn Generator>) -> Box<dyn Generator> {
    Box::new(CountedGenerator(generator))
}

fn counted<T, E>(backend: &str, r: Result<T, E>) -> Result<T, E> {
    if r.is_err() {
        backend_error(backend);
    }
    r
}

struct CountedEmbedder(Box<dyn Embedder>);

impl Embedder for CountedEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        self.0.space()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        counted("embedder", self.0.embed_documents(texts))
    }

    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        counted("embedder", self.0.embed_query(text))
    }
}

struct CountedVectors {
    inner: Arc<dyn VectorIndex>,
    backend: &'static str,
}

impl VectorIndex for CountedVectors {
    fn capabilities(&self) -> IndexCapabilities {
        self.inner.capabilities()
    }

    fn space(&self) -> &EmbeddingSpace {
        self.inner.space()
    }

    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        counted(self.backend, self.inner.upsert(items))
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        counted(self.backend, self.inner.update_records(chunks))
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        counted(self.backend, self.inner.delete_chunks(ids))
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        counted(self.backend, self.inner.delete_document(doc))
    }

    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        counted(self.backend, self.inner.search(query, k, filter))
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        counted(self.backend, self.inner.chunk_ids(doc))
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        counted(self.backend, self.inner.all_chunk_ids())
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        counted(self.backend, self.inner.embeddings(ids))
    }

    fn count(&self) -> Result<usize, IndexError> {
        counted(self.backend, self.inner.count())
    }

    fn commit(&self) -> Result<(), IndexError> {
        counted(self.backend, self.inner.commit())
    }

    // Not counted as calls, but passed through: without them a served store would record no
    // generation (the next open checks chunk by chunk) and never checkpoint its graph.
    fn generation(&self) -> Result<Option<u64>, IndexError> {
        self.inner.generation()
    }

    fn checkpoint(&self) -> Result<(), IndexError> {
        counted(self.backend, self.inner.checkpoint())
    }
}

struct CountedGenerator(Box<dyn Generator>);

impl Generator for CountedGenerator {
    fn identity(&self) -> String {
        self.0.identity()
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        counted("generator", self.0.generate(request))
    }

    fn generate_streaming(
        &self,
        request: &GenerationRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<String, GenerateError> {
        counted("generator", self.0.generate_streaming(request, on_delta))
    }

    fn generate_attributed(
        &self,
        request: &GenerationRequest,
    ) -> Result<zhiku_domain::ports::Generated, GenerateError> {
        counted("generator", self.0.generate_attributed(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_from_names() {
        for good in [
            "localhost",
            "LOCALHOST:7878",
            "127.0.0.1",
            "127.0.0.1:80",
            "127.9.9.9:1",
            "[::1]:7878",
            "[::1]",
            "[::ffff:127.0.0.1]:8",
        ] {
            assert!(loopback_host(good), "{good}");
        }
        for bad in [
            "",
            "evil.example",
            "localhost.evil.example:7878",
            "10.0.0.1:7878",
            "[::1",
            "[2001:db8::1]:80",
            "127.0.0.1.nip.io",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn the_metrics_token_is_checked_in_full() {
        let guard = Guard::Token(token_digest("m-secret"));
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, v.parse().unwrap());
            h
        };
        let peer = Some(SocketAddr::from(([127, 0, 0, 1], 9)));
        assert!(guard.admit(&with("Bearer m-secret"), peer).is_ok());
        assert!(guard.admit(&with("bearer  m-secret "), None).is_ok());
        for bad in [
            "Bearer m-secre",
            "Bearer m-secret2",
            "Basic m-secret",
            "Bearer ",
        ] {
            assert!(guard.admit(&with(bad), peer).is_err(), "{bad}");
        }
        assert!(guard.admit(&HeaderMap::new(), peer).is_err());
        assert!(Guard::Closed.admit(&with("Bearer m-secret"), peer).is_err());
    }
}
