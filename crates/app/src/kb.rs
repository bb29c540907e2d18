//! One knowledge base as a long-lived service: the use cases the CLI runs once per command,
//! shared by many callers at a time (the HTTP server and the MCP server).
//!
//! Who may see what is decided here, not by the caller's request: every call carries a
//! [`Caller`] whose scopes come from the server's configuration (a bearer token) or, locally,
//! from the trusted scopes of `zhiku.toml`. Searches, answers, documents and traces outside the
//! caller's scopes are reported as not found, never as forbidden, so their existence does not
//! leak.
//!
//! Concurrency: searches and answers hold a read lock on the store for their retrieval; an
//! ingest chunks and embeds its document under that same read lock (searches go on), then takes
//! the write lock only to write the file, apply both indexes and save the manifest. A search
//! therefore sees the knowledge base either before or after an ingest, never half of it. One
//! ingest runs at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use serde::Serialize;
use serde_json::Value;
use zhiku_domain::chunker::chunk_document;
use zhiku_domain::ports::{Generator, SourceStore, TraceSink};
use zhiku_domain::usecases::{
    AnswerFrame, Answerer, IndexReport, RetrievalMode, RetrievalRequest, RetrieveError,
    RouteReport, SyncMode,
};
use zhiku_domain::{DocId, Document, Filter, Scope};

use crate::answer::{JsonlTraceSink, MonotonicClock, Tee, generator_for, policy_for, read_trace};
use crate::beir::{load_beir, passage_document};
use crate::loader::{LoaderConfig, Skipped, load_folder, load_text};
use crate::paths::{Found, KbPath, PathError, sidecar_of};
use crate::source::{CorpusSource, FolderSource};
use crate::store::{Origin, Store};

/// Who is calling, as established by the server (never by the request body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// A name for logs and traces.
    pub name: String,
    /// The scopes this caller may read (and, with `write`, write).
    pub scopes: Vec<Scope>,
    /// May add and remove documents.
    pub write: bool,
}

impl Caller {
    /// The local user: the configuration's trusted scopes, with write rights.
    pub fn local(store_config: &crate::config::Config) -> Result<Self> {
        Ok(Self {
            name: "local".into(),
            scopes: store_config.trusted_scopes()?,
            write: true,
        })
    }

    fn sees(&self, scope: &Scope) -> bool {
        self.scopes.contains(scope)
    }
}

/// Why a call failed, in terms a protocol can map to its own codes.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    /// The request is malformed or out of bounds.
    #[error("{0}")]
    Invalid(String),
    /// The caller lacks a right (writing).
    #[error("{0}")]
    Forbidden(String),
    /// Nothing the caller may see has this name.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what is stored.
    #[error("{0}")]
    Conflict(String),
    /// A backend (vector server, generator) or every retrieval route is unavailable now.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What a client is told of an internal error: its details (file paths, the store's and the
/// system's messages) go to the server's log only.
pub const INTERNAL_MESSAGE: &str = "internal error; the server's log has the details";

impl KbError {
    /// The message for a client. An internal error's details are logged, not returned: they
    /// may name server paths or another scope's files.
    pub fn public_message(&self) -> String {
        match self {
            KbError::Internal(inner) => {
                tracing::error!(target: "zhiku::error", error = %format!("{inner:#}"), "internal error");
                INTERNAL_MESSAGE.to_string()
            }
            other => other.to_string(),
        }
    }
}

impl From<RetrieveError> for KbError {
    fn from(e: RetrieveError) -> Self {
        match e {
            RetrieveError::CannotRetrieve { .. } => KbError::Unavailable(e.to_string()),
            RetrieveError::InvalidInput(_) => KbError::Invalid(e.to_string()),
            RetrieveError::Source(_) => KbError::Unavailable(e.to_string()),
        }
    }
}

/// What is known about a document without reading it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocInfo {
    /// Its ID.
    pub id: DocId,
    /// Its title.
    pub title: String,
    /// Its source path (relative to the knowledge-base root) or corpus name.
    pub source: String,
    /// Its scope.
    pub scope: Scope,
}

impl DocInfo {
    fn of(doc: &Document) -> Self {
        let a = doc.attributes();
        Self {
            id: doc.id().clone(),
            title: a.title.to_string(),
            source: a.source.to_string(),
            scope: a.scope.clone(),
        }
    }
}

/// Loader settings from the configuration.
pub fn loader_config(store: &Store) -> Result<LoaderConfig> {
    let config = &store.config;
    Ok(LoaderConfig {
        max_file_bytes: config.max_file_bytes,
        default_scope: Scope::new(&config.default_scope)?,
        follow_links_inside: config.follow_links_inside,
        // A store kept inside the folder (`--store kb/store`) is never read as documents.
        store_dir: store.dir.canonicalize().ok(),
    })
}

/// The source store that re-checks hits of `store` against its origin.
pub fn source_for(store: &Store) -> Result<Box<dyn SourceStore>> {
    Ok(match &store.manifest.origin {
        Some(Origin::Folder { root }) => Box::new(FolderSource::new(
            root.clone(),
            store.manifest.sources.clone(),
            loader_config(store)?,
        )),
        Some(Origin::Beir { dir }) => Box::new(CorpusSource::new(
            dir.clone(),
            Scope::new(&store.config.default_scope)?,
        )),
        None => bail!("the store is empty: run zhiku index first"),
    })
}

