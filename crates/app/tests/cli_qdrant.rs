//! `zhiku --profile prod` end to end: index and search the sample knowledge base with the
//! vectors on a real Qdrant server, and what happens when the server cannot be reached.
//!
//! Set `ZHIKU_TEST_QDRANT_URL=http://127.0.0.1:6334` (the gRPC port of a Qdrant server) to run
//! them; without it they print `SKIPPED` and check nothing. The hashing embedder stands in for
//! the model, so no weights are needed.

use std::path::{Path, PathBuf};

mod support;

use assert_cmd::Command;
use serde_json::Value;
use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};

fn server(test: &str) -> Option<String> {
    zhiku_tests::local::qdrant_server("cli_qdrant", test)
}

fn examples_kb() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kb")
}

/// A unique collection prefix, so parallel runs never meet.
fn prefix() -> String {
    format!("zhiku_clitest{}_", std::process::id())
}

fn zhiku(store: &Path, url: &str, prefix: &str) -> Command {
    let mut cmd = Command::cargo_bin("zhiku").unwrap();
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ZHIKU_EMBEDDER", "hashing")
        .env("ZHIKU_QDRANT_URL", url)
        .env("ZHIKU_QDRANT_COLLECTION_PREFIX", prefix)
        .env("ZHIKU_QDRANT_TIMEOUT_MS", "3000")
        .arg("--profile")
        .arg("prod")
        .arg("--kb")
        .arg(examples_kb())
        .arg("--store")
        .arg(store);
    cmd
}

fn run_json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Drops the test's collections when the test ends, however it ends.
struct Cleanup {
    config: QdrantConfig,
    store: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Ok(kb) = zhiku_app::wiring::qdrant::kb_name(&self.store) {
            let _ = QdrantVectorIndex::drop_kb_collections(&self.config, &kb);
        }
    }
}

fn dead_url() -> String {
    let port = zhiku_tests::local::unused_local_port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn prod_indexes_and_searches_through_qdrant_and_falls_back_when_it_is_gone() {
    let Some(url) =
        server("prod_indexes_and_searches_through_qdrant_and_falls_back_when_it_is_gone")
    else {
        return;
    };
    let store = tempfile::tempdir().unwrap();
    let prefix = prefix();
    let _cleanup = Cleanup {
        config: QdrantConfig {
            collection_prefix: prefix.clone(),
            ..QdrantConfig::with_url(&url)
        },
        store: store.path().to_path_buf(),
    };

    // Index: every chunk embedded and stored in Qdrant.
    let first = run_json(zhiku(store.path(), &url, &prefix).args(["index", "--json"]));
    assert!(first["docs_added"].as_u64().unwrap() >= 10, "{first}");
    let embedded = first["chunks_embedded"].as_u64().unwrap();
    assert!(embedded > 0, "{first}");

    let status = run_json(zhiku(store.path(), &url, &prefix).args(["status", "--json"]));
    let choice = |port: &str| {
        status["adapters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["port"] == port)
            .unwrap_or_else(|| panic!("no {port} in {status}"))["choice"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        choice("vectors").starts_with("qdrant in hashing"),
        "{status}"
    );
    assert!(choice("qdrant").contains(&prefix), "{status}");
    assert!(choice("qdrant").contains(&url), "{status}");
    assert_eq!(status["chunks"].as_u64().unwrap(), embedded, "{status}");
    assert!(
        !store.path().join("vectors.bin").exists(),
        "vectors live in Qdrant"
    );

    // An unchanged re-index reuses the vectors stored in Qdrant.
    let again = run_json(zhiku(store.path(), &url, &prefix).args(["index", "--json"]));
    assert_eq!(again["chunks_embedded"], 0, "{again}");
    zhiku(store.path(), &url, &prefix)
        .args(["verify"])
        .assert()
        .success()
        .stdout(predicates::str::contains("and the vectors"));

    // Search: both routes run; the dense one through Qdrant.
    let found = run_json(zhiku(store.path(), &url, &prefix).args([
        "search",
        "切分策略改变后 chunkId 会怎样？",
        "--json",
    ]));
    let routes = found["routes"].as_array().unwrap();
    assert!(
        routes.iter().all(|r| r["status"] == "ran"),
        "{}",
        found["routes"]
    );
    let evidence = found["evidence"].as_array().unwrap();
    assert!(!evidence.is_empty());
    assert!(
        evidence.iter().any(|e| e["routes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["route"] == "dense")),
        "{found}"
    );

    // A cluster's nodes listed with the first one dead: requests move to the next node at
    // once, and both routes run as with the live node alone.
    let listed = format!("{},{url}", dead_url());
    let found = run_json(zhiku(store.path(), &listed, &prefix).args([
        "search",
        "切分策略改变后 chunkId 会怎样？",
        "--json",
    ]));
    assert!(
        found["routes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "ran"),
        "{}",
        found["routes"]
    );
    assert_eq!(found["evidence"].as_array().unwrap(), evidence, "{found}");

    // The server is unreachable: search falls back to the lexical route and says why.
    let dead = dead_url();
    let manifest = support::stored_catalog(store.path());
    let out = zhiku(store.path(), &dead, &prefix)
        .args(["search", "切分策略改变后 chunkId 会怎样？", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("notice:"), "{stderr}");
    assert!(
        stderr.contains("unavailable") || stderr.contains("unreachable"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&dead),
        "the notice names the server: {stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lexical_only: Vec<&Value> = v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "ran")
        .collect();
    assert_eq!(lexical_only.len(), 1, "{}", v["routes"]);
    assert_eq!(lexical_only[0]["route"], "lexical");
    assert!(!v["evidence"].as_array().unwrap().is_empty(), "{v}");

    // Indexing cannot proceed: a clear error, and the manifest is not advanced.
    let out = zhiku(store.path(), &dead, &prefix)
        .args(["index", "--rebuild"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&dead), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    let out = zhiku(store.path(), &dead, &prefix)
        .args(["index"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot index"), "{stderr}");
    assert!(stderr.contains("nothing was recorded"), "{stderr}");
    assert_eq!(
        support::stored_catalog(store.path()),
        manifest,
        "the catalog is untouched"
    );

    // Back on the live server, everything is still there.
    let back = run_json(zhiku(store.path(), &url, &prefix).args(["index", "--json"]));
    assert_eq!(back["chunks_embedded"], 0, "{back}");
}
