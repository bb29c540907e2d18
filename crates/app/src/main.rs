//! `zhiku`: the command-line entry point.
//!
//! Exit codes: 0 success; 1 error; 2 usage error; 3 finished, but some files were skipped;
//! 4 the store was built with another configuration and must be rebuilt; 5 cannot retrieve
//! (no retrieval route could run); 6 `verify` found an inconsistency; 7 `ask` was blocked (the
//! generator's citations kept failing validation). Each is a variant of [`cli::exit::Exit`].

// Opt-in (`--features mimalloc`): faster lexical builds, more memory; see docs/measurements.md, "Embeddings (candle)".
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use cli::args::{Cli, Command};
use cli::ctx::Ctx;
use cli::error::CliError;
use cli::exit::Exit;

/// Parses the command line, runs the command, and turns how it ended into the exit status (an
/// error is printed first).
fn main() -> ExitCode {
    // The hidden extraction-worker mode: this executable re-run by the loader to parse one
    // untrusted file after another in a process of its own (`wiring::extraction_workers`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if zhiku_app::wiring::is_extraction_worker(&args) {
        return match zhiku_app::wiring::run_extraction_worker(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("extraction worker: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    zhiku_app::wiring::run_extractors_in_this_executable();
    let cli = Cli::parse();
    match run(cli) {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            CliError::from(e).exit().into()
        }
    }
}

/// Runs the parsed command: every command is one module of [`cli`].
fn run(cli: Cli) -> Result<Exit> {
    let ctx = Ctx { global: cli.global };
    match cli.command {
        Command::Index {
            dir,
            beir,
            build,
            output,
            runs,
        } => cli::index::run(&ctx, dir, beir, build, output, runs),
        Command::Search { query, q } => cli::search::run(&ctx, &query, &q),
        Command::Ask {
            question,
            q,
            trace,
            history,
        } => cli::ask::run(&ctx, &question, &q, trace, history.as_deref()),
        Command::Chat {
            q,
            trace,
            history,
            save,
        } => cli::ask::chat(&ctx, &q, trace, history.as_deref(), save.as_deref()),
        Command::Read {
            target,
            output,
            refresh,
        } => cli::read::run(&ctx, &target, output, refresh),
        Command::Eval(args) => cli::eval::run(&ctx, &args),
        Command::Serve {
            bind,
            refresh,
            log_format,
        } => cli::serve::run(&ctx, bind, refresh, log_format),
        Command::Mcp { refresh } => cli::mcp::run(&ctx, refresh),
        Command::Token {
            name,
            scopes,
            write,
        } => cli::token::run(&name, &scopes, write),
        Command::Documents { output } => cli::retention::documents(&ctx, output),
        Command::Access {
            doc,
            user,
            groups,
            scopes,
            output,
        } => cli::access::run(
            &ctx,
            &cli::access::Question {
                doc: doc.as_deref(),
                user: user.as_deref(),
                groups: &groups,
                scopes: &scopes,
            },
            output,
        ),
        Command::Sync { names, output } => cli::sync::run(&ctx, &names, output),
        Command::Sweep { output } => cli::retention::sweep(&ctx, output),
        Command::Audit { output } => cli::retention::audit(&ctx, output),
        Command::Status { output } => cli::status::run(&ctx, output),
        Command::Verify { output, check } => cli::verify::run(&ctx, output, check),
    }
}
