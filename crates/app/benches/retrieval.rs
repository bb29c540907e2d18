//! Retrieval quality of every fusion option, on CMRC 2018 dev, with a held-out half.
//!
//! ```text
//! ZHIKU_MODEL=~/.cache/zhiku/models/all-MiniLM-L6-v2 cargo bench -p zhiku --bench retrieval
//! cargo bench -p zhiku --bench retrieval -- --embedder openai       # ZHIKU_EMBED_URL, …
//! cargo bench -p zhiku --bench retrieval -- --queries evals/cmrc-paraphrased
//! cargo bench -p zhiku --bench retrieval -- --cache /tmp/routes-minilm.json   # reuse the routes
//! cargo bench -p zhiku --bench retrieval -- --cache … --rerankers rules,http,llm --rerank-sample 100
//! cargo bench -p zhiku --bench retrieval -- --cache … --rerankers rules,llm --rerank-focus misses
//! ```
//!
//! The corpus is indexed once (tantivy + the chosen embedder, in memory) and each question is
//! searched once per route (top 50 with the routes' own scores). Every fusion option is then
//! applied to those lists with the domain's own [`fuse`] — the function the retriever calls —
//! so the options are compared on identical candidates. Questions are split by position:
//! even positions tune (the option with the best nDCG@10 there is picked), odd positions are
//! held out and give the figures to report. The `--cache` file keeps the route lists, so a
//! sweep can be rerun without embedding again.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use zhiku_app::config::Config;
use zhiku_app::wiring::corpus::{DenseChoice, build_default_corpus_index, corpus_scope};
use zhiku_app::wiring::embed_server::openai_embedder_config;
use zhiku_domain::chunker::chunk_document;
use zhiku_domain::ports::RerankCandidate;
use zhiku_domain::rules::fusion::{
    FusionConfig, FusionMethod, Normalisation, Route, RouteList, fuse,
};
use zhiku_domain::rules::grading::{ChunkLocation, GoldSpan, MetricTotals};
use zhiku_domain::usecases::{RetrievalMode, RetrievalRequest};
use zhiku_domain::{ChunkId, Filter};
use zhiku_eval::beir::{EvalQuery, load_beir, load_beir_queries, passage_document};

const PER_ROUTE: usize = 50;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// One question's route lists.
#[derive(Serialize, Deserialize)]
struct Routes {
    id: String,
    dense: Vec<(ChunkId, f32)>,
    lexical: Vec<(ChunkId, f32)>,
    dense_ms: f64,
    lexical_ms: f64,
}

/// What is searched once and reused by every option.
#[derive(Serialize, Deserialize)]
struct Searched {
    embedder: String,
    queries_from: String,
    /// chunk → (document, start, end)
    chunks: HashMap<ChunkId, (String, usize, usize)>,
    routes: Vec<Routes>,
}

