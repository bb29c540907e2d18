//! [`QdrantVectorIndex`]: the [`VectorIndex`] port over a Qdrant collection.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use qdrant_client::qdrant::{
    CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder,
    DeleteCollectionBuilder, DeletePointsBuilder, Distance, FieldType, GetPointsBuilder,
    KeywordIndexParamsBuilder, PayloadIncludeSelector, PointId, PointStruct, PointsIdsList,
    QueryPointsBuilder, ScrollPointsBuilder, SearchParamsBuilder, UpsertPointsBuilder,
    VectorParamsBuilder, vector_output, vectors_config,
};
use tokio::runtime::Runtime;
use zhiku_domain::ports::{
    EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk, VectorIndex, VectorIndexExt,
    rank_and_truncate,
};
use zhiku_domain::{ChunkId, DocId, Embedding, EmbeddingSpace, Filter};

use crate::config::QdrantConfig;
use crate::error::{ADAPTER, Kind, Target, classify, permanent, to_index_error};
use crate::nodes::Nodes;
use crate::payload::{
    self, CHUNK_ID, DOC_ID, LOCALE_TERMS, METADATA_TERMS, NORM, SCOPE, point_id, point_id_text,
    to_chunk, to_point, to_qdrant_filter,
};

/// Format of the record zhiku keeps in a collection's metadata.
const FORMAT: &str = "zhiku-qdrant/1";
/// Largest `k` a search accepts (the memory index's limit).
const MAX_K: usize = 10_000;
/// Extra points fetched beyond `k`, so that ties at the `k`-th score are seen whole.
const TIE_SLACK: usize = 8;
/// Points per scroll page, get request and delete-by-ID request.
const PAGE: usize = 1_000;
/// Longest wait between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A dense vector index in one Qdrant collection.
///
/// One collection holds one knowledge base in one [`EmbeddingSpace`]: its vector size is the
/// space's dimension, its distance is cosine, and its metadata records the space and the
/// chunking-policy fingerprint; [`open`](Self::open) refuses a collection recorded for another
/// space with [`IndexError::SpaceMismatch`], like the embedded vector file, and one built with
/// another chunking policy with [`IndexError::ConfigMismatch`].
///
/// # Runtime
///
/// The port is synchronous and the Qdrant client is async, so each index owns a small tokio
/// runtime (two worker threads) and blocks on it. Call it from ordinary threads; from inside an
/// async executor, call it through `spawn_blocking` (it also works there, by running the request
/// on a scoped helper thread, at the cost of one thread per call).
///
/// # Writes
///
/// Upserts go out in batches of [`QdrantConfig::batch_size`] points and every write waits for
/// the server's acknowledgement (`wait = true`), so a write is applied and searchable when the
/// call returns and [`commit`](VectorIndex::commit) has nothing left to do. Temporary failures
/// (unavailable, timeout, overloaded) are retried with exponential backoff; what remains is
/// reported as [`IndexError::Unavailable`] or a temporary [`IndexError::Backend`], everything
/// else as a permanent [`IndexError::Backend`] that names the request, server and collection.
pub struct QdrantVectorIndex {
    runtime: Option<Runtime>,
    nodes: Nodes,
    config: QdrantConfig,
    collection: String,
    space: EmbeddingSpace,
}

impl std::fmt::Debug for QdrantVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantVectorIndex")
            .field("url", &self.config.url)
            .field("collection", &self.collection)
            .field("space", &self.space.identity())
            .finish()
    }
}

impl Drop for QdrantVectorIndex {
    fn drop(&mut self) {
        // Never blocks, so dropping the index inside an async context is safe too.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn new_runtime() -> Result<Runtime, IndexError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zhiku-qdrant")
        .enable_all()
        .build()
        .map_err(|e| permanent(format!("cannot start the Qdrant client runtime: {e}")))
}

/// Runs `fut` to completion on `runtime`, also when the caller is itself inside a tokio runtime.
fn block_on<F>(runtime: &Runtime, fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(fut))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        runtime.block_on(fut)
    }
}

