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
//! the write lock only to write the file, apply both indexes and save the catalog. A search
//! therefore sees the knowledge base either before or after an ingest, never half of it. One
//! ingest runs at a time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use zhiku_domain::chunker::chunk_document;
use zhiku_domain::ports::{
    AuditLog, DocumentStore, Generator, Judge, MemoryAuditLog, Origin, PageRequest, Planner,
    StoredTraceEvent, TokenCounter, TraceSink, TraceStore, Turn, WriteTurn,
};
use zhiku_domain::rules::vocabulary::Synonyms;
use zhiku_domain::usecases::{
    AnswerFrame, Answerer, DocumentReader, IndexReport, RetrievalRequest, SourceCard,
};
use zhiku_domain::{DocId, Document, Sampling, Scope, SectionId};

use crate::error::{
    Act, Change, Conversation, Field, Forbidden, Invalid, Missing, Step, TurnPart, Unavailable,
};
use crate::query::caller_filter;
use crate::refresh::{index_loaded, refresh};
use crate::removal::remove_recorded;
use crate::{
    Caller, ChunkView, DocInfo, DocumentView, Hit, KbError, MonotonicClock, QueryLimits, Refreshed,
    SearchQuery, SearchResult, SectionView, SourceStatus, Status, Store, SweepReport, Tee,
    WithRequestId,
};

/// The planners a knowledge base reads conversations with.
#[derive(Default)]
pub struct Planners {
    /// Reads each question in its conversation; the domain's as-asked planner when `None`.
    pub primary: Option<Box<dyn Planner>>,
    /// Plans whenever the primary fails or breaks the planner contract, and offers another
    /// wording when the primary has none; the as-asked planner when `None`.
    pub fallback: Option<Box<dyn Planner>>,
    /// The team's synonym groups, put beside every question that names one of their words
    /// (asked and searched alike).
    pub synonyms: Synonyms,
}

impl std::fmt::Debug for Planners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let identity = |p: &Option<Box<dyn Planner>>| p.as_ref().map(|p| p.identity());
        f.debug_struct("Planners")
            .field("primary", &identity(&self.primary))
            .field("fallback", &identity(&self.fallback))
            .finish()
    }
}

/// The most characters one read (a document or a section) returns: a larger one is refused
/// with its size, and its sections can be read one by one.
pub const MAX_READ_CHARS: usize = 200_000;

/// Most pixels of the longer side of a page picture [`KnowledgeBase::page_png`] serves: a page
/// shown on a screen, not the scan's full resolution.
pub const PAGE_PNG_SIDE: u32 = 1_600;

/// How often a knowledge base that answers callers checks the catalog on record for another
/// process's saves (a store kept on a server that several replicas write).
pub const FOLLOW_EVERY: Duration = Duration::from_secs(1);

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) docs: BTreeMap<DocId, DocInfo>,
}

/// One knowledge base, shared by many callers.
pub struct KnowledgeBase {
    inner: RwLock<Inner>,
    pub(crate) writer: Mutex<()>,
    documents: Option<Box<dyn DocumentStore>>,
    pub(crate) generator: Box<dyn Generator>,
    /// Reads questions in their conversation, and the planner standing in when it fails
    /// (the domain's as-asked planner for each one missing).
    planners: Planners,
    /// Decides claims' support and write-backs beside the rules (the rules alone when `None`).
    pub(crate) judge: Option<Box<dyn Judge>>,
    /// Counts answers' tokens (the generator's tokenizer, or an estimate); none: no counts,
    /// no token limits.
    pub(crate) tokens: Option<Arc<dyn TokenCounter>>,
    /// Whether every answer attempt's exact prompt is kept in its trace.
    pub(crate) prompt_log: bool,
    pub(crate) clock: MonotonicClock,
    pub(crate) traces: Arc<dyn TraceStore>,
    started: Instant,
    /// When the catalog on record was last checked ([`Self::current`]), in milliseconds since
    /// `started`.
    followed_at: AtomicU64,
    pub(crate) audit: Arc<dyn AuditLog>,
    /// The synced sources, as their syncs last reported.
    sources: Mutex<BTreeMap<String, SourceStatus>>,
}

