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
    let store = Store::open(&root.join(".zhiku"), config, Purpose::Write, Some(&root)).unwrap();
    zhiku_app::wiring::open_service(store, Some(Origin::Folder { root }))
        .unwrap()
        .0
}

fn agent() -> Caller {
    Caller {
        name: "agent-7".into(),
        scopes: vec![Scope::new("alpha").unwrap()],
        write: true,
        principal: None,
        operator: false,
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
        principal: None,
        operator: false,
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
    support::assert_succeeded(&out);
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
    support::assert_succeeded(&out);
    let lines: Vec<Value> = support::json_lines(&out.stdout);
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

fn beta_agent() -> Caller {
    Caller {
        name: "agent-b".into(),
        scopes: vec![Scope::new("beta").unwrap()],
        write: true,
        principal: None,
        operator: false,
    }
}

fn write_as(kb: &KnowledgeBase, caller: &Caller, w: KnowledgeWrite) -> Value {
    serde_json::to_value(kb.add_knowledge(caller, w).unwrap()).unwrap()
}

#[test]
fn a_derived_id_belongs_to_its_scope_so_no_scope_can_probe_or_squat_another() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb(&kb_dir);
    let text = |t: &str| KnowledgeWrite {
        text: t.into(),
        ..KnowledgeWrite::default()
    };
    // Alpha writes a text first (as a squatter would, ahead of beta's write-back of it).
    let alpha = write_as(&kb, &agent(), text(FINDING));
    assert_eq!(decision(&alpha), pair("accepted", "new"), "{alpha}");
    // Beta writing the same text learns nothing of alpha's and is not blocked by it: its own
    // document, under its own ID (the ID was the text's alone, so this was 404, not found).
    let beta = write_as(&kb, &beta_agent(), text(FINDING));
    assert_eq!(decision(&beta), pair("accepted", "new"), "{beta}");
    assert_ne!(alpha["doc_id"], beta["doc_id"]);
    assert!(beta["doc_id"].as_str().unwrap().starts_with("kb-"));
    // Within a scope the ID is still the text's: the same text again is the same document.
    let again = write_as(&kb, &beta_agent(), text(&FINDING.replace('，', ", ")));
    assert_eq!(decision(&again), pair("refused", "duplicate"), "{again}");
    assert_eq!(again["doc_id"], beta["doc_id"]);
    assert_eq!(again["duplicate_of"], beta["doc_id"]);
    // Each scope reads its own and not the other's.
    let alpha_id = alpha["doc_id"].as_str().unwrap();
    let beta_id = beta["doc_id"].as_str().unwrap();
    assert!(kb.document(&agent(), alpha_id).is_ok());
    assert!(kb.document(&agent(), beta_id).is_err());
    assert!(kb.document(&beta_agent(), alpha_id).is_err());
    assert!(kb.document(&beta_agent(), beta_id).is_ok());
}

#[test]
fn an_invalid_id_is_refused_before_it_is_audited_and_audited_escaped_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb(&kb_dir);
    let audit_file = kb_dir.canonicalize().unwrap().join(".zhiku/audit.jsonl");
    let with_id = |id: String| KnowledgeWrite {
        id: Some(id),
        text: FINDING.into(),
        ..KnowledgeWrite::default()
    };
    // An ID that would forge a second line of `zhiku audit`, recolour the terminal and ring
    // the bell is refused; its entry keeps it escaped, on one line.
    let forged = "x\n2030-01-01T00:00:00Z\tadmin\taccepted\tnew\u{1b}[31m\u{7}".to_string();
    let err = kb.add_knowledge(&agent(), with_id(forged)).unwrap_err();
    assert!(matches!(err, zhiku_service::KbError::Invalid(_)), "{err:?}");
    let entries = kb.audit_entries(&agent()).unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(
        (entry.decision.as_str(), entry.reason.as_str()),
        ("refused", "invalid")
    );
    for field in [&entry.doc_id, &entry.detail] {
        assert!(!field.chars().any(char::is_control), "{field:?}");
    }
    assert!(entry.doc_id.starts_with("x\\n2030"), "{:?}", entry.doc_id);
    let size = std::fs::metadata(&audit_file).unwrap().len();
    assert_eq!(
        std::fs::read_to_string(&audit_file)
            .unwrap()
            .lines()
            .count(),
        1
    );

    // A megabyte ID costs the trail a bounded entry and the client a bounded message.
    let huge = "y".repeat(1 << 20);
    let err = kb.add_knowledge(&agent(), with_id(huge)).unwrap_err();
    assert!(
        err.to_string().len() < 1_000,
        "{} bytes",
        err.to_string().len()
    );
    let grown = std::fs::metadata(&audit_file).unwrap().len() - size;
    assert!(grown < 2_000, "the entry took {grown} bytes");
    let entries = kb.audit_entries(&agent()).unwrap();
    assert!(
        entries[1].doc_id.ends_with("more bytes)"),
        "{}",
        entries[1].doc_id
    );
    // Nothing was written.
    let (docs, _) = kb.documents(&agent(), 0, 100);
    assert!(
        docs.iter().all(|d| d.id.as_str().starts_with("alpha-")),
        "{docs:?}"
    );
}

