//! The HTTP API's request bodies: wire types, kept apart from the domain and service types so
//! the API can evolve without touching either. Unknown fields are refused, so a client that
//! sends `scopes` learns at once that scope comes from its token, not from the body.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use zhiku_domain::ports::Turn;
use zhiku_domain::usecases::RetrievalMode;

use zhiku_service::error::{Conversation, Invalid, TurnPart};
use zhiku_service::{
    KbError, KnowledgeWrite, MAX_HISTORY_TURNS, MAX_TURN_CHARS, NewDocument, SearchQuery,
};

use crate::settings::ServeSettings;

/// Which routes to run.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeParam {
    /// Lexical and dense, fused.
    #[default]
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Vectors only.
    Dense,
}

impl From<ModeParam> for RetrievalMode {
    fn from(m: ModeParam) -> Self {
        match m {
            ModeParam::Hybrid => RetrievalMode::Hybrid,
            ModeParam::Lexical => RetrievalMode::Lexical,
            ModeParam::Dense => RetrievalMode::Dense,
        }
    }
}

/// Narrowing within the caller's scopes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterParam {
    /// Metadata `key: value` terms, all required.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Locale prefix, e.g. `zh`.
    pub locale: Option<String>,
}

/// `POST /v1/search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The search text (not blank, at most `max_query_chars` characters).
    pub query: String,
    /// Pieces of evidence wanted, `1..=max_k` (default: the configured `k`).
    #[serde(default, deserialize_with = "whole_number")]
    pub k: Option<usize>,
    /// Which retrieval routes run (default: hybrid).
    #[serde(default)]
    pub mode: ModeParam,
    /// Metadata and locale the evidence must match, within the caller's scopes.
    #[serde(default)]
    pub filter: FilterParam,
}

/// `POST /v1/ask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    /// The question (not blank, at most `max_query_chars` characters).
    pub question: String,
    /// The conversation before the question, oldest first, as `user`/`assistant` messages
    /// (the server keeps none: the caller sends it back each time). It only shapes the
    /// retrieval query.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Pieces of evidence retrieved before the context budget, `1..=max_k`.
    #[serde(default, deserialize_with = "whole_number")]
    pub k: Option<usize>,
    /// Which retrieval routes run (default: hybrid).
    #[serde(default)]
    pub mode: ModeParam,
    /// Metadata and locale the evidence must match, within the caller's scopes.
    #[serde(default)]
    pub filter: FilterParam,
    /// Stream stages and the answer as server-sent events (also chosen by
    /// `Accept: text/event-stream`).
    #[serde(default)]
    pub stream: bool,
}

/// One message of a conversation sent with `POST /v1/ask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `user` (a question) or `assistant` (the answer to the question before it).
    pub role: String,
    /// The text.
    pub content: String,
    /// On a `user` message: the standalone question the engine retrieved for (the frame's
    /// `rewritten`), when the caller kept it.
    #[serde(default)]
    pub rewritten: Option<String>,
}

/// The earlier turns of an ask request: each `user` message is a turn, answered by the
/// `assistant` message after it. Roles other than `user` and `assistant` are refused:
/// instructions cannot be sent as history.
pub fn history(r: &AskRequest) -> Result<Vec<Turn>, KbError> {
    if r.messages.len() > MAX_HISTORY_TURNS {
        return Err(Invalid::Turns {
            within: Conversation::Messages,
            given: r.messages.len(),
            limit: MAX_HISTORY_TURNS,
        }
        .into());
    }
    let mut turns: Vec<Turn> = Vec::new();
    for (i, m) in r.messages.iter().enumerate() {
        for (part, text) in [
            (TurnPart::Content, m.content.as_str()),
            (
                TurnPart::Rewritten,
                m.rewritten.as_deref().unwrap_or_default(),
            ),
        ] {
            let n = text.chars().count();
            if n > MAX_TURN_CHARS {
                return Err(Invalid::TurnText {
                    within: Conversation::Messages,
                    turn: i,
                    part,
                    chars: n,
                    limit: MAX_TURN_CHARS,
                }
                .into());
            }
        }
        match m.role.as_str() {
            "user" => turns.push(Turn {
                question: m.content.clone(),
                answer: String::new(),
                rewritten: m.rewritten.clone(),
            }),
            "assistant" => {
                // An assistant message with no question before it answers nothing.
                if let Some(last) = turns.last_mut().filter(|t| t.answer.is_empty()) {
                    last.answer = m.content.clone();
                }
            }
            other => {
                return Err(Invalid::Role {
                    message: i,
                    role: other.to_string(),
                }
                .into());
            }
        }
    }
    Ok(turns)
}

