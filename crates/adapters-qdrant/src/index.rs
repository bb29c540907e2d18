//! [`QdrantVectorIndex`]: the [`VectorIndex`] port over a Qdrant collection.

use std::collections::HashMap;
use std::time::Duration;

use qdrant_client::qdrant::{
    CreateCollectionBuilder, Distance, GetPointsBuilder, PayloadIncludeSelector, PointId,
    QueryPointsBuilder, SearchParamsBuilder, VectorParamsBuilder, vector_output, vectors_config,
};
use zhiku_domain::ports::{
    EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk, VectorIndex, VectorIndexExt,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Embedding, EmbeddingSpace, Filter};

use crate::collection::{CHUNK_FIELDS, Collection, MAX_K, PAGE, last_of_each};
use crate::config::QdrantConfig;
use crate::error::{ADAPTER, permanent};
use crate::payload::{self, CHUNK_ID, NORM, point_id, point_id_text, to_point, to_qdrant_filter};

/// Format of the record zhiku keeps in a collection's metadata.
const FORMAT: &str = "zhiku-qdrant/1";

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
/// The port is synchronous and the Qdrant client is async: see [`Collection`] for how a call
/// blocks on the collection's own runtime.
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
    collection: Collection,
    space: EmbeddingSpace,
}

impl std::fmt::Debug for QdrantVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantVectorIndex")
            .field("url", &self.collection.config.url)
            .field("collection", &self.collection.name)
            .field("space", &self.space.identity())
            .finish()
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
        let index = Self {
            collection: Collection::connect(config, collection)?,
            space,
        };
        let create = CreateCollectionBuilder::new(collection).vectors_config(
            VectorParamsBuilder::new(index.space.dims() as u64, Distance::Cosine),
        );
        let (metadata, found) = index.collection.ensure(
            create,
            collection_metadata(&index.space, policy_fingerprint),
            CHUNK_FIELDS,
        )?;
        index.check_collection(&metadata, found, policy_fingerprint)?;
        Ok(index)
    }

    /// The gRPC URL this index talks to.
    pub fn url(&self) -> &str {
        &self.collection.config.url
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection.name
    }

    /// The server's version, from its health check.
    pub fn server_version(&self) -> Result<String, IndexError> {
        self.collection.server_version()
    }

    /// Waits until the server has finished optimising the collection (status green on two
    /// polls 500 ms apart: segments merged and HNSW graphs built), for at most `limit`. Returns
    /// how long it waited and the number of vectors in HNSW graphs. For benchmarks and bulk
    /// loads: searches are correct before that, only slower.
    pub fn wait_until_optimized(&self, limit: Duration) -> Result<(Duration, u64), IndexError> {
        self.collection.wait_until_optimized(limit)
    }

    /// Deletes the collection and everything in it. The index is unusable afterwards.
    pub fn drop_collection(&self) -> Result<(), IndexError> {
        self.collection.drop_collection()
    }

    /// The same index, whose collection is deleted when it is dropped: for tests, benches and
    /// evaluations that work in a collection of their own.
    pub fn dropped_with_handle(mut self) -> Self {
        self.collection.scratch = true;
        self
    }

    /// Deletes every collection of knowledge base `kb` (whatever its space, and its lexical
    /// collection), e.g. before a rebuild. Returns the names deleted. Only names of the exact
    /// form `{prefix}{kb}_{8 hex digits}` are touched.
    pub fn drop_kb_collections(config: &QdrantConfig, kb: &str) -> Result<Vec<String>, IndexError> {
        Collection::drop_tagged(config, &config.kb_prefix(kb))
    }

    fn check_collection(
        &self,
        metadata: &crate::collection::Metadata,
        config: Option<qdrant_client::qdrant::CollectionConfig>,
        policy: Option<&str>,
    ) -> Result<(), IndexError> {
        let name = &self.collection.name;
        if metadata.get("zhiku_format") != Some(&serde_json::json!(FORMAT)) {
            return Err(IndexError::ConfigMismatch {
                what: "Qdrant collection",
                expected: format!(
                    "{name} (not created by zhiku, or by another format than {FORMAT})"
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

    /// The search parameters of the settings: exact, or HNSW with its beam width.
    fn search_params(&self) -> SearchParamsBuilder {
        let config = &self.collection.config;
        let params = SearchParamsBuilder::default().exact(config.exact);
        match config.hnsw_ef {
            Some(ef) => params.hnsw_ef(ef),
            None => params,
        }
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
        let points = last_of_each(items, |i| i.chunk.chunk_id())
            .into_iter()
            .map(to_point)
            .collect::<Result<Vec<_>, _>>()?;
        self.collection.upsert(points)
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        // The payload is replaced whole (a field the new record leaves out must not survive),
        // the vector's norm kept.
        let last = last_of_each(chunks, Chunk::chunk_id);
        self.collection.overwrite_payloads(&last, &[NORM])
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        self.collection.delete_chunks(ids)
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        self.collection.delete_document(doc)
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
        self.collection.ranked("search", k, |limit| {
            QueryPointsBuilder::new(&self.collection.name)
                .query(vector.to_vec())
                .filter(qfilter.clone())
                .limit(limit)
                .params(self.search_params())
        })
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        self.collection
            .scroll_ids(Some(payload::document_filter(doc)))
    }

    /// A paged scroll over the whole collection.
    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.collection.scroll_ids(None)
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: HashMap<String, (String, Vec<f32>, f64)> = HashMap::new();
        let collection = &self.collection;
        collection.run(async {
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(|id| point_id(id).into()).collect();
                let response = collection
                    .retry("read vectors", |c| {
                        c.get_points(
                            GetPointsBuilder::new(&collection.name, points.clone())
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
                                collection.name
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
        self.collection.count()
    }

    /// Every write already waited for the server's acknowledgement, so there is nothing to do.
    fn commit(&self) -> Result<(), IndexError> {
        Ok(())
    }
}
