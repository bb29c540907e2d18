//! `zhiku documents` (what is indexed, when, and until when), `zhiku sweep` (the retention
//! sweep: expired documents and the oldest beyond a scope's cap leave the store) and `zhiku
//! audit` (the write-back audit trail).
//!
//! Document IDs, titles and every field of an audit entry come from writers, so their text
//! output escapes control, line-breaking and bidirectional characters ([`escape`]).

use anyhow::{Result, bail};
use serde_json::json;
use zhiku_app::wiring;
use zhiku_app::wiring::store::{Access, Purpose};

use super::args::Output;
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::done_with;
use super::render::escape;

/// Lists the catalog's documents, in ID order, with their indexing and expiry times.
pub(crate) fn documents(ctx: &Ctx, output: Output) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_read_only(kb.as_deref())?;
    let now = store.now_utc();
    for (id, entry) in &store.recorded.catalog.docs {
        let about = entry.about.as_ref();
        let expired = entry.expires_at.is_some_and(|at| at <= now);
        if output == Output::Json {
            println!(
                "{}",
                json!({
                    "id": id,
                    "scope": about.map(|a| a.scope.as_str()),
                    "title": about.map(|a| a.title.as_str()),
                    "source": about.map(|a| a.source.as_str()),
                    "indexed_at": entry.indexed_at,
                    "expires_at": entry.expires_at,
                    "expired": expired,
                    "chunks": entry.chunk_ids.len(),
                })
            );
        } else {
            let show = |t: Option<zhiku_domain::Timestamp>| {
                t.map_or_else(|| "-".to_string(), |t| t.to_string())
            };
            println!(
                "{}\t{}\tindexed {}\texpires {}{}\t{}",
                escape(id.as_str()),
                escape(about.map_or("-", |a| a.scope.as_str())),
                show(entry.indexed_at),
                show(entry.expires_at),
                if expired { " (expired)" } else { "" },
                escape(about.map_or("", |a| a.title.as_str())),
            );
        }
    }
    done_with(store);
    Ok(Exit::Success)
}

/// Sweeps the store now and prints what went.
pub(crate) fn sweep(ctx: &Ctx, output: Output) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let mut store = ctx.open(kb.as_deref(), Access::Writing(Purpose::Write))?;
    let Some(documents) = wiring::recorded_documents(&store)? else {
        bail!("the store is empty: run zhiku index first");
    };
    if !documents.capabilities().writable {
        bail!("this store's documents are not a folder: nothing can be swept");
    }
    let swept = zhiku_service::sweep_store(&mut store, documents.as_ref())?;
    if output == Output::Json {
        println!("{}", serde_json::to_string(&swept)?);
    } else {
        for s in &swept.removed {
            println!(
                "removed {} ({})",
                escape(s.doc_id.as_str()),
                s.reason.code()
            );
        }
        println!(
            "swept at {}: {} documents removed, {} chunks removed",
            swept.at,
            swept.removed.len(),
            swept.report.chunks_removed
        );
    }
    done_with(store);
    Ok(Exit::Success)
}

/// Prints the store's write-back audit trail, oldest first (the local user sees every scope's).
pub(crate) fn audit(ctx: &Ctx, output: Output) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_to_query(kb.as_deref())?;
    for e in wiring::audit_log(&store)?.entries()? {
        if output == Output::Json {
            println!("{}", serde_json::to_string(&e)?);
        } else {
            println!(
                "{}\t{}\t{}\t{}\t{} ({})\t{}",
                e.at,
                escape(&e.who),
                escape(&e.scope),
                escape(&e.doc_id),
                escape(&e.decision),
                escape(&e.reason),
                escape(&e.detail)
            );
        }
    }
    done_with(store);
    Ok(Exit::Success)
}
