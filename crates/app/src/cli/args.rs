//! The command line's shape: the global options, the commands and their arguments, as clap
//! parses them.

use std::path::PathBuf;

use clap::builder::{BoolishValueParser, TypedValueParser};
use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_http::logging::LogFormat;

#[derive(Parser, Debug)]
#[command(
    name = "zhiku",
    version,
    about = "知库: a knowledge-base engine for retrieval-augmented generation"
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct Global {
    /// The knowledge-base folder.
    #[arg(long, global = true, env = "ZHIKU_KB")]
    pub(crate) kb: Option<PathBuf>,
    /// The store directory (default: .zhiku/ inside the knowledge base).
    #[arg(long, global = true, env = "ZHIKU_STORE")]
    pub(crate) store: Option<PathBuf>,
    /// Configuration file (default: zhiku.toml in the knowledge base, if present).
    #[arg(long, global = true)]
    pub(crate) config: Option<PathBuf>,
    /// Profile: dev, local (default) or prod.
    #[arg(long, global = true)]
    pub(crate) profile: Option<String>,
    /// More detail.
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    /// Only errors and results.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub(crate) quiet: bool,
}

/// A flag parsed straight into what it means: `unset` without it, `set` with it (clap's
/// `SetTrue` flag, so `--help` shows it as before).
fn flag<T: Clone + Send + Sync + 'static>(unset: T, set: T) -> impl TypedValueParser<Value = T> {
    BoolishValueParser::new().map(move |given| if given { set.clone() } else { unset.clone() })
}

/// How a command prints its result (`--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Lines for a person.
    Text,
    /// JSON for a program.
    Json,
}

/// Whether a command that reads the store first brings it up to date with the knowledge base
/// (`--no-refresh`: it does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// Refresh first, when the store can be written now.
    First,
    /// Read the store as it is.
    Skip,
}

/// Whether `ask` and `chat` print each run as a chain of steps (`--trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trace {
    /// The answer alone.
    Hide,
    /// The chain on stderr, then the answer.
    Print,
}

/// How `index` treats the store it finds (`--rebuild`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Build {
    /// Index what changed since the last run.
    Incremental,
    /// Discard the store and build it again.
    Rebuild,
}

/// How long `index` runs (`--watch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// One pass.
    Once,
    /// A pass, then one after every change, until interrupted.
    OnEveryChange,
}

