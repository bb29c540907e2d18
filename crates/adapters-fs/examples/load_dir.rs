//! What running the parsers in extraction workers costs a folder load: loads one folder with
//! the parsers in this process and in worker processes (this example re-run in worker mode),
//! alternating, and prints one JSON line per run and the ratio of the medians:
//!
//! ```text
//! cargo run --release -p zhiku-adapters-fs --example load_dir -- DIR [ROUNDS]
//! {"parsers":"in process","round":1,"documents":1000,"skipped":0,"s":0.41,"docs_per_s":2439.0}
//! {"parsers":"worker processes (…)","round":1,...}
//! {"summary":true,"in_process_docs_per_s":...,"workers_docs_per_s":...,"workers_vs_in_process":0.93}
//! ```
//!
//! Every file is read afresh in each run (no stamps are passed in; the extraction cache is a
//! new one per run).

use std::path::PathBuf;
use std::time::Instant;

use zhiku_adapters_fs::loader::{LoaderConfig, load_folder};
use zhiku_adapters_fs::worker::{Parsers, WORKER_ARG, WorkerLimits, serve};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(WORKER_ARG) {
        return serve(args.into_iter().skip(2), None);
    }
    let dir = PathBuf::from(args.get(1).expect("a folder"));
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let workers = Parsers::workers(
        std::env::current_exe()?,
        Vec::new(),
        WorkerLimits::default(),
    );
    let (mut here, mut there) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        for parsers in [Parsers::default(), workers.clone()] {
            let config = LoaderConfig {
                parsers: parsers.clone(),
                ..LoaderConfig::default()
            };
            let start = Instant::now();
            let loaded = load_folder(&dir, &config)?;
            let s = start.elapsed().as_secs_f64();
            let rate = loaded.documents.len() as f64 / s;
            println!(
                "{}",
                serde_json::json!({
                    "parsers": parsers.isolation(),
                    "round": round,
                    "documents": loaded.documents.len(),
                    "skipped": loaded.skipped.len(),
                    "s": (s * 1000.0).round() / 1000.0,
                    "docs_per_s": rate.round(),
                })
            );
            match parsers {
                Parsers::InProcess(_) => here.push(rate),
                Parsers::Workers(_) => there.push(rate),
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (h, t) = (median(&mut here), median(&mut there));
    println!(
        "{}",
        serde_json::json!({
            "summary": true,
            "in_process_docs_per_s": h.round(),
            "workers_docs_per_s": t.round(),
            "workers_vs_in_process": (t / h * 1000.0).round() / 1000.0,
        })
    );
    Ok(())
}
