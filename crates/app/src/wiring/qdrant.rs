//! The `[qdrant]` table of `zhiku.toml` and the `ZHIKU_QDRANT_*` variables: where the `prod`
//! profile keeps its vectors and the `cluster` profile its whole store.
//!
//! ```toml
//! [qdrant]
//! url = "http://127.0.0.1:6334"   # gRPC port
//! api_key = "…"                     # better: ZHIKU_QDRANT_API_KEY
//! knowledge_base = "handbook"       # the same on every machine serving it
//! collection_prefix = "zhiku_"
//! timeout_ms = 10000
//! shards = 1                        # shards of a new collection (distributed mode)
//! replication = 1                   # copies of each shard (distributed mode)
//! batch = 256                       # points per upsert request
//! ```
//!
//! The collections of a knowledge base are named after `knowledge_base` when it is set (the same
//! on every machine), else after the knowledge-base folder and a short hash of the store's
//! absolute path (see [`kb_name_of`]). The store's Qdrant opener (`wiring/store/qdrant.rs`)
//! opens the vectors' collection; with `prod` the catalog and the lexical index stay on local
//! disk.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};

/// The knowledge-base part of the collection names of the store in `store_dir`: the configured
/// `[qdrant] knowledge_base`, which every machine serving it shares; unset, the folder's name
/// (the knowledge base's when the store is its `.zhiku/`) and 8 hex digits of the sha256 of the
/// store's absolute path, so two stores never share a collection (a store deletes vectors its
/// catalog does not list).
pub fn kb_name_of(settings: &QdrantConfig, store_dir: &Path) -> Result<String> {
    match settings.knowledge_base.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name.to_string()),
        _ => kb_name(store_dir),
    }
}

/// The knowledge-base part of the collection name of the store in `store_dir` when none is
/// configured (see [`kb_name_of`]).
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
pub fn drop_before_rebuild(settings: &QdrantConfig, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create store {}", dir.display()))?;
    let kb = kb_name_of(settings, dir)?;
    QdrantVectorIndex::drop_kb_collections(settings, &kb).map_err(|e| {
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

#[cfg(test)]
mod tests {
    use super::*;

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
