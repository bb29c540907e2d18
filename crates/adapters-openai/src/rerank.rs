//! A [`Reranker`] over an HTTP cross-encoder server, in either of the two wire shapes in use:
//!
//! - [`RerankApi::Jina`]: `POST {base}/v1/rerank` with `{model, query, documents, top_n}`,
//!   answered by `{results: [{index, relevance_score}]}` (Jina, Cohere's v1 API, llama.cpp's
//!   `llama-server --reranking`, vLLM, Infinity, LocalAI);
//! - [`RerankApi::Tei`]: `POST {base}/rerank` with `{query, texts, raw_scores}`, answered by
//!   `[{index, score}]` (Hugging Face text-embeddings-inference; llama-server takes it too).
//!
//! [`OpenAiReranker::connect`] scores a probe once: it shows that the server is up, which shape
//! it speaks (when not configured: the Jina shape first, the TEI shape when that route is
//! missing) and which model it serves (for the name `http-rerank:<model>`).
//!
//! # What is sent
//!
//! Each candidate is sent as [`RerankCandidate::passage`]: its document's title and its heading
//! path (`title > h1 > h2`), a newline, then the chunk's text. One (query, passage) pair holds
//! at most [`OpenAiRerankerConfig::max_chars`] characters: the query takes up to half, the
//! passage the rest. The default, 480, fits a 512-token cross-encoder even for Chinese (about a
//! token per character) — llama-server does not truncate, and answers a pair over its batch
//! size with HTTP 500 "input is too large", which becomes [`RerankError::InvalidInput`] with the
//! advice to lower `rerank_chars`, as 400/413 do. TEI is asked to truncate as well.
//!
//! # Batches and comparable scores
//!
//! At most [`OpenAiRerankerConfig::max_documents`] documents go in one request. A cross-encoder
//! scores each (query, document) pair on its own, so the scores of separate requests compare as
//! they are, provided the server does not rescale them per request: raw scores are asked for
//! (`raw_scores: true` for TEI; the Jina shape has no such switch, and llama-server, TEI and
//! Jina score pairs independently). That proviso is checked, not assumed: when the candidates
//! take more than one request, every later request also carries the first request's first
//! document as an anchor, and if the anchor's score differs between requests (beyond float
//! noise, 1e-3 relative) the reranking fails instead of mixing scales. Every reply must score
//! each document of its request exactly once, with a finite number, by its `index`; a missing,
//! repeated or unknown index is an error.
//!
//! # Failures
//!
//! Connection failures, timeouts, 408, 429 and 5xx are retried (by default twice, from 100 ms:
//! a refused connection fails in about 0.3 s). What stays unreachable, and a 503 that persists
//! (a server still loading its model), is [`RerankError::Unavailable`]: the retriever then keeps
//! the fused order and says so. Another persistent 5xx or 429 is a temporary
//! [`RerankError::Backend`]; 400/413/422 are [`RerankError::InvalidInput`]; 401/403/404 and
//! malformed replies permanent backend errors. One request waits at most
//! [`OpenAiRerankerConfig::timeout`] (connecting a fifth of it, at most 5 s).

use std::time::Duration;

use serde_json::{Value, json};
use zhiku_domain::ports::{RerankCandidate, RerankError, Reranker};

use crate::http::{self, HttpError, HttpErrorKind, RetryPolicy};

const ADAPTER: &str = "http-rerank";

const HINTS: http::Hints = http::Hints {
    api_key: "rerank_api_key_env",
    not_found: "is the URL the server's root, with /v1/rerank (Jina shape) or /rerank (TEI) under it?",
    // No setting sizes the batch itself; fewer candidates make every request smaller.
    batch: "rerank_depth",
    input: "rerank_chars",
};

/// The probe scored once by [`OpenAiReranker::connect`].
const PROBE_QUERY: &str = "zhiku reranker probe";
const PROBE_DOCUMENT: &str = "zhiku 重排序探测 reranker probe document";

/// How far an anchor's score may move between two requests and still count as the same score.
const ANCHOR_TOLERANCE: f64 = 1e-3;

/// Which wire shape the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerankApi {
    /// `POST {base}/v1/rerank`, `{model, query, documents, top_n}` →
    /// `{results: [{index, relevance_score}]}` (Jina, Cohere v1, llama.cpp, vLLM, Infinity).
    Jina,
    /// `POST {base}/rerank`, `{query, texts, raw_scores}` → `[{index, score}]`
    /// (text-embeddings-inference).
    Tei,
}

impl RerankApi {
    /// The configuration's spelling: `jina` or `tei`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jina => "jina",
            Self::Tei => "tei",
        }
    }

    /// Reads `jina` (also `cohere`, `llama.cpp`, `v1`) or `tei`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "jina" | "cohere" | "llama.cpp" | "llamacpp" | "v1" => Some(Self::Jina),
            "tei" => Some(Self::Tei),
            _ => None,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Jina => "/v1/rerank",
            Self::Tei => "/rerank",
        }
    }
}

