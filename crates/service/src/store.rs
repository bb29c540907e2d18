//! The opened ports of one knowledge base, and the one step every writer ends with.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use zhiku_domain::ports::{
    CatalogCounts, CatalogError, CatalogStore, Changed, Embedder, Generations, LexicalIndex,
    Reranker, SourceError, SourcePaths, SourceStore, StoredCatalog, VectorIndex, WallClock,
    WriteTurn,
};
use zhiku_domain::rules::budget::RetrievalBudget;
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::rules::fusion::FusionConfig;
use zhiku_domain::usecases::{AnswerPolicy, Indexer, RetrievalMode, Retriever};
use zhiku_domain::{ChunkingPolicy, Scope};
use zhiku_domain::{DocId, Timestamp};

use crate::{QueryLimits, SystemWallClock};

/// The dense route: the embedder and the vector index of its space.
pub type Dense = (Box<dyn Embedder>, Arc<dyn VectorIndex>);

/// What the configuration decides for the service, parsed once.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The profile's name, for `status`.
    pub profile: String,
    /// How documents are cut into chunks.
    pub policy: ChunkingPolicy,
    /// The scopes the local user may read.
    pub trusted_scopes: Vec<Scope>,
    /// Evidence per search when the caller does not say.
    pub k: usize,
    /// Candidates each route returns before fusion.
    pub candidates: usize,
    /// How the routes are fused.
    pub fusion: FusionConfig,
    /// How much evidence in the question's language is preferred (0: not at all).
    pub locale_boost: f64,
    /// Candidates the reranker scores, when there is one.
    pub rerank_depth: usize,
    /// What an answer's context may hold.
    pub context: RetrievalBudget,
    /// Generation attempts before an answer run ends `blocked`.
    pub ask_attempts: u32,
    /// What of the documents around the evidence an answer's context holds.
    pub answer_context: ContextPolicy,
    /// Limits in tokens on an answer's context, the history its planner reads and the answer
    /// (applied when the knowledge base counts tokens).
    pub tokens: zhiku_domain::rules::budget::TokenBudget,
    /// Documents per step of a refresh: chunked, embedded, written to both indexes and
    /// recorded in the catalog together, so memory stays bounded and a killed build keeps the
    /// steps it finished.
    pub index_batch: usize,
    /// The bounds of a query every transport applies.
    pub limits: QueryLimits,
    /// The most documents a scope keeps (`scope_caps`): a sweep evicts the oldest beyond it.
    pub scope_caps: BTreeMap<Scope, usize>,
    /// Who may read a document that names no readers itself (folder rules, scope defaults).
    pub access: crate::AccessPolicy,
    /// How an agent's write-back is judged (`write_back_*`).
    pub write_back: WriteBackPolicy,
}

/// What a write-back does with a duplicate of a document already in its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DuplicatePolicy {
    /// Refuse it (exact and near duplicates alike).
    #[default]
    Refuse,
    /// An exact duplicate is skipped (nothing written); a near duplicate replaces the text of
    /// the document it duplicates (an update of that document, at its path).
    Merge,
}

/// How an agent's write-back is judged ([`zhiku_domain::rules::writeback`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteBackPolicy {
    /// Refuse or merge duplicates.
    pub duplicates: DuplicatePolicy,
    /// The Jaccard similarity of 5-character shingles from which a text is a near duplicate.
    pub near_duplicate: f64,
    /// The least letters and digits a write holds.
    pub min_chars: usize,
}

impl Default for WriteBackPolicy {
    fn default() -> Self {
        Self {
            duplicates: DuplicatePolicy::Refuse,
            near_duplicate: zhiku_domain::rules::writeback::NEAR_DUPLICATE,
            min_chars: zhiku_domain::rules::writeback::MIN_CHARS,
        }
    }
}

impl Settings {
    /// The answer policy for `mode` and `k` pieces of evidence.
    pub fn answer_policy(&self, mode: RetrievalMode, k: usize) -> AnswerPolicy {
        AnswerPolicy {
            mode,
            k,
            budget: self.context,
            context: self.answer_context,
            max_attempts: self.ask_attempts,
            tokens: self.tokens,
        }
    }