/// Runs `op` until it succeeds, fails permanently or has used up `config.max_retries` retries.
async fn retry<T, F, Fut>(
    config: &QdrantConfig,
    nodes: &Nodes,
    collection: &str,
    what: &str,
    mut op: F,
) -> Result<T, IndexError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, qdrant_client::QdrantError>>,
{
    let mut delay = config.initial_backoff;
    let mut attempt = 0u32;
    // Other nodes tried at once when the current one cannot be reached, before any backoff.
    let mut moved = 0usize;
    loop {
        attempt += 1;
        let at = nodes.position();
        match op().await {
            Ok(value) => return Ok(value),
            Err(error) => {
                let kind = classify(&error);
                if kind == Kind::Unreachable && moved + 1 < nodes.len() {
                    nodes.fail_over(at);
                    moved += 1;
                    continue;
                }
                if kind.temporary() && attempt <= config.max_retries + moved as u32 {
                    let wait = match kind {
                        crate::error::Kind::Overloaded(Some(asked)) => asked,
                        _ => delay,
                    };
                    tokio::time::sleep(wait.min(MAX_BACKOFF)).await;
                    delay = (delay * 2).min(MAX_BACKOFF);
                    continue;
                }
                return Err(to_index_error(
                    &error,
                    what,
                    Target {
                        url: nodes.url(at),
                        collection,
                    },
                    attempt,
                ));
            }
        }
    }
}

/// What zhiku records in the collection's metadata.
fn collection_metadata(
    space: &EmbeddingSpace,
    policy: Option<&str>,
) -> HashMap<String, serde_json::Value> {
    HashMap::from([
        ("zhiku_format".to_string(), serde_json::json!(FORMAT)),
        (
            "space".to_string(),
            serde_json::to_value(space).unwrap_or(serde_json::Value::Null),
        ),
        (
            "space_identity".to_string(),
            serde_json::json!(space.identity()),
        ),
        ("chunking_policy".to_string(), serde_json::json!(policy)),
    ])
}

impl QdrantVectorIndex {
    /// Opens the collection of knowledge base `kb` in `space` (see
    /// [`QdrantConfig::collection_name`]), creating it when it does not exist.
    /// `policy_fingerprint` is the chunking policy's fingerprint, recorded on creation and
    /// checked on every later open.
    pub fn open(
        config: &QdrantConfig,
        kb: &str,
        space: EmbeddingSpace,
        policy_fingerprint: Option<&str>,
    ) -> Result<Self, IndexError> {
        let name = config.collection_name(kb, &space);
        Self::open_collection(config, &name, space, policy_fingerprint)
    }

    /// Opens or creates the collection `collection`. A collection that exists must have been
    /// created by zhiku for `space`: otherwise [`IndexError::SpaceMismatch`] (another space or
    /// vector size), [`IndexError::ConfigMismatch`] (another chunking policy, or not a zhiku
    /// collection). A server that cannot be reached is [`IndexError::Unavailable`].
    pub fn open_collection(
        config: &QdrantConfig,
        collection: &str,
        space: EmbeddingSpace,
        policy_fingerprint: Option<&str>,
    ) -> Result<Self, IndexError> {
        if config.batch_size == 0 {
            return Err(IndexError::InvalidInput(
                "the Qdrant batch size must be at least 1".into(),
            ));
        }
        let runtime = new_runtime()?;
        let nodes = Nodes::connect(config, &runtime)?;
        let index = Self {
            runtime: Some(runtime),
            nodes,
            config: config.clone(),
            collection: collection.to_string(),
            space,
        };
        index.run(index.ensure_collection(policy_fingerprint))?;
        Ok(index)
    }

    /// The gRPC URL this index talks to.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The server's version, from its health check.
    pub fn server_version(&self) -> Result<String, IndexError> {
        self.run(async {
            let reply = retry(
                &self.config,
                &self.nodes,
                &self.collection,
                "health check",
                || self.nodes.current().health_check(),
            )
            .await?;
            Ok(reply.version)
        })
    }

