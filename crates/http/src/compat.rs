//! The APIs other tools already speak, over the same service, tokens, scopes, access rules,
//! admission gate and metrics as `/v1/ask` and `/v1/search`:
//!
//! - `GET /v1/models` and `POST /v1/chat/completions`, OpenAI's chat API: `model` names the
//!   knowledge base (`zhiku`) or one of the caller's scopes (`zhiku:<scope>`); the last `user`
//!   message is the question and the `user`/`assistant` messages before it the conversation
//!   (system, developer and tool messages are instructions, which never reach zhiku's
//!   generator); `temperature` and `max_tokens` go to the generator. The answer keeps zhiku's
//!   rule — every claim cited from this round's retrieval — and its citations travel twice: as
//!   the `[n]` markers in the text and as data: `annotations` (OpenAI's `url_citation`, each
//!   marker's span and its document) and `citations` (zhiku's own: chunk, document, source,
//!   section, page, quote) on the message, and `zhiku` (status, trace ID, source cards, token
//!   counts) beside the choices; `usage` holds the run's token counts (its largest request and
//!   the answer; estimated unless `generator_tokenizer` is set — `zhiku.tokens.exact` says),
//!   in a streamed answer as a last chunk when `stream_options.include_usage` asks for it.
//!   Streamed (`stream: true`), the checked answer is sent as `chat.completion.chunk` deltas,
//!   the citations in the last chunk, then `[DONE]`: no unchecked text is ever streamed.
//! - `POST /v1/dify/retrieval`, Dify's external-knowledge API (register
//!   `http://HOST:PORT/v1/dify` as the endpoint): `knowledge_id` is `zhiku` or a scope,
//!   `retrieval_setting.top_k` and `score_threshold` bound the records, `metadata_condition`
//!   with `is`/`=` conditions joined by `and` filters inside the search; errors are Dify's
//!   `{"error_code", "error_msg"}`.

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::rejection::JsonRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use zhiku_domain::Sampling;
use zhiku_service::{Caller, new_trace_id};

use crate::api::{self, AskRequest, FilterParam, Message, ModeParam};
use crate::error::ApiError;
use crate::error::ApiResult;
use crate::logging;
use crate::state::{AppState, admit, proceed, run};

/// The model name of the whole knowledge base (the caller's scopes).
pub const MODEL: &str = "zhiku";

/// `POST /v1/chat/completions`. Fields OpenAI clients send that zhiku has no use for (`top_p`,
/// `user`, `tools`, `response_format`, …) are accepted and ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    /// `zhiku` or `zhiku:<scope>`.
    pub model: String,
    /// The conversation, the question last.
    pub messages: Vec<ChatMessage>,
    /// Answer as server-sent `chat.completion.chunk` events.
    #[serde(default)]
    pub stream: bool,
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// The answer's length bound in tokens (the generator's own cap still applies).
    #[serde(default, deserialize_with = "tokens")]
    pub max_tokens: Option<u32>,
    /// The newer name of `max_tokens`.
    #[serde(default, deserialize_with = "tokens")]
    pub max_completion_tokens: Option<u32>,
    /// Choices wanted: 1 only.
    #[serde(default, deserialize_with = "tokens")]
    pub n: Option<u32>,
    /// Streaming options: `include_usage` adds a last chunk with the token counts.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// OpenAI's `stream_options`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk, with no choices, holding `usage`.
    #[serde(default)]
    pub include_usage: bool,
}

/// One message of an OpenAI conversation.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, or content parts of which the `text` ones are read.
    #[serde(default)]
    pub content: Value,
}

impl ChatMessage {
    fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// The caller narrowed to what `name` (a model or knowledge ID) names: `zhiku` is every scope
/// of the caller, `zhiku:<scope>` (or, for Dify, the bare scope) one of them; `None` for a name
/// the caller cannot read.
fn narrowed(caller: &Caller, name: &str, bare_scope: bool) -> Option<Caller> {
    let name = name.trim();
    if name == MODEL {
        return Some(caller.clone());
    }
    let scope = match name.strip_prefix("zhiku:") {
        Some(scope) => scope,
        None if bare_scope => name,
        None => return None,
    };
    let scope = caller.scopes.iter().find(|s| s.as_str() == scope)?.clone();
    Some(Caller {
        scopes: vec![scope],
        ..caller.clone()
    })
}

/// An OpenAI-style error body (`message`, `type`, `code`) with `status`.
fn openai_error(
    status: StatusCode,
    kind: &str,
    code: &str,
    message: impl Into<String>,
) -> Response {
    (
        status,
        Json(json!({"error": {"message": message.into(), "type": kind, "param": null, "code": code}})),
    )
        .into_response()
}

fn from_api(e: ApiError) -> Response {
    let kind = if e.status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    };
    openai_error(e.status, kind, e.code, e.message)
}

