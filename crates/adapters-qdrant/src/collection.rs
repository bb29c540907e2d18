//! One Qdrant collection as zhiku talks to it: the client runtime, the nodes, retries with
//! fail-over, and the requests every kind of collection shares (create with zhiku's metadata,
//! scroll the chunk IDs, upsert and delete points, count, rank with ties settled). The dense
//! index ([`crate::QdrantVectorIndex`]) and the lexical one ([`crate::QdrantLexicalIndex`]) are
//! each a [`Collection`] and what is particular to their vectors.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use qdrant_client::qdrant::{
    CollectionConfig, CountPointsBuilder, CreateCollectionBuilder,
    CreateFieldIndexCollectionBuilder, DeleteCollectionBuilder, DeletePointsBuilder, FieldType,
    Filter as QFilter, GetPointsBuilder, KeywordIndexParamsBuilder, PayloadIncludeSelector,
    PointId, PointStruct, PointsIdsList, PointsUpdateOperation, QueryPointsBuilder, RetrievedPoint,
    ScoredPoint, ScrollPointsBuilder, UpdateBatchPointsBuilder, UpdateCollectionBuilder,
    UpsertPointsBuilder, points_update_operation,
};
use tokio::runtime::Runtime;
use zhiku_domain::ports::{IndexError, ScoredChunk, rank_and_truncate};
use zhiku_domain::{Chunk, ChunkId, DocId};

use crate::config::QdrantConfig;
use crate::error::{Kind, Target, classify, permanent, to_index_error};
use crate::nodes::Nodes;
use crate::payload::{
    self, ACCESS_TERMS, CHUNK_ID, DOC_ID, LOCALE_TERMS, METADATA_TERMS, SCOPE, point_id, to_chunk,
};

/// Largest `k` a search accepts (the memory index's limit).
pub(crate) const MAX_K: usize = 10_000;
/// Extra points fetched beyond `k`, so that ties at the `k`-th score are seen whole.
const TIE_SLACK: usize = 8;
/// Points per scroll page, get request and delete-by-ID request.
pub(crate) const PAGE: usize = 1_000;
/// Longest wait between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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
                        Kind::Overloaded(Some(asked)) => asked,
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

/// The items of one upsert that a sequence of single upserts would leave: the last write of each
/// chunk, in the order of those last writes.
pub(crate) fn last_of_each<T>(items: &[T], id: impl Fn(&T) -> &ChunkId) -> Vec<&T> {
    let mut seen = std::collections::HashSet::new();
    let mut last: Vec<&T> = items.iter().rev().filter(|i| seen.insert(id(i))).collect();
    last.reverse();
    last
}

/// The metadata zhiku records on a collection, as JSON.
pub(crate) type Metadata = HashMap<String, serde_json::Value>;

/// Why a collection of records (points without vectors) could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The server refused or could not be reached.
    Index(IndexError),
    /// The collection exists and zhiku did not record it as of the format asked; what it
    /// records instead, if anything.
    NotFormat(Option<String>),
}

