//! The Model Context Protocol server: tools `search_knowledge`, `ask_knowledge`,
//! `read_document` (a document or one section of it, to follow a hit or a citation to its
//! section) and `add_knowledge` (agent write-back, through the service's gate and audit), and the knowledge base's documents as resources (`zhiku://documents/{id}`).
//!
//! `zhiku mcp` serves it over stdio for the local user (the configuration's trusted scopes);
//! `zhiku serve` also mounts it at `/mcp` over streamable HTTP, where the bearer token of each
//! request decides the caller, exactly as for the HTTP API, and its work takes a worker from the
//! same gate within the same deadline ([`zhiku_http::admission::Gate`]): over capacity a call
//! is refused at once with [`BUSY`], past the deadline it fails with [`TIMEOUT`].

use std::sync::Arc;

mod sessions;
pub use sessions::SessionLimits;

use axum::http::request::Parts;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ErrorCode, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;

use zhiku_http::admission::{Gate, Refused};
use zhiku_service::Turn;
use zhiku_service::new_trace_id;
use zhiku_service::{Caller, KbError, KnowledgeWrite, SearchQuery, SharedKb};

/// URI prefix of document resources.
pub const RESOURCE_PREFIX: &str = "zhiku://documents/";

/// JSON-RPC error code of a call refused because every worker is busy: retry shortly (the
/// HTTP API's 503 + `Retry-After`).
pub const BUSY: ErrorCode = ErrorCode(-32000);
/// JSON-RPC error code of a call that exceeded the server's `timeout_ms` (the HTTP API's 504).
pub const TIMEOUT: ErrorCode = ErrorCode(-32001);

/// `search_knowledge` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in Chinese or English.
    pub query: String,
    /// How many chunks to return (default: the knowledge base's k; at most the server's max_k, 50 unless configured).
    pub k: Option<usize>,
}

/// `ask_knowledge` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AskArgs {
    /// The question to answer from the knowledge base.
    pub question: String,
    /// How many chunks to retrieve (default: the knowledge base's k; at most the server's max_k, 50 unless configured).
    pub k: Option<usize>,
    /// The conversation so far, oldest turn first (the server keeps none): each earlier question with the answer it got. A follow-up such as "what about Beijing?" is then answered as a standalone question; the history never widens what may be retrieved or cited.
    #[serde(default)]
    pub history: Vec<HistoryTurn>,
}

/// One earlier turn of a conversation (an `ask_knowledge` result's `question`, `answer` and
/// `rewritten` can be sent back as they are).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct HistoryTurn {
    /// The question as it was asked.
    pub question: String,
    /// The answer it got.
    #[serde(default)]
    pub answer: String,
    /// The standalone question that turn was retrieved for (the result's `rewritten`).
    #[serde(default)]
    pub rewritten: Option<String>,
}

impl From<HistoryTurn> for Turn {
    fn from(t: HistoryTurn) -> Self {
        Turn {
            question: t.question,
            answer: t.answer,
            rewritten: t.rewritten,
        }
    }
}

/// `read_document` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadArgs {
    /// The document ID (a hit's or a citation's doc_id).
    pub id: String,
    /// A section ID (a hit's or a citation's section): that section with its subsections; the
    /// whole document when left out.
    pub section: Option<String>,
}

/// `add_knowledge` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddKnowledgeArgs {
    /// The knowledge to keep, as Markdown: a finding, not a question or a refusal.
    pub text: String,
    /// The question it answers, when it answers one (a text that only repeats it is refused).
    pub question: Option<String>,
    /// A title (default: the first heading).
    pub title: Option<String>,
    /// A stable ID, to update an earlier write (default: derived from the content).
    pub id: Option<String>,
    /// One of the caller's scopes (default: the first).
    pub scope: Option<String>,
    /// How long it stays evidence after it is indexed, e.g. 7d or 12h.
    pub ttl: Option<String>,
    /// When it stops being evidence (RFC 3339).
    pub expires_at: Option<String>,
}

/// The MCP handler over one knowledge base.
#[derive(Debug, Clone)]
pub struct ZhikuMcp {
    kb: SharedKb,
    /// The caller when the transport carries none (stdio: the local user).
    local: Option<Caller>,
    /// The server's workers (none over stdio: one local user).
    gate: Option<Gate>,
    tool_router: ToolRouter<Self>,
}

