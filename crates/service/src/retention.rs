//! The retention sweep: expired documents, and the oldest beyond a scope's cap, leave the
//! document store, both indexes and the catalog, one by one through the delete path.
//!
//! When: at the end of every refresh of a writable store (`zhiku index`, `zhiku serve`'s
//! opening refresh), and on demand (`zhiku sweep`, `POST /v1/admin/sweep`). Between sweeps an
//! expired document is already no evidence: the revision check drops it at query time.

use serde::Serialize;
use zhiku_domain::Scope;
use zhiku_domain::ports::DocumentStore;
use zhiku_domain::rules::retention::{Swept, sweep_plan};
use zhiku_domain::usecases::IndexReport;

use crate::removal::remove_recorded;
use crate::{KbError, Store};

/// What a sweep did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SweepReport {
    /// When the sweep judged expiry (RFC 3339).
    pub at: String,
    /// The documents removed, with why.
    pub removed: Vec<Swept>,
    /// What the removals did to the indexes.
    pub report: IndexReport,
}

/// Sweeps every scope of `store`, whose documents live in `documents` (see [`sweep`]'s
/// rules): what `zhiku sweep` runs, and what ends every refresh.
pub fn sweep_store(
    store: &mut Store,
    documents: &dyn DocumentStore,
) -> Result<SweepReport, KbError> {
    sweep(store, documents, &|_| true)
}

/// Sweeps `store` at its wall clock's time now: every document the plan names whose scope
/// `within` accepts is removed through [`remove_recorded`], each removal its own committed
/// step (a sweep killed midway keeps the removals it finished, and the next sweep does the
/// rest). A read-only store, or one whose documents cannot be removed, is not swept.
pub(crate) fn sweep(
    store: &mut Store,
    documents: &dyn DocumentStore,
    within: &dyn Fn(&Scope) -> bool,
) -> Result<SweepReport, KbError> {
    let now = store.now_utc();
    let mut out = SweepReport {
        at: now.to_string(),
        ..SweepReport::default()
    };
    if store.is_read_only() || !documents.capabilities().writable {
        return Ok(out);
    }
    let plan = sweep_plan(&store.recorded.catalog, now, &store.settings.scope_caps);
    for swept in plan {
        let in_scope = store
            .recorded
            .catalog
            .docs
            .get(&swept.doc_id)
            .and_then(|e| e.about.as_ref())
            .is_some_and(|a| within(&a.scope));
        if !in_scope {
            continue;
        }
        let done = remove_recorded(store, documents, &swept.doc_id)?;
        tracing::info!(
            target: "zhiku::store",
            doc = %swept.doc_id,
            reason = swept.reason.code(),
            "retention sweep removed a document"
        );
        out.report += &done;
        out.removed.push(swept);
    }
    Ok(out)
}
