//! `zhiku`: the command-line entry point.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use zhiku_adapters_tantivy::LexicalConfig;
use zhiku_app::beir::load_beir;
use zhiku_app::corpus::{DenseChoice, build_corpus_index, corpus_scope};
use zhiku_app::eval::evaluate;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_domain::{ChunkingPolicy, Filter};

#[derive(Parser, Debug)]
#[command(
    name = "zhiku",
    version,
    about = "知库: a knowledge-base engine for retrieval-augmented generation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Lexical,
    Dense,
    Hybrid,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EmbedderChoice {
    /// No embedder: only the lexical route can run.
    None,
    /// The hashing test double: deterministic, no semantics (wiring checks only).
    Hashing,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate retrieval on a BEIR-layout directory (corpus.jsonl, queries.jsonl,
    /// qrels/test.tsv, optional spans.jsonl).
    Eval {
        /// The BEIR directory.
        #[arg(long)]
        beir: PathBuf,
        /// Retrieval mode.
        #[arg(long, value_enum, default_value = "lexical")]
        mode: Mode,
        /// Embedder for the dense route.
        #[arg(long, value_enum, default_value = "none")]
        embedder: EmbedderChoice,
        /// Print the one-line JSON summary only.
        #[arg(long)]
        json: bool,
        /// Largest chunk in characters (default: the default chunking policy).
        #[arg(long)]
        max_chars: Option<usize>,
        /// Overlap in characters (default: the default chunking policy).
        #[arg(long)]
        overlap_chars: Option<usize>,
        /// Weight of title matches in BM25 (default 2).
        #[arg(long)]
        title_boost: Option<f32>,
        /// Write per-query results (rank of the first hit, top-10 ids) as JSONL to this file.
        #[arg(long)]
        per_query: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Eval {
            beir,
            mode,
            embedder,
            json,
            per_query,
            max_chars,
            overlap_chars,
            title_boost,
        } => {
            let set = load_beir(&beir).with_context(|| format!("loading {}", beir.display()))?;
            let dense = match embedder {
                EmbedderChoice::None => DenseChoice::None,
                EmbedderChoice::Hashing => DenseChoice::Hashing,
            };
            let mode = match mode {
                Mode::Lexical => RetrievalMode::Lexical,
                Mode::Dense => RetrievalMode::Dense,
                Mode::Hybrid => RetrievalMode::Hybrid,
            };
            let default = ChunkingPolicy::default();
            let policy = ChunkingPolicy::with_sizes(
                max_chars.unwrap_or(default.max_chars()),
                overlap_chars.unwrap_or(default.overlap_chars()),
            )?;
            let mut lexical = LexicalConfig::default();
            if let Some(boost) = title_boost {
                lexical.title_boost = boost;
            }
            let index = build_corpus_index(&set.corpus, policy, lexical, dense)?;
            eprintln!(
                "indexed {} passages into {} chunks in {:.2} s",
                set.corpus.len(),
                index.catalog.chunk_count(),
                index.build_seconds
            );
            let mut out: Option<std::io::BufWriter<std::fs::File>> = match &per_query {
                Some(p) => Some(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )),
                None => None,
            };
            let mut warnings = 0usize;
            let filter = Filter::for_scope(corpus_scope());
            let retriever = index.retriever();
            let summary = evaluate(&retriever, &filter, mode, &set, &mut |r| {
                if let Some(w) = &r.warning {
                    warnings += 1;
                    eprintln!("warning: query {}: {w}", r.id);
                }
                if let Some(out) = out.as_mut() {
                    let _ = serde_json::to_writer(&mut *out, r).map(|_| writeln!(out));
                }
            })?;
            if let Some(mut out) = out {
                out.flush()?;
            }
            let line = summary.to_json();
            if json {
                println!("{line}");
            } else {
                let t = &summary.totals;
                println!("queries     {}", t.queries);
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
                if warnings > 0 {
                    println!("warnings    {warnings} (see above)");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
