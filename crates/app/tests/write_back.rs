//! Knowledge an agent writes back (issue 18 §6): the quality gate, exact and near duplicates
//! refused or merged, the audit trail of every decision — at the knowledge-base level over a
//! real folder store, and end to end through the MCP tool `add_knowledge` driven by the
//! official Python client (`bash scripts/setup-mcp-client.sh`; skipped without it unless
//! ZHIKU_REQUIRE_MCP is set).

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use zhiku_adapters_fs::audit_log::JsonlAuditLog;
use zhiku_app::config::Config;
use zhiku_app::wiring::store::{Origin, Purpose, Store};
use zhiku_domain::Scope;
use zhiku_domain::ports::AuditLog;
use zhiku_service::{Caller, KnowledgeBase, KnowledgeWrite, NewDocument};

use support::{Server, two_scope_kb};

const FINDING: &str = "alpha 仓库的夜间发货截止时间是晚上九点，九点以后的订单次日上午发出。";
const EDITED: &str = "alpha 仓库的夜间发货截止时间是晚上九点，九点以后的订单次日中午发出。";
const QUESTION: &str = "alpha 仓库的夜间发货截止时间是几点？";

fn open_kb(kb: &Path) -> KnowledgeBase {
    open_kb_with(kb, &[])
}

/// The knowledge base of `kb` with `env` (variable, value) as the process environment.
fn open_kb_with(kb: &Path, env: &[(&str, String)]) -> KnowledgeBase {
    let root = kb.canonicalize().unwrap();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let config = Config::resolve(Some(&root.join("zhiku.toml")), None, &lookup).unwrap();
    let store = Store::open(
        &root.join(".zhiku"),
        config,
        Purpose::Write,
        false,
        Some(&root),
    )
    .unwrap();
    zhiku_app::wiring::open_service(store, Some(Origin::Folder { root }))
        .unwrap()
        .0
}

fn agent() -> Caller {
    Caller {
        name: "agent-7".into(),
        scopes: vec![Scope::new("alpha").unwrap()],
        write: true,
    }
}

fn write(kb: &KnowledgeBase, text: &str, question: Option<&str>) -> Value {
    let outcome = kb
        .add_knowledge(
            &agent(),
            KnowledgeWrite {
                text: text.into(),
                question: question.map(str::to_string),
                ..KnowledgeWrite::default()
            },
        )
        .unwrap();
    serde_json::to_value(outcome).unwrap()
}

