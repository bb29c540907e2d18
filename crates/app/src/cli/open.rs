//! Opening the store for the commands that read it: a query (brought up to date first, unless
//! told not to) and a long-lived service.

use anyhow::Result;
use zhiku_app::wiring;
use zhiku_app::wiring::store::{Access, Purpose, Store};

use super::args::Refresh;
use super::ctx::{Ctx, OnLocked, open_to_refresh, origin_for, refresh};
use super::render::{self, After};

/// Opens the store for a query, first bringing it up to date with the knowledge base when
/// `refresh` says so. Returns the store and how many files were skipped. Without a refresh the
/// store is opened read-only with only the catalog's header; when it cannot be written now
/// (another process writes it, or the folder is read-only) the query reads the last committed
/// state, with a notice.
pub(crate) fn open_for_query(ctx: &Ctx, refresh_first: Refresh) -> Result<(Store, usize)> {
    let kb = ctx.global.kb.clone();
    if refresh_first == Refresh::Skip {
        return Ok((ctx.open_to_query(kb.as_deref())?, 0));
    }
    let (mut store, writable) = open_to_refresh(ctx, kb.as_deref(), OnLocked::ReadLastCommitted)?;
    let mut skipped = 0;
    if writable && let Some(kb) = &kb {
        let (origin, _) = origin_for(ctx, Some(kb.clone()), None)?;
        let indexed = refresh(ctx, &mut store, origin)?;
        skipped = indexed.skipped.len();
        render::index_summary(ctx, &indexed, After::BeforeQuery);
    }
    Ok((store, skipped))
}

/// Opens the store and wraps it for serving, refreshing it from `--kb` first unless told not to.
pub(crate) fn open_service(ctx: &Ctx, refresh_first: Refresh) -> Result<zhiku_service::SharedKb> {
    let kb_dir = ctx.global.kb.clone();
    let (store, refresh_from) = if refresh_first == Refresh::Skip || kb_dir.is_none() {
        (
            ctx.open(kb_dir.as_deref(), Access::Writing(Purpose::Read))?,
            None,
        )
    } else {
        let (store, writable) = open_to_refresh(ctx, kb_dir.as_deref(), OnLocked::Fail)?;
        if writable {
            let origin = origin_for(ctx, kb_dir.clone(), None)?.0;
            (store, Some(origin))
        } else {
            (store, None)
        }
    };
    if let Some(notice) = &store.dense_notice {
        ctx.note(&format!("notice: {notice}"));
    }
    let (service, refreshed) = wiring::open_service(store, refresh_from)?;
    if let Some(r) = refreshed {
        render::index_summary(ctx, &r, After::BeforeServing);
    }
    Ok(std::sync::Arc::new(service))
}

/// Ends a command's use of a store without freeing its large in-memory parts: the process exits
/// next, and freeing a large catalog and vector graph entry by entry cost more than the query
/// itself (14 % of a `status` of 100,000 documents, 10 % of an unchanged `index`, in perf). A
/// read-only store is forgotten whole. Of a writing store, whose commits are durable and whose
/// catalog is saved, only the in-memory copy of the catalog and the vector index (its SQLite
/// connection has nothing uncommitted; the WAL it leaves is read by the next open) are
/// forgotten; the rest is dropped in order, so the lexical index's writer finishes its merges
/// and the store lock is released last.
pub(crate) fn done_with(mut store: Store) {
    if store.is_read_only() {
        std::mem::forget(store);
        return;
    }
    let header = &store.recorded.catalog;
    let empty = zhiku_domain::ports::StoredCatalog::empty(zhiku_domain::usecases::Catalog::new(
        header.policy,
        header.space.clone(),
        header.analyzer.clone(),
    ));
    std::mem::forget(std::mem::replace(&mut store.recorded, empty));
    if let Some(dense) = store.dense.take() {
        std::mem::forget(dense);
    }
    drop(store);
}