/// Where the reranking server is and how to talk to it.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiRerankerConfig {
    /// The server's root, e.g. `http://127.0.0.1:8090` (a trailing `/v1` is taken off, so the
    /// embedder's API base works too).
    pub base_url: String,
    /// The model name sent with each request (Jina shape); `None`: the one the server reports.
    pub model: Option<String>,
    /// Bearer token, when the server wants one. The caller reads it from the environment; it is
    /// never printed.
    pub api_key: Option<String>,
    /// The wire shape; `None`: discovered by the probe (Jina first, then TEI).
    pub api: Option<RerankApi>,
    /// Most documents per request, at least 2 (a later request holds one anchor and
    /// `max_documents - 1` candidates).
    pub max_documents: usize,
    /// Most characters of one (query, passage) pair: the query takes up to half of them, the
    /// passage (title, headings and text) the rest. At least 2.
    pub max_chars: usize,
    /// Deadline of one request (connecting gets a fifth of it, at most 5 s).
    pub timeout: Duration,
    /// Retries of temporary failures and the first backoff.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiRerankerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiRerankerConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("api", &self.api)
            .field("max_documents", &self.max_documents)
            .field("max_chars", &self.max_chars)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiRerankerConfig {
    /// Defaults: the server's model, the shape discovered, 32 documents per request, 480
    /// characters per (query, passage) pair, a 30 s deadline (reranking sits on the query path), 2 retries
    /// from 100 ms.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: None,
            api_key: None,
            api: None,
            max_documents: 32,
            max_chars: 480,
            timeout: Duration::from_secs(30),
            retry: RetryPolicy {
                retries: 2,
                backoff: Duration::from_millis(100),
            },
        }
    }
}

/// Scores from a cross-encoder behind an HTTP reranking API.
#[derive(Debug, Clone)]
pub struct OpenAiReranker {
    client: http::Client,
    base_url: String,
    endpoint: String,
    api: RerankApi,
    /// The name sent as `model` (Jina shape; `None`: none).
    model_sent: Option<String>,
    model: String,
    name: String,
    max_documents: usize,
    max_chars: usize,
}