fn decision(v: &Value) -> (String, String) {
    (
        v["decision"].as_str().unwrap().to_string(),
        v["reason"].as_str().unwrap().to_string(),
    )
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

/// Filler that passes every offline rule (long enough, no refusal phrase, not the question).
const FILLER: &str =
    "关于这一点我们还在继续整理和讨论，之后会再补充更多的内容与细节，请大家耐心等待后续的更新。";

#[test]
fn the_judge_has_the_gates_last_word_and_an_unreachable_one_leaves_the_rules() {
    // Unreachable (nothing listens on port 9): the rules alone decide, and the entry says so.
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let env = |url: &str, model: &str| {
        vec![
            ("ZHIKU_JUDGE", "llm".to_string()),
            ("ZHIKU_LLM_URL", url.to_string()),
            ("ZHIKU_LLM_MODEL", model.to_string()),
            ("ZHIKU_LLM_TIMEOUT_MS", "300000".to_string()),
        ]
    };
    let kb = open_kb_with(&kb_dir, &env("http://127.0.0.1:9/v1", "none"));
    let v = write(&kb, FILLER, None);
    assert_eq!(decision(&v), pair("accepted", "new"), "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("the rules alone: judge unavailable"),
        "{v}"
    );
    drop(kb);

    let Ok(url) = std::env::var("ZHIKU_TEST_LLM_URL") else {
        eprintln!(
            "SKIPPED (the real judge): set ZHIKU_TEST_LLM_URL=http://127.0.0.1:8088/v1 \
             (scripts/llm-server.sh starts one) to run it"
        );
        return;
    };
    let model = std::env::var("ZHIKU_TEST_LLM_MODEL").unwrap_or_else(|_| "local".into());
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb_with(&kb_dir, &env(&url, &model));
    let v = write(&kb, FILLER, None);
    eprintln!("the judge on filler: {v}");
    assert_eq!(decision(&v), pair("refused", "states_nothing"), "{v}");
    let v = write(&kb, FINDING, Some(QUESTION));
    assert_eq!(decision(&v), pair("accepted", "new"), "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("judged by llm-judge:"),
        "{v}"
    );
    let reasons: Vec<String> = kb
        .audit_entries(&agent())
        .unwrap()
        .into_iter()
        .map(|e| e.reason)
        .collect();
    assert_eq!(reasons, vec!["states_nothing".to_string(), "new".into()]);
}

#[test]
fn duplicates_are_refused_and_every_gate_rule_refuses_with_its_reason_all_audited() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb(&kb_dir);

    let first = write(&kb, FINDING, Some(QUESTION));
    assert_eq!(decision(&first), pair("accepted", "new"), "{first}");
    let id = first["doc_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("kb-"), "{id}");
    assert!(
        first["ingested"]["chunk_ids"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );

    // The same text, rewrapped and with other punctuation, is an exact duplicate.
    let again = write(&kb, &FINDING.replace('，', ", "), None);
    assert_eq!(decision(&again), pair("refused", "duplicate"), "{again}");
    assert_eq!(again["duplicate_of"], id.as_str());
    let edited = write(&kb, EDITED, None);
    assert_eq!(
        decision(&edited),
        pair("refused", "near_duplicate"),
        "{edited}"
    );
    assert_eq!(edited["duplicate_of"], id.as_str());
    // A duplicate of a document of another scope is no duplicate: the scopes do not meet.
    let beta_like = "beta 客户的退货期限是七天。内部代号蓝鲸，只给 beta 看。这是 alpha 的记录。";
    assert_eq!(decision(&write(&kb, beta_like, None)).0, "accepted");

    let refusal = write(
        &kb,
        "抱歉，我无法根据现有资料回答这个问题。",
        Some(QUESTION),
    );
    assert_eq!(decision(&refusal), pair("refused", "refusal"));
    let none = write(&kb, "知识库里没有相关资料。", None);
    assert_eq!(decision(&none), pair("refused", "refusal"));
    let short = write(&kb, "九点。", None);
    assert_eq!(decision(&short), pair("refused", "too_short"));
    let echo = write(&kb, &format!("请问 {QUESTION}"), Some(QUESTION));
    assert_eq!(decision(&echo), pair("refused", "echoes_question"));

    // Nothing refused was written.
    let (docs, _) = kb.documents(&agent(), 0, 100);
    assert_eq!(
        docs.iter()
            .filter(|d| d.id.as_str().starts_with("kb-"))
            .count(),
        2
    );

    // Every decision is in the audit trail, persisted beside the store, with who and why.
    let expected = [
        ("accepted", "new"),
        ("refused", "duplicate"),
        ("refused", "near_duplicate"),
        ("accepted", "new"),
        ("refused", "refusal"),
        ("refused", "refusal"),
        ("refused", "too_short"),
        ("refused", "echoes_question"),
    ];
    let entries = kb.audit_entries(&agent()).unwrap();
    let got: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.decision.as_str(), e.reason.as_str()))
        .collect();
    assert_eq!(got, expected);
    assert!(
        entries
            .iter()
            .all(|e| e.who == "agent-7" && e.scope == "alpha")
    );
    assert_eq!(entries[0].doc_id, id);
    let on_disk = JsonlAuditLog::in_store(&kb_dir.canonicalize().unwrap().join(".zhiku"))
        .entries()
        .unwrap();
    assert_eq!(on_disk, entries);
    // Another scope's caller sees none of them.
    let beta = Caller {
        name: "b".into(),
        scopes: vec![Scope::new("beta").unwrap()],
        write: true,
    };
    assert!(kb.audit_entries(&beta).unwrap().is_empty());

    // A plain document write is not write-back: no gate, no audit entry.
    kb.put_document(
        &agent(),
        NewDocument {
            id: "plain".into(),
            text: "九点。".into(),
            ..NewDocument::default()
        },
    )
    .unwrap();
    assert_eq!(kb.audit_entries(&agent()).unwrap().len(), expected.len());
}

#[test]
fn with_merge_a_near_duplicate_updates_the_document_and_an_exact_one_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "write_back_duplicates = \"merge\"", "");
    let kb = open_kb(&kb_dir);
    let first = write(&kb, FINDING, None);
    let id = first["doc_id"].as_str().unwrap().to_string();
    let path = first["ingested"]["path"].as_str().unwrap().to_string();

    let same = write(&kb, FINDING, None);
    assert_eq!(decision(&same), pair("skipped", "duplicate"), "{same}");
    assert_eq!(same["doc_id"], id.as_str());
    assert!(same.get("ingested").is_none());

    let merged = write(&kb, EDITED, None);
    assert_eq!(
        decision(&merged),
        pair("merged", "near_duplicate"),
        "{merged}"
    );
    assert_eq!(merged["doc_id"], id.as_str());
    assert_eq!(merged["ingested"]["path"], path.as_str());
    assert_eq!(merged["ingested"]["report"]["docs_changed"], 1);
    let view = kb.document(&agent(), &id).unwrap();
    assert!(view.text.contains("次日中午"), "{}", view.text);
    let (docs, _) = kb.documents(&agent(), 0, 100);
    assert_eq!(
        docs.iter()
            .filter(|d| d.id.as_str().starts_with("kb-"))
            .count(),
        1
    );
    let reasons: Vec<String> = kb
        .audit_entries(&agent())
        .unwrap()
        .iter()
        .map(|e| format!("{}/{}", e.decision, e.reason))
        .collect();
    assert_eq!(
        reasons,
        ["accepted/new", "skipped/duplicate", "merged/near_duplicate"]
    );
}