/// A payload index: the field, its type, and whether it is the tenant key.
pub(crate) type PayloadIndex = (&'static str, FieldType, bool);

/// The payload indexes of a collection of chunks: every field a filter uses. The scope is the
/// tenant key, so Qdrant keeps each scope's points together and plans scope-filtered searches
/// per tenant.
pub(crate) const CHUNK_FIELDS: &[PayloadIndex] = &[
    (SCOPE, FieldType::Keyword, true),
    (DOC_ID, FieldType::Keyword, false),
    (LOCALE_TERMS, FieldType::Keyword, false),
    (METADATA_TERMS, FieldType::Keyword, false),
    (ACCESS_TERMS, FieldType::Keyword, false),
];

/// A collection on the deployment the configuration names, and the client that reaches it.
///
/// The ports are synchronous and the Qdrant client is async, so each collection owns a small
/// tokio runtime (two worker threads) and blocks on it. Call it from ordinary threads; from
/// inside an async executor, call it through `spawn_blocking` (it also works there, by running
/// the request on a scoped helper thread, at the cost of one thread per call).
pub(crate) struct Collection {
    runtime: Option<Runtime>,
    nodes: Nodes,
    pub(crate) config: QdrantConfig,
    pub(crate) name: String,
    /// Deleted from the server when this handle is dropped (a test's or an evaluation's).
    pub(crate) scratch: bool,
}

impl Drop for Collection {
    fn drop(&mut self) {
        if self.scratch
            && let Err(e) = self.drop_collection()
        {
            eprintln!(
                "warning: could not drop the scratch collection {}: {e}",
                self.name
            );
        }
        // Never blocks, so dropping an index inside an async context is safe too.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Collection {
    /// A client for `name` on the nodes of `config`; nothing is sent yet.
    pub(crate) fn connect(config: &QdrantConfig, name: &str) -> Result<Self, IndexError> {
        if config.batch_size == 0 {
            return Err(IndexError::InvalidInput(
                "the Qdrant batch size must be at least 1".into(),
            ));
        }
        let runtime = new_runtime()?;
        let nodes = Nodes::connect(config, &runtime)?;
        Ok(Self {
            runtime: Some(runtime),
            nodes,
            config: config.clone(),
            name: name.to_string(),
            scratch: false,
        })
    }

    /// Runs `fut` on this collection's runtime.
    pub(crate) fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the collection");
        block_on(runtime, fut)
    }

    /// Sends the request `op` makes with the client of the node in use, retrying and failing
    /// over as [`retry`] does.
    pub(crate) async fn retry<'a, T, F, Fut>(
        &'a self,
        what: &str,
        mut op: F,
    ) -> Result<T, IndexError>
    where
        F: FnMut(&'a qdrant_client::Qdrant) -> Fut,
        Fut: Future<Output = Result<T, qdrant_client::QdrantError>>,
    {
        retry(&self.config, &self.nodes, &self.name, what, || {
            op(self.nodes.current())
        })
        .await
    }

    /// Creates the collection with `create` (shards, replication and `metadata` added here) and
    /// the payload indexes `fields`, unless it exists; then returns what it records. A
    /// collection created concurrently by another process is taken as it is.
    pub(crate) fn ensure(
        &self,
        create: CreateCollectionBuilder,
        metadata: Metadata,
        fields: &[PayloadIndex],
    ) -> Result<(Metadata, Option<CollectionConfig>), IndexError> {
        self.run(async {
            let exists = self
                .retry("check the collection", |c| c.collection_exists(&self.name))
                .await?;
            if exists {
                self.add_missing_indexes(fields).await?;
            } else {
                self.create(create, metadata, fields).await?;
            }
            self.describe().await
        })
    }

    async fn create(
        &self,
        create: CreateCollectionBuilder,
        metadata: Metadata,
        fields: &[PayloadIndex],
    ) -> Result<(), IndexError> {
        let request = create
            .shard_number(self.config.shard_number)
            .replication_factor(self.config.replication_factor)
            .metadata(metadata);
        let created = self
            .retry("create the collection", |c| {
                c.create_collection(request.clone())
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
        self.create_indexes(fields).await
    }

    /// Creates the payload indexes of `fields` a collection made by an earlier version lacks
    /// (such as `access_terms`), so its filters keep using indexes.
    async fn add_missing_indexes(&self, fields: &[PayloadIndex]) -> Result<(), IndexError> {
        let info = self
            .retry("read the collection", |c| c.collection_info(&self.name))
            .await?;
        let schema = info.result.map(|r| r.payload_schema).unwrap_or_default();
        let missing: Vec<PayloadIndex> = fields
            .iter()
            .filter(|(field, _, _)| !schema.contains_key(*field))
            .copied()
            .collect();
        self.create_indexes(&missing).await
    }

    async fn create_indexes(&self, fields: &[PayloadIndex]) -> Result<(), IndexError> {
        for &(field, kind, tenant) in fields {
            self.retry("create a payload index", |c| {
                let mut request =
                    CreateFieldIndexCollectionBuilder::new(&self.name, field, kind).wait(true);
                if tenant {
                    request = request
                        .field_index_params(KeywordIndexParamsBuilder::default().is_tenant(true));
                }
                c.create_field_index(request)
            })
            .await?;
        }
        Ok(())
    }

    /// The collection's metadata (as JSON) and configuration.
    async fn describe(&self) -> Result<(Metadata, Option<CollectionConfig>), IndexError> {
        let info = self
            .retry("read the collection", |c| c.collection_info(&self.name))
            .await?;
        let config = info.result.and_then(|r| r.config);
        let metadata = config
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
        Ok((metadata, config))
    }

    /// Opens, creating it when absent, the collection `name` of points without vectors that
    /// zhiku records as of format `format`, with the payload indexes `fields`; with
    /// `one_shard`, in one shard (replicated as configured) whatever the configuration says.
    pub(crate) fn open_records(
        config: &QdrantConfig,
        name: &str,
        format: &str,
        fields: &[PayloadIndex],
        one_shard: bool,
    ) -> Result<Self, OpenError> {
        let config = QdrantConfig {
            shard_number: if one_shard { 1 } else { config.shard_number },
            ..config.clone()
        };
        let collection = Self::connect(&config, name).map_err(OpenError::Index)?;
        let metadata = Metadata::from([("zhiku_format".to_string(), serde_json::json!(format))]);
        let (found, _) = collection
            .ensure(CreateCollectionBuilder::new(name), metadata, fields)
            .map_err(OpenError::Index)?;
        match found.get("zhiku_format") {
            Some(serde_json::Value::String(f)) if f == format => Ok(collection),
            other => Err(OpenError::NotFormat(other.map(ToString::to_string))),
        }
    }

    /// The metadata the collection records now.
    pub(crate) fn metadata(&self) -> Result<Metadata, IndexError> {
        self.run(async { Ok(self.describe().await?.0) })
    }

    /// Sets the collection's metadata keys of `metadata` (others are kept).
    pub(crate) fn set_metadata(&self, metadata: Metadata) -> Result<(), IndexError> {
        self.run(async {
            self.retry("record metadata", |c| {
                c.update_collection(
                    UpdateCollectionBuilder::new(&self.name).metadata(metadata.clone()),
                )
            })
            .await
            .map(|_| ())
        })
    }

    /// The server's version, from its health check.
    pub(crate) fn server_version(&self) -> Result<String, IndexError> {
        self.run(async {
            let reply = self.retry("health check", |c| c.health_check()).await?;
            Ok(reply.version)
        })
    }

    /// Waits until the server has finished optimising the collection (status green on two
    /// polls 500 ms apart), for at most `limit`; returns how long it waited and the number of
    /// vectors in HNSW graphs.
    pub(crate) fn wait_until_optimized(
        &self,
        limit: Duration,
    ) -> Result<(Duration, u64), IndexError> {
        let start = std::time::Instant::now();
        self.run(async {
            let mut green_before = false;
            loop {
                let info = self
                    .retry("read the collection", |c| c.collection_info(&self.name))
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

    /// Deletes the collection and everything in it.
    pub(crate) fn drop_collection(&self) -> Result<(), IndexError> {
        self.run(async {
            self.retry("delete collection", |c| {
                c.delete_collection(DeleteCollectionBuilder::new(&self.name))
            })
            .await
            .map(|_| ())
        })
    }

    /// Deletes every collection of `config` whose name is `prefix` followed by exactly 8 hex
    /// digits; returns the names deleted.
    pub(crate) fn drop_tagged(
        config: &QdrantConfig,
        prefix: &str,
    ) -> Result<Vec<String>, IndexError> {
        let all = Self::connect(config, "*")?;
        all.run(async {
            let listed = all
                .retry("list collections", |c| c.list_collections())
                .await?;
            let mut dropped = Vec::new();
            for c in listed.collections {
                let tail = c.name.strip_prefix(prefix).unwrap_or_default();
                if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
                    all.retry("delete collection", |client| {
                        client.delete_collection(DeleteCollectionBuilder::new(&c.name))
                    })
                    .await?;
                    dropped.push(c.name);
                }
            }
            Ok(dropped)
        })
    }

    /// Every point that passes `filter` (all points without one), with the payload fields
    /// `fields` (all of them when `None`), without vectors: a paged scroll.
    pub(crate) fn scroll(
        &self,
        what: &str,
        filter: Option<qdrant_client::qdrant::Filter>,
        fields: Option<&[&str]>,
    ) -> Result<Vec<RetrievedPoint>, IndexError> {
        self.run(async {
            let mut all = Vec::new();
            let mut offset: Option<PointId> = None;
            loop {
                let page = self
                    .retry(what, |c| {
                        let mut request = ScrollPointsBuilder::new(&self.name)
                            .limit(PAGE as u32)
                            .with_vectors(false);
                        request = match fields {
                            Some(keys) => request.with_payload(PayloadIncludeSelector::new(
                                keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
                            )),
                            None => request.with_payload(true),
                        };
                        if let Some(f) = &filter {
                            request = request.filter(f.clone());
                        }
                        if let Some(o) = &offset {
                            request = request.offset(o.clone());
                        }
                        c.scroll(request)
                    })
                    .await?;
                all.extend(page.result);
                match page.next_page_offset {
                    Some(next) => offset = Some(next),
                    None => return Ok(all),
                }
            }
        })
    }

    /// The chunk IDs of every point that passes `filter` (all points without one), sorted,
    /// without duplicates.
    pub(crate) fn scroll_ids(
        &self,
        filter: Option<qdrant_client::qdrant::Filter>,
    ) -> Result<Vec<ChunkId>, IndexError> {
        let mut ids = Vec::new();
        for point in self.scroll("scroll", filter, Some(&[CHUNK_ID]))? {
            let text = payload::string_field(&point.payload, CHUNK_ID)
                .ok_or_else(|| permanent(format!("a point in {} has no chunk_id", self.name)))?;
            ids.push(ChunkId::parse(&text).map_err(|e| {
                permanent(format!("a point in {} has a bad chunk_id: {e}", self.name))
            })?);
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Upserts `points` in batches of the configured size, each acknowledged by the server.
    pub(crate) fn upsert(&self, points: Vec<PointStruct>) -> Result<(), IndexError> {
        self.run(async {
            for batch in points.chunks(self.config.batch_size) {
                self.retry("upsert", |c| {
                    c.upsert_points(UpsertPointsBuilder::new(&self.name, batch.to_vec()).wait(true))
                })
                .await?;
            }
            Ok(())
        })
    }

    /// Those of `ids` stored here.
    pub(crate) fn existing(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>, IndexError> {
        self.run(async {
            let mut out = Vec::new();
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(|id| point_id(id).into()).collect();
                let stored = self
                    .retry("read points", |c| {
                        c.get_points(
                            GetPointsBuilder::new(&self.name, points.clone())
                                .with_payload(PayloadIncludeSelector::new(vec![
                                    CHUNK_ID.to_string(),
                                ]))
                                .with_vectors(false),
                        )
                    })
                    .await?;
                for point in stored.result {
                    let id = payload::string_field(&point.payload, CHUNK_ID);
                    if let Some(id) = part.iter().find(|c| Some(c.as_str()) == id.as_deref()) {
                        out.push(id.clone());
                    }
                }
            }
            Ok(out)
        })
    }

    /// Replaces the payloads of the points of `chunks` that exist, keeping their vectors and
    /// the payload fields named in `kept` (read back first); returns how many existed.
    pub(crate) fn overwrite_payloads(
        &self,
        chunks: &[&Chunk],
        kept: &[&str],
    ) -> Result<usize, IndexError> {
        self.run(async {
            let mut updated = 0;
            for part in chunks.chunks(self.config.batch_size.min(PAGE)) {
                let ids: Vec<PointId> =
                    part.iter().map(|c| point_id(c.chunk_id()).into()).collect();
                let mut fields = vec![CHUNK_ID.to_string()];
                fields.extend(kept.iter().map(|k| k.to_string()));
                let stored = self
                    .retry("read payloads", |c| {
                        c.get_points(
                            GetPointsBuilder::new(&self.name, ids.clone())
                                .with_payload(PayloadIncludeSelector::new(fields.clone()))
                                .with_vectors(false),
                        )
                    })
                    .await?;
                let mut found: HashMap<String, HashMap<String, qdrant_client::qdrant::Value>> =
                    HashMap::new();
                for point in stored.result {
                    if let Some(id) = point.id.as_ref().and_then(payload::point_id_text) {
                        found.insert(id, point.payload);
                    }
                }
                let mut operations = Vec::new();
                for chunk in part {
                    let id = point_id(chunk.chunk_id());
                    let Some(old) = found.get(&id) else {
                        continue;
                    };
                    // A point of another chunk under the same ID is never overwritten.
                    if payload::string_field(old, CHUNK_ID).as_deref()
                        != Some(chunk.chunk_id().as_str())
                    {
                        continue;
                    }
                    let mut new = payload::chunk_payload(chunk)?;
                    for key in kept {
                        if let Some(v) = old.get(*key) {
                            new.insert(*key, v.clone());
                        }
                    }
                    operations.push(PointsUpdateOperation {
                        operation: Some(points_update_operation::Operation::OverwritePayload(
                            points_update_operation::OverwritePayload {
                                payload: new.into(),
                                points_selector: Some(vec![PointId::from(id)].into()),
                                ..Default::default()
                            },
                        )),
                    });
                }
                if operations.is_empty() {
                    continue;
                }
                updated += operations.len();
                self.retry("overwrite payloads", |c| {
                    c.update_points_batch(
                        UpdateBatchPointsBuilder::new(&self.name, operations.clone()).wait(true),
                    )
                })
                .await?;
            }
            Ok(updated)
        })
    }

    /// Deletes the points of the listed chunks.
    pub(crate) fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        self.run(async {
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(|id| point_id(id).into()).collect();
                self.retry("delete chunks", |c| {
                    c.delete_points(
                        DeletePointsBuilder::new(&self.name)
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

    /// Deletes every point of a document.
    pub(crate) fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        let filter = payload::document_filter(doc);
        self.run(async {
            self.retry("delete a document", |c| {
                c.delete_points(
                    DeletePointsBuilder::new(&self.name)
                        .points(filter.clone())
                        .wait(true),
                )
            })
            .await
            .map(|_| ())
        })
    }

    /// The exact number of points.
    pub(crate) fn count(&self) -> Result<usize, IndexError> {
        self.count_where(None)
    }

    /// The exact number of points `filter` matches (all of them without one).
    pub(crate) fn count_where(&self, filter: Option<&QFilter>) -> Result<usize, IndexError> {
        self.run(async {
            let response = self
                .retry("count", |c| {
                    let mut request = CountPointsBuilder::new(&self.name).exact(true);
                    if let Some(f) = filter {
                        request = request.filter(f.clone());
                    }
                    c.count(request)
                })
                .await?;
            Ok(response.result.map(|r| r.count as usize).unwrap_or(0))
        })
    }

    /// The `k` best chunks of the query `request` makes for a limit (vector, filter and
    /// parameters set there), in the order every index promises: Qdrant orders equal scores
    /// arbitrarily and the contract orders them by chunk ID, so a few more than `k` are fetched
    /// and the window widens until the `k`-th score's whole tie group is inside it.
    pub(crate) fn ranked(
        &self,
        what: &str,
        k: usize,
        request: impl Fn(u64) -> QueryPointsBuilder + Send + Sync,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        let mut limit = k + TIE_SLACK;
        loop {
            let query = request(limit as u64).with_payload(true).with_vectors(false);
            let points: Vec<ScoredPoint> = self.run(async {
                self.retry(what, |c| c.query(query.clone()))
                    .await
                    .map(|r| r.result)
            })?;
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
}
