//! Comparison bench of approximate-nearest-neighbour libraries on the same vectors (issue 15).
//!
//! Builds each candidate on the same N unit vectors of D dims, then measures, single-threaded,
//! top-10 search over 1,000 held-out queries: recall@10 against the exact brute-force scan (the
//! ground truth), p50/p99 latency, and the same restricted to one of ten scopes with the filter
//! applied inside the search where the library can. The search-time breadth (`ef`, or `search_k`
//! for arroy) is raised until recall@10 reaches the target, and the breadth used is printed.
//! hnswlib (PyPI) runs on the same vectors in the same run as the peer every ratio is against.
//!
//! Environment (all optional):
//! - `ZHIKU_ANN_N` vectors (default 100000; `--quick` sets 20000), `ZHIKU_ANN_DIM` (384),
//!   `ZHIKU_ANN_QUERIES` (1000), `ZHIKU_ANN_SETS` (`gauss,text`), `ZHIKU_ANN_ONLY` (comma list
//!   of candidate names to run, e.g. `usearch,hnswlib`), `ZHIKU_ANN_TARGET` (0.95),
//!   `ZHIKU_ANN_CORPUS` (the CMRC corpus.jsonl; default `../shared/datasets/cmrc2018-dev/`
//!   beside the workspace), `ZHIKU_ANN_PEER_PYTHON` (default the venv that
//!   `scripts/setup-bench-peers.sh` creates).
//!
//! Run: `cargo bench -p zhiku-bench-ann --bench ann` (add `-- --quick` for 20k vectors).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use roaring::RoaringBitmap;
use zhiku_domain::{Filter, Scope};

/// Results per query.
const K: usize = 10;
/// HNSW graph degree (hnswlib's `M`, usearch's connectivity, hnsw_rs's max_nb_connection).
const M: usize = 16;
/// Construction breadth (`ef_construction` / `expansion_add`), the same for every HNSW.
const EF_CONSTRUCTION: usize = 200;
/// Search breadths tried in order until recall@10 reaches the target.
const EFS: &[usize] = &[16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024];
/// arroy: multipliers of its default `search_k` (= k × number of trees) tried in order.
const ARROY_SEARCH_K_MULT: &[usize] = &[1, 2, 4, 8, 16, 32, 64];
/// Number of scopes; each vector belongs to one, a filtered query allows one.
const SCOPES: usize = 10;
/// Threads used to build every index (the machine has two cores); searches run on one.
const BUILD_THREADS: usize = 2;

fn main() {
    let params = Params::from_env();
    let start = Instant::now();
    let mut out = String::new();
    let _ = writeln!(out, "# ANN candidates on the same vectors (issue 15)");
    let _ = writeln!(out, "load at start: {}", uptime());
    let _ = writeln!(
        out,
        "parameters: N={} D={} queries={} k={K} target recall@10>={} M={M} ef_construction={EF_CONSTRUCTION} build threads={BUILD_THREADS} search threads=1 scopes={SCOPES} (filtered queries allow 1)",
        params.n, params.dim, params.queries, params.target
    );
    eprint!("{out}");
    for set in &params.sets {
        let Some(data) = Data::generate(set, &params) else {
            continue;
        };
        let section = run_set(&data, &params);
        eprint!("{section}");
        out.push_str(&section);
    }
    let _ = writeln!(out, "load at end: {}", uptime());
    let _ = writeln!(
        out,
        "total wall time: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    println!("\n{out}");
}

#[derive(Debug)]
struct Params {
    n: usize,
    dim: usize,
    queries: usize,
    sets: Vec<String>,
    only: Option<Vec<String>>,
    target: f64,
    corpus: PathBuf,
    peer_python: PathBuf,
}

impl Params {
    fn from_env() -> Self {
        let quick = std::env::args().any(|a| a == "--quick");
        let num = |key: &str, default: usize| {
            std::env::var(key)
                .ok()
                .map(|v| {
                    v.parse()
                        .unwrap_or_else(|_| panic!("{key} must be a number"))
                })
                .unwrap_or(default)
        };
        let list = |key: &str| {
            std::env::var(key).ok().map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .collect::<Vec<_>>()
            })
        };
        let corpus = std::env::var_os("ZHIKU_ANN_CORPUS")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../../shared/datasets/cmrc2018-dev/corpus.jsonl")
            });
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let peer_python = std::env::var_os("ZHIKU_ANN_PEER_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".cache/zhiku/venv-bench/bin/python"));
        Self {
            n: num("ZHIKU_ANN_N", if quick { 20_000 } else { 100_000 }),
            dim: num("ZHIKU_ANN_DIM", 384),
            queries: num("ZHIKU_ANN_QUERIES", 1000),
            sets: list("ZHIKU_ANN_SETS").unwrap_or_else(|| vec!["gauss".into(), "text".into()]),
            only: list("ZHIKU_ANN_ONLY"),
            target: std::env::var("ZHIKU_ANN_TARGET")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.95),
            corpus,
            peer_python,
        }
    }

    fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| name.starts_with(o.as_str())))
    }
}