    /// Waits until the server has finished optimising the collection (status green on two
    /// polls 500 ms apart: segments merged and HNSW graphs built), for at most `limit`. Returns
    /// how long it waited and the number of vectors in HNSW graphs. For benchmarks and bulk
    /// loads: searches are correct before that, only slower.
    pub fn wait_until_optimized(&self, limit: Duration) -> Result<(Duration, u64), IndexError> {
        let start = std::time::Instant::now();
        self.run(async {
            let mut green_before = false;
            loop {
                let info = self
                    .retry("read the collection", || {
                        self.nodes.current().collection_info(&self.collection)
                    })
                    .await?
                    .result;
                let green = info.as_ref().is_some_and(|i| {
                    i.status == qdrant_client::qdrant::CollectionStatus::Green as i32
                });
                let indexed = info.and_then(|i| i.indexed_vectors_count).unwrap_or(0);
                if (green && green_before) || start.elapsed() >= limit {
                    return Ok((start.elapsed(), indexed));
                }
                green_before = green;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    }

    /// Deletes the collection and everything in it. The index is unusable afterwards.
    pub fn drop_collection(&self) -> Result<(), IndexError> {
        self.run(async {
            retry(
                &self.config,
                &self.nodes,
                &self.collection,
                "delete collection",
                || {
                    self.nodes
                        .current()
                        .delete_collection(DeleteCollectionBuilder::new(&self.collection))
                },
            )
            .await
            .map(|_| ())
        })
    }

    /// Deletes every collection of knowledge base `kb` (whatever its space), e.g. before a
    /// rebuild. Returns the names deleted. Only names of the exact form
    /// `{prefix}{kb}_{8 hex digits}` are touched.
    pub fn drop_kb_collections(config: &QdrantConfig, kb: &str) -> Result<Vec<String>, IndexError> {
        let runtime = new_runtime()?;
        let nodes = Nodes::connect(config, &runtime)?;
        let prefix = config.kb_prefix(kb);
        let result = block_on(&runtime, async {
            let listed = retry(config, &nodes, "*", "list collections", || {
                nodes.current().list_collections()
            })
            .await?;
            let mut dropped = Vec::new();
            for c in listed.collections {
                let tail = c.name.strip_prefix(&prefix).unwrap_or_default();
                if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
                    retry(config, &nodes, &c.name, "delete collection", || {
                        nodes
                            .current()
                            .delete_collection(DeleteCollectionBuilder::new(&c.name))
                    })
                    .await?;
                    dropped.push(c.name);
                }
            }
            Ok(dropped)
        });
        runtime.shutdown_background();
        result
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the index")
    }

    fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        block_on(self.runtime(), fut)
    }

    async fn retry<T, F, Fut>(&self, what: &str, op: F) -> Result<T, IndexError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, qdrant_client::QdrantError>>,
    {
        retry(&self.config, &self.nodes, &self.collection, what, op).await
    }

    async fn ensure_collection(&self, policy: Option<&str>) -> Result<(), IndexError> {
        let exists = self
            .retry("check the collection", || {
                self.nodes.current().collection_exists(&self.collection)
            })
            .await?;
        if !exists {
            self.create_collection(policy).await?;
        }
        self.check_collection(policy).await
    }

    async fn create_collection(&self, policy: Option<&str>) -> Result<(), IndexError> {
        let dims = self.space.dims() as u64;
        let created = self
            .retry("create the collection", || {
                self.nodes.current().create_collection(
                    CreateCollectionBuilder::new(&self.collection)
                        .vectors_config(VectorParamsBuilder::new(dims, Distance::Cosine))
                        .shard_number(self.config.shard_number)
                        .replication_factor(self.config.replication_factor)
                        .metadata(collection_metadata(&self.space, policy)),
                )
            })
            .await;
        match created {
            Ok(_) => {}
            // Created concurrently by another process: check it like any existing one.
            Err(IndexError::Backend { ref source, .. })
                if source.to_string().contains("already exists") =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        // Payload indexes on every field a filter uses; the scope is the tenant key, so Qdrant
        // keeps each scope's points together and plans scope-filtered searches per tenant.
        let fields = [
            (SCOPE, true),
            (DOC_ID, false),
            (LOCALE_TERMS, false),
            (METADATA_TERMS, false),
        ];
        for (field, tenant) in fields {
            self.retry("create a payload index", || {
                let mut request = CreateFieldIndexCollectionBuilder::new(
                    &self.collection,
                    field,
                    FieldType::Keyword,
                )
                .wait(true);
                if tenant {
                    request = request
                        .field_index_params(KeywordIndexParamsBuilder::default().is_tenant(true));
                }
                self.nodes.current().create_field_index(request)
            })
            .await?;
        }
        Ok(())
    }

    async fn check_collection(&self, policy: Option<&str>) -> Result<(), IndexError> {
        let info = self
            .retry("read the collection", || {
                self.nodes.current().collection_info(&self.collection)
            })
            .await?;
        let config = info.result.and_then(|r| r.config);
        let metadata: HashMap<String, serde_json::Value> = config
            .as_ref()
            .map(|c| {
                c.metadata
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if metadata.get("zhiku_format") != Some(&serde_json::json!(FORMAT)) {
            return Err(IndexError::ConfigMismatch {
                what: "Qdrant collection",
                expected: format!(
                    "{} (not created by zhiku, or by another format than {FORMAT})",
                    self.collection
                ),
                found: format!("a {FORMAT} collection"),
            });
        }
        let recorded: Option<EmbeddingSpace> = metadata
            .get("space")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        match recorded {
            Some(recorded) if recorded == self.space => {}
            Some(recorded) => {
                return Err(IndexError::SpaceMismatch {
                    expected: recorded.identity().to_string(),
                    found: self.space.identity().to_string(),
                });
            }
            None => {
                return Err(IndexError::SpaceMismatch {
                    expected: "an unreadable space record".into(),
                    found: self.space.identity().to_string(),
                });
            }
        }
        let params = config
            .and_then(|c| c.params)
            .and_then(|p| p.vectors_config)
            .and_then(|v| v.config);
        match params {
            Some(vectors_config::Config::Params(p))
                if p.size == self.space.dims() as u64 && p.distance == Distance::Cosine as i32 => {}
            other => {
                return Err(IndexError::SpaceMismatch {
                    expected: format!("collection vectors {other:?}"),
                    found: format!("{} dims, cosine", self.space.dims()),
                });
            }
        }
        if let (Some(serde_json::Value::String(recorded)), Some(requested)) =
            (metadata.get("chunking_policy"), policy)
            && recorded != requested
        {
            return Err(IndexError::ConfigMismatch {
                what: "chunking policy",
                expected: recorded.clone(),
                found: requested.to_string(),
            });
        }
        Ok(())
    }

    async fn scroll_ids(
        &self,
        filter: Option<qdrant_client::qdrant::Filter>,
    ) -> Result<Vec<ChunkId>, IndexError> {
        let mut ids = Vec::new();
        let mut offset: Option<PointId> = None;
        loop {
            let page = self
                .retry("scroll", || {
                    let mut request = ScrollPointsBuilder::new(&self.collection)
                        .limit(PAGE as u32)
                        .with_payload(PayloadIncludeSelector::new(vec![CHUNK_ID.to_string()]))
                        .with_vectors(false);
                    if let Some(f) = &filter {
                        request = request.filter(f.clone());
                    }
                    if let Some(o) = &offset {
                        request = request.offset(o.clone());
                    }
                    self.nodes.current().scroll(request)
                })
                .await?;
            for point in &page.result {
                let text = payload::string_field(&point.payload, CHUNK_ID).ok_or_else(|| {
                    permanent(format!("a point in {} has no chunk_id", self.collection))
                })?;
                ids.push(ChunkId::parse(&text).map_err(|e| {
                    permanent(format!(
                        "a point in {} has a bad chunk_id: {e}",
                        self.collection
                    ))
                })?);
            }
            match page.next_page_offset {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn upsert_points(&self, points: Vec<PointStruct>) -> Result<(), IndexError> {
        for batch in points.chunks(self.config.batch_size) {
            self.retry("upsert", || {
                self.nodes.current().upsert_points(
                    UpsertPointsBuilder::new(&self.collection, batch.to_vec()).wait(true),
                )
            })
            .await?;
        }
        Ok(())
    }

    /// The search parameters of the settings: exact, or HNSW with its beam width.
    fn search_params(&self) -> SearchParamsBuilder {
        let params = SearchParamsBuilder::default().exact(self.config.exact);
        match self.config.hnsw_ef {
            Some(ef) => params.hnsw_ef(ef),
            None => params,
        }
    }

    async fn query(
        &self,
        vector: &[f32],
        limit: usize,
        filter: &qdrant_client::qdrant::Filter,
    ) -> Result<Vec<qdrant_client::qdrant::ScoredPoint>, IndexError> {
        let response = self
            .retry("search", || {
                self.nodes.current().query(
                    QueryPointsBuilder::new(&self.collection)
                        .query(vector.to_vec())
                        .filter(filter.clone())
                        .limit(limit as u64)
                        .params(self.search_params())
                        .with_payload(true)
                        .with_vectors(false),
                )
            })
            .await?;
        Ok(response.result)
    }
}

impl VectorIndex for QdrantVectorIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: ADAPTER,
            persistent: true,
            max_k: MAX_K,
            // The adapter batches internally (QdrantConfig::batch_size).
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        // Validate everything first so a refused batch changes nothing.
        for item in items {
            self.check_space(&item.embedding)?;
        }
        if items.is_empty() {
            return Ok(());
        }
        // The last write of a chunk wins, as with sequential upserts.
        let mut seen = HashSet::new();
        let mut points = Vec::with_capacity(items.len());
        for item in items.iter().rev() {
            if seen.insert(item.chunk.chunk_id()) {
                points.push(to_point(item)?);
            }
        }
        points.reverse();
        self.run(self.upsert_points(points))
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.run(async {
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(|id| point_id(id).into()).collect();
                self.retry("delete chunks", || {
                    self.nodes.current().delete_points(
                        DeletePointsBuilder::new(&self.collection)
                            .points(PointsIdsList {
                                ids: points.clone(),
                            })
                            .wait(true),
                    )
                })
                .await?;
            }
            Ok(())
        })
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        let filter = payload::document_filter(doc);
        self.run(async {
            self.retry("delete a document", || {
                self.nodes.current().delete_points(
                    DeletePointsBuilder::new(&self.collection)
                        .points(filter.clone())
                        .wait(true),
                )
            })
            .await
            .map(|_| ())
        })
    }

    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        self.check_space(query)?;
        let Some(qfilter) = to_qdrant_filter(filter) else {
            return Ok(Vec::new());
        };
        let vector = query.values();
        // Qdrant orders equal scores arbitrarily; the contract orders them by chunk ID. Fetch a
        // few more than k and widen until the k-th score's whole tie group is inside the window.
        let mut limit = k + TIE_SLACK;
        loop {
            let points = self.run(self.query(vector, limit, &qfilter))?;
            let exhausted = points.len() < limit;
            let mut hits = Vec::with_capacity(points.len());
            for point in points {
                let chunk = to_chunk(point.payload).map_err(permanent)?;
                hits.push(ScoredChunk {
                    chunk,
                    score: point.score,
                });
            }
            rank_and_truncate(&mut hits, usize::MAX);
            let settled = exhausted
                || hits.len() <= k
                || hits[hits.len() - 1].score < hits[k - 1].score
                || limit >= 2 * MAX_K;
            if settled {
                hits.truncate(k);
                return Ok(hits);
            }
            limit = (limit * 2).min(2 * MAX_K);
        }
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        self.run(self.scroll_ids(Some(payload::document_filter(doc))))
    }

    /// A paged scroll over the whole collection.
    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.run(self.scroll_ids(None))
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: HashMap<String, (String, Vec<f32>, f64)> = HashMap::new();
        self.run(async {
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(|id| point_id(id).into()).collect();
                let response = self
                    .retry("read vectors", || {
                        self.nodes.current().get_points(
                            GetPointsBuilder::new(&self.collection, points.clone())
                                .with_payload(PayloadIncludeSelector::new(vec![
                                    CHUNK_ID.to_string(),
                                    NORM.to_string(),
                                ]))
                                .with_vectors(true),
                        )
                    })
                    .await?;
                for point in response.result {
                    let Some(id) = point.id.as_ref().and_then(point_id_text) else {
                        continue;
                    };
                    let chunk = payload::string_field(&point.payload, CHUNK_ID).unwrap_or_default();
                    let norm = payload::number_field(&point.payload, NORM).unwrap_or(1.0);
                    let values = match point.vectors.and_then(|v| v.get_vector()) {
                        Some(vector_output::Vector::Dense(d)) => d.data,
                        _ => {
                            return Err(permanent(format!(
                                "point {id} in {} has no dense vector",
                                self.collection
                            )));
                        }
                    };
                    found.insert(id, (chunk, values, norm));
                }
            }
            Ok(())
        })?;
        ids.iter()
            .map(|id| {
                let Some((stored_id, values, norm)) = found.remove(&point_id(id)) else {
                    return Ok(None);
                };
                if stored_id != id.as_str() {
                    // Two chunk IDs hashing to one point: never hand out another chunk's vector.
                    return Err(permanent(format!(
                        "point {} holds chunk {stored_id}, not {id}",
                        point_id(id)
                    )));
                }
                // Qdrant keeps cosine vectors normalised; give back the vector as it was stored.
                let values = if norm > 0.0 && (norm - 1.0).abs() > 1e-6 {
                    values
                        .iter()
                        .map(|v| (f64::from(*v) * norm) as f32)
                        .collect()
                } else {
                    values
                };
                self.space
                    .embedding(values, false)
                    .map(Some)
                    .map_err(|e| permanent(format!("stored vector of {id}: {e}")))
            })
            .collect()
    }

    fn count(&self) -> Result<usize, IndexError> {
        self.run(async {
            let response = self
                .retry("count", || {
                    self.nodes
                        .current()
                        .count(CountPointsBuilder::new(&self.collection).exact(true))
                })
                .await?;
            Ok(response.result.map(|r| r.count as usize).unwrap_or(0))
        })
    }

    /// Every write already waited for the server's acknowledgement, so there is nothing to do.
    fn commit(&self) -> Result<(), IndexError> {
        Ok(())
    }
}