/// A filter over `scopes` with `key=value` metadata terms and an optional locale prefix.
pub fn filter_for(
    scopes: Vec<Scope>,
    metadata: &[(String, String)],
    locale: Option<&str>,
) -> Result<Filter> {
    let mut filter = Filter::for_scopes(scopes)?;
    for (k, v) in metadata {
        filter = filter.with_metadata(k.trim(), v.trim())?;
    }
    if let Some(locale) = locale {
        filter = filter.with_locale(zhiku_domain::Locale::new(locale)?);
    }
    Ok(filter)
}

/// The outcome of bringing a store up to date with its origin.
#[derive(Debug)]
pub struct Refreshed {
    /// What the indexer did.
    pub report: IndexReport,
    /// Files that could not be loaded (their earlier documents are kept).
    pub skipped: Vec<Skipped>,
    /// Documents in the knowledge base afterwards.
    pub docs: usize,
}

fn load_origin(store: &Store, origin: &Origin) -> Result<(Vec<Document>, Vec<Skipped>)> {
    Ok(match origin {
        Origin::Folder { root } => {
            let loaded = load_folder(root, &loader_config(store)?)?;
            (loaded.docs, loaded.skipped)
        }
        Origin::Beir { dir } => {
            let set = load_beir(dir)?;
            let scope = Scope::new(&store.config.default_scope)?;
            let docs = set
                .corpus
                .iter()
                .map(|p| passage_document(p, &scope))
                .collect::<Result<_>>()?;
            (docs, Vec::new())
        }
    })
}

/// Loads `origin` and indexes it incrementally; the manifest is saved after both indexes
/// committed. Files that cannot be read keep their previously indexed documents.
pub fn refresh(
    store: &mut Store,
    origin: Origin,
    on_progress: &mut dyn FnMut(zhiku_domain::usecases::Progress),
) -> Result<Refreshed> {
    // What a writer killed mid-ingest or mid-delete left in the folder is settled first: an
    // unrecorded delete's file goes back, temporary files go.
    if let Origin::Folder { root } = &origin
        && !store.is_read_only()
    {
        let recorded: Vec<&str> = store
            .manifest
            .sources
            .values()
            .map(String::as_str)
            .collect();
        for done in crate::paths::settle_leftovers(root, &recorded) {
            tracing::info!(target: "zhiku::store", ?done, "settled a killed writer's leftover");
        }
    }
    let (docs, skipped) = load_origin(store, &origin)?;
    index_loaded(store, origin, docs, skipped, on_progress)
}

/// [`refresh`] for documents already loaded from `origin`.
fn index_loaded(
    store: &mut Store,
    origin: Origin,
    docs: Vec<Document>,
    skipped: Vec<Skipped>,
    on_progress: &mut dyn FnMut(zhiku_domain::usecases::Progress),
) -> Result<Refreshed> {
    let skipped_paths: BTreeSet<&str> = skipped.iter().map(|s| s.path.as_str()).collect();
    let keep: BTreeSet<DocId> = store
        .manifest
        .sources
        .iter()
        .filter(|(_, path)| skipped_paths.contains(path.as_str()))
        .map(|(id, _)| id.clone())
        .collect();
    let sources: Vec<(DocId, String)> = docs
        .iter()
        .map(|d| (d.id().clone(), d.attributes().source.to_string()))
        .collect();
    let count = docs.len();
    let (catalog, report) = {
        let indexer = store.indexer()?;
        indexer.run(
            &store.manifest.catalog,
            docs,
            SyncMode::FullKeeping(keep.clone()),
            on_progress,
        )?
    };
    store
        .manifest
        .sources
        .retain(|id, _| catalog.docs.contains_key(id));
    for (id, path) in sources {
        store.manifest.sources.insert(id, path);
    }
    store.manifest.catalog = catalog;
    store.manifest.origin = Some(origin);
    store.save_manifest()?;
    Ok(Refreshed {
        report,
        skipped,
        docs: count + keep.len(),
    })
}

/// A search as the service takes it.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    /// The query text.
    pub query: String,
    /// Evidence wanted (default: the configured `k`).
    pub k: Option<usize>,
    /// Which routes.
    pub mode: RetrievalMode,
    /// `key=value` metadata terms, all required.
    pub metadata: Vec<(String, String)>,
    /// Locale prefix.
    pub locale: Option<String>,
    /// The transport's request ID, recorded in an answer's trace.
    pub request_id: Option<String>,
}

impl SearchQuery {
    /// A hybrid query without narrowing, after the bounds every transport applies: `text` (the
    /// `what` of the message) must not be blank nor longer than `max_query_chars` characters,
    /// and `k`, when given, lies in `1..=max_k`.
    pub fn checked(
        text: &str,
        what: &str,
        k: Option<usize>,
        limits: &crate::serve::settings::ServeSettings,
    ) -> Result<Self, KbError> {
        if text.trim().is_empty() {
            return Err(KbError::Invalid(format!("{what} must not be empty")));
        }
        let chars = text.chars().count();
        if chars > limits.max_query_chars {
            return Err(KbError::Invalid(format!(
                "{what} has {chars} characters; at most {} are accepted",
                limits.max_query_chars
            )));
        }
        if let Some(k) = k
            && (k == 0 || k > limits.max_k)
        {
            return Err(KbError::Invalid(format!(
                "k must be between 1 and {}",
                limits.max_k
            )));
        }
        Ok(Self {
            query: text.to_string(),
            k,
            mode: RetrievalMode::Hybrid,
            metadata: Vec::new(),
            locale: None,
            request_id: None,
        })
    }
}

