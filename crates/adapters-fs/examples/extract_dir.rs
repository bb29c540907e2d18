//! Extracts every PDF under a folder through the loader, one after the other on one thread,
//! and prints one JSON line per file, then a summary line (used by `bench/formats/run.sh`):
//!
//! ```text
//! cargo run --release -p zhiku-adapters-fs --example extract_dir -- DIR
//! {"file":"a.pdf","pages":12,"ms":35.2,"text_per_page":["...", ...]}
//! {"file":"b.pdf","error":"..."}
//! {"summary":true,"files":2,"errors":1,"pages":12,"wall_s":0.04,"pages_per_s":300.0,"peak_rss_kb":20480}
//! ```
//!
//! Pages are the document content split on the form feed the loader puts between them.
//!
//! `--workers` runs the parsers in extraction worker processes, as the `zhiku` binary does
//! (this example re-run in worker mode), instead of in this process: the two runs over the
//! same folder measure what the isolation costs.
use std::path::{Path, PathBuf};

fn pdfs(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            pdfs(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() -> anyhow::Result<()> {
    use zhiku_adapters_fs::worker::{Parsers, WORKER_ARG, WorkerLimits, serve};
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(WORKER_ARG) {
        return serve(args.into_iter().skip(2), None);
    }
    let workers = args.iter().any(|a| a == "--workers");
    let dir = PathBuf::from(
        args.iter()
            .skip(1)
            .find(|a| !a.starts_with("--"))
            .expect("a folder"),
    );
    let mut files = Vec::new();
    pdfs(&dir, &mut files)?;
    let mut config = zhiku_adapters_fs::loader::LoaderConfig::default();
    if workers {
        config.parsers = Parsers::workers(
            std::env::current_exe()?,
            Vec::new(),
            WorkerLimits::default(),
        );
    }
    let start = std::time::Instant::now();
    let (mut pages_total, mut errors) = (0usize, 0usize);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for path in &files {
        let rel = path
            .strip_prefix(&dir)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        let t = std::time::Instant::now();
        let line = match zhiku_adapters_fs::loader::load_path(path, &rel, &config) {
            Ok(doc) => {
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                let pages: Vec<&str> = doc.content().split('\u{c}').collect();
                pages_total += pages.len();
                serde_json::json!({
                    "file": rel,
                    "pages": pages.len(),
                    "ms": (ms * 100.0).round() / 100.0,
                    "text_per_page": pages,
                })
            }
            Err(e) => {
                errors += 1;
                serde_json::json!({
                    "file": rel,
                    "ms": t.elapsed().as_secs_f64() * 1000.0,
                    "error": format!("{e:#}"),
                })
            }
        };
        std::io::Write::write_all(&mut out, format!("{line}\n").as_bytes())?;
    }
    let wall = start.elapsed().as_secs_f64();
    let summary = serde_json::json!({
        "summary": true,
        "files": files.len(),
        "errors": errors,
        "pages": pages_total,
        "wall_s": (wall * 1000.0).round() / 1000.0,
        "pages_per_s": if wall > 0.0 { (pages_total as f64 / wall * 10.0).round() / 10.0 } else { 0.0 },
        "peak_rss_kb": peak_rss_kb(),
        "parsers": config.parsers.isolation(),
    });
    std::io::Write::write_all(&mut out, format!("{summary}\n").as_bytes())?;
    Ok(())
}
