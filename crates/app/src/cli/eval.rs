//! `zhiku eval`: retrieval quality on a BEIR directory (indexed in memory), or retrieval and
//! answer quality on a golden set over the knowledge base.
//!
//! Both run through the service's evaluation ([`zhiku_service::Evaluation`]): the retriever
//! and answerer configured as every search and question has them, the judge (if any) grading
//! the answers rather than deciding them. Follow-ups are retrieved as the offline rules make
//! them standalone, whatever the configured planner, so retrieval figures never depend on a
//! model.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use zhiku_app::config::{Config, EmbedderKind};
use zhiku_app::wiring;
use zhiku_app::wiring::corpus::{CorpusLexical, DenseChoice, build_corpus_index, corpus_scope};
use zhiku_app::wiring::embed_server::openai_embedder_config;
use zhiku_app::wiring::generator::generator_for;
use zhiku_app::wiring::rerank::reranker_for;
use zhiku_app::wiring::store::{Access, Purpose};
use zhiku_domain::Filter;
use zhiku_domain::ports::Planner;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_eval::beir::{EvalSet, load_beir, load_golden, unknown_documents};
use zhiku_eval::context::context_figures;
use zhiku_eval::corpus_chunks::CorpusChunks;
use zhiku_eval::recorded::{grade_recorded, recorded_runs};
use zhiku_eval::runner::{AnswerSummary, Grader, QueryResult, Summary, evaluate, evaluate_answers};
use zhiku_service::{Answering, CorpusEvaluation, Evaluation, evaluate_corpus, new_trace_id};

use super::args::{EvalArgs, Output};
use super::ctx::{Ctx, origin_for, refresh};
use super::exit::Exit;
use super::render;

/// Where each query's (or answer's) result goes, one JSON line each, when asked.
type JsonLines = Option<BufWriter<File>>;

/// Creates the JSON Lines file at `path`, when one is given.
fn json_lines(path: Option<&Path>) -> Result<JsonLines> {
    path.map(|p| {
        File::create(p)
            .map(BufWriter::new)
            .with_context(|| format!("cannot create {}", p.display()))
    })
    .transpose()
}

/// Appends `value` to `out` as one line (a failed write loses that line only).
fn write_line(out: &mut JsonLines, value: &impl Serialize) {
    if let Some(out) = out.as_mut() {
        let _ = serde_json::to_writer(&mut *out, value).map(|_| writeln!(out));
    }
}

/// Runs the evaluation, writes the per-query and per-answer files, prints the summary.
pub(crate) fn run(ctx: &Ctx, args: &EvalArgs) -> Result<Exit> {
    if let Some(traces) = &args.from_traces {
        return from_traces(ctx, args, traces.as_deref());
    }
    let mut out = json_lines(args.per_query.as_deref())?;
    let mut warnings = 0usize;
    let mut on_query = |r: &QueryResult| {
        if let Some(w) = &r.warning {
            warnings += 1;
            eprintln!("warning: query {}: {w}", r.id);
        }
        write_line(&mut out, r);
    };
    let answering = Answering {
        mode: args.mode.into(),
        context: args.context,
    };
    let figures = Figures {
        answering,
        output: args.output,
        rules: wiring::planner::rules_planner(),
    };
    let embedder = args.embedder.as_deref();
    let (summary, answers) = match (&args.beir, &args.golden) {
        (Some(dir), _) => (figures.beir(ctx, dir, embedder, &mut on_query)?, None),
        (None, Some(path)) => {
            let (summary, answers) =
                figures.golden(ctx, path, args.answers.as_deref(), &mut on_query)?;
            (summary, Some(answers))
        }
        (None, None) => bail!("give --beir DIR or --golden FILE"),
    };
    if let Some(mut out) = out {
        out.flush()?;
    }
    render::eval(&summary, answers.as_ref(), args.output, warnings);
    Ok(Exit::Success)
}