// ---------------------------------------------------------------------------------------------
// Data

/// The vectors of one set: `n` base vectors and the queries, unit-normalised, row-major.
#[derive(Debug)]
struct Data {
    name: String,
    dim: usize,
    base: Vec<f32>,
    queries: Vec<f32>,
    /// Scope index of each base vector.
    scope_of: Vec<u8>,
    /// The scope labels.
    scopes: Vec<Scope>,
    /// The one-scope filter of each query (query `i` allows scope `i % 10`).
    filters: Vec<Filter>,
}

impl Data {
    fn generate(set: &str, params: &Params) -> Option<Self> {
        let t = Instant::now();
        let data = match set {
            "gauss" => Self::gaussian(params),
            "text" => Self::text(params)?,
            other => panic!("unknown set {other:?}: use gauss or text"),
        };
        eprintln!(
            "[{}] generated {} + {} vectors in {:.1} s",
            data.name,
            data.n(),
            data.queries.len() / data.dim,
            t.elapsed().as_secs_f64()
        );
        Some(data)
    }

    fn n(&self) -> usize {
        self.base.len() / self.dim
    }

    fn nq(&self) -> usize {
        self.queries.len() / self.dim
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.base[i * self.dim..(i + 1) * self.dim]
    }

    fn query(&self, i: usize) -> &[f32] {
        &self.queries[i * self.dim..(i + 1) * self.dim]
    }

    fn labelled(
        name: String,
        dim: usize,
        base: Vec<f32>,
        queries: Vec<f32>,
        scope_of: Vec<u8>,
    ) -> Self {
        let scopes: Vec<Scope> = (0..SCOPES)
            .map(|s| Scope::new(format!("scope-{s}")).expect("valid scope"))
            .collect();
        let nq = queries.len() / dim;
        let filters = (0..nq)
            .map(|i| Filter::for_scope(scopes[i % SCOPES].clone()))
            .collect();
        Self {
            name,
            dim,
            base,
            queries,
            scope_of,
            scopes,
            filters,
        }
    }

    /// (a) i.i.d. Gaussian vectors, normalised: no structure, the hard case for graph indexes.
    fn gaussian(params: &Params) -> Self {
        let mut rng = SplitMix(0x5eed_0001);
        let mut draw = |count: usize| {
            let mut v: Vec<f32> = (0..count * params.dim).map(|_| rng.gauss()).collect();
            v.chunks_exact_mut(params.dim).for_each(normalise);
            v
        };
        let base = draw(params.n);
        let queries = draw(params.queries);
        let scope_of = (0..params.n).map(|i| (i % SCOPES) as u8).collect();
        Self::labelled("gauss".into(), params.dim, base, queries, scope_of)
    }

    /// (b) Real Chinese sentences of the CMRC corpus recombined into distinct chunks (two
    /// consecutive sentences of one article plus one drawn at random), each turned into a vector
    /// by feature hashing of its character bigrams (signed, normalised). A chunk's scope follows
    /// its article, so scopes correlate with content as folders do. Queries are single sentences.
    fn text(params: &Params) -> Option<Self> {
        let raw = match std::fs::read_to_string(&params.corpus) {
            Ok(raw) => raw,
            Err(e) => {
                eprintln!(
                    "SKIPPED set text: cannot read {} ({e}); set ZHIKU_ANN_CORPUS",
                    params.corpus.display()
                );
                return None;
            }
        };
        let mut sentences: Vec<(usize, String)> = Vec::new();
        for (article, line) in raw.lines().enumerate() {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(text) = value.get("text").and_then(|t| t.as_str()) else {
                continue;
            };
            for s in text.split(['。', '！', '？', '\n']) {
                let s = s.trim();
                if s.chars().count() >= 6 {
                    sentences.push((article, s.to_owned()));
                }
            }
        }
        let count = sentences.len();
        let mut rng = SplitMix(0x5eed_0002);
        let mut base = vec![0f32; params.n * params.dim];
        let mut scope_of = Vec::with_capacity(params.n);
        let mut chunk = String::new();
        for (i, row) in base.chunks_exact_mut(params.dim).enumerate() {
            let a = i % count;
            let b = if a + 1 < count && sentences[a + 1].0 == sentences[a].0 {
                a + 1
            } else {
                (a + count - 1) % count
            };
            let c = (rng.next() % count as u64) as usize;
            chunk.clear();
            for j in [a, b, c] {
                chunk.push_str(&sentences[j].1);
                chunk.push('。');
            }
            hash_bigrams(&chunk, row);
            scope_of.push((sentences[a].0 % SCOPES) as u8);
        }
        let mut queries = vec![0f32; params.queries * params.dim];
        for row in queries.chunks_exact_mut(params.dim) {
            let j = (rng.next() % count as u64) as usize;
            hash_bigrams(&sentences[j].1, row);
        }
        eprintln!("[text] {count} sentences from {}", params.corpus.display());
        Some(Self::labelled(
            "text".into(),
            params.dim,
            base,
            queries,
            scope_of,
        ))
    }

