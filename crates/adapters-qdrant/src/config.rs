//! How to reach the server and how to lay out collections on it.

use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use zhiku_domain::EmbeddingSpace;

/// Connection and layout settings of a [`QdrantVectorIndex`](crate::QdrantVectorIndex).
///
/// Deserialises from the `[qdrant]` table of `zhiku.toml`: `url`, `api_key`,
/// `collection_prefix`, `timeout_ms`, `shards`, `replication`, `batch`, `hnsw_ef`, `exact`; a
/// key left out keeps its default, an unknown key is an error. Check a deserialised value with
/// [`QdrantConfig::check`].
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QdrantConfig {
    /// gRPC URL of the server, e.g. `http://127.0.0.1:6334` (the gRPC port, not the REST one);
    /// for a cluster, several nodes' URLs, comma-separated: requests go to the first, and to the
    /// next when the one in use cannot be reached.
    pub url: String,
    /// API key, when the server requires one (sent as the `api-key` header).
    pub api_key: Option<String>,
    /// The knowledge base's name on the deployment, the same on every machine that serves it
    /// (its collections are named after it). Unset: named after the store folder and a hash
    /// of its absolute path, which only one machine shares.
    pub knowledge_base: Option<String>,
    /// Prefix of every collection zhiku creates, so one server can host several installations.
    pub collection_prefix: String,
    /// Deadline of one request; connecting gets the same deadline, at most 5 s.
    #[serde(rename = "timeout_ms", deserialize_with = "millis")]
    pub timeout: Duration,
    /// Points per upsert request.
    #[serde(rename = "batch")]
    pub batch_size: usize,
    /// Shards of a new collection (a distributed cluster spreads them over its nodes).
    #[serde(rename = "shards")]
    pub shard_number: u32,
    /// Copies of each shard in a new collection (a distributed cluster keeps them on different
    /// nodes).
    #[serde(rename = "replication")]
    pub replication_factor: u32,
    /// Retries of a request that failed with a temporary error (unavailable, timeout,
    /// overloaded) before the error is reported.
    #[serde(skip)]
    pub max_retries: u32,
    /// Delay before the first retry; it doubles on each further retry, up to 5 s.
    #[serde(skip)]
    pub initial_backoff: Duration,
    /// The HNSW beam width of a search (`hnsw_ef`); `None` leaves it to the server (which
    /// uses the collection's `ef_construct`, 100 by default). Larger finds more of the true
    /// nearest neighbours and costs more per search. 256 by default: on 100,000 chunks it
    /// found 0.995 / 0.992 of the exact top 10 (all scopes / one scope; the server's beam
    /// 0.975 / 0.963) at 13.5 / 10.2 ms p50 (`bench/cluster/SCALE.md`).
    pub hnsw_ef: Option<u64>,
    /// Exact (brute-force) search instead of HNSW: every point is scored. For measurements of
    /// recall and for small collections.
    pub exact: bool,
}

/// The search beam when none is configured (see [`QdrantConfig::hnsw_ef`]).
pub const DEFAULT_HNSW_EF: u64 = 256;

impl Default for QdrantConfig {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:6334".into(),
            api_key: None,
            knowledge_base: None,
            collection_prefix: "zhiku_".into(),
            timeout: Duration::from_secs(10),
            batch_size: 256,
            shard_number: 1,
            replication_factor: 1,
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            hnsw_ef: Some(DEFAULT_HNSW_EF),
            exact: false,
        }
    }
}

impl std::fmt::Debug for QdrantConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key itself.
        f.debug_struct("QdrantConfig")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("knowledge_base", &self.knowledge_base)
            .field("collection_prefix", &self.collection_prefix)
            .field("timeout", &self.timeout)
            .field("batch_size", &self.batch_size)
            .field("shard_number", &self.shard_number)
            .field("replication_factor", &self.replication_factor)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("hnsw_ef", &self.hnsw_ef)
            .field("exact", &self.exact)
            .finish()
    }
}

/// A duration written in milliseconds.
fn millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_millis(u64::deserialize(d)?))
}

