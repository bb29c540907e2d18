//! `zhiku serve` benchmark on CMRC 2018 dev: what the HTTP layer costs over calling the service
//! in process (the baseline, measured in the same run), and what an ingest does to searches.
//!
//! ```text
//! cargo bench -p zhiku --bench serve                    # 848 passages, 400 questions
//! cargo bench -p zhiku --bench serve -- --queries 100   # fewer questions
//! ```
//!
//! The knowledge base is the CMRC passages written as Markdown files (store on disk, hashing
//! embedder: the dense route's cost without a model). Figures: search latency p50/p99 in
//! process (`KnowledgeBase::search`) and over HTTP (`zhiku serve`, one client, keep-alive),
//! throughput with 4 concurrent HTTP clients, and HTTP search latency while documents are being
//! ingested over `POST /v1/documents`, against the idle figure.

mod common;

use common::{default_cmrc, percentile};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use zhiku_app::config::Config;
use zhiku_app::wiring::store::{Origin, Purpose, Store};
use zhiku_domain::usecases::RetrievalMode;
use zhiku_eval::beir::load_beir;
use zhiku_service::{Caller, SearchQuery};

fn summary(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 50.0), percentile(&ms, 99.0))
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(kb: &Path) -> Server {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(env!("CARGO_BIN_EXE_zhiku"))
        .arg("--kb")
        .arg(kb)
        .args(["serve", "--bind", "127.0.0.1:0", "--no-refresh"])
        .env("ZHIKU_BENCH_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zhiku serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap());
    let base = loop {
        let mut line = String::new();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "zhiku serve exited"
        );
        if let Some(rest) = line.split("serving ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || {
        let _ = lines.read_to_string(&mut String::new());
    });
    Server(child, base)
}

const TOKEN: &str = "bench-token";
const AUTH: &str = "Bearer bench-token";

fn http_search(agent: &ureq::Agent, base: &str, q: &str) -> f64 {
    let t = Instant::now();
    let r = agent
        .post(&format!("{base}/v1/search"))
        .set("authorization", AUTH)
        .send_json(json!({"query": q, "k": 10}))
        .expect("search");
    let _ = r.into_string().unwrap();
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let data = arg("--beir").map_or_else(default_cmrc, PathBuf::from);
    let n_queries: usize = arg("--queries").map_or(400, |v| v.parse().unwrap());
    let set = load_beir(&data)?;
    let tmp = tempfile::tempdir()?;
    let kb = tmp.path().join("kb");
    std::fs::create_dir_all(&kb)?;
    for p in &set.corpus {
        let id = p.id.replace('/', "_");
        std::fs::write(
            kb.join(format!("{id}.md")),
            format!(
                "---\nid: {}\ntitle: \"{}\"\n---\n{}\n",
                p.id,
                p.title.replace('"', "'"),
                p.text
            ),
        )?;
    }
    std::fs::write(
        kb.join("zhiku.toml"),
        "embedder = \"hashing\"\nvectors = \"file\"\nlexical = \"disk\"\n[serve]\nmax_concurrent = 64\n\
         [[serve.tokens]]\nname = \"bench\"\nenv = \"ZHIKU_BENCH_TOKEN\"\nscopes = [\"default\", \"public\"]\nwrite = true\n",
    )?;
    let queries: Vec<String> = set
        .queries
        .iter()
        .take(n_queries)
        .map(|q| q.text.clone())
        .collect();

    // Index once, in process; the same store is then served.
    let config = Config::resolve(Some(&kb.join("zhiku.toml")), None, &|_| None)?;
    let store = Store::open(
        &kb.join(".zhiku"),
        config.clone(),
        Purpose::Write,
        Some(&kb),
    )?;
    let t = Instant::now();
    let (service, _) = zhiku_app::wiring::open_service(
        store,
        Some(Origin::Folder {
            root: std::fs::canonicalize(&kb)?,
        }),
    )?;
    let index_s = t.elapsed().as_secs_f64();
    let caller = Caller::local(config.scopes.clone());
    let query = |q: &str| SearchQuery {
        query: q.to_string(),
        k: Some(10),
        mode: RetrievalMode::Hybrid,
        metadata: Vec::new(),
        locale: None,
        request_id: None,
    };
    for q in queries.iter().take(20) {
        service.search(&caller, &query(q)).unwrap();
    }
    let mut in_process = Vec::new();
    for q in &queries {
        let t = Instant::now();
        service.search(&caller, &query(q)).unwrap();
        in_process.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    drop(service);

    let server = start(&kb);
    let base = server.1.clone();
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    for q in queries.iter().take(20) {
        http_search(&agent, &base, q);
    }
    let http: Vec<f64> = queries
        .iter()
        .map(|q| http_search(&agent, &base, q))
        .collect();

    // Four clients at once.
    let t = Instant::now();
    let queries = Arc::new(queries);
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (queries, base) = (queries.clone(), base.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                for q in queries.iter().skip(w).step_by(4) {
                    http_search(&agent, &base, q);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let concurrent_qps = queries.len() as f64 / t.elapsed().as_secs_f64();

    // Searches while documents are ingested.
    let done = Arc::new(AtomicBool::new(false));
    let searcher = {
        let (queries, base, done) = (queries.clone(), base.clone(), done.clone());
        std::thread::spawn(move || {
            let agent = ureq::AgentBuilder::new().build();
            let mut ms = Vec::new();
            for q in queries.iter().cycle() {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                ms.push(http_search(&agent, &base, q));
            }
            ms
        })
    };
    let ingest_docs = 50;
    let t = Instant::now();
    for (i, p) in set.corpus.iter().take(ingest_docs).enumerate() {
        agent
            .post(&format!("{base}/v1/documents"))
            .set("authorization", AUTH)
            .send_json(json!({"id": format!("ingest-{i}"), "title": p.title, "text": format!("{}\n\n（新版）", p.text)}))
            .expect("ingest");
    }
    let ingest_s = t.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let during = searcher.join().unwrap();

    let (ip50, ip99) = summary(in_process);
    let (hp50, hp99) = summary(http);
    let (dp50, dp99) = summary(during.clone());
    println!(
        "serve benchmark: {} passages, {} questions, hashing embedder, store on disk",
        set.corpus.len(),
        queries.len()
    );
    println!("  index (in process):        {index_s:.1} s");
    println!("  search in process:         p50 {ip50:.2} ms  p99 {ip99:.2} ms   (baseline)");
    println!(
        "  search over HTTP:          p50 {hp50:.2} ms  p99 {hp99:.2} ms   ratio p50 {:.2}x",
        hp50 / ip50
    );
    println!(
        "  4 HTTP clients:            {concurrent_qps:.0} searches/s  ({:.2}x one client)",
        concurrent_qps / (1000.0 / hp50)
    );
    println!(
        "  during ingest:             p50 {dp50:.2} ms  p99 {dp99:.2} ms   ratio p50 {:.2}x idle HTTP ({} searches)",
        dp50 / hp50,
        during.len()
    );
    println!(
        "  ingest over HTTP:          {ingest_docs} documents in {ingest_s:.2} s ({:.1} docs/s)",
        ingest_docs as f64 / ingest_s
    );
    Ok(())
}
