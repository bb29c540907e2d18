//! [`QdrantLexicalIndex`]: the [`LexicalIndex`] port as sparse vectors in a Qdrant collection,
//! so that the lexical route of a knowledge base lives on the cluster with its vectors.
//!
//! # Scoring
//!
//! A chunk's terms are those of the embedded store's tantivy index: zhiku's own analyzer
//! ([`zhiku_analyzer`], the same [`ANALYZER_IDENTITY`]: Traditional folded to Simplified, jieba,
//! stop words). Each term becomes one dimension of a sparse vector, its index a stable hash of
//! the term (the first four bytes of its SHA-256; two terms that collide share a dimension, as
//! two words share a hash bucket: at a million distinct terms about a hundred pairs, each
//! lifting a chunk that holds one of the two terms for a query that names the other).
//!
//! The value of a dimension is BM25's term-frequency part, computed here:
//! `tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))`. A term of the title has a dimension of its
//! own ([`title_index`]) with the title's length and average, as tantivy keeps the title its own
//! field; so do the Han pairs of the title and content read together
//! ([`zhiku_analyzer::pairs`], the dictionary-free field beside the words), with their own
//! length and average, their query dimensions weighed [`PAIRS_WEIGHT`]. The collection's
//! sparse vector carries Qdrant's IDF modifier, so the server multiplies
//! each dimension by its inverse document frequency over the points it holds now
//! (`ln(1 + (N − n + 0.5)/(n + 0.5))`, BM25's: for a title dimension, over titles), and a query
//! vector holds each query term's count in both of its dimensions. The score of a chunk is
//! then BM25 over content and title as tantivy computes it, with one difference: the average
//! lengths are measured once, on the first write to a new collection, recorded in its metadata
//! and used for every later write ([`Bm25`]), instead of measured over the whole index at query
//! time (which a sparse vector, weighted when written, cannot do).
//!
//! Filters are payload conditions inside the query, as in the dense collection.
//!
//! The collection has one shard, replicated as configured: the IDF modifier counts document
//! frequencies per shard, so several shards would score one chunk differently in each.

use std::collections::{BTreeMap, HashMap};

use qdrant_client::qdrant::{
    CreateCollectionBuilder, Modifier, PointStruct, QueryPointsBuilder, SparseVectorParamsBuilder,
    SparseVectorsConfigBuilder, Vector,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zhiku_analyzer::{ANALYZER_IDENTITY, PAIRS_WEIGHT, analyze, jieba, pairs};
use zhiku_domain::ports::{IndexCapabilities, IndexError, LexicalIndex, ScoredChunk};
use zhiku_domain::{Chunk, ChunkId, DocId, Filter};

use crate::collection::{CHUNK_FIELDS, Collection, MAX_K, Metadata, last_of_each};
use crate::config::QdrantConfig;
use crate::error::ADAPTER;
use crate::payload::{chunk_payload, document_filter, point_id, to_qdrant_filter};

/// Format of the record zhiku keeps in a lexical collection's metadata.
const FORMAT: &str = "zhiku-qdrant-lexical/3";
/// The name of the sparse vector in a lexical collection.
const TERMS: &str = "terms";

/// BM25's parameters for the term weights written into the collection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25 {
    /// Term-frequency saturation (tantivy's 1.2).
    pub k1: f32,
    /// Length normalisation (tantivy's 0.75).
    pub b: f32,
    /// The content length, in terms, that counts as average; `None` until the first write
    /// measures it.
    pub avg_len: Option<f32>,
    /// The title length, in terms, that counts as average; `None` until the first write
    /// measures it.
    pub avg_title_len: Option<f32>,
    /// The length in Han pairs ([`pairs`]) of a title and content read together that counts
    /// as average; `None` until the first write measures it.
    #[serde(default)]
    pub avg_pairs_len: Option<f32>,
}

impl Default for Bm25 {
    /// tantivy's `k1` and `b`; the averages measured on the first write.
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.75,
            avg_len: None,
            avg_title_len: None,
            avg_pairs_len: None,
        }
    }
}

