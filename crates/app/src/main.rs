//! `zhiku`: the command-line entry point.
//!
//! Exit codes: 0 success; 1 error; 2 usage error; 3 finished, but some files were skipped;
//! 4 the store was built with another configuration and must be rebuilt; 5 cannot retrieve
//! (no retrieval route could run); 6 `verify` found an inconsistency; 7 `ask` was blocked (the
//! generator's citations kept failing validation).

// Opt-in (`--features mimalloc`): faster lexical builds, more memory; see the README.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// Standard output may close early (`zhiku search … | head -1`). Rust ignores SIGPIPE, so a
// write then fails with `BrokenPipe`, and std's `println!` panics on it with a backtrace.
// Every line of this binary goes through this `println!` instead: on a closed pipe it stops the
// process quietly with exit code 0, as a Unix tool does; the store is consistent at every point
// where a process can stop (it survives `kill -9`), so stopping here loses nothing.
macro_rules! println {
    () => {
        stdout_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        stdout_line(format_args!($($arg)*))
    };
}

/// Writes one line to standard output; on failure see [`output_failed`].
fn stdout_line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        output_failed(&e)
    }
}

/// A closed pipe ends the process quietly (exit 0: the reader has what it wanted); any other
/// output error ends it with a message and exit 1.
fn output_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0)
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1)
}

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::json;
use zhiku_adapters_memory::MemoryTraceSink;
use zhiku_adapters_tantivy::LexicalConfig;
use zhiku_app::answer::{
    MonotonicClock, Tee, generator_for, new_trace_id, policy_for, render_chain,
};
use zhiku_app::beir::{load_beir, load_golden};
use zhiku_app::config::Config;
use zhiku_app::corpus::{DenseChoice, build_corpus_index, corpus_scope};
use zhiku_app::eval::{AnswerResult, AnswerSummary, Summary, evaluate, evaluate_answers};
use zhiku_app::serve::logging::LogFormat;
use zhiku_app::serve::settings::{Tokens, token_digest};
use zhiku_app::serve::{self, AppState};
use zhiku_app::store::{
    NeedsRebuild, Origin, Purpose, Store, StoreLock, StoreLocked, VectorsUnavailable,
};
use zhiku_app::wiring::{self, source_for};
use zhiku_domain::ports::SkippedFile as Skipped;
use zhiku_domain::usecases::{
    AnswerFrame, AnswerStatus, Answerer, IndexReport, RetrievalMode, RetrievalRequest,
    RetrieveError, RouteStatus,
};
use zhiku_domain::{Filter, Scope};

#[derive(Parser, Debug)]
#[command(
    name = "zhiku",
    version,
    about = "知库: a knowledge-base engine for retrieval-augmented generation"
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug, Clone)]
struct Global {
    /// The knowledge-base folder.
    #[arg(long, global = true, env = "ZHIKU_KB")]
    kb: Option<PathBuf>,
    /// The store directory (default: .zhiku/ inside the knowledge base).
    #[arg(long, global = true, env = "ZHIKU_STORE")]
    store: Option<PathBuf>,
    /// Configuration file (default: zhiku.toml in the knowledge base, if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Profile: dev, local (default) or prod.
    #[arg(long, global = true)]
    profile: Option<String>,
    /// More detail.
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Only errors and results.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Hybrid,
    Lexical,
    Dense,
}

impl From<Mode> for RetrievalMode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Hybrid => RetrievalMode::Hybrid,
            Mode::Lexical => RetrievalMode::Lexical,
            Mode::Dense => RetrievalMode::Dense,
        }
    }
}

