//! Front matter and sidecar metadata, as the loader reads them.
//!
//! - A text starting with `---` is a whole Markdown file: `loader::load_text` splits off its
//!   front matter, parses it (`front_matter::parse_mapping`) and builds the `Document`
//!   (id, scope, locale, title, metadata), exactly as indexing a file of that content does.
//! - Anything else is a YAML mapping given to `front_matter::parse_mapping(text, "front
//!   matter")` directly (sidecars `<name>.metadata.yaml` go through the same function).
//!
//! Properties: no crash, no hang, no memory blow-up (anchors/aliases, nesting and node counts
//! are bounded before any value is built); an accepted mapping is within (a small multiple of)
//! `MAX_DEPTH` and `MAX_NODES`; and what is accepted survives the store: the metadata and the expiry its
//! `ttl`/`expires_at` resolve to are written and read back to the same values.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zhiku_adapters_fs::front_matter::{MAX_BYTES, MAX_DEPTH, MAX_NODES, parse_mapping};
use zhiku_adapters_fs::loader::{LoaderConfig, load_text};
use zhiku_domain::rules::retention::Retention;
use zhiku_domain::{Metadata, Timestamp};

fn depth_and_nodes(value: &serde_json::Value) -> (usize, usize) {
    match value {
        serde_json::Value::Array(items) => {
            let (mut depth, mut nodes) = (0, 1);
            for item in items {
                let (d, n) = depth_and_nodes(item);
                depth = depth.max(d);
                nodes += n;
            }
            (depth + 1, nodes)
        }
        serde_json::Value::Object(map) => {
            let (mut depth, mut nodes) = (0, 1);
            for item in map.values() {
                let (d, n) = depth_and_nodes(item);
                depth = depth.max(d);
                nodes += n + 1; // the key
            }
            (depth + 1, nodes)
        }
        _ => (0, 1),
    }
}

/// Metadata that was accepted must survive the catalog (JSON) and give an expiry that reads
/// back (issue 35, High 1: `ttl: 10000000d` stored a five-digit year).
fn check_stored(doc: &str, metadata: &Metadata) {
    let json = serde_json::to_string(metadata).expect("metadata serialises");
    let back: Metadata = serde_json::from_str(&json).expect("stored metadata reads back");
    assert_eq!(&back, metadata, "metadata changed through JSON: {json}");
    if let Ok(retention) = Retention::of_metadata(doc, metadata) {
        for indexed_at in [
            Timestamp::from_unix(1_780_000_000),
            Timestamp::MAX,
            Timestamp::MIN,
        ] {
            if let Some(expiry) = retention.expiry(Some(indexed_at)) {
                let text = expiry.to_string();
                assert_eq!(
                    Timestamp::parse(&text),
                    Ok(expiry),
                    "expiry {text} (ttl/expires_at of {retention:?}) does not read back"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.starts_with("---") {
        let config = LoaderConfig::default();
        // No sidecar exists beside this path: only the text is read.
        let path = Path::new("/nonexistent/zhiku-fuzz/doc.md");
        if let Ok(doc) = load_text(path, "doc.md", text, &config) {
            check_stored(doc.id().as_str(), &doc.attributes().metadata);
        }
        return;
    }
    match parse_mapping(text, "front matter") {
        Ok(map) => {
            assert!(
                text.len() <= MAX_BYTES,
                "a text past MAX_BYTES was accepted"
            );
            let value = serde_json::Value::Object(map.clone().into_iter().collect());
            let (depth, nodes) = depth_and_nodes(&value);
            // A YAML tag (`!t x`) becomes a one-key object in JSON: one more level and two more
            // values than the YAML events the bounds count; the factor of two allows for it.
            assert!(
                depth <= 2 * MAX_DEPTH,
                "accepted mapping nests {depth} deep"
            );
            assert!(
                nodes <= 3 * MAX_NODES,
                "accepted mapping holds {nodes} values"
            );
            let map: BTreeMap<String, serde_json::Value> = map;
            if let Ok(metadata) = Metadata::try_from(map) {
                check_stored("doc.md", &metadata);
            }
        }
        Err(_) => {}
    }
});