/// One piece of evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// 1-based rank.
    pub rank: usize,
    /// The chunk.
    pub chunk_id: String,
    /// Its document.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// The document's source.
    pub source: String,
    /// Headings above the chunk.
    pub heading_path: Vec<String>,
    /// Fused score.
    pub score: f64,
    /// Each route's rank and score.
    pub routes: Vec<zhiku_domain::usecases::RouteHit>,
    /// The chunk's text.
    pub content: String,
}

impl Hit {
    /// The evidence of a retrieval, in rank order.
    pub fn all(retrieval: &zhiku_domain::usecases::Retrieval) -> Vec<Hit> {
        retrieval
            .evidence
            .iter()
            .map(|e| Hit {
                rank: e.rank,
                chunk_id: e.chunk_id.to_string(),
                doc_id: e.chunk.doc_id().to_string(),
                title: e.chunk.doc().title.to_string(),
                source: e.chunk.doc().source.to_string(),
                heading_path: e.chunk.heading_path().to_vec(),
                score: e.score,
                routes: e.routes.clone(),
                content: e.chunk.content().to_string(),
            })
            .collect()
    }
}

/// A search's result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// The query as asked.
    pub query: String,
    /// The routes asked for.
    pub mode: RetrievalMode,
    /// What each route did.
    pub routes: Vec<RouteReport>,
    /// Why the dense route is missing, when it is.
    pub notice: Option<String>,
    /// Evidence in rank order.
    pub hits: Vec<Hit>,
    /// Hits dropped by the revision check (stale, deleted, invisible).
    pub dropped: Vec<zhiku_domain::usecases::Dropped>,
    /// Milliseconds spent.
    pub latency_ms: f64,
}

/// A document to add or replace.
#[derive(Debug, Clone, Default)]
pub struct NewDocument {
    /// Its ID (stable across updates).
    pub id: String,
    /// Path of its file relative to the knowledge-base root (default: `api/<id>.md`).
    pub path: Option<String>,
    /// Title (default: the first heading).
    pub title: Option<String>,
    /// Markdown body.
    pub text: String,
    /// Scope (default: the caller's first scope); must be one of the caller's.
    pub scope: Option<String>,
    /// Locale.
    pub locale: Option<String>,
    /// Filterable metadata.
    pub metadata: BTreeMap<String, Value>,
}

/// What an ingest did.
#[derive(Debug, Clone, Serialize)]
pub struct Ingested {
    /// The document.
    pub doc_id: String,
    /// Its file, relative to the knowledge-base root.
    pub path: String,
    /// Its revision.
    pub revision: String,
    /// Its chunks.
    pub chunk_ids: Vec<String>,
    /// What the indexer did.
    pub report: IndexReport,
}

/// A chunk of a document, for showing where a citation points.
#[derive(Debug, Clone, Serialize)]
pub struct ChunkView {
    /// The chunk.
    pub chunk_id: String,
    /// Headings above it.
    pub heading_path: Vec<String>,
    /// Offset of its first character (Unicode scalar value, not byte) in the document's text.
    pub start: usize,
    /// Offset after its last character.
    pub end: usize,
    /// Its text.
    pub content: String,
}

/// A document as the caller may read it.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentView {
    /// ID.
    pub id: String,
    /// Title.
    pub title: String,
    /// Source path.
    pub source: String,
    /// Scope.
    pub scope: String,
    /// Locale, when declared.
    pub locale: Option<String>,
    /// Revision (content hash).
    pub revision: String,
    /// Metadata.
    pub metadata: BTreeMap<String, Value>,
    /// The text.
    pub text: String,
    /// Its chunks under the current chunking policy.
    pub chunks: Vec<ChunkView>,
}

/// The knowledge base's state, as a caller may see it.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Documents in the caller's scopes.
    pub documents: usize,
    /// Their chunks.
    pub chunks: usize,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// Whether the caller may write.
    pub write: bool,
    /// Profile.
    pub profile: String,
    /// Adapters picked and why.
    pub adapters: BTreeMap<String, String>,
    /// The embedding space of the dense route, when there is one.
    pub embedding_space: Option<String>,
    /// Why there is no dense route, when there is none.
    pub dense_notice: Option<String>,
    /// The generator.
    pub generator: String,
    /// `folder` or `beir`.
    pub origin: Option<String>,
    /// Seconds since the service started.
    pub uptime_s: u64,
}

struct Inner {
    store: Store,
    docs: BTreeMap<DocId, DocInfo>,
    /// BEIR passages are not files; their documents are kept for reading.
    passages: BTreeMap<DocId, Document>,
}

/// One knowledge base, shared by many callers.
pub struct KnowledgeBase {
    inner: RwLock<Inner>,
    writer: Mutex<()>,
    generator: Box<dyn Generator>,
    clock: MonotonicClock,
    traces: JsonlTraceSink,
    started: Instant,
}

impl std::fmt::Debug for KnowledgeBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeBase")
            .field("traces", &self.traces.path())
            .finish()
    }
}

fn invalid(e: impl std::fmt::Display) -> KbError {
    KbError::Invalid(e.to_string())
}

