//! `zhiku verify`: check that manifest, lexical index and vectors agree, repairing first what a
//! crash left when the store can be written. The service decides what is consistent
//! ([`zhiku_service::Store::problems`]); this command opens the store, looks again while a
//! writer is running, and reports.

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use zhiku_app::wiring::store::{Access, Purpose, Store, StoreLock};
use zhiku_service::Problems;

use super::args::{Check, Output};
use super::ctx::Ctx;
use super::error::CliError;
use super::exit::Exit;

/// What one verify found: the store it checked last, its problems, and the writer running
/// beside it, if any.
struct Checked {
    store: Store,
    problems: Problems,
    /// The pid of the process writing the store now.
    writer: Option<String>,
    /// The running writer's uncommitted files (not damage).
    in_progress: Vec<String>,
}

/// Opens (and repairs) the store, or reads its last committed state, and reports what differs.
pub(crate) fn run(ctx: &Ctx, output: Output, what: Check) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let mut notice = None;
    let store = match what {
        Check::LastCommitted => ctx.open_read_only(kb.as_deref())?,
        Check::RepairFirst => match ctx
            .open(kb.as_deref(), Access::Writing(Purpose::Read))
            .map_err(CliError::from)
        {
            Ok(store) => store,
            Err(CliError::Locked(e)) => {
                notice = Some(format!(
                    "checked the last committed state without repairing: {e}"
                ));
                ctx.open_read_only(kb.as_deref())?
            }
            Err(e) => return Err(e.into_inner()),
        },
    };
    let checked = check(ctx, kb.as_deref(), store)?;
    match output {
        Output::Json => print_json(&checked),
        Output::Text => {
            if let Some(n) = &notice {
                ctx.note(&format!("notice: {n}"));
            }
            print_text(&checked);
        }
    }
    Ok(if checked.problems.is_empty() {
        Exit::Success
    } else {
        Exit::Inconsistent
    })
}

/// Checks `store`; beside a running writer, manifest and indexes were read one after the
/// other and may straddle one of its writes (indexes commit, then the manifest is renamed), so
/// a difference is looked at again in a later committed state before it is reported.
fn check(ctx: &Ctx, kb: Option<&Path>, mut store: Store) -> Result<Checked> {
    let mut attempt = 0u64;
    loop {
        let mut problems = store.problems()?;
        // Files a writer running now has not committed yet are its work in progress, not damage.
        let writer = if store.holds_lock() {
            None
        } else {
            StoreLock::holder(&store.dir)
        };
        if writer.is_some() {
            store.discount_later_writes(&mut problems)?;
        }
        let in_progress = match &writer {
            Some(_) => std::mem::take(&mut problems.stray_files),
            None => Vec::new(),
        };
        if problems.is_empty() || writer.is_none() || attempt >= 10 {
            return Ok(Checked {
                store,
                problems,
                writer,
                in_progress,
            });
        }
        attempt += 1;
        std::thread::sleep(std::time::Duration::from_millis((50 * attempt).min(250)));
        store = ctx.open_read_only(kb)?;
    }
}

/// The verdict as one JSON object.
fn print_json(checked: &Checked) {
    let Checked {
        store,
        problems,
        writer,
        in_progress,
    } = checked;
    println!(
        "{}",
        json!({
            "consistent": problems.is_empty(),
            "read_only": store.is_read_only(),
            "writer_pid": writer,
            "repaired_on_open": store.repair,
            "uncommitted_files_of_the_running_writer": in_progress,
            "problems": problems,
        })
    );
}

/// The verdict in words, with the fix when the store is inconsistent.
fn print_text(checked: &Checked) {
    let Checked {
        store,
        problems,
        writer,
        in_progress,
    } = checked;
    if store.repair.repaired() {
        println!("repaired on open: {}", store.repair.describe());
    }
    if let Some(pid) = writer {
        println!(
            "process {pid} is writing the store; checked its last committed state{}",
            if in_progress.is_empty() {
                String::new()
            } else {
                format!(" ({} uncommitted files in progress)", in_progress.len())
            }
        );
    }
    if problems.is_empty() {
        println!(
            "consistent: {} documents, {} chunks in the manifest, the lexical index{}",
            store.recorded.catalog.docs.len(),
            store.recorded.catalog.chunk_count(),
            if store.dense.is_some() {
                " and the vectors"
            } else {
                ""
            }
        );
        return;
    }
    println!("inconsistent store {}:", store.dir.display());
    for file in &problems.stray_files {
        println!(
            "  lexical/{file} is not referenced by the committed index (left by a killed writer)"
        );
    }
    for id in &problems.lexical_orphans {
        println!("  lexical index holds {id}, which the manifest does not list");
    }
    for id in &problems.vector_orphans {
        println!("  vector index holds {id}, which the manifest does not list");
    }
    for doc in &problems.docs_missing_chunks {
        println!("  document {doc} has chunks missing from an index");
    }
    println!(
        "fix: zhiku verify or zhiku index (both repair from the manifest), or zhiku index --rebuild"
    );
}