    /// The allowed-scope mask of a filter, from the domain's filter semantics (its scope set).
    fn allowed(&self, filter: &Filter) -> [bool; SCOPES] {
        let mut mask = [false; SCOPES];
        for (s, scope) in self.scopes.iter().enumerate() {
            mask[s] = filter.scopes().contains(scope);
        }
        mask
    }
}

fn hash_bigrams(text: &str, row: &mut [f32]) {
    row.iter_mut().for_each(|x| *x = 0.0);
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    for pair in chars.windows(2) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for c in pair {
            for byte in (*c as u32).to_le_bytes() {
                h ^= u64::from(byte);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        let idx = (h % row.len() as u64) as usize;
        row[idx] += if (h >> 63) == 1 { 1.0 } else { -1.0 };
    }
    normalise(row);
}

fn normalise(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// splitmix64: a small deterministic generator, so every run sees the same vectors.
#[derive(Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Box–Muller.
    fn gauss(&mut self) -> f32 {
        let (u1, u2) = (self.unit(), self.unit());
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}

// ---------------------------------------------------------------------------------------------
// Exact search: the ground truth

/// Dot product in eight independent lanes, which the compiler vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Exact top-k by inner product (= cosine on unit vectors) over the vectors `keep` allows.
fn exact_top_k(data: &Data, q: &[f32], allowed: Option<&[bool; SCOPES]>) -> Vec<u64> {
    let mut best: Vec<(f32, u64)> = Vec::with_capacity(K + 1);
    for i in 0..data.n() {
        if let Some(mask) = allowed
            && !mask[data.scope_of[i] as usize]
        {
            continue;
        }
        let s = dot(q, data.row(i));
        if best.len() == K && s <= best[K - 1].0 {
            continue;
        }
        let at = best.partition_point(|(b, _)| *b >= s);
        best.insert(at, (s, i as u64));
        best.truncate(K);
    }
    best.into_iter().map(|(_, i)| i).collect()
}

/// The exact top-10 of every query, unfiltered and filtered, over `BUILD_THREADS` threads.
fn ground_truth(data: &Data) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let nq = data.nq();
    let per = nq.div_ceil(BUILD_THREADS);
    let parts: Vec<Vec<(Vec<u64>, Vec<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..BUILD_THREADS)
            .map(|t| {
                s.spawn(move || {
                    (t * per..((t + 1) * per).min(nq))
                        .map(|i| {
                            let mask = data.allowed(&data.filters[i]);
                            (
                                exact_top_k(data, data.query(i), None),
                                exact_top_k(data, data.query(i), Some(&mask)),
                            )
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("ground truth thread"))
            .collect()
    });
    parts.into_iter().flatten().unzip()
}

// ---------------------------------------------------------------------------------------------
// Measurement

#[derive(Debug, Clone, Default)]
struct Row {
    name: String,
    build_s: f64,
    mem_bytes: Option<u64>,
    disk_bytes: Option<u64>,
    ef: String,
    recall: f64,
    p50_us: f64,
    p99_us: f64,
    f_ef: String,
    f_recall: Option<f64>,
    f_p50_us: f64,
    f_p99_us: f64,
    note: String,
}

#[derive(Debug, Clone, Copy)]
struct Pass {
    recall: f64,
    p50_us: f64,
    p99_us: f64,
}

/// What a filtered query hands the search: the allowed-scope mask and each vector's scope.
#[derive(Debug, Clone, Copy)]
struct Allowed<'a> {
    mask: &'a [bool; SCOPES],
    scope_of: &'a [u8],
    /// Index of the single allowed scope (the bench's filters allow one), for per-scope bitmaps.
    scope: usize,
}

impl Allowed<'_> {
    fn allows(&self, key: u64) -> bool {
        self.mask[self.scope_of[key as usize] as usize]
    }
}

/// A search under test: query, optional filter, top-10 keys.
type SearchFn<'s> = dyn Fn(&[f32], Option<Allowed<'_>>) -> Vec<u64> + 's;

/// The queries of one measurement: a data set, its ground truth, filtered or not.
#[derive(Debug, Clone, Copy)]
struct Case<'a> {
    data: &'a Data,
    truth: &'a [Vec<u64>],
    filtered: bool,
}

impl<'a> Case<'a> {
    fn new(data: &'a Data, truth: &'a [Vec<u64>], filtered: bool) -> Self {
        Self {
            data,
            truth,
            filtered,
        }
    }
}