/// A chunk's terms with their counts, in its content and in its title, and the Han pairs of
/// both read together (the field beside the words, as tantivy keeps it).
struct Terms {
    content: HashMap<String, u32>,
    title: HashMap<String, u32>,
    pairs: HashMap<String, u32>,
}

impl Terms {
    fn of(chunk: &Chunk) -> Self {
        let text = chunk.indexed_text();
        let title = chunk.doc().title.as_str();
        Self {
            content: counts(&text),
            title: counts(title),
            pairs: pair_counts(&zhiku_analyzer::titled(title, &text)),
        }
    }

    /// Lengths of the content, the title and the pairs.
    fn lengths(&self) -> [f32; 3] {
        let len = |m: &HashMap<String, u32>| m.values().sum::<u32>() as f32;
        [len(&self.content), len(&self.title), len(&self.pairs)]
    }
}

impl Bm25 {
    /// BM25's term-frequency part for `tf` occurrences in a field of `len` terms.
    fn tf(&self, tf: f32, len: f32, avg: f32) -> f32 {
        if tf <= 0.0 {
            return 0.0;
        }
        let norm = 1.0 - self.b + self.b * len / avg.max(1.0);
        tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }

    /// These parameters with the averages of `batch` where they are not known yet.
    fn measured_on(self, batch: &[Terms]) -> Self {
        let n = batch.len().max(1) as f32;
        let sums = batch
            .iter()
            .map(Terms::lengths)
            .fold([0.0; 3], |a, l| [a[0] + l[0], a[1] + l[1], a[2] + l[2]]);
        let avg = |i: usize| Some((sums[i] / n).max(1.0));
        Self {
            avg_len: self.avg_len.or(avg(0)),
            avg_title_len: self.avg_title_len.or(avg(1)),
            avg_pairs_len: self.avg_pairs_len.or(avg(2)),
            ..self
        }
    }

    /// True once every average is known.
    fn measured(&self) -> bool {
        self.avg_len.is_some() && self.avg_title_len.is_some() && self.avg_pairs_len.is_some()
    }

    /// The sparse vector of a chunk: one dimension per distinct term of its content, of its
    /// title and of its Han pairs, each field with its own length.
    fn chunk_vector(&self, terms: &Terms) -> Vec<(u32, f32)> {
        let lengths = terms.lengths();
        let averages = [self.avg_len, self.avg_title_len, self.avg_pairs_len];
        let fields: [(&HashMap<String, u32>, Field); 3] = [
            (&terms.content, Field::Content),
            (&terms.title, Field::Title),
            (&terms.pairs, Field::Pairs),
        ];
        let mut weights: BTreeMap<u32, f32> = BTreeMap::new();
        for (i, (counted, field)) in fields.into_iter().enumerate() {
            let (len, avg) = (lengths[i], averages[i].unwrap_or(lengths[i]));
            for (term, tf) in counted {
                *weights.entry(field.index(term)).or_default() += self.tf(*tf as f32, len, avg);
            }
        }
        weights.into_iter().filter(|(_, w)| *w > 0.0).collect()
    }
}

/// The terms of `text` with their counts.
fn counts(text: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    for (term, _, _) in analyze(&jieba(), text) {
        *out.entry(term).or_insert(0) += 1;
    }
    out
}

/// The Han pairs of `text` with their counts.
fn pair_counts(text: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    for (term, _, _) in pairs(text) {
        *out.entry(term).or_insert(0) += 1;
    }
    out
}

/// The fields a chunk's sparse vector has dimensions for, as tantivy's fields.
#[derive(Debug, Clone, Copy)]
enum Field {
    Content,
    Title,
    Pairs,
}

impl Field {
    /// The dimension of `term` in this field.
    fn index(self, term: &str) -> u32 {
        match self {
            Self::Content => term_index(term),
            Self::Title => title_index(term),
            Self::Pairs => term_index(&format!("\u{0}pairs\u{0}{term}")),
        }
    }
}