fn search_all(beir: &std::path::Path, queries: &[EvalQuery], embedder: &str) -> Result<Searched> {
    let set = load_beir(beir).with_context(|| format!("loading {}", beir.display()))?;
    let config =
        Config::resolve(None, None, &|k| std::env::var(k).ok()).context("configuration")?;
    let dense = match embedder {
        "candle" => DenseChoice::Candle(config.model.clone()),
        "hashing" => DenseChoice::Hashing,
        "openai" => DenseChoice::OpenAi(openai_embedder_config(&config)?),
        other => bail!("--embedder {other}: candle, openai or hashing"),
    };
    let started = Instant::now();
    let index = build_default_corpus_index(&set.corpus, config.policy, dense)?;
    eprintln!(
        "indexed {} passages into {} chunks in {:.1} s",
        set.corpus.len(),
        index.catalog.chunk_count(),
        started.elapsed().as_secs_f64()
    );
    let retriever = index.retriever();
    let filter = Filter::for_scope(corpus_scope());
    let mut chunks = HashMap::new();
    let mut routes = Vec::new();
    for (n, q) in queries.iter().enumerate() {
        let mut lists: BTreeMap<Route, (Vec<(ChunkId, f32)>, f64)> = BTreeMap::new();
        for (route, mode) in [
            (Route::Dense, RetrievalMode::Dense),
            (Route::Lexical, RetrievalMode::Lexical),
        ] {
            let t = Instant::now();
            let r = retriever.retrieve(&RetrievalRequest {
                query: &q.text,
                filter: &filter,
                mode,
                k: PER_ROUTE,
                budget: None,
            });
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let list = match r {
                Ok(r) => {
                    for e in &r.evidence {
                        chunks.entry(e.chunk_id.clone()).or_insert_with(|| {
                            (e.chunk.doc_id().to_string(), e.chunk.start(), e.chunk.end())
                        });
                    }
                    r.candidates.get(&route).cloned().unwrap_or_default()
                }
                Err(_) => Vec::new(),
            };
            lists.insert(route, (list, ms));
        }
        let (dense, dense_ms) = lists.remove(&Route::Dense).unwrap_or_default();
        let (lexical, lexical_ms) = lists.remove(&Route::Lexical).unwrap_or_default();
        routes.push(Routes {
            id: q.id.clone(),
            dense,
            lexical,
            dense_ms,
            lexical_ms,
        });
        if (n + 1) % 500 == 0 {
            eprintln!("searched {} of {}", n + 1, queries.len());
        }
    }
    Ok(Searched {
        embedder: embedder.to_string(),
        queries_from: String::new(),
        chunks,
        routes,
    })
}

/// Metrics of one ranking method over some questions.
#[derive(Default, Clone)]
struct Scores {
    totals: MetricTotals,
}

impl Scores {
    fn add(
        &mut self,
        ranked: &[ChunkId],
        chunks: &HashMap<ChunkId, (String, usize, usize)>,
        q: &EvalQuery,
    ) {
        let mut seen = HashSet::new();
        let locations: Vec<ChunkLocation> = ranked
            .iter()
            .filter_map(|id| chunks.get(id))
            .map(|(doc, start, end)| ChunkLocation {
                doc_id: doc.clone(),
                start: *start,
                end: *end,
            })
            .collect();
        let docs: Vec<String> = locations
            .iter()
            .map(|l| l.doc_id.clone())
            .filter(|d| seen.insert(d.clone()))
            .collect();
        self.totals.add(&docs, &q.relevant);
        if !q.spans.is_empty() {
            let spans: Vec<GoldSpan> = q.spans.clone();
            self.totals.add_spans(&locations, &spans);
        }
    }

    fn row(&self) -> [f64; 5] {
        let t = &self.totals;
        [
            t.mean(t.hit1),
            t.mean(t.hit5),
            t.mean(t.mrr10),
            t.mean(t.ndcg10),
            t.span_hit5_mean().unwrap_or(f64::NAN),
        ]
    }
}

/// The options measured: single routes, then every fusion variant.
fn options() -> Vec<(String, Option<FusionConfig>, Option<Route>)> {
    let mut out: Vec<(String, Option<FusionConfig>, Option<Route>)> = vec![
        ("lexical only".into(), None, Some(Route::Lexical)),
        ("dense only".into(), None, Some(Route::Dense)),
    ];
    let weights = [1.0, 0.5, 0.3, 0.2, 0.1];
    for k in [60.0, 20.0, 5.0] {
        for w in weights {
            for confidence in [false, true] {
                let config = FusionConfig {
                    k,
                    confidence,
                    ..FusionConfig::rrf()
                }
                .with_weight(Route::Dense, w);
                out.push((
                    format!(
                        "rrf k={k} dense w={w}{}",
                        if confidence { " +conf" } else { "" }
                    ),
                    Some(config),
                    None,
                ));
            }
        }
    }
    for normalisation in [Normalisation::MinMax, Normalisation::ZScore] {
        for w in [1.0, 0.7, 0.5, 0.3, 0.2, 0.1] {
            for confidence in [false, true] {
                let config = FusionConfig {
                    method: FusionMethod::Convex,
                    normalisation,
                    confidence,
                    ..FusionConfig::default()
                }
                .with_weight(Route::Dense, w);
                let name = config.method_name();
                out.push((format!("{name} dense w={w}"), Some(config), None));
            }
        }
    }
    // Floors on top of the two families' best-known shapes.
    let mut floors = Vec::new();
    for (name, config, _) in &out {
        if let Some(c) = config
            && (name == "convex_min_max dense w=0.5" || name == "rrf k=60 dense w=1")
        {
            for floor in [0.95, 0.9, 0.8] {
                floors.push((
                    format!("{name} floor={floor}"),
                    Some(FusionConfig {
                        dense_floor: Some(floor),
                        ..c.clone()
                    }),
                    None,
                ));
            }
        }
    }
    out.extend(floors);
    out
}