/// Grades the runs recorded in the trace log `traces` (`None`: the store's) against the golden
/// set of `--golden` (every run without one), asking nothing again.
fn from_traces(ctx: &Ctx, args: &EvalArgs, traces: Option<&Path>) -> Result<Exit> {
    let path = match traces {
        Some(file) => file.to_path_buf(),
        None => {
            let kb = ctx.kb().ok();
            ctx.store_dir(kb.as_deref())?.join("traces.jsonl")
        }
    };
    let set = args.golden.as_deref().map(load_golden).transpose()?;
    let (events, unreadable) = wiring::recorded_events(&path)?;
    if events.is_empty() {
        bail!(
            "{}: no recorded runs (is this the store's trace log?)",
            path.display()
        );
    }
    if unreadable > 0 {
        eprintln!(
            "warning: {unreadable} line(s) of {} are no trace event",
            path.display()
        );
    }
    let runs = recorded_runs(&events);
    let mut out = json_lines(args.answers.as_deref())?;
    let graded = grade_recorded(set.as_ref(), &runs, &mut |r| write_line(&mut out, r));
    if let Some(mut out) = out {
        out.flush()?;
    }
    render::recorded(&graded, &path, args.output);
    Ok(Exit::Success)
}

/// What every figure of one run is measured with.
struct Figures {
    answering: Answering,
    output: Output,
    /// Makes follow-ups standalone for retrieval: the offline rules, whatever the
    /// configuration, so retrieval figures do not depend on a model.
    rules: Box<dyn Planner>,
}

impl Figures {
    /// Retrieval figures over the BEIR directory `dir`, indexed in memory with the configured
    /// chunking, fusion, locale preference and reranker; with `--context`, the context figures
    /// over the same corpus too.
    fn beir(
        &self,
        ctx: &Ctx,
        dir: &Path,
        embedder: Option<&str>,
        on_query: &mut dyn FnMut(&QueryResult),
    ) -> Result<Summary> {
        let set = load_beir(dir).with_context(|| format!("loading {}", dir.display()))?;
        let config = ctx.config(None)?;
        let (embedder, dense) = dense_choice(&config, embedder)?;
        let lexical = CorpusLexical::of(config.lexical, &config.qdrant);
        let index = build_corpus_index(&set.corpus, config.policy, lexical, dense)?;
        ctx.note(&format!(
            "indexed {} passages into {} chunks in {:.2} s",
            set.corpus.len(),
            index.catalog.chunk_count(),
            index.build_seconds
        ));
        if embedder == "none" && !matches!(self.answering.mode, RetrievalMode::Lexical) {
            ctx.note("notice: no embedder (--embedder candle uses ZHIKU_MODEL); the dense route is unavailable");
        }
        let reranker = reranker_for(&config);
        let generator = generator_for(&config, None)?;
        let chunks = CorpusChunks::new(&set.corpus, corpus_scope(), config.policy);
        let corpus = CorpusEvaluation {
            routes: index.retriever(),
            reranker: reranker.as_deref(),
            generator: generator.as_ref(),
            chunks: &chunks,
            filter: Filter::for_scope(corpus_scope()),
        };
        evaluate_corpus(corpus, &config.service_settings(), self.answering, |e| {
            let summary = self.retrieval(e, &set, on_query)?;
            self.context(e, &set)?;
            Ok(summary)
        })
    }