impl std::fmt::Debug for KnowledgeBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeBase")
            .field("generator", &self.generator.identity())
            .finish_non_exhaustive()
    }
}

/// A shared handle.
pub type SharedKb = Arc<KnowledgeBase>;

/// The scope a write of `caller` goes to: `requested`, or the caller's first scope; refused
/// when the caller may not see it.
pub(crate) fn writable_scope(caller: &Caller, requested: Option<&str>) -> Result<Scope, KbError> {
    let scope = match requested {
        Some(s) => Scope::new(s).map_err(|e| KbError::invalid(Field::Scope, e))?,
        None => caller.scopes.first().cloned().ok_or(Forbidden::NoScope)?,
    };
    if !caller.sees(&scope) {
        return Err(Forbidden::Scope {
            caller: caller.name.clone(),
            scope: scope.to_string(),
        }
        .into());
    }
    Ok(scope)
}

/// Logs that `caller`, acting for a person, was refused document `id` by its readers (never
/// anything of the document itself); the request's span names the request.
fn denied(caller: &Caller, id: &DocId) {
    let user = caller
        .principal
        .as_ref()
        .map(|p| p.user())
        .unwrap_or_default();
    tracing::info!(target: "zhiku::access", caller = %caller.name, user, doc = %id, "read denied by the document's readers");
}

/// "Not found" for document `id` whose source the store cannot read now (`e` says why).
fn unreadable(id: &str, e: impl std::fmt::Display) -> Missing {
    Missing::Unreadable {
        id: id.to_string(),
        reason: e.to_string(),
    }
}

/// "Not found" for a document ID, the same words for an unknown one and for one the caller
/// may not see.
fn no_document(id: &str) -> KbError {
    Missing::Document { id: id.to_string() }.into()
}

impl KnowledgeBase {
    /// Serves `store`, whose documents live in `documents` (none for a store that was never
    /// indexed). With `refresh_from`, the store is first brought up to date with that origin
    /// (whose documents `documents` holds; unchanged files are not read). Each document's
    /// scope and title come from the catalog. Answers are written by `generator`; their runs
    /// are recorded in `traces`.
    pub fn new(
        mut store: Store,
        documents: Option<Box<dyn DocumentStore>>,
        refresh_from: Option<Origin>,
        generator: Box<dyn Generator>,
        traces: Arc<dyn TraceStore>,
    ) -> Result<(Self, Option<Refreshed>)> {
        let refreshed = match (refresh_from, &documents) {
            (Some(origin), Some(documents)) => Some(refresh(
                &mut store,
                documents.as_ref(),
                origin,
                &mut |_| {},
            )?),
            (Some(origin), None) => {
                let turn = store.begin_write()?;
                let indexed = index_loaded(&mut store, origin, Default::default(), &mut |_| {})?;
                turn.finish();
                Some(indexed)
            }
            (None, _) => None,
        };
        let docs = served_docs(&store, documents.as_deref())?;
        Ok((
            Self {
                inner: RwLock::new(Inner { store, docs }),
                writer: Mutex::new(()),
                documents,
                generator,
                planners: Planners::default(),
                judge: None,
                tokens: None,
                prompt_log: false,
                clock: MonotonicClock::default(),
                traces,
                started: Instant::now(),
                followed_at: AtomicU64::new(0),
                audit: Arc::new(MemoryAuditLog::default()),
                sources: Mutex::default(),
            },
            refreshed,
        ))
    }

    /// The same knowledge base, reading questions in their conversation with `planners`.
    pub fn with_planners(mut self, planners: Planners) -> Self {
        self.planners = planners;
        self
    }