/// `GET /v1/models`: the knowledge base and each of the caller's scopes.
pub(crate) async fn models(Extension(caller): Extension<Caller>) -> Json<Value> {
    let mut data = vec![json!({"id": MODEL, "object": "model", "created": 0, "owned_by": "zhiku"})];
    for s in &caller.scopes {
        data.push(json!({"id": format!("{MODEL}:{s}"), "object": "model", "created": 0, "owned_by": "zhiku"}));
    }
    Json(json!({"object": "list", "data": data}))
}

/// The `/v1/ask` request a chat request amounts to.
fn as_ask(r: &ChatRequest) -> Result<AskRequest, &'static str> {
    if r.n.is_some_and(|n| n != 1) {
        return Err("n must be 1: zhiku gives one checked answer");
    }
    let conversation: Vec<&ChatMessage> = r
        .messages
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .collect();
    // The question is the last user message (an assistant message after it, which asks a
    // model to continue its own text, has nothing for zhiku to continue).
    let Some(at) = conversation.iter().rposition(|m| m.role == "user") else {
        return Err("messages hold no user message");
    };
    let (last, earlier) = (conversation[at], &conversation[..at]);
    Ok(AskRequest {
        question: last.text(),
        messages: earlier
            .iter()
            .map(|m| Message {
                role: m.role.clone(),
                content: m.text(),
                rewritten: None,
            })
            .collect(),
        k: None,
        mode: ModeParam::default(),
        filter: FilterParam::default(),
        stream: false,
    })
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Json<ChatRequest>, JsonRejection>,
) -> Response {
    let r = match body {
        Ok(Json(r)) => r,
        Err(e) => return from_api(e.into()),
    };
    let Some(caller) = narrowed(&caller, &r.model, false) else {
        return openai_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            format!(
                "the model {:?} does not exist: use {MODEL} or {MODEL}:<scope> (GET /v1/models)",
                r.model
            ),
        );
    };
    let Some(sampling) = Sampling::new(r.temperature, r.max_completion_tokens.or(r.max_tokens))
    else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request",
            "temperature must lie between 0 and 2",
        );
    };
    let ask = match as_ask(&r) {
        Ok(a) => a,
        Err(why) => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_request",
                why,
            );
        }
    };
    let prepared = api::history(&ask)
        .map_err(ApiError::from)
        .and_then(|history| {
            let q = api::query(
                &ask.question,
                "question",
                None,
                ask.mode,
                &ask.filter,
                &state.limits,
            )?;
            Ok((history, q))
        });
    let (history, mut q) = match prepared {
        Ok(p) => p,
        Err(e) => return from_api(e),
    };
    q.request_id = logging::request_id(&headers);
    let trace_id = new_trace_id();
    let id = format!("chatcmpl-{trace_id}");
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kb = state.kb.clone();
    let work = move || kb.converse_sampled(&caller, &q, &history, &trace_id, None, sampling);
    if !r.stream {
        return match run(&state, work).await {
            Ok(frame) => {
                let a = Answer::of(&frame);
                Json(json!({
                    "id": id,
                    "object": "chat.completion",
                    "created": created,
                    "model": r.model,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": a.content, "refusal": null,
                                    "annotations": a.annotations, "citations": a.citations},
                        "finish_reason": "stop",
                    }],
                    "usage": a.usage,
                    "zhiku": a.zhiku,
                }))
                .into_response()
            }
            Err(e) => from_api(e),
        };
    }
    // Streamed: the worker is taken before the stream starts (overload is a 503 like the JSON
    // path), the role goes out at once and keep-alives while the answer is made and checked;
    // then the checked answer in pieces of a few characters, as clients render a model's
    // stream, the citations in the last chunk, and [DONE]. Nothing unchecked is streamed.
    let permit = match state.gate.admit() {
        Ok(p) => p,
        Err(refused) => return from_api(refused.into()),
    };
    let chunk = {
        let (id, model) = (id.clone(), r.model.clone());
        move |delta: Value, finish: Value, extra: Option<&Answer>| {
            let mut c = json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            });
            if let Some(a) = extra {
                c["citations"] = a.citations.clone();
                c["zhiku"] = a.zhiku.clone();
            }
            Event::default().data(c.to_string())
        }
    };
    let include_usage = r.stream_options.as_ref().is_some_and(|o| o.include_usage);
    let (id, model) = (id.clone(), r.model.clone());
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let _ = tx.send(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
        None,
    ));
    let gate = state.gate.clone();
    tokio::spawn(async move {
        match gate
            .run_admitted(permit, work)
            .await
            .map_err(ApiError::from)
        {
            Ok(frame) => {
                let a = Answer::of(&frame);
                let chars: Vec<char> = a.content.chars().collect();
                for piece in chars.chunks(24) {
                    let text: String = piece.iter().collect();
                    let _ = tx.send(chunk(json!({"content": text}), Value::Null, None));
                }
                let _ = tx.send(chunk(
                    json!({"annotations": a.annotations}),
                    json!("stop"),
                    Some(&a),
                ));
                if include_usage {
                    let mut last = json!({
                        "id": id, "object": "chat.completion.chunk", "created": created,
                        "model": model, "choices": [], "usage": a.usage,
                    });
                    last["zhiku"] = a.zhiku.clone();
                    let _ = tx.send(Event::default().data(last.to_string()));
                }
            }
            // OpenAI's clients raise a stream event holding `error`.
            Err(e) => {
                let _ = tx.send(Event::default().data(
                    json!({"error": {"message": e.message, "type": "server_error", "code": e.code}})
                        .to_string(),
                ));
            }
        }
        let _ = tx.send(Event::default().data("[DONE]"));
    });
    let stream =
        tokio_stream::StreamExt::map(UnboundedReceiverStream::new(rx), Ok::<_, Infallible>);
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// What a completion carries of an answer frame.
struct Answer {
    content: String,
    citations: Value,
    annotations: Vec<Value>,
    /// OpenAI's `usage` from the frame's token counts (the run's largest request and the
    /// answer), `null` when the run counted none.
    usage: Value,
    zhiku: Value,
}

