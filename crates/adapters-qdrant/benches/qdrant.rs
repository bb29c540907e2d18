//! Qdrant against the embedded exact index, in the same run.
//!
//! ```text
//! ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334 cargo bench -p zhiku-adapters-qdrant --bench qdrant
//! ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334 cargo bench -p zhiku-adapters-qdrant --bench qdrant -- --n 10000
//! ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334 cargo bench -p zhiku-adapters-qdrant --bench qdrant -- --ef 64,128,256,512,1024
//! ```
//!
//! `--n N` chunks (default 100 000) of synthetic text in 10 scopes, embedded by the hashing
//! embedder at 384 dimensions so the figures are the index's, not a model's. Measured: upsert
//! throughput (chunks/s, Qdrant with `wait = true` in batches of `--batch`, default 256), the
//! time Qdrant then needs to build its HNSW graphs, search latency p50/p99 over `--queries`
//! queries (default 500) with k = 10, filtered to all 10 scopes (the widest filter there is:
//! retrieval never runs unscoped) and to one scope (a tenth of the points), and the recall@10 of
//! Qdrant's HNSW search against the exact search of `MemoryVectorIndex`. Ratios are
//! Qdrant / memory. Without `ZHIKU_TEST_QDRANT_URL` (or `--url`) it prints SKIPPED.
//!
//! `--ef LIST` (comma-separated, e.g. `64,128,256,512,1024`) sweeps the search beam: after the
//! same upsert and HNSW build, the collection is reopened with `QdrantConfig::hnsw_ef` set to
//! each value in turn and searched with the same queries, one row per value (latency, recall@10
//! against the exact index, ratios to it). `exact` in the list reopens it with
//! `QdrantConfig::exact` instead: Qdrant's own brute force, the ceiling of the recall measured
//! here. Without `--ef` only the server's default beam is measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zhiku_adapters_memory::{HashingEmbedder, MemoryVectorIndex};
use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};
use zhiku_domain::ports::{EmbeddedChunk, Embedder, ScoredChunk, VectorIndex};
use zhiku_domain::{Chunk, DocId, Document, Embedding, Filter, Scope, Source};

const SCOPES: usize = 10;
const K: usize = 10;

struct Args {
    n: usize,
    queries: usize,
    batch: usize,
    url: Option<String>,
    keep: bool,
    /// The search beams of `--ef`, in the order given; empty: only the server's default.
    beams: Vec<Beam>,
}

/// One search setting of the `--ef` sweep.
#[derive(Clone, Copy)]
enum Beam {
    /// HNSW with this beam width (`QdrantConfig::hnsw_ef`).
    Ef(u64),
    /// Brute force (`QdrantConfig::exact`).
    Exact,
}

impl Beam {
    fn parse(list: &str) -> Vec<Beam> {
        list.split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| match v {
                "exact" => Beam::Exact,
                _ => match v.parse::<u64>() {
                    Ok(ef) if ef > 0 => Beam::Ef(ef),
                    _ => panic!("--ef takes positive integers or `exact`, comma-separated: {v}"),
                },
            })
            .collect()
    }

    fn label(self) -> String {
        match self {
            Beam::Ef(ef) => ef.to_string(),
            Beam::Exact => "exact".into(),
        }
    }

    /// The bench's settings with this beam.
    fn config(self, config: &QdrantConfig) -> QdrantConfig {
        match self {
            Beam::Ef(ef) => QdrantConfig {
                hnsw_ef: Some(ef),
                ..config.clone()
            },
            Beam::Exact => QdrantConfig {
                exact: true,
                ..config.clone()
            },
        }
    }
}

fn args() -> Args {
    let mut a = Args {
        n: 100_000,
        queries: 500,
        batch: 256,
        url: std::env::var("ZHIKU_TEST_QDRANT_URL")
            .ok()
            .filter(|u| !u.is_empty()),
        keep: false,
        beams: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--n" => a.n = value("--n").parse().expect("--n N"),
            "--queries" => a.queries = value("--queries").parse().expect("--queries Q"),
            "--batch" => a.batch = value("--batch").parse().expect("--batch B"),
            "--url" => a.url = Some(value("--url")),
            "--keep" => a.keep = true,
            "--ef" => a.beams = Beam::parse(&value("--ef")),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// A small deterministic generator (xorshift64*), so every run indexes the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 3 000 pseudo-words; drawn with a skew so some are common and most are rare, like text.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "an", "el", "or", "ui", "zh", "qi", "xu",
        "ba", "de", "fo", "gu", "hi", "ja", "ve", "wo", "ye",
    ];
    let mut rng = Rng(7);
    (0..3000)
        .map(|_| {
            let len = 2 + rng.below(3);
            (0..len)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect()
        })
        .collect()
}

