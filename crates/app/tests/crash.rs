//! No crash or operator mistake may wedge or corrupt a store.
//!
//! - The kill harness: `kill -9` of the real `zhiku index` at seeded random moments of a
//!   few-hundred-document build, and of `zhiku serve` during HTTP ingests. After every kill the
//!   first `zhiku verify` passes, a re-index succeeds, the store's documents are the folder's
//!   files, and no acknowledged ingest is lost. The figures go to stderr.
//! - The store lock: a second writer (`index --rebuild` beside `serve`) is refused and the
//!   server's store stays whole; read-only commands work beside the server.
//! - A read-only store folder: read-only commands work, a write says what is read-only.
//! - Repair after a crash between the index commits and the manifest is complete in one open.
//!
//! Everything runs with the hashing embedder on disk (tantivy, vector file): no model needed.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Rng, Server, two_scope_kb};

/// A search of the committed state in scope alpha that finds `alpha-returns`.
const SEARCH_ALPHA: &[&str] = &[
    "search",
    "退货期限",
    "--no-refresh",
    "--json",
    "--scope",
    "alpha",
];

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("zhiku")
}

/// `zhiku --kb KB` with a clean environment and the hashing embedder.
fn zhiku_with(bin: &Path, kb: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ZHIKU_EMBEDDER", "hashing")
        // Builds run in steps of 32 documents, so kills land between steps as well as in one.
        .env("ZHIKU_INDEX_BATCH", "32")
        .arg("--kb")
        .arg(kb)
        .stdin(Stdio::null());
    cmd
}

fn zhiku(kb: &Path) -> Command {
    zhiku_with(&bin(), kb)
}

