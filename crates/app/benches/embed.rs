//! Embedding throughput of the candle embedder, with the Python engines measured in the same run.
//!
//! ```text
//! cargo bench -p zhiku --bench embed                                # everything below
//! cargo bench -p zhiku --bench embed -- --passages 128 --batch-sizes 32 --no-peers
//! cargo bench -p zhiku --bench embed -- --index                     # + `zhiku index --beir` time
//! cargo bench -p zhiku --features mimalloc --bench embed -- --no-peers # with mimalloc
//! ```
//!
//! Texts: the first `--passages` (512) CMRC 2018 dev passages (`ZHIKU_CMRC_DIR`, default
//! `../shared/datasets/cmrc2018-dev`) and as many English passages: paragraphs of the Python
//! language reference shipped with CPython (`pydoc_data.topics`), packed into passages of at most
//! 900 characters by `bench/peers/embed_peer.py --write-english`. Model: `ZHIKU_MODEL`, else
//! `ZHIKU_TEST_MODEL_DIR`, else the test model of `scripts/fetch-test-model.sh`
//! (all-MiniLM-L6-v2), truncated at its `max_seq_length` (256).
//!
//! For each corpus and batch size (1, 8, 32, 64, or `--batch-sizes a,b,…`): passages/s and
//! tokens/s of zhiku's `CandleEmbedder::embed_documents`, then the same texts through
//! sentence-transformers (PyTorch CPU) and onnxruntime via `bench/peers/embed_peer.py` (venv from
//! `scripts/python-embed-peers.sh`) with as many threads as zhiku's thread pool (the machine's
//! cores, or `RAYON_NUM_THREADS`), back to back so that the engines of one comparison share the
//! background load. One untimed warm-up batch for every engine. Ratios are zhiku /
//! peer (above 1 is faster), per batch size and best against best.
//!
//! To read each figure against the hardware: the f32 GEMM rate of this machine, measured in the
//! same run with candle's matmul (the kernels the embedder uses) on 2048³, and the model's FLOPs
//! per token counted from its config over the actual token counts (QKV, output and feed-forward
//! projections `2·(4H² + 2·H·I)` per token and layer, attention `4·L·H` per token of an
//! `L`-token text); fraction of peak = tokens/s × FLOPs/token ÷ GEMM rate.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use common::{default_cmrc, peak_rss_mib, peer_python, workspace_root};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};
use zhiku_domain::ports::Embedder;
use zhiku_eval::beir::load_beir;

fn cache_dir() -> PathBuf {
    std::env::var_os("ZHIKU_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/zhiku")
        })
}

fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

struct Args {
    passages: usize,
    batch_sizes: Vec<usize>,
    peers: bool,
    index: bool,
    corpora: Vec<String>,
}

fn parse_args() -> Args {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let list = |v: String| -> Vec<String> { v.split(',').map(str::to_string).collect() };
    Args {
        passages: value("--passages")
            .and_then(|v| v.parse().ok())
            .unwrap_or(512),
        batch_sizes: value("--batch-sizes")
            .map(|v| list(v).iter().filter_map(|s| s.parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 8, 32, 64]),
        peers: !args.iter().any(|a| a == "--no-peers"),
        index: args.iter().any(|a| a == "--index"),
        corpora: value("--corpora")
            .map(list)
            .unwrap_or_else(|| vec!["cmrc".into(), "english".into()]),
    }
}

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("ZHIKU_MODEL")
        .or_else(|| std::env::var_os("ZHIKU_TEST_MODEL_DIR"))
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("models/all-MiniLM-L6-v2"));
    dir.join("config.json").is_file().then_some(dir)
}

/// A python for writing the English passages: the peers' venv, else `python3`.
fn english_texts(python: Option<&str>, n: usize, tmp: &Path) -> Option<Vec<String>> {
    let file = tmp.join("english.jsonl");
    let status = Command::new(python.unwrap_or("python3"))
        .arg(workspace_root().join("bench/peers/embed_peer.py"))
        .args(["--write-english", &file.to_string_lossy()])
        .args(["--limit", &n.to_string()])
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    text.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v["text"].as_str().map(str::to_string))
        })
        .collect()
}

fn write_jsonl(texts: &[String], path: &Path) {
    let body: String = texts
        .iter()
        .map(|t| serde_json::json!({ "text": t }).to_string() + "\n")
        .collect();
    std::fs::write(path, body).expect("write texts");
}

/// What the model costs per token (see the module docs).
struct Flops {
    per_token: f64,
    tokens: usize,
}

fn model_flops(model: &Path, lengths: &[usize]) -> Flops {
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("config.json")).expect("config.json"))
            .expect("config.json");
    let get = |k: &str| config[k].as_f64().unwrap_or(f64::NAN);
    let (h, i, layers) = (
        get("hidden_size"),
        get("intermediate_size"),
        get("num_hidden_layers"),
    );
    let tokens: usize = lengths.iter().sum();
    let total: f64 = lengths
        .iter()
        .map(|&l| {
            let l = l as f64;
            layers * (l * 2.0 * (4.0 * h * h + 2.0 * h * i) + 4.0 * l * l * h)
        })
        .sum();
    Flops {
        per_token: total / tokens.max(1) as f64,
        tokens,
    }
}

