//! Architecture invariants, checked by tests rather than by review.

use std::process::Command;

/// **Architecture Invariant:** `zhiku-domain` is pure: its dependency tree contains no async
/// runtime, no index engine, no ML runtime, no network client and no web framework.
#[test]
fn domain_dependency_tree_is_pure() {
    let names = dependency_tree("zhiku-domain");
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
        assert!(
            !forbidden.contains(&name.as_str()),
            "zhiku-domain depends on {name}"
        );
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

/// The names of the packages `package` depends on (normal and build edges, all the way down),
/// `package` itself first.
fn dependency_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            package,
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
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(
        names.iter().any(|n| n == package),
        "unexpected cargo tree output for {package}: {names:?}"
    );
    names
}

/// The workspace's adapter crates.
const ADAPTERS: [&str; 11] = [
    "zhiku-adapters-memory",
    "zhiku-adapters-tantivy",
    "zhiku-adapters-candle",
    "zhiku-adapters-qdrant",
    "zhiku-adapters-generate",
    "zhiku-adapters-openai",
    "zhiku-adapters-rerank",
    "zhiku-adapters-fs",
    "zhiku-adapters-sqlite",
    "zhiku-adapters-usearch",
    "zhiku-eval",
];

/// Adapters the binary does not wire yet, each with its reason. They obey every other rule.
/// (None today: the usearch index was listed here until it became the `local` default.)
const NOT_YET_WIRED: [(&str, &str); 0] = [];

/// **Architecture Invariant:** only the binary (`zhiku`, whose `wiring` module is the
/// composition root) names adapter crates: the service and the transports depend on no
/// adapter, so any backend can be swapped without touching them. (`zhiku-eval` counts as an
/// adapter here: it holds the BEIR corpus as a document store.)
#[test]
fn only_the_binary_names_adapter_crates() {
    for package in ["zhiku-service", "zhiku-http", "zhiku-mcp", "zhiku-domain"] {
        let tree = dependency_tree(package);
        for adapter in ADAPTERS {
            assert!(
                !tree.iter().any(|n| n == adapter),
                "{package} depends on the adapter {adapter}"
            );
        }
    }
    let app = dependency_tree("zhiku");
    for adapter in ADAPTERS {
        if NOT_YET_WIRED.iter().any(|(name, _why)| *name == adapter) {
            continue;
        }
        assert!(
            app.iter().any(|n| n == adapter),
            "the binary should wire {adapter}"
        );
    }
}

/// **Architecture Invariant:** the application service runs on no async runtime and no web
/// framework and parses no command line: transports drive it from whatever executor they use.
#[test]
fn the_service_is_free_of_runtimes_and_frameworks() {
    let tree = dependency_tree("zhiku-service");
    for forbidden in [
        "tokio",
        "axum",
        "hyper",
        "tonic",
        "rmcp",
        "clap",
        "tantivy",
        "candle-core",
        "qdrant-client",
        "zhiku-http",
        "zhiku-mcp",
        "zhiku",
    ] {
        assert!(
            !tree.iter().any(|n| n == forbidden),
            "zhiku-service depends on {forbidden}"
        );
    }
}

/// The dependencies between adapters that are allowed, each with its reason.
/// (None today: adapters-fs depended on adapters-memory while the vector file was the memory
/// index persisted to disk.)
const ADAPTER_EXCEPTIONS: [(&str, &str, &str); 0] = [];

/// **Architecture Invariant:** adapters do not depend on each other (but for the exceptions
/// written down in `ADAPTER_EXCEPTIONS`), nor on the service, the transports or the binary:
/// each implements ports of the domain and nothing else.
#[test]
fn adapters_depend_only_on_the_domain() {
    let inner = ["zhiku-service", "zhiku-http", "zhiku-mcp", "zhiku"];
    for adapter in ADAPTERS {
        let tree = dependency_tree(adapter);
        for other in ADAPTERS.iter().chain(inner.iter()) {
            let allowed = ADAPTER_EXCEPTIONS
                .iter()
                .any(|(from, to, _why)| *from == adapter && to == other);
            if *other == adapter || allowed {
                continue;
            }
            assert!(
                !tree.iter().any(|n| n == other),
                "{adapter} depends on {other}"
            );
        }
    }
    // The HTTP transport never depends on the MCP one (MCP is mounted inside it).
    assert!(
        !dependency_tree("zhiku-http")
            .iter()
            .any(|n| n == "zhiku-mcp")
    );
}

