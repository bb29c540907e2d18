//! `zhiku sync`: every configured source (`[[sources]]`) synced into `sources/<name>/` of the
//! knowledge-base folder, one after the other, each failure its own; then one incremental
//! index of what changed.

use anyhow::{Result, bail};
use serde_json::json;
use zhiku_app::config::SourceTable;
use zhiku_app::wiring::sources;
use zhiku_app::wiring::store::{Access, Purpose};
use zhiku_domain::Timestamp;
use zhiku_service::SourceStatus;

use super::args::Output;
use super::ctx::{Ctx, origin_for, refresh};
use super::exit::Exit;
use super::open::done_with;
use super::render::{self, After, escape};

/// The time now, as the sync records it.
pub(crate) fn now() -> Timestamp {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Timestamp::from_unix(secs)
}

/// Syncs the named sources (all when none is named), then indexes the folder.
pub(crate) fn run(ctx: &Ctx, names: &[String], output: Output) -> Result<Exit> {
    let kb = ctx.kb()?;
    let config = ctx.config(Some(&kb))?;
    if config.sources.is_empty() {
        bail!("no [[sources]] in zhiku.toml: see docs/sources.md");
    }
    if config.on_cluster() {
        bail!("sources are synced into the knowledge-base folder; profile cluster keeps none");
    }
    for name in names {
        if !config.sources.iter().any(|s| &s.name == name) {
            let known: Vec<&str> = config.sources.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "no source named {name:?} (configured: {})",
                known.join(", ")
            );
        }
    }
    let selected: Vec<&SourceTable> = config
        .sources
        .iter()
        .filter(|s| names.is_empty() || names.contains(&s.name))
        .collect();
    let (origin, kb_dir) = origin_for(ctx, Some(kb.clone()), None)?;
    let store_dir = ctx.store_dir(kb_dir.as_deref())?;
    let root = std::fs::canonicalize(&kb)?;
    let mut failures = 0;
    for table in selected {
        let result = sources::sync(table, &root, &store_dir, &config, now());
        match (&result, output) {
            (Ok(o), Output::Text) => {
                ctx.note(&format!(
                    "source {}: {}",
                    table.name,
                    render::describe_sync(o)
                ));
                for (path, reason) in &o.failed {
                    ctx.note(&format!("  failed {}: {}", escape(path), escape(reason)));
                }
            }
            (Err(e), Output::Text) => ctx.note(&format!("source {}: error: {e:#}", table.name)),
            (Ok(o), Output::Json) => println!(
                "{}",
                json!({"source": table.name, "ok": true, "outcome": o})
            ),
            (Err(e), Output::Json) => println!(
                "{}",
                json!({"source": table.name, "ok": false, "error": format!("{e:#}")})
            ),
        }
        if let Err(e) = result {
            failures += 1;
            tracing::warn!(target: "zhiku::sources", source = %table.name, "sync failed: {e:#}");
        }
    }
    let mut store = ctx.open(kb_dir.as_deref(), Access::Writing(Purpose::Write))?;
    let indexed = refresh(ctx, &mut store, origin)?;
    render::index_summary(ctx, &indexed, After::Index(output));
    done_with(store);
    Ok(if failures > 0 {
        Exit::SourcesFailed
    } else {
        Exit::unless_skipped(indexed.skipped.len())
    })
}

/// The status of source `table` as its mirror's state on disk says.
fn status_of(
    table: &SourceTable,
    root: &std::path::Path,
    store_dir: &std::path::Path,
) -> SourceStatus {
    let state = sources::state(root, &table.name);
    let (kind, location) = match sources::source(table, store_dir) {
        Ok(s) => (s.kind().to_string(), s.location()),
        Err(_) => (
            format!("{:?}", table.kind).to_ascii_lowercase(),
            String::new(),
        ),
    };
    SourceStatus {
        name: table.name.clone(),
        kind,
        location,
        every_s: table.every_secs().unwrap_or(3600),
        items: state.as_ref().map_or(0, |s| s.items.len()),
        last: state.as_ref().map(|s| s.last.clone()),
        last_success: state.as_ref().and_then(|s| s.last_success),
        syncing: false,
    }
}

/// Syncs every source of `config` on its schedule (`every`, from the start) for as long as
/// `kb` is served, each sync that completed followed by a refresh of the served store; one
/// failing source never stops the others. Runs on a thread of its own.
pub(crate) fn schedule(
    kb: zhiku_service::SharedKb,
    config: zhiku_app::config::Config,
    root: std::path::PathBuf,
    store_dir: std::path::PathBuf,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let mut next: Vec<std::time::Duration> =
            vec![std::time::Duration::ZERO; config.sources.len()];
        for table in &config.sources {
            kb.report_source(status_of(table, &root, &store_dir));
        }
        loop {
            for (i, table) in config.sources.iter().enumerate() {
                if started.elapsed() < next[i] {
                    continue;
                }
                let mut status = status_of(table, &root, &store_dir);
                status.syncing = true;
                kb.report_source(status);
                let result = sources::sync(table, &root, &store_dir, &config, now());
                zhiku_http::metrics::count_source_sync(&table.name, result.is_ok());
                match &result {
                    Ok(o) => {
                        tracing::info!(target: "zhiku::sources", source = %table.name, "synced: {}", render::describe_sync(o))
                    }
                    Err(e) => {
                        tracing::warn!(target: "zhiku::sources", source = %table.name, "sync failed: {e:#}")
                    }
                }
                // Indexed after every sync that completed, changed or not: what another
                // process synced into the folder (a `zhiku sync` beside this server, which
                // could not index while it writes) is indexed here; unchanged copies cost a
                // stat each.
                if result.is_ok() {
                    match kb.refresh() {
                        Ok(r) => tracing::info!(
                            target: "zhiku::sources",
                            source = %table.name,
                            docs_added = r.report.docs_added,
                            docs_changed = r.report.docs_changed,
                            docs_removed = r.report.docs_removed,
                            skipped = r.skipped.len(),
                            "indexed what the sync changed"
                        ),
                        Err(e) => {
                            tracing::warn!(target: "zhiku::sources", source = %table.name, "indexing after the sync failed: {e}")
                        }
                    }
                }
                kb.report_source(status_of(table, &root, &store_dir));
                next[i] = started.elapsed()
                    + std::time::Duration::from_secs(table.every_secs().unwrap_or(3600).max(1));
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    })
}