    /// The same knowledge base, counting answers' tokens with `counter` (the generator's
    /// tokenizer, or an estimate): the token limits of its settings apply and the counts are in
    /// every answer's trace and frame.
    pub fn with_token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.tokens = Some(counter);
        self
    }

    /// The same knowledge base, keeping the exact prompt of every answer attempt in the run's
    /// trace when `on` (`prompt_log`): it is then read, shown and swept with the trace, by
    /// whoever may see the trace.
    pub fn with_prompt_log(mut self, on: bool) -> Self {
        self.prompt_log = on;
        self
    }

    /// The same knowledge base, letting `judge` decide the support of answers' claims (after
    /// the rules' hard checks) and have the last word on write-backs.
    pub fn with_judge(mut self, judge: Option<Box<dyn Judge>>) -> Self {
        self.judge = judge;
        self
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock leaves the data as consistent as the last write.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The state to answer a caller from: first, at most once per [`FOLLOW_EVERY`], the catalog
    /// another process saved since ([`Store::follow`]), so replicas that serve one store kept
    /// on a server see each other's writes within that time. Skipped while this process
    /// writes (its writer has the catalog on record).
    pub(crate) fn current(&self) -> RwLockReadGuard<'_, Inner> {
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.followed_at.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= FOLLOW_EVERY.as_millis() as u64;
        if due
            && self
                .followed_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            && let Ok(_one_writer) = self.writer.try_lock()
        {
            let mut inner = self.write();
            match inner.store.follow() {
                Ok(true) => match served_docs(&inner.store, self.documents.as_deref()) {
                    Ok(docs) => inner.docs = docs,
                    Err(e) => {
                        tracing::warn!(target: "zhiku::store", "cannot list the documents another writer saved: {e}")
                    }
                },
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(target: "zhiku::store", "cannot check the catalog on record: {e}")
                }
            }
        }
        self.read()
    }

    /// Begins one write of the store ([`Store::begin_write`]): waits for the right to write
    /// holding the store for reading only (searches go on meanwhile; the caller holds the
    /// writer mutex, so no other write of this process runs); when another process saved since,
    /// the documents served are those of the catalog it saved.
    pub(crate) fn begin_write(&self) -> Result<WriteTurn, KbError> {
        let (turn, fresh) = self.read().store.take_turn()?;
        if let Some(fresh) = fresh {
            let mut inner = self.write();
            inner.store.start_from(fresh);
            inner.docs = served_docs(&inner.store, self.documents.as_deref())?;
        }
        // A write killed midway elsewhere left the store unvouched: check it chunk by chunk
        // first, holding it for reading (searches go on), and repair it from what that check
        // listed only when it finds something (searches wait for that, once after such a
        // crash). The turn keeps every other writer out in between.
        let checked = self.read().store.check_if_unvouched()?;
        if let Some(checked) = checked {
            let mut inner = self.write();
            let repair = inner.store.repair_checked(checked)?;
            if repair.orphans_removed > 0 || !repair.docs_requeued.is_empty() {
                tracing::warn!(
                    target: "zhiku::store",
                    orphans_removed = repair.orphans_removed,
                    docs_requeued = ?repair.docs_requeued,
                    "repaired what an unfinished write left"
                );
                inner.docs = served_docs(&inner.store, self.documents.as_deref())?;
            }
        }
        Ok(turn)
    }

    /// The bounds every transport applies to a query.
    pub fn limits(&self) -> QueryLimits {
        self.read().store.settings.limits
    }

    /// The local caller of this knowledge base's configuration.
    pub fn local_caller(&self) -> Caller {
        Caller::local(self.read().store.settings.trusted_scopes.clone())
    }

    /// The document store of the origin the store recorded; an error when nothing was
    /// indexed yet.
    pub(crate) fn recorded_documents(&self) -> Result<&dyn DocumentStore> {
        self.documents
            .as_deref()
            .ok_or_else(|| anyhow!("the store is empty: run zhiku index first"))
    }

    fn source<'a>(
        &'a self,
        store: &'a Store,
    ) -> Result<Box<dyn zhiku_domain::ports::SourceStore + 'a>> {
        Ok(self
            .recorded_documents()?
            .source_store(store.source_paths()))
    }

    /// `answerer`, reading questions in their conversation with this knowledge base's
    /// planners and synonyms, and counting tokens with its counter.
    pub(crate) fn as_configured<'a>(&'a self, mut answerer: Answerer<'a>) -> Answerer<'a> {
        answerer = answerer.with_prompt_log(self.prompt_log);
        if let Some(counter) = &self.tokens {
            answerer = answerer.with_token_counter(counter.as_ref());
        }
        if let Some(planner) = &self.planners.primary {
            answerer = answerer.with_planner(planner.as_ref());
        }
        if let Some(fallback) = &self.planners.fallback {
            answerer = answerer.with_fallback_planner(fallback.as_ref());
        }
        answerer.with_synonyms(&self.planners.synonyms)
    }

    /// Searches within the caller's scopes.
    pub fn search(&self, caller: &Caller, q: &SearchQuery) -> Result<SearchResult, KbError> {
        let started = Instant::now();
        let filter = caller_filter(caller, &q.metadata, q.locale.as_deref())?;
        let inner = self.current();
        let store = &inner.store;
        let source = self.source(store)?;
        let retriever = store.retriever(source.as_ref());
        let bound = store
            .settings
            .limits
            .max_query_chars
            .max(q.query.chars().count());
        let expanded = self.planners.synonyms.expand_within(&q.query, bound);
        let request = RetrievalRequest {
            query: expanded.as_deref().unwrap_or(&q.query),
            filter: &filter,
            mode: q.mode,
            k: q.k.unwrap_or(store.settings.k),
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
        self.converse(caller, q, &[], trace_id, also)
    }

    /// Answers `q` as the next turn of a conversation whose earlier turns the caller holds
    /// and sends (`history`, oldest first; the service keeps none). The history is checked
    /// against [`MAX_HISTORY_TURNS`] and [`MAX_TURN_CHARS`]; it only ever shapes the
    /// retrieval query, never the caller's scopes.
    pub fn converse(
        &self,
        caller: &Caller,
        q: &SearchQuery,
        history: &[Turn],
        trace_id: &str,
        also: Option<&dyn TraceSink>,
    ) -> Result<AnswerFrame, KbError> {
        self.converse_sampled(caller, q, history, trace_id, also, Sampling::default())
    }

    /// [`converse`](Self::converse), with the model asked to sample as `sampling` says
    /// (temperature, answer length: the OpenAI-compatible endpoint's `temperature` and
    /// `max_tokens`).
    pub fn converse_sampled(
        &self,
        caller: &Caller,
        q: &SearchQuery,
        history: &[Turn],
        trace_id: &str,
        also: Option<&dyn TraceSink>,
        sampling: Sampling,
    ) -> Result<AnswerFrame, KbError> {
        check_history(history)?;
        let filter = caller_filter(caller, &q.metadata, q.locale.as_deref())?;
        let inner = self.current();
        let store = &inner.store;
        let source = self.source(store)?;
        let retriever = store.retriever(source.as_ref()).with_clock(&self.clock);
        let policy = store
            .settings
            .answer_policy(q.mode, q.k.unwrap_or(store.settings.k));
        let mut sinks: Vec<&dyn TraceSink> = vec![self.traces.as_ref()];
        if let Some(also) = also {
            sinks.push(also);
        }
        let tee = Tee(sinks);
        let tagged;
        let sink: &dyn TraceSink = match &q.request_id {
            Some(request_id) => {
                tagged = WithRequestId {
                    inner: &tee,
                    request_id,
                };
                &tagged
            }
            None => &tee,
        };
        let reader = self
            .documents
            .as_deref()
            .map(|d| DocumentReader::new(d, store.source_paths(), store.settings.policy));
        let mut answerer = Answerer::new(
            &retriever,
            self.generator.as_ref(),
            sink,
            &self.clock,
            policy,
        )
        .with_max_query_chars(store.settings.limits.max_query_chars)
        .with_sampling(sampling);
        if let Some(reader) = &reader {
            answerer = answerer.with_document_chunks(reader);
        }
        answerer = self.as_configured(answerer);
        if let Some(judge) = &self.judge {
            answerer = answerer.with_judge(judge.as_ref());
        }
        let result = answerer.converse(history, &q.query, &filter, trace_id);
        // A run that ended early (no `answer` event) is written too.
        self.traces.finish(trace_id);
        result.map_err(KbError::from).map(|mut frame| {
            describe_cards(&inner.docs, &mut frame.sources);
            frame
        })
    }

    /// The events of one answer run, when the caller may see every scope it searched.
    pub fn trace(&self, caller: &Caller, trace_id: &str) -> Result<Vec<StoredTraceEvent>, KbError> {
        let events = self
            .traces
            .read(trace_id)
            .map_err(|e| KbError::Internal(anyhow!("cannot read the trace: {e}")))?;
        let query = events.iter().find(|e| e.event.stage.name() == "query");
        let in_scopes = query
            .and_then(|e| e.event.stage.scopes())
            .is_some_and(|scopes| scopes.iter().all(|s| caller.sees(s)));
        // A person sees their own runs only: another's evidence may hold what they may not read.
        // An operator sees every run in their scopes.
        let theirs = match &caller.principal {
            None => true,
            Some(_) if caller.operator => true,
            Some(p) => query
                .and_then(|e| e.event.stage.readers())
                .is_some_and(|readers| {
                    readers
                        .iter()
                        .any(|r| r.as_str() == format!("user:{}", p.user()))
                }),
        };
        let allowed = in_scopes && theirs;
        if events.is_empty() || !allowed {
            return Err(Missing::Trace {
                id: trace_id.to_string(),
            }
            .into());
        }
        Ok(events)
    }

    /// Documents in the caller's scopes, by ID, from `offset`, at most `limit`.
    pub fn documents(&self, caller: &Caller, offset: usize, limit: usize) -> (Vec<DocInfo>, usize) {
        let inner = self.current();
        let visible: Vec<&DocInfo> = inner
            .docs
            .values()
            .filter(|d| caller.reads(&d.scope, &d.access))
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
        let id = DocId::new(id).map_err(|_| no_document(id))?;
        match inner.docs.get(&id) {
            Some(info) if caller.reads(&info.scope, &info.access) => Ok(info.clone()),
            Some(info) if caller.sees(&info.scope) => {
                denied(caller, &id);
                Err(no_document(id.as_str()))
            }
            _ => Err(no_document(id.as_str())),
        }
    }

    /// The document `id` as it reads now in its source, with its recorded path, when the
    /// caller may see it (by the index and by the source itself).
    pub(crate) fn visible_document(
        &self,
        inner: &Inner,
        caller: &Caller,
        id: &str,
    ) -> Result<(Document, String), KbError> {
        let info = self.visible_info(inner, caller, id)?;
        let (Some(documents), Some(rel)) =
            (&self.documents, inner.store.recorded.sources.get(&info.id))
        else {
            return Err(no_document(id));
        };
        let doc = documents
            .read(&info.id, rel)
            .map_err(|e| unreadable(id, e))?
            .ok_or_else(|| no_document(id))?;
        let a = doc.attributes();
        if doc.id() == &info.id && caller.sees(&a.scope) && !caller.reads(&a.scope, &a.access) {
            denied(caller, doc.id());
        }
        if doc.id() != &info.id || !caller.reads(&a.scope, &a.access) {
            return Err(no_document(id));
        }
        Ok((doc, rel.to_string()))
    }

    /// The file a document was read from, for a caller who may see the document: its bytes and
    /// its source path (a PDF opens at a cited page from it).
    pub fn original(&self, caller: &Caller, id: &str) -> Result<(Vec<u8>, String), KbError> {
        let inner = self.current();
        let (doc, rel) = self.visible_document(&inner, caller, id)?;
        let documents = self.documents.as_ref().ok_or_else(|| no_document(id))?;
        let bytes = documents
            .original(doc.id(), &rel)
            .map_err(|e| unreadable(id, e))?
            .ok_or_else(|| Missing::File { id: id.to_string() })?;
        Ok((bytes, rel))
    }

    /// The picture of page `page` (from 1) of the file a document was read from, turned `turn`
    /// clockwise quarter turns (as a citation's box says) and at most [`PAGE_PNG_SIDE`] pixels
    /// a side, as PNG, for a caller who may see the document: a picture's page, a scanned PDF
    /// page, or a PDF page with a text layer as PDFium draws it (without PDFium such a page has
    /// none, [`Missing::Page`]: open the PDF at it).
    pub fn page_png(
        &self,
        caller: &Caller,
        id: &str,
        page: u32,
        turn: u16,
    ) -> Result<Vec<u8>, KbError> {
        let inner = self.current();
        let (doc, rel) = self.visible_document(&inner, caller, id)?;
        let documents = self.documents.as_ref().ok_or_else(|| no_document(id))?;
        let missing = || Missing::Page {
            id: id.to_string(),
            page,
        };
        if page == 0 || doc.attributes().page_count.is_some_and(|n| page > n) {
            return Err(missing().into());
        }
        let request = PageRequest {
            page,
            turn: turn % 4,
            max_side: PAGE_PNG_SIDE,
        };
        documents
            .page_png(doc.id(), &rel, request)
            .map_err(|e| unreadable(id, e))?
            .ok_or_else(|| missing().into())
    }

    /// One document with its chunks, as it is now in the source.
    pub fn document(&self, caller: &Caller, id: &str) -> Result<DocumentView, KbError> {
        let inner = self.current();
        let (doc, _) = self.visible_document(&inner, caller, id)?;
        let a = doc.attributes();
        let entry = inner.store.recorded.catalog.docs.get(doc.id());
        Ok(DocumentView {
            indexed_at: entry.and_then(|e| e.indexed_at),
            expires_at: entry.and_then(|e| e.expires_at),
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
            chunks: chunk_document(&doc, &inner.store.settings.policy)
                .iter()
                .map(ChunkView::of)
                .collect(),
        })
    }

    /// Document `id` whole, or its section `section` with the subsections under it, in reading
    /// order, as it is now in the source, at most [`MAX_READ_CHARS`] characters. What the caller
    /// may not see is not found, exactly as for [`Self::document`].
    pub fn read_document(
        &self,
        caller: &Caller,
        id: &str,
        section: Option<&str>,
    ) -> Result<SectionView, KbError> {
        let inner = self.current();
        let (doc, _) = self.visible_document(&inner, caller, id)?;
        let section = section
            .map(|s| {
                SectionId::parse(s).map_err(|_| Missing::SectionId {
                    doc: id.to_string(),
                    given: s.to_string(),
                })
            })
            .transpose()?;
        let documents = self.documents.as_deref().ok_or_else(|| no_document(id))?;
        let reader = DocumentReader::new(
            documents,
            inner.store.source_paths(),
            inner.store.settings.policy,
        );
        let reading = reader.read(&doc, section.as_ref(), MAX_READ_CHARS)?;
        let a = doc.attributes();
        Ok(SectionView {
            doc_id: reading.doc_id.to_string(),
            title: a.title.to_string(),
            source: a.source.to_string(),
            scope: a.scope.to_string(),
            revision: reading.revision.to_string(),
            section: reading.section.to_string(),
            heading_path: reading.heading_path,
            chars: reading.text.chars().count(),
            text: reading.text,
            outline: reading.outline,
            chunks: reading.chunks.iter().map(ChunkView::of).collect(),
        })
    }

    /// A message never shows the server's absolute path of the knowledge base.
    pub(crate) fn without_paths(&self, e: KbError) -> KbError {
        let Some(root) = self.documents.as_ref().and_then(|d| d.root()) else {
            return e;
        };
        let mut roots = vec![root.display().to_string()];
        if let Ok(real) = root.canonicalize() {
            roots.push(real.display().to_string());
        }
        e.without(&roots)
    }

    pub(crate) fn writable(&self, change: Change) -> Result<&dyn DocumentStore, KbError> {
        match &self.documents {
            Some(d) if d.capabilities().writable => Ok(d.as_ref()),
            _ => Err(crate::error::Conflict::NotWritable { change }.into()),
        }
    }

    /// Removes a document from both indexes and from the document store (a folder: its file,
    /// and its sidecar unless another document shares it). Document, indexes and catalog
    /// change together: the file is first moved aside, and put back if the indexes or the
    /// catalog cannot be changed.
    pub fn delete_document(&self, caller: &Caller, id: &str) -> Result<IndexReport, KbError> {
        self.delete_inner(caller, id)
            .map_err(|e| self.without_paths(e))
    }

    fn delete_inner(&self, caller: &Caller, id: &str) -> Result<IndexReport, KbError> {
        if !caller.write {
            return Err(Forbidden::WriteRight {
                caller: caller.name.clone(),
                act: Act::Delete,
            }
            .into());
        }
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let turn = self.begin_write()?;
        let mut inner = self.write();
        let info = self.visible_info(&inner, caller, id)?;
        let documents = self.writable(Change::Remove)?;
        let report = remove_recorded(&mut inner.store, documents, &info.id)?;
        inner.docs.remove(&info.id);
        turn.finish();
        Ok(report)
    }

    /// Runs the retention sweep over the caller's scopes now ([`crate::retention`]): removes
    /// their expired documents and, in a scope with a cap, the oldest beyond it, each through
    /// the delete path. Needs the write right and a writable document store.
    pub fn sweep(&self, caller: &Caller) -> Result<SweepReport, KbError> {
        if !caller.write {
            return Err(Forbidden::WriteRight {
                caller: caller.name.clone(),
                act: Act::Remove,
            }
            .into());
        }
        self.sweep_scopes(&|s| caller.sees(s))
    }

    /// Runs the retention sweep over every scope now, for the service itself (`serve`'s
    /// scheduled sweep), not for a caller: the same removals as [`sweep`](Self::sweep) by a
    /// caller who sees every scope.
    pub fn sweep_all(&self) -> Result<SweepReport, KbError> {
        self.sweep_scopes(&|_| true)
    }

    /// The retention sweep over the scopes `sees` admits, under the one-writer lock.
    fn sweep_scopes(&self, sees: &dyn Fn(&Scope) -> bool) -> Result<SweepReport, KbError> {
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let documents = self.writable(Change::Sweep)?;
        let turn = self.begin_write()?;
        let mut inner = self.write();
        let swept = crate::retention::sweep(&mut inner.store, documents, sees);
        // What was removed before a failure stays removed: serve what the catalog lists.
        let Inner { store, docs } = &mut *inner;
        docs.retain(|id, _| store.recorded.catalog.docs.contains_key(id));
        let swept = swept.map_err(|e| self.without_paths(e))?;
        turn.finish();
        Ok(swept)
    }

    /// Brings the served store up to date with its document store now, as `zhiku index` does
    /// (what a sync copied into the folder, what changed there): files whose stamps are
    /// unchanged are not read, and the files that changed are read (extracted in the workers)
    /// before the store is held for writing, so searches go on meanwhile; then both indexes
    /// and the catalog change together and the retention sweep runs. For the service itself
    /// (a scheduled sync), not for a caller: no scope applies.
    pub fn refresh(&self) -> Result<Refreshed, KbError> {
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let documents = self.recorded_documents()?;
        let turn = self.begin_write()?;
        let (origin, known) = {
            let inner = self.read();
            let Some(origin) = inner.store.recorded.origin.clone() else {
                return Err(anyhow!("the store is empty: run zhiku index first").into());
            };
            crate::refresh::settle(&inner.store, documents);
            let known = crate::refresh::known_files(&inner.store, &origin);
            (origin, known)
        };
        let loaded = documents
            .load_changed(&known)
            .map_err(|e| KbError::Internal(anyhow!(e)))?;
        let mut inner = self.write();
        let indexed = index_loaded(&mut inner.store, origin, loaded, &mut |_| {});
        let swept = indexed.and_then(|mut refreshed| {
            let swept = crate::retention::sweep_store(&mut inner.store, documents)?;
            refreshed.docs = refreshed.docs.saturating_sub(swept.removed.len());
            refreshed.report += &swept.report;
            refreshed.swept = swept.removed;
            Ok(refreshed)
        });
        // Whatever committed before a failure is served.
        let Inner { store, docs } = &mut *inner;
        *docs = served_docs(store, Some(documents))?;
        let refreshed = swept.map_err(|e| self.without_paths(KbError::Internal(e)))?;
        turn.finish();
        Ok(refreshed)
    }

    /// Brings what the indexes derive from their commits up to the last one (the vector graph's
    /// snapshot), so the next open of the store replays nothing: for a server that stops
    /// cleanly after ingests. It waits for a running write; a read-only service has nothing
    /// to do, and nothing any search returns changes.
    pub fn checkpoint(&self) -> Result<(), KbError> {
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let inner = self.read();
        if inner.store.is_read_only() {
            return Ok(());
        }
        if let Some((_, vectors)) = &inner.store.dense {
            vectors.checkpoint().map_err(|e| Unavailable::Step {
                step: Step::Checkpoint,
                reason: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// The state of the knowledge base as the caller may see it.
    pub fn status(&self, caller: &Caller) -> Status {
        let inner = self.current();
        let store = &inner.store;
        let visible: Vec<&DocInfo> = inner
            .docs
            .values()
            .filter(|d| caller.reads(&d.scope, &d.access))
            .collect();
        let chunks = visible
            .iter()
            .filter_map(|d| store.recorded.catalog.docs.get(&d.id))
            .map(|e| e.chunk_ids.len())
            .sum();
        Status {
            documents: visible.len(),
            chunks,
            scopes: caller.scopes.iter().map(|s| s.to_string()).collect(),
            write: caller.write,
            profile: store.settings.profile.clone(),
            adapters: store.picked.iter().cloned().collect(),
            embedding_space: store
                .dense
                .as_ref()
                .map(|(e, _)| e.space().identity().to_string()),
            dense_notice: store.dense_notice.clone(),
            generator: self.generator.identity(),
            origin: store
                .recorded
                .origin
                .as_ref()
                .map(|_| self.documents.as_ref())
                .and_then(|d| d.map(|d| d.capabilities().adapter.to_string())),
            uptime_s: self.started.elapsed().as_secs(),
        }
    }

    /// Records what a sync of a source did (or that one is running), for the operator.
    pub fn report_source(&self, status: SourceStatus) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(status.name.clone(), status);
    }

    /// The synced sources as their syncs last reported: for the operator's metrics only.
    pub fn sources(&self) -> Vec<SourceStatus> {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
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
                .recorded
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

/// Every document the catalog holds, as the catalog describes it. Documents of a catalog
/// written before descriptions were kept are described by loading `documents` once (the next
/// refresh records their descriptions); without `documents` they are not served.
fn served_docs(
    store: &Store,
    documents: Option<&dyn DocumentStore>,
) -> Result<BTreeMap<DocId, DocInfo>> {
    let catalog = &store.recorded.catalog;
    let mut docs: BTreeMap<DocId, DocInfo> = catalog
        .docs
        .iter()
        .filter_map(|(id, entry)| Some((id.clone(), DocInfo::indexed(id, entry)?)))
        .collect();
    if docs.len() < catalog.docs.len()
        && let Some(documents) = documents
    {
        for doc in documents.load_all()?.documents {
            if catalog.docs.contains_key(doc.id()) && !docs.contains_key(doc.id()) {
                docs.insert(doc.id().clone(), DocInfo::of(&doc));
            }
        }
    }
    Ok(docs)
}

/// Each source card with what the catalog knows of its document: when it was indexed, and the
/// title and source of a document only known as changed since.
fn describe_cards(docs: &BTreeMap<DocId, DocInfo>, cards: &mut [SourceCard]) {
    for card in cards {
        let Some(doc) = docs.get(&card.doc_id) else {
            continue;
        };
        card.indexed_at = doc.indexed_at;
        if card.title.is_empty() {
            card.title = doc.title.clone();
        }
        if card.source.is_empty() {
            card.source = doc.source.clone();
        }
    }
}

/// The most earlier turns one request may carry.
pub const MAX_HISTORY_TURNS: usize = 100;

/// The most characters of one turn's question, answer or rewrite.
pub const MAX_TURN_CHARS: usize = 20_000;

/// Refuses a history too long to be a conversation.
fn check_history(history: &[Turn]) -> Result<(), KbError> {
    if history.len() > MAX_HISTORY_TURNS {
        return Err(Invalid::Turns {
            within: Conversation::History,
            given: history.len(),
            limit: MAX_HISTORY_TURNS,
        }
        .into());
    }
    for (i, t) in history.iter().enumerate() {
        for (part, text) in [
            (TurnPart::Question, t.question.as_str()),
            (TurnPart::Answer, t.answer.as_str()),
            (
                TurnPart::Rewritten,
                t.rewritten.as_deref().unwrap_or_default(),
            ),
        ] {
            let n = text.chars().count();
            if n > MAX_TURN_CHARS {
                return Err(Invalid::TurnText {
                    within: Conversation::History,
                    turn: i,
                    part,
                    chars: n,
                    limit: MAX_TURN_CHARS,
                }
                .into());
            }
        }
    }
    Ok(())
}