/// Runs every query once (after a short warm-up) at one breadth and scores it.
fn pass(case: Case<'_>, limit: usize, search: &SearchFn<'_>) -> Pass {
    let Case {
        data,
        truth,
        filtered,
    } = case;
    let nq = data.nq().min(limit);
    let mut times = Vec::with_capacity(nq);
    let mut hits = 0usize;
    let mut expected = 0usize;
    for i in 0..nq.min(20) {
        let mask = data.allowed(&data.filters[i]);
        let allowed = filtered.then_some(Allowed {
            mask: &mask,
            scope_of: &data.scope_of,
            scope: i % SCOPES,
        });
        std::hint::black_box(search(data.query(i), allowed));
    }
    for (i, want) in truth.iter().enumerate().take(nq) {
        // The filter's translation to a scope mask is outside the timing, like the peer's.
        let mask = data.allowed(&data.filters[i]);
        let t = Instant::now();
        let allowed = filtered.then_some(Allowed {
            mask: &mask,
            scope_of: &data.scope_of,
            scope: i % SCOPES,
        });
        let found = search(data.query(i), allowed);
        times.push(t.elapsed());
        expected += want.len();
        hits += want.iter().filter(|k| found.contains(k)).count();
    }
    times.sort();
    let pct = |p: f64| micros(times[((times.len() as f64 * p).ceil() as usize).saturating_sub(1)]);
    Pass {
        recall: hits as f64 / expected.max(1) as f64,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Raises the breadth through `breadths` until recall reaches the target; logs the sweep.
/// `set_breadth` is called before each pass. Returns the breadth used (label) and its pass.
fn tune(
    label: &str,
    case: Case<'_>,
    target: f64,
    breadths: &[usize],
    set_breadth: &dyn Fn(usize) -> String,
    search: &SearchFn<'_>,
) -> (String, Pass) {
    let mut last = None;
    let mut sweep = String::new();
    for &b in breadths {
        let name = set_breadth(b);
        let p = pass(case, usize::MAX, search);
        let _ = write!(sweep, " {name}:{:.3}/{:.0}us", p.recall, p.p50_us);
        let reached = p.recall >= target;
        last = Some((name, p));
        if reached {
            break;
        }
    }
    eprintln!(
        "[{}] {label}{} sweep (breadth:recall/p50):{sweep}",
        case.data.name,
        if case.filtered { " filtered" } else { "" }
    );
    let (name, p) = last.expect("at least one breadth");
    let name = if p.recall >= target {
        name
    } else {
        format!("{name} (max)")
    };
    (name, p)
}

/// Live bytes of the Rust heap, counted by [`Counting`] (C++ allocations, e.g. usearch's, are not
/// seen: usearch reports its own).
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes so that a pure-Rust index's heap can be measured
/// exactly (RSS growth is blurred by memory the allocator keeps from earlier candidates).
#[derive(Debug)]
struct Counting;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

// SAFETY: every call forwards to `System` with the caller's arguments unchanged (so `System`'s
// guarantees hold); the only addition is an atomic counter update.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

fn live_heap_bytes() -> u64 {
    LIVE_BYTES.load(Ordering::Relaxed) as u64
}

fn allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.blocks() * 512)
                .sum()
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The candidates

fn run_set(data: &Data, params: &Params) -> String {
    let t = Instant::now();
    let (truth, truth_f) = ground_truth(data);
    eprintln!(
        "[{}] exact ground truth of {} queries (x2: all scopes, one scope) in {:.1} s",
        data.name,
        data.nq(),
        t.elapsed().as_secs_f64()
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();

    if params.wants("exact") {
        rows.push(exact(data, &truth, &truth_f));
    }
    for (kind, label, rescore) in [
        (usearch::ScalarKind::F32, "usearch f32", false),
        (usearch::ScalarKind::F16, "usearch f16", false),
        (usearch::ScalarKind::I8, "usearch i8", false),
        (usearch::ScalarKind::I8, "usearch i8+rescore", true),
    ] {
        if params.wants(label) {
            rows.push(usearch_row(
                data,
                &truth,
                &truth_f,
                params.target,
                kind,
                label,
                rescore,
            ));
        }
    }
    if params.wants("usearch b1") {
        rows.push(usearch_b1_row(data, &truth, &truth_f, params.target));
    }
    if params.wants("hnsw_rs") {
        rows.push(hnsw_rs_row(data, &truth, &truth_f, params.target));
    }
    if params.wants("arroy") {
        match arroy_row(data, &truth, &truth_f, params.target) {
            Ok(row) => rows.push(row),
            Err(e) => skipped.push(format!("arroy: FAILED: {e}")),
        }
    }
    if params.wants("hnswlib") || params.wants("faiss") {
        match peers(data, &truth, &truth_f, params) {
            Ok(peer_rows) => rows.extend(peer_rows),
            Err(e) => skipped.push(e),
        }
    }
    table(data, params, &rows, &skipped)
}

fn exact(data: &Data, truth: &[Vec<u64>], truth_f: &[Vec<u64>]) -> Row {
    // The full scan takes milliseconds per query: 200 queries give stable percentiles.
    let search = |q: &[f32], allowed: Option<Allowed<'_>>| {
        let mask = allowed.map(|a| *a.mask);
        exact_top_k(data, q, mask.as_ref())
    };
    let all = pass(Case::new(data, truth, false), 200, &search);
    let one = pass(Case::new(data, truth_f, true), 200, &search);
    Row {
        name: "exact (brute force)".into(),
        build_s: 0.0,
        mem_bytes: Some((data.base.len() * 4) as u64),
        disk_bytes: None,
        ef: "-".into(),
        recall: all.recall,
        p50_us: all.p50_us,
        p99_us: all.p99_us,
        f_ef: "-".into(),
        f_recall: Some(one.recall),
        f_p50_us: one.p50_us,
        f_p99_us: one.p99_us,
        note: "scan of f32 rows, 200 queries; filtered skips other scopes".into(),
    }
}

fn usearch_row(
    data: &Data,
    truth: &[Vec<u64>],
    truth_f: &[Vec<u64>],
    target: f64,
    kind: usearch::ScalarKind,
    label: &str,
    rescore: bool,
) -> Row {
    use usearch::MetricKind;
    let index = usearch_index(data, MetricKind::Cos, kind);
    let build_s = usearch_build(&index, data, |key, row| index.add(key, row));
    // With rescoring, the quantised index returns a 4k shortlist that is re-ranked exactly
    // against the f32 rows (which a store would keep on disk / memory-mapped).
    let fetch = if rescore { 4 * K } else { K };
    let search = |q: &[f32], allowed: Option<Allowed<'_>>| -> Vec<u64> {
        let matches = match allowed {
            None => index.search(q, fetch),
            Some(a) => index.filtered_search(q, fetch, |key| a.allows(key)),
        }
        .expect("usearch search");
        if rescore {
            rescored(data, q, &matches.keys)
        } else {
            matches.keys
        }
    };
    let set = |ef: usize| {
        index.change_expansion_search(ef);
        format!("ef={ef}")
    };
    let note = format!(
        "cosine, filtered_search(predicate) inside the graph walk{}; mem = memory_usage(), disk = serialized_length(); {}",
        if rescore {
            ", 40-shortlist rescored on f32 rows (not counted in MiB)"
        } else {
            ""
        },
        index.hardware_acceleration()
    );
    let tuned = Tuned {
        data,
        truth,
        truth_f,
        target,
        label,
    };
    tuned.row(
        build_s,
        Sizes::of_usearch(&index),
        [EFS, EFS],
        &set,
        &search,
        note,
    )
}