/// GFLOP/s of a 2048 × 2048 × 2048 f32 matmul with candle (best of five).
fn gemm_gflops() -> f64 {
    use candle_core::{Device, Tensor};
    let n = 2048;
    let a = Tensor::randn(0f32, 1.0, (n, n), &Device::Cpu).expect("randn");
    let b = Tensor::randn(0f32, 1.0, (n, n), &Device::Cpu).expect("randn");
    let _ = a.matmul(&b).expect("matmul");
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let c = a.matmul(&b).expect("matmul");
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(c);
    }
    2.0 * (n as f64).powi(3) / best / 1e9
}

#[derive(Debug, Clone)]
struct Row {
    corpus: String,
    engine: String,
    batch: usize,
    passages_s: f64,
    tokens_s: f64,
    rss_mib: f64,
}

fn measure_zhiku(model: &Path, corpus: &str, texts: &[String], batch: usize) -> Row {
    let embedder = CandleEmbedder::load(
        &ModelSource::Dir(model.to_path_buf()),
        &EmbedderOptions {
            batch_size: batch,
            ..EmbedderOptions::default()
        },
    )
    .expect("model loads");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = refs
        .iter()
        .map(|t| embedder.token_count(t).expect("tokenize"))
        .sum();
    embedder
        .embed_documents(&refs[..batch.min(refs.len())])
        .expect("warm-up");
    let t = Instant::now();
    let out = embedder.embed_documents(&refs).expect("embed");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(out.len(), refs.len());
    Row {
        corpus: corpus.into(),
        engine: "zhiku candle".into(),
        batch,
        passages_s: refs.len() as f64 / secs,
        tokens_s: tokens as f64 / secs,
        rss_mib: peak_rss_mib(),
    }
}

fn measure_peer(
    python: &str,
    engine: &str,
    model: &Path,
    corpus: &str,
    texts: &Path,
    batch: usize,
    max_seq: usize,
) -> Option<Row> {
    let out = Command::new(python)
        .arg(workspace_root().join("bench/peers/embed_peer.py"))
        .args(["--model-dir", &model.to_string_lossy()])
        .args(["--texts", &texts.to_string_lossy()])
        .args(["--engine", engine])
        .args(["--batch-size", &batch.to_string()])
        .args(["--threads", &threads().to_string()])
        .args(["--max-seq-length", &max_seq.to_string()])
        .arg("--json")
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "peer {engine} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().last()?).ok()?;
    if let Some(why) = v.get("skipped") {
        eprintln!("SKIPPED peer {engine}: {why}");
        return None;
    }
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Some(Row {
        corpus: corpus.into(),
        engine: engine.into(),
        batch,
        passages_s: f("passages_per_s"),
        tokens_s: f("tokens_per_s"),
        rss_mib: f("peak_rss_mib"),
    })
}