impl Answer {
    fn of(frame: &zhiku_domain::usecases::AnswerFrame) -> Self {
        let frame = serde_json::to_value(frame).unwrap_or(Value::Null);
        let content = frame["answer"].as_str().unwrap_or_default().to_string();
        let citations = frame["citations"].clone();
        Self {
            annotations: annotations(&content, &citations),
            usage: match (
                frame["tokens"]["prompt"].as_u64(),
                frame["tokens"]["answer"].as_u64(),
            ) {
                (Some(prompt), Some(answer)) => json!({
                    "prompt_tokens": prompt,
                    "completion_tokens": answer,
                    "total_tokens": prompt + answer,
                }),
                _ => Value::Null,
            },
            zhiku: json!({
                "status": frame["status"],
                "trace_id": frame["trace_id"],
                "rewritten": frame["rewritten"],
                "generator": frame["generator"],
                "sources": frame["sources"],
                "tokens": frame["tokens"],
            }),
            content,
            citations,
        }
    }
}

/// OpenAI's `url_citation` annotations: each `[n]` marker's span in `content` (in characters,
/// as the API counts them), titled with its document, its URL the document's permalink at the
/// source it was synced from when it has one, else the document's read route.
fn annotations(content: &str, citations: &Value) -> Vec<Value> {
    let Some(citations) = citations.as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let chars: Vec<char> = content.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '[' {
            let digits: String = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let end = i + 1 + digits.len();
            if !digits.is_empty() && chars.get(end) == Some(&']') {
                let marker: u64 = digits.parse().unwrap_or(0);
                if let Some(c) = citations
                    .iter()
                    .find(|c| c["marker"].as_u64() == Some(marker))
                {
                    let doc = c["doc_id"].as_str().unwrap_or_default();
                    let url = c["url"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("/v1/documents/{}", percent(doc)));
                    out.push(json!({
                        "type": "url_citation",
                        "url_citation": {
                            "start_index": i,
                            "end_index": end + 1,
                            "title": c["title"],
                            "url": url,
                        }
                    }));
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// What a path segment keeps unencoded: RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `s` as one path segment, every byte outside the unreserved set percent-encoded.
fn percent(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
}

/// A whole number, also when written as `5.0` (JSON Schema's integers include them).
fn whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = f64::deserialize(d)?;
    if n.fract() == 0.0 && (0.0..=1e9).contains(&n) {
        Ok(n as usize)
    } else {
        Err(serde::de::Error::custom(format!(
            "{n} is not a whole number up to 1e9"
        )))
    }
}

/// A whole number of tokens, also when written as `5.0`.
fn tokens<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) => {
            Ok(Some(n as u32))
        }
        Some(n) => Err(serde::de::Error::custom(format!(
            "{n} is not a whole number of tokens"
        ))),
    }
}