/// An empty usearch index of the bench's graph settings.
fn usearch_index(
    data: &Data,
    metric: usearch::MetricKind,
    kind: usearch::ScalarKind,
) -> usearch::Index {
    let options = usearch::IndexOptions {
        dimensions: data.dim,
        metric,
        quantization: kind,
        connectivity: M,
        expansion_add: EF_CONSTRUCTION,
        expansion_search: 64,
        multi: false,
    };
    usearch::Index::new(&options).expect("usearch index")
}

/// Adds every row on `BUILD_THREADS` threads; the build's seconds.
fn usearch_build<E: std::fmt::Debug>(
    index: &usearch::Index,
    data: &Data,
    add: impl Fn(u64, &[f32]) -> Result<(), E> + Sync,
) -> f64 {
    let t = Instant::now();
    index
        .reserve_capacity_and_threads(data.n(), BUILD_THREADS)
        .expect("usearch reserve");
    std::thread::scope(|s| {
        for th in 0..BUILD_THREADS {
            let add = &add;
            s.spawn(move || {
                for i in (th..data.n()).step_by(BUILD_THREADS) {
                    add(i as u64, data.row(i)).expect("usearch add");
                }
            });
        }
    });
    t.elapsed().as_secs_f64()
}

/// The best `K` of `keys` by the exact dot product of their f32 rows with `q`.
fn rescored(data: &Data, q: &[f32], keys: &[u64]) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = keys
        .iter()
        .map(|&k| (dot(q, data.row(k as usize)), k))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(K).map(|(_, k)| k).collect()
}

/// A candidate tuned unfiltered and with one scope of ten, as one row of the table.
struct Tuned<'a> {
    data: &'a Data,
    truth: &'a [Vec<u64>],
    truth_f: &'a [Vec<u64>],
    target: f64,
    label: &'a str,
}

/// What a candidate's index holds: bytes in memory and on disk, where measured.
struct Sizes {
    mem: Option<u64>,
    disk: Option<u64>,
}

impl Sizes {
    fn of_usearch(index: &usearch::Index) -> Self {
        Self {
            mem: Some(index.memory_usage() as u64),
            disk: Some(index.serialized_length() as u64),
        }
    }
}