impl KnowledgeBase {
    /// Serves `store`. When `refresh_from` is given the store is first brought up to date with
    /// that origin (a folder or BEIR corpus); otherwise the recorded origin is loaded only to
    /// learn each document's scope.
    pub fn new(
        mut store: Store,
        refresh_from: Option<Origin>,
    ) -> Result<(Self, Option<Refreshed>)> {
        // Backend errors are counted at the ports, wherever they surface (`/metrics`).
        let generator =
            crate::serve::metrics::count_generator_errors(generator_for(&store.config)?);
        crate::serve::metrics::count_backend_errors(&mut store.dense);
        // The origin is loaded once: to refresh the indexes, to learn each document's scope
        // and, for a BEIR corpus (no files to re-read), to keep the passages for reading.
        let origin = refresh_from
            .clone()
            .or_else(|| store.manifest.origin.clone());
        let (loaded, skipped) = match &origin {
            Some(origin) => load_origin(&store, origin)?,
            None => (Vec::new(), Vec::new()),
        };
        let infos: Vec<DocInfo> = loaded.iter().map(DocInfo::of).collect();
        let passages = if matches!(origin, Some(Origin::Beir { .. })) {
            loaded.iter().map(|d| (d.id().clone(), d.clone())).collect()
        } else {
            BTreeMap::new()
        };
        let refreshed = match refresh_from {
            Some(origin) => Some(index_loaded(
                &mut store,
                origin,
                loaded,
                skipped,
                &mut |_| {},
            )?),
            None => None,
        };
        // Only documents the catalog holds are served.
        let docs = infos
            .into_iter()
            .filter(|i| store.manifest.catalog.docs.contains_key(&i.id))
            .map(|i| (i.id.clone(), i))
            .collect();
        let traces = JsonlTraceSink::in_store(&store.dir, &store.config.serve);
        Ok((
            Self {
                inner: RwLock::new(Inner {
                    store,
                    docs,
                    passages,
                }),
                writer: Mutex::new(()),
                generator,
                clock: MonotonicClock::default(),
                traces,
                started: Instant::now(),
            },
            refreshed,
        ))
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock leaves the data as consistent as the last write.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The server settings of this knowledge base's configuration (`[serve]`): listen
    /// address, tokens and the bounds of queries every transport applies.
    pub fn limits(&self) -> crate::serve::settings::ServeSettings {
        self.read().store.config.serve.clone()
    }

    /// The local caller of this knowledge base's configuration.
    pub fn local_caller(&self) -> Result<Caller> {
        Caller::local(&self.read().store.config)
    }

    /// Searches within the caller's scopes.
    pub fn search(&self, caller: &Caller, q: &SearchQuery) -> Result<SearchResult, KbError> {
        let started = Instant::now();
        let filter =
            filter_for(caller.scopes.clone(), &q.metadata, q.locale.as_deref()).map_err(invalid)?;
        let inner = self.read();
        let store = &inner.store;
        let source = source_for(store)?;
        let retriever = store.retriever(source.as_ref());
        let request = RetrievalRequest {
            query: &q.query,
            filter: &filter,
            mode: q.mode,
            k: q.k.unwrap_or(store.config.k),
            budget: None,
        };
        let retrieval = retriever.retrieve(&request)?;
        let hits = Hit::all(&retrieval);
        Ok(SearchResult {
            query: q.query.clone(),
            mode: q.mode,
            routes: retrieval.routes,
            notice: store.dense_notice.clone(),
            hits,
            dropped: retrieval.dropped,
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// Answers within the caller's scopes; every trace event also goes to `also` (a stream).
    pub fn ask(
        &self,
        caller: &Caller,
        q: &SearchQuery,
        trace_id: &str,
        also: Option<&dyn TraceSink>,
    ) -> Result<AnswerFrame, KbError> {
        let filter =
            filter_for(caller.scopes.clone(), &q.metadata, q.locale.as_deref()).map_err(invalid)?;
        let inner = self.read();
        let store = &inner.store;
        let source = source_for(store)?;
        let retriever = store.retriever(source.as_ref()).with_clock(&self.clock);
        let policy = policy_for(&store.config, q.mode, q.k.unwrap_or(store.config.k))?;
        let mut sinks: Vec<&dyn TraceSink> = vec![&self.traces];
        if let Some(also) = also {
            sinks.push(also);
        }
        let tee = Tee(sinks);
        let tagged;
        let sink: &dyn TraceSink = match &q.request_id {
            Some(request_id) => {
                tagged = crate::serve::logging::WithRequestId {
                    inner: &tee,
                    request_id,
                };
                &tagged
            }
            None => &tee,
        };
        let answerer = Answerer::new(
            &retriever,
            self.generator.as_ref(),
            sink,
            &self.clock,
            policy,
        );
        let result = answerer.ask(&q.query, &filter, trace_id);
        // A run that ended early (no `answer` event) is written too.
        self.traces.finish(trace_id);
        result.map_err(|e| match e {
            zhiku_domain::usecases::AskError::InvalidInput(m) => KbError::Invalid(m),
            other => KbError::Unavailable(other.to_string()),
        })
    }

    /// The events of one answer run, when the caller may see every scope it searched.
    pub fn trace(
        &self,
        caller: &Caller,
        trace_id: &str,
    ) -> Result<Vec<zhiku_domain::ports::StoredTraceEvent>, KbError> {
        let events = read_trace(self.traces.path(), trace_id)?;
        let allowed = events
            .iter()
            .find(|e| e.event.stage.name() == "query")
            .and_then(|e| e.event.stage.scopes())
            .is_some_and(|scopes| scopes.iter().all(|s| caller.sees(s)));
        if events.is_empty() || !allowed {
            return Err(KbError::NotFound(format!("no trace {trace_id:?}")));
        }
        Ok(events)
    }

    /// Documents in the caller's scopes, by ID, from `offset`, at most `limit`.
    pub fn documents(&self, caller: &Caller, offset: usize, limit: usize) -> (Vec<DocInfo>, usize) {
        let inner = self.read();
        let visible: Vec<&DocInfo> = inner
            .docs
            .values()
            .filter(|d| caller.sees(&d.scope))
            .collect();
        let total = visible.len();
        (
            visible
                .into_iter()
                .skip(offset)
                .take(limit)
                .cloned()
                .collect(),
            total,
        )
    }

    fn visible_info(&self, inner: &Inner, caller: &Caller, id: &str) -> Result<DocInfo, KbError> {
        let not_found = || KbError::NotFound(format!("no document {id:?}"));
        let id = DocId::new(id).map_err(|_| not_found())?;
        match inner.docs.get(&id) {
            Some(info) if caller.sees(&info.scope) => Ok(info.clone()),
            _ => Err(not_found()),
        }
    }

    /// One document with its chunks, as it is now in the source.
    pub fn document(&self, caller: &Caller, id: &str) -> Result<DocumentView, KbError> {
        let inner = self.read();
        let info = self.visible_info(&inner, caller, id)?;
        let store = &inner.store;
        let doc = match (&store.manifest.origin, inner.passages.get(&info.id)) {
            (_, Some(doc)) => doc.clone(),
            (Some(Origin::Folder { root }), None) => {
                let rel = store
                    .manifest
                    .sources
                    .get(&info.id)
                    .ok_or_else(|| KbError::NotFound(format!("no document {id:?}")))?;
                crate::loader::load_path(&root.join(rel), rel, &loader_config(store)?).map_err(
                    |e| KbError::NotFound(format!("document {id:?} cannot be read now: {e:#}")),
                )?
            }
            _ => return Err(KbError::NotFound(format!("no document {id:?}"))),
        };
        if !caller.sees(&doc.attributes().scope) {
            return Err(KbError::NotFound(format!("no document {id:?}")));
        }
        let policy = store.config.policy()?;
        let a = doc.attributes();
        Ok(DocumentView {
            id: doc.id().to_string(),
            title: a.title.to_string(),
            source: a.source.to_string(),
            scope: a.scope.to_string(),
            locale: Some(a.locale.to_string()).filter(|l| !l.is_empty()),
            revision: doc.revision().to_string(),
            metadata: a
                .metadata
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            text: doc.content().to_string(),
            chunks: chunk_document(&doc, &policy)
                .iter()
                .map(|c| ChunkView {
                    chunk_id: c.chunk_id().to_string(),
                    heading_path: c.heading_path().to_vec(),
                    start: c.start(),
                    end: c.end(),
                    content: c.content().to_string(),
                })
                .collect(),
        })
    }

    /// Adds or replaces a document: writes its Markdown file into the knowledge-base folder and
    /// indexes it incrementally (only new chunks are embedded).
    ///
    /// The path is taken in its one canonical form ([`KbPath`]) and must be one the folder scan
    /// sees (not ignored, not through a symbolic link). A document, path, file or sidecar the
    /// caller cannot see is answered as not found, exactly as an unknown one. File, indexes and
    /// manifest change together: when indexing or saving the manifest fails, the file and the
    /// indexes are put back.
    pub fn put_document(&self, caller: &Caller, new: NewDocument) -> Result<Ingested, KbError> {
        let root = self.folder_root();
        self.put_inner(caller, new)
            .map_err(|e| without_paths(e, root.as_deref()))
    }

    fn folder_root(&self) -> Option<std::path::PathBuf> {
        match &self.read().store.manifest.origin {
            Some(Origin::Folder { root }) => Some(root.clone()),
            _ => None,
        }
    }

    fn put_inner(&self, caller: &Caller, new: NewDocument) -> Result<Ingested, KbError> {
        if !caller.write {
            return Err(KbError::Forbidden(format!(
                "{} may not write documents",
                caller.name
            )));
        }
        check_new_id(&new.id)?;
        let id = DocId::new(&new.id).map_err(invalid)?;
        let scope = match &new.scope {
            Some(s) => Scope::new(s).map_err(invalid)?,
            None => caller
                .scopes
                .first()
                .cloned()
                .ok_or_else(|| KbError::Forbidden("the caller has no scope".into()))?,
        };
        if !caller.sees(&scope) {
            return Err(KbError::Forbidden(format!(
                "{} may not write to scope {scope}",
                caller.name
            )));
        }
        let requested = new
            .path
            .as_deref()
            .map(KbPath::parse)
            .transpose()
            .map_err(|e| path_error(e, new.path.as_deref().unwrap_or_default()))?;
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());

        // Plan and embed under the read lock: searches go on meanwhile.
        let (root, rel, text, doc, prepared, previous) = {
            let inner = self.read();
            let store = &inner.store;
            let Some(Origin::Folder { root }) = &store.manifest.origin else {
                return Err(KbError::Conflict(
                    "this knowledge base is not a folder; documents cannot be added over the API"
                        .into(),
                ));
            };
            let visible =
                |other: &DocId| inner.docs.get(other).is_some_and(|d| caller.sees(&d.scope));
            let recorded = store.manifest.sources.get(&id).cloned();
            // Another scope's document, or one whose owner cannot be read now (its file is
            // broken and its indexed version is kept): answered as an unknown one, untouched.
            if recorded.is_some() && !visible(&id) {
                return Err(no_document(&id));
            }
            let rel = match (&requested, &recorded) {
                (Some(p), Some(r)) if p.as_str() != r => {
                    return Err(KbError::Conflict(format!(
                        "document {:?} lives at {r}; it cannot move to {p}",
                        id.as_str()
                    )));
                }
                (Some(p), _) => p.as_str().to_string(),
                (None, Some(r)) => {
                    crate::paths::check_recorded(r).map_err(|e| path_error(e, r))?;
                    r.clone()
                }
                (None, None) => KbPath::parse(&default_path(&id))
                    .map_err(|e| path_error(e, &default_path(&id)))?
                    .as_str()
                    .to_string(),
            };
            let mine = recorded.as_deref() == Some(rel.as_str());
            let config = loader_config(store)?;
            if let Some(why) = crate::paths::scan_ignores(root, &rel, &config) {
                return Err(KbError::Invalid(format!(
                    "path {rel:?} would not be seen by the folder scan ({why}); choose another path"
                )));
            }
            // The path, and the sidecar the loader would merge into it, belong to no document
            // the caller cannot see.
            let sidecar = sidecar_of(&rel);
            for (other, p) in &store.manifest.sources {
                if *other == id {
                    continue;
                }
                if *p == rel && visible(other) {
                    return Err(KbError::Conflict(format!(
                        "{rel} already holds document {:?}",
                        other.as_str()
                    )));
                }
                if *p == rel || (sidecar_of(p) == sidecar && !visible(other)) {
                    return Err(no_document_at(&rel));
                }
            }
            let found = crate::paths::inspect(root, &rel).map_err(|e| path_error(e, &rel))?;
            let sidecar_found =
                crate::paths::inspect(root, &sidecar).map_err(|e| path_error(e, &rel))?;
            let path = root.join(&rel);
            // A file already there must be this caller's own document, as it reads now.
            let previous = match found {
                Found::Nothing => None,
                Found::File if !mine => return Err(no_document_at(&rel)),
                Found::File => match crate::loader::load_path(&path, &rel, &config) {
                    Ok(d) if d.id() == &id && caller.sees(&d.attributes().scope) => Some(d),
                    _ => return Err(no_document_at(&rel)),
                },
            };
            if sidecar_found == Found::File && previous.is_none() {
                return Err(no_document_at(&rel));
            }
            let text = render_markdown(&id, &scope, &new)?;
            let doc = load_text(&path, &rel, &text, &config)
                .map_err(|e| KbError::Invalid(format!("{e:#}")))?;
            if doc.id() != &id || doc.attributes().scope != scope {
                return Err(KbError::Invalid(
                    "a sidecar metadata file beside this path overrides the document's id or scope"
                        .into(),
                ));
            }
            let indexer = store.indexer()?;
            let prepared = indexer
                .prepare(
                    &store.manifest.catalog,
                    [doc.clone()],
                    SyncMode::Partial,
                    &mut |_| {},
                )
                .map_err(|e| KbError::Unavailable(format!("cannot index: {e}")))?;
            (root.clone(), rel, text, doc, prepared, previous)
        };

        // Write file, indexes and manifest under the write lock: searches wait briefly.
        let mut inner = self.write();
        let previous_bytes = match &previous {
            Some(_) => Some(
                std::fs::read(root.join(&rel))
                    .map_err(|e| KbError::Internal(anyhow!("cannot read {rel}: {}", e.kind())))?,
            ),
            None => None,
        };
        crate::paths::write_file(&root, &rel, text.as_bytes()).map_err(|e| path_error(e, &rel))?;
        let put_back = || match &previous_bytes {
            Some(old) => crate::paths::write_file(&root, &rel, old).map_err(|e| anyhow!(e)),
            None => std::fs::remove_file(root.join(&rel))
                .map_err(|e| anyhow!("cannot remove {rel}: {}", e.kind())),
        };
        let applied = {
            let indexer = inner.store.indexer()?;
            indexer.apply(prepared)
        };
        let (catalog, report) = match applied {
            Ok(done) => done,
            Err(e) => {
                // Put the file back as it was, and the indexes as far as they changed.
                let _ = put_back();
                let before = inner.store.manifest.catalog.clone();
                if let Ok(c) = reindex(&inner.store, &before, &id, previous.clone()) {
                    inner.store.manifest.catalog = c;
                }
                return Err(KbError::Unavailable(format!("cannot index: {e}")));
            }
        };
        let chunk_ids = catalog
            .docs
            .get(&id)
            .map(|e| e.chunk_ids.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default();
        let before = std::mem::replace(&mut inner.store.manifest.catalog, catalog.clone());
        let before_source = inner.store.manifest.sources.insert(id.clone(), rel.clone());
        if let Err(e) = inner.store.save_manifest() {
            // The manifest on disk still says the old state: put file and indexes back to it.
            match before_source {
                Some(r) => inner.store.manifest.sources.insert(id.clone(), r),
                None => inner.store.manifest.sources.remove(&id),
            };
            let _ = put_back();
            inner.store.manifest.catalog =
                reindex(&inner.store, &catalog, &id, previous).unwrap_or(before);
            return Err(KbError::Internal(anyhow!(
                "cannot save the manifest; nothing was changed: {e:#}"
            )));
        }
        inner.docs.insert(id.clone(), DocInfo::of(&doc));
        Ok(Ingested {
            doc_id: id.to_string(),
            path: rel,
            revision: doc.revision().to_string(),
            chunk_ids,
            report,
        })
    }

    /// Removes a document from both indexes and deletes its file (and its sidecar, unless
    /// another document shares it). File, indexes and manifest change together: the file is
    /// first moved aside, and put back if the indexes or the manifest cannot be changed.
    pub fn delete_document(&self, caller: &Caller, id: &str) -> Result<IndexReport, KbError> {
        let root = self.folder_root();
        self.delete_inner(caller, id)
            .map_err(|e| without_paths(e, root.as_deref()))
    }

    fn delete_inner(&self, caller: &Caller, id: &str) -> Result<IndexReport, KbError> {
        if !caller.write {
            return Err(KbError::Forbidden(format!(
                "{} may not delete documents",
                caller.name
            )));
        }
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut inner = self.write();
        let info = self.visible_info(&inner, caller, id)?;
        let Some(Origin::Folder { root }) = inner.store.manifest.origin.clone() else {
            return Err(KbError::Conflict(
                "this knowledge base is not a folder; documents cannot be removed over the API"
                    .into(),
            ));
        };
        let cannot = |e: PathError| KbError::Conflict(format!("cannot delete: {e}"));
        let rel = inner.store.manifest.sources.get(&info.id).cloned();
        // Move the file (and a sidecar no other document uses) aside before any index changes.
        let mut moved = Vec::new();
        let mut current = None;
        if let Some(rel) = &rel {
            crate::paths::check_recorded(rel).map_err(cannot)?;
            current =
                crate::loader::load_path(&root.join(rel), rel, &loader_config(&inner.store)?).ok();
            moved.extend(crate::paths::move_aside(&root, rel).map_err(cannot)?);
            let sidecar = sidecar_of(rel);
            let shared = inner
                .store
                .manifest
                .sources
                .iter()
                .any(|(other, p)| *other != info.id && sidecar_of(p) == sidecar);
            if !shared {
                match crate::paths::move_aside(&root, &sidecar) {
                    Ok(m) => moved.extend(m),
                    Err(e) => {
                        put_all_back(moved);
                        return Err(cannot(e));
                    }
                }
            }
        }
        let before = inner.store.manifest.catalog.clone();
        let removed = {
            let store = &inner.store;
            store
                .indexer()
                .map_err(KbError::Internal)
                .and_then(|indexer| {
                    indexer
                        .remove(&before, std::slice::from_ref(&info.id))
                        .map_err(|e| KbError::Unavailable(format!("cannot remove: {e}")))
                })
        };
        let (catalog, report) = match removed {
            Ok(done) => done,
            Err(e) => {
                // Put the file back and re-index it where a route already dropped it.
                put_all_back(moved);
                if let Ok(c) = reindex(&inner.store, &before, &info.id, current) {
                    inner.store.manifest.catalog = c;
                }
                return Err(e);
            }
        };
        let source = inner.store.manifest.sources.remove(&info.id);
        inner.store.manifest.catalog = catalog.clone();
        if let Err(e) = inner.store.save_manifest() {
            put_all_back(moved);
            if let Some(rel) = source {
                inner.store.manifest.sources.insert(info.id.clone(), rel);
            }
            inner.store.manifest.catalog =
                reindex(&inner.store, &catalog, &info.id, current).unwrap_or(before);
            return Err(KbError::Internal(anyhow!(
                "cannot save the manifest; nothing was deleted: {e:#}"
            )));
        }
        for m in moved {
            // A leftover is a hidden file, which the folder scan never reads.
            let _ = m.discard();
        }
        inner.docs.remove(&info.id);
        Ok(report)
    }

    /// The state of the knowledge base as the caller may see it.
    pub fn status(&self, caller: &Caller) -> Status {
        let inner = self.read();
        let store = &inner.store;
        let visible: Vec<&DocInfo> = inner
            .docs
            .values()
            .filter(|d| caller.sees(&d.scope))
            .collect();
        let chunks = visible
            .iter()
            .filter_map(|d| store.manifest.catalog.docs.get(&d.id))
            .map(|e| e.chunk_ids.len())
            .sum();
        Status {
            documents: visible.len(),
            chunks,
            scopes: caller.scopes.iter().map(|s| s.to_string()).collect(),
            write: caller.write,
            profile: store.config.profile.clone(),
            adapters: store.picked.iter().cloned().collect(),
            embedding_space: store
                .dense
                .as_ref()
                .map(|(e, _)| e.space().identity().to_string()),
            dense_notice: store.dense_notice.clone(),
            generator: self.generator.identity(),
            origin: store.manifest.origin.as_ref().map(|o| match o {
                Origin::Folder { .. } => "folder".to_string(),
                Origin::Beir { .. } => "beir".to_string(),
            }),
            uptime_s: self.started.elapsed().as_secs(),
        }
    }

    /// Documents and chunks served per scope, every scope: for the operator's metrics only.
    pub fn counts_by_scope(&self) -> Vec<(String, usize, usize)> {
        let inner = self.read();
        let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for d in inner.docs.values() {
            let c = counts.entry(d.scope.as_str()).or_default();
            c.0 += 1;
            c.1 += inner
                .store
                .manifest
                .catalog
                .docs
                .get(&d.id)
                .map_or(0, |e| e.chunk_ids.len());
        }
        counts
            .into_iter()
            .map(|(s, (d, c))| (s.to_string(), d, c))
            .collect()
    }
}

/// An ID a writer gives a document over the API reads as what it is: Unicode NFC (a decomposed
/// `é` is another ID that looks the same) and no invisible formatting character (zero-width
/// spaces and joiners, bidirectional overrides, the byte-order mark, soft hyphens, tags), so no
/// document can pass for another scope's by looking like its ID.
fn check_new_id(id: &str) -> Result<(), KbError> {
    if !unicode_normalization::is_nfc(id) {
        return Err(KbError::Invalid(format!(
            "document id {id:?} must be in Unicode NFC (composed characters)"
        )));
    }
    if let Some(c) = id.chars().find(|c| is_format_char(*c)) {
        return Err(KbError::Invalid(format!(
            "document id {id:?} holds the invisible character U+{:04X}",
            c as u32
        )));
    }
    Ok(())
}

/// Unicode's format characters (general category Cf): they change how text is shown, not
/// what it says.
fn is_format_char(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// `api/<id>.md`, with characters that do not belong in a file name replaced.
fn default_path(id: &DocId) -> String {
    let name: String = id
        .as_str()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name: String = unicode_normalization::UnicodeNormalization::nfc(name.as_str()).collect();
    let name = name.trim_start_matches('.');
    if name.ends_with(".md") {
        format!("api/{name}")
    } else {
        format!("api/{name}.md")
    }
}

/// "Not found" for a document ID, the same words for an unknown one and for one the caller
/// may not see.
fn no_document(id: &DocId) -> KbError {
    KbError::NotFound(format!("no document {:?}", id.as_str()))
}

/// "Not found" for a path whose file or sidecar is not the caller's document.
fn no_document_at(rel: &str) -> KbError {
    KbError::NotFound(format!("no document of yours at {rel:?}"))
}

/// A path check's error for a request naming `rel`.
fn path_error(e: PathError, rel: &str) -> KbError {
    match e {
        PathError::Invalid(m) => KbError::Invalid(m),
        // What is in the way may be another scope's: answered exactly as a path holding
        // another scope's document.
        PathError::Occupied(_) => no_document_at(rel),
        PathError::Io(m) => KbError::Internal(anyhow!(m)),
    }
}

fn put_all_back(moved: Vec<crate::paths::MovedAside>) {
    for m in moved.into_iter().rev() {
        let _ = m.restore();
    }
}

/// Puts document `id` back in both indexes as `doc` (or out of them when there is none),
/// whatever a failed or unrecorded change left there: every chunk of the document is removed
/// from both indexes, then `doc` is indexed again. `catalog` is the state to start from; the
/// result is the catalog that matches the indexes.
fn reindex(
    store: &Store,
    catalog: &zhiku_domain::usecases::Catalog,
    id: &DocId,
    doc: Option<Document>,
) -> Result<zhiku_domain::usecases::Catalog> {
    let indexer = store.indexer()?;
    let mut start = catalog.clone();
    // `remove` acts on the documents the catalog lists: list this one whatever it held.
    start
        .docs
        .entry(id.clone())
        .or_insert_with(|| zhiku_domain::usecases::CatalogEntry {
            revision: zhiku_domain::Revision::of_content(""),
            fingerprint: String::new(),
            chunk_ids: Vec::new(),
        });
    let (cleared, _) = indexer.remove(&start, std::slice::from_ref(id))?;
    Ok(match doc {
        Some(doc) => {
            indexer
                .run(&cleared, [doc], SyncMode::Partial, &mut |_| {})?
                .0
        }
        None => cleared,
    })
}

/// A message never shows the server's absolute path of the knowledge base.
fn without_paths(e: KbError, root: Option<&Path>) -> KbError {
    let Some(root) = root else { return e };
    let mut roots = vec![root.display().to_string()];
    if let Ok(real) = root.canonicalize() {
        roots.push(real.display().to_string());
    }
    let scrub = |m: String| {
        roots
            .iter()
            .filter(|r| r.len() > 1)
            .fold(m, |m, r| m.replace(r.as_str(), "<kb>"))
    };
    match e {
        KbError::Invalid(m) => KbError::Invalid(scrub(m)),
        KbError::Forbidden(m) => KbError::Forbidden(scrub(m)),
        KbError::NotFound(m) => KbError::NotFound(scrub(m)),
        KbError::Conflict(m) => KbError::Conflict(scrub(m)),
        KbError::Unavailable(m) => KbError::Unavailable(scrub(m)),
        KbError::Internal(e) => KbError::Internal(anyhow!(scrub(format!("{e:#}")))),
    }
}

/// The Markdown file of a document: YAML front matter with its attributes, then the body.
fn render_markdown(id: &DocId, scope: &Scope, new: &NewDocument) -> Result<String, KbError> {
    let mut front: BTreeMap<String, Value> = BTreeMap::new();
    for (k, v) in &new.metadata {
        if matches!(k.as_str(), "id" | "title" | "scope" | "locale") {
            return Err(KbError::Invalid(format!(
                "metadata key {k:?} is reserved; use the request's field"
            )));
        }
        zhiku_domain::Metadata::check_key(k).map_err(invalid)?;
        front.insert(k.clone(), v.clone());
    }
    front.insert("id".into(), Value::String(id.to_string()));
    front.insert("scope".into(), Value::String(scope.to_string()));
    if let Some(t) = &new.title {
        front.insert("title".into(), Value::String(t.clone()));
    }
    if let Some(l) = &new.locale {
        front.insert("locale".into(), Value::String(l.clone()));
    }
    let yaml = serde_yaml_ng::to_string(&front).map_err(|e| KbError::Internal(anyhow!(e)))?;
    Ok(format!("---\n{yaml}---\n{}", new.text))
}

/// A shared handle.
pub type SharedKb = Arc<KnowledgeBase>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_knowledge_base() {
        for bad in [
            "",
            "/etc/x.md",
            "../x.md",
            "a/../../x.md",
            ".hidden.md",
            "a/.git/x.md",
            "x.txt",
            "x",
        ] {
            assert!(KbPath::parse(bad).is_err(), "{bad}");
        }
        for good in ["x.md", "a/b/c.markdown", "指南/安装.md"] {
            assert!(KbPath::parse(good).is_ok(), "{good}");
        }
        assert_eq!(
            default_path(&DocId::new("team/a b").unwrap()),
            "api/team_a_b.md"
        );
        assert_eq!(default_path(&DocId::new("..x.md").unwrap()), "api/x.md");
    }
}
