//! `zhiku eval`: retrieval quality on a BEIR directory (indexed in memory), or retrieval and
//! answer quality on a golden set over the knowledge base.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use zhiku_app::config::EmbedderKind;
use zhiku_app::wiring::corpus::{DenseChoice, build_default_corpus_index, corpus_scope};
use zhiku_app::wiring::embed_server::openai_embedder_config;
use zhiku_app::wiring::generator::generator_for;
use zhiku_app::wiring::rerank::reranker_for;
use zhiku_app::wiring::store::{Access, Purpose};
use zhiku_app::wiring::{self, source_for};
use zhiku_domain::chunker::chunk_document;
use zhiku_domain::ports::{DocumentChunks, NullTraceSink, SourceError};
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::usecases::{AnswerPolicy, AnswerStatus, Answerer, DocumentReader, RetrievalMode};
use zhiku_domain::{Chunk, ChunkingPolicy, DocId, Document, Filter, Revision};
use zhiku_eval::beir::{EvalSet, load_beir, load_golden, passage_document};
use zhiku_eval::runner::{AnswerResult, Grader, evaluate, evaluate_answers};
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
    (embedder, context): (Option<&str>, Option<ContextPolicy>),
) -> Result<Exit> {
    let mut out = match &per_query {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    // Follow-ups are retrieved as the offline rules make them standalone, whatever the
    // configured planner: retrieval figures must not depend on a model.
    let rules = wiring::planner::rules_planner();
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
            let embedder = embedder.unwrap_or(match config.embedder {
                EmbedderKind::Openai => "openai",
                _ => "none",
            });
            let dense = match embedder {
                "none" => DenseChoice::None,
                "hashing" => DenseChoice::Hashing,
                "candle" => DenseChoice::Candle(config.model.clone()),
                "openai" => DenseChoice::OpenAi(openai_embedder_config(&config)?),
                other => bail!("--embedder {other:?}: use none, hashing, candle or openai"),
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
            // The configured fusion, locale preference and reranker, as a store would use them.
            let reranker = reranker_for(&config);
            let mut retriever = index
                .retriever()
                .with_candidates(config.candidates)
                .with_fusion(config.fusion.clone())
                .with_locale_boost(config.locale_boost);
            if let Some(r) = &reranker {
                retriever = retriever.with_reranker(r.as_ref(), config.rerank_depth);
            }
            let summary = evaluate(
                &retriever,
                rules.as_ref(),
                &filter,
                mode,
                &set,
                &mut on_query,
            )?;
            if let Some(context) = context {
                // The answers' context under the policy, over the same corpus.
                let passages = CorpusChunks::new(&set, config.policy)?;
                let generator = generator_for(&config, None)?;
                let policy = AnswerPolicy {
                    mode,
                    k: config.k,
                    budget: config.context,
                    context,
                    max_attempts: config.ask_attempts,
                };
                let clock = MonotonicClock::default();
                let answerer = Answerer::new(
                    &retriever,
                    generator.as_ref(),
                    &NullTraceSink,
                    &clock,
                    policy,
                )
                .with_document_chunks(&passages);
                context_figures(&answerer, &filter, &set, context, json)?;
            }
            summary
        }
        (None, Some(path)) => {
            let set = load_golden(&path)?;
            let kb = ctx.kb()?;
            let mut store = ctx.open(Some(&kb), Access::Writing(Purpose::Write))?;
            let (origin, _) = origin_for(ctx, Some(kb.clone()), None)?;
            refresh(ctx, &mut store, origin)?;
            let documents = source_for(&store)?;
            let source = documents.source_store(store.source_paths());
            let filter = build_filter(&store, &[], &[], None)?;
            let clock = MonotonicClock::default();
            let retriever = store.retriever(source.as_ref()).with_clock(&clock);
            let summary = evaluate(
                &retriever,
                rules.as_ref(),
                &filter,
                mode,
                &set,
                &mut on_query,
            )?;
            // Grounded answers over the same cases: statuses and citation validity.
            let generator = generator_for(&store.config, store.dense_embedder())?;
            let mut policy = store.settings.answer_policy(mode, store.config.k);
            if let Some(context) = context {
                policy.context = context;
            }
            let sink = wiring::trace_log(&store);
            let reader = DocumentReader::new(
                documents.as_ref(),
                store.source_paths(),
                store.config.policy,
            );
            let planners = wiring::planner::planners_for(&store.config);
            // The judge grades; the answerer keeps the rules, so the grade is an independent
            // reading of what the rules let through.
            let judge = wiring::judge::judge_for(&store.config);
            let grader = judge.as_deref().map(|judge| Grader {
                judge,
                chunks: &reader,
            });
            let mut answerer = Answerer::new(&retriever, generator.as_ref(), &sink, &clock, policy)
                .with_document_chunks(&reader);
            if let Some(p) = &planners.primary {
                answerer = answerer.with_planner(p.as_ref());
            }
            if let Some(p) = &planners.fallback {
                answerer = answerer.with_fallback_planner(p.as_ref());
            }
            if context.is_some() {
                context_figures(&answerer, &filter, &set, policy.context, json)?;
            }
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
                grader.as_ref(),
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

/// A BEIR corpus's passages as documents, chunked with the index's policy.
struct CorpusChunks {
    docs: BTreeMap<DocId, Document>,
    policy: ChunkingPolicy,
}

impl CorpusChunks {
    fn new(set: &EvalSet, policy: ChunkingPolicy) -> Result<Self> {
        let scope = corpus_scope();
        let mut docs = BTreeMap::new();
        for p in &set.corpus {
            let d = passage_document(p, &scope)?;
            docs.insert(d.id().clone(), d);
        }
        Ok(Self { docs, policy })
    }
}

impl DocumentChunks for CorpusChunks {
    fn chunks(&self, doc: &DocId, revision: &Revision) -> Result<Option<Vec<Chunk>>, SourceError> {
        Ok(self
            .docs
            .get(doc)
            .filter(|d| d.revision() == revision)
            .map(|d| chunk_document(d, &self.policy)))
    }
}

/// Asks every answerable case and measures the context the policy sent: the share of cases
/// whose gold answer span lies wholly in the context (when the set has spans), the share whose
/// context holds an expected document, the share answered, and the context's mean size.
fn context_figures(
    answerer: &Answerer<'_>,
    filter: &Filter,
    set: &EvalSet,
    context: ContextPolicy,
    json: bool,
) -> Result<()> {
    let (mut cases, mut with_spans, mut spans_in, mut docs_in, mut answered) = (0, 0, 0, 0, 0);
    let (mut chars, mut blocks) = (0usize, 0usize);
    for case in &set.queries {
        if case.no_answer || case.text.trim().is_empty() || case.relevant.is_empty() {
            continue;
        }
        let frame = answerer.ask(&case.text, filter, &new_trace_id())?;
        cases += 1;
        answered += usize::from(frame.status == AnswerStatus::Answered);
        chars += frame
            .evidence
            .iter()
            .map(|e| e.end - e.start)
            .sum::<usize>();
        blocks += frame.evidence.len();
        let docs: HashSet<&str> = frame.evidence.iter().map(|e| e.doc_id.as_str()).collect();
        docs_in += usize::from(case.relevant.iter().any(|d| docs.contains(d.as_str())));
        if !case.spans.is_empty() {
            with_spans += 1;
            // Every character of a gold span lies in a block of its document.
            let covered = case.spans.iter().any(|g| {
                (g.start..g.end).all(|at| {
                    frame
                        .evidence
                        .iter()
                        .any(|e| e.doc_id.as_str() == g.doc_id && e.start <= at && at < e.end)
                })
            });
            spans_in += usize::from(covered);
        }
    }
    let share = |a: usize, b: usize| {
        if b == 0 {
            serde_json::Value::Null
        } else {
            ((a as f64 / b as f64 * 10_000.0).round() / 10_000.0).into()
        }
    };
    let mean = |a: usize| {
        if cases == 0 {
            0.0
        } else {
            a as f64 / cases as f64
        }
    };
    let figures = serde_json::json!({
        "context": context.code(),
        "cases": cases,
        "span_coverage": share(spans_in, with_spans),
        "doc_coverage": share(docs_in, cases),
        "answered_rate": share(answered, cases),
        "context_chars_mean": (mean(chars) * 10.0).round() / 10.0,
        "blocks_mean": (mean(blocks) * 100.0).round() / 100.0,
    });
    if json {
        println!("{figures}");
    } else {
        println!(
            "context {}: {cases} cases · span coverage {} · expected document in context {} · answered {} · {:.0} characters in {:.2} blocks on average",
            context.code(),
            figures["span_coverage"],
            figures["doc_coverage"],
            figures["answered_rate"],
            mean(chars),
            mean(blocks)
        );
    }
    Ok(())
}