/// What `verify` checks (`--read-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The store as a writing open finds it, after repairing what a crash left (the last
    /// committed state, unrepaired, when another process writes it).
    RepairFirst,
    /// The last committed state, without the lock and without repairing.
    LastCommitted,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Mode {
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
pub(crate) struct QueryArgs {
    /// Evidence to retrieve (default: `k` from the configuration). For `ask`, before the
    /// context budget.
    #[arg(long, short = 'k')]
    pub(crate) k: Option<usize>,
    /// Retrieval routes.
    #[arg(long, value_enum, default_value = "hybrid")]
    pub(crate) mode: Mode,
    /// Scopes to search (default: the configured scopes).
    #[arg(long = "scope")]
    pub(crate) scopes: Vec<String>,
    /// Metadata equality filter, key=value (repeatable).
    #[arg(long = "filter")]
    pub(crate) filters: Vec<String>,
    /// Only evidence in this locale (a prefix of the documents' tags: `zh` matches `zh-CN`
    /// and `zh-TW`). Without it, evidence in the question's language is preferred, not
    /// required (`locale_boost`).
    #[arg(long)]
    pub(crate) locale: Option<String>,
    /// Print JSON (for `ask`, the answer frame).
    #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
    pub(crate) output: Output,
    /// Do not refresh the index first.
    #[arg(long = "no-refresh", action = ArgAction::SetTrue, value_parser = flag(Refresh::First, Refresh::Skip))]
    pub(crate) refresh: Refresh,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Index a knowledge-base folder (or a BEIR corpus) incrementally.
    Index {
        /// The folder (default: --kb).
        dir: Option<PathBuf>,
        /// Index a BEIR corpus.jsonl from this directory instead of a folder.
        #[arg(long, conflicts_with = "dir")]
        beir: Option<PathBuf>,
        /// Discard the store and build it again (after a policy, model or tokenizer change).
        #[arg(long = "rebuild", action = ArgAction::SetTrue, value_parser = flag(Build::Incremental, Build::Rebuild))]
        build: Build,
        /// Print one JSON object.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
        /// Keep running and re-index when files change (debounced).
        #[arg(long = "watch", conflicts_with = "beir", action = ArgAction::SetTrue, value_parser = flag(Runs::Once, Runs::OnEveryChange))]
        runs: Runs,
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
        #[arg(long = "trace", action = ArgAction::SetTrue, value_parser = flag(Trace::Hide, Trace::Print))]
        trace: Trace,
        /// Earlier turns of the conversation (a JSON array of {question, answer} turns or
        /// answer frames, or JSON Lines such as `zhiku ask --json` output; of a longer
        /// conversation, its last 100 turns): a follow-up is answered as a standalone question.
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
    },
    /// A conversation: each line read is a question answered after the earlier ones
    /// (`/reset` starts over, `/quit` ends).
    Chat {
        #[command(flatten)]
        q: QueryArgs,
        /// Print each run as a chain of steps.
        #[arg(long = "trace", action = ArgAction::SetTrue, value_parser = flag(Trace::Hide, Trace::Print))]
        trace: Trace,
        /// Start from these earlier turns (as for `ask --history`).
        #[arg(long, value_name = "FILE")]
        history: Option<PathBuf>,
        /// Append every turn's answer frame to this file as one JSON line (a history file).
        #[arg(long, value_name = "FILE")]
        save: Option<PathBuf>,
    },
    /// Read a document, or one section of it with its subsections, in order: `DOC` or
    /// `DOC#SECTION` (the section ID a search hit or a citation carries).
    Read {
        /// The document ID, optionally followed by `#` and a section ID.
        target: String,
        /// Print the JSON view (text, revision, outline, chunks).
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
        /// Do not refresh the index first.
        #[arg(long = "no-refresh", action = ArgAction::SetTrue, value_parser = flag(Refresh::First, Refresh::Skip))]
        refresh: Refresh,
    },
    /// Evaluate retrieval on a BEIR directory or a golden set over the knowledge base.
    Eval(EvalArgs),
    /// Serve the knowledge base over HTTP: the JSON API under /v1, the web page at /, and MCP
    /// (streamable HTTP) at /mcp.
    Serve {
        /// Listen address (default: [serve] bind, 127.0.0.1:7878).
        #[arg(long)]
        bind: Option<String>,
        /// Do not refresh the index from the knowledge base before serving.
        #[arg(long = "no-refresh", action = ArgAction::SetTrue, value_parser = flag(Refresh::First, Refresh::Skip))]
        refresh: Refresh,
        /// Log lines on stderr, one per request and event: text, or json (one object per
        /// line). The level: ZHIKU_LOG or RUST_LOG (default info).
        #[arg(long, env = "ZHIKU_LOG_FORMAT", default_value = "text")]
        log_format: LogFormat,
    },
    /// Serve the knowledge base over the Model Context Protocol on stdin/stdout.
    Mcp {
        /// Do not refresh the index from the knowledge base first.
        #[arg(long = "no-refresh", action = ArgAction::SetTrue, value_parser = flag(Refresh::First, Refresh::Skip))]
        refresh: Refresh,
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
    /// List the indexed documents: ID, scope, when indexed, when they expire, title.
    Documents {
        /// Print one JSON object per line.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Who may read a document and why (the rule that gave its readers), or, with --user,
    /// what one person may read.
    Access {
        /// The document ID.
        doc: Option<String>,
        /// A person's user name, as documents name them in `user:…`.
        #[arg(long, conflicts_with = "doc")]
        user: Option<String>,
        /// The person's groups (repeatable).
        #[arg(long = "group", requires = "user")]
        groups: Vec<String>,
        /// The scopes the person may read (repeatable; default: every scope).
        #[arg(long = "scope", requires = "user")]
        scopes: Vec<String>,
        /// Print one JSON object per line.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Sync every source of `[[sources]]` (git repositories, web sites, WebDAV shares) into
    /// `sources/<name>/` of the folder, then index what changed. One failing source never
    /// stops the others.
    Sync {
        /// Only these sources (default: all).
        names: Vec<String>,
        /// Print one JSON object.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Remove expired documents, and the oldest beyond a scope's cap (`scope_caps`), from the
    /// folder, both indexes and the catalog (every `index` also ends with this sweep).
    Sweep {
        /// Print one JSON object.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Print the write-back audit trail (every agent write accepted or refused), oldest first.
    Audit {
        /// Print one JSON object per line.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Show what the store holds and which adapters were picked.
    Status {
        /// Print JSON.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
    },
    /// Check that manifest, lexical index and vectors agree (repairing first what a crash left,
    /// unless another process is writing the store or it cannot be written).
    Verify {
        /// Print JSON.
        #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
        output: Output,
        /// Check the last committed state without the store lock and without repairing: works
        /// beside a running `zhiku serve` and on a read-only store.
        #[arg(long = "read-only", action = ArgAction::SetTrue, value_parser = flag(Check::RepairFirst, Check::LastCommitted))]
        check: Check,
    },
}

/// What `zhiku eval` evaluates, and where its results go.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// A BEIR directory (corpus, queries, qrels, optional spans), indexed in memory.
    #[arg(long, conflicts_with = "golden")]
    pub(crate) beir: Option<PathBuf>,
    /// A golden JSONL file evaluated against the knowledge base (--kb).
    #[arg(long)]
    pub(crate) golden: Option<PathBuf>,
    /// Grade the answer runs already recorded instead of asking again: those of the store's
    /// trace log (`traces.jsonl` and its rotated files), or of the trace log FILE given. With
    /// --golden, each case is graded by the latest run of its question; without, every run.
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with = "beir")]
    pub(crate) from_traces: Option<Option<PathBuf>>,
    /// Retrieval mode.
    #[arg(long, value_enum, default_value = "lexical")]
    pub(crate) mode: Mode,
    /// Print the one-line JSON summary.
    #[arg(long = "json", action = ArgAction::SetTrue, value_parser = flag(Output::Text, Output::Json))]
    pub(crate) output: Output,
    /// Write per-query results (rank of the first hit, top-10 ids) as JSONL.
    #[arg(long)]
    pub(crate) per_query: Option<PathBuf>,
    /// Golden sets only: write each case's answer (status, citation validity, trace id) as
    /// JSONL.
    #[arg(long)]
    pub(crate) answers: Option<PathBuf>,
    /// BEIR only: the dense route's embedder: none, hashing (the test double), candle (the
    /// configured model, ZHIKU_MODEL) or openai (the configured embeddings server,
    /// ZHIKU_EMBED_URL). Default: openai when the configuration picks it (`embedder =
    /// "openai"`, ZHIKU_EMBEDDER=openai: a server is a deliberate choice), else none.
    #[arg(long)]
    pub(crate) embedder: Option<String>,
    /// Also measure the answers' context under this policy (chunks, section or
    /// neighbours): span coverage, expected documents in the context, answer rate, size.
    #[arg(long)]
    pub(crate) context: Option<ContextPolicy>,
}
