//! Hybrid retrieval: routes, fusion, revision re-check, budget.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::contracts::{Chunk, ChunkId, DocId, EmbeddingSpace, Filter, Locale, Timestamp};
use crate::ports::{
    Clock, Embedder, FrozenClock, LexicalIndex, RerankCandidate, RerankError, Reranker,
    ScoredChunk, SourceError, SourceRecord, SourceStore, VectorIndex, elapsed_ms,
};
use crate::rules::budget::RetrievalBudget;
use crate::rules::fusion::{Fused, FusionConfig, Route, RouteList, fuse};
use crate::rules::revision::{self, DropReason};

/// Which routes a retrieval uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RetrievalMode {
    /// Dense and lexical, fused.
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Vectors only.
    Dense,
}

impl RetrievalMode {
    /// `hybrid`, `lexical` or `dense`, as the mode is written in requests and traces.
    pub fn code(self) -> &'static str {
        match self {
            Self::Hybrid => "hybrid",
            Self::Lexical => "lexical",
            Self::Dense => "dense",
        }
    }

    fn wants(self, route: Route) -> bool {
        matches!(
            (self, route),
            (Self::Hybrid, _) | (Self::Lexical, Route::Lexical) | (Self::Dense, Route::Dense)
        )
    }
}

/// One retrieval.
#[derive(Debug, Clone)]
pub struct RetrievalRequest<'q> {
    /// The query text.
    pub query: &'q str,
    /// The trusted filter, from the caller's identity.
    pub filter: &'q Filter,
    /// Routes to use.
    pub mode: RetrievalMode,
    /// Evidence wanted after fusion and the revision check.
    pub k: usize,
    /// Limits on what is kept of the top `k`, when the evidence feeds a context.
    pub budget: Option<RetrievalBudget>,
}

/// How a route fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RouteStatus {
    /// The route ran and returned this many candidates.
    Ran {
        /// Candidates returned.
        hits: usize,
    },
    /// The route could not run.
    Unavailable {
        /// Why, in words.
        reason: String,
    },
    /// The mode did not ask for the route.
    NotRequested,
}

/// A route and its status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteReport {
    /// The route.
    pub route: Route,
    /// What happened.
    #[serde(flatten)]
    pub status: RouteStatus,
}

/// One route's view of a piece of evidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RouteHit {
    /// The route.
    pub route: Route,
    /// 1-based rank within the route.
    pub rank: usize,
    /// The route's own score.
    pub score: f32,
}

/// A retrieved chunk that survived the revision check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The chunk.
    #[serde(skip)]
    pub chunk: Chunk,
    /// Its ID (for serialisation).
    pub chunk_id: ChunkId,
    /// 1-based rank after fusion and checks.
    pub rank: usize,
    /// The fused score.
    pub score: f64,
    /// Which routes found it.
    pub routes: Vec<RouteHit>,
}

/// A retrieved chunk removed by the revision check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its document.
    pub doc_id: DocId,
    /// Why.
    #[serde(flatten)]
    pub reason: DropReason,
}

/// The outcome of a retrieval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retrieval {
    /// Evidence in rank order.
    pub evidence: Vec<Evidence>,
    /// Hits dropped by the revision check.
    pub dropped: Vec<Dropped>,
    /// Evidence left out by the budget, whole.
    pub budget_dropped: Vec<ChunkId>,
    /// Evidence read by OCR left out because a text layer's chunk among the evidence says the
    /// same ([`rules::ocr::ocr_twins`](crate::rules::ocr::ocr_twins)).
    pub ocr_twins: Vec<ChunkId>,
    /// True when the budget left anything out.
    pub truncated: bool,
    /// Each route's status.
    pub routes: Vec<RouteReport>,
    /// Candidates per route before fusion.
    pub candidates: BTreeMap<Route, Vec<(ChunkId, f32)>>,
    /// What the reranker did, when one is configured.
    pub rerank: Option<RerankReport>,
    /// How long each stage took, in order: `retrieval.dense`, `retrieval.lexical`, `fusion`,
    /// `revision_check`, `rerank` (with a reranker), `budget` (zero without a clock).
    pub timings: Vec<StageTiming>,
}