fn word<'a>(vocab: &'a [String], rng: &mut Rng) -> &'a str {
    // Squaring a uniform draw skews towards the front of the vocabulary.
    let u = rng.below(10_000) as f64 / 10_000.0;
    &vocab[((u * u) * vocab.len() as f64) as usize]
}

fn corpus(n: usize) -> Vec<Chunk> {
    let vocab = vocabulary();
    let mut rng = Rng(42);
    (0..n)
        .map(|i| {
            let words = 30 + rng.below(30);
            let text: Vec<&str> = (0..words).map(|_| word(&vocab, &mut rng)).collect();
            let text = text.join(" ");
            let id = DocId::new(format!("doc-{i}")).expect("doc id");
            let doc = Document::builder(
                id.clone(),
                Source::new(format!("bench/{i}")).expect("source"),
                text.clone(),
            )
            .scope(Scope::new(format!("scope-{}", i % SCOPES)).expect("scope"))
            .build();
            Chunk::new(id, 0, text, vec![], 0, Arc::clone(doc.attributes()))
        })
        .collect()
}

/// Queries: a few words of a random chunk, plus noise words.
fn queries(chunks: &[Chunk], q: usize) -> Vec<String> {
    let vocab = vocabulary();
    let mut rng = Rng(99);
    (0..q)
        .map(|_| {
            let words: Vec<&str> = chunks[rng.below(chunks.len())]
                .content()
                .split(' ')
                .collect();
            let mut picked: Vec<&str> = (0..6).map(|_| words[rng.below(words.len())]).collect();
            picked.push(word(&vocab, &mut rng));
            picked.join(" ")
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

struct Latency {
    p50_ms: f64,
    p99_ms: f64,
    results: Vec<Vec<ScoredChunk>>,
}

fn measure(index: &dyn VectorIndex, queries: &[Embedding], filter: &Filter) -> Latency {
    for q in queries.iter().take(20) {
        index.search(q, K, filter).expect("warm-up search");
    }
    let mut times = Vec::with_capacity(queries.len());
    let mut results = Vec::with_capacity(queries.len());
    for q in queries {
        let start = Instant::now();
        let hits = index.search(q, K, filter).expect("search");
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        results.push(hits);
    }
    times.sort_by(f64::total_cmp);
    Latency {
        p50_ms: percentile(&times, 50.0),
        p99_ms: percentile(&times, 99.0),
        results,
    }
}

fn recall(approximate: &[Vec<ScoredChunk>], exact: &[Vec<ScoredChunk>]) -> f64 {
    let mut sum = 0.0;
    let mut counted = 0usize;
    for (a, e) in approximate.iter().zip(exact) {
        if e.is_empty() {
            continue;
        }
        let found = e
            .iter()
            .filter(|x| a.iter().any(|y| y.chunk.chunk_id() == x.chunk.chunk_id()))
            .count();
        sum += found as f64 / e.len() as f64;
        counted += 1;
    }
    sum / counted.max(1) as f64
}

fn upsert_rate(index: &dyn VectorIndex, items: &[EmbeddedChunk]) -> (f64, f64) {
    let start = Instant::now();
    for part in items.chunks(4096) {
        index.upsert(part).expect("upsert");
    }
    index.commit().expect("commit");
    let s = start.elapsed().as_secs_f64();
    (s, items.len() as f64 / s)
}

fn main() {
    let args = args();
    let Some(url) = args.url.clone() else {
        eprintln!(
            "SKIPPED qdrant bench: set ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334 (or pass --url) to measure against a real Qdrant server"
        );
        return;
    };
    let embedder = HashingEmbedder::new(384).expect("embedder");
    let space = embedder.space().clone();
    let collection = format!("zhiku_bench_{}", std::process::id());
    let config = QdrantConfig {
        batch_size: args.batch,
        timeout: Duration::from_secs(60),
        ..QdrantConfig::with_url(&url)
    };
    let qdrant = QdrantVectorIndex::open_collection(&config, &collection, space.clone(), None)
        .unwrap_or_else(|e| panic!("cannot open {collection} on {url}: {e}"));
    let version = qdrant
        .server_version()
        .unwrap_or_else(|e| format!("unknown ({e})"));
    let memory = MemoryVectorIndex::new(space.clone());

    println!(
        "Qdrant {version} at {url}; {} chunks in {SCOPES} scopes, hashing embedder {} dims, k = {K}, {} queries, upsert batch {}",
        args.n,
        space.dims(),
        args.queries,
        args.batch
    );

    let start = Instant::now();
    let chunks = corpus(args.n);
    let texts: Vec<&str> = chunks.iter().map(Chunk::content).collect();
    let mut embeddings = Vec::with_capacity(chunks.len());
    for part in texts.chunks(1024) {
        embeddings.extend(embedder.embed_documents(part).expect("embed"));
    }
    let items: Vec<EmbeddedChunk> = chunks
        .iter()
        .cloned()
        .zip(embeddings)
        .map(|(chunk, embedding)| EmbeddedChunk { chunk, embedding })
        .collect();
    println!(
        "corpus and embeddings: {:.1} s (not part of any figure below)",
        start.elapsed().as_secs_f64()
    );

    let (memory_s, memory_rate) = upsert_rate(&memory, &items);
    let (qdrant_s, qdrant_rate) = upsert_rate(&qdrant, &items);
    let (optimize, indexed) = qdrant
        .wait_until_optimized(Duration::from_secs(1800))
        .expect("collection info");
    assert_eq!(qdrant.count().expect("count"), args.n, "every chunk stored");

    let query_texts = queries(&chunks, args.queries);
    let query_vectors: Vec<Embedding> = query_texts
        .iter()
        .map(|q| embedder.embed_query(q).expect("embed query"))
        .collect();
    let all = Filter::for_scopes((0..SCOPES).map(|s| Scope::new(format!("scope-{s}")).unwrap()))
        .expect("filter");
    let one = Filter::for_scope(Scope::new("scope-3").unwrap());

    let mem_all = measure(&memory, &query_vectors, &all);
    let q_all = measure(&qdrant, &query_vectors, &all);
    let mem_one = measure(&memory, &query_vectors, &one);
    let q_one = measure(&qdrant, &query_vectors, &one);

    println!();
    println!(
        "| index | upsert s | chunks/s | all scopes p50 ms | p99 ms | one scope p50 ms | p99 ms | recall@10 all | recall@10 one |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| memory (exact) | {memory_s:.2} | {memory_rate:.0} | {:.3} | {:.3} | {:.3} | {:.3} | 1 | 1 |",
        mem_all.p50_ms, mem_all.p99_ms, mem_one.p50_ms, mem_one.p99_ms
    );
    println!(
        "| qdrant (HNSW) | {qdrant_s:.2} | {qdrant_rate:.0} | {:.3} | {:.3} | {:.3} | {:.3} | {:.4} | {:.4} |",
        q_all.p50_ms,
        q_all.p99_ms,
        q_one.p50_ms,
        q_one.p99_ms,
        recall(&q_all.results, &mem_all.results),
        recall(&q_one.results, &mem_one.results)
    );
    println!();
    println!(
        "qdrant optimisation after the upserts: {:.1} s until green, {indexed} vectors in HNSW",
        optimize.as_secs_f64()
    );
    println!(
        "ratios qdrant / memory: upsert throughput {:.3}x; all scopes p50 {:.2}x, p99 {:.2}x; one scope p50 {:.2}x, p99 {:.2}x",
        qdrant_rate / memory_rate,
        q_all.p50_ms / mem_all.p50_ms,
        q_all.p99_ms / mem_all.p99_ms,
        q_one.p50_ms / mem_one.p50_ms,
        q_one.p99_ms / mem_one.p99_ms
    );

    if !args.beams.is_empty() {
        println!();
        println!(
            "search beam sweep (same collection, reopened per beam; same queries; ratios qdrant / memory):"
        );
        println!();
        println!(
            "| hnsw_ef | all scopes p50 ms | p99 ms | one scope p50 ms | p99 ms | recall@10 all | recall@10 one | all p50 ratio | all p99 ratio | one p50 ratio | one p99 ratio |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        let row = |label: &str, all_lat: &Latency, one_lat: &Latency| {
            println!(
                "| {label} | {:.3} | {:.3} | {:.3} | {:.3} | {:.4} | {:.4} | {:.3}x | {:.3}x | {:.3}x | {:.3}x |",
                all_lat.p50_ms,
                all_lat.p99_ms,
                one_lat.p50_ms,
                one_lat.p99_ms,
                recall(&all_lat.results, &mem_all.results),
                recall(&one_lat.results, &mem_one.results),
                all_lat.p50_ms / mem_all.p50_ms,
                all_lat.p99_ms / mem_all.p99_ms,
                one_lat.p50_ms / mem_one.p50_ms,
                one_lat.p99_ms / mem_one.p99_ms
            );
        };
        row("default", &q_all, &q_one);
        for beam in &args.beams {
            let beam_config = beam.config(&config);
            let index =
                QdrantVectorIndex::open_collection(&beam_config, &collection, space.clone(), None)
                    .unwrap_or_else(|e| {
                        panic!(
                            "cannot reopen {collection} on {url} with hnsw_ef {}: {e}",
                            beam.label()
                        )
                    });
            let b_all = measure(&index, &query_vectors, &all);
            let b_one = measure(&index, &query_vectors, &one);
            row(&beam.label(), &b_all, &b_one);
        }
    }

    if args.keep {
        println!("kept collection {collection}");
    } else if let Err(e) = qdrant.drop_collection() {
        eprintln!("warning: could not drop {collection}: {e}");
    }
}
