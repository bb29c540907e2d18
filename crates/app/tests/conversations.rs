//! The conversation sets of issue 41, over knowledge bases that are not zhiku's own documents:
//! a staff handbook (`evals/handbook`, `evals/handbook-conversations.jsonl`) and CMRC 2018
//! passages (`scripts/make-cmrc-kb.py`, `evals/cmrc-conversations.jsonl`), through the binary
//! with the rules planner, the extractive generator and the hashing embedder (no model). Each
//! set was written before the rules were tuned; half of each is held out from them. The floors
//! keep what was measured on both halves, one case of slack each (figures in
//! `evals/README.md`).

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `zhiku eval --golden SET --mode hybrid --json` over `kb`, its `answers` summary.
fn answers(kb: &Path, set: &str) -> Value {
    let store = tempfile::tempdir().unwrap();
    let out = support::zhiku(kb)
        .arg("--store")
        .arg(store.path())
        .args(["eval", "--golden"])
        .arg(root().join("evals").join(set))
        .args(["--mode", "hybrid", "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["answers"].clone()
}

fn right(a: &Value, group: &str, key: &str) -> u64 {
    a[group][key]["right"].as_u64().unwrap_or(0)
}

#[test]
fn handbook_conversations_hold_on_both_halves() {
    let a = answers(
        &root().join("evals/handbook"),
        "handbook-conversations.jsonl",
    );
    assert_eq!(a["cases"], 52, "{a}");
    assert_eq!(a["citation_validity"], 1.0, "{a}");
    assert_eq!(a["blocked"], 0, "{a}");
    // Measured (rules planner with slots and comparisons, extractive generator, hashing
    // embedder): right dev 16 of 26, held-out 20 of 26 (before: 10 and 19); facts 34 of 49.
    assert!(right(&a, "by_split", "dev") >= 15, "{}", a["by_split"]);
    assert!(right(&a, "by_split", "held_out") >= 19, "{}", a["by_split"]);
    assert!(a["fact_met"].as_u64().unwrap() >= 33, "{a}");
    // The kinds the rules were built for: comparisons 5 of 5 (2 before), a follow-up naming
    // its own topic and aspect 5 of 5, an implicit subject 8 of 11 (5 before).
    assert!(right(&a, "by_kind", "comparison") >= 4, "{}", a["by_kind"]);
    assert!(right(&a, "by_kind", "own-topic") >= 4, "{}", a["by_kind"]);
    assert!(right(&a, "by_kind", "implicit") >= 7, "{}", a["by_kind"]);
    assert!(right(&a, "by_kind", "no-answer") >= 2, "{}", a["by_kind"]);
}

#[test]
fn cmrc_conversations_hold_on_both_halves() {
    let corpus = std::env::var_os("ZHIKU_CMRC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/datasets/cmrc2018-dev"))
        .join("corpus.jsonl");
    if !corpus.is_file() {
        eprintln!(
            "SKIPPED cmrc_conversations_hold_on_both_halves: no {}; set ZHIKU_CMRC_DIR to the \
             CMRC 2018 dev set (BEIR layout)",
            corpus.display()
        );
        return;
    }
    let kb = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .arg(root().join("scripts/make-cmrc-kb.py"))
        .arg(kb.path())
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .expect("python3 runs scripts/make-cmrc-kb.py");
    support::assert_succeeded(&made);
    let a = answers(kb.path(), "cmrc-conversations.jsonl");
    assert_eq!(a["cases"], 20, "{a}");
    assert_eq!(a["citation_validity"], 1.0, "{a}");
    // Measured: right dev 7 of 10, held-out 4 of 10 (before: 2 and 2); facts 10 of 19.
    assert!(right(&a, "by_split", "dev") >= 6, "{}", a["by_split"]);
    assert!(right(&a, "by_split", "held_out") >= 3, "{}", a["by_split"]);
    assert!(a["fact_met"].as_u64().unwrap() >= 9, "{a}");
}