/// The dimension of a term: the first four bytes of its SHA-256, big-endian.
pub fn term_index(term: &str) -> u32 {
    let digest = Sha256::digest(term.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The dimension of a term in a title: the hash of the term behind a prefix no analyzer term
/// holds, so that a title term has its own dimension and the server counts its document
/// frequency over titles alone, as tantivy does for its title field.
pub fn title_index(term: &str) -> u32 {
    term_index(&format!("\u{0}title\u{0}{term}"))
}

/// The sparse query vector of a question: each term's count in its content dimension and in
/// its title dimension, and each Han pair's count times [`PAIRS_WEIGHT`] in its pair
/// dimension, as tantivy sums one clause per query term and field.
fn query_vector(query: &str) -> Vec<(u32, f32)> {
    let mut weights: BTreeMap<u32, f32> = BTreeMap::new();
    for (term, count) in counts(query) {
        *weights.entry(term_index(&term)).or_default() += count as f32;
        *weights.entry(title_index(&term)).or_default() += count as f32;
    }
    for (pair, count) in pair_counts(query) {
        *weights.entry(Field::Pairs.index(&pair)).or_default() += count as f32 * PAIRS_WEIGHT;
    }
    weights.into_iter().collect()
}

/// A lexical index of chunks in one Qdrant collection of sparse vectors (see the module
/// documentation for the scoring). Each point holds the chunk's record, as a point of the
/// dense collection does, so a search returns whole chunks in one request. Every write waits
/// for the server's acknowledgement; [`commit`](LexicalIndex::commit) has nothing left to do.
pub struct QdrantLexicalIndex {
    collection: Collection,
    /// The parameters the collection records; its averages are set once, by the first write.
    bm25: std::sync::RwLock<Bm25>,
}

impl std::fmt::Debug for QdrantLexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantLexicalIndex")
            .field("url", &self.collection.config.url)
            .field("collection", &self.collection.name)
            .field("bm25", &self.bm25())
            .finish()
    }
}

impl QdrantLexicalIndex {
    /// Opens the lexical collection of knowledge base `kb` (see
    /// [`QdrantConfig::lexical_collection_name`]), creating it with `bm25` when it does not
    /// exist. An existing collection keeps the parameters it was created with.
    pub fn open(config: &QdrantConfig, kb: &str, bm25: Bm25) -> Result<Self, IndexError> {
        let name = config.lexical_collection_name(kb, ANALYZER_IDENTITY);
        Self::open_collection(config, &name, bm25)
    }

    /// Opens or creates the collection `collection`. One that exists must be a zhiku lexical
    /// collection of this analyzer: otherwise [`IndexError::ConfigMismatch`]. A server that
    /// cannot be reached is [`IndexError::Unavailable`].
    pub fn open_collection(
        config: &QdrantConfig,
        collection: &str,
        bm25: Bm25,
    ) -> Result<Self, IndexError> {
        // One shard: Qdrant's IDF modifier counts document frequencies per shard, so on several
        // shards the same chunk scores differently in each (on a 6-shard cluster, identical
        // chunks stopped tying). Replication still spreads the copies over the nodes.
        let config = QdrantConfig {
            shard_number: 1,
            ..config.clone()
        };
        let connected = Collection::connect(&config, collection)?;
        let mut sparse = SparseVectorsConfigBuilder::default();
        sparse.add_named_vector_params(
            TERMS,
            SparseVectorParamsBuilder::default().modifier(Modifier::Idf),
        );
        let create = CreateCollectionBuilder::new(collection).sparse_vectors_config(sparse);
        let (metadata, _) = connected.ensure(create, lexical_metadata(&bm25), CHUNK_FIELDS)?;
        let bm25 = check_metadata(collection, &metadata)?;
        Ok(Self {
            collection: connected,
            bm25: std::sync::RwLock::new(bm25),
        })
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection.name
    }

    /// The gRPC URL this index talks to.
    pub fn url(&self) -> &str {
        &self.collection.config.url
    }