    /// `routes` ranked as configured: [`Self::candidates`] from each route, fused by
    /// [`Self::fusion`], evidence in the question's language preferred by
    /// [`Self::locale_boost`], and the top [`Self::rerank_depth`] reranked by `reranker`.
    pub(crate) fn rank<'a>(
        &self,
        routes: Retriever<'a>,
        reranker: Option<&'a dyn Reranker>,
    ) -> Retriever<'a> {
        let r = routes
            .with_candidates(self.candidates)
            .with_fusion(self.fusion.clone())
            .with_locale_boost(self.locale_boost);
        match reranker {
            Some(reranker) => r.with_reranker(reranker, self.rerank_depth),
            None => r,
        }
    }
}

/// The ports of one knowledge base as the composition root opened them, and the catalog it
/// loaded: what a [`Store`] is made of.
pub struct Parts {
    /// What the configuration decides.
    pub settings: Settings,
    /// The lexical route.
    pub lexical: Arc<dyn LexicalIndex>,
    /// The dense route, when there is one.
    pub dense: Option<Dense>,
    /// Why the dense route is missing, when it is.
    pub dense_notice: Option<String>,
    /// The adapters picked and why (`port`, `choice`), for `status`.
    pub picked: Vec<(String, String)>,
    /// The catalog as last saved (only its header for [`Store::header_only`]).
    pub recorded: StoredCatalog,
    /// Where the catalog is saved.
    pub catalog_store: Box<dyn CatalogStore>,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("picked", &self.picked)
            .field("documents", &self.recorded.catalog.docs.len())
            .finish_non_exhaustive()
    }
}

/// Lists the files in the lexical index's folder that its committed state does not reference
/// (left by a writer killed mid-commit, or a running writer's work in progress), without
/// touching them: what a read-only check reports ([`Store::problems`]).
pub type StrayFiles = Box<dyn Fn() -> Result<Vec<String>> + Send + Sync>;

/// One knowledge base's ports, with its catalog in memory.
///
/// The catalog (`recorded`) changes only through [`Store::commit`] or [`Store::commit_catalog`],
/// after both indexes committed: the catalog is saved last, and the copy in memory keeps a
/// change only once it is saved.
pub struct Store {
    /// What the configuration decides.
    pub settings: Settings,
    /// The lexical route.
    pub lexical: Arc<dyn LexicalIndex>,
    /// The dense route, when there is one.
    pub dense: Option<Dense>,
    /// Why the dense route is missing, when it is.
    pub dense_notice: Option<String>,
    /// The reranker between fusion and the budget, when one is configured.
    pub reranker: Option<Box<dyn Reranker>>,
    /// The adapters the composition root picked and why (`port`, `choice`), for `status`.
    pub picked: Vec<(String, String)>,
    /// The catalog as last saved; only its header when opened to answer queries (see
    /// [`Store::header_only`]).
    pub recorded: StoredCatalog,
    catalog_store: Box<dyn CatalogStore>,
    read_only: bool,
    /// Set when only the catalog's header was loaded: what its rows hold, counted.
    header_only: Option<CatalogCounts>,
    /// Lists the lexical index's unreferenced files, when its adapter keeps it in a folder.
    stray_files: Option<StrayFiles>,
    /// What time it is, for expiry (the system's clock unless a test stops it).
    wall_clock: Arc<dyn WallClock>,
    /// What the composition root holds for as long as the store is open (the writer lock).
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("picked", &self.picked)
            .field("documents", &self.recorded.catalog.docs.len())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// A store over `parts` that writes: its indexes and catalog were opened for writing, and
    /// the composition root holds the store lock ([`Store::holding`]) where there is one.
    pub fn writing(parts: Parts) -> Self {
        Self::of(parts, false)
    }

    /// A store over `parts` that only reads the last committed state: nothing is written, and
    /// it is never repaired.
    pub fn read_only(parts: Parts) -> Self {
        Self::of(parts, true)
    }

    fn of(parts: Parts, read_only: bool) -> Self {
        let Parts {
            settings,
            lexical,
            dense,
            dense_notice,
            picked,
            recorded,
            catalog_store,
        } = parts;
        Self {
            settings,
            lexical,
            dense,
            dense_notice,
            reranker: None,
            picked,
            recorded,
            catalog_store,
            read_only,
            header_only: None,
            stray_files: None,
            wall_clock: Arc::new(SystemWallClock),
            _held: None,
        }
    }

    /// Tells the time by `clock` from now on (for expiry: what is indexed records its time,
    /// what is retrieved is judged at it); the system's clock unless a test stops it.
    pub fn set_wall_clock(&mut self, clock: Arc<dyn WallClock>) {
        self.wall_clock = clock;
    }