fn run(kb: &Path, args: &[&str]) -> Output {
    zhiku(kb).args(args).output().expect("run zhiku")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Straight to stderr: the figures show even when the harness captures test output.
fn figures(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

const ZH: [&str; 8] = [
    "知识库把每篇文档切成带标题路径的片段。",
    "检索在排序之前先应用可信的范围过滤。",
    "增量索引只嵌入新出现的片段，旧片段沿用原来的向量。",
    "回答中的每个引用都必须指向本轮检索到的证据。",
    "清单文件在两个索引提交之后才被原子地替换。",
    "崩溃之后打开存储时，会按清单修复两个索引。",
    "词法检索使用结巴分词和 BM25 打分。",
    "融合把稠密检索和词法检索的排名合在一起。",
];

const EN: [&str; 8] = [
    "The indexer skips documents whose fingerprint did not change.",
    "Reciprocal rank fusion merges the dense and lexical lists.",
    "A store lock keeps a second writer out while the first one runs.",
    "Every citation must point at evidence retrieved in this round.",
    "The manifest is replaced by a rename after both indexes committed.",
    "Opening the store after a crash repairs both indexes from the manifest.",
    "Stray segment files of a killed writer are collected before writing.",
    "Read-only commands read the last committed state of the store.",
];

/// Document `i` at `version`: a few Chinese and English paragraphs.
fn doc_text(i: usize, version: u64) -> String {
    let mut s = format!("---\nid: doc-{i:04}\n---\n# 文档 {i} · Document {i}\n\n");
    for p in 0..(2 + i % 4) {
        s.push_str(ZH[(i + p + version as usize) % ZH.len()]);
        s.push(' ');
        s.push_str(EN[(i * 3 + p) % EN.len()]);
        s.push_str(&format!(" 编号 {i}-{p}，版本 v{version}。\n\n"));
    }
    s
}

fn doc_path(kb: &Path, i: usize) -> PathBuf {
    kb.join(format!("part-{}/doc-{i:04}.md", i % 7))
}

fn write_doc(kb: &Path, i: usize, version: u64) {
    let path = doc_path(kb, i);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, doc_text(i, version)).unwrap();
}

/// The catalog's documents: id → source path.
fn manifest_sources(kb: &Path) -> BTreeMap<String, String> {
    let stored = support::stored_catalog(&kb.join(".zhiku"));
    let docs: BTreeSet<String> = stored.catalog.docs.keys().map(|d| d.to_string()).collect();
    let sources: BTreeMap<String, String> = stored
        .sources
        .iter()
        .map(|(k, p)| (k.to_string(), p.clone()))
        .collect();
    assert_eq!(
        docs,
        sources.keys().cloned().collect::<BTreeSet<_>>(),
        "the catalog's documents and sources list the same documents"
    );
    sources
}

/// The documents the folder holds: id → relative path.
fn folder_docs(kb: &Path, live: &BTreeMap<usize, u64>) -> BTreeMap<String, String> {
    live.keys()
        .map(|i| {
            let rel = doc_path(Path::new(""), *i).to_string_lossy().into_owned();
            (format!("doc-{i:04}"), rel)
        })
        .filter(|(_, rel)| kb.join(rel).exists())
        .collect()
}

#[test]
fn kill_9_of_index_at_random_moments_never_wedges_or_corrupts_the_store() {
    const DOCS: usize = 300;
    const KILLS: usize = 20;
    let tmp = tempfile::tempdir().unwrap();
    let kb = tmp.path().join("kb");
    let mut live: BTreeMap<usize, u64> = BTreeMap::new();
    for i in 0..DOCS {
        write_doc(&kb, i, 0);
        live.insert(i, 0);
    }
    let started = Instant::now();
    let out = run(&kb, &["index", "--json"]);
    let full = started.elapsed();
    assert!(out.status.success(), "{}", text(&out));
    let mut last_run = full;

    let mut rng = Rng(0x5EED_0013);
    let mut next_new = DOCS;
    let (mut mid_run, mut consistent_first, mut lost) = (0, 0, 0);
    let (mut repaired, mut swept, mut rounds) = (0, 0, 0);
    // Until KILLS kills have landed while the index ran (a kill after it finished proves less).
    while mid_run < KILLS && rounds < 2 * KILLS {
        let round = rounds;
        rounds += 1;
        // Change the folder: edits, deletions and additions, so the run writes deletes into
        // committed segments (the `.del` files a kill leaves behind) as well as new segments.
        let rebuild = round % 5 == 4;
        for _ in 0..(5 + rng.below(25)) {
            let keys: Vec<usize> = live.keys().copied().collect();
            let i = keys[rng.below(keys.len() as u64) as usize];
            match rng.below(10) {
                0 => {
                    std::fs::remove_file(doc_path(&kb, i)).unwrap();
                    live.remove(&i);
                }
                1 => {
                    write_doc(&kb, next_new, 0);
                    live.insert(next_new, 0);
                    next_new += 1;
                }
                _ => {
                    let v = live[&i] + 1;
                    write_doc(&kb, i, v);
                    live.insert(i, v);
                }
            }
        }
        let span = if rebuild { full } else { last_run };
        let delay = Duration::from_millis(rng.below(span.as_millis() as u64 * 9 / 10 + 1));
        let mut args = vec!["index", "--json"];
        if rebuild {
            args.push("--rebuild");
        }
        let mut child = zhiku(&kb)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            mid_run += 1;
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();

        // The first verify after the kill passes (repairing what the kill left).
        let out = run(&kb, &["verify"]);
        if out.status.success() {
            consistent_first += 1;
        } else {
            figures(&format!(
                "round {round}: the first verify failed:\n{}",
                text(&out)
            ));
        }
        let said = String::from_utf8_lossy(&out.stdout);
        if said.contains("repaired on open") {
            repaired += 1;
        }
        if said.contains("stray lexical-index files removed") {
            swept += 1;
        }
        // A re-index succeeds and the store's documents are the folder's files.
        let started = Instant::now();
        let out = run(&kb, &["index", "--json"]);
        last_run = started.elapsed();
        assert!(
            out.status.success(),
            "round {round}: re-index after a kill at {delay:?}: {}",
            text(&out)
        );
        let stored = manifest_sources(&kb);
        let files = folder_docs(&kb, &live);
        lost += files.keys().filter(|k| !stored.contains_key(*k)).count();
        assert_eq!(
            stored, files,
            "round {round}: the store's documents are the folder's files"
        );
    }
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
    let status: Value = serde_json::from_slice(&run(&kb, &["status", "--json"]).stdout).unwrap();
    assert_eq!(status["documents"].as_u64().unwrap() as usize, live.len());
    figures(&format!(
        "crash harness (index): {rounds} kill -9 of `zhiku index` ({mid_run} while it ran; full build of {DOCS} documents {:.2} s), {consistent_first} of {rounds} first verifies consistent ({repaired} repaired on open, {swept} of them removing a killed writer's stray files), {lost} documents lost",
        full.as_secs_f64()
    ));
    assert_eq!(consistent_first, rounds, "every first verify passes");
    assert!(
        mid_run >= KILLS,
        "{KILLS} kills landed while the index ran ({mid_run} in {rounds} rounds)"
    );
}

/// A build runs in steps (`index_batch` documents each, both indexes committed and the catalog
/// saved per step): a kill -9 between two steps keeps the steps that finished, the first verify
/// passes, and the next run indexes only the rest (the finished steps' files are recognised by
/// their stamps).
#[test]
fn a_build_killed_between_its_steps_keeps_them_and_the_next_run_indexes_only_the_rest() {
    const DOCS: usize = 300;
    for attempt in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let kb = tmp.path().join("kb");
        for i in 0..DOCS {
            write_doc(&kb, i, 0);
        }
        let mut child = zhiku(&kb)
            .env("ZHIKU_INDEX_BATCH", "8")
            .arg("index")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill as soon as a reader sees a finished step.
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen = 0;
        while seen == 0 && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            let out = run(&kb, &["status", "--json"]);
            if let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) {
                seen = v["documents"].as_u64().unwrap_or(0) as usize;
            }
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let kept = if kb.join(".zhiku/catalog.sqlite").exists() {
            manifest_sources(&kb).len()
        } else {
            0
        };
        if seen == 0 || kept >= DOCS {
            continue; // the kill came before the first step or after the last: again
        }
        assert!(
            kept >= seen,
            "a finished step is never undone ({kept} < {seen})"
        );
        assert_eq!(kept % 8, 0, "whole steps are kept ({kept} documents)");
        let out = run(&kb, &["verify"]);
        assert!(
            out.status.success(),
            "the first verify passes: {}",
            text(&out)
        );
        let out = run(&kb, &["index", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        let line = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(line.lines().last().unwrap_or("")).unwrap();
        assert_eq!(
            v["docs_added"],
            DOCS - kept,
            "only the rest is indexed: {v}"
        );
        assert_eq!(v["docs_changed"], 0, "{v}");
        assert_eq!(
            v["docs_unchanged"], kept,
            "the kept steps are recognised: {v}"
        );
        assert_eq!(manifest_sources(&kb).len(), DOCS);
        figures(&format!(
            "steps: a build of {DOCS} documents in steps of 8 killed after {kept} were recorded (attempt {attempt}); the next run added {} and skipped {kept}",
            DOCS - kept
        ));
        return;
    }
    panic!("in 10 attempts no kill landed between two steps of a build");
}

/// Every writer records both indexes' commit generations with the catalog — an ingest over
/// HTTP too, through the serving layer's metric wrappers — so the next writing open compares
/// two numbers instead of listing every chunk. And an `index` run that wrote leaves the vector
/// graph's snapshot at its last commit, even for a change too small for the snapshot policy
/// (10 % of the rows): the next open replays nothing; so does a server stopped cleanly after
/// ingests.
#[test]
fn writers_record_the_generations_and_an_index_run_leaves_nothing_to_replay() {
    use zhiku_adapters_usearch::{AnnOptions, AnnVectorIndex, GraphSource};
    use zhiku_domain::ports::Embedder;
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    for i in 0..60 {
        write_doc(&kb, i, 0);
    }
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));
    write_doc(&kb, 60, 0);
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));

    let store = kb.join(".zhiku");
    let space = zhiku_adapters_memory::HashingEmbedder::new(384)
        .unwrap()
        .space()
        .clone();
    let ann = AnnVectorIndex::open_read_only(&store, space.clone(), AnnOptions::default()).unwrap();
    match ann.last_open().graph {
        GraphSource::Snapshot {
            replayed_rows,
            replayed_deletes,
            ..
        } => assert_eq!((replayed_rows, replayed_deletes), (0, 0)),
        other => panic!("the open used no snapshot: {other:?}"),
    }
    drop(ann);

    let indexed = support::stored_catalog(&store).generations;
    assert!(
        indexed.lexical.is_some() && indexed.vectors.is_some(),
        "{indexed:?}"
    );
    let mut server = Server::start(&kb, &[]);
    assert_eq!(post_document(&server.base, "served-1"), Some(201));
    let served = support::stored_catalog(&store).generations;
    assert!(
        served.lexical > indexed.lexical && served.vectors > indexed.vectors,
        "an ingest over HTTP records both generations: {indexed:?} -> {served:?}"
    );
    // A server stopped cleanly after ingests leaves nothing to replay either.
    let status = server.terminate(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let ann = AnnVectorIndex::open_read_only(&store, space, AnnOptions::default()).unwrap();
    match ann.last_open().graph {
        GraphSource::Snapshot { replayed_rows, .. } => assert_eq!(replayed_rows, 0),
        other => panic!("the open used no snapshot: {other:?}"),
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(20))
        .build()
}