/// What `search` and `ask` share: routes, scope, filters, output.
#[derive(Args, Debug, Clone)]
struct QueryArgs {
    /// Evidence to retrieve (default: `k` from the configuration). For `ask`, before the
    /// context budget.
    #[arg(long, short = 'k')]
    k: Option<usize>,
    /// Retrieval routes.
    #[arg(long, value_enum, default_value = "hybrid")]
    mode: Mode,
    /// Scopes to search (default: the configured scopes).
    #[arg(long = "scope")]
    scopes: Vec<String>,
    /// Metadata equality filter, key=value (repeatable).
    #[arg(long = "filter")]
    filters: Vec<String>,
    /// Print JSON (for `ask`, the answer frame).
    #[arg(long)]
    json: bool,
    /// Do not refresh the index first.
    #[arg(long)]
    no_refresh: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Index a knowledge-base folder (or a BEIR corpus) incrementally.
    Index {
        /// The folder (default: --kb).
        dir: Option<PathBuf>,
        /// Index a BEIR corpus.jsonl from this directory instead of a folder.
        #[arg(long, conflicts_with = "dir")]
        beir: Option<PathBuf>,
        /// Discard the store and build it again (after a policy, model or tokenizer change).
        #[arg(long)]
        rebuild: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Keep running and re-index when files change (debounced).
        #[arg(long, conflicts_with = "beir")]
        watch: bool,
    },
    /// Search the knowledge base and print the ranked evidence.
    Search {
        /// The query.
        query: String,
        #[command(flatten)]
        q: QueryArgs,
    },
    /// Answer a question from the knowledge base, with citations checked against this round's
    /// retrieval.
    Ask {
        /// The question.
        question: String,
        #[command(flatten)]
        q: QueryArgs,
        /// Print the run as a chain of steps.
        #[arg(long)]
        trace: bool,
    },
    /// Evaluate retrieval on a BEIR directory or a golden set over the knowledge base.
    Eval {
        /// A BEIR directory (corpus, queries, qrels, optional spans), indexed in memory.
        #[arg(long, conflicts_with = "golden")]
        beir: Option<PathBuf>,
        /// A golden JSONL file evaluated against the knowledge base (--kb).
        #[arg(long)]
        golden: Option<PathBuf>,
        /// Retrieval mode.
        #[arg(long, value_enum, default_value = "lexical")]
        mode: Mode,
        /// Print the one-line JSON summary.
        #[arg(long)]
        json: bool,
        /// Write per-query results (rank of the first hit, top-10 ids) as JSONL.
        #[arg(long)]
        per_query: Option<PathBuf>,
        /// Golden sets only: write each case's answer (status, citation validity, trace id) as
        /// JSONL.
        #[arg(long)]
        answers: Option<PathBuf>,
        /// BEIR only: the dense route's embedder: none, hashing (the test double) or candle (the
        /// configured model, ZHIKU_MODEL).
        #[arg(long, default_value = "none")]
        embedder: String,
    },
    /// Serve the knowledge base over HTTP: the JSON API under /v1, the web page at /, and MCP
    /// (streamable HTTP) at /mcp.
    Serve {
        /// Listen address (default: [serve] bind, 127.0.0.1:7878).
        #[arg(long)]
        bind: Option<String>,
        /// Do not refresh the index from the knowledge base before serving.
        #[arg(long)]
        no_refresh: bool,
        /// Log lines on stderr, one per request and event: text, or json (one object per
        /// line). The level: ZHIKU_LOG or RUST_LOG (default info).
        #[arg(long, env = "ZHIKU_LOG_FORMAT", default_value = "text")]
        log_format: LogFormat,
    },
    /// Serve the knowledge base over the Model Context Protocol on stdin/stdout.
    Mcp {
        /// Do not refresh the index from the knowledge base first.
        #[arg(long)]
        no_refresh: bool,
    },
    /// Print a new random bearer token and the line to put in zhiku.toml for it.
    Token {
        /// The token's name.
        name: String,
        /// Scopes it may read (repeatable).
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// It may also add and remove documents.
        #[arg(long)]
        write: bool,
    },
    /// Show what the store holds and which adapters were picked.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check that manifest, lexical index and vectors agree (repairing first what a crash left,
    /// unless another process is writing the store or it cannot be written).
    Verify {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Check the last committed state without the store lock and without repairing: works
        /// beside a running `zhiku serve` and on a read-only store.
        #[arg(long)]
        read_only: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<NeedsRebuild>().is_some() {
                ExitCode::from(4)
            } else if matches!(
                e.downcast_ref::<RetrieveError>(),
                Some(RetrieveError::CannotRetrieve { .. })
            ) {
                ExitCode::from(5)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

struct Ctx {
    global: Global,
}

impl Ctx {
    fn kb(&self) -> Result<PathBuf> {
        match &self.global.kb {
            Some(kb) => Ok(kb.clone()),
            None => bail!("no knowledge base given: pass --kb DIR (or set ZHIKU_KB)"),
        }
    }

    fn store_dir(&self, kb: Option<&Path>) -> Result<PathBuf> {
        match (&self.global.store, kb) {
            (Some(s), _) => Ok(s.clone()),
            (None, Some(kb)) => Ok(kb.join(".zhiku")),
            (None, None) => bail!("no store given: pass --store DIR or --kb DIR"),
        }
    }

    fn config(&self, kb: Option<&Path>) -> Result<Config> {
        let file = self
            .global
            .config
            .clone()
            .or_else(|| kb.and_then(Config::default_file));
        Config::resolve(file.as_deref(), self.global.profile.as_deref(), &|k| {
            std::env::var(k).ok()
        })
    }

    fn note(&self, text: &str) {
        if !self.global.quiet {
            // `zhiku serve` logs: its notes are log lines in the chosen format.
            if tracing::dispatcher::has_been_set() {
                tracing::info!(target: "zhiku", "{text}");
            } else {
                eprintln!("{text}");
            }
        }
    }

    /// Opens the store for writing: takes the store lock, repairs what a crash left.
    fn open(&self, kb: Option<&Path>, purpose: Purpose, rebuild: bool) -> Result<Store> {
        let config = self.config(kb)?;
        let dir = self.store_dir(kb)?;
        let store = Store::open(&dir, config, purpose, rebuild, kb)?;
        if store.repair.repaired() {
            self.note(&format!("repaired the store: {}", store.repair.describe()));
        }
        Ok(store)
    }

    /// Opens the last committed state of the store for reading: no lock, nothing written.
    fn open_read_only(&self, kb: Option<&Path>) -> Result<Store> {
        let config = self.config(kb)?;
        let dir = self.store_dir(kb)?;
        Store::open_read_only(&dir, config, kb)
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let ctx = Ctx { global: cli.global };
    match cli.command {
        Command::Index {
            dir,
            beir,
            rebuild,
            json,
            watch,
        } => cmd_index(&ctx, dir, beir, rebuild, json, watch),
        Command::Search { query, q } => cmd_search(&ctx, &query, &q),
        Command::Ask { question, q, trace } => cmd_ask(&ctx, &question, &q, trace),
        Command::Eval {
            beir,
            golden,
            mode,
            json,
            per_query,
            answers,
            embedder,
        } => cmd_eval(
            &ctx,
            beir,
            golden,
            mode.into(),
            json,
            (per_query, answers),
            &embedder,
        ),
        Command::Serve {
            bind,
            no_refresh,
            log_format,
        } => cmd_serve(&ctx, bind, no_refresh, log_format),
        Command::Mcp { no_refresh } => cmd_mcp(&ctx, no_refresh),
        Command::Token {
            name,
            scopes,
            write,
        } => cmd_token(&name, &scopes, write),
        Command::Status { json } => cmd_status(&ctx, json),
        Command::Verify { json, read_only } => cmd_verify(&ctx, json, read_only),
    }
}

/// The outcome of a refresh, as printed.
struct Indexed {
    report: IndexReport,
    skipped: Vec<Skipped>,
    docs: usize,
}

/// Loads the origin and indexes it incrementally, with a progress bar.
fn refresh(ctx: &Ctx, store: &mut Store, origin: Origin) -> Result<Indexed> {
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
    Ok(Indexed {
        report: refreshed.report,
        skipped: refreshed.skipped,
        docs: refreshed.docs,
    })
}

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

fn origin_for(
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

fn print_index_summary(ctx: &Ctx, indexed: &Indexed, json: bool) {
    let r = &indexed.report;
    if json {
        let line = json!({
            "docs_added": r.docs_added,
            "docs_changed": r.docs_changed,
            "docs_unchanged": r.docs_skipped,
            "docs_removed": r.docs_removed,
            "chunks_reused": r.chunks_reused,
            "chunks_embedded": r.chunks_embedded,
            "chunks_removed": r.chunks_removed,
            "chunks_truncated": r.chunks_truncated,
            "skipped": indexed.skipped,
        });
        println!("{line}");
        return;
    }
    for s in &indexed.skipped {
        eprintln!("skipped {}: {}", s.path, s.reason);
    }
    if r.docs_added + r.docs_changed + r.docs_removed == 0 {
        ctx.note(&format!(
            "{} documents, nothing changed: 0 chunks embedded",
            indexed.docs
        ));
    }
    println!(
        "documents: {} added, {} changed, {} unchanged, {} removed; chunks: {} reused, {} embedded, {} removed{}",
        r.docs_added,
        r.docs_changed,
        r.docs_skipped,
        r.docs_removed,
        r.chunks_reused,
        r.chunks_embedded,
        r.chunks_removed,
        if indexed.skipped.is_empty() {
            String::new()
        } else {
            format!("; {} files skipped", indexed.skipped.len())
        }
    );
}

fn cmd_index(
    ctx: &Ctx,
    dir: Option<PathBuf>,
    beir: Option<PathBuf>,
    rebuild: bool,
    json: bool,
    watch: bool,
) -> Result<ExitCode> {
    let (origin, kb) = origin_for(ctx, dir, beir.clone())?;
    let store_kb = kb.clone().or(beir);
    let mut store = ctx.open(store_kb.as_deref(), Purpose::Write, rebuild)?;
    if let Some(notice) = &store.dense_notice {
        ctx.note(&format!("notice: {notice}"));
    }
    let indexed = refresh(ctx, &mut store, origin.clone())?;
    print_index_summary(ctx, &indexed, json);
    if watch {
        return watch_and_reindex(ctx, &mut store, origin, json);
    }
    Ok(if indexed.skipped.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// Re-indexes whenever files under the knowledge base change, after 500 ms without further
/// changes. Changes inside the store directory are ignored. Runs until interrupted.
fn watch_and_reindex(ctx: &Ctx, store: &mut Store, origin: Origin, json: bool) -> Result<ExitCode> {
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
            Ok(indexed) => print_index_summary(ctx, &indexed, json),
            Err(e) => eprintln!("error: {e:#}"),
        }
        let _ = std::io::stdout().flush();
    }
}

fn build_filter(store: &Store, scopes: &[String], filters: &[String]) -> Result<Filter> {
    let scopes: Vec<Scope> = if scopes.is_empty() {
        store.config.trusted_scopes()?
    } else {
        scopes
            .iter()
            .map(|s| Ok(Scope::new(s)?))
            .collect::<Result<_>>()?
    };
    let mut metadata = Vec::new();
    for f in filters {
        let Some((k, v)) = f.split_once('=') else {
            bail!("--filter {f:?} must be key=value")
        };
        metadata.push((k.to_string(), v.to_string()));
    }
    zhiku_service::filter_for(scopes, &metadata, None)
}

/// Opens the store for a query, first bringing it up to date with the knowledge base unless
/// `no_refresh`. Returns the store and how many files were skipped. Without a refresh the store
/// is opened read-only; when it cannot be written now (another process writes it, or the folder
/// is read-only) the query reads the last committed state, with a notice.
fn open_for_query(ctx: &Ctx, no_refresh: bool) -> Result<(Store, usize)> {
    let kb = ctx.global.kb.clone();
    if no_refresh {
        return Ok((ctx.open_read_only(kb.as_deref())?, 0));
    }
    let mut refresh_first = true;
    let mut store = match ctx.open(kb.as_deref(), Purpose::Write, false) {
        Ok(store) => store,
        // The vector server is down: search what is indexed, lexically, rather than fail.
        Err(e) if e.downcast_ref::<VectorsUnavailable>().is_some() => {
            // The read-only open below reports the reason.
            ctx.note("notice: the index was not refreshed: the vector index is unreachable");
            refresh_first = false;
            ctx.open(kb.as_deref(), Purpose::Read, false)?
        }
        Err(e) if e.downcast_ref::<StoreLocked>().is_some() => {
            ctx.note(&format!(
                "notice: the index was not refreshed, searching its last committed state: {e}"
            ));
            refresh_first = false;
            ctx.open_read_only(kb.as_deref())?
        }
        Err(e) => return Err(e),
    };
    let mut skipped = 0;
    if refresh_first && let Some(kb) = &kb {
        let (origin, _) = origin_for(ctx, Some(kb.clone()), None)?;
        let indexed = refresh(ctx, &mut store, origin)?;
        let r = &indexed.report;
        skipped = indexed.skipped.len();
        for s in &indexed.skipped {
            ctx.note(&format!("skipped {}: {}", s.path, s.reason));
        }
        if r.docs_added + r.docs_changed + r.docs_removed > 0 {
            ctx.note(&format!(
                "indexed: {} added, {} changed, {} removed ({} chunks embedded)",
                r.docs_added, r.docs_changed, r.docs_removed, r.chunks_embedded
            ));
        }
    }
    Ok((store, skipped))
}

fn cmd_search(ctx: &Ctx, query: &str, q: &QueryArgs) -> Result<ExitCode> {
    let (k, mode, json) = (q.k, RetrievalMode::from(q.mode), q.json);
    let (scopes, filters, no_refresh) = (&q.scopes, &q.filters, q.no_refresh);
    let (store, skipped) = open_for_query(ctx, no_refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    let filter = build_filter(&store, scopes, filters)?;
    let source = source_for(&store)?;
    let retriever = store.retriever(source.as_ref());
    let k = k.unwrap_or(store.config.k);
    let request = RetrievalRequest {
        query,
        filter: &filter,
        mode,
        k,
        budget: None,
    };
    let retrieval = retriever.retrieve(&request)?;
    if json {
        let evidence = zhiku_service::Hit::all(&retrieval);
        println!(
            "{}",
            json!({
                "query": query,
                "mode": mode,
                "routes": retrieval.routes,
                "notice": store.dense_notice,
                "evidence": evidence,
                "dropped": retrieval.dropped,
            })
        );
    } else {
        for r in &retrieval.routes {
            if let RouteStatus::Unavailable { reason } = &r.status {
                ctx.note(&format!("{} route unavailable: {reason}", r.route));
            }
        }
        if retrieval.evidence.is_empty() {
            println!(
                "no matching documents for {query:?} in scopes {}",
                filter
                    .scopes()
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for e in &retrieval.evidence {
            let routes: Vec<String> = e
                .routes
                .iter()
                .map(|r| format!("{} #{} ({:.3})", r.route, r.rank, r.score))
                .collect();
            let snippet: String = e
                .chunk
                .content()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(160)
                .collect();
            println!(
                "{:>2}. {}  score {:.4}  [{}]",
                e.rank,
                e.chunk_id,
                e.score,
                routes.join(", ")
            );
            println!("    {} — {}", e.chunk.doc().title, e.chunk.doc().source);
            println!("    {snippet}");
        }
        for d in &retrieval.dropped {
            ctx.note(&format!("dropped {} ({})", d.chunk_id, d.reason.code()));
        }
    }
    Ok(if skipped > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

fn cmd_ask(ctx: &Ctx, question: &str, q: &QueryArgs, trace: bool) -> Result<ExitCode> {
    let mode = RetrievalMode::from(q.mode);
    let (store, skipped) = open_for_query(ctx, q.no_refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    let filter = build_filter(&store, &q.scopes, &q.filters)?;
    let source = source_for(&store)?;
    let clock = MonotonicClock::default();
    let retriever = store.retriever(source.as_ref()).with_clock(&clock);
    let generator = generator_for(&store.config)?;
    let policy = policy_for(&store.config, mode, q.k.unwrap_or(store.config.k))?;
    let file_sink = wiring::trace_log(&store);
    let memory = MemoryTraceSink::new();
    let sink = Tee(vec![&file_sink, &memory]);
    let answerer = Answerer::new(&retriever, generator.as_ref(), &sink, &clock, policy);
    let trace_id = new_trace_id();
    let frame = answerer.ask(question, &filter, &trace_id)?;
    if trace {
        eprint!("{}", render_chain(&memory.events_for(&trace_id)));
    }
    if q.json {
        println!("{}", serde_json::to_string(&frame)?);
    } else {
        print_answer(&frame);
    }
    Ok(match frame.status {
        AnswerStatus::CannotRetrieve => ExitCode::from(5),
        AnswerStatus::Blocked => ExitCode::from(7),
        _ if skipped > 0 => ExitCode::from(3),
        _ => ExitCode::SUCCESS,
    })
}

fn print_answer(frame: &AnswerFrame) {
    match frame.status {
        AnswerStatus::Answered | AnswerStatus::NotFound => println!("{}", frame.answer),
        AnswerStatus::CannotRetrieve => println!("error: {}", frame.answer),
        AnswerStatus::Blocked => println!("blocked: {}", frame.answer),
    }
    if !frame.citations.is_empty() {
        println!();
        for c in &frame.citations {
            println!(
                "[{}] {} — {}  ({})",
                c.marker, c.title, c.source, c.chunk_id
            );
            println!("    “{}”", c.quote);
        }
    }
    let ran: Vec<String> = frame
        .routes
        .iter()
        .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
        .map(|r| r.route.to_string())
        .collect();
    println!();
    println!(
        "status {}  routes {}  evidence {}{}  trace {}",
        frame.status.code(),
        if ran.is_empty() {
            "none".to_string()
        } else {
            ran.join("+")
        },
        frame.evidence.len(),
        if frame.retrieval_truncated {
            " (retrieval_truncated)"
        } else {
            ""
        },
        frame.trace_id
    );
}

fn write_eval(
    summary: &Summary,
    answers: Option<&(AnswerSummary, String)>,
    json: bool,
    warnings: usize,
) {
    let mut line = summary.to_json();
    if let Some((a, generator)) = answers {
        let mut v = a.to_json();
        v["generator"] = generator.clone().into();
        line["answers"] = v;
    }
    if json {
        println!("{line}");
        return;
    }
    println!("queries     {}", summary.totals.queries);
    for key in [
        "hit@1",
        "hit@5",
        "hit@10",
        "mrr@10",
        "ndcg@10",
        "recall@10",
        "span_hit@5",
    ] {
        if let Some(v) = line.get(key) {
            println!("{key:<11} {v}");
        }
    }
    if let Some((a, generator)) = answers {
        let v = a.to_json();
        println!("answers     {} cases with {generator}", a.cases);
        println!(
            "  statuses  {} answered, {} not_found, {} blocked, {} cannot_retrieve",
            a.answered, a.not_found, a.blocked, a.cannot_retrieve
        );
        println!(
            "  citation validity     {} ({} of {} answers)",
            v["citation_validity"], a.citation_valid, a.citation_checked
        );
        println!(
            "  no-answer → not_found {} ({} of {})",
            v["no_answer_not_found_rate"], a.no_answer_not_found, a.no_answer_cases
        );
        println!(
            "  answerable answered   {} ({} of {}); citing an expected document {}",
            v["answered_rate"], a.answerable_answered, a.answerable, v["cites_expected_rate"]
        );
    }
    if warnings > 0 {
        println!("warnings    {warnings} (see above)");
    }
}

fn cmd_eval(
    ctx: &Ctx,
    beir: Option<PathBuf>,
    golden: Option<PathBuf>,
    mode: RetrievalMode,
    json: bool,
    (per_query, answers_file): (Option<PathBuf>, Option<PathBuf>),
    embedder: &str,
) -> Result<ExitCode> {
    let mut out = match &per_query {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    let mut warnings = 0usize;
    let mut on_query = |r: &zhiku_app::eval::QueryResult| {
        if let Some(w) = &r.warning {
            warnings += 1;
            eprintln!("warning: query {}: {w}", r.id);
        }
        if let Some(out) = out.as_mut() {
            let _ = serde_json::to_writer(&mut *out, r).map(|_| writeln!(out));
        }
    };
    let mut answer_summary = None;
    let summary = match (beir, golden) {
        (Some(dir), _) => {
            let set = load_beir(&dir).with_context(|| format!("loading {}", dir.display()))?;
            let config = ctx.config(None)?;
            let dense = match embedder {
                "none" => DenseChoice::None,
                "hashing" => DenseChoice::Hashing,
                "candle" => DenseChoice::Candle(config.model.clone()),
                other => bail!("--embedder {other:?}: use none, hashing or candle"),
            };
            let index = build_corpus_index(
                &set.corpus,
                config.policy()?,
                LexicalConfig::default(),
                dense,
            )?;
            ctx.note(&format!(
                "indexed {} passages into {} chunks in {:.2} s",
                set.corpus.len(),
                index.catalog.chunk_count(),
                index.build_seconds
            ));
            if embedder == "none" && !matches!(mode, RetrievalMode::Lexical) {
                ctx.note("notice: no embedder (--embedder candle uses ZHIKU_MODEL); the dense route is unavailable");
            }
            let filter = Filter::for_scope(corpus_scope());
            evaluate(&index.retriever(), &filter, mode, &set, &mut on_query)?
        }
        (None, Some(path)) => {
            let set = load_golden(&path)?;
            let kb = ctx.kb()?;
            let mut store = ctx.open(Some(&kb), Purpose::Write, false)?;
            let (origin, _) = origin_for(ctx, Some(kb.clone()), None)?;
            refresh(ctx, &mut store, origin)?;
            let source = source_for(&store)?;
            let filter = build_filter(&store, &[], &[])?;
            let clock = MonotonicClock::default();
            let retriever = store.retriever(source.as_ref()).with_clock(&clock);
            let summary = evaluate(&retriever, &filter, mode, &set, &mut on_query)?;
            // Grounded answers over the same cases: statuses and citation validity.
            let generator = generator_for(&store.config)?;
            let policy = policy_for(&store.config, mode, store.config.k)?;
            let sink = wiring::trace_log(&store);
            let answerer = Answerer::new(&retriever, generator.as_ref(), &sink, &clock, policy);
            let mut answers_out = match &answers_file {
                Some(p) => Some(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )),
                None => None,
            };
            let answers = evaluate_answers(
                &answerer,
                &filter,
                &set,
                &new_trace_id,
                &mut |r: &AnswerResult| {
                    if let Some(out) = answers_out.as_mut() {
                        let _ = serde_json::to_writer(&mut *out, r).map(|_| writeln!(out));
                    }
                },
            )?;
            if let Some(mut out) = answers_out {
                out.flush()?;
            }
            answer_summary = Some((answers, generator.identity()));
            summary
        }
        (None, None) => bail!("give --beir DIR or --golden FILE"),
    };
    if let Some(mut out) = out {
        out.flush()?;
    }
    write_eval(&summary, answer_summary.as_ref(), json, warnings);
    Ok(ExitCode::SUCCESS)
}

/// Opens the store and wraps it for serving, refreshing it from `--kb` first unless told not to.
fn open_service(ctx: &Ctx, no_refresh: bool) -> Result<zhiku_service::SharedKb> {
    let kb_dir = ctx.global.kb.clone();
    let mut refresh_from = None;
    let store = if no_refresh || kb_dir.is_none() {
        ctx.open(kb_dir.as_deref(), Purpose::Read, false)?
    } else {
        match ctx.open(kb_dir.as_deref(), Purpose::Write, false) {
            Ok(store) => {
                refresh_from = Some(origin_for(ctx, kb_dir.clone(), None)?.0);
                store
            }
            Err(e) if e.downcast_ref::<VectorsUnavailable>().is_some() => {
                ctx.note("notice: the index was not refreshed: the vector index is unreachable");
                ctx.open(kb_dir.as_deref(), Purpose::Read, false)?
            }
            Err(e) => return Err(e),
        }
    };
    if let Some(notice) = &store.dense_notice {
        ctx.note(&format!("notice: {notice}"));
    }
    let (service, refreshed) = wiring::open_service(store, refresh_from)?;
    if let Some(r) = refreshed {
        for s in &r.skipped {
            ctx.note(&format!("skipped {}: {}", s.path, s.reason));
        }
        let rep = &r.report;
        ctx.note(&format!(
            "indexed: {} documents ({} added, {} changed, {} removed, {} chunks embedded)",
            r.docs, rep.docs_added, rep.docs_changed, rep.docs_removed, rep.chunks_embedded
        ));
    }
    Ok(std::sync::Arc::new(service))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn cmd_serve(
    ctx: &Ctx,
    bind: Option<String>,
    no_refresh: bool,
    log_format: LogFormat,
) -> Result<ExitCode> {
    serve::logging::init(log_format)?;
    let service = open_service(ctx, no_refresh)?;
    let mut settings = ctx.config(ctx.global.kb.as_deref())?.serve;
    if let Some(bind) = bind {
        settings.bind = bind;
    }
    let addr: std::net::SocketAddr = settings.bind.parse().with_context(|| {
        format!(
            "--bind {:?} is not an address like 127.0.0.1:7878",
            settings.bind
        )
    })?;
    let anonymous = zhiku_service::Caller {
        name: "anonymous".into(),
        write: false,
        ..service.local_caller()
    };
    let tokens = Tokens::from_rules(&settings.tokens, Some(anonymous))?;
    serve::metrics::Guard::from_settings(&settings)?;
    if !tokens.required() && !addr.ip().is_loopback() {
        bail!(
            "refusing to serve {addr} without tokens: add [[serve.tokens]] to zhiku.toml (zhiku token NAME --scope S prints one), or bind a loopback address"
        );
    }
    let state = AppState::new(service.clone(), settings.clone(), tokens.clone());
    let gate = state.gate().clone();
    let (mcp, end_mcp_sessions) = zhiku_app::mcp::http_router(service, gate.clone());
    let app = serve::router(state, Some(mcp));
    let (limits, lowered) = serve::conn::Limits::of(&settings);
    if let Some(lowered) = lowered {
        ctx.note(&format!("note: {lowered}"));
    }
    let shutdown_ms = settings.shutdown_timeout_ms;
    let rt = runtime()?;
    let stopped = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        ctx.note(&format!(
            "zhiku serving http://{local}  (API /v1, page /, MCP /mcp; {})",
            if tokens.required() {
                format!("{} bearer token(s)", settings.tokens.len())
            } else {
                "no tokens: anonymous read-only access to the trusted scopes".to_string()
            }
        ));
        let stopped = serve::conn::serve(
            listener,
            app,
            limits,
            shutdown_signal(),
            end_mcp_sessions,
            async move { gate.drained().await },
        )
        .await;
        anyhow::Ok(stopped)
    })?;
    match stopped {
        serve::conn::Stopped::Drained => {
            ctx.note("zhiku stopped: every request and its work finished")
        }
        serve::conn::Stopped::DeadlinePassed { open } => ctx.note(&format!(
            "zhiku stopped after shutdown_timeout_ms ({shutdown_ms} ms) with {open} connection(s) or their work unfinished"
        )),
    }
    // Work still running past shutdown_timeout_ms is abandoned (the store's writes are
    // crash-safe).
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

fn cmd_mcp(ctx: &Ctx, no_refresh: bool) -> Result<ExitCode> {
    let service = open_service(ctx, no_refresh)?;
    let caller = service.local_caller();
    runtime()?.block_on(zhiku_app::mcp::serve_stdio(service, caller))?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_token(name: &str, scopes: &[String], write: bool) -> Result<ExitCode> {
    for s in scopes {
        Scope::new(s)?;
    }
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("cannot read /dev/urandom")?,
        &mut bytes,
    )?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    println!("token (give it to the caller; it is not stored anywhere):\n  {token}\n");
    println!("add to zhiku.toml:\n");
    println!("[[serve.tokens]]");
    println!("name = {name:?}");
    println!("sha256 = {:?}", token_digest(&token));
    println!("scopes = {scopes:?}");
    if write {
        println!("write = true");
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_status(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_read_only(kb.as_deref())?;
    let c = &store.recorded.catalog;
    let status = json!({
        "store": store.dir,
        "documents": c.docs.len(),
        "chunks": c.chunk_count(),
        "policy": c.policy.describe(),
        "policy_fingerprint": c.policy.fingerprint(),
        "embedding_space": c.space,
        "analyzer": c.analyzer,
        "disk_bytes": store.disk_bytes(),
        "adapters": store.picked.iter().map(|(k, v)| json!({"port": k, "choice": v})).collect::<Vec<_>>(),
        "config_origins": store.config.origins.iter().map(|(k, v)| json!({"key": k, "from": v})).collect::<Vec<_>>(),
        "notice": store.dense_notice,
    });
    if json {
        println!("{status}");
    } else {
        println!("store       {}", store.dir.display());
        println!("documents   {}", c.docs.len());
        println!("chunks      {}", c.chunk_count());
        println!(
            "policy      {} (fingerprint {})",
            c.policy.describe(),
            c.policy.fingerprint()
        );
        println!(
            "space       {}",
            c.space.as_deref().unwrap_or("none (lexical only)")
        );
        println!("analyzer    {}", c.analyzer);
        println!("on disk     {:.1} KiB", store.disk_bytes() as f64 / 1024.0);
        for (port, choice) in &store.picked {
            println!("{port:<11} {choice}");
        }
        if ctx.global.verbose {
            for (key, from) in &store.config.origins {
                println!("  {key} from {from}");
            }
        }
        if let Some(n) = &store.dense_notice {
            println!("notice      {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_verify(ctx: &Ctx, json: bool, read_only: bool) -> Result<ExitCode> {
    let kb = ctx.global.kb.clone();
    let mut notice = None;
    let mut store = if read_only {
        ctx.open_read_only(kb.as_deref())?
    } else {
        match ctx.open(kb.as_deref(), Purpose::Read, false) {
            Ok(store) => store,
            Err(e) if e.downcast_ref::<StoreLocked>().is_some() => {
                notice = Some(format!(
                    "checked the last committed state without repairing: {e}"
                ));
                ctx.open_read_only(kb.as_deref())?
            }
            Err(e) => return Err(e),
        }
    };
    let mut attempt = 0u64;
    let (problems, writer, in_progress) = loop {
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
        // Beside a running writer, manifest and indexes were read one after the other and may
        // straddle one of its writes (indexes commit, then the manifest is renamed): look again
        // at a later committed state before reporting a difference.
        if problems.is_empty() || writer.is_none() || attempt >= 10 {
            break (problems, writer, in_progress);
        }
        attempt += 1;
        std::thread::sleep(std::time::Duration::from_millis((50 * attempt).min(250)));
        store = ctx.open_read_only(kb.as_deref())?;
    };
    if json {
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
    } else {
        if let Some(n) = &notice {
            ctx.note(&format!("notice: {n}"));
        }
        if store.repair.repaired() {
            println!("repaired on open: {}", store.repair.describe());
        }
        if let Some(pid) = &writer {
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
        } else {
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
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(6)
    })
}