    /// Retrieval and answer figures of the golden set at `path` over the knowledge base,
    /// brought up to date first; with `--context`, the context figures too. Each answer goes
    /// to `answers_file` as a JSON line.
    fn golden(
        &self,
        ctx: &Ctx,
        path: &Path,
        answers_file: Option<&Path>,
        on_query: &mut dyn FnMut(&QueryResult),
    ) -> Result<(Summary, (AnswerSummary, String))> {
        let set = load_golden(path)?;
        let kb = ctx.kb()?;
        let mut store = ctx.open(Some(&kb), Access::Writing(Purpose::Write))?;
        let (origin, _) = origin_for(ctx, Some(kb.clone()), None)?;
        refresh(ctx, &mut store, origin)?;
        let (service, _) = wiring::open_service(store, None)?;
        let caller = service.local_caller();
        let (docs, _) = service.documents(&caller, 0, usize::MAX);
        let known: HashSet<String> = docs.iter().map(|d| d.id.to_string()).collect();
        let unknown = unknown_documents(&set, &known);
        if !unknown.is_empty() {
            let listed: Vec<String> = unknown
                .iter()
                .take(10)
                .map(|(case, doc)| format!("case {case:?} expects document {doc:?}"))
                .collect();
            bail!(
                "{}: {} expected document ID(s) are not in the knowledge base ({} documents), so \
                 the set grades nothing there: {}{}",
                path.display(),
                unknown.len(),
                known.len(),
                listed.join("; "),
                if unknown.len() > 10 { "; …" } else { "" }
            );
        }
        service
            .evaluate(&caller, self.answering, |e| {
                let summary = self.retrieval(e, &set, on_query)?;
                self.context(e, &set)?;
                let answers = answers(e, &set, answers_file)?;
                Ok((summary, (answers, e.generator())))
            })
            .map_err(|e| anyhow!("{e}"))?
    }

    /// Retrieves every query of `set`, passing each result to `on_query`.
    fn retrieval(
        &self,
        e: &Evaluation<'_>,
        set: &EvalSet,
        on_query: &mut dyn FnMut(&QueryResult),
    ) -> Result<Summary> {
        let mode = self.answering.mode;
        Ok(evaluate(
            e.retriever(),
            self.rules.as_ref(),
            e.filter(),
            mode,
            set,
            on_query,
        )?)
    }

    /// With `--context`, asks every answerable case and prints what the contexts held.
    fn context(&self, e: &Evaluation<'_>, set: &EvalSet) -> Result<()> {
        let Some(context) = self.answering.context else {
            return Ok(());
        };
        let figures = context_figures(e.answerer(), e.filter(), set, &new_trace_id)?;
        let line = figures.to_json(context);
        if self.output == Output::Json {
            println!("{line}");
        } else {
            println!(
                "context {}: {} cases · span coverage {} · expected document in context {} · answered {} · {:.0} characters in {:.2} blocks on average",
                context.code(),
                figures.cases,
                line["span_coverage"],
                line["doc_coverage"],
                line["answered_rate"],
                figures.mean(figures.chars),
                figures.mean(figures.blocks)
            );
        }
        Ok(())
    }
}

/// The dense route `--embedder` names (by default the configured embeddings server when the
/// configuration embeds with one, none otherwise), with that name.
fn dense_choice<'e>(config: &Config, embedder: Option<&'e str>) -> Result<(&'e str, DenseChoice)> {
    let embedder = embedder.unwrap_or(match config.embedder {
        EmbedderKind::Openai => "openai",
        _ => "none",
    });
    let dense = match embedder {
        "none" => DenseChoice::None,
        "hashing" => DenseChoice::Hashing,
        "candle" => DenseChoice::Candle(config.model.clone()),
        "openai" => DenseChoice::OpenAi(openai_embedder_config(config)?),
        other => bail!("--embedder {other:?}: use none, hashing, candle or openai"),
    };
    Ok((embedder, dense))
}

/// Asks every case of `set` and grades the answers (by the evaluation's judge when one is
/// configured): statuses and citation validity. Each answer goes to `answers_file` as a JSON
/// line.
fn answers(
    e: &Evaluation<'_>,
    set: &EvalSet,
    answers_file: Option<&Path>,
) -> Result<AnswerSummary> {
    let mut out = json_lines(answers_file)?;
    let grader = e.judge().map(|judge| Grader {
        judge,
        chunks: e.chunks(),
    });
    let answers = evaluate_answers(
        e.answerer(),
        e.filter(),
        set,
        grader.as_ref(),
        &new_trace_id,
        &mut |r| write_line(&mut out, r),
    )?;
    if let Some(mut out) = out {
        out.flush()?;
    }
    Ok(answers)
}