/// How the reranking of a retrieval fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankReport {
    /// The reranker ([`Reranker::name`]).
    pub reranker: String,
    /// `ran` with the number of candidates scored, or `unavailable` with the reason (the
    /// fused order was kept).
    #[serde(flatten)]
    pub status: RouteStatus,
    /// The reranker's score of each candidate it scored, in the new order, with the fused rank
    /// the candidate had.
    pub scores: Vec<RerankedEntry>,
}

/// One candidate's reranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankedEntry {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The reranker's score.
    pub score: f64,
    /// 1-based rank after fusion, before reranking.
    pub fused_rank: usize,
}

/// The duration of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTiming {
    /// The stage name.
    pub stage: String,
    /// Milliseconds.
    pub ms: f64,
}

impl Retrieval {
    /// The routes that ran.
    pub fn routes_ran(&self) -> Vec<Route> {
        self.routes
            .iter()
            .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
            .map(|r| r.route)
            .collect()
    }
}

/// Why a retrieval could not run at all. "Nothing relevant" is not an error: it is an empty
/// [`Retrieval`].
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// No requested route could run.
    #[error("cannot retrieve: {}", describe(.routes))]
    CannotRetrieve {
        /// Each route's status.
        routes: Vec<RouteReport>,
    },
    /// The revision check could not read the source.
    #[error("cannot check retrieved evidence against the source: {0}")]
    Source(#[from] SourceError),
    /// The request is malformed.
    #[error("invalid retrieval request: {0}")]
    InvalidInput(String),
}