#[test]
fn when_the_audit_cannot_be_written_nothing_is_written_and_no_path_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb(&kb_dir);
    let root = kb_dir.canonicalize().unwrap();
    // A folder where the trail's file should be: no append can succeed, not even as root.
    std::fs::create_dir_all(root.join(".zhiku/audit.jsonl")).unwrap();
    let files_before = files_of(&root);
    let err = kb
        .add_knowledge(
            &agent(),
            KnowledgeWrite {
                text: FINDING.into(),
                ..KnowledgeWrite::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, zhiku_service::KbError::Unavailable(_)),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("audit log"), "{message}");
    assert!(!message.contains('/'), "a server path in {message:?}");
    assert!(!message.contains(root.to_str().unwrap()), "{message}");
    // Nothing was committed: no document, no file, nothing to find.
    let (docs, _) = kb.documents(&agent(), 0, 100);
    assert!(
        docs.iter().all(|d| !d.id.as_str().starts_with("kb-")),
        "{docs:?}"
    );
    assert_eq!(files_of(&root), files_before);
    // A gate refusal cannot be recorded either, and says so the same way.
    let err = kb
        .add_knowledge(
            &agent(),
            KnowledgeWrite {
                text: "九点。".into(),
                ..KnowledgeWrite::default()
            },
        )
        .unwrap_err();
    assert!(!err.to_string().contains('/'), "{err}");
    // Once the trail can be written again, the same write goes through, audited.
    std::fs::remove_dir(root.join(".zhiku/audit.jsonl")).unwrap();
    let v = write(&kb, FINDING, None);
    assert_eq!(decision(&v), pair("accepted", "new"), "{v}");
    assert_eq!(kb.audit_entries(&agent()).unwrap().len(), 1);
}

/// The knowledge base's files (outside the store), relative.
fn files_of(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.ends_with(".zhiku") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn over_http_another_scopes_text_is_no_probe_and_an_unwritable_audit_is_a_503_without_paths() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let post = |token: &str, body: Value| {
        support::call("POST", &s.url("/v1/knowledge"), Some(token), Some(&body))
    };
    let finding = "alpha 仓库的周末发货截止时间是周五下午四点，之后的订单在下周一发出。";
    let a = post("tok-a", json!({"text": finding}));
    assert_eq!(decision(&a.body), pair("accepted", "new"), "{}", a.text);
    // The same text from beta: its own write (this answered 404 while IDs were the text's).
    let b = post("tok-b", json!({"text": finding}));
    assert_eq!(b.status, 200, "{}", b.text);
    assert_eq!(decision(&b.body), pair("accepted", "new"), "{}", b.text);
    assert_ne!(a.body["doc_id"], b.body["doc_id"]);

    let root = kb.canonicalize().unwrap();
    let trail = root.join(".zhiku/audit.jsonl");
    std::fs::remove_file(&trail).unwrap();
    std::fs::create_dir(&trail).unwrap();
    let other = "alpha 仓库的节假日发货安排是提前两天截单，节后第一个工作日统一发出。";
    let refused = post("tok-a", json!({"text": other}));
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(
        !refused.text.contains(root.to_str().unwrap()),
        "{}",
        refused.text
    );
    assert!(!refused.text.contains(".zhiku"), "{}", refused.text);
    assert!(!refused.text.contains("/tmp"), "{}", refused.text);
    // Nothing was committed: the text is found nowhere.
    let hits = support::call(
        "POST",
        &s.url("/v1/search"),
        Some("tok-a"),
        Some(&json!({"query": "节假日发货安排", "mode": "lexical"})),
    );
    assert!(
        hits.body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h.to_string().contains("节假日")),
        "{}",
        hits.text
    );
    let listed = support::call("GET", &s.url("/v1/documents"), Some("tok-a"), None);
    assert!(!listed.text.contains("节假日"), "{}", listed.text);
    let kb_docs = files_of(&root)
        .into_iter()
        .filter(|f| f.starts_with("kb-") || f.contains("/kb-"))
        .count();
    assert_eq!(kb_docs, 2, "{:?}", files_of(&root));
}

/// A person's audit trail: their own write-backs and those of documents they may read; a
/// write-back of a document restricted to others is not theirs to learn of (it names the
/// document), while an operator and a service caller see every entry of their scopes.
#[test]
fn a_person_sees_the_audit_entries_of_what_they_may_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let kb_dir = two_scope_kb(dir.path(), "", "");
    let kb = open_kb(&kb_dir);
    let person = |name: &str, groups: &[&str], operator: bool| Caller {
        name: name.into(),
        scopes: vec![Scope::new("alpha").unwrap()],
        write: true,
        principal: Some(zhiku_domain::Principal::new(&format!("{name}@corp"), groups).unwrap()),
        operator,
    };
    let wang = person("wang", &["hr"], false);
    let li = person("li", &[], false);
    let ops = person("ops", &[], true);
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("access".to_string(), json!(["group:hr"]));
    kb.add_knowledge(
        &wang,
        KnowledgeWrite {
            text: FINDING.into(),
            id: Some("hr-finding".into()),
            metadata,
            ..KnowledgeWrite::default()
        },
    )
    .unwrap();
    kb.add_knowledge(
        &li,
        KnowledgeWrite {
            text: format!("{EDITED}{FILLER}"),
            id: Some("li-finding".into()),
            ..KnowledgeWrite::default()
        },
    )
    .unwrap();
    let docs = |c: &Caller| -> Vec<String> {
        kb.audit_entries(c)
            .unwrap()
            .into_iter()
            .map(|e| e.doc_id)
            .collect()
    };
    assert_eq!(docs(&wang), ["hr-finding", "li-finding"]);
    assert_eq!(docs(&li), ["li-finding"]);
    assert_eq!(docs(&ops), ["hr-finding", "li-finding"]);
    assert_eq!(docs(&agent()), ["hr-finding", "li-finding"]);
}
