//! The `[qdrant]` table of `zhiku.toml` and the `ZHIKU_QDRANT_*` variables: where the `prod`
//! profile keeps its vectors.
//!
//! ```toml
//! [qdrant]
//! url = "http://127.0.0.1:6334"   # gRPC port
//! api_key = "…"                     # better: ZHIKU_QDRANT_API_KEY
//! collection_prefix = "zhiku_"
//! timeout_ms = 10000
//! shards = 1                        # shards of a new collection (distributed mode)
//! replication = 1                   # copies of each shard (distributed mode)
//! batch = 256                       # points per upsert request
//! ```
//!
//! The store keeps the manifest and the lexical index on local disk and the vectors in one
//! collection per store and embedding space, named after the knowledge-base folder and a short
//! hash of the store's absolute path (see [`kb_name`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};
use zhiku_domain::EmbeddingSpace;

/// The `[qdrant]` table as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QdrantTable {
    url: Option<String>,
    api_key: Option<String>,
    collection_prefix: Option<String>,
    timeout_ms: Option<u64>,
    shards: Option<u32>,
    replication: Option<u32>,
    batch: Option<usize>,
}

/// The resolved Qdrant settings.
#[derive(Clone, Serialize)]
pub struct QdrantSettings {
    /// gRPC URL.
    pub url: String,
    /// API key (never serialised or printed).
    #[serde(skip)]
    pub api_key: Option<String>,
    /// Prefix of zhiku's collections.
    pub collection_prefix: String,
    /// Request timeout in milliseconds.
    pub timeout_ms: u64,
    /// Shards of a new collection.
    pub shards: u32,
    /// Replication factor of a new collection.
    pub replication: u32,
    /// Points per upsert request.
    pub batch: usize,
}

impl std::fmt::Debug for QdrantSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantSettings")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("collection_prefix", &self.collection_prefix)
            .field("timeout_ms", &self.timeout_ms)
            .field("shards", &self.shards)
            .field("replication", &self.replication)
            .field("batch", &self.batch)
            .finish()
    }
}

impl QdrantSettings {
    /// Resolves the settings: `ZHIKU_QDRANT_*` variables over the `[qdrant]` table over the
    /// adapter's defaults. Pushes each value's origin onto `origins`.
    pub fn resolve(
        table: Option<&QdrantTable>,
        env: &dyn Fn(&str) -> Option<String>,
        origins: &mut Vec<(String, String)>,
    ) -> Result<Self> {
        let defaults = QdrantConfig::default();
        let empty = QdrantTable::default();
        let table = table.unwrap_or(&empty);
        fn pick<T: std::str::FromStr + Clone>(
            key: &str,
            var: &str,
            from_file: Option<T>,
            default: T,
            env: &dyn Fn(&str) -> Option<String>,
            origins: &mut Vec<(String, String)>,
        ) -> Result<T> {
            let (value, origin) = match env(var).filter(|v| !v.is_empty()) {
                Some(text) => match text.trim().parse::<T>() {
                    Ok(v) => (v, var.to_string()),
                    Err(_) => bail!("{var}={text:?} is not a valid value"),
                },
                None => match from_file {
                    Some(v) => (v, "zhiku.toml [qdrant]".to_string()),
                    None => (default, "built-in default".to_string()),
                },
            };
            origins.push((format!("qdrant.{key}"), origin));
            Ok(value)
        }
        let settings = Self {
            url: pick(
                "url",
                "ZHIKU_QDRANT_URL",
                table.url.clone(),
                defaults.url.clone(),
                env,
                origins,
            )?,
            api_key: env("ZHIKU_QDRANT_API_KEY")
                .filter(|v| !v.is_empty())
                .or_else(|| table.api_key.clone()),
            collection_prefix: pick(
                "collection_prefix",
                "ZHIKU_QDRANT_COLLECTION_PREFIX",
                table.collection_prefix.clone(),
                defaults.collection_prefix.clone(),
                env,
                origins,
            )?,
            timeout_ms: pick(
                "timeout_ms",
                "ZHIKU_QDRANT_TIMEOUT_MS",
                table.timeout_ms,
                defaults.timeout.as_millis() as u64,
                env,
                origins,
            )?,
            shards: pick(
                "shards",
                "ZHIKU_QDRANT_SHARDS",
                table.shards,
                defaults.shard_number,
                env,
                origins,
            )?,
            replication: pick(
                "replication",
                "ZHIKU_QDRANT_REPLICATION",
                table.replication,
                defaults.replication_factor,
                env,
                origins,
            )?,
            batch: pick(
                "batch",
                "ZHIKU_QDRANT_BATCH",
                table.batch,
                defaults.batch_size,
                env,
                origins,
            )?,
        };
        if settings.timeout_ms == 0 || settings.shards == 0 || settings.replication == 0 {
            bail!("qdrant timeout_ms, shards and replication must be at least 1");
        }
        if settings.batch == 0 {
            bail!("qdrant batch must be at least 1");
        }
        if !(settings.url.starts_with("http://") || settings.url.starts_with("https://")) {
            bail!(
                "qdrant url {:?} must start with http:// or https:// (the gRPC port, e.g. http://127.0.0.1:6334)",
                settings.url
            );
        }
        if settings.collection_prefix.is_empty()
            || !settings
                .collection_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            bail!(
                "qdrant collection_prefix {:?} may contain only ASCII letters, digits, _ and -",
                settings.collection_prefix
            );
        }
        Ok(settings)
    }

    /// The adapter's configuration.
    pub fn adapter_config(&self) -> QdrantConfig {
        QdrantConfig {
            url: self.url.clone(),
            api_key: self.api_key.clone(),
            collection_prefix: self.collection_prefix.clone(),
            timeout: Duration::from_millis(self.timeout_ms),
            batch_size: self.batch,
            shard_number: self.shards,
            replication_factor: self.replication,
            ..QdrantConfig::default()
        }
    }
}