fn to_error(e: KbError) -> ErrorData {
    match e {
        KbError::Invalid(_) | KbError::TooLarge { .. } => {
            ErrorData::invalid_params(e.to_string(), None)
        }
        KbError::NotFound(_) => ErrorData::resource_not_found(e.to_string(), None),
        KbError::Forbidden(_) | KbError::Conflict(_) => {
            ErrorData::invalid_request(e.to_string(), None)
        }
        KbError::Unavailable(_) | KbError::Internal(_) => {
            ErrorData::internal_error(e.public_message(), None)
        }
    }
}

fn refused(r: Refused) -> ErrorData {
    // MCP refusals travel inside a 200 response: the access log's status cannot see them.
    match &r {
        Refused::Busy { .. } => zhiku_http::metrics::admission_rejected("busy"),
        Refused::Timeout { .. } => zhiku_http::metrics::admission_rejected("timeout"),
        Refused::Failed(_) | Refused::Kb(_) => {}
    }
    match r {
        Refused::Busy { max_concurrent } => ErrorData::new(
            BUSY,
            format!("the server is working on {max_concurrent} requests already; retry shortly"),
            Some(json!({"code": "busy", "retry_after_s": 1})),
        ),
        Refused::Timeout { timeout_ms } => ErrorData::new(
            TIMEOUT,
            format!("the request took longer than {timeout_ms} ms"),
            Some(json!({"code": "timeout"})),
        ),
        Refused::Failed(e) => {
            tracing::error!(target: "zhiku::error", error = %e, "a request's worker failed");
            ErrorData::internal_error(zhiku_service::INTERNAL_MESSAGE, None)
        }
        Refused::Kb(e) => to_error(e),
    }
}

impl ZhikuMcp {
    /// A handler for the local user (stdio).
    pub fn local(kb: SharedKb, caller: Caller) -> Self {
        Self {
            kb,
            local: Some(caller),
            gate: None,
            tool_router: Self::tool_router(),
        }
    }

    /// A handler whose callers come from each HTTP request (set by the server's token check),
    /// working within the server's `gate`.
    pub fn per_request(kb: SharedKb, gate: Gate) -> Self {
        Self {
            kb,
            local: None,
            gate: Some(gate),
            tool_router: Self::tool_router(),
        }
    }

    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        if let Some(caller) = ctx
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
        {
            return Ok(caller.clone());
        }
        self.local
            .clone()
            .ok_or_else(|| ErrorData::invalid_request("no authenticated caller", None))
    }

    /// The same bounds as the HTTP API (`[serve]` max_k, max_query_chars).
    fn query(&self, text: &str, what: &str, k: Option<usize>) -> Result<SearchQuery, ErrorData> {
        SearchQuery::checked(text, what, k, &self.kb.limits()).map_err(to_error)
    }

    /// Runs a use case on the blocking pool, through the server's gate when there is one.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, KbError> + Send + 'static,
    ) -> Result<T, ErrorData> {
        match &self.gate {
            Some(gate) => gate.run(f).await.map_err(refused),
            None => tokio::task::spawn_blocking(f)
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
                .map_err(to_error),
        }
    }
}