fn main() -> Result<()> {
    let beir = arg("--beir")
        .map(|d| common::workspace_root().join(d))
        .unwrap_or_else(common::default_cmrc);
    // cargo runs a bench in its crate's folder: a relative path is the workspace root's.
    let queries_dir = arg("--queries").map(|d| common::workspace_root().join(d));
    let embedder = arg("--embedder").unwrap_or_else(|| "candle".into());
    let queries: Vec<EvalQuery> = match &queries_dir {
        Some(dir) => load_beir_queries(dir)?,
        None => load_beir(&beir)?.queries,
    };
    let cache = arg("--cache").map(PathBuf::from);
    let searched: Searched = match cache.as_ref().filter(|p| p.exists()) {
        Some(p) => {
            eprintln!("route lists from {}", p.display());
            serde_json::from_slice(&std::fs::read(p)?)?
        }
        None => {
            let mut s = search_all(&beir, &queries, &embedder)?;
            s.queries_from = queries_dir
                .as_ref()
                .map_or_else(|| beir.display().to_string(), |d| d.display().to_string());
            if let Some(p) = &cache {
                std::fs::write(p, serde_json::to_vec(&s)?)?;
            }
            s
        }
    };
    let by_id: HashMap<&str, &EvalQuery> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
    println!(
        "embedder {}, questions {} from {}; tune = even positions, held out = odd positions",
        searched.embedder,
        searched.routes.len(),
        searched.queries_from
    );
    let mut rows: Vec<(String, Scores, Scores, f64)> = Vec::new();
    for (name, config, single) in options() {
        let (mut tune, mut held) = (Scores::default(), Scores::default());
        let started = Instant::now();
        for (i, r) in searched.routes.iter().enumerate() {
            let Some(q) = by_id.get(r.id.as_str()) else {
                continue;
            };
            let ranked: Vec<ChunkId> = match (&config, single) {
                (_, Some(Route::Dense)) => r.dense.iter().map(|(id, _)| id.clone()).collect(),
                (_, Some(Route::Lexical)) => r.lexical.iter().map(|(id, _)| id.clone()).collect(),
                (Some(config), None) => {
                    let lists: Vec<RouteList> = vec![
                        (Route::Dense, r.dense.clone()),
                        (Route::Lexical, r.lexical.clone()),
                    ];
                    fuse(&lists, config)
                        .into_iter()
                        .map(|f| f.chunk_id)
                        .collect()
                }
                (None, None) => unreachable!(),
            };
            if i % 2 == 0 {
                tune.add(&ranked, &searched.chunks, q);
            } else {
                held.add(&ranked, &searched.chunks, q);
            }
        }
        let us_per_query =
            started.elapsed().as_secs_f64() * 1e6 / searched.routes.len().max(1) as f64;
        rows.push((name, tune, held, us_per_query));
    }
    println!(
        "\n| option | tune hit@1 | tune nDCG@10 | held-out hit@1 | hit@5 | MRR@10 | nDCG@10 | span hit@5 | fusion µs/query |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, tune, held, us) in &rows {
        let t = tune.row();
        let h = held.row();
        println!(
            "| {name} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {us:.1} |",
            t[0], t[3], h[0], h[1], h[2], h[3], h[4]
        );
    }
    let best = rows
        .iter()
        .skip(2)
        .max_by(|a, b| {
            let (x, y) = (a.1.row(), b.1.row());
            x[3].total_cmp(&y[3]).then(x[0].total_cmp(&y[0]))
        })
        .expect("options");
    let h = best.2.row();
    let (lex, dense) = (rows[0].2.row(), rows[1].2.row());
    println!(
        "\nbest on the tuning half: {} — held out hit@1 {:.4} nDCG@10 {:.4} (lexical {:.4} / {:.4}, dense {:.4} / {:.4})",
        best.0, h[0], h[3], lex[0], lex[3], dense[0], dense[3]
    );
    rerankers(&beir, &searched, &by_id)?;
    let ms = |f: fn(&Routes) -> f64| {
        let mut v: Vec<f64> = searched.routes.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (common::percentile(&v, 50.0), common::percentile(&v, 99.0))
    };
    let (d50, d99) = ms(|r| r.dense_ms);
    let (l50, l99) = ms(|r| r.lexical_ms);
    println!(
        "route latency (ms, p50/p99): dense {d50:.2}/{d99:.2} (query embedding included), lexical {l50:.2}/{l99:.2}"
    );
    Ok(())
}