impl QdrantConfig {
    /// Why these settings cannot be used, if they cannot: a timeout, shard count, replication
    /// or batch of 0, a URL that is not `http(s)://`, a collection prefix other than ASCII
    /// letters, digits, `_` and `-`.
    pub fn check(&self) -> Result<(), String> {
        if self.timeout.is_zero() || self.shard_number == 0 || self.replication_factor == 0 {
            return Err("qdrant timeout_ms, shards and replication must be at least 1".into());
        }
        if self.batch_size == 0 {
            return Err("qdrant batch must be at least 1".into());
        }
        if self.hnsw_ef == Some(0) {
            return Err("qdrant hnsw_ef must be at least 1".into());
        }
        // Each node of the list (or the one URL) must be a gRPC URL.
        let urls: Vec<&str> = self.url.split(',').map(str::trim).collect();
        if urls
            .iter()
            .any(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            return Err(format!(
                "qdrant url {:?} must start with http:// or https:// (the gRPC port, e.g. http://127.0.0.1:6334; a cluster's nodes comma-separated)",
                self.url
            ));
        }
        if self.collection_prefix.is_empty()
            || !self
                .collection_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "qdrant collection_prefix {:?} may contain only ASCII letters, digits, _ and -",
                self.collection_prefix
            ));
        }
        Ok(())
    }

    /// The defaults with another URL.
    pub fn with_url(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// The collection of knowledge base `kb` in `space`:
    /// `{prefix}{kb}_{first 8 hex of sha256(space identity)}`, with `kb` reduced to lower-case
    /// ASCII letters, digits, `-` and `_`. A new model or model revision therefore gets a new
    /// collection instead of mixing vectors of two spaces.
    pub fn collection_name(&self, kb: &str, space: &EmbeddingSpace) -> String {
        format!(
            "{}{}_{}",
            self.collection_prefix,
            sanitize(kb),
            space_tag(space)
        )
    }

    /// The lexical collection of knowledge base `kb` for the analyzer `analyzer`:
    /// `{prefix}{kb}_{first 8 hex of sha256("lexical " + analyzer identity)}`, so that it is
    /// one of the knowledge base's collections (a rebuild drops it with the others) and a new
    /// analyzer gets a new collection.
    pub fn lexical_collection_name(&self, kb: &str, analyzer: &str) -> String {
        let digest = Sha256::digest(format!("lexical {analyzer}").as_bytes());
        let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}{}_{tag}", self.collection_prefix, sanitize(kb))
    }

    /// The catalog collection of knowledge base `kb` (see
    /// [`tagged_collection_name`](Self::tagged_collection_name)).
    pub fn catalog_collection_name(&self, kb: &str) -> String {
        self.tagged_collection_name(kb, "catalog")
    }

    /// The collection of knowledge base `kb` that holds `what` (`catalog`, `audit`):
    /// `{prefix}{kb}_{first 8 hex of sha256(what)}`, one of the knowledge base's collections (a
    /// rebuild drops it with the others).
    pub fn tagged_collection_name(&self, kb: &str, what: &str) -> String {
        let digest = Sha256::digest(what.as_bytes());
        let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}{}_{tag}", self.collection_prefix, sanitize(kb))
    }

    /// The start every collection of `kb` shares, whatever its space.
    pub fn kb_prefix(&self, kb: &str) -> String {
        format!("{}{}_", self.collection_prefix, sanitize(kb))
    }
}

/// First 8 hex digits of the sha256 of the space identity.
pub(crate) fn space_tag(space: &EmbeddingSpace) -> String {
    let digest = Sha256::digest(space.identity().as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

fn sanitize(kb: &str) -> String {
    let mut out: String = kb
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    if out.is_empty() {
        out.push_str("kb");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::{Normalization, Pooling};

    #[test]
    fn collection_names_depend_on_kb_and_space() {
        let a = EmbeddingSpace::new("m", "v1", 4, Pooling::Cls, Normalization::L2).unwrap();
        let b = EmbeddingSpace::new("m", "v2", 4, Pooling::Cls, Normalization::L2).unwrap();
        let c = QdrantConfig::default();
        let name = c.collection_name("My KB/知库", &a);
        assert!(name.starts_with("zhiku_my_kb____"), "{name}");
        assert!(name.starts_with(&c.kb_prefix("My KB/知库")));
        assert_eq!(name.len(), "zhiku_my_kb____".len() + 8);
        assert_ne!(name, c.collection_name("My KB/知库", &b));
        assert_eq!(name, c.collection_name("My KB/知库", &a));
        assert!(c.collection_name("", &a).starts_with("zhiku_kb_"));
    }

    #[test]
    fn debug_hides_the_api_key() {
        let c = QdrantConfig {
            api_key: Some("secret".into()),
            ..QdrantConfig::default()
        };
        assert!(!format!("{c:?}").contains("secret"));
    }
}