impl OpenAiReranker {
    /// Reaches the server and scores a probe: settles the wire shape and the model's name. An
    /// unreachable server is [`RerankError::Unavailable`].
    pub fn connect(config: OpenAiRerankerConfig) -> Result<Self, RerankError> {
        let mut base_url = config.base_url.trim().trim_end_matches('/').to_string();
        if let Some(root) = base_url.strip_suffix("/v1") {
            base_url = root.to_string();
        }
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(RerankError::InvalidInput(format!(
                "reranking server URL {base_url:?} must start with http:// or https://"
            )));
        }
        if config.max_documents < 2 {
            return Err(RerankError::InvalidInput(
                "the reranker needs at least 2 documents per request (max_documents)".into(),
            ));
        }
        if config.max_chars < 2 {
            return Err(RerankError::InvalidInput(
                "a (query, passage) pair must hold at least 2 characters (rerank_chars)".into(),
            ));
        }
        let client = http::Client::new(config.timeout, config.api_key.clone(), config.retry, HINTS);
        let model_sent = config
            .model
            .as_ref()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty());
        let mut reranker = Self {
            client,
            endpoint: String::new(),
            api: RerankApi::Jina,
            model_sent,
            model: String::new(),
            name: String::new(),
            max_documents: config.max_documents,
            max_chars: config.max_chars,
            base_url,
        };
        let shapes: &[RerankApi] = match config.api {
            Some(RerankApi::Jina) => &[RerankApi::Jina],
            Some(RerankApi::Tei) => &[RerankApi::Tei],
            None => &[RerankApi::Jina, RerankApi::Tei],
        };
        let mut reported = None;
        for (i, &api) in shapes.iter().enumerate() {
            reranker.set_api(api);
            match reranker.request(PROBE_QUERY, &[PROBE_DOCUMENT]) {
                Ok((scores, model)) => {
                    debug_assert_eq!(scores.len(), 1);
                    reported = model;
                    break;
                }
                // The route is not there: try the other shape, if any is left.
                Err(Probe::Http(e))
                    if i + 1 < shapes.len()
                        && e.kind == HttpErrorKind::Permanent
                        && matches!(e.status, Some(404 | 405)) => {}
                Err(e) => return Err(e.into_rerank_error(&reranker.endpoint)),
            }
        }
        let model = reranker
            .model_sent
            .clone()
            .or(reported)
            .or_else(|| reranker.listed_model())
            .ok_or_else(|| RerankError::Backend {
                adapter: ADAPTER,
                source: format!(
                    "{} names no model in its reply, GET /v1/models or /info, and none is configured (set rerank_model)",
                    reranker.endpoint
                )
                .into(),
                temporary: false,
            })?;
        reranker.name = format!("{ADAPTER}:{model}");
        reranker.model = model;
        Ok(reranker)
    }

    /// The server's root this reranker talks to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The wire shape in use.
    pub fn api(&self) -> RerankApi {
        self.api
    }

    /// The model's name: the configured one, else the one the server reported.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One line for status output.
    pub fn describe(&self) -> String {
        format!(
            "{} at {} ({} API, {} documents per request, at most {} characters per pair)",
            self.name,
            self.endpoint,
            self.api.as_str(),
            self.max_documents,
            self.max_chars
        )
    }

    fn set_api(&mut self, api: RerankApi) {
        self.api = api;
        self.endpoint = format!("{}{}", self.base_url, api.path());
    }

    /// The one model `GET /v1/models` lists, else TEI's `GET /info` `model_id`.
    fn listed_model(&self) -> Option<String> {
        let listed = self
            .client
            .get_once(&format!("{}/v1/models", self.base_url))
            .ok()
            .and_then(|v| {
                let data = v.get("data")?.as_array()?.clone();
                match data.as_slice() {
                    [only] => Some(only.get("id")?.as_str()?.to_string()),
                    _ => None,
                }
            });
        listed
            .or_else(|| {
                let info = self
                    .client
                    .get_once(&format!("{}/info", self.base_url))
                    .ok()?;
                Some(info.get("model_id")?.as_str()?.to_string())
            })
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
    }

    /// Scores `documents` for `query` in one request: one score per document, in order, and
    /// the model the reply names (Jina shape).
    fn request(
        &self,
        query: &str,
        documents: &[&str],
    ) -> Result<(Vec<f64>, Option<String>), Probe> {
        let body = match self.api {
            RerankApi::Jina => {
                let mut body = json!({
                    "query": query,
                    "documents": documents,
                    "top_n": documents.len(),
                    "return_documents": false,
                });
                if let Some(m) = &self.model_sent {
                    body["model"] = json!(m);
                }
                body
            }
            RerankApi::Tei => json!({
                "query": query,
                "texts": documents,
                "raw_scores": true,
                "truncate": true,
                "return_text": false,
            }),
        };
        let reply = self
            .client
            .post(&self.endpoint, &body)
            .map_err(Probe::Http)?;
        let (items, model) = match self.api {
            RerankApi::Jina => {
                let items = reply
                    .get("results")
                    .and_then(Value::as_array)
                    .ok_or_else(|| Probe::Malformed("no results array".into()))?;
                let model = reply
                    .get("model")
                    .and_then(Value::as_str)
                    .map(|m| m.trim().to_string())
                    .filter(|m| !m.is_empty());
                (items, model)
            }
            RerankApi::Tei => {
                let items = reply
                    .as_array()
                    .ok_or_else(|| Probe::Malformed("not a list of scores".into()))?;
                (items, None)
            }
        };
        let scores = parse_scores(items, documents.len()).map_err(Probe::Malformed)?;
        Ok((scores, model))
    }

    fn score_batch(&self, query: &str, documents: &[&str]) -> Result<Vec<f64>, RerankError> {
        self.request(query, documents)
            .map(|(scores, _)| scores)
            .map_err(|e| e.into_rerank_error(&self.endpoint))
    }
}

impl Reranker for OpenAiReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let query = cut(query.to_string(), self.max_chars / 2);
        let room = self.max_chars - query.chars().count();
        let passages: Vec<String> = candidates.iter().map(|c| c.passage(room)).collect();
        let passages: Vec<&str> = passages.iter().map(String::as_str).collect();
        let (first, rest) = passages.split_at(passages.len().min(self.max_documents));
        let mut scores = self.score_batch(&query, first)?;
        let anchor = scores[0];
        for (k, batch) in rest.chunks(self.max_documents - 1).enumerate() {
            let mut documents = Vec::with_capacity(batch.len() + 1);
            documents.push(first[0]);
            documents.extend_from_slice(batch);
            let got = self.score_batch(&query, &documents)?;
            if (got[0] - anchor).abs() > ANCHOR_TOLERANCE * anchor.abs().max(1.0) {
                return Err(RerankError::Backend {
                    adapter: ADAPTER,
                    source: format!(
                        "{}: scores are not comparable across requests: the anchor document scored {anchor} in the first request and {} in request {} (does the server rescale scores per request? lower rerank_depth to at most {} so the candidates take one request)",
                        self.endpoint,
                        got[0],
                        k + 2,
                        self.max_documents
                    )
                    .into(),
                    temporary: false,
                });
            }
            scores.extend_from_slice(&got[1..]);
        }
        debug_assert_eq!(scores.len(), candidates.len());
        Ok(scores)
    }
}