/// POSTs a document; `Some(status)` when the server answered, `None` when the connection failed.
fn post_document(base: &str, id: &str) -> Option<u16> {
    let body = json!({
        "id": id,
        "scope": "alpha",
        "text": format!("# 文档 {id}\n\n{} {} 标记 {id}。\n", ZH[id.len() % ZH.len()], EN[id.len() % EN.len()]),
    });
    match agent()
        .post(&format!("{base}/v1/documents"))
        .set("authorization", "Bearer tok-a")
        .send_json(body)
    {
        Ok(r) => Some(r.status()),
        Err(ureq::Error::Status(code, _)) => Some(code),
        Err(_) => None,
    }
}

fn document_status(base: &str, id: &str) -> u16 {
    match agent()
        .get(&format!("{base}/v1/documents/{id}"))
        .set("authorization", "Bearer tok-a")
        .call()
    {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(code, _)) => code,
        Err(e) => panic!("GET {id}: {e}"),
    }
}

#[test]
fn kill_9_of_serve_during_ingests_loses_no_acknowledged_document() {
    const KILLS: usize = 20;
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    let mut rng = Rng(0x5EED_5E7E);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (mut consistent_first, mut lost, mut mid_ingest) = (0, 0, 0);
    for round in 0..=KILLS {
        let server = Server::start(&kb, &[]);
        // Everything acknowledged before an earlier kill is served after the restart.
        for id in acked.lock().unwrap().iter() {
            if document_status(&server.base, id) != 200 {
                lost += 1;
                figures(&format!("round {round}: acknowledged {id} is gone"));
            }
        }
        if round == KILLS {
            break;
        }
        // Two clients, so an ingest is in flight whenever the kill lands.
        let ingests: Vec<_> = (0..2)
            .map(|client| {
                let base = server.base.clone();
                let sink = Arc::clone(&acked);
                std::thread::spawn(move || {
                    let mut sent = 0usize;
                    loop {
                        let id = format!("r{round}-c{client}-n{sent}");
                        match post_document(&base, &id) {
                            Some(code) if (200..300).contains(&code) => {
                                sink.lock().unwrap().push(id)
                            }
                            Some(code) => panic!("POST {id} answered {code}"),
                            None => return sent,
                        }
                        sent += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200 + rng.below(1200)));
        drop(server); // kill -9
        let sent: usize = ingests.into_iter().map(|t| t.join().unwrap()).sum();
        if sent > 0 {
            mid_ingest += 1;
        }
        let out = run(&kb, &["verify"]);
        if out.status.success() {
            consistent_first += 1;
        } else {
            figures(&format!(
                "round {round}: the first verify failed:\n{}",
                text(&out)
            ));
        }
        let stored = manifest_sources(&kb);
        for id in acked.lock().unwrap().iter() {
            // An acknowledged ingest is in the manifest itself, not only re-indexable from
            // its file: the answer came after file, indexes and manifest were written.
            if !stored.contains_key(id) {
                lost += 1;
                figures(&format!(
                    "round {round}: acknowledged {id} is missing from the manifest after the kill"
                ));
            }
        }
    }
    let acked = acked.lock().unwrap().len();
    figures(&format!(
        "crash harness (serve): {KILLS} kill -9 of `zhiku serve` during ingests ({mid_ingest} after at least one acknowledged ingest), {acked} ingests acknowledged, {consistent_first} of {KILLS} first verifies consistent, {lost} acknowledged documents lost"
    ));
    assert_eq!(lost, 0);
    assert_eq!(consistent_first, KILLS);
    assert!(
        mid_ingest >= KILLS / 2 && acked > KILLS,
        "the kills landed among ingests ({mid_ingest} of {KILLS}, {acked} acknowledged)"
    );
}

fn hits(out: &Output) -> Vec<String> {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["evidence"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["doc_id"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_second_writer_is_refused_while_serve_runs_and_readers_read_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    let server = Server::start(&kb, &[]);
    let before = support::stored_catalog(&kb.join(".zhiku"));

    // `index --rebuild` beside the server: refused before anything is deleted.
    for args in [&["index", "--rebuild"][..], &["index"][..]] {
        let out = run(&kb, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is being written by another process (pid"),
            "{stderr}"
        );
    }
    assert_eq!(support::stored_catalog(&kb.join(".zhiku")), before);
    assert!(kb.join(".zhiku/writer.lock").exists());

    // Read-only commands work beside the server and read its committed state.
    let out = run(&kb, &["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["documents"], 4, "{status}");
    let out = run(&kb, &["verify", "--read-only"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("without repairing"),
        "{}",
        text(&out)
    );
    let out = run(&kb, SEARCH_ALPHA);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        hits(&out).contains(&"alpha-returns".to_string()),
        "{}",
        text(&out)
    );
    // A refreshing search cannot write now: it says so and reads the committed state.
    let out = run(&kb, &["search", "退货期限", "--json", "--scope", "alpha"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not refreshed"),
        "{}",
        text(&out)
    );
    assert!(hits(&out).contains(&"alpha-returns".to_string()));

    // The server's store is intact: it still ingests and serves, and a reader sees the ingest.
    assert_eq!(post_document(&server.base, "after-rebuild"), Some(201));
    assert_eq!(document_status(&server.base, "after-rebuild"), 200);
    assert_eq!(document_status(&server.base, "alpha-returns"), 200);
    let out = run(&kb, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["documents"], 5, "{status}");

    // Readers beside ingests in progress: each sees a consistent committed state.
    // Two clients keep the server writing while the readers run.
    let ingests: Vec<_> = (0..2)
        .map(|client| {
            let base = server.base.clone();
            std::thread::spawn(move || {
                (0..20)
                    .filter(|n| post_document(&base, &format!("beside-{client}-{n}")) == Some(201))
                    .count()
            })
        })
        .collect();
    for _ in 0..8 {
        let out = run(&kb, &["verify", "--read-only"]);
        assert!(out.status.success(), "{}", text(&out));
        let out = run(&kb, SEARCH_ALPHA);
        assert!(out.status.success(), "{}", text(&out));
    }
    let acknowledged: usize = ingests.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(acknowledged, 40);
    drop(server);

    // Once the server is gone the lock is free: a writer gets it, and the store is consistent.
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&kb, &["index", "--rebuild", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["docs_added"], 45, "{v}");
}

/// A store left by a run that committed both indexes and died before replacing the manifest:
/// a document whose chunks partly changed, a new one, a deleted one.
#[test]
fn the_repair_after_a_crash_before_the_manifest_is_complete_in_one_open() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = tmp.path().join("kb");
    let long = |last: &str| {
        let mut s = String::from("---\nid: long\n---\n# 长文档\n\n");
        for i in 0..12 {
            s.push_str(&format!("第{i}段：{} {}\n\n", ZH[i % 8], EN[i % 8]));
        }
        s.push_str(last);
        s
    };
    std::fs::create_dir_all(&kb).unwrap();
    std::fs::write(kb.join("long.md"), long("最后一段。\n")).unwrap();
    for i in 0..5 {
        write_doc(&kb, i, 0);
    }
    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let old = support::stored_catalog(&kb.join(".zhiku"));
    std::fs::write(
        kb.join("long.md"),
        long("最后一段改写了：The last paragraph changed completely, so its chunk is new.\n"),
    )
    .unwrap();
    write_doc(&kb, 7, 0);
    std::fs::remove_file(doc_path(&kb, 2)).unwrap();
    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    support::restore_catalog(&kb.join(".zhiku"), &old);

    // The first verify repairs and passes, and says what it repaired.
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("repaired on open"), "{stdout}");
    assert!(
        stdout.contains("long"),
        "the requeued document is named: {stdout}"
    );
    let out = run(&kb, &["verify", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut live = BTreeMap::new();
    for i in [0, 1, 3, 4, 7] {
        live.insert(i, 0);
    }
    let mut expected = folder_docs(&kb, &live);
    expected.insert("long".into(), "long.md".into());
    assert_eq!(manifest_sources(&kb), expected);
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// Runs as the owner of nothing in the store: as root, `nobody` via setpriv (root ignores
/// permission bits); otherwise the current user, with the store's write bits removed.
struct ReadOnlyRunner {
    prefix: Vec<String>,
    bin: PathBuf,
}

fn is_root(probe: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(probe)
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

fn set_tree_mode(path: &Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            set_tree_mode(&e.unwrap().path(), dirs, files);
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(dirs)).unwrap();
    } else if meta.is_file() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(files)).unwrap();
    }
}

#[test]
fn read_only_commands_work_on_a_read_only_store_and_a_write_says_what_is_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));
    let store = kb.join(".zhiku");

    let runner = if is_root(&store) {
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(setpriv) = setpriv else {
            figures(
                "SKIPPED read_only_commands_work_on_a_read_only_store: running as root (which ignores permission bits) and no setpriv to drop to nobody",
            );
            return;
        };
        // nobody must reach the binary and the knowledge base: copy the binary in, open the
        // temporary folder for traversal.
        let copy = tmp.path().join("zhiku");
        std::fs::copy(bin(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        ReadOnlyRunner {
            prefix: vec![
                setpriv.into(),
                "--reuid=65534".into(),
                "--regid=65534".into(),
                "--clear-groups".into(),
            ],
            bin: copy,
        }
    } else {
        ReadOnlyRunner {
            prefix: Vec::new(),
            bin: bin(),
        }
    };
    set_tree_mode(&store, 0o555, 0o444);
    let ro = |args: &[&str]| -> Output {
        let inner = zhiku_with(&runner.bin, &kb);
        let mut cmd = match runner.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(inner.get_program()).args(inner.get_args());
                c.env_clear()
                    .env("PATH", std::env::var("PATH").unwrap_or_default())
                    .env("ZHIKU_EMBEDDER", "hashing");
                c
            }
            None => inner,
        };
        cmd.args(args).output().unwrap()
    };

    let out = ro(&["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["documents"], 4, "{status}");
    for args in [&["verify"][..], &["verify", "--read-only"][..]] {
        let out = ro(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    let out = ro(SEARCH_ALPHA);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        hits(&out).contains(&"alpha-returns".to_string()),
        "{}",
        text(&out)
    );
    let out = ro(&[
        "ask",
        "alpha 的退货期限是多久？",
        "--no-refresh",
        "--scope",
        "alpha",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // A write says what is read-only, and touches nothing.
    let out = ro(&["index"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("the store at {} is read-only", store.display())),
        "{stderr}"
    );
    set_tree_mode(&store, 0o755, 0o644);
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn verify_reports_a_killed_writers_stray_files_and_the_writing_open_removes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));
    let lexical = kb.join(".zhiku/lexical");
    // A delete bitset of a commit that never landed (its opstamp is past the committed one).
    let segment = std::fs::read_dir(&lexical)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".idx"))
        .expect("a committed segment");
    let stray = format!("{}.999999.del", &segment[..32]);
    std::fs::write(lexical.join(&stray), b"left by a killed writer").unwrap();

    let out = run(&kb, &["verify", "--read-only"]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("lexical/{stray} is not referenced")),
        "{}",
        text(&out)
    );
    assert!(
        lexical.join(&stray).exists(),
        "a read-only check touches nothing"
    );

    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "repaired on open: 1 stray lexical-index files removed ({stray})"
        )),
        "{}",
        text(&out)
    );
    assert!(!lexical.join(&stray).exists());
    let out = run(&kb, &["verify", "--read-only"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A delete killed after it moved the file aside but before the manifest was saved was never
/// acknowledged: the next writer puts the file back (the document stays), and removes an
/// unfinished write's temporary file.
#[test]
fn a_killed_deletes_moved_file_is_put_back_and_temporary_files_go() {
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::rename(
        kb.join("alpha/returns.md"),
        kb.join("alpha/.returns.md.4242-0.zhiku-deleted"),
    )
    .unwrap();
    std::fs::write(kb.join("alpha/.new.md.4242-1.zhiku-tmp"), "half a write").unwrap();
    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(kb.join("alpha/returns.md").exists());
    assert!(!kb.join("alpha/.returns.md.4242-0.zhiku-deleted").exists());
    assert!(!kb.join("alpha/.new.md.4242-1.zhiku-tmp").exists());
    assert!(manifest_sources(&kb).contains_key("alpha-returns"));
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// Turns the store of `kb` back into the layout of the versions before the SQLite catalog and
/// the ANN index: `manifest.json` and `vectors.bin` holding exactly what the current files
/// hold, and neither `catalog.sqlite` nor `vectors.sqlite`.
fn make_store_of_an_earlier_version(kb: &Path) {
    use zhiku_domain::ports::{CatalogStore, EmbeddedChunk, Embedder};
    let store = kb.join(".zhiku");
    let catalog = support::stored_catalog(&store);
    let space = zhiku_adapters_memory::HashingEmbedder::new(384)
        .unwrap()
        .space()
        .clone();
    let mut rows: Vec<EmbeddedChunk> = Vec::new();
    {
        let index = zhiku_adapters_usearch::AnnVectorIndex::open_read_only(
            &store,
            space.clone(),
            Default::default(),
        )
        .unwrap();
        index
            .export(100, |batch| {
                rows.extend(batch);
                Ok(())
            })
            .unwrap();
    }
    assert!(!rows.is_empty());
    zhiku_adapters_fs::vector_file::write(&store.join("vectors.bin"), &space, &rows).unwrap();
    for name in zhiku_adapters_usearch::FILES.iter().chain(&[
        "catalog.sqlite",
        "catalog.sqlite-wal",
        "catalog.sqlite-shm",
    ]) {
        let _ = std::fs::remove_file(store.join(name));
    }
    zhiku_adapters_fs::manifest::ManifestFile::in_store(&store)
        .save(&catalog)
        .unwrap();
}

/// A store an earlier version wrote (`manifest.json`, `vectors.bin`) is searched as it is by a
/// read-only command, and moved into the catalog database and the ANN index by the first
/// writing open — nothing embedded again, every document unchanged, the old files gone; a
/// crash after the move and before the removal leaves both, and the next open just removes the
/// old file.
#[test]
fn a_store_of_an_earlier_version_is_read_as_it_is_and_migrated_without_embedding() {
    use zhiku_domain::ports::Embedder;
    let tmp = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(tmp.path(), "", "");
    // What earlier versions' configurations said.
    let config = std::fs::read_to_string(kb.join("zhiku.toml")).unwrap();
    std::fs::write(
        kb.join("zhiku.toml"),
        config.replace("vectors = \"ann\"", "vectors = \"file\""),
    )
    .unwrap();
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));
    let dense: Vec<&str> = SEARCH_ALPHA
        .iter()
        .copied()
        .chain(["--mode", "dense"])
        .collect();
    let before = run(&kb, &dense);
    assert!(before.status.success(), "{}", text(&before));
    let expected = hits(&before);
    assert!(
        expected.contains(&"alpha-returns".to_string()),
        "{}",
        text(&before)
    );

    make_store_of_an_earlier_version(&kb);
    let store = kb.join(".zhiku");
    let out = run(&kb, &dense);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        hits(&out),
        expected,
        "read-only, from vectors.bin: {}",
        text(&out)
    );
    assert!(store.join("vectors.bin").exists() && store.join("manifest.json").exists());
    assert!(
        !store.join("vectors.sqlite").exists(),
        "a read-only open writes nothing"
    );

    let out = run(&kb, &["index", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["docs_unchanged"], 4, "{report}");
    assert_eq!(report["chunks_embedded"], 0, "{report}");
    for gone in ["vectors.bin", "manifest.json"] {
        assert!(!store.join(gone).exists(), "{gone} is still there");
    }
    assert!(store.join("vectors.sqlite").exists() && store.join("catalog.sqlite").exists());
    let out = run(&kb, &dense);
    assert_eq!(hits(&out), expected, "from the ANN index: {}", text(&out));
    let out = run(&kb, &["verify"]);
    assert!(out.status.success(), "{}", text(&out));

    // A crash between the move and the removal: the index already holds the vectors, so the
    // old file is only removed (the index's generation does not move).
    let space = zhiku_adapters_memory::HashingEmbedder::new(384)
        .unwrap()
        .space()
        .clone();
    let generation = || {
        zhiku_adapters_usearch::AnnVectorIndex::open_read_only(
            &store,
            space.clone(),
            Default::default(),
        )
        .unwrap()
        .generation()
    };
    let committed = generation();
    zhiku_adapters_fs::vector_file::write(&store.join("vectors.bin"), &space, &[]).unwrap();
    let out = run(&kb, &["index"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!store.join("vectors.bin").exists());
    assert_eq!(generation(), committed);
    let out = run(&kb, &dense);
    assert_eq!(hits(&out), expected, "{}", text(&out));
}