/// `POST /v1/knowledge`: knowledge an agent writes back.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeRequest {
    /// The Markdown body: a finding, not a question or a refusal.
    pub text: String,
    /// The question it answers (a text that only repeats it is refused).
    #[serde(default)]
    pub question: Option<String>,
    /// A stable ID, to update an earlier write (default: derived from the content).
    #[serde(default)]
    pub id: Option<String>,
    /// Title (default: the first heading).
    #[serde(default)]
    pub title: Option<String>,
    /// One of the token's scopes (default: its first).
    #[serde(default)]
    pub scope: Option<String>,
    /// Attributes (`ttl`, `expires_at` included).
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

impl From<KnowledgeRequest> for KnowledgeWrite {
    fn from(r: KnowledgeRequest) -> Self {
        KnowledgeWrite {
            id: r.id,
            title: r.title,
            text: r.text,
            scope: r.scope,
            question: r.question,
            metadata: r.metadata,
        }
    }
}

/// `POST /v1/documents`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentRequest {
    /// Stable document ID.
    pub id: String,
    /// File path relative to the knowledge base (default `api/<id>.md`).
    pub path: Option<String>,
    /// Title (default: the first heading).
    pub title: Option<String>,
    /// The Markdown body; the other fields become its front matter.
    pub text: String,
    /// One of the token's scopes (default: its first).
    pub scope: Option<String>,
    /// Locale, e.g. `zh-CN`.
    pub locale: Option<String>,
    /// `key: value` attributes a search can filter on (`id`, `title`, `scope` and `locale`
    /// are reserved).
    /// `expires_at` (RFC 3339) and `ttl` (`7d`, `12h`, `1d12h`) here set the document's
    /// retention, as in a file's front matter; an unreadable one is refused (400).
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

/// The most documents one `POST /v1/documents:batch` carries.
pub const MAX_BATCH_DOCUMENTS: usize = 1000;

/// `POST /v1/documents:batch`: several documents written and indexed in one step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// The documents, each as `POST /v1/documents` takes one (1 to 1,000; IDs and paths
    /// distinct).
    pub documents: Vec<DocumentRequest>,
}

/// `GET /v1/documents` query.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// How many of the caller's documents (in ID order) to skip.
    #[serde(default)]
    pub offset: usize,
    /// Most items (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// `k` as JSON Schema counts integers: `5` and `5.0` alike.
fn whole_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let n: Option<f64> = Option::deserialize(d)?;
    match n {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && (0.0..=1e9).contains(&n) => Ok(Some(n as usize)),
        Some(n) => Err(serde::de::Error::custom(format!(
            "k must be a whole number between 1 and the server's max_k, not {n}"
        ))),
    }
}

/// Checks the shared bounds of a query or question and converts it.
pub fn query(
    text: &str,
    what: &str,
    k: Option<usize>,
    mode: ModeParam,
    filter: &FilterParam,
    limits: &ServeSettings,
) -> Result<SearchQuery, KbError> {
    let mut q = SearchQuery::checked(text, what, k, &limits.query_limits())?;
    q.mode = mode.into();
    q.metadata = filter
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    q.locale = filter.locale.clone();
    Ok(q)
}

impl From<DocumentRequest> for NewDocument {
    fn from(r: DocumentRequest) -> Self {
        let metadata = r.metadata;
        NewDocument {
            id: r.id,
            path: r.path,
            title: r.title,
            text: r.text,
            scope: r.scope,
            locale: r.locale,
            metadata,
        }
    }
}