impl Tuned<'_> {
    /// Tunes the breadth (`breadths[0]` unfiltered, `breadths[1]` with one scope) until recall
    /// reaches the target, and makes the row.
    fn row(
        &self,
        build_s: f64,
        sizes: Sizes,
        breadths: [&[usize]; 2],
        set: &dyn Fn(usize) -> String,
        search: &SearchFn<'_>,
        note: String,
    ) -> Row {
        let (ef, all) = tune(
            self.label,
            Case::new(self.data, self.truth, false),
            self.target,
            breadths[0],
            set,
            search,
        );
        let (f_ef, one) = tune(
            self.label,
            Case::new(self.data, self.truth_f, true),
            self.target,
            breadths[1],
            set,
            search,
        );
        Row {
            name: self.label.into(),
            build_s,
            mem_bytes: sizes.mem,
            disk_bytes: sizes.disk,
            ef,
            recall: all.recall,
            p50_us: all.p50_us,
            p99_us: all.p99_us,
            f_ef,
            f_recall: Some(one.recall),
            f_p50_us: one.p50_us,
            f_p99_us: one.p99_us,
            note,
        }
    }
}

/// Shortlists tried for the binary graph, in order, until recall@10 reaches the target.
const B1_SHORTLISTS: &[usize] = &[40, 80, 160, 320, 600, 1000, 2000];

/// The sign bits of `v`, packed eight to a byte, first component in the high bit (as the store's
/// graph packs them).
fn sign_bits(v: &[f32]) -> Vec<usearch::b1x8> {
    let mut bytes = vec![0u8; v.len().div_ceil(8)];
    for (i, x) in v.iter().enumerate() {
        if *x > 0.0 {
            bytes[i / 8] |= 0x80 >> (i % 8);
        }
    }
    bytes.into_iter().map(usearch::b1x8).collect()
}

/// usearch over sign bits (b1, Hamming), its shortlist rescored exactly on the f32 rows: the
/// store's `quantization = "b1"`. The tuned breadth is the shortlist (the walk's breadth is at
/// least the shortlist).
fn usearch_b1_row(data: &Data, truth: &[Vec<u64>], truth_f: &[Vec<u64>], target: f64) -> Row {
    use usearch::{MetricKind, ScalarKind};
    let index = usearch_index(data, MetricKind::Hamming, ScalarKind::B1);
    let build_s = usearch_build(&index, data, |key, row| index.add(key, &sign_bits(row)));
    let shortlist = std::cell::Cell::new(B1_SHORTLISTS[0]);
    let search = |q: &[f32], allowed: Option<Allowed<'_>>| -> Vec<u64> {
        let bits = sign_bits(q);
        let matches = match allowed {
            None => index.search(&bits, shortlist.get()),
            Some(a) => index.filtered_search(&bits, shortlist.get(), |key| a.allows(key)),
        }
        .expect("usearch search");
        rescored(data, q, &matches.keys)
    };
    let set = |n: usize| {
        shortlist.set(n);
        format!("shortlist={n}")
    };
    let note = format!(
        "Hamming over sign bits, filtered_search(predicate); the shortlist rescored on f32 rows (not counted in MiB); {}",
        index.hardware_acceleration()
    );
    let tuned = Tuned {
        data,
        truth,
        truth_f,
        target,
        label: "usearch b1+rescore",
    };
    tuned.row(
        build_s,
        Sizes::of_usearch(&index),
        [B1_SHORTLISTS, B1_SHORTLISTS],
        &set,
        &search,
        note,
    )
}

fn hnsw_rs_row(data: &Data, truth: &[Vec<u64>], truth_f: &[Vec<u64>], target: f64) -> Row {
    use hnsw_rs::prelude::{DistL2, Hnsw};
    let heap_before = live_heap_bytes();
    let t = Instant::now();
    let mut hnsw: Hnsw<'_, f32, DistL2> = Hnsw::new(M, data.n(), 16, EF_CONSTRUCTION, DistL2 {});
    let items: Vec<(&[f32], usize)> = (0..data.n()).map(|i| (data.row(i), i)).collect();
    hnsw.parallel_insert_slice(&items);
    hnsw.set_searching_mode(true);
    let build_s = t.elapsed().as_secs_f64();
    drop(items);
    let mem = live_heap_bytes().saturating_sub(heap_before);
    let ef_now = std::cell::Cell::new(64usize);
    let search = |q: &[f32], allowed: Option<Allowed<'_>>| -> Vec<u64> {
        let found = match allowed {
            None => hnsw.search(q, K, ef_now.get()),
            Some(a) => {
                let keep = |id: &usize| a.allows(*id as u64);
                hnsw.search_filter(q, K, ef_now.get(), Some(&keep))
            }
        };
        found.into_iter().map(|n| n.d_id as u64).collect()
    };
    let set = |ef: usize| {
        ef_now.set(ef);
        format!("ef={ef}")
    };
    let tuned = Tuned {
        data,
        truth,
        truth_f,
        target,
        label: "hnsw_rs",
    };
    let sizes = Sizes {
        mem: Some(mem),
        disk: None,
    };
    let note = "L2 (= cosine order on unit vectors), simdeez_f; search_filter(FilterT) inside the walk; mem = Rust heap growth over the build (counting allocator); built by parallel_insert_slice (rayon, 2 threads)".into();
    tuned.row(build_s, sizes, [EFS, EFS], &set, &search, note)
}

