//! `zhiku index`: bring the store up to date with a folder or a BEIR corpus, once or on every
//! change (`--watch`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use zhiku_app::wiring::store::{Access, Origin, Purpose, Store};

use super::args::{Build, Output, Runs};
use super::ctx::{Ctx, origin_for, refresh};
use super::exit::Exit;
use super::open::done_with;
use super::render::{self, After};

/// Indexes the origin (or builds the store again), prints the summary, and keeps watching
/// when asked.
pub(crate) fn run(
    ctx: &Ctx,
    dir: Option<PathBuf>,
    beir: Option<PathBuf>,
    build: Build,
    output: Output,
    runs: Runs,
) -> Result<Exit> {
    let (origin, kb) = origin_for(ctx, dir, beir.clone())?;
    let store_kb = kb.clone().or(beir);
    let access = match build {
        Build::Incremental => Access::Writing(Purpose::Write),
        Build::Rebuild => Access::Rebuilding,
    };
    let mut store = ctx.open(store_kb.as_deref(), access)?;
    if let Some(notice) = &store.dense_notice {
        ctx.note(&format!("notice: {notice}"));
    }
    let indexed = refresh(ctx, &mut store, origin.clone())?;
    render::index_summary(ctx, &indexed, After::Index(output));
    if runs == Runs::OnEveryChange {
        return watch_and_reindex(ctx, &mut store, origin, output);
    }
    done_with(store);
    Ok(Exit::unless_skipped(indexed.skipped.len()))
}

/// Re-indexes whenever files under the knowledge base change, after 500 ms without further
/// changes. Changes inside the store directory are ignored. Runs until interrupted.
fn watch_and_reindex(ctx: &Ctx, store: &mut Store, origin: Origin, output: Output) -> Result<Exit> {
    use notify::{RecursiveMode, Watcher};
    use std::sync::mpsc;
    use std::time::Duration;

    let Origin::Folder { root } = &origin else {
        bail!("--watch needs a folder")
    };
    let store_dir = std::fs::canonicalize(&store.dir).unwrap_or_else(|_| store.dir.clone());
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let _ = tx.send(event);
        }
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    ctx.note(&format!(
        "watching {} for changes (Ctrl-C to stop)",
        root.display()
    ));
    let relevant = |event: &notify::Event| {
        !matches!(event.kind, notify::EventKind::Access(_))
            && event.paths.iter().any(|p| !p.starts_with(&store_dir))
    };
    loop {
        let event = rx.recv()?;
        if !relevant(&event) {
            continue;
        }
        // Debounce: wait until the folder has been quiet for 500 ms.
        while rx.recv_timeout(Duration::from_millis(500)).is_ok() {}
        match refresh(ctx, store, origin.clone()) {
            Ok(indexed) => render::index_summary(ctx, &indexed, After::Index(output)),
            Err(e) => eprintln!("error: {e:#}"),
        }
        let _ = std::io::stdout().flush();
    }
}
