//! End-to-end tests of the `zhiku` binary against temporary knowledge bases.
//!
//! They run the `local` profile (store on disk) with the hashing embedder, so that embedding
//! counts are real without a model.

use std::path::Path;

mod support;

use assert_cmd::Command;
use serde_json::{Value, json};
use support::zhiku;

fn write(kb: &Path, rel: &str, text: &str) {
    let path = kb.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn long_doc(last: &str) -> String {
    let mut s = String::from("---\nid: long\ntitle: 增量索引\nscope: public\n---\n# 增量索引\n\n");
    for i in 0..16 {
        s.push_str(&format!(
            "第{i}段：索引器先比较文档指纹，没有变化的文档被跳过；变化的文档只把新出现的片段送去嵌入，消失的片段从两个索引里删除，保留下来的片段沿用已经存好的向量。\n\n"
        ));
    }
    s.push_str(last);
    s
}

fn sample(kb: &Path) {
    write(kb, "long.md", &long_doc("最后一段。\n"));
    write(
        kb,
        "en/fusion.md",
        "---\ntitle: Fusion\ntags: [retrieval, rrf]\n---\n# Fusion\n\nReciprocal rank fusion merges the dense and lexical lists.\n",
    );
    write(
        kb,
        "notes.txt",
        "纯文本笔记：混合检索在融合之前应用可信的范围过滤。\n",
    );
    write(
        kb,
        "secret.md",
        "---\nid: secret\nscope: internal\n---\n# 内部\n\n内部发布清单，只有内部范围可见。\n",
    );
}

/// Runs `cmd`, which must succeed, and parses its standard output as JSON.
fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn index_json(kb: &Path) -> Value {
    json_of(zhiku(kb).args(["index", "--json"]))
}

/// The string fields `a` and `b` of every object in the JSON array `list`.
fn pairs(list: &Value, a: &str, b: &str) -> Vec<(String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o[a].as_str().unwrap().to_string(),
                o[b].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn status(kb: &Path) -> Value {
    json_of(zhiku(kb).args(["status", "--json"]))
}

#[test]
fn first_index_then_an_unchanged_reindex_embeds_nothing() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    let first = index_json(kb.path());
    assert_eq!(first["docs_added"], 4);
    let status = status(kb.path());
    let chunks = status["chunks"].as_u64().unwrap();
    assert_eq!(first["chunks_embedded"].as_u64().unwrap(), chunks);
    // Files are parsed in extraction workers, and status says so with their limits.
    assert!(
        status["extraction"]
            .as_str()
            .is_some_and(|e| e.starts_with("worker processes (4096 MiB")),
        "{status}"
    );
    let again = index_json(kb.path());
    assert_eq!(again["docs_unchanged"], 4);
    assert_eq!(again["chunks_embedded"], 0);
    assert_eq!(again["chunks_removed"], 0);
    zhiku(kb.path())
        .arg("index")
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "nothing changed: 0 chunks embedded",
        ));
}

#[test]
fn an_edited_paragraph_re_embeds_only_the_changed_chunks() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    index_json(kb.path());
    write(
        kb.path(),
        "long.md",
        &long_doc("最后一段改写了，内容完全不同，讨论删除文档时两个索引如何同时更新。\n"),
    );
    let edit = index_json(kb.path());
    assert_eq!(edit["docs_changed"], 1);
    assert_eq!(edit["docs_unchanged"], 3);
    let embedded = edit["chunks_embedded"].as_u64().unwrap();
    let reused = edit["chunks_reused"].as_u64().unwrap();
    assert!(
        (1..=2).contains(&embedded),
        "only the last window(s) change: {edit}"
    );
    assert!(reused >= 2, "earlier chunks keep their vectors: {edit}");
    zhiku(kb.path()).arg("verify").assert().success();
}

#[test]
fn a_deleted_file_disappears_from_both_indexes() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    index_json(kb.path());
    let before = status(kb.path())["chunks"].as_u64().unwrap();
    std::fs::remove_file(kb.path().join("en/fusion.md")).unwrap();
    let out = index_json(kb.path());
    assert_eq!(out["docs_removed"], 1);
    let removed = out["chunks_removed"].as_u64().unwrap();
    assert!(removed >= 1);
    assert_eq!(
        status(kb.path())["chunks"].as_u64().unwrap(),
        before - removed
    );
    zhiku(kb.path())
        .args(["verify", "--json"])
        .assert()
        .success()
        .stdout(predicates::str::contains("\"consistent\":true"));
    let out = zhiku(kb.path())
        .args([
            "search",
            "reciprocal rank fusion",
            "--json",
            "--mode",
            "hybrid",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["doc_id"] != "en/fusion.md"),
        "{v}"
    );
}