/// Opens an LMDB environment: heed marks it `unsafe` because the map must not be opened twice
/// in one process nor changed by another; the directory is a fresh temporary one.
#[allow(unsafe_code)]
fn open_lmdb(dir: &Path, map_size: usize) -> heed::Result<heed::Env> {
    // SAFETY: `dir` is a new temporary directory that nothing else opens.
    unsafe { heed::EnvOpenOptions::new().map_size(map_size).open(dir) }
}

fn arroy_row(
    data: &Data,
    truth: &[Vec<u64>],
    truth_f: &[Vec<u64>],
    target: f64,
) -> Result<Row, Box<dyn std::error::Error>> {
    use arroy::distances::Euclidean;
    use arroy::{Database, Reader, Writer};
    use rand::SeedableRng as _;
    let dir = tempfile::tempdir()?;
    let raw = data.base.len() * 4;
    let env = open_lmdb(dir.path(), (raw * 4).max(1 << 30).next_multiple_of(4096))?;
    let t = Instant::now();
    let db: Database<'static, Euclidean> = env
        .create_databases_and_commit(env.write_txn()?, |opener, wtxn| {
            opener
                .create_database(wtxn, None)
                .map(heed::CommitOrAbort::<_, ()>::Commit)
        })?
        .unwrap_commit();
    let mut wtxn = env.write_txn()?;
    let writer = Writer::<Euclidean>::new(db, 0, data.dim);
    for i in 0..data.n() {
        writer.add_item(&mut wtxn, i as u32, data.row(i))?;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    writer.builder(&mut rng).build(&mut wtxn)?;
    wtxn.commit()?;
    let build_s = t.elapsed().as_secs_f64();
    let disk = allocated_bytes(dir.path());

    let rtxn = env.read_txn()?;
    let reader = Reader::<Euclidean>::open(&rtxn, 0, db)?;
    let trees = reader.n_trees();
    let mut per_scope = vec![RoaringBitmap::new(); SCOPES];
    for (i, &s) in data.scope_of.iter().enumerate() {
        per_scope[s as usize].insert(i as u32);
    }
    let search_k = std::cell::Cell::new(K * trees);
    let search = |q: &[f32], allowed: Option<Allowed<'_>>| -> Vec<u64> {
        let mut query = reader.nns(K);
        query.search_k(NonZeroUsize::new(search_k.get()).expect("non-zero"));
        if let Some(a) = allowed {
            query.candidates(&per_scope[a.scope]);
        }
        query
            .by_vector(&rtxn, q)
            .expect("arroy search")
            .into_iter()
            .map(|(id, _)| u64::from(id))
            .collect()
    };
    let set = |mult: usize| {
        search_k.set(K * trees * mult);
        format!("search_k={}", K * trees * mult)
    };
    let tuned = Tuned {
        data,
        truth,
        truth_f,
        target,
        label: "arroy",
    };
    let sizes = Sizes {
        mem: None,
        disk: Some(disk),
    };
    let note = format!(
        "Euclidean, {trees} trees, LMDB memory-mapped (mem = page cache); filter = candidates(RoaringBitmap) of the scope (below 50% of items arroy scans the candidates exactly); disk = allocated blocks"
    );
    // Filtered: arroy's candidates bitmap is exact below half the items, so one breadth.
    Ok(tuned.row(
        build_s,
        sizes,
        [ARROY_SEARCH_K_MULT, &[1]],
        &set,
        &search,
        note,
    ))
}

// ---------------------------------------------------------------------------------------------
// Peers (Python): hnswlib, faiss

fn write_f32(path: &Path, v: &[f32]) -> std::io::Result<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes)
}

fn write_keys(path: &Path, rows: &[Vec<u64>]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(rows.len() * K * 8);
    for r in rows {
        for k in 0..K {
            let key = r.get(k).map(|&k| k as i64).unwrap_or(-1);
            bytes.extend_from_slice(&key.to_le_bytes());
        }
    }
    std::fs::write(path, bytes)
}