/// The knowledge-base part of the collection name of the store in `store_dir`: the folder's
/// name (the knowledge base's when the store is its `.zhiku/`) and 8 hex digits of the sha256 of
/// the store's absolute path, so two stores never share a collection (a store deletes vectors
/// its manifest does not list).
pub fn kb_name(store_dir: &Path) -> Result<String> {
    let absolute = std::fs::canonicalize(store_dir)
        .with_context(|| format!("cannot resolve the store {}", store_dir.display()))?;
    let named = if absolute.file_name().is_some_and(|n| n == ".zhiku") {
        absolute.parent().unwrap_or(&absolute)
    } else {
        &absolute
    };
    let name = named
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kb".into());
    let hash = zhiku_domain::sha256_hex(absolute.to_string_lossy().as_bytes());
    Ok(format!("{name}-{}", &hash[..8]))
}

/// Drops every collection of the store in `dir` before a rebuild. Runs before any local file
/// is deleted, so a server that cannot be reached leaves the store whole.
pub fn drop_before_rebuild(settings: &QdrantSettings, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create store {}", dir.display()))?;
    let kb = kb_name(dir)?;
    QdrantVectorIndex::drop_kb_collections(&settings.adapter_config(), &kb).map_err(|e| {
        anyhow!(
            "cannot drop this store's Qdrant collections before the rebuild ({e}); nothing was changed"
        )
    })?;
    Ok(())
}

/// The vector server cannot be reached, so nothing can be indexed now.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot index: the vector index is unreachable ({reason}); nothing was recorded, run zhiku index again once the server is back"
)]
pub struct VectorsUnavailable {
    /// The adapter's error.
    pub reason: String,
}

/// Opens the collection of the store in `dir` for `space`. When the server cannot be reached,
/// a read-only open returns `None` and says why in `notice` (retrieval goes lexical), and a
/// writing open fails with [`VectorsUnavailable`]. Other adapter errors come back as
/// [`IndexError`](zhiku_domain::ports::IndexError) inside the `anyhow` error.
pub fn open_for_store(
    settings: &QdrantSettings,
    dir: &Path,
    space: &EmbeddingSpace,
    policy_fingerprint: &str,
    read_only: bool,
    picked: &mut Vec<(String, String)>,
    notice: &mut Option<String>,
) -> Result<Option<Arc<QdrantVectorIndex>>> {
    let kb = kb_name(dir)?;
    match QdrantVectorIndex::open(
        &settings.adapter_config(),
        &kb,
        space.clone(),
        Some(policy_fingerprint),
    ) {
        Ok(index) => {
            picked.push((
                "qdrant".into(),
                format!("collection {} on {}", index.collection(), index.url()),
            ));
            Ok(Some(Arc::new(index)))
        }
        Err(e) if e.is_temporary() && read_only => {
            picked.push(("qdrant".into(), format!("unreachable at {}", settings.url)));
            *notice = Some(format!(
                "Qdrant is unreachable, retrieval is lexical only: {e}"
            ));
            Ok(None)
        }
        Err(e) if e.is_temporary() => Err(VectorsUnavailable {
            reason: e.to_string(),
        }
        .into()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_win_over_the_table_and_bad_values_are_refused() {
        let table: QdrantTable =
            toml::from_str("url = \"http://q:6334\"\nshards = 3\nbatch = 64\n").unwrap();
        let env = |k: &str| match k {
            "ZHIKU_QDRANT_SHARDS" => Some("6".to_string()),
            "ZHIKU_QDRANT_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        let mut origins = Vec::new();
        let s = QdrantSettings::resolve(Some(&table), &env, &mut origins).unwrap();
        assert_eq!(s.url, "http://q:6334");
        assert_eq!(s.shards, 6);
        assert_eq!(s.batch, 64);
        assert_eq!(s.replication, 1);
        assert_eq!(s.api_key.as_deref(), Some("k"));
        assert!(!format!("{s:?}").contains("\"k\""));
        assert!(
            origins
                .iter()
                .any(|(k, o)| k == "qdrant.shards" && o == "ZHIKU_QDRANT_SHARDS")
        );
        let c = s.adapter_config();
        assert_eq!((c.shard_number, c.batch_size), (6, 64));

        let bad = |k: &str| (k == "ZHIKU_QDRANT_TIMEOUT_MS").then(|| "soon".to_string());
        assert!(QdrantSettings::resolve(None, &bad, &mut Vec::new()).is_err());
        let zero = |k: &str| (k == "ZHIKU_QDRANT_BATCH").then(|| "0".to_string());
        assert!(QdrantSettings::resolve(None, &zero, &mut Vec::new()).is_err());
        let rest = |k: &str| (k == "ZHIKU_QDRANT_URL").then(|| "127.0.0.1:6334".to_string());
        assert!(QdrantSettings::resolve(None, &rest, &mut Vec::new()).is_err());
        assert!(toml::from_str::<QdrantTable>("nope = 1").is_err());
    }

    #[test]
    fn kb_names_differ_per_store() {
        let a = tempfile::tempdir().unwrap();
        let store = a.path().join("my kb").join(".zhiku");
        std::fs::create_dir_all(&store).unwrap();
        let name = kb_name(&store).unwrap();
        assert!(name.starts_with("my kb-"), "{name}");
        let b = tempfile::tempdir().unwrap();
        let other = b.path().join("my kb").join(".zhiku");
        std::fs::create_dir_all(&other).unwrap();
        assert_ne!(name, kb_name(&other).unwrap());
    }
}
