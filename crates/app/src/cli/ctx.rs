//! What every command shares: the global options, the configuration, and opening the store —
//! for writing, read-only, for a query or for serving — plus bringing it up to date.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use zhiku_app::config::Config;
use zhiku_app::wiring;
use zhiku_app::wiring::store::{Access, Origin, Purpose, Store};
use zhiku_domain::{Filter, Scope};
use zhiku_service::Refreshed;

use super::args::Global;
use super::error::CliError;

/// The global options, handed to every command.
pub(crate) struct Ctx {
    pub(crate) global: Global,
}

impl Ctx {
    /// The knowledge-base folder (`--kb` or `ZHIKU_KB`); an error when none was given.
    pub(crate) fn kb(&self) -> Result<PathBuf> {
        match &self.global.kb {
            Some(kb) => Ok(kb.clone()),
            None => bail!("no knowledge base given: pass --kb DIR (or set ZHIKU_KB)"),
        }
    }

    /// The store directory: `--store`, else `.zhiku/` inside the knowledge base.
    pub(crate) fn store_dir(&self, kb: Option<&Path>) -> Result<PathBuf> {
        match (&self.global.store, kb) {
            (Some(s), _) => Ok(s.clone()),
            (None, Some(kb)) => Ok(kb.join(".zhiku")),
            (None, None) => bail!("no store given: pass --store DIR or --kb DIR"),
        }
    }

    /// The configuration: the file (`--config`, else the knowledge base's `zhiku.toml`), the
    /// profile and the environment.
    pub(crate) fn config(&self, kb: Option<&Path>) -> Result<Config> {
        let file = self
            .global
            .config
            .clone()
            .or_else(|| kb.and_then(Config::default_file));
        Config::resolve(file.as_deref(), self.global.profile.as_deref(), &|k| {
            std::env::var(k).ok()
        })
    }

    /// A note for the user on stderr (a log line under `serve`); nothing with `--quiet`.
    pub(crate) fn note(&self, text: &str) {
        if !self.global.quiet {
            // `zhiku serve` logs: its notes are log lines in the chosen format.
            if tracing::dispatcher::has_been_set() {
                tracing::info!(target: "zhiku", "{text}");
            } else {
                eprintln!("{text}");
            }
        }
    }

    /// Opens the store with `access` (see [`Access`]) and says what the open repaired: a
    /// writing open holds the lock and repairs what a crash left; `Purpose::Write` needs every
    /// configured index writable, `Purpose::Read` may degrade to lexical retrieval.
    pub(crate) fn open(&self, kb: Option<&Path>, access: Access) -> Result<Store> {
        let config = self.config(kb)?;
        let dir = self.store_dir(kb)?;
        let store = Store::open_as(&dir, config, access, kb)?;
        if store.repair.repaired() {
            self.note(&format!("repaired the store: {}", store.repair.describe()));
        }
        Ok(store)
    }

    /// Opens the last committed state of the store for reading: no lock, nothing written.
    pub(crate) fn open_read_only(&self, kb: Option<&Path>) -> Result<Store> {
        let config = self.config(kb)?;
        let dir = self.store_dir(kb)?;
        Store::open_read_only(&dir, config, kb)
    }

    /// Opens the last committed state for a query or the status: read-only, with only the
    /// catalog's header loaded (see [`Store::open_to_query`]).
    pub(crate) fn open_to_query(&self, kb: Option<&Path>) -> Result<Store> {
        let config = self.config(kb)?;
        let dir = self.store_dir(kb)?;
        Store::open_to_query(&dir, config, kb)
    }
}

/// Loads the origin and indexes it incrementally, with a progress bar.
pub(crate) fn refresh(ctx: &Ctx, store: &mut Store, origin: Origin) -> Result<Refreshed> {
    let bar = progress_bar(ctx);
    let refreshed = wiring::refresh(store, origin, &mut |p| {
        if let Some(bar) = &bar {
            bar.set_length(p.to_embed as u64);
            bar.set_position(p.embedded as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(refreshed)
}

/// A progress bar for embedding on stderr, unless `--quiet` or stderr is not a terminal.
fn progress_bar(ctx: &Ctx) -> Option<indicatif::ProgressBar> {
    if ctx.global.quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("embedding {bar:40} {pos}/{len} chunks ({eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}

/// The origin to index (a BEIR corpus or the knowledge-base folder) and the folder, if any.
pub(crate) fn origin_for(
    ctx: &Ctx,
    dir: Option<PathBuf>,
    beir: Option<PathBuf>,
) -> Result<(Origin, Option<PathBuf>)> {
    if let Some(beir) = beir {
        let dir = std::fs::canonicalize(&beir)
            .with_context(|| format!("{} does not exist", beir.display()))?;
        return Ok((Origin::Beir { dir }, None));
    }
    let kb = match dir {
        Some(d) => d,
        None => ctx.kb()?,
    };
    let root = std::fs::canonicalize(&kb)
        .with_context(|| format!("knowledge base {} does not exist", kb.display()))?;
    Ok((Origin::Folder { root }, Some(kb)))
}

/// The filter of a query: the given scopes (default: the trusted ones) and key=value metadata.
pub(crate) fn build_filter(
    store: &Store,
    scopes: &[String],
    filters: &[String],
    locale: Option<&str>,
) -> Result<Filter> {
    let scopes: Vec<Scope> = if scopes.is_empty() {
        store.config.scopes.clone()
    } else {
        scopes
            .iter()
            .map(|s| Ok(Scope::new(s)?))
            .collect::<Result<_>>()?
    };
    zhiku_service::filter_for(scopes, None, &metadata_terms(filters)?, locale)
}

/// The `--filter key=value` terms as pairs.
pub(crate) fn metadata_terms(filters: &[String]) -> Result<Vec<(String, String)>> {
    filters
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => bail!("--filter {f:?} must be key=value"),
        })
        .collect()
}

/// What a reader does when the store cannot be written now: another process holds its lock, or
/// its folder is read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnLocked {
    /// Read the last committed state, without the lock, with a notice.
    ReadLastCommitted,
    /// Fail with the lock error.
    Fail,
}

/// Opens the store for writing, so that a reader can bring it up to date first; when it cannot
/// be written now, degrades rather than fails where it may. With the vector index unreachable it
/// opens the store for reading (lexical retrieval only), with a notice; with the store locked it
/// does what `on_locked` says. Returns the store and whether it was opened for writing.
pub(crate) fn open_to_refresh(
    ctx: &Ctx,
    kb: Option<&Path>,
    on_locked: OnLocked,
) -> Result<(Store, bool)> {
    match ctx
        .open(kb, Access::Writing(Purpose::Write))
        .map_err(CliError::from)
    {
        Ok(store) => Ok((store, true)),
        // The vector server is down: read what is indexed, lexically, rather than fail.
        Err(CliError::VectorsUnavailable(_)) => {
            // The open below reports the reason, as the store's dense notice.
            ctx.note("notice: the index was not refreshed: the vector index is unreachable");
            Ok((ctx.open(kb, Access::Writing(Purpose::Read))?, false))
        }
        Err(CliError::Locked(e)) if on_locked == OnLocked::ReadLastCommitted => {
            ctx.note(&format!(
                "notice: the index was not refreshed, searching its last committed state: {e}"
            ));
            Ok((ctx.open_read_only(kb)?, false))
        }
        Err(e) => Err(e.into_inner()),
    }
}