/// `zhiku index --beir DIR` into a fresh store with the candle embedder: seconds and its JSON.
fn measure_index(model: &Path, beir: &Path, tmp: &Path) -> Option<(f64, String)> {
    let store = tmp.join("index-store");
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_zhiku"))
        .args(["index", "--beir", &beir.to_string_lossy(), "--json", "-q"])
        .args(["--store", &store.to_string_lossy()])
        .env("ZHIKU_EMBEDDER", "candle")
        .env("ZHIKU_MODEL", model)
        .output()
        .ok()?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        eprintln!(
            "zhiku index failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some((
        secs,
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

fn main() {
    let args = parse_args();
    let Some(model) = model_dir() else {
        eprintln!(
            "SKIPPED embedding benchmark: no model (set ZHIKU_MODEL or ZHIKU_TEST_MODEL_DIR, or run scripts/fetch-test-model.sh)"
        );
        return;
    };
    let cmrc_dir = std::env::var_os("ZHIKU_CMRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(default_cmrc);
    let tmp = tempfile::tempdir().expect("temp dir");
    let python = if args.peers {
        peer_python("scripts/python-embed-peers.sh")
    } else {
        None
    };
    if args.peers && python.is_none() {
        eprintln!("SKIPPED peers: scripts/python-embed-peers.sh failed");
    }

    let probe = CandleEmbedder::load(
        &ModelSource::Dir(model.clone()),
        &EmbedderOptions::default(),
    )
    .expect("model loads");
    let max_seq = probe.max_seq_length();

    let mut corpora: Vec<(String, Vec<String>)> = Vec::new();
    for name in &args.corpora {
        match name.as_str() {
            "cmrc" => match load_beir(&cmrc_dir) {
                Ok(set) => corpora.push((
                    "CMRC".into(),
                    set.corpus
                        .iter()
                        .take(args.passages)
                        .map(|p| p.text.clone())
                        .collect(),
                )),
                Err(e) => eprintln!("SKIPPED CMRC: {e:#} (set ZHIKU_CMRC_DIR)"),
            },
            "english" => match english_texts(python.as_deref(), args.passages, tmp.path()) {
                Some(texts) => corpora.push(("English".into(), texts)),
                None => eprintln!("SKIPPED English: no python3 to write the passages"),
            },
            other => eprintln!("unknown corpus {other:?} (cmrc, english)"),
        }
    }

    println!(
        "embedding benchmark: model {}, max {max_seq} tokens, {} threads, allocator {}, load average {}",
        model.display(),
        threads(),
        if cfg!(feature = "mimalloc") {
            "mimalloc"
        } else {
            "system"
        },
        load_avg()
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut flops: Vec<(String, Flops)> = Vec::new();
    for (name, texts) in &corpora {
        let lengths: Vec<usize> = texts
            .iter()
            .map(|t| probe.token_count(t).expect("tokenize"))
            .collect();
        let f = model_flops(&model, &lengths);
        println!(
            "{name}: {} passages, {} tokens (mean {:.0}, {} truncated at {max_seq}), {:.1} MFLOP/token",
            texts.len(),
            f.tokens,
            f.tokens as f64 / texts.len().max(1) as f64,
            lengths.iter().filter(|&&l| l >= max_seq).count(),
            f.per_token / 1e6
        );
        flops.push((name.clone(), f));
    }
    drop(probe);

    // zhiku and the peers back to back for each (corpus, batch size), so that all engines of a
    // comparison see the same background load.
    let mut rss_zhiku = 0f64;
    for (name, texts) in &corpora {
        let file = tmp.path().join(format!("{name}.jsonl"));
        write_jsonl(texts, &file);
        for &batch in &args.batch_sizes {
            let row = measure_zhiku(&model, name, texts, batch);
            rss_zhiku = row.rss_mib;
            eprintln!(
                "{name} zhiku batch {batch}: {:.1} passages/s",
                row.passages_s
            );
            rows.push(row);
            let Some(python) = &python else { continue };
            for engine in ["sentence-transformers", "onnxruntime"] {
                if let Some(row) = measure_peer(python, engine, &model, name, &file, batch, max_seq)
                {
                    eprintln!(
                        "{name} {engine} batch {batch}: {:.1} passages/s",
                        row.passages_s
                    );
                    rows.push(row);
                }
            }
        }
    }
    let gemm = gemm_gflops();
    let flops_of = |corpus: &str| {
        flops
            .iter()
            .find(|(n, _)| n == corpus)
            .map_or(f64::NAN, |(_, f)| f.per_token)
    };

    println!();
    println!("f32 GEMM (candle matmul, 2048³): {gemm:.0} GFLOP/s");
    println!();
    println!(
        "| corpus  | engine                | batch | passages/s | tokens/s | GFLOP/s | of GEMM | peak RSS MiB |"
    );
    println!(
        "|---------|-----------------------|-------|------------|----------|---------|---------|--------------|"
    );
    for r in &rows {
        let gflops = r.tokens_s * flops_of(&r.corpus) / 1e9;
        println!(
            "| {:<7} | {:<21} | {:>5} | {:>10.1} | {:>8.0} | {:>7.0} | {:>6.0}% | {:>12.0} |",
            r.corpus,
            r.engine,
            r.batch,
            r.passages_s,
            r.tokens_s,
            gflops,
            100.0 * gflops / gemm,
            r.rss_mib
        );
    }
    println!();
    println!("peak RSS of this process (all zhiku runs): {rss_zhiku:.0} MiB");
    for (name, _) in &corpora {
        let of = |engine: &str| -> Vec<&Row> {
            rows.iter()
                .filter(|r| &r.corpus == name && r.engine == engine)
                .collect()
        };
        let best = |rs: &[&Row]| rs.iter().map(|r| r.passages_s).fold(f64::NAN, f64::max);
        let zhiku = of("zhiku candle");
        for peer in ["sentence-transformers", "onnxruntime"] {
            let peer_rows = of(peer);
            if peer_rows.is_empty() {
                continue;
            }
            let per_batch: Vec<String> = zhiku
                .iter()
                .filter_map(|z| {
                    peer_rows
                        .iter()
                        .find(|p| p.batch == z.batch)
                        .map(|p| format!("b{} {:.2}×", z.batch, z.passages_s / p.passages_s))
                })
                .collect();
            println!(
                "{name}: zhiku / {peer}: best {:.2}× ({:.1} vs {:.1} passages/s); {}",
                best(&zhiku) / best(&peer_rows),
                best(&zhiku),
                best(&peer_rows),
                per_batch.join(", ")
            );
        }
    }

    if args.index {
        match measure_index(&model, &cmrc_dir, tmp.path()) {
            Some((secs, json)) => {
                println!();
                println!(
                    "zhiku index --beir {} (candle, fresh store): {secs:.1} s; {json}",
                    cmrc_dir.display()
                );
            }
            None => eprintln!("zhiku index did not complete"),
        }
    }
    println!("load average at the end: {}", load_avg());
}
