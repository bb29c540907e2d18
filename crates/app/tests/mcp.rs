//! The MCP server driven by the official Python client (PyPI `mcp`), over stdio (`zhiku mcp`)
//! and over streamable HTTP (`zhiku serve`, `/mcp`, with a bearer token).
//!
//! Needs `bash scripts/setup-mcp-client.sh` (scripts/check runs it and sets
//! ZHIKU_MCP_PYTHON and ZHIKU_REQUIRE_MCP=1, so in CI a missing client fails instead of
//! skipping).

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{Server, two_scope_kb};

fn client(args: &[&str]) -> Option<Value> {
    let Some(py) = support::mcp_python() else {
        if std::env::var_os("ZHIKU_REQUIRE_MCP").is_some() {
            panic!(
                "MCP client test required but the Python mcp package is missing; run bash scripts/setup-mcp-client.sh"
            );
        }
        eprintln!(
            "SKIPPED MCP client test: no Python with the mcp package; run bash scripts/setup-mcp-client.sh (or set ZHIKU_MCP_PYTHON)"
        );
        return None;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py");
    let out = Command::new(py)
        .arg(script)
        .args(args)
        .output()
        .expect("run the MCP client");
    support::assert_succeeded(&out);
    Some(serde_json::from_slice(&out.stdout).expect("one JSON object"))
}

fn check(r: &Value, own: &str, foreign: &str) {
    assert_eq!(r["server"], "zhiku");
    assert_eq!(
        r["tools"],
        serde_json::json!([
            "add_knowledge",
            "ask_knowledge",
            "read_document",
            "search_knowledge"
        ])
    );
    assert!(r["tool_schemas"]["search_knowledge"]["properties"]["query"].is_object());
    assert!(r["tool_schemas"]["ask_knowledge"]["properties"]["question"].is_object());
    let hits = r["search"]["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    for h in hits {
        assert!(h["chunk_id"].is_string() && h["title"].is_string() && h["source"].is_string());
        assert!(h["score"].as_f64().unwrap() > 0.0);
        assert_ne!(h["doc_id"], foreign);
    }
    assert_eq!(r["ask"]["status"], "answered", "{}", r["ask"]);
    assert_eq!(r["ask"]["citations"][0]["doc_id"], own);
    assert!(r["ask"]["trace_id"].is_string());
    // A follow-up with the conversation as history is made standalone, and still searches
    // the caller's scopes only.
    assert!(r["tool_schemas"]["ask_knowledge"]["properties"]["history"].is_object());
    let follow_up = &r["follow_up"];
    assert_eq!(follow_up["question"], "那 beta 客户呢？");
    assert!(
        follow_up["rewritten"]
            .as_str()
            .is_some_and(|q| q.starts_with("beta 客户")),
        "{follow_up}"
    );
    for e in follow_up["evidence"].as_array().unwrap() {
        assert_ne!(e["doc_id"], foreign, "{follow_up}");
    }
    let uris: Vec<&str> = r["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["uri"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&format!("zhiku://documents/{own}").as_str()),
        "{uris:?}"
    );
    assert!(!uris.iter().any(|u| u.ends_with(foreign)), "{uris:?}");
    assert!(r["read_text"].as_str().unwrap().len() > 10);
    assert!(r["refused_empty_query"].as_str().unwrap().contains("empty"));
    assert!(r["missing_resource"].is_string());
    // A hit leads to its section: the section holds the hit's chunk, at the document's revision.
    let (hit, section) = (&r["hit"], &r["read_section"]);
    assert_eq!(section["doc_id"], hit["doc_id"]);
    assert_eq!(section["section"], hit["section"]);
    assert!(
        section["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["chunk_id"] == hit["chunk_id"]),
        "{section}"
    );
    assert!(
        section["text"]
            .as_str()
            .unwrap()
            .contains(hit["content"].as_str().unwrap().trim())
    );
    assert_eq!(r["read_whole"]["revision"], section["revision"]);
    assert!(r["read_whole"]["chars"].as_u64() >= section["chars"].as_u64());
    // Another scope's document reads exactly as a missing one.
    let (missing, foreign_read) = (
        r["missing_read"].as_str().unwrap(),
        r["foreign_read"].as_str().unwrap(),
    );
    assert!(missing.contains("no document"), "{missing}");
    assert_eq!(
        foreign_read.replace(foreign, "X"),
        missing.replace("no-such-document", "X")
    );
}

#[test]
fn the_python_client_uses_both_tools_and_the_resources_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    // Index first, so the stdio server starts at once.
    let index = assert_cmd::Command::cargo_bin("zhiku")
        .unwrap()
        .env_clear()
        .arg("--kb")
        .arg(&kb)
        .arg("index")
        .output()
        .unwrap();
    assert!(
        index.status.success(),
        "{}",
        String::from_utf8_lossy(&index.stderr)
    );
    let bin = assert_cmd::cargo::cargo_bin("zhiku");
    let Some(r) = client(&[
        "stdio",
        bin.to_str().unwrap(),
        kb.to_str().unwrap(),
        "alpha 客户的退货期限是多少天？",
        "退货期限",
        "beta-returns",
    ]) else {
        return;
    };
    eprintln!(
        "stdio: protocol {}, {} resources",
        r["protocol"],
        r["resources"].as_array().unwrap().len()
    );
    // stdio is the local user: the configuration's trusted scopes (alpha, public).
    check(&r, "alpha-returns", "beta-returns");
}

#[test]
fn the_python_client_uses_streamable_http_with_the_tokens_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let url = s.url("/mcp");
    let Some(b) = client(&[
        "http",
        &url,
        "tok-b",
        "beta 客户的退货期限是多少天？",
        "退货期限",
        "alpha-returns",
    ]) else {
        return;
    };
    eprintln!("http: protocol {}", b["protocol"]);
    check(&b, "beta-returns", "alpha-returns");
    let a = client(&[
        "http",
        &url,
        "tok-a",
        "alpha 客户的退货期限是多少天？",
        "退货期限",
        "beta-returns",
    ])
    .unwrap();
    check(&a, "alpha-returns", "beta-returns");
}