/// **Architecture Invariant:** inside the binary, only `wiring/` names adapter crates (and
/// `config/` the settings types adapters own): the commands get ports from the wiring.
#[test]
fn inside_the_binary_only_wiring_names_adapters() {
    let src = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/app/src"));
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        let allowed: &[&str] = if rel.starts_with("wiring/") {
            &["zhiku_adapters_"]
        } else if rel.starts_with("config/") {
            &[
                "zhiku_adapters_qdrant::QdrantConfig",
                "zhiku_adapters_usearch::AnnSettings",
            ]
        } else {
            &[]
        };
        for (i, _) in text.match_indices("zhiku_adapters_") {
            let named = &text[i..];
            assert!(
                allowed.iter().any(|a| named.starts_with(a)),
                "crates/app/src/{rel} names an adapter crate: {}",
                named.lines().next().unwrap_or_default()
            );
        }
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// **Architecture Invariant:** the domain's layers point one way: contracts know no port and
/// no use case, ports know contracts but no use case (a port that stores a use case's type
/// made the two depend on each other), use cases know both.
#[test]
fn ports_and_contracts_import_no_use_case() {
    let domain = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/domain/src");
    for (layer, forbidden) in [
        ("contracts", &["crate::usecases", "crate::ports"][..]),
        ("ports", &["crate::usecases"][..]),
    ] {
        // A test module (`*_tests.rs`, compiled only for tests) may reach across layers: the
        // round-trip properties cover every stored type, the audit entry of a port included.
        for file in rust_files(&domain.join(layer))
            .into_iter()
            .filter(|f| !f.to_string_lossy().ends_with("_tests.rs"))
        {
            let text = std::fs::read_to_string(&file).unwrap();
            for word in forbidden {
                assert!(
                    !text.contains(word),
                    "{} ({layer}) imports {word}",
                    file.display()
                );
            }
        }
    }
}

/// **Architecture Invariant:** every source file of every crate starts with a module doc
/// (`//!`) saying what it is for.
#[test]
fn every_source_file_starts_with_a_module_doc() {
    let crates = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates");
    let mut missing = Vec::new();
    for krate in std::fs::read_dir(crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if !first.starts_with("//!") {
                missing.push(file.display().to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files without a module doc: {missing:#?}"
    );
}

/// **Architecture Invariant:** the modules of the binary crate import each other without a
/// cycle (configuration is a leaf; wiring depends on configuration, the commands on both).
#[test]
fn the_binarys_modules_import_each_other_without_a_cycle() {
    use std::collections::{BTreeMap, BTreeSet};
    let src = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/app/src"));
    // A module is named by its path under src/, without `.rs` and `/mod.rs`.
    let module_of = |file: &std::path::Path| -> String {
        let rel = file.strip_prefix(&src).unwrap().with_extension("");
        let rel = rel.to_string_lossy().replace('\\', "/");
        rel.strip_suffix("/mod").unwrap_or(&rel).to_string()
    };
    let files = rust_files(&src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    // The longest known module that `path` (segments after `crate::`) names.
    let resolve = |segments: &[&str]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("/"))
            .find(|m| modules.contains(m))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = module_of(file);
        let text = std::fs::read_to_string(file).unwrap();
        let parent: Vec<&str> = if file.ends_with("mod.rs") {
            from.split('/').collect()
        } else {
            from.split('/').collect::<Vec<_>>()[..from.split('/').count() - 1].to_vec()
        };
        for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.clone())] {
            for (i, _) in text.match_indices(prefix) {
                let rest: String = text[i + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut segments = base.clone();
                segments.extend(rest.split("::").filter(|s| !s.is_empty()));
                if let Some(to) = resolve(&segments)
                    && to != from
                    && !from.starts_with(&format!("{to}/"))
                {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        match state.get(m) {
            Some(2) => return,
            Some(1) => panic!("import cycle: {} -> {m}", path.join(" -> ")),
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            visit(next, edges, state, path);
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for m in &modules {
        visit(m, &edges, &mut state, &mut Vec::new());
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
    assert!(
        checked >= 4,
        "only {checked} use-case files found under {root}"
    );
}