    /// The BM25 parameters the collection's weights were written with.
    pub fn bm25(&self) -> Bm25 {
        *self.bm25.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The parameters to weigh `batch` with: the recorded ones, once the collection records
    /// its averages; before that (the first write to a new collection), the averages of
    /// `batch`, recorded first. Another writer may record first: what the collection records
    /// after this write's attempt is what every write uses.
    fn parameters_for(&self, batch: &[Terms]) -> Result<Bm25, IndexError> {
        let known = self.bm25();
        if known.measured() {
            return Ok(known);
        }
        let measured_both = Bm25::measured;
        let mut recorded = check_metadata(&self.collection.name, &self.collection.metadata()?)?;
        if !measured_both(&recorded) && self.collection.count()? > 0 {
            // Chunks are there, so their writer recorded averages: a node that has not applied
            // that change yet (a cluster under load took more than 2 s) must not be answered
            // with a second measure. Wait for it (up to 10 s) before measuring.
            if let Some(read) = self.recorded_averages(200)? {
                recorded = read;
            }
        }
        if !measured_both(&recorded) {
            let measured = recorded.measured_on(batch);
            self.collection.set_metadata(lexical_metadata(&measured))?;
            // A cluster applies a metadata change through its consensus: a read right after it
            // may not show it yet. Read until it does; past that, the writer's own measure
            // stands (writers of a knowledge base take turns, so no other wrote one meanwhile).
            recorded = self.recorded_averages(40)?.unwrap_or(measured);
        }
        *self.bm25.write().unwrap_or_else(|e| e.into_inner()) = recorded;
        Ok(recorded)
    }

    /// The parameters the collection's metadata records once it records both averages, read
    /// up to `tries` times 50 ms apart (a cluster shows a metadata change once its consensus
    /// applied it); `None` when it still does not.
    fn recorded_averages(&self, tries: usize) -> Result<Option<Bm25>, IndexError> {
        for attempt in 0..tries {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let read = check_metadata(&self.collection.name, &self.collection.metadata()?)?;
            if read.measured() {
                return Ok(Some(read));
            }
        }
        Ok(None)
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

    fn point(bm25: &Bm25, chunk: &Chunk, terms: &Terms) -> Result<PointStruct, IndexError> {
        let (indices, values): (Vec<u32>, Vec<f32>) = bm25.chunk_vector(terms).into_iter().unzip();
        let vectors = HashMap::from([(TERMS.to_string(), Vector::new_sparse(indices, values))]);
        Ok(PointStruct::new(
            point_id(chunk.chunk_id()),
            vectors,
            chunk_payload(chunk)?,
        ))
    }
}

/// What zhiku records in a lexical collection's metadata.
fn lexical_metadata(bm25: &Bm25) -> Metadata {
    HashMap::from([
        ("zhiku_format".to_string(), serde_json::json!(FORMAT)),
        ("analyzer".to_string(), serde_json::json!(ANALYZER_IDENTITY)),
        (
            "bm25".to_string(),
            serde_json::to_value(bm25).unwrap_or(serde_json::Value::Null),
        ),
    ])
}

/// The BM25 parameters a lexical collection records, after checking it is one of this analyzer.
fn check_metadata(name: &str, metadata: &Metadata) -> Result<Bm25, IndexError> {
    if metadata.get("zhiku_format") != Some(&serde_json::json!(FORMAT)) {
        return Err(IndexError::ConfigMismatch {
            what: "Qdrant collection",
            expected: format!("{name} (not created by zhiku, or by another format than {FORMAT})"),
            found: format!("a {FORMAT} collection"),
        });
    }
    match metadata.get("analyzer") {
        Some(serde_json::Value::String(recorded)) if recorded == ANALYZER_IDENTITY => {}
        other => {
            return Err(IndexError::ConfigMismatch {
                what: "analyzer",
                expected: other.map(ToString::to_string).unwrap_or_default(),
                found: ANALYZER_IDENTITY.to_string(),
            });
        }
    }
    metadata
        .get("bm25")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .ok_or_else(|| IndexError::ConfigMismatch {
            what: "Qdrant lexical collection",
            expected: format!("{name} with its BM25 parameters recorded"),
            found: "none recorded".into(),
        })
}

impl LexicalIndex for QdrantLexicalIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: ADAPTER,
            persistent: true,
            max_k: MAX_K,
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn analyzer(&self) -> String {
        ANALYZER_IDENTITY.to_string()
    }

    fn upsert(&self, chunks: &[Chunk]) -> Result<(), IndexError> {
        // The last write of a chunk wins, as with sequential upserts.
        let last = last_of_each(chunks, Chunk::chunk_id);
        if last.is_empty() {
            return Ok(());
        }
        let terms: Vec<Terms> = last.iter().map(|c| Terms::of(c)).collect();
        let bm25 = self.parameters_for(&terms)?;
        let points = last
            .iter()
            .zip(&terms)
            .map(|(chunk, terms)| Self::point(&bm25, chunk, terms))
            .collect::<Result<Vec<_>, _>>()?;
        self.collection.upsert(points)
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        // A title counts in a chunk's terms: the stored ones are written again (their text
        // analysed again; nothing is embedded).
        let last = last_of_each(chunks, Chunk::chunk_id);
        let ids: Vec<ChunkId> = last.iter().map(|c| c.chunk_id().clone()).collect();
        let stored: std::collections::HashSet<ChunkId> =
            self.collection.existing(&ids)?.into_iter().collect();
        let kept: Vec<Chunk> = last
            .into_iter()
            .filter(|c| stored.contains(c.chunk_id()))
            .cloned()
            .collect();
        self.upsert(&kept)?;
        Ok(kept.len())
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        self.collection.delete_chunks(ids)
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        self.collection.delete_document(doc)
    }

    fn search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        let vector = query_vector(query);
        if vector.is_empty() {
            return Ok(Vec::new());
        }
        let Some(qfilter) = to_qdrant_filter(filter) else {
            return Ok(Vec::new());
        };
        self.collection.ranked("lexical search", k, |limit| {
            QueryPointsBuilder::new(&self.collection.name)
                .query(vector.clone())
                .using(TERMS)
                .filter(qfilter.clone())
                .limit(limit)
        })
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        self.collection.scroll_ids(Some(document_filter(doc)))
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.collection.scroll_ids(None)
    }