#[test]
fn bad_input_is_reported_by_path_and_the_rest_is_indexed() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    std::fs::write(kb.path().join("latin1.md"), b"caf\xe9 au lait\n").unwrap();
    std::fs::write(kb.path().join("binary.txt"), b"abc\x00def").unwrap();
    write(kb.path(), "big.md", &"大".repeat(4000));
    write(
        kb.path(),
        "broken-front.md",
        "---\ntitle: [unclosed\n---\nbody\n",
    );
    write(kb.path(), "dup-a.md", "---\nid: same\n---\nA\n");
    write(kb.path(), "dup-b.md", "---\nid: same\n---\nB\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(kb.path().join("missing.md"), kb.path().join("dangling.md"))
        .unwrap();
    let out = zhiku(kb.path())
        .env("ZHIKU_MAX_FILE_BYTES", "8000")
        .args(["index", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "skips exit with 3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["docs_added"], 4, "every good document is indexed: {v}");
    let skipped = pairs(&v["skipped"], "path", "reason");
    let reason = |p: &str| {
        skipped
            .iter()
            .find(|(path, _)| path == p)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("{p} not reported: {skipped:?}"))
    };
    assert!(reason("latin1.md").contains("UTF-8"));
    assert!(reason("binary.txt").contains("binary"));
    assert!(reason("big.md").contains("limit"));
    assert!(reason("broken-front.md").contains("front matter"));
    assert!(
        reason("dup-a.md").contains("dup-b.md"),
        "a duplicate names both files"
    );
    assert!(reason("dup-b.md").contains("dup-a.md"));
    #[cfg(unix)]
    assert!(reason("dangling.md").contains("broken symlink"));
    zhiku(kb.path()).arg("verify").assert().success();
}

#[test]
fn a_store_built_with_another_policy_is_refused_with_a_rebuild_hint() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    index_json(kb.path());
    zhiku(kb.path())
        .env("ZHIKU_MAX_CHARS", "300")
        .arg("index")
        .assert()
        .code(4)
        .stderr(predicates::str::contains("chunking policy"))
        .stderr(predicates::str::contains("max=480"))
        .stderr(predicates::str::contains("zhiku index --rebuild"));
    let out = zhiku(kb.path())
        .env("ZHIKU_MAX_CHARS", "300")
        .args(["index", "--rebuild", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["docs_added"], 4);
}

#[test]
fn a_manifest_left_behind_by_a_killed_process_is_detected_and_repaired() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    index_json(kb.path());
    let store = kb.path().join(".zhiku");
    let old = support::stored_catalog(&store);
    // The next run commits both indexes, then "dies" before saving the catalog.
    write(
        kb.path(),
        "new.md",
        "# 新文档\n\n一篇新加入的文档，用来模拟崩溃。\n",
    );
    std::fs::remove_file(kb.path().join("notes.txt")).unwrap();
    index_json(kb.path());
    support::restore_catalog(&store, &old);
    // Opening the store notices indexes that disagree with the manifest and repairs them.
    let out = zhiku(kb.path()).args(["index", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("repaired the store"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["docs_added"], 1, "the new document is indexed again: {v}");
    // The deleted document's chunks were already gone from the indexes: the repair dropped it
    // from the manifest, and it stays gone.
    assert_eq!(v["docs_removed"], 0, "{v}");
    let st = status(kb.path());
    assert_eq!(st["documents"], 4, "{st}");
    zhiku(kb.path())
        .args(["verify", "--json"])
        .assert()
        .success()
        .stdout(predicates::str::contains("\"consistent\":true"));
}

#[test]
fn search_prints_ranked_evidence_within_the_callers_scopes() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    let out = zhiku(kb.path())
        .args(["search", "内部发布清单", "--mode", "lexical", "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["doc_id"] != "secret"),
        "internal stays hidden by default"
    );
    let out = zhiku(kb.path())
        .args(["search", "内部发布清单", "--scope", "internal", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let top = &v["evidence"][0];
    assert_eq!(top["doc_id"], "secret");
    assert!(top["chunk_id"].as_str().unwrap().starts_with("secret:"));
    assert!(
        !top["routes"].as_array().unwrap().is_empty(),
        "each hit says which route found it"
    );
    let out = zhiku(kb.path())
        .args(["search", "fusion", "--filter", "tags=rrf", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs: Vec<&str> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["doc_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        docs.iter().collect::<std::collections::BTreeSet<_>>().len(),
        1
    );
    assert_eq!(docs[0], "en/fusion.md");
    zhiku(kb.path())
        .args(["search", "reciprocal rank fusion"])
        .assert()
        .success()
        .stdout(predicates::str::contains("en/fusion.md:"))
        .stdout(predicates::str::contains("lexical #"));
}

#[test]
fn without_an_embedder_search_falls_back_to_lexical_with_a_notice() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    zhiku(kb.path())
        .env("ZHIKU_EMBEDDER", "candle")
        .args(["search", "reciprocal rank fusion"])
        .assert()
        .success()
        .stderr(predicates::str::contains("notice:"))
        .stdout(predicates::str::contains("en/fusion.md"));
}

#[test]
fn watch_re_indexes_a_changed_file() {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;

    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zhiku"))
        .env("ZHIKU_EMBEDDER", "hashing")
        .arg("--kb")
        .arg(kb.path())
        .args(["index", "--watch", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first: Value =
        serde_json::from_str(&rx.recv_timeout(Duration::from_secs(60)).unwrap()).unwrap();
    assert_eq!(first["docs_added"], 4);
    // Give the watcher a moment to be installed after the first summary, then edit a file.
    std::thread::sleep(Duration::from_millis(300));
    write(
        kb.path(),
        "notes.txt",
        "纯文本笔记：改过了，现在讲的是监视模式。\n",
    );
    let second = rx.recv_timeout(Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    let second: Value = serde_json::from_str(&second.expect("a re-index after the edit")).unwrap();
    assert_eq!(second["docs_changed"], 1, "{second}");
    assert_eq!(second["docs_unchanged"], 3, "{second}");
}

/// `zhiku` on examples/kb without an embedder, with its store in `store`.
fn on_sample_kb(store: &Path) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::cargo_bin("zhiku").unwrap();
    cmd.env("ZHIKU_EMBEDDER", "none")
        .arg("--kb")
        .arg(root.join("examples/kb"))
        .arg("--store")
        .arg(store);
    cmd
}

/// The JSON summary of `zhiku eval --golden evals/<set> --mode lexical` on examples/kb.
fn golden_summary(set: &str) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let store = tempfile::tempdir().unwrap();
    json_of(
        on_sample_kb(store.path())
            .args(["eval", "--golden"])
            .arg(root.join("evals").join(set))
            .args(["--mode", "lexical", "--json"]),
    )
}

#[test]
fn the_golden_set_over_the_sample_knowledge_base_stays_good() {
    let v = golden_summary("retrieval.jsonl");
    assert!(v["queries"].as_u64().unwrap() >= 30, "{v}");
    assert!(v["no_answer_cases"].as_u64().unwrap() >= 5, "{v}");
    // Measured 0.9091 / 1.0 when this test was written; the floor catches regressions.
    assert!(v["hit@1"].as_f64().unwrap() >= 0.85, "{v}");
    assert!(v["hit@5"].as_f64().unwrap() >= 0.95, "{v}");
    // The extractive generator's answers over the same cases. Measured: 33 of 33 answerable
    // cases answered (27 with v1, 30 with v2 before tables and list questions), 32 of them
    // citing an expected document, all citations valid, 6 of 6 no-answer cases not_found,
    // none blocked. The floors are the issue's targets: 31 of 33 answered, 0.95 citing.
    let a = &v["answers"];
    assert_eq!(a["cases"], 39, "{a}");
    assert_eq!(a["citation_validity"], 1.0, "{a}");
    assert_eq!(a["no_answer_not_found_rate"], 1.0, "{a}");
    assert_eq!(a["blocked"], 0, "{a}");
    assert_eq!(a["cannot_retrieve"], 0, "{a}");
    assert!(a["answered_rate"].as_f64().unwrap() >= 31.0 / 33.0, "{a}");
    assert!(a["cites_expected_rate"].as_f64().unwrap() >= 0.95, "{a}");
    assert!(a["generator"].as_str().unwrap().starts_with("extractive"));
}

#[test]
fn the_conversation_set_over_the_sample_knowledge_base_stays_good() {
    let v = golden_summary("conversations.jsonl");
    // Measured (3772bae, rules planner, extractive generator): 17 of 17 answerable answered,
    // 16 citing an expected document, follow-ups 11 of 12, several parts each cited 3 of 4,
    // 2 of 2 no-answer cases not_found. The floors leave one case of slack, none for parts.
    let a = &v["answers"];
    assert_eq!(a["cases"], 19, "{a}");
    assert_eq!(a["citation_validity"], 1.0, "{a}");
    assert_eq!(a["no_answer_not_found_rate"], 1.0, "{a}");
    assert_eq!(a["blocked"], 0, "{a}");
    assert_eq!(a["conversation_cases"], 12, "{a}");
    assert!(a["answerable_answered"].as_u64().unwrap() >= 16, "{a}");
    assert!(
        a["answerable_cites_expected"].as_u64().unwrap() >= 15,
        "{a}"
    );
    assert!(
        a["conversation_cites_expected"].as_u64().unwrap() >= 10,
        "{a}"
    );
    assert!(a["must_cite_met"].as_u64().unwrap() >= 3, "{a}");
}

#[test]
fn a_team_s_synonyms_find_and_quote_the_word_the_documents_use() {
    let kb = tempfile::tempdir().unwrap();
    write(
        kb.path(),
        "travel.md",
        "# 差旅\n\n报销单须在出差结束后 30 天内提交，逾期不予报销。\n\n市内交通每天不超过 150 元。\n",
    );
    write(kb.path(), "other.md", "# 其他\n\n年假每年 5 天。\n");
    let ask =
        |kb: &Path| json_of(zhiku(kb).args(["ask", "--json", "--mode", "lexical", "怎么报账？"]));
    let without = ask(kb.path());
    assert_eq!(without["status"], "not_found", "{without}");
    write(
        kb.path(),
        "zhiku.toml",
        "synonyms = [\"报销, 报账\", \"VPN，远程接入\"]\n",
    );
    let with = ask(kb.path());
    assert_eq!(with["status"], "answered", "{with}");
    assert!(with["answer"].as_str().unwrap().contains("30 天"), "{with}");
    assert_eq!(with["rewritten"], "怎么报账？（报销）", "{with}");
    // Search too.
    let hits = json_of(zhiku(kb.path()).args(["search", "--json", "--mode", "lexical", "报账"]));
    assert!(hits.to_string().contains("travel"), "{hits}");
    // A group of one word is a configuration error, said at once.
    write(kb.path(), "zhiku.toml", "synonyms = [\"报销\"]\n");
    let out = zhiku(kb.path()).args(["ask", "年假？"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("synonyms"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_golden_set_naming_a_document_the_knowledge_base_lacks_is_refused() {
    let store = tempfile::tempdir().unwrap();
    let set = store.path().join("typo.jsonl");
    std::fs::write(
        &set,
        concat!(
            r#"{"id": "fine", "query": "知库怎么切分文档？", "expected": {"doc_ids": ["chunking-policy"]}}"#,
            "\n",
            r#"{"id": "typo", "query": "知库怎么切分文档？", "expected": {"doc_ids": ["chunking-polcy"]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = on_sample_kb(store.path())
        .args(["eval", "--golden"])
        .arg(&set)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"case "typo" expects document "chunking-polcy""#)
            && !err.contains("\"fine\""),
        "{err}"
    );
}

/// Every golden question through the real pipeline (the binary, examples/kb, the extractive
/// generator): no answer carries Markdown or a dangling fragment.
#[test]
fn no_extractive_answer_over_the_golden_set_carries_artefacts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let store = tempfile::tempdir().unwrap();
    let answers = store.path().join("answers.jsonl");
    json_of(
        on_sample_kb(store.path())
            .args(["eval", "--golden"])
            .arg(root.join("evals/retrieval.jsonl"))
            .args(["--mode", "hybrid", "--json", "--answers"])
            .arg(&answers),
    );
    let text = std::fs::read_to_string(&answers).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["status"] != "answered" {
            continue;
        }
        n += 1;
        let answer = r["answer"].as_str().unwrap();
        // Each quoted sentence ends "[n]。" or "[n]."; the text before a marker is checked.
        for part in answer
            .split('[')
            .map(|p| p.split_once(']').map_or(p, |(_, rest)| rest))
        {
            let body = part.trim_start_matches(['。', '.', ' ']);
            let bad = ["**", "__", "`", "](", "](http", "| ", " |", "~~"]
                .iter()
                .find(|m| body.contains(*m));
            assert!(bad.is_none(), "{}: markup {bad:?} in {answer}", r["id"]);
            assert!(
                !body.starts_with(['#', '-', '*', '+', '>', '|']),
                "{}: a heading, bullet or table line in {answer}",
                r["id"]
            );
        }
        for chunk in answer.split_inclusive(']') {
            let before = chunk.rsplit_once('[').map_or(chunk, |(b, _)| b).trim_end();
            if chunk.ends_with(']') {
                assert!(
                    !before.ends_with(['：', ':', '，', ',', '、']),
                    "{}: a dangling fragment in {answer}",
                    r["id"]
                );
                assert!(
                    !before.ends_with(['？', '?']),
                    "{}: a question quoted as the answer in {answer}",
                    r["id"]
                );
            }
        }
        assert!(
            answer.ends_with("]。") || answer.ends_with("].") || answer.ends_with(']'),
            "{}: {answer}",
            r["id"]
        );
    }
    assert!(n >= 29, "only {n} answers");
}

/// `zhiku ask --json` over the sample knowledge base with the chat server at a closed local
/// port and `setting` pointing something at it: the URL and the frame, which must be answered.
fn answer_with_an_unreachable_llm(store: &Path, setting: (&str, &str)) -> (String, Value) {
    let port = zhiku_tests::local::unused_local_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = on_sample_kb(store)
        .env(setting.0, setting.1)
        .env("ZHIKU_LLM_URL", &url)
        .args(["ask", "默认 max_chars 为什么是 480？", "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let frame: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(frame["status"], "answered", "{frame}");
    (url, frame)
}

/// An unreachable chat server (a closed local port) is a degraded answer, not an error: the
/// default chain ends with the extractive generator, the frame names it and says why.
#[test]
fn an_unreachable_llm_falls_back_to_the_extractive_generator() {
    let store = tempfile::tempdir().unwrap();
    let (url, frame) = answer_with_an_unreachable_llm(store.path(), ("ZHIKU_GENERATOR", "openai"));
    assert!(
        frame["generator"]
            .as_str()
            .unwrap()
            .starts_with("extractive"),
        "{frame}"
    );
    let notices = frame["notices"].as_array().unwrap();
    assert_eq!(notices.len(), 1, "{frame}");
    assert!(notices[0].as_str().unwrap().contains(&url), "{frame}");
    // Without a fallback the error is the run's, printed once.
    let out = on_sample_kb(store.path())
        .env("ZHIKU_GENERATOR", "openai")
        .env("ZHIKU_LLM_URL", &url)
        .env("ZHIKU_GENERATOR_FALLBACK", "none")
        .args(["ask", "默认 max_chars 为什么是 480？"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("Connection refused").count(), 1, "{stderr}");
    assert_eq!(stderr.matches(&url).count(), 1, "{stderr}");
}

/// `zhiku ask` answers through the service, so the configured judge is asked on the command
/// line as it is over HTTP and MCP (it was silently left out): an unreachable one is named in
/// the frame's notices and the lexical check decides.
#[test]
fn ask_on_the_command_line_asks_the_configured_judge() {
    let store = tempfile::tempdir().unwrap();
    let (_, frame) = answer_with_an_unreachable_llm(store.path(), ("ZHIKU_JUDGE", "llm"));
    let notices = frame["notices"].as_array().unwrap();
    assert!(
        notices
            .iter()
            .any(|n| n.as_str().unwrap().contains("support judge")),
        "{frame}"
    );
}

/// The README's first command, exactly as written there, on the embedded default without a
/// model (lexical route only): it must print a cited answer, not the no-material sentence.
#[test]
fn the_readme_first_command_answers_with_a_citation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -p zhiku -- ask \""))
        .expect("the README's first command");
    let question = line.split('"').nth(1).unwrap();
    let store = tempfile::tempdir().unwrap();
    let out = on_sample_kb(store.path())
        .args(["ask", question, "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let frame: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(frame["status"], "answered", "{question}: {frame}");
    assert!(!frame["citations"].as_array().unwrap().is_empty());
}

#[test]
fn ask_prints_a_cited_answer_frame_and_records_the_trace() {
    let kb = tempfile::tempdir().unwrap();
    sample(kb.path());
    let out = zhiku(kb.path())
        .args(["ask", "What does reciprocal rank fusion merge?", "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "question",
        "answer",
        "status",
        "citations",
        "evidence",
        "routes",
        "trace_id",
    ] {
        assert!(v.get(key).is_some(), "frame lacks {key}: {v}");
    }
    assert_eq!(v["status"], "answered", "{v}");
    let citation = &v["citations"][0];
    for key in [
        "marker", "chunk_id", "doc_id", "title", "source", "revision", "quote",
    ] {
        assert!(
            citation.get(key).is_some(),
            "citation lacks {key}: {citation}"
        );
    }
    assert!(
        v["answer"]
            .as_str()
            .unwrap()
            .contains(&format!("[{}]", citation["marker"]))
    );
    let evidence = v["evidence"].as_array().unwrap();
    assert!(
        evidence
            .iter()
            .any(|e| e["chunk_id"] == citation["chunk_id"])
    );
    assert!(
        evidence
            .iter()
            .all(|e| e["scores"].is_object() && e["rank"].is_u64())
    );
    assert!(evidence.iter().all(|e| e["doc_id"] != "secret"));

    // The trace file holds the run, step by step.
    let trace_id = v["trace_id"].as_str().unwrap();
    let trace = std::fs::read_to_string(kb.path().join(".zhiku/traces.jsonl")).unwrap();
    let stages: Vec<String> = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["trace_id"] == trace_id)
        .map(|e| e["stage"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(stages.first().map(String::as_str), Some("query"));
    assert_eq!(stages.last().map(String::as_str), Some("answer"));
    assert!(stages.iter().any(|s| s == "citation_validation"));

    // --trace prints the chain; a question the knowledge base cannot answer is not_found.
    zhiku(kb.path())
        .args(["ask", "明天北京天气怎么样？", "--trace"])
        .assert()
        .success()
        .stdout(predicates::str::contains("知识库中没有找到相关资料"))
        .stdout(predicates::str::contains("status not_found"))
        .stderr(predicates::str::contains("revision check:"))
        .stderr(predicates::str::contains("answer: not_found"));

    // No route at all: cannot_retrieve, exit code 5, never "no material".
    zhiku(kb.path())
        .env("ZHIKU_EMBEDDER", "none")
        .args([
            "ask",
            "倒数排名融合合并什么？",
            "--mode",
            "dense",
            "--no-refresh",
        ])
        .assert()
        .code(5)
        .stdout(predicates::str::contains("error: cannot retrieve"));
}

/// A query without a refresh reads only the catalog's header, yet still re-checks every hit
/// against its document's recorded source: an edited file's chunks are dropped as stale, a
/// deleted file's as deleted, and the rest is kept, with `status` counting what the catalog
/// lists.
#[test]
fn a_query_without_refresh_rechecks_each_hit_at_its_recorded_source() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    sample(&kb);
    index_json(&kb);
    let counted = status(&kb);
    write(
        &kb,
        "notes.txt",
        "纯文本笔记（改过）：混合检索在融合之前应用可信的范围过滤。
",
    );
    std::fs::remove_file(kb.join("en/fusion.md")).unwrap();
    let found = json_of(
        zhiku(&kb)
            .args(["search", "--no-refresh", "--json", "-k", "10"])
            .args(["--mode", "lexical", "混合检索 融合 fusion 最后一段"]),
    );
    let reasons = pairs(&found["dropped"], "doc_id", "reason");
    assert!(
        reasons
            .iter()
            .any(|(doc, r)| doc.contains("notes") && r == "stale_revision"),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|(doc, r)| doc.contains("fusion") && r == "deleted"),
        "{reasons:?}"
    );
    let kept: Vec<&str> = found["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["doc_id"].as_str().unwrap())
        .collect();
    assert!(kept.iter().any(|d| d.contains("long")), "{kept:?}");
    assert!(
        kept.iter()
            .all(|d| !d.contains("notes") && !d.contains("fusion")),
        "{kept:?}"
    );
    // Nothing was refreshed: the catalog still lists what was indexed.
    assert_eq!(status(&kb)["documents"], counted["documents"]);
    assert_eq!(status(&kb)["chunks"], counted["chunks"]);
}

/// `zhiku search … | head -1`: the reader goes away before zhiku writes. zhiku stops quietly,
/// like any Unix tool, instead of panicking with a backtrace.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    sample(&kb);
    index_json(&kb);
    for args in [
        &["search", "--no-refresh", "索引器"][..],
        &["search", "--no-refresh", "--json", "索引器"],
        &["status", "--json"],
    ] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("zhiku"))
            .env_clear()
            .env("ZHIKU_EMBEDDER", "hashing")
            .env("RUST_BACKTRACE", "1")
            .arg("--kb")
            .arg(&kb)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// The embedded store keeps a chunk's text once: the lexical index stores chunk IDs and reads
/// each hit's record from the vector store, also in a process without an embedder (lexical
/// retrieval only), which opens the vector store's records alone.
#[test]
fn a_chunks_text_lives_once_and_a_reader_without_an_embedder_still_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    sample(&kb);
    index_json(&kb);
    let lexical = kb.join(".zhiku/lexical");
    let stored: u64 = std::fs::read_dir(&lexical)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "store"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    let text = std::fs::metadata(kb.join("long.md")).unwrap().len();
    assert!(
        stored < text / 4,
        "the lexical index stores {stored} B beside {text} B of text"
    );
    let query = [
        "search",
        "--no-refresh",
        "--json",
        "--mode",
        "lexical",
        "可信的范围过滤",
    ];
    let with = json_of(zhiku(&kb).args(query));
    let without = json_of(zhiku(&kb).env("ZHIKU_EMBEDDER", "none").args(query));
    for found in [&with, &without] {
        let first = &found["evidence"][0];
        assert_eq!(first["doc_id"], "notes.txt", "{found}");
        assert!(
            first["content"]
                .as_str()
                .unwrap()
                .contains("可信的范围过滤"),
            "{found}"
        );
    }
}

fn cities(kb: &Path) {
    write(
        kb,
        "shanghai.md",
        "---\nid: shanghai\n---\n# 上海\n\n上海是中国的直辖市。2020 年上海的常住人口约为 2487 万。\n",
    );
    write(
        kb,
        "beijing.md",
        "---\nid: beijing\n---\n# 北京\n\n北京是中国的首都。2020 年北京的常住人口约为 2189 万。\n",
    );
    write(
        kb,
        "chunking.md",
        "---\nid: chunking\n---\n# 切分\n\n知库按标题、段落和句子切分文档，块的 ID 由文档 ID、起始位置和内容哈希组成。\n",
    );
}

#[test]
fn chat_answers_a_follow_up_from_the_conversation_and_saves_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    cities(&kb);
    let saved = dir.path().join("conversation.jsonl");
    let out = zhiku(&kb)
        .args(["chat", "--json", "--mode", "lexical", "--save"])
        .arg(&saved)
        .write_stdin("你好\n上海的常住人口是多少？\n那北京呢？\n/reset\n那北京呢？\n")
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let frames: Vec<Value> = support::json_lines(&out.stdout);
    assert_eq!(frames.len(), 4);
    assert_eq!(frames[0]["status"], "small_talk");
    assert_eq!(frames[1]["citations"][0]["doc_id"], "shanghai");
    assert_eq!(frames[2]["rewritten"], "北京的常住人口是多少？");
    assert_eq!(frames[2]["status"], "answered", "{}", frames[2]);
    assert!(frames[2]["answer"].as_str().unwrap().contains("2189"));
    // After /reset the same words are a new conversation: nothing to carry.
    assert!(frames[3].get("rewritten").is_none(), "{}", frames[3]);
    // The saved turns are a history for `ask --history`.
    let out = json_of(
        zhiku(&kb)
            .args([
                "ask",
                "--json",
                "--no-refresh",
                "--mode",
                "lexical",
                "--history",
            ])
            .arg(&saved)
            .arg("它是中国的什么？"),
    );
    assert_eq!(out["rewritten"], "北京是中国的什么？", "{out}");
    assert_eq!(out["citations"][0]["doc_id"], "beijing", "{out}");
    // A history file that is not one is refused by path.
    write(&kb, "bad.jsonl", "not json\n");
    let out = zhiku(&kb)
        .args(["ask", "--no-refresh", "--history"])
        .arg(kb.join("bad.jsonl"))
        .arg("那北京呢？")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl"));
}

#[test]
fn ask_answers_each_part_of_a_two_part_question_and_checks_every_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    cities(&kb);
    let out = json_of(zhiku(&kb).args([
        "ask",
        "--json",
        "--mode",
        "lexical",
        "上海的常住人口是多少？块的 ID 由什么组成？",
    ]));
    assert_eq!(out["intent"], "multi_part", "{out}");
    assert_eq!(out["parts"].as_array().unwrap().len(), 2);
    assert_eq!(out["status"], "answered", "{out}");
    let docs: Vec<&str> = out["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["doc_id"].as_str().unwrap())
        .collect();
    assert!(
        docs.contains(&"shanghai") && docs.contains(&"chunking"),
        "{out}"
    );
    // The run chain shows the decisions.
    let out = zhiku(&kb)
        .args(["ask", "--trace", "--no-refresh", "--mode", "lexical"])
        .arg("上海的常住人口是多少？块的 ID 由什么组成？")
        .output()
        .unwrap();
    let chain = String::from_utf8_lossy(&out.stderr);
    assert!(
        chain.contains("intent (rules-v1): multi_part, 2 parts"),
        "{chain}"
    );
    assert!(chain.contains("part 2 of 2"), "{chain}");
    assert!(chain.contains("support check (attempt 1"), "{chain}");
}

/// `zhiku access DOC` says who may read a document and by which rule, and what the rules would
/// give now; `zhiku access --user` lists what one person may read.
#[test]
fn access_explains_a_documents_readers_and_lists_a_persons_documents() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    std::fs::create_dir_all(kb.join("hr")).unwrap();
    std::fs::write(kb.join("hr/pay.md"), "# 薪资\n\n薪资每月十日发放。\n").unwrap();
    std::fs::write(
        kb.join("review.md"),
        "---\naccess: [user:li@corp]\n---\n# 绩效\n\n绩效评级为优秀。\n",
    )
    .unwrap();
    std::fs::write(kb.join("leave.md"), "# 年假\n\n员工每年有十五天年假。\n").unwrap();
    let config = |rule: &str| format!("access_rules = [{rule:?}]\n");
    std::fs::write(kb.join("zhiku.toml"), config("hr/** = group:hr")).unwrap();
    zhiku(kb).args(["index"]).assert().success();
    let lines = |args: &[&str]| -> Vec<Value> {
        let out = zhiku(kb)
            .arg("access")
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        support::assert_succeeded(&out);
        support::json_lines(&out.stdout)
    };
    let pay = &lines(&["hr/pay.md"])[0];
    assert_eq!(pay["readers"], json!(["group:hr"]), "{pay}");
    assert_eq!(
        pay["rule"],
        json!({"kind": "folder", "pattern": "hr/**"}),
        "{pay}"
    );
    assert_eq!(pay["rules_now_give"], Value::Null);
    let review = &lines(&["review.md"])[0];
    assert_eq!(review["rule"]["kind"], "document", "{review}");
    let leave = &lines(&["leave.md"])[0];
    assert_eq!(
        (&leave["readers"], &leave["rule"]["kind"]),
        (&json!(["*"]), &json!("open"))
    );

    let ids = |args: &[&str]| -> Vec<String> {
        lines(args)
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&["--user", "li@corp"]), ["leave.md", "review.md"]);
    assert_eq!(
        ids(&["--user", "wang@corp", "--group", "hr"]),
        ["hr/pay.md", "leave.md"]
    );

    // A rule changed but not yet applied: the document says what the rules now give.
    std::fs::write(
        kb.join("zhiku.toml"),
        config("hr/** = group:hr user:li@corp"),
    )
    .unwrap();
    let pay = &lines(&["hr/pay.md"])[0];
    assert_eq!(pay["readers"], json!(["group:hr"]));
    assert_eq!(
        pay["rules_now_give"]["readers"],
        json!(["group:hr", "user:li@corp"]),
        "{pay}"
    );
    // An unknown document is an error, not an empty answer.
    zhiku(kb).args(["access", "nope.md"]).assert().failure();
}

#[test]
fn a_changed_user_dictionary_reanalyses_the_chunks_holding_its_words_not_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    sample(kb);
    write(
        kb,
        "code-names.md",
        "---\nid: code-names\ntitle: 代号\n---\n# 代号\n\n玄武湖计划的预算由财务部审批。\n",
    );
    index_json(kb);
    // The team's code name kept whole: the chunk holding it is analysed again, nothing is
    // embedded, the rest of the store stays as it was.
    write(kb, "zhiku.toml", "dictionary = [\"玄武湖计划\"]\n");
    let out = zhiku(kb).arg("index").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("user dictionary changed (1 words): 1 of"),
        "{said}"
    );
    let hits = json_of(zhiku(kb).args(["search", "玄武湖计划", "--json"]));
    assert_eq!(hits["evidence"][0]["doc_id"], "code-names", "{hits}");
    let status = zhiku(kb).arg("status").output().unwrap();
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("user dictionary"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // Applied once: the next run has nothing to analyse again.
    let again = zhiku(kb).arg("index").output().unwrap();
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains("analysed again")
            && !String::from_utf8_lossy(&again.stderr).contains("analysed again")
    );
}
