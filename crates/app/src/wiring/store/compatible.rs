//! Whether a store can be used with this run's configuration: the recorded chunking policy,
//! analyzer and embedding space against the requested ones, and the "rebuild the store" error
//! when they differ.

use std::path::Path;

use anyhow::anyhow;
use zhiku_domain::ports::IndexError;
use zhiku_domain::usecases::Catalog;

use super::access::Purpose;

/// The store refused to open because it was built with another configuration.
#[derive(Debug, thiserror::Error)]
#[error(
    "the store at {store} was built with {what} {recorded}, but this run uses {requested}.\n  \
     Rebuild it: zhiku index --rebuild{kb_flag}"
)]
pub struct NeedsRebuild {
    /// The store folder, as the message shows it.
    pub store: String,
    /// What differs: `chunking policy`, `lexical analyzer`, `embedding space`, ...
    pub what: String,
    /// What the store was built with.
    pub recorded: String,
    /// What this run would use.
    pub requested: String,
    /// ` --kb DIR` when known.
    pub kb_flag: String,
}

impl NeedsRebuild {
    /// The rebuild a mismatch of `what` calls for, in the store at `dir`.
    pub(super) fn of(
        dir: &Path,
        kb_hint: Option<&Path>,
        what: &str,
        recorded: String,
        requested: String,
    ) -> Self {
        Self {
            store: dir.display().to_string(),
            what: what.to_string(),
            recorded,
            requested,
            kb_flag: kb_hint
                .map(|k| format!(" --kb {}", k.display()))
                .unwrap_or_default(),
        }
    }
}

/// The one mapping of an index adapter's refusal to open into "rebuild the store": a
/// mismatched space or configuration means the store was built otherwise; anything else stays
/// the adapter's error.
pub(super) fn rebuild_or(e: IndexError, dir: &Path, kb_hint: Option<&Path>) -> anyhow::Error {
    match e {
        IndexError::SpaceMismatch { expected, found } => {
            anyhow!(NeedsRebuild::of(
                dir,
                kb_hint,
                "embedding space",
                expected,
                found
            ))
        }
        IndexError::ConfigMismatch {
            what,
            expected,
            found,
        } => anyhow!(NeedsRebuild::of(dir, kb_hint, what, expected, found)),
        other => anyhow!(other),
    }
}

/// Whether the recorded catalog can be used with this run's policy, analyzer and embedding
/// space. A reader without the recorded space still searches lexically: the notice says why.
pub(super) fn check_compatible(
    recorded: &Catalog,
    requested: &Catalog,
    purpose: Purpose,
    embedder_why: &str,
    rebuild: &dyn Fn(&str, String, String) -> NeedsRebuild,
) -> Result<Option<String>, NeedsRebuild> {
    if recorded.policy != requested.policy {
        return Err(rebuild(
            "chunking policy",
            recorded.policy.describe(),
            requested.policy.describe(),
        ));
    }
    if recorded.analyzer != requested.analyzer {
        return Err(rebuild(
            "lexical analyzer",
            recorded.analyzer.clone(),
            requested.analyzer.clone(),
        ));
    }
    match (&recorded.space, &requested.space, purpose) {
        (a, b, _) if a == b => Ok(None),
        (Some(recorded), None, Purpose::Read) => Ok(Some(format!(
            "the store's vectors ({recorded}) cannot be queried: {embedder_why}"
        ))),
        (None, Some(_), Purpose::Read) => Ok(Some("the store was built without vectors (lexical only); `zhiku index --rebuild` adds the dense route".into())),
        (recorded, requested, _) => {
            let show = |s: &Option<String>| {
                s.clone()
                    .unwrap_or_else(|| format!("no vectors ({embedder_why})"))
            };
            Err(rebuild("embedding space", show(recorded), show(requested)))
        }
    }
}