fn describe(routes: &[RouteReport]) -> String {
    routes
        .iter()
        .map(|r| match &r.status {
            RouteStatus::Unavailable { reason } => {
                format!("{} route unavailable ({reason})", r.route)
            }
            RouteStatus::NotRequested => format!("{} route not requested", r.route),
            RouteStatus::Ran { hits } => format!("{} route ran ({hits} hits)", r.route),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs dense and lexical routes with the same trusted filter, fuses the lists ([`fuse`]: the
/// dense floor, then the method), drops hits the source no longer backs, and applies the
/// budget.
pub struct Retriever<'a> {
    dense: Option<(&'a dyn Embedder, &'a dyn VectorIndex)>,
    dense_missing: Option<String>,
    lexical: Option<&'a dyn LexicalIndex>,
    reranker: Option<(&'a dyn Reranker, usize)>,
    locale_boost: f64,
    source: &'a dyn SourceStore,
    fusion: FusionConfig,
    candidates: usize,
    clock: &'a dyn Clock,
    now: Option<Timestamp>,
}

impl std::fmt::Debug for Retriever<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retriever")
            .field("dense", &self.dense.is_some())
            .field("lexical", &self.lexical.is_some())
            .field(
                "reranker",
                &self.reranker.map(|(r, depth)| (r.name(), depth)),
            )
            .field("fusion", &self.fusion)
            .field("candidates", &self.candidates)
            .finish()
    }
}

impl<'a> Retriever<'a> {
    /// A retriever with no routes yet, checking hits against `source`.
    pub fn new(source: &'a dyn SourceStore) -> Self {
        Self {
            dense: None,
            dense_missing: Some("no embedder is configured".into()),
            lexical: None,
            reranker: None,
            locale_boost: 0.0,
            source,
            fusion: FusionConfig::default(),
            candidates: 50,
            clock: &FrozenClock,
            now: None,
        }
    }

    /// Judges expiry at `now`: a hit whose document expired by then is dropped as
    /// [`DropReason::Expired`] in the revision check. Without it nothing is judged expired (a
    /// service always gives the time of its wall clock).
    pub fn at(mut self, now: Timestamp) -> Self {
        self.now = Some(now);
        self
    }

    /// Times each stage with `clock` (reported in [`Retrieval::timings`]).
    pub fn with_clock(mut self, clock: &'a dyn Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The space of the dense route's query vectors, when the route is configured.
    pub fn dense_space(&self) -> Option<&EmbeddingSpace> {
        self.dense.map(|(embedder, _)| embedder.space())
    }

    /// The fusion parameters.
    pub fn fusion(&self) -> &FusionConfig {
        &self.fusion
    }

    /// Adds the dense route.
    pub fn with_dense(mut self, embedder: &'a dyn Embedder, vectors: &'a dyn VectorIndex) -> Self {
        self.dense = Some((embedder, vectors));
        self.dense_missing = None;
        self
    }

    /// Records why the dense route is absent (shown in route reports).
    pub fn without_dense(mut self, reason: impl Into<String>) -> Self {
        self.dense = None;
        self.dense_missing = Some(reason.into());
        self
    }

    /// Adds the lexical route.
    pub fn with_lexical(mut self, lexical: &'a dyn LexicalIndex) -> Self {
        self.lexical = Some(lexical);
        self
    }

    /// Reranks the top `depth` checked candidates with `reranker` before the budget (and before
    /// the top `k` is kept, so a reranker can lift a candidate from below `k`).
    pub fn with_reranker(mut self, reranker: &'a dyn Reranker, depth: usize) -> Self {
        self.reranker = Some((reranker, depth.max(1)));
        self
    }

    /// The reranker's name, when one is configured.
    pub fn reranker_name(&self) -> Option<&str> {
        self.reranker.map(|(r, _)| r.name())
    }

    /// Prefers evidence in the question's language: after fusion, a candidate whose document's
    /// language is the one detected in the question ([`Locale::detect`]) gains `boost` times the
    /// spread of the fused scores (0 = off; a boost, never a filter — a locale filter is the
    /// caller's [`Filter`]).
    pub fn with_locale_boost(mut self, boost: f64) -> Self {
        self.locale_boost = if boost.is_finite() {
            boost.max(0.0)
        } else {
            0.0
        };
        self
    }

    /// Sets the fusion parameters.
    pub fn with_fusion(mut self, fusion: FusionConfig) -> Self {
        self.fusion = fusion;
        self
    }

    /// Candidates each route contributes to fusion (default 50).
    pub fn with_candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates.max(1);
        self
    }

    fn run_dense(
        &self,
        request: &RetrievalRequest<'_>,
        k: usize,
    ) -> Result<Vec<ScoredChunk>, String> {
        let Some((embedder, vectors)) = self.dense else {
            return Err(self
                .dense_missing
                .clone()
                .unwrap_or_else(|| "no embedder is configured".into()));
        };
        let query = embedder
            .embed_query(request.query)
            .map_err(|e| e.to_string())?;
        vectors
            .search(&query, k, request.filter)
            .map_err(|e| e.to_string())
    }

    fn run_lexical(
        &self,
        request: &RetrievalRequest<'_>,
        k: usize,
    ) -> Result<Vec<ScoredChunk>, String> {
        let Some(lexical) = self.lexical else {
            return Err("no lexical index is configured".into());
        };
        lexical
            .search(request.query, k, request.filter)
            .map_err(|e| e.to_string())
    }

    /// Retrieves evidence for `request`.
    pub fn retrieve(&self, request: &RetrievalRequest<'_>) -> Result<Retrieval, RetrieveError> {
        validate(request)?;
        let per_route = self.candidates.max(request.k);
        let mut found = Found::default();
        let mut laps = Laps::start(self.clock);
        for route in [Route::Dense, Route::Lexical] {
            if !request.mode.wants(route) {
                found.routes.push(RouteReport {
                    route,
                    status: RouteStatus::NotRequested,
                });
                continue;
            }
            let result = match route {
                Route::Dense => self.run_dense(request, per_route),
                Route::Lexical => self.run_lexical(request, per_route),
            };
            laps.mark(&format!("retrieval.{route}"));
            found.add(route, result);
        }
        if found.lists.is_empty() {
            return Err(RetrieveError::CannotRetrieve {
                routes: found.routes,
            });
        }

        let mut fused = fuse(&found.lists, &self.fusion);
        if self.locale_boost > 0.0 {
            prefer_locale(&mut fused, &found.chunks, request.query, self.locale_boost);
        }
        laps.mark("fusion");
        let (mut evidence, dropped) = self.check(fused, &mut found, request)?;
        laps.mark("revision_check");
        let rerank = self.reranker.map(|(reranker, depth)| {
            let report = rerank(reranker, depth, request.query, &mut evidence);
            evidence.truncate(request.k);
            renumber(&mut evidence);
            laps.mark("rerank");
            report
        });
        let ocr_twins = drop_ocr_twins(&mut evidence);
        let (evidence, budget_dropped, truncated) = match request.budget {
            Some(budget) => within_budget(evidence, budget),
            None => (evidence, Vec::new(), false),
        };
        laps.mark("budget");
        Ok(Retrieval {
            evidence,
            dropped,
            budget_dropped,
            ocr_twins,
            truncated,
            routes: found.routes,
            candidates: found.candidates,
            rerank,
            timings: laps.timings,
        })
    }

    /// Checks the fused candidates, best first, against the source until as many pass as the
    /// request (or the reranker's depth) wants: the evidence in rank order, and the hits
    /// dropped.
    fn check(
        &self,
        fused: Vec<Fused>,
        found: &mut Found,
        request: &RetrievalRequest<'_>,
    ) -> Result<(Vec<Evidence>, Vec<Dropped>), RetrieveError> {
        let wanted = match self.reranker {
            Some((_, depth)) => request.k.max(depth),
            None => request.k,
        };
        let mut sources: HashMap<DocId, Option<SourceRecord>> = HashMap::new();
        let mut evidence = Vec::new();
        let mut dropped = Vec::new();
        for item in fused {
            if evidence.len() == wanted {
                break;
            }
            let Some(chunk) = found.chunks.remove(&item.chunk_id) else {
                continue;
            };
            let doc = chunk.doc_id().clone();
            let record = match sources.get(&doc) {
                Some(r) => r.clone(),
                None => {
                    let r = self.source.lookup(&doc)?;
                    sources.insert(doc.clone(), r.clone());
                    r
                }
            };
            match revision::check(&chunk, record.as_ref(), request.filter, self.now) {
                Ok(()) => evidence.push(Evidence {
                    chunk_id: item.chunk_id.clone(),
                    rank: evidence.len() + 1,
                    score: item.score,
                    routes: found.route_hits.remove(&item.chunk_id).unwrap_or_default(),
                    chunk,
                }),
                Err(reason) => dropped.push(Dropped {
                    chunk_id: item.chunk_id,
                    doc_id: doc,
                    reason,
                }),
            }
        }
        Ok((evidence, dropped))
    }
}

/// A request retrieval can run: a query that says something, at least one piece wanted.
fn validate(request: &RetrievalRequest<'_>) -> Result<(), RetrieveError> {
    if request.query.trim().is_empty() {
        return Err(RetrieveError::InvalidInput("the query is empty".into()));
    }
    if request.k == 0 {
        return Err(RetrieveError::InvalidInput("k must be at least 1".into()));
    }
    Ok(())
}

/// What the routes found: each route's report, its ranked list for fusion and its candidates
/// for the trace, and each candidate's chunk and ranks in the routes that found it.
#[derive(Default)]
struct Found {
    routes: Vec<RouteReport>,
    lists: Vec<RouteList>,
    candidates: BTreeMap<Route, Vec<(ChunkId, f32)>>,
    chunks: HashMap<ChunkId, Chunk>,
    route_hits: HashMap<ChunkId, Vec<RouteHit>>,
}

impl Found {
    /// Adds what `route` returned, or why it could not run.
    fn add(&mut self, route: Route, result: Result<Vec<ScoredChunk>, String>) {
        let hits = match result {
            Ok(hits) => hits,
            Err(reason) => {
                self.routes.push(RouteReport {
                    route,
                    status: RouteStatus::Unavailable { reason },
                });
                return;
            }
        };
        self.routes.push(RouteReport {
            route,
            status: RouteStatus::Ran { hits: hits.len() },
        });
        let mut ids = Vec::with_capacity(hits.len());
        for (i, hit) in hits.into_iter().enumerate() {
            let id = hit.chunk.chunk_id().clone();
            self.route_hits
                .entry(id.clone())
                .or_default()
                .push(RouteHit {
                    route,
                    rank: i + 1,
                    score: hit.score,
                });
            self.candidates
                .entry(route)
                .or_default()
                .push((id.clone(), hit.score));
            self.chunks.entry(id.clone()).or_insert(hit.chunk);
            ids.push((id, hit.score));
        }
        self.lists.push((route, ids));
    }
}

/// The time of each stage of a retrieval, as laps of its clock.
struct Laps<'c> {
    clock: &'c dyn Clock,
    lap: std::time::Duration,
    timings: Vec<StageTiming>,
}

impl<'c> Laps<'c> {
    fn start(clock: &'c dyn Clock) -> Self {
        Self {
            clock,
            lap: clock.now(),
            timings: Vec::new(),
        }
    }

    /// Records the time since the last lap under `stage`.
    fn mark(&mut self, stage: &str) {
        let now = self.clock.now();
        self.timings.push(StageTiming {
            stage: stage.to_string(),
            ms: elapsed_ms(self.lap, now),
        });
        self.lap = now;
    }
}

/// Leaves out the evidence read by OCR that a text layer's chunk among the evidence says too
/// (renumbering the rest); returns what it left out.
fn drop_ocr_twins(evidence: &mut Vec<Evidence>) -> Vec<ChunkId> {
    let chunks: Vec<&Chunk> = evidence.iter().map(|e| &e.chunk).collect();
    let twins: BTreeSet<usize> = crate::rules::ocr::ocr_twins(&chunks)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    if twins.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut i = 0;
    evidence.retain(|e| {
        let twin = twins.contains(&i);
        i += 1;
        if twin {
            out.push(e.chunk_id.clone());
        }
        !twin
    });
    renumber(evidence);
    out
}

/// Ranks `evidence` 1, 2, … in its order.
fn renumber(evidence: &mut [Evidence]) {
    for (i, e) in evidence.iter_mut().enumerate() {
        e.rank = i + 1;
    }
}

/// What `budget` keeps of `evidence` (whole pieces, renumbered), the IDs it leaves out, and
/// whether it left any out.
fn within_budget(
    evidence: Vec<Evidence>,
    budget: RetrievalBudget,
) -> (Vec<Evidence>, Vec<ChunkId>, bool) {
    let out = budget.apply(evidence, |e| e.chunk.char_len());
    let mut kept = out.kept;
    renumber(&mut kept);
    let left: Vec<ChunkId> = out.dropped.into_iter().map(|e| e.chunk_id).collect();
    (kept, left, out.truncated)
}

/// Lifts the fused candidates in the question's language by `boost` × the fused scores' spread
/// and re-sorts (ties by chunk ID, as fusion does).
fn prefer_locale(fused: &mut [Fused], chunks: &HashMap<ChunkId, Chunk>, query: &str, boost: f64) {
    let language = Locale::detect(query);
    let (lo, hi) = fused
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| {
            (lo.min(f.score), hi.max(f.score))
        });
    let spread = if hi > lo { hi - lo } else { hi.abs().max(1e-9) };
    for f in fused.iter_mut() {
        if chunks
            .get(&f.chunk_id)
            .is_some_and(|c| c.doc().locale.language() == language.language())
        {
            f.score += boost * spread;
        }
    }
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
}

