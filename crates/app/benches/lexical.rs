//! Lexical benchmark on CMRC 2018 dev, with the Python BM25 peers measured in the same run.
//!
//! ```text
//! cargo bench -p zhiku --bench lexical                  # zhiku + jieba/bm25s + jieba/rank_bm25
//! cargo bench -p zhiku --bench lexical -- --repeat 100  # ~85k documents, zhiku only
//! cargo bench -p zhiku --bench lexical -- --no-peers    # zhiku only
//! ```
//!
//! zhiku's figures: dictionary load (jieba) separately; build = chunking, analysing and
//! committing the tantivy index in RAM; query = analyse + search + top 10, one query at a time;
//! peak RSS of this process. The peers (installed by `scripts/python-peers.sh` into a cache venv)
//! report the same figures for their stacks. Ratios are zhiku / peer: below 1 is better.

mod common;

use common::{default_cmrc, peak_rss_mib, peer_python, percentile, workspace_root};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use zhiku_adapters_tantivy::{LexicalConfig, jieba};
use zhiku_app::wiring::corpus::{CorpusLexical, DenseChoice, build_corpus_index, corpus_scope};
use zhiku_domain::usecases::RetrievalMode;
use zhiku_domain::{ChunkingPolicy, Filter};
use zhiku_eval::beir::{EvalSet, Passage, load_beir};
use zhiku_eval::runner::evaluate;

#[derive(Debug, Default, Clone)]
struct Figures {
    name: String,
    docs: usize,
    dict_load_s: f64,
    build_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    peak_rss_mib: f64,
    quality: Option<serde_json::Value>,
}

/// The corpus repeated `times` over with distinct IDs; each copy loses one character at a
/// deterministic position, like the peer's `--repeat-corpus`.
fn repeated(corpus: &[Passage], times: usize) -> Vec<Passage> {
    let mut out = corpus.to_vec();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for copy in 1..times {
        for p in corpus {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let chars: Vec<char> = p.text.chars().collect();
            let cut = (state % chars.len().max(1) as u64) as usize;
            let text: String = chars
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != cut)
                .map(|(_, c)| c)
                .collect();
            out.push(Passage {
                id: format!("{}__r{copy}", p.id),
                title: p.title.clone(),
                text,
            });
        }
    }
    out
}

fn measure_zhiku(set: &EvalSet, repeat: usize) -> Figures {
    let started = Instant::now();
    let _ = jieba();
    let dict_load_s = started.elapsed().as_secs_f64();
    let corpus = repeated(&set.corpus, repeat);
    let index = build_corpus_index(
        &corpus,
        ChunkingPolicy::default(),
        CorpusLexical::Tantivy(LexicalConfig::default()),
        DenseChoice::None,
    )
    .expect("index builds");
    let filter = Filter::for_scope(corpus_scope());
    let queries: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
    // One untimed warm-up query, as the peer does.
    let _ = index.lexical.search(queries[0], 10, &filter);
    let mut times = Vec::with_capacity(queries.len());
    for q in &queries {
        let t = Instant::now();
        let hits = index.lexical.search(q, 10, &filter).expect("search");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        std::hint::black_box(hits);
    }
    times.sort_by(f64::total_cmp);
    let quality = (repeat == 1).then(|| {
        let summary = evaluate(
            &index.retriever(),
            &zhiku_adapters_offline::RulesPlanner,
            &filter,
            RetrievalMode::Lexical,
            set,
            &mut |_| {},
        )
        .expect("eval");
        summary.to_json()
    });
    Figures {
        name: "zhiku (tantivy + jieba)".into(),
        docs: corpus.len(),
        dict_load_s,
        build_s: index.build_seconds,
        p50_ms: percentile(&times, 50.0),
        p99_ms: percentile(&times, 99.0),
        peak_rss_mib: peak_rss_mib(),
        quality,
    }
}

