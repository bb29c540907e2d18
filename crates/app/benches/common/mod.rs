//! What the benchmarks share: paths, the peak RSS of this process, percentiles and the peers'
//! Python environments.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The CMRC 2018 dev set beside the checkout (`../shared/datasets/cmrc2018-dev`).
pub(crate) fn default_cmrc() -> PathBuf {
    workspace_root().join("../shared/datasets/cmrc2018-dev")
}

/// Peak resident set of this process (VmHWM), in MiB.
pub(crate) fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The `p`-th percentile of sorted values (nearest rank), NaN when empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Runs a peer setup script (relative to the workspace root), which prints its venv's python
/// last; `None` (with the reason on stderr) when the setup fails.
pub(crate) fn peer_python(script: &str) -> Option<String> {
    let out = Command::new("bash")
        .arg(workspace_root().join(script))
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "peer setup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_string)
}
