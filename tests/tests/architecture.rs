//! Architecture invariants, checked by tests rather than by review.

use std::process::Command;

/// **Architecture Invariant:** `zhiku-domain` is pure: its dependency tree contains no async
/// runtime, no index engine, no ML runtime, no network client and no web framework.
#[test]
fn domain_dependency_tree_is_pure() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "zhiku-domain",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"zhiku-domain"),
        "unexpected cargo tree output: {tree}"
    );
    let forbidden = [
        "tokio",
        "tantivy",
        "candle-core",
        "candle-nn",
        "candle-transformers",
        "qdrant-client",
        "reqwest",
        "axum",
        "hyper",
        "tonic",
    ];
    for name in &names {
        assert!(!forbidden.contains(name), "zhiku-domain depends on {name}");
        assert!(
            !name.starts_with("zhiku-adapters"),
            "zhiku-domain depends on adapter {name}"
        );
    }
}

/// **Architecture Invariant:** the domain crate's source does no I/O: no `std::fs`, `std::net`,
/// `std::process`, environment or clock access.
#[test]
fn domain_source_does_no_io() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/domain/src");
    let mut stack = vec![std::path::PathBuf::from(root)];
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "Instant::now",
        "SystemTime",
        "std::io::stdin",
        "println!",
        "eprintln!",
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for word in forbidden {
                    assert!(!text.contains(word), "{} uses {word}", path.display());
                }
            }
        }
    }
}

/// **Architecture Invariant:** the use cases build their trace from the typed steps of
/// `ports::trace` (`Stage`), never from ad-hoc JSON: no `json!`, no `serde_json::Value` in
/// `crates/domain/src/usecases`.
#[test]
fn use_cases_trace_typed_steps_not_json() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/domain/src/usecases");
    let mut checked = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for word in ["json!", "serde_json::Value", "Value::Object"] {
                assert!(!text.contains(word), "{} uses {word}", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} use-case files found under {root}");
}