fn measure_peer(python: &str, dir: &Path, stack: &str, repeat: usize) -> Option<Figures> {
    let out = Command::new(python)
        .arg(workspace_root().join("bench/peers/bm25_peer.py"))
        .args([
            "--beir",
            &dir.to_string_lossy(),
            "--stack",
            stack,
            "--repeat-corpus",
            &repeat.to_string(),
            "--json",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "peer {stack} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().last()?).ok()?;
    let f = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    let quality = serde_json::json!({
        "hit@1": v["hit@1"], "hit@5": v["hit@5"], "hit@10": v["hit@10"], "mrr@10": v["mrr@10"], "ndcg@10": v["ndcg@10"],
    });
    Some(Figures {
        name: format!("peer {stack}"),
        docs: f("docs") as usize,
        dict_load_s: f("dict_load_s"),
        build_s: f("build_s"),
        p50_ms: f("query_p50_ms"),
        p99_ms: f("query_p99_ms"),
        peak_rss_mib: f("peak_rss_mib"),
        quality: (repeat == 1).then_some(quality),
    })
}

fn print_row(f: &Figures) {
    let q = |k: &str| {
        f.quality
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .map_or_else(|| "-".to_string(), |x| format!("{x:.4}"))
    };
    println!(
        "| {:<28} | {:>6} | {:>6} | {:>6} | {:>6} | {:>7} | {:>6.2} | {:>7.2} | {:>7.3} | {:>7.3} | {:>8.0} |",
        f.name,
        f.docs,
        q("hit@1"),
        q("hit@5"),
        q("mrr@10"),
        q("ndcg@10"),
        f.dict_load_s,
        f.build_s,
        f.p50_ms,
        f.p99_ms,
        f.peak_rss_mib
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeat = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize);
    let peers = !args.iter().any(|a| a == "--no-peers")
        && (repeat == 1 || args.iter().any(|a| a == "--peers"));
    let dir = std::env::var_os("ZHIKU_CMRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(default_cmrc);
    let set = match load_beir(&dir) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("SKIPPED lexical benchmark: {e:#} (set ZHIKU_CMRC_DIR to a BEIR directory)");
            return;
        }
    };
    println!(
        "lexical benchmark: {} ({} passages × {repeat}, {} queries)",
        dir.display(),
        set.corpus.len(),
        set.queries.len()
    );
    let zhiku = measure_zhiku(&set, repeat);
    let mut rows = vec![zhiku.clone()];
    if peers && let Some(python) = peer_python("scripts/python-peers.sh") {
        for stack in ["jieba_bm25s", "jieba_rank_bm25"] {
            if let Some(f) = measure_peer(&python, &dir, stack, repeat) {
                rows.push(f);
            }
        }
    }
    println!();
    println!(
        "| stack                        |   docs |  hit@1 |  hit@5 | MRR@10 | nDCG@10 | dict s | build s | p50 ms  | p99 ms  | RSS MiB  |"
    );
    println!(
        "|------------------------------|--------|--------|--------|--------|---------|--------|---------|---------|---------|----------|"
    );
    for r in &rows {
        print_row(r);
    }
    let peer = |stack: &str| rows.iter().find(|r| r.name.ends_with(stack));
    if let Some(bm25s) = peer("jieba_bm25s") {
        println!();
        println!(
            "ratios zhiku / jieba+bm25s (goal ≤ 0.5): query p50 {:.2}×, p99 {:.2}×, build {:.2}×",
            zhiku.p50_ms / bm25s.p50_ms,
            zhiku.p99_ms / bm25s.p99_ms,
            zhiku.build_s / bm25s.build_s
        );
    }
    if let Some(rank) = peer("jieba_rank_bm25") {
        println!(
            "ratio zhiku / jieba+rank_bm25 peak RSS (goal ≤ 0.5): {:.2}×",
            zhiku.peak_rss_mib / rank.peak_rss_mib
        );
    }
}