    fn count(&self) -> Result<usize, IndexError> {
        self.collection.count()
    }

    /// Every write already waited for the server's acknowledgement.
    fn commit(&self) -> Result<(), IndexError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_indexes_are_stable() {
        // Pinned: a changed hash would silently split every stored collection's terms.
        assert_eq!(term_index("检索"), term_index("检索"));
        assert_ne!(term_index("检索"), term_index("索引"));
        assert_eq!(term_index("bm25"), 0x635d_603d);
    }

    #[test]
    fn weights_saturate_and_shorter_fields_weigh_more() {
        let bm25 = Bm25 {
            avg_len: Some(260.0),
            ..Bm25::default()
        };
        let one = bm25.tf(1.0, 260.0, 260.0);
        let many = bm25.tf(10.0, 260.0, 260.0);
        assert!(
            one > 0.0 && many > one && many < bm25.k1 + 1.0,
            "{one} {many}"
        );
        assert!(bm25.tf(1.0, 50.0, 260.0) > one);
        assert_eq!(bm25.tf(0.0, 10.0, 260.0), 0.0);
    }

    #[test]
    fn traditional_and_simplified_queries_give_one_vector() {
        assert_eq!(query_vector("資料庫的檢索"), query_vector("资料库的检索"));
        assert!(query_vector("，。的").is_empty());
        // A repeated word counts twice, as tantivy sums one clause per query word; its Han
        // pairs count at their weight in their own dimensions.
        let mut twice = vec![(term_index("检索"), 2.0), (title_index("检索"), 2.0)];
        for pair in ["检", "索", "检索"] {
            twice.push((Field::Pairs.index(pair), 2.0 * PAIRS_WEIGHT));
        }
        twice.sort_by_key(|(i, _)| *i);
        assert_eq!(query_vector("检索 检索"), twice);
    }
}