/// `POST /v1/dify/retrieval`'s body.
#[derive(Debug, Clone, Deserialize)]
pub struct DifyRequest {
    /// `zhiku`, or one of the caller's scopes.
    pub knowledge_id: String,
    /// The search text.
    pub query: String,
    /// `top_k` and `score_threshold`.
    pub retrieval_setting: DifySetting,
    /// Metadata conditions (`is`/`=`, joined by `and`).
    #[serde(default)]
    pub metadata_condition: Option<DifyCondition>,
}

/// Dify's `retrieval_setting`.
#[derive(Debug, Clone, Deserialize)]
pub struct DifySetting {
    /// Most records.
    #[serde(deserialize_with = "whole")]
    pub top_k: usize,
    /// Least score, 0 to 1 (0: no threshold).
    #[serde(default)]
    pub score_threshold: f64,
}

/// Dify's `metadata_condition`.
#[derive(Debug, Clone, Deserialize)]
pub struct DifyCondition {
    /// `and` (default) or `or`.
    #[serde(default)]
    pub logical_operator: Option<String>,
    /// The conditions.
    #[serde(default)]
    pub conditions: Vec<Value>,
}

fn dify_error(status: StatusCode, code: u32, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"error_code": code, "error_msg": message.into()})),
    )
        .into_response()
}

/// Admits a Dify request by its bearer token, answering in Dify's error format (1001: no
/// bearer token, 1002: not recognised or refused).
pub(crate) async fn dify_authenticate(
    State(state): State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    match admit(&state, request.headers()).await {
        Ok(caller) => proceed(caller, request, next).await,
        Err(crate::settings::Denied::Missing) => dify_error(
            StatusCode::UNAUTHORIZED,
            1001,
            "Invalid Authorization header format. Expected 'Bearer <api-key>' format.",
        ),
        Err(crate::settings::Denied::ProviderUnavailable(_)) => dify_error(
            StatusCode::SERVICE_UNAVAILABLE,
            1002,
            "the identity provider cannot be reached to verify the key; retry shortly",
        ),
        Err(_) => dify_error(StatusCode::UNAUTHORIZED, 1002, "Authorization failed"),
    }
}

