//! What tests find on this machine: the test model's folder, a port nothing listens on, the
//! Qdrant server the project's scripts started.

use std::path::PathBuf;

/// The all-MiniLM-L6-v2 test model's folder: `ZHIKU_TEST_MODEL_DIR`, else where
/// `scripts/fetch-test-model.sh` puts it (`$ZHIKU_CACHE_DIR` or `~/.cache/zhiku`, then
/// `models/all-MiniLM-L6-v2`). `Err` says where it was looked for and how to get it, for the
/// caller's SKIPPED line.
pub fn test_model_dir() -> Result<PathBuf, String> {
    let dir = std::env::var_os("ZHIKU_TEST_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("ZHIKU_CACHE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/zhiku")
                })
                .join("models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "no test model at {} (run scripts/fetch-test-model.sh or set ZHIKU_TEST_MODEL_DIR)",
            dir.display()
        ))
    }
}

/// A loopback port nothing listens on: bound, noted, released. Another process may take it
/// meanwhile; tests use it for "connection refused" and accept that small race.
pub fn unused_local_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a loopback port")
}

/// The variable that names the Qdrant server (or a cluster's nodes, comma-separated) the
/// Qdrant tests run against.
pub const QDRANT_VAR: &str = "ZHIKU_TEST_QDRANT_URL";

/// The gRPC URL(s) of the Qdrant server test `suite::test` runs against, from
/// [`QDRANT_VAR`]. Without it the test says `SKIPPED` with the variable to set and gets `None`
/// (it then checks nothing), except when `ZHIKU_REQUIRE_QDRANT=1` (set by `scripts/check` once
/// its server runs): a missing variable is then a failure.
pub fn qdrant_server(suite: &str, test: &str) -> Option<String> {
    match std::env::var(QDRANT_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            if std::env::var("ZHIKU_REQUIRE_QDRANT").as_deref() == Ok("1") {
                panic!("ZHIKU_REQUIRE_QDRANT=1 but {QDRANT_VAR} is not set ({suite}::{test})");
            }
            crate::contract::notice(&format!(
                "SKIPPED {suite}::{test}: set {QDRANT_VAR}=http://127.0.0.1:6334 (the gRPC port of a Qdrant server) to run it against a real server"
            ));
            None
        }
    }
}