    /// The time now, by the store's wall clock.
    pub fn now_utc(&self) -> Timestamp {
        self.wall_clock.now_utc()
    }

    /// The same store, reranking with `reranker` (its depth is [`Settings::rerank_depth`]).
    pub fn with_reranker(mut self, reranker: Box<dyn Reranker>) -> Self {
        self.reranker = Some(reranker);
        self
    }

    /// The same read-only store, marked as holding only the catalog's header (its document
    /// rows were not loaded; `counts` says what they hold): a process that answers queries
    /// looks up the source paths of the documents it checks instead ([`Store::source_paths`]).
    pub fn header_only(mut self, counts: CatalogCounts) -> Self {
        debug_assert!(self.read_only, "a writer needs the catalog's rows");
        self.header_only = Some(counts);
        self
    }

    /// The numbers of documents and chunks the catalog lists.
    pub fn counts(&self) -> CatalogCounts {
        self.header_only
            .unwrap_or_else(|| CatalogCounts::of(&self.recorded.catalog))
    }

    /// Each indexed document's recorded source path: the catalog in memory, or, when only its
    /// header is, one lookup per document in the catalog store (see the `SourcePaths` impl).
    pub fn source_paths(&self) -> &dyn SourcePaths {
        self
    }

    /// The same store, keeping `held` (a lock) until it is dropped.
    pub fn holding(mut self, held: impl std::any::Any + Send + Sync) -> Self {
        self._held = Some(Box::new(held));
        self
    }

    /// The same store, listing its lexical index's unreferenced files with `list` (for an index
    /// kept in a folder).
    pub fn listing_stray_files(mut self, list: StrayFiles) -> Self {
        self.stray_files = Some(list);
        self
    }

    /// The lexical index's unreferenced files now; none when its adapter keeps no folder.
    pub(crate) fn stray_files(&self) -> Result<Vec<String>> {
        self.stray_files
            .as_ref()
            .map_or(Ok(Vec::new()), |list| list())
    }

    /// True when opened for reading only: nothing is written.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Saves `next` as the catalog, then makes it the one in memory: the last step of every
    /// write, after both indexes committed. When the save fails, the catalog in memory stays
    /// the one on record.
    /// The catalog is saved with the indexes' generations of this moment (they committed).
    pub fn commit_catalog(&mut self, mut next: StoredCatalog) -> Result<(), CatalogError> {
        next.generations = self.generations();
        self.catalog_store.save(&next)?;
        self.recorded = next;
        Ok(())
    }

    /// The indexes' commit generations now; `None` for a route that keeps none or cannot say
    /// (which makes the next open check chunk by chunk).
    pub fn generations(&self) -> Generations {
        Generations {
            lexical: self.lexical.generation().ok().flatten(),
            vectors: self
                .dense
                .as_ref()
                .and_then(|(_, v)| v.generation().ok().flatten()),
        }
    }

    /// True when the indexes still carry the generations recorded with the catalog: nothing
    /// committed to them since the catalog was saved, so they hold what it lists.
    pub fn generations_match(&self) -> bool {
        let (recorded, now) = (&self.recorded.generations, self.generations());
        match self.dense {
            Some(_) => recorded.vouch_for(&now),
            None => recorded.vouch_for_lexical(&now),
        }
    }

    /// Changes the catalog in memory by `edit` (which records what it touched), then saves
    /// it, writing only what was touched where the catalog store can: the last step of every
    /// write, after both indexes committed. Costs what changed, not the size of the catalog.
    /// When the save fails, the catalog in memory is put back as it was on record.
    /// The catalog is saved with the indexes' generations of this moment (they committed).
    pub fn commit(
        &mut self,
        edit: impl FnOnce(&mut StoredCatalog, &mut Changed),
    ) -> Result<(), CatalogError> {
        let mut changed = Changed::default();
        let (origin, generations) = (self.recorded.origin.clone(), self.recorded.generations);
        edit(&mut self.recorded, &mut changed);
        self.recorded.generations = self.generations();
        if let Err(e) = self.catalog_store.save_changed(&self.recorded, &changed) {
            self.recorded.revert(changed);
            (self.recorded.origin, self.recorded.generations) = (origin, generations);
            return Err(e);
        }
        Ok(())
    }

