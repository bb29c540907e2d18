//! `zhiku serve` against its own OpenAPI document, with schemathesis (PyPI): generated valid and
//! invalid requests for every operation, and every response — status codes, content types,
//! bodies, server-sent events — checked against the document. A fixed seed keeps runs
//! repeatable. `/mcp` is left to the MCP client test (its protocol is not described here).
//!
//! Needs `bash scripts/setup-schemathesis.sh` (scripts/check runs it and sets
//! ZHIKU_SCHEMATHESIS and ZHIKU_REQUIRE_SCHEMATHESIS=1, so in CI it fails instead of skipping).

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::{Server, two_scope_kb};

fn st() -> Option<PathBuf> {
    [
        std::env::var_os("ZHIKU_SCHEMATHESIS").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/zhiku/venv-st/bin/st")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.exists())
}

#[test]
fn every_response_matches_the_openapi_document() {
    let Some(st) = st() else {
        if std::env::var_os("ZHIKU_REQUIRE_SCHEMATHESIS").is_some() {
            panic!("schemathesis required but missing; run bash scripts/setup-schemathesis.sh");
        }
        eprintln!(
            "SKIPPED every_response_matches_the_openapi_document: no schemathesis; run bash scripts/setup-schemathesis.sh (or set ZHIKU_SCHEMATHESIS)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let out = Command::new(st)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .args(["run", &s.url("/v1/openapi.json")])
        .args(["-H", "Authorization: Bearer tok-a"])
        .args([
            "--checks",
            "all",
            "--max-examples",
            "40",
            "--seed",
            "20261130",
        ])
        // JSON text is Unicode: lone UTF-16 surrogates are refused by design, so strings are
        // generated as UTF-8.
        .args(["--generation-codec", "utf-8", "--exclude-path", "/mcp"])
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = report.lines().filter(|l| l.contains("generated")).collect();
    eprintln!("schemathesis: {}", summary.join(" | "));
    assert!(
        out.status.success(),
        "schemathesis found responses that break the OpenAPI document:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