/// Reorders the top `depth` of `evidence` by `reranker`'s scores (ties by fused rank); keeps the
/// fused order, and says why, when the reranker fails or breaks its contract.
fn rerank(
    reranker: &dyn Reranker,
    depth: usize,
    query: &str,
    evidence: &mut [Evidence],
) -> RerankReport {
    let top = depth.min(evidence.len());
    let candidates: Vec<RerankCandidate<'_>> = evidence[..top]
        .iter()
        .map(|e| RerankCandidate {
            chunk: &e.chunk,
            fused_rank: e.rank,
            fused_score: e.score,
        })
        .collect();
    let scored = reranker.rerank(query, &candidates).and_then(|scores| {
        if scores.len() != top || scores.iter().any(|s| !s.is_finite()) {
            Err(RerankError::InvalidInput(format!(
                "the reranker returned {} scores ({} finite) for {top} candidates",
                scores.len(),
                scores.iter().filter(|s| s.is_finite()).count()
            )))
        } else {
            Ok(scores)
        }
    });
    let name = reranker.name().to_string();
    match scored {
        Ok(scores) => {
            let mut order: Vec<(f64, usize)> = scores.into_iter().zip(0..top).collect();
            order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut head: Vec<Option<Evidence>> =
                evidence[..top].iter().cloned().map(Some).collect();
            let mut entries = Vec::with_capacity(top);
            for (slot, (score, i)) in order.into_iter().enumerate() {
                let e = head[i].take().expect("each candidate once");
                entries.push(RerankedEntry {
                    chunk_id: e.chunk_id.clone(),
                    score,
                    fused_rank: e.rank,
                });
                evidence[slot] = e;
            }
            RerankReport {
                reranker: name,
                status: RouteStatus::Ran { hits: top },
                scores: entries,
            }
        }
        Err(e) => RerankReport {
            reranker: name,
            status: RouteStatus::Unavailable {
                reason: e.to_string(),
            },
            scores: Vec::new(),
        },
    }
}
