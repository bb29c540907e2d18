//! Hostile files cannot take `zhiku` down: every format parser runs in an extraction worker
//! process, so a file that crashes, overflows, blows up or hangs a parser costs that one file.
//!
//! - A folder seeded with the attack files of `scripts/make-hostile-fixtures.py` beside good
//!   documents of every format: `index` finishes (exit 3), reports each attack file by path and
//!   reason, indexes everything else, `verify` passes, and `serve` starts on the same folder.
//! - A worker killed mid-file (the kill harness variant): while `index` runs over a folder with
//!   hostile files, its extraction workers are killed with `SIGKILL` at seeded moments; the
//!   parent never dies, reports the killed files as skipped, the store verifies, and the next
//!   `index` picks up what was skipped.
//! - A worker past its memory limit (`max_extract_memory`) is the file's reason, not the
//!   process's end.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Server, write, zhiku};

/// Runs the fixture script into `dir` (only `names` when given).
fn hostile_fixtures(dir: &Path, extra: &[&str]) {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-hostile-fixtures.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(extra)
        .output()
        .expect("python3 runs the fixture script");
    support::assert_succeeded(&out);
}

fn format_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/formats")
        .join(name)
}

/// Good documents of every format beside the attack files.
fn good_documents(kb: &Path, markdown: usize) {
    for name in [
        "en-guide.pdf",
        "zh-policy.docx",
        "zh-deck.pptx",
        "zh-sales.xlsx",
        "zh-manual.epub",
        "wiki-article.html",
        "zh-contacts.csv",
    ] {
        std::fs::copy(format_fixture(name), kb.join(name)).unwrap();
    }
    for i in 0..markdown {
        write(
            kb,
            &format!("notes/note-{i:03}.md"),
            &format!(
                "---\ntags: [a, b]\n---\n# 笔记 {i}\n\n第 {i} 条笔记：索引在解析失败时只跳过一个文件。\n"
            ),
        );
    }
}

