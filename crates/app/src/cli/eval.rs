//! `zhiku eval`: retrieval quality on a BEIR directory (indexed in memory), or retrieval and
//! answer quality on a golden set over the knowledge base.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use zhiku_app::wiring::corpus::{DenseChoice, build_default_corpus_index, corpus_scope};
use zhiku_app::wiring::generator::generator_for;
use zhiku_app::wiring::store::Purpose;
use zhiku_app::wiring::{self, source_for};
use zhiku_domain::Filter;
use zhiku_domain::usecases::{Answerer, RetrievalMode};
use zhiku_eval::beir::{load_beir, load_golden};
use zhiku_eval::runner::{AnswerResult, evaluate, evaluate_answers};
use zhiku_service::{MonotonicClock, new_trace_id};

use super::ctx::{Ctx, build_filter, origin_for, refresh};
use super::exit::Exit;
use super::render;

/// Runs the evaluation, writes the per-query and per-answer files, prints the summary.
pub(crate) fn run(
    ctx: &Ctx,
    beir: Option<PathBuf>,
    golden: Option<PathBuf>,
    mode: RetrievalMode,
    json: bool,
    (per_query, answers_file): (Option<PathBuf>, Option<PathBuf>),
    embedder: &str,
) -> Result<Exit> {
    let mut out = match &per_query {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    let mut warnings = 0usize;
    let mut on_query = |r: &zhiku_eval::runner::QueryResult| {
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
            let index = build_default_corpus_index(&set.corpus, config.policy, dense)?;
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
            let documents = source_for(&store)?;
            let source = documents.source_store(store.source_paths());
            let filter = build_filter(&store, &[], &[])?;
            let clock = MonotonicClock::default();
            let retriever = store.retriever(source.as_ref()).with_clock(&clock);
            let summary = evaluate(&retriever, &filter, mode, &set, &mut on_query)?;
            // Grounded answers over the same cases: statuses and citation validity.
            let generator = generator_for(&store.config)?;
            let policy = store.settings.answer_policy(mode, store.config.k);
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
    render::eval(&summary, answer_summary.as_ref(), json, warnings);
    Ok(Exit::Success)
}