/// How one request failed, before it is said in the port's terms.
enum Probe {
    Http(HttpError),
    Malformed(String),
}

impl Probe {
    fn into_rerank_error(self, endpoint: &str) -> RerankError {
        match self {
            Probe::Malformed(what) => RerankError::Backend {
                adapter: ADAPTER,
                source: format!("{endpoint} sent a malformed reply: {what}").into(),
                temporary: false,
            },
            Probe::Http(e) => match e.kind {
                HttpErrorKind::Unreachable => RerankError::Unavailable {
                    adapter: ADAPTER,
                    message: e.message,
                },
                // llama-server and TEI answer 503 while the model loads.
                HttpErrorKind::Temporary if e.status == Some(503) => RerankError::Unavailable {
                    adapter: ADAPTER,
                    message: e.message,
                },
                HttpErrorKind::Temporary => RerankError::Backend {
                    adapter: ADAPTER,
                    source: e.message.into(),
                    temporary: true,
                },
                HttpErrorKind::Refused => RerankError::InvalidInput(e.message),
                HttpErrorKind::Permanent => RerankError::Backend {
                    adapter: ADAPTER,
                    source: e.message.into(),
                    temporary: false,
                },
            },
        }
    }
}

/// One score per document, in input order by each item's `index`: exactly `expected` items,
/// each index in range and present once, each score (`relevance_score`, else `score`) finite.
fn parse_scores(items: &[Value], expected: usize) -> Result<Vec<f64>, String> {
    if items.len() != expected {
        return Err(format!(
            "{} scores for {expected} documents (a top_n limit of the server?)",
            items.len()
        ));
    }
    let mut slots: Vec<Option<f64>> = vec![None; expected];
    for item in items {
        let index = item
            .get("index")
            .ok_or_else(|| "a result without an index".to_string())?;
        let i = index
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < expected)
            .ok_or_else(|| format!("index {index} out of range for {expected} documents"))?;
        let score = item
            .get("relevance_score")
            .or_else(|| item.get("score"))
            .ok_or_else(|| format!("no score for index {i}"))?
            .as_f64()
            .filter(|s| s.is_finite())
            .ok_or_else(|| format!("the score of index {i} is not a finite number"))?;
        if slots[i].replace(score).is_some() {
            return Err(format!("index {i} appears twice"));
        }
    }
    slots
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "an index is missing".to_string())
}

/// `text` cut to at most `max_chars` characters, on a character boundary.
fn cut(mut text: String, max_chars: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max_chars) {
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_read_by_index_and_every_index_is_checked() {
        let items = |v: Value| v.as_array().unwrap().clone();
        let reply = items(json!([
            {"index": 2, "relevance_score": 0.5},
            {"index": 0, "relevance_score": -1.0},
            {"index": 1, "score": 3.0},
        ]));
        assert_eq!(parse_scores(&reply, 3).unwrap(), vec![-1.0, 3.0, 0.5]);
        // Fewer (a top_n cut), more, a repeat, out of range, no index, not a number.
        assert!(parse_scores(&reply[..2], 3).unwrap_err().contains("top_n"));
        assert!(parse_scores(&reply, 2).is_err());
        let dup = items(json!([{"index": 0, "score": 1.0}, {"index": 0, "score": 2.0}]));
        assert!(parse_scores(&dup, 2).unwrap_err().contains("twice"));
        let out = items(json!([{"index": 0, "score": 1.0}, {"index": 2, "score": 2.0}]));
        assert!(parse_scores(&out, 2).unwrap_err().contains("out of range"));
        let neg = items(json!([{"index": -1, "score": 1.0}]));
        assert!(parse_scores(&neg, 1).is_err());
        let none = items(json!([{"score": 1.0}]));
        assert!(parse_scores(&none, 1).is_err());
        let text = items(json!([{"index": 0, "score": "1.0"}]));
        assert!(parse_scores(&text, 1).unwrap_err().contains("finite"));
        let noscore = items(json!([{"index": 0}]));
        assert!(parse_scores(&noscore, 1).is_err());
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        assert_eq!(cut("故宫始建于明朝".into(), 2), "故宫");
        assert_eq!(cut("abc".into(), 3), "abc");
        assert_eq!(cut("abc".into(), 10), "abc");
    }

    #[test]
    fn api_names_parse() {
        assert_eq!(RerankApi::parse(" TEI "), Some(RerankApi::Tei));
        assert_eq!(RerankApi::parse("cohere"), Some(RerankApi::Jina));
        assert_eq!(RerankApi::parse("jina"), Some(RerankApi::Jina));
        assert_eq!(RerankApi::parse("x"), None);
        assert_eq!(RerankApi::Tei.as_str(), "tei");
    }
}