    /// Begins one write (an index run, a put, a delete, a sweep, a repair): takes the right
    /// to write from the catalog store ([`CatalogStore::begin_write`]; several processes may
    /// write a store kept on a server) and, when another process saved since, takes the catalog
    /// on record as the one in memory, so the write starts from it. Hold the turn for the whole
    /// write and [finish](WriteTurn::finish) it once the write completed. A read-only store
    /// takes nothing.
    pub fn begin_write(&mut self) -> Result<WriteTurn, CatalogError> {
        let (turn, fresh) = self.take_turn()?;
        if let Some(fresh) = fresh {
            self.start_from(fresh);
        }
        Ok(turn)
    }

    /// Whether the catalog store saw every earlier write of every process finish
    /// ([`CatalogStore::earlier_turns_finished`]; `None`: it cannot tell).
    pub fn earlier_writes_finished(&self) -> Option<bool> {
        self.catalog_store.earlier_turns_finished()
    }

    /// Tells the catalog store that this turn checked the indexes chunk by chunk against the
    /// catalog ([`CatalogStore::vouch_consistent`]).
    pub fn vouch_consistent(&self) {
        self.catalog_store.vouch_consistent();
    }

    /// The first half of [`Self::begin_write`], which only reads the store: takes the right to
    /// write (waiting while another process holds it) and returns the catalog on record when
    /// another process saved since. A service waits here without holding its store for
    /// writing, so its searches go on meanwhile.
    pub fn take_turn(&self) -> Result<(WriteTurn, Option<StoredCatalog>), CatalogError> {
        if self.read_only {
            return Ok((WriteTurn::default(), None));
        }
        self.catalog_store.begin_write()
    }

    /// The second half of [`Self::begin_write`]: makes `fresh` (the catalog
    /// [`Self::take_turn`] returned) the catalog in memory.
    pub fn start_from(&mut self, fresh: StoredCatalog) {
        self.recorded = fresh;
    }

    /// Takes the catalog another process saved since this store last loaded or saved one
    /// ([`CatalogStore::moved`]) as the one in memory; true when it did. A store holding only
    /// the catalog's header looks documents up as it goes and has nothing to follow.
    pub fn follow(&mut self) -> Result<bool, CatalogError> {
        if self.header_only.is_some() {
            return Ok(false);
        }
        match self.catalog_store.moved()? {
            Some(fresh) => {
                self.start_from(fresh);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Saves the catalog in memory as it is.
    pub fn save_catalog(&self) -> Result<(), CatalogError> {
        self.catalog_store.save(&self.recorded)
    }

    /// The catalog as stored now (a writer beside this reader may have saved since).
    pub fn load_catalog(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        self.catalog_store.load()
    }

    /// An indexer over this store's routes, recording the time now as its documents'
    /// indexing time.
    pub fn indexer(&self) -> Result<Indexer<'_>> {
        let policy = self.settings.policy;
        let now = self.now_utc();
        Ok(match &self.dense {
            Some((embedder, vectors)) => Indexer::hybrid(
                policy,
                embedder.as_ref(),
                vectors.as_ref(),
                self.lexical.as_ref(),
            )?,
            None => Indexer::lexical_only(policy, self.lexical.as_ref()),
        }
        .at(now))
    }

    /// A retriever over this store's routes, checking hits against `source` and their expiry
    /// against the time now.
    pub fn retriever<'a>(&'a self, source: &'a dyn SourceStore) -> Retriever<'a> {
        let routes = Retriever::new(source)
            .at(self.now_utc())
            .with_lexical(self.lexical.as_ref());
        let r = self.settings.rank(routes, self.reranker.as_deref());
        match &self.dense {
            Some((embedder, vectors)) => r.with_dense(embedder.as_ref(), vectors.as_ref()),
            None => r.without_dense(
                self.dense_notice
                    .clone()
                    .unwrap_or_else(|| "no embedder".into()),
            ),
        }
    }
}

/// A store answers from its catalog in memory; a header-only one looks paths up in its catalog
/// store.
impl SourcePaths for Store {
    fn path_of(&self, doc: &DocId) -> Result<Option<String>, SourceError> {
        if self.header_only.is_none() {
            return self.recorded.sources.path_of(doc);
        }
        self.catalog_store
            .source_paths(std::slice::from_ref(doc))
            .map(|mut found| found.remove(doc))
            .map_err(|e| SourceError::Unavailable {
                adapter: "catalog",
                message: format!("cannot read the recorded source path of {doc}: {e}"),
            })
    }
}
