//! The configured sources (`[[sources]]`), built as document sources, and one sync of each
//! into its mirror under the knowledge-base folder.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use zhiku_adapters_fs::mirror::FolderMirror;
use zhiku_adapters_git::{GitSettings, GitSource};
use zhiku_adapters_web::{DavSettings, DavSource, SiteSettings, SiteSource};
use zhiku_domain::Timestamp;
use zhiku_domain::ports::{DocumentSource, SyncOutcome, SyncState};
use zhiku_domain::usecases::{SyncPolicy, sync_source};

use crate::config::{Config, SourceKind, SourceTable};

/// Which item paths of a source are copied: the formats the loader reads, and the shared
/// sidecars (`x.metadata.yaml`) a source may carry for its documents.
pub fn wanted() -> Arc<dyn Fn(&str) -> bool + Send + Sync> {
    Arc::new(|path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        if name.ends_with(zhiku_adapters_fs::paths::SIDECAR_SUFFIX) {
            return true;
        }
        name.rsplit_once('.')
            .is_some_and(|(_, ext)| zhiku_formats::Format::announced(ext).is_some())
    })
}

/// The document source `table` describes; `store_dir` keeps what a source keeps between
/// syncs (a git source's bare repository).
pub fn source(table: &SourceTable, store_dir: &Path) -> anyhow::Result<Box<dyn DocumentSource>> {
    let timeout = |default: u64| Duration::from_millis(table.timeout_ms.unwrap_or(default));
    Ok(match table.kind {
        SourceKind::Git => Box::new(GitSource::new(GitSettings {
            url: table.url.clone().unwrap_or_default(),
            reference: table
                .tag
                .clone()
                .or_else(|| table.branch.clone())
                .unwrap_or_else(|| "main".into()),
            paths: table.paths.clone(),
            permalink: table.permalink.clone(),
            cache: store_dir
                .join("sources")
                .join(format!("{}.git", table.name)),
            timeout: timeout(600_000),
            program: std::env::var_os("ZHIKU_GIT")
                .map(Into::into)
                .unwrap_or_else(|| "git".into()),
            wanted: wanted(),
        })),
        SourceKind::Web => Box::new(SiteSource::new(SiteSettings {
            start: table.start.clone(),
            sitemaps: table.sitemaps.clone(),
            prefix: table.prefix.clone(),
            max_pages: table.max_pages.unwrap_or(10_000),
            min_interval: Duration::from_millis(table.rate_ms.unwrap_or(200)),
            timeout: timeout(60_000),
            user_agent: format!("zhiku/{}", env!("CARGO_PKG_VERSION")),
            wanted: wanted(),
        })),
        SourceKind::Webdav => {
            let password = match &table.password_env {
                Some(var) => Some(std::env::var(var).map_err(|_| {
                    anyhow::anyhow!(
                        "source {}: the variable {var} (password_env) is not set",
                        table.name
                    )
                })?),
                None => None,
            };
            Box::new(DavSource::new(DavSettings {
                url: table.url.clone().unwrap_or_default(),
                user: table.user.clone(),
                password,
                timeout: timeout(60_000),
                max_entries: 1_000_000,
                wanted: wanted(),
            }))
        }
    })
}

/// What a source's configuration pins in every document it brings: its scope and readers.
pub fn pinned(table: &SourceTable) -> Map<String, Value> {
    let mut pinned = Map::new();
    if let Some(scope) = &table.scope {
        pinned.insert("scope".into(), Value::String(scope.clone()));
    }
    if !table.readers.is_empty() {
        pinned.insert(
            "access".into(),
            Value::Array(table.readers.iter().cloned().map(Value::String).collect()),
        );
    }
    pinned
}

/// Syncs the source `table` describes into its mirror under `kb` at `now`: what changed is
/// copied, what is gone is removed after the source's grace. The knowledge base's index is
/// brought up to date by the caller (a refresh reads the mirror like any folder).
pub fn sync(
    table: &SourceTable,
    kb: &Path,
    store_dir: &Path,
    config: &Config,
    now: Timestamp,
) -> anyhow::Result<SyncOutcome> {
    let source = source(table, store_dir)?;
    let mirror = FolderMirror::open(kb, &table.name, pinned(table))?;
    let policy = SyncPolicy {
        gone_after_secs: table.gone_after_secs().map_err(anyhow::Error::msg)?,
        max_item_bytes: config.max_document_bytes.max(config.max_file_bytes),
        ..SyncPolicy::default()
    };
    Ok(sync_source(source.as_ref(), &mirror, policy, now)?)
}

/// The state the last sync of source `name` left in its mirror under `kb`, if any (read
/// without taking the mirror).
pub fn state(kb: &Path, name: &str) -> Option<SyncState> {
    FolderMirror::peek_state(kb, name).ok().flatten()
}