#[tool_router]
impl ZhikuMcp {
    #[tool(
        description = "Search the knowledge base. Returns ranked chunks with their chunk IDs, document IDs, titles, sources, scores and text."
    )]
    async fn search_knowledge(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let q = self.query(&args.query, "query", args.k)?;
        let kb = self.kb.clone();
        let result = self.blocking(move || kb.search(&caller, &q)).await?;
        Ok(CallToolResult::structured(json!({
            "query": result.query,
            "hits": result.hits,
            "notice": result.notice,
        })))
    }

    #[tool(
        description = "Answer a question from the knowledge base, optionally as the next turn of a conversation (`history`: the earlier questions and answers, oldest first). Returns the answer frame: the answer with [n] citation markers, its status (answered, not_found, cannot_retrieve, blocked, small_talk), `rewritten` (the standalone question retrieved for, when a follow-up was rewritten), `intent` and `parts` (the sub-questions of a several-part question), the validated citations (chunk IDs, titles, sources, quotes: the span supporting each) and the trace ID."
    )]
    async fn ask_knowledge(
        &self,
        Parameters(args): Parameters<AskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let mut q = self.query(&args.question, "question", args.k)?;
        // The HTTP request's ID (given or generated by the access log), kept in the trace.
        q.request_id = ctx
            .extensions
            .get::<Parts>()
            .and_then(|p| zhiku_http::logging::request_id(&p.headers));
        let kb = self.kb.clone();
        let history: Vec<Turn> = args.history.into_iter().map(Turn::from).collect();
        let frame = self
            .blocking(move || kb.converse(&caller, &q, &history, &new_trace_id(), None))
            .await?;
        Ok(CallToolResult::structured(json!(frame)))
    }

    #[tool(
        description = "Write knowledge back into the knowledge base (the caller's scope), e.g. a refined finding. It passes a quality gate (too short, only the question again, a refusal such as \"I don't know\" are refused) and a duplicate check against the scope (an exact or near duplicate is refused, or merged into the document it duplicates, as configured); every decision is audited. Returns the decision (accepted, merged, skipped, refused), its reason, the document ID and, when written, its chunks."
    )]
    async fn add_knowledge(
        &self,
        Parameters(args): Parameters<AddKnowledgeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let mut metadata = std::collections::BTreeMap::new();
        for (key, value) in [("ttl", args.ttl), ("expires_at", args.expires_at)] {
            if let Some(value) = value {
                metadata.insert(key.to_string(), serde_json::Value::String(value));
            }
        }
        let write = KnowledgeWrite {
            id: args.id,
            title: args.title,
            text: args.text,
            scope: args.scope,
            question: args.question,
            metadata,
        };
        let kb = self.kb.clone();
        let outcome = self
            .blocking(move || kb.add_knowledge(&caller, write))
            .await?;
        Ok(CallToolResult::structured(json!(outcome)))
    }

    #[tool(
        description = "Read a document of the knowledge base in order: the whole document, or with `section` (the section ID a search hit or a citation carries) that section with its subsections. Returns the text, the document's revision, the section's headings, its outline and its chunks (the chunk IDs citations name). A read longer than 200,000 characters is refused with its size: read a section instead."
    )]
    async fn read_document(
        &self,
        Parameters(args): Parameters<ReadArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&ctx)?;
        let kb = self.kb.clone();
        let read = self
            .blocking(move || kb.read_document(&caller, &args.id, args.section.as_deref()))
            .await?;
        Ok(CallToolResult::structured(json!(read)))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ZhikuMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("zhiku", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "zhiku knowledge base: search_knowledge finds cited evidence, ask_knowledge answers with validated citations, read_document reads a hit's or a citation's section (or a whole document) in order; documents are resources under zhiku://documents/.",
        )
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        const PAGE: usize = 200;
        let caller = self.caller(&ctx)?;
        let offset: usize = request
            .and_then(|r| r.cursor)
            .map(|c| c.parse())
            .transpose()
            .map_err(|_| ErrorData::invalid_params("bad cursor", None))?
            .unwrap_or(0);
        let kb = self.kb.clone();
        let (docs, total) = self
            .blocking(move || Ok(kb.documents(&caller, offset, PAGE)))
            .await?;
        let resources = docs
            .into_iter()
            .map(|d| {
                Resource::new(format!("{RESOURCE_PREFIX}{}", d.id), d.id.to_string())
                    .with_title(d.title)
                    .with_description(format!("{} (scope {})", d.source, d.scope))
                    .with_mime_type("text/markdown")
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        if offset + PAGE < total {
            result.next_cursor = Some((offset + PAGE).to_string());
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller(&ctx)?;
        let uri = request.uri.clone();
        let Some(id) = uri.strip_prefix(RESOURCE_PREFIX).map(str::to_string) else {
            return Err(ErrorData::resource_not_found(
                format!("{uri} is not a zhiku document"),
                None,
            ));
        };
        let kb = self.kb.clone();
        let doc = self.blocking(move || kb.document(&caller, &id)).await?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(doc.text, uri).with_mime_type("text/markdown"),
        ])
        .into())
    }
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(kb: SharedKb, caller: Caller) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let service = ZhikuMcp::local(kb, caller)
        .serve(rmcp::transport::stdio())
        .await?;
    service.waiting().await?;
    Ok(())
}

/// The streamable-HTTP MCP endpoint, to be mounted at `/mcp` behind the token check, with the
/// server's `gate` and its sessions bounded by `limits` (per caller, in all, idle time: see
/// [`SessionLimits`]); and what ends its sessions (open event streams) at shutdown.
pub fn http_router<S: Clone + Send + Sync + 'static>(
    kb: SharedKb,
    gate: Gate,
    limits: SessionLimits,
) -> (axum::Router<S>, impl FnOnce() + Send + 'static) {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let mut config = StreamableHttpServerConfig::default();
    // The server's own Host check covers every route, /mcp included, with one rule.
    config.allowed_hosts = Vec::new();
    let sessions = config.cancellation_token.clone();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.idle);
    let manager = Arc::new(manager);
    let bound = Arc::new(sessions::Sessions::new(limits, manager.clone()));
    let service: StreamableHttpService<ZhikuMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(ZhikuMcp::per_request(kb.clone(), gate.clone())),
        manager,
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(bound, sessions::bound));
    (router, move || sessions.cancel())
}