/// Each reranker over the default fusion's top 20, on the held-out half: quality and the time
/// it adds per question. `--rerankers rules,cross-encoder,http,llm` picks them (default
/// `rules`), each built by the binary's own wiring from the environment's configuration
/// (`ZHIKU_RERANK_MODEL`, `ZHIKU_RERANK_URL`, `ZHIKU_LLM_URL`, …). A model-backed reranker runs
/// on `--rerank-sample N` evenly spaced held-out questions (default all); each row also gives
/// the fused figures on its own questions, so a sample is compared with itself;
/// `--rerank-focus misses` runs each on the questions the fusion ranks wrong at 1 instead.
fn rerankers(
    beir: &std::path::Path,
    searched: &Searched,
    by_id: &HashMap<&str, &EvalQuery>,
) -> Result<()> {
    const DEPTH: usize = 20;
    let set = load_beir(beir)?;
    let config = Config::resolve(None, None, &|k| std::env::var(k).ok())?;
    let mut chunks: HashMap<ChunkId, zhiku_domain::Chunk> = HashMap::new();
    for p in &set.corpus {
        let doc = passage_document(p, &corpus_scope())?;
        for c in chunk_document(&doc, &config.policy) {
            chunks.insert(c.chunk_id().clone(), c);
        }
    }
    let fusion = config.fusion.clone();
    // The held-out questions with their fused top lists.
    let held: Vec<(&EvalQuery, Vec<(ChunkId, f64)>)> = searched
        .routes
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .filter_map(|(_, r)| {
            let q = by_id.get(r.id.as_str())?;
            let lists: Vec<RouteList> = vec![
                (Route::Dense, r.dense.clone()),
                (Route::Lexical, r.lexical.clone()),
            ];
            let ranked = fuse(&lists, &fusion)
                .into_iter()
                .map(|f| (f.chunk_id, f.score))
                .collect();
            Some((*q, ranked))
        })
        .collect();
    let sample: usize = arg("--rerank-sample")
        .map(|n| n.parse())
        .transpose()
        .context("--rerank-sample takes a number")?
        .unwrap_or(0);
    let kinds = arg("--rerankers").unwrap_or_else(|| "rules".into());
    // `--rerank-focus misses`: only the questions whose fused first hit is wrong — where a
    // reranker can gain; a sample shows what it costs where the fusion was right.
    let focus = arg("--rerank-focus");
    if let Some(other) = focus.as_deref().filter(|f| *f != "misses") {
        bail!("--rerank-focus takes `misses`, not {other:?}");
    }
    println!(
        "\n| reranker over {} top {DEPTH} (held out) | questions | hit@1 | hit@5 | MRR@10 | nDCG@10 | span hit@5 | fused hit@1 / nDCG@10 on them | added ms/query p50 | p99 | failed |",
        fusion.method_name()
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut plain = Scores::default();
    for (q, ranked) in &held {
        let ids: Vec<ChunkId> = ranked.iter().map(|(id, _)| id.clone()).collect();
        plain.add(&ids, &searched.chunks, q);
    }
    let h = plain.row();
    println!(
        "| fused (no reranker) | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | — | 0 | 0 | — |",
        held.len(),
        h[0],
        h[1],
        h[2],
        h[3],
        h[4]
    );
    for kind in kinds.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let mut config = config.clone();
        config.reranker = serde_json::from_value(serde_json::Value::String(kind.into()))
            .with_context(|| format!("--rerankers: unknown reranker {kind:?}"))?;
        let Some(reranker) = zhiku_app::wiring::rerank::reranker_for(&config) else {
            continue;
        };
        // The rule reranker costs nothing: it always runs on every held-out question.
        let step = match (kind, sample) {
            ("rules", _) | (_, 0) => 1,
            (_, n) => held.len().div_ceil(n).max(1),
        };
        let questions: Vec<_> = match focus.as_deref() {
            Some(_) => held
                .iter()
                .filter(|(q, ranked)| {
                    let first = ranked.first().and_then(|(id, _)| searched.chunks.get(id));
                    !first.is_some_and(|(doc, _, _)| q.relevant.contains(doc))
                })
                .collect(),
            None => held.iter().step_by(step).collect(),
        };
        let present = |ranked: &[(ChunkId, f64)]| -> Vec<RerankCandidate<'_>> {
            ranked[..DEPTH.min(ranked.len())]
                .iter()
                .enumerate()
                .filter_map(|(n, (id, score))| {
                    chunks.get(id).map(|chunk| RerankCandidate {
                        chunk,
                        fused_rank: n + 1,
                        fused_score: *score,
                    })
                })
                .collect()
        };
        // One untimed call first: a model-backed reranker loads or connects on its first use.
        if let Some((q, ranked)) = questions.first()
            && let Err(e) = reranker.rerank(&q.text, &present(ranked))
        {
            println!("| {kind} | — | {e} |");
            continue;
        }
        let (mut reranked, mut fused) = (Scores::default(), Scores::default());
        let mut added = Vec::new();
        let mut failed = 0usize;
        for (n, (q, ranked)) in questions.iter().enumerate() {
            let candidates = present(ranked);
            let t = Instant::now();
            let result = reranker.rerank(&q.text, &candidates);
            added.push(t.elapsed().as_secs_f64() * 1e3);
            let mut ids: Vec<ChunkId> = ranked.iter().map(|(id, _)| id.clone()).collect();
            fused.add(&ids, &searched.chunks, q);
            match result {
                Ok(scores) => {
                    let mut order: Vec<usize> = (0..candidates.len()).collect();
                    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
                    let head: Vec<ChunkId> = order
                        .into_iter()
                        .map(|i| candidates[i].chunk.chunk_id().clone())
                        .collect();
                    ids.splice(..candidates.len(), head);
                }
                // As the retriever does: the fused order stays, and the failure is counted.
                Err(e) => {
                    failed += 1;
                    eprintln!("{kind}: question {}: {e}", q.id);
                }
            }
            reranked.add(&ids, &searched.chunks, q);
            if questions.len() >= 20 && (n + 1) % (questions.len() / 10) == 0 {
                eprintln!("{kind}: {}/{} questions", n + 1, questions.len());
            }
        }
        added.sort_by(f64::total_cmp);
        let (h, f) = (reranked.row(), fused.row());
        println!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} / {:.4} | {:.1} | {:.1} | {failed} |",
            reranker.name(),
            questions.len(),
            h[0],
            h[1],
            h[2],
            h[3],
            h[4],
            f[0],
            f[3],
            common::percentile(&added, 50.0),
            common::percentile(&added, 99.0)
        );
    }
    Ok(())
}