#[test]
fn the_python_client_writes_back_through_add_knowledge_and_reads_it_again() {
    let Some(py) = support::mcp_python() else {
        if std::env::var_os("ZHIKU_REQUIRE_MCP").is_some() {
            panic!("the MCP client is required; run bash scripts/setup-mcp-client.sh");
        }
        eprintln!("SKIPPED add_knowledge over MCP: no Python with the mcp package");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/write_back.py");
    let out = Command::new(py)
        .arg(script)
        .args([&s.url("/mcp"), "tok-a"])
        .output()
        .expect("run the MCP client");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        r["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("add_knowledge"))
    );
    let d = |k: &str| decision(&r[k]);
    assert_eq!(d("first"), pair("accepted", "new"), "{}", r["first"]);
    assert_eq!(d("again"), pair("refused", "duplicate"));
    assert_eq!(d("edited"), pair("refused", "near_duplicate"));
    assert_eq!(d("refusal"), pair("refused", "refusal"));
    assert_eq!(d("short"), pair("refused", "too_short"));
    assert_eq!(d("echo"), pair("refused", "echoes_question"));
    let id = r["first"]["doc_id"].as_str().unwrap();
    let hits = r["search"]["hits"].as_array().unwrap();
    assert_eq!(hits[0]["doc_id"], id, "{}", r["search"]);
    // The write carried its ttl; the audit trail beside the store holds all six decisions of
    // the token's caller.
    let view = support::call(
        "GET",
        &s.url(&format!("/v1/documents/{id}")),
        Some("tok-a"),
        None,
    );
    let view: Value = serde_json::from_str(&view.text).unwrap();
    assert!(view["expires_at"].is_string(), "{view}");
    drop(s);
    let audit = JsonlAuditLog::in_store(&kb.canonicalize().unwrap().join(".zhiku"))
        .entries()
        .unwrap();
    assert_eq!(audit.len(), 6);
    assert!(audit.iter().all(|e| e.who == "a"));
    // `zhiku audit` prints the same trail.
    let out = support::zhiku(&kb)
        .args(["audit", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<&str> = lines
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        decisions,
        [
            "new",
            "duplicate",
            "near_duplicate",
            "refusal",
            "too_short",
            "echoes_question"
        ]
    );
}

#[test]
fn post_knowledge_writes_back_over_http_through_the_same_gate_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let post = |token: &str, body: Value| {
        support::call("POST", &s.url("/v1/knowledge"), Some(token), Some(&body))
    };
    let finding = "alpha 仓库的周末发货截止时间是周五下午四点，之后的订单在下周一发出。";
    let first = post(
        "tok-a",
        json!({"text": finding, "question": "alpha 周末发货吗？", "metadata": {"ttl": "7d"}}),
    );
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(
        decision(&first.body),
        pair("accepted", "new"),
        "{}",
        first.text
    );
    let again = post("tok-a", json!({"text": finding}));
    assert_eq!(
        decision(&again.body),
        pair("refused", "duplicate"),
        "{}",
        again.text
    );
    let refusal = post("tok-a", json!({"text": "抱歉，我无法回答这个问题。"}));
    assert_eq!(
        decision(&refusal.body),
        pair("refused", "refusal"),
        "{}",
        refusal.text
    );
    // A reader cannot write back; a request outside the schema is refused before any judging.
    assert_eq!(post("tok-a-read", json!({"text": finding})).status, 403);
    assert_eq!(
        post("tok-a", json!({"text": finding, "extra": 1})).status,
        400
    );
    // The accepted write is searchable at once, and each decision is audited.
    let hits = support::call(
        "POST",
        &s.url("/v1/search"),
        Some("tok-a"),
        Some(&json!({"query": "周末发货截止时间", "mode": "lexical"})),
    );
    assert_eq!(
        hits.body["hits"][0]["doc_id"], first.body["doc_id"],
        "{}",
        hits.text
    );
    drop(s);
    let audit = JsonlAuditLog::in_store(&kb.canonicalize().unwrap().join(".zhiku"))
        .entries()
        .unwrap();
    assert_eq!(audit.len(), 3, "{audit:?}");
}
