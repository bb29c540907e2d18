//! Architecture invariants, checked by tests rather than by review.

use std::process::Command;

#[path = "architecture/module_graph.rs"]
mod module_graph;

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
const ADAPTERS: [&str; 13] = [
    "zhiku-adapters-memory",
    "zhiku-adapters-tantivy",
    "zhiku-adapters-candle",
    "zhiku-adapters-qdrant",
    "zhiku-adapters-offline",
    "zhiku-adapters-openai",
    "zhiku-adapters-fs",
    "zhiku-adapters-sqlite",
    "zhiku-adapters-usearch",
    "zhiku-adapters-tesseract",
    "zhiku-adapters-ppocr",
    "zhiku-adapters-oidc",
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
                "zhiku_adapters_openai::EmbedServer",
                "zhiku_adapters_openai::EMBED_INPUTS",
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

/// The domain's layers, innermost first: each may import the ones before it, never one after.
const DOMAIN_LAYERS: [&str; 4] = ["contracts", "rules", "ports", "usecases"];

/// Imports in the domain that point outward today, each with its way back: (module, the layer
/// it imports, why). This list only shrinks.
const OUTWARD_IMPORTS: [(&str, &str, &str); 0] = [];

/// **Architecture Invariant:** the domain's layers point inward: contracts import no rule, port
/// or use case; rules import no port or use case; ports import no use case (a port that
/// stores a use case's type made the two depend on each other); use cases import them all.
/// Test code may reach across (the round-trip properties cover every stored type).
#[test]
fn the_domains_layers_point_inward() {
    let domain = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/domain/src");
    let layer = |module: &str| {
        let top = module.split('/').next().unwrap_or_default();
        DOMAIN_LAYERS.iter().position(|l| *l == top)
    };
    let mut outward = Vec::new();
    let mut still_outward = std::collections::BTreeSet::new();
    let mut checked = 0;
    for (from, to, written) in module_graph::ModuleGraph::read(&domain).imports() {
        let (Some(inner), Some(outer)) = (layer(from), layer(to)) else {
            continue;
        };
        checked += 1;
        if outer <= inner {
            continue;
        }
        let known = OUTWARD_IMPORTS
            .iter()
            .position(|(module, imported, _)| *module == from && *imported == DOMAIN_LAYERS[outer]);
        match known {
            Some(entry) => {
                still_outward.insert(entry);
            }
            None => outward.push(format!("{from} imports {to} ({written})")),
        }
    }
    for (entry, (module, imported, _)) in OUTWARD_IMPORTS.iter().enumerate() {
        if !still_outward.contains(&entry) {
            eprintln!("{module} no longer imports {imported}: remove it from OUTWARD_IMPORTS");
        }
    }
    assert!(checked >= 20, "only {checked} imports between layers found");
    assert!(
        outward.is_empty(),
        "the domain's layers point outward:\n{}",
        outward.join("\n")
    );
}

/// The domain's use cases: the types that run a step over borrowed ports (`pub struct X<'a>`
/// in `crates/domain/src/usecases`; the test checks this list against them).
const USE_CASES: [&str; 5] = [
    "Answerer",
    "Consistency",
    "DocumentReader",
    "Indexer",
    "Retriever",
];

/// Files of the binary outside `wiring/` that still build a use case, each with why. This list
/// only shrinks.
const BUILDS_USE_CASES: [(&str, &str); 0] = [];

/// **Architecture Invariant:** the binary builds no use case itself: its commands go through
/// the service (`zhiku_service::KnowledgeBase`), the one way in for the CLI, HTTP and MCP, so
/// no command can leave out what the service attaches (a judge, a reranker, the wall clock).
/// Only the composition root (`wiring/`) may construct one (`Indexer::…`, `Retriever::…`).
#[test]
fn the_binary_builds_no_use_case_itself() {
    let usecases =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/domain/src/usecases");
    let mut declared: Vec<String> = Vec::new();
    for file in rust_files(&usecases) {
        let code = module_graph::code_of(&file);
        for (i, _) in code.match_indices("pub struct ") {
            let rest = &code[i + "pub struct ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if rest[name.len()..].starts_with("<'a>") {
                declared.push(name);
            }
        }
    }
    declared.sort();
    assert_eq!(
        declared,
        USE_CASES,
        "the use cases in {}",
        usecases.display()
    );
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/app/src");
    let mut built = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("wiring/") {
            continue;
        }
        let code = module_graph::code_of(&file);
        let listed = BUILDS_USE_CASES.iter().any(|(f, _)| *f == rel);
        let mut builds_any = false;
        for name in USE_CASES {
            let path = format!("{name}::");
            let builds = code.match_indices(&path).any(|(i, _)| {
                !code[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            builds_any |= builds;
            if builds && !listed {
                built.push(format!("crates/app/src/{rel} builds {name}"));
            }
        }
        if listed && !builds_any {
            eprintln!("{rel} builds no use case any more: remove it from BUILDS_USE_CASES");
        }
    }
    assert!(
        built.is_empty(),
        "use cases built outside the wiring:\n{}",
        built.join("\n")
    );
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

/// Import cycles in code other changes are reworking right now: (crate, modules, the cycle).
/// A cycle is let through while each of its modules is one of those modules or under one of
/// them (`"*"`: any module of the crate). Every other crate and module has none. This list
/// only shrinks: remove an entry once its cycle is gone, and never add one.
const CYCLES_BEING_REMOVED: [(&str, &[&str], &str); 0] = [];

/// **Architecture Invariant:** the modules of every crate import each other without a cycle
/// (in the binary: configuration is a leaf; wiring depends on configuration, the commands on
/// both). A crate root or a parent module that calls into its submodules takes nothing from
/// them back: what both need sits in a leaf module of its own. (How the imports are read:
/// `architecture/module_graph.rs`.)
#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let mut found = Vec::new();
    let mut still_there = std::collections::BTreeSet::new();
    let mut checked = 0;
    for krate in std::fs::read_dir(&crates).unwrap() {
        let krate = krate.unwrap().path();
        let src = krate.join("src");
        if !src.is_dir() {
            continue;
        }
        checked += 1;
        let name = krate.file_name().unwrap().to_string_lossy().to_string();
        for cycle in module_graph::ModuleGraph::read(&src).cycles() {
            let being_removed = CYCLES_BEING_REMOVED.iter().position(|(krate, modules, _)| {
                *krate == name
                    && cycle.modules.iter().all(|m| {
                        modules.iter().any(|under| {
                            *under == "*" || m == under || m.starts_with(&format!("{under}/"))
                        })
                    })
            });
            match being_removed {
                Some(entry) => {
                    eprintln!("being removed: crates/{name}: {cycle}");
                    still_there.insert(entry);
                }
                None => found.push(format!("crates/{name}: {cycle}")),
            }
        }
    }
    for (entry, (krate, _, cycle)) in CYCLES_BEING_REMOVED.iter().enumerate() {
        if !still_there.contains(&entry) {
            eprintln!("crates/{krate}: {cycle} is gone: remove it from CYCLES_BEING_REMOVED");
        }
    }
    assert!(
        checked >= 10,
        "only {checked} crates found under {}",
        crates.display()
    );
    assert!(
        found.is_empty(),
        "import cycles between modules:\n{}",
        found.join("\n")
    );
}

/// **Architecture Invariant:** the use cases build their trace from the typed steps of
/// `ports::trace` (`Stage`), never from ad-hoc JSON: no `json!`, no `serde_json::Value` in
/// `crates/domain/src/usecases`.
#[test]
fn use_cases_trace_typed_steps_not_json() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/domain/src/usecases");
    let mut checked = 0;
    for path in rust_files(std::path::Path::new(root)) {
        let text = std::fs::read_to_string(&path).unwrap();
        for word in ["json!", "serde_json::Value", "Value::Object"] {
            assert!(!text.contains(word), "{} uses {word}", path.display());
        }
        checked += 1;
    }
    assert!(
        checked >= 12,
        "only {checked} use-case files found under {root}"
    );
}

/// **Architecture Invariant:** an adapter's zhiku dependencies are the domain and the support
/// crates alone (`zhiku-text`, `zhiku-formats`, `zhiku-files`, `zhiku-analyzer`), and the
/// support crates depend on no adapter, no service and no port: `zhiku-text` on no zhiku
/// crate, `zhiku-formats` and `zhiku-analyzer` on `zhiku-text` alone, `zhiku-files` on none. What two adapters share lives in one of them.
#[test]
fn adapters_share_only_the_domain_and_the_support_crates() {
    let support = [
        "zhiku-text",
        "zhiku-formats",
        "zhiku-files",
        "zhiku-analyzer",
    ];
    for adapter in ADAPTERS {
        for dep in dependency_tree(adapter) {
            if dep.starts_with("zhiku-") && dep != adapter {
                assert!(
                    dep == "zhiku-domain" || support.contains(&dep.as_str()),
                    "{adapter} depends on {dep}"
                );
            }
        }
    }
    let allowed: [(&str, &[&str]); 4] = [
        ("zhiku-text", &[]),
        ("zhiku-formats", &["zhiku-text"]),
        ("zhiku-files", &[]),
        ("zhiku-analyzer", &["zhiku-text"]),
    ];
    for (krate, may) in allowed {
        for dep in dependency_tree(krate) {
            if dep.starts_with("zhiku-") && dep != krate {
                assert!(may.contains(&dep.as_str()), "{krate} depends on {dep}");
            }
        }
    }
}
