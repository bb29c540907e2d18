//! What tests find on this machine: the test model's folder, a port nothing listens on.

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