fn index_json(kb: &Path, envs: &[(&str, &str)]) -> (Option<i32>, Value, String) {
    let mut cmd = zhiku(kb);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.args(["index", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("index --json: {e}: {stderr}"));
    (out.status.code(), v, stderr)
}

fn skipped(v: &Value) -> Vec<(String, String)> {
    v["skipped"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["path"].as_str().unwrap_or_default().to_string(),
                        s["reason"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The documents `zhiku documents --json` lists (one JSON line each).
fn document_count(kb: &Path) -> usize {
    let out = zhiku(kb).args(["documents", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["id"].is_string() || v["doc_id"].is_string())
        })
        .count()
}

fn verify_passes(kb: &Path) {
    let out = zhiku(kb).args(["verify", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
}

#[test]
fn a_folder_of_hostile_files_is_indexed_around_them() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = tmp.path().join("kb");
    std::fs::create_dir_all(&kb).unwrap();
    hostile_fixtures(&kb, &["--docx-mib", "64"]);
    good_documents(&kb, 20);
    // The server below reads the embedder from the folder's configuration.
    write(&kb, "zhiku.toml", "embedder = \"hashing\"\n");

    let started = Instant::now();
    let (code, v, stderr) = index_json(&kb, &[]);
    let took = started.elapsed();
    assert_eq!(code, Some(3), "finished with skipped files: {v}\n{stderr}");
    let skipped = skipped(&v);
    for attack in [
        "deep-objstm.pdf",
        "deep-array.pdf",
        "many-attributes.html",
        "yaml-bomb.md",
        "deep-flow.md",
        "far-ttl.md",
    ] {
        let hit = skipped.iter().find(|(p, _)| p == attack);
        assert!(
            hit.is_some_and(|(_, reason)| !reason.is_empty()),
            "{attack} is reported with a reason: {skipped:?}"
        );
    }
    // Nothing else was skipped: every good document of every format is indexed.
    let good_skipped: Vec<_> = skipped
        .iter()
        .filter(|(p, _)| {
            p.starts_with("notes/")
                || p.starts_with("en-")
                || p.starts_with("zh-")
                || p.starts_with("wiki-")
        })
        .collect();
    assert!(good_skipped.is_empty(), "{good_skipped:?}");
    eprintln!("hostile folder indexed in {took:?}; skipped: {skipped:#?}");
    verify_passes(&kb);
    assert!(document_count(&kb) >= 27, "every good document is listed");

    // The same folder again: the attack files are read again (they have no stamp) and skipped
    // again; the server starts over it and answers.
    let (code, _, _) = index_json(&kb, &[]);
    assert_eq!(code, Some(3));
    let mut server = Server::start(&kb, &[]);
    let reply = support::call("GET", &server.url("/healthz"), None, None);
    assert_eq!(reply.status, 200);
    server.terminate(Duration::from_secs(10));
}

/// The extraction workers of process `parent` (its children running the worker mode).
fn workers_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The parent pid is the fourth field, after the command in parentheses.
            let after = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("");
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && cmdline.windows(16).any(|w| w == b"__extract-worker")
        })
        .collect()
}

#[test]
fn killing_extraction_workers_mid_index_costs_files_never_the_indexer() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = tmp.path().join("kb");
    std::fs::create_dir_all(&kb).unwrap();
    hostile_fixtures(&kb, &["--docx-mib", "64"]);
    good_documents(&kb, 150);
    // More extraction work, so that kills land while files are being parsed.
    for i in 0..12 {
        for name in [
            "en-guide.pdf",
            "zh-handbook-outline-2col.pdf",
            "zh-policy.docx",
        ] {
            std::fs::copy(format_fixture(name), kb.join(format!("copy-{i:02}-{name}"))).unwrap();
        }
    }
    let mut rng = 0x5EED_0035u64;
    let mut next = |n: u64| {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rng >> 33) % n.max(1)
    };
    let mut kills = 0;
    let mut rounds = 0;
    while kills < 10 && rounds < 10 {
        rounds += 1;
        // Each round starts afresh, so every file is parsed again.
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("zhiku"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ZHIKU_EMBEDDER", "hashing")
            .arg("--kb")
            .arg(&kb)
            .args(["index", "--rebuild", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let parent = child.id();
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "index hangs");
            std::thread::sleep(Duration::from_millis(5 + next(40)));
            if next(3) == 0 {
                for pid in workers_of(parent) {
                    let _ = Command::new("sh")
                        .args(["-c", &format!("kill -9 {pid}")])
                        .status();
                    kills += 1;
                }
            }
        };
        assert!(
            matches!(status.code(), Some(0 | 3)),
            "the indexer itself never dies: {status:?}"
        );
        verify_passes(&kb);
    }
    eprintln!("{kills} extraction workers killed over {rounds} index runs; the indexer never died");
    assert!(kills > 0, "no worker was running to be killed");
    // Without kills, everything good is indexed (skipped files were read again).
    let (code, v, _) = index_json(&kb, &[]);
    assert_eq!(code, Some(3), "{v}");
    let skipped = skipped(&v);
    assert!(
        skipped
            .iter()
            .all(|(p, _)| !p.starts_with("notes/") && !p.starts_with("copy-")),
        "{skipped:?}"
    );
    verify_passes(&kb);
}

#[test]
fn a_worker_past_its_memory_limit_costs_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = tmp.path().join("kb");
    std::fs::create_dir_all(&kb).unwrap();
    // A Word file whose body inflates to 900 MiB of text runs, with the text and unpacking
    // bounds raised past it: only the worker's 1 GiB address space stops it.
    hostile_fixtures(&kb, &["--only", "bomb.docx", "--docx-mib", "900"]);
    good_documents(&kb, 3);
    let (code, v, stderr) = index_json(
        &kb,
        &[
            ("ZHIKU_MAX_EXTRACT_MEMORY", "1073741824"),
            ("ZHIKU_MAX_UNPACKED_BYTES", "4294967296"),
            ("ZHIKU_MAX_FILE_BYTES", "4294967296"),
        ],
    );
    assert_eq!(code, Some(3), "{v}\n{stderr}");
    let skipped = skipped(&v);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let (path, reason) = &skipped[0];
    assert_eq!(path, "bomb.docx");
    assert!(reason.contains("max_extract_memory"), "{reason}");
    verify_passes(&kb);
}