fn peers(
    data: &Data,
    truth: &[Vec<u64>],
    truth_f: &[Vec<u64>],
    params: &Params,
) -> Result<Vec<Row>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peer_hnswlib.py");
    if !params.peer_python.exists() {
        return Err(format!(
            "hnswlib/faiss peers: SKIPPED: no interpreter at {}; set it up with `bash scripts/setup-bench-peers.sh` (or point ZHIKU_ANN_PEER_PYTHON at a python with hnswlib==0.8.0)",
            params.peer_python.display()
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| e.to_string();
    write_f32(&dir.path().join("base.f32"), &data.base).map_err(io)?;
    write_f32(&dir.path().join("queries.f32"), &data.queries).map_err(io)?;
    std::fs::write(dir.path().join("scope_of.u8"), &data.scope_of).map_err(io)?;
    let query_scope: Vec<u8> = (0..data.nq()).map(|i| (i % SCOPES) as u8).collect();
    std::fs::write(dir.path().join("query_scope.u8"), &query_scope).map_err(io)?;
    write_keys(&dir.path().join("truth.i64"), truth).map_err(io)?;
    write_keys(&dir.path().join("truth_f.i64"), truth_f).map_err(io)?;
    let only = params.only.clone().unwrap_or_default().join(",");
    let output = Command::new(&params.peer_python)
        .arg(&script)
        .arg(dir.path())
        .args(["--dim", &data.dim.to_string()])
        .args(["--k", &K.to_string()])
        .args(["--m", &M.to_string()])
        .args(["--ef-construction", &EF_CONSTRUCTION.to_string()])
        .args(["--threads", &BUILD_THREADS.to_string()])
        .args(["--target", &params.target.to_string()])
        .args([
            "--efs",
            &EFS.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ])
        .args(["--only", &only])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            format!(
                "hnswlib peer: FAILED to start {}: {e}",
                params.peer_python.display()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "hnswlib peer: FAILED ({}); run `bash scripts/setup-bench-peers.sh`",
            output.status
        ));
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_owned();
        let u = |k: &str| v.get(k).and_then(|x| x.as_u64());
        rows.push(Row {
            name: s("name"),
            build_s: f("build_s"),
            mem_bytes: u("mem_bytes"),
            disk_bytes: u("disk_bytes"),
            ef: s("ef"),
            recall: f("recall"),
            p50_us: f("p50_us"),
            p99_us: f("p99_us"),
            f_ef: s("f_ef"),
            f_recall: v.get("f_recall").and_then(|x| x.as_f64()),
            f_p50_us: f("f_p50_us"),
            f_p99_us: f("f_p99_us"),
            note: s("note"),
        });
    }
    if rows.is_empty() {
        return Err("hnswlib peer: FAILED: no result lines".into());
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------------------------
// Report

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("-".into(), |b| {
        format!("{:.1}", b as f64 / (1024.0 * 1024.0))
    })
}

fn ratio(x: f64, peer: Option<f64>) -> String {
    match peer {
        Some(p) if p > 0.0 && x.is_finite() => format!("{:.2}", x / p),
        _ => "-".into(),
    }
}

fn table(data: &Data, params: &Params, rows: &[Row], skipped: &[String]) -> String {
    let peer = rows
        .iter()
        .find(|r| r.name.starts_with("hnswlib") && r.name.contains("tuned"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## set `{}`: N={} D={} queries={} (load now: {})",
        data.name,
        data.n(),
        data.dim,
        data.nq(),
        uptime()
    );
    let _ = writeln!(
        out,
        "ratios: candidate / hnswlib at the ef reaching recall {} (same vectors, same run){}",
        params.target,
        if peer.is_none() {
            " - no peer row, ratios omitted"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "| candidate | build s | mem MiB | disk MiB | ef | recall@10 | p50 us | p99 us | p50 x | p99 x | filtered ef | filtered recall | f p50 us | f p99 us | f p50 x | f p99 x |"
    );
    let _ = writeln!(out, "|{}", "---|".repeat(16));
    for r in rows {
        let (f_recall, f_p50, f_p99) = match r.f_recall {
            Some(fr) => (
                format!("{fr:.3}"),
                format!("{:.0}", r.f_p50_us),
                format!("{:.0}", r.f_p99_us),
            ),
            None => ("unsupported".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| {} | {:.1} | {} | {} | {} | {:.3} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.build_s,
            mib(r.mem_bytes),
            mib(r.disk_bytes),
            r.ef,
            r.recall,
            r.p50_us,
            r.p99_us,
            ratio(r.p50_us, peer.map(|p| p.p50_us)),
            ratio(r.p99_us, peer.map(|p| p.p99_us)),
            r.f_ef,
            f_recall,
            f_p50,
            f_p99,
            ratio(
                r.f_p50_us,
                peer.and_then(|p| p.f_recall.map(|_| p.f_p50_us))
            ),
            ratio(
                r.f_p99_us,
                peer.and_then(|p| p.f_recall.map(|_| p.f_p99_us))
            ),
        );
    }
    let _ = writeln!(
        out,
        "raw f32 vectors: {:.1} MiB",
        (data.base.len() * 4) as f64 / (1024.0 * 1024.0)
    );
    let notes: BTreeMap<&str, &str> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.note.as_str()))
        .collect();
    for (name, note) in notes {
        let _ = writeln!(out, "- {name}: {note}");
    }
    for s in skipped {
        let _ = writeln!(out, "- {s}");
    }
    out
}

fn uptime() -> String {
    Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "uptime unavailable".into())
}