/// `POST /v1/dify/retrieval`: the records of a search, Dify's way.
pub(crate) async fn dify_retrieval(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<DifyRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let r = match body {
        Ok(Json(r)) => r,
        Err(e) => {
            let e = ApiError::from(e);
            return Ok(dify_error(e.status, 400, e.message));
        }
    };
    let Some(caller) = narrowed(&caller, &r.knowledge_id, true) else {
        return Ok(dify_error(
            StatusCode::NOT_FOUND,
            2001,
            format!("The knowledge {:?} does not exist", r.knowledge_id),
        ));
    };
    let mut filter = FilterParam::default();
    if let Some(c) = &r.metadata_condition {
        match conditions(c) {
            Ok(terms) => filter.metadata = terms,
            Err(message) => return Ok(dify_error(StatusCode::BAD_REQUEST, 400, message)),
        }
    }
    let k = r.retrieval_setting.top_k.clamp(1, state.limits.max_k);
    let q = match api::query(
        &r.query,
        "query",
        Some(k),
        ModeParam::default(),
        &filter,
        &state.limits,
    ) {
        Ok(q) => q,
        Err(e) => {
            let e = ApiError::from(e);
            return Ok(dify_error(e.status, 400, e.message));
        }
    };
    let kb = state.kb.clone();
    let result = match run(&state, move || kb.search(&caller, &q)).await {
        Ok(r) => r,
        Err(e) => {
            return Ok(dify_error(
                e.status,
                u32::from(e.status.as_u16()),
                e.message,
            ));
        }
    };
    // Fused scores compare within one result only: each record's score is its fused score over
    // the best one's, so the best match scores 1 and the threshold is relative to it.
    let best = result
        .hits
        .first()
        .map_or(1.0, |h| h.score)
        .max(f64::MIN_POSITIVE);
    let records: Vec<Value> = result
        .hits
        .iter()
        .map(|h| (h, (h.score / best).clamp(0.0, 1.0)))
        .filter(|(_, score)| *score >= r.retrieval_setting.score_threshold)
        .map(|(h, score)| {
            json!({
                "content": h.content,
                "score": score,
                "title": h.title,
                "metadata": {
                    "doc_id": h.doc_id,
                    "chunk_id": h.chunk_id,
                    "source": h.source,
                    "url": h.url,
                    "section": h.section,
                    "heading_path": h.heading_path,
                    "pages": h.pages,
                    "rank": h.rank,
                },
            })
        })
        .collect();
    Ok(Json(json!({"records": records})).into_response())
}

/// Dify conditions as metadata equality terms: `is` or `=` conditions joined by `and` (what
/// zhiku filters on inside its indexes); anything else is refused, never dropped.
fn conditions(c: &DifyCondition) -> Result<std::collections::BTreeMap<String, String>, String> {
    if c.logical_operator.as_deref().is_some_and(|o| o != "and") {
        return Err("only metadata conditions joined by \"and\" are supported".into());
    }
    let mut terms = std::collections::BTreeMap::new();
    for cond in &c.conditions {
        let name = match &cond["name"] {
            Value::String(s) => s.clone(),
            Value::Array(names) if names.len() == 1 => {
                names[0].as_str().unwrap_or_default().to_string()
            }
            _ => return Err("each condition names one metadata field".into()),
        };
        let op = cond["comparison_operator"].as_str().unwrap_or_default();
        if op != "is" && op != "=" {
            return Err(format!(
                "the comparison {op:?} is not supported: metadata conditions are equalities (is, =)"
            ));
        }
        let value = match &cond["value"] {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(format!("the condition on {name:?} has no value")),
        };
        terms.insert(name, value);
    }
    Ok(terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_annotations_over_their_spans() {
        let citations = json!([{"marker": 1, "doc_id": "a b", "title": "A"}, {"marker": 2, "doc_id": "x/y", "title": "X"}]);
        let content = "甲是乙[1]。丙[2][9]";
        let a = annotations(content, &citations);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0]["url_citation"]["start_index"], 3);
        assert_eq!(a[0]["url_citation"]["end_index"], 6);
        assert_eq!(a[0]["url_citation"]["url"], "/v1/documents/a%20b");
        assert_eq!(a[1]["url_citation"]["start_index"], 8);
        assert_eq!(a[1]["url_citation"]["url"], "/v1/documents/x%2Fy");
    }

    #[test]
    fn dify_conditions_are_equalities_joined_by_and() {
        let ok: DifyCondition =
            serde_json::from_value(json!({"logical_operator": "and", "conditions": [
            {"name": ["team"], "comparison_operator": "is", "value": "hr"},
            {"name": "year", "comparison_operator": "=", "value": 2024}]}))
            .unwrap();
        let terms = conditions(&ok).unwrap();
        assert_eq!(terms["team"], "hr");
        assert_eq!(terms["year"], "2024");
        for bad in [
            json!({"logical_operator": "or", "conditions": []}),
            json!({"conditions": [{"name": "team", "comparison_operator": "contains", "value": "h"}]}),
            json!({"conditions": [{"name": "team", "comparison_operator": "is"}]}),
        ] {
            let c: DifyCondition = serde_json::from_value(bad).unwrap();
            assert!(conditions(&c).is_err());
        }
    }
}
