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
    answers_kept(kb, set, tempfile::tempdir().unwrap().path())
}

/// [`answers`] with the store (and its trace log) in `store`.
fn answers_kept(kb: &Path, set: &str, store: &Path) -> Value {
    let out = support::zhiku(kb)
        .arg("--store")
        .arg(store)
        .args(["eval", "--golden"])
        .arg(root().join("evals").join(set))
        .args(["--mode", "hybrid", "--json"])
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["answers"].clone()
}

/// `zhiku eval --from-traces [FILE] [--golden SET] --json` over the store in `store`.
fn from_traces(kb: &Path, store: &Path, file: Option<&Path>, set: Option<&str>) -> Value {
    let mut cmd = support::zhiku(kb);
    cmd.arg("--store")
        .arg(store)
        .args(["eval", "--json", "--from-traces"]);
    if let Some(file) = file {
        cmd.arg(file);
    }
    if let Some(set) = set {
        cmd.arg("--golden").arg(root().join("evals").join(set));
    }
    let out = cmd.output().unwrap();
    support::assert_succeeded(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn recorded_runs_grade_as_they_were_graded_when_asked() {
    let kb = root().join("evals/handbook");
    let store = tempfile::tempdir().unwrap();
    let live = answers_kept(&kb, "handbook-conversations.jsonl", store.path());
    let recorded = from_traces(
        &kb,
        store.path(),
        None,
        Some("handbook-conversations.jsonl"),
    );
    assert_eq!(
        recorded["not_recorded"],
        serde_json::json!([]),
        "{recorded}"
    );
    assert_eq!(recorded["without_answer_text"], 0);
    let graded = &recorded["answers"];
    // Every grade a run shows is the same read back from its trace, follow-ups matched to the
    // conversation they were asked in (the handbook asks "青龙项目呢？" after two different
    // questions).
    for key in [
        "cases",
        "answered",
        "not_found",
        "blocked",
        "small_talk",
        "answerable_answered",
        "answerable_cites_expected",
        "no_answer_not_found",
        "fact_met",
        "must_cite_met",
        "conversation_cites_expected",
        "citation_valid",
        "first_attempt",
        "claims",
        "claims_supported",
        "by_split",
        "by_kind",
    ] {
        assert_eq!(graded[key], live[key], "{key}: {graded} vs {live}");
    }
    // What a trace does not hold is not made up.
    assert!(graded["context_recall"].is_null() && graded["answer_relevance"].is_null());

    // Without a set: every run (each case's earlier turns are runs too), from a copied log.
    let copy = tempfile::tempdir().unwrap();
    let log = copy.path().join("old-traces.jsonl");
    std::fs::copy(store.path().join("traces.jsonl"), &log).unwrap();
    let all = from_traces(&kb, store.path(), Some(&log), None);
    let runs = all["runs"].as_u64().unwrap();
    assert!(runs > 52, "{all}");
    assert_eq!(all["answers"]["cases"].as_u64(), Some(runs));
    // A log that is not one is refused, not graded as nothing.
    let out = support::zhiku(&kb)
        .arg("--store")
        .arg(store.path())
        .args(["eval", "--from-traces"])
        .arg(copy.path().join("none.jsonl"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no recorded runs"));
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
    // Measured: right dev 7 of 10, held-out 4 of 10 (before: 2 and 2); facts 10 of 19. With
    // the Han-pairs field and the subject check (stop 53): dev 6, held-out 5, facts 10.
    assert!(right(&a, "by_split", "dev") >= 6, "{}", a["by_split"]);
    assert!(right(&a, "by_split", "held_out") >= 3, "{}", a["by_split"]);
    assert!(a["fact_met"].as_u64().unwrap() >= 9, "{a}");
}
