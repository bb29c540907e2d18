//! Document metadata in YAML (front matter and sidecars), bounded before it is built.
//!
//! A document's author is untrusted, and YAML lets a small text describe a huge value: an
//! anchor referenced by aliases that are themselves referenced (a 40 KB "billion laughs" built
//! 2×10⁷ values in serde_yaml_ng), or flow sequences nested 100,000 deep (38 s, cubic in the
//! depth, in libyaml and serde_yaml_ng's recursion). [`parse_mapping`] therefore walks the
//! text once as a stream of events with `saphyr-parser` (a YAML 1.2 parser in safe Rust that
//! builds no value tree and keeps no recursion: linear in its input) and refuses, at the first
//! event past a bound and before any value exists:
//!
//! - a text longer than [`MAX_BYTES`];
//! - any anchor or alias (metadata has no use for them, and they are the only way a YAML text
//!   can describe more values than it spells out);
//! - nesting deeper than [`MAX_DEPTH`] collections;
//! - more than [`MAX_NODES`] values in all.
//!
//! Only a text within every bound reaches serde_yaml_ng, which builds the values exactly as the
//! loader always has (so scalar typing — strings, numbers, booleans, null, dates as strings —
//! is unchanged); within the bounds that second parse is linear too and small.
//!
//! Why a second parser rather than a hand-written pre-scan: telling an anchor (`&a`) from an
//! ampersand in a value (`R&D`), or a flow bracket from one inside a quoted or block scalar,
//! takes YAML's whole tokenizer; saphyr-parser is that tokenizer, maintained and tested against
//! the YAML test suite, with no unsafe code. libyaml itself (under serde_yaml_ng) has an event
//! API, but only through unsafe calls. Where the two parsers disagree, the walk can only refuse:
//! random texts (`tests::any_text_reads_as_before_or_is_refused`, and 100,000 probes while this
//! was written) found identical values whenever both accept, saphyr refusing only a few exotic
//! texts libyaml accepts (a comment glued to a flow bracket, `}#c`) and a tab after a key's
//! colon, which the walk reads as a space.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use saphyr_parser::{Event, Parser, Span};

/// The largest front matter or sidecar text, in bytes: 64 KiB.
///
/// Ordinary metadata is a few hundred bytes (the example knowledge base's largest is under
/// 300); 64 KiB leaves room for long abstracts, keyword lists and nested records a hundred
/// times over, while bounding the work and memory of one document's metadata to a small,
/// fixed amount however the text is shaped.
pub const MAX_BYTES: usize = 64 * 1024;

/// The deepest nesting of sequences and mappings (the top-level mapping is level 1).
///
/// Metadata is a mapping of keys to scalars, lists or small records: three or four levels.
/// 32 is far above that and far below any depth where a recursive reader costs anything.
pub const MAX_DEPTH: usize = 32;

/// The most values (scalars, sequences and mappings, keys included) one text may hold.
///
/// Without anchors every value is spelled out in the text, so [`MAX_BYTES`] already bounds the
/// count (about two bytes a value at least); this makes the bound on the values built explicit
/// and independent of how compactly they are written. 10,000 is a list of several thousand
/// tags; real metadata holds tens.
pub const MAX_NODES: usize = 10_000;

/// The metadata `text` holds, as JSON values by key; `what` ("front matter", "sidecar
/// metadata") names it in errors.
///
/// An empty (or blank) text is an empty map; otherwise the text must be one YAML mapping, and
/// within the bounds of this module (see the module docs) its values are what serde_yaml_ng
/// reads, converted to JSON. An error says which bound or rule the text broke and where.
pub fn parse_mapping(text: &str, what: &str) -> Result<BTreeMap<String, serde_json::Value>> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    if text.len() > MAX_BYTES {
        bail!(
            "{what} is {} bytes, larger than the {MAX_BYTES} byte limit",
            text.len()
        );
    }
    // saphyr-parser refuses a tab after a key's colon (`title:\tText`), which libyaml (and
    // YAML 1.2) accept; a tab is whitespace wherever either parser accepts one, so the walk
    // reads the text with spaces for tabs: the same anchors, aliases, depth and values.
    let spaced = text.replace('\t', " ");
    check_events(&spaced, what)?;
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| anyhow::anyhow!("malformed {what}: {e}"))?;
    if !value.is_mapping() {
        bail!("malformed {what}: expected a mapping of keys to values");
    }
    let json = serde_json::to_value(value).map_err(|e| anyhow::anyhow!("malformed {what}: {e}"))?;
    match json {
        serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
        _ => bail!("malformed {what}: expected a mapping"),
    }
}

/// Walks `text`'s events once and stops at the first anchor, alias, or value past the depth
/// or count bound.
fn check_events(text: &str, what: &str) -> Result<()> {
    let at = |span: &Span| {
        format!(
            "line {}, column {}",
            span.start.line(),
            span.start.col() + 1
        )
    };
    let mut depth = 0usize;
    let mut nodes = 0usize;
    for item in Parser::new_from_str(text) {
        let (event, span) = match item {
            Ok(item) => item,
            // The scanner's own bound on flow nesting (255 levels, met before the parser
            // reaches level 33 when it looks ahead through brackets): the same refusal.
            Err(e) if e.info() == "recursion limit exceeded" => bail!(
                "{what} nests deeper than {MAX_DEPTH} levels at line {}, column {}",
                e.marker().line(),
                e.marker().col() + 1
            ),
            Err(e) => bail!("malformed {what}: {e}"),
        };
        let anchor = match event {
            Event::Alias(_) => bail!(
                "{what} uses an alias at {}: anchors and aliases are not accepted in metadata",
                at(&span)
            ),
            Event::Scalar(_, _, anchor, _) => anchor,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    bail!(
                        "{what} nests deeper than {MAX_DEPTH} levels at {}",
                        at(&span)
                    );
                }
                anchor
            }
            Event::SequenceEnd | Event::MappingEnd => {
                depth = depth.saturating_sub(1);
                continue;
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => continue,
        };
        if anchor != 0 {
            bail!(
                "{what} defines an anchor at {}: anchors and aliases are not accepted in metadata",
                at(&span)
            );
        }
        nodes += 1;
        if nodes > MAX_NODES {
            bail!(
                "{what} holds more than {MAX_NODES} values (at {})",
                at(&span)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the loader did before this module: serde_yaml_ng alone, unbounded.
    fn unbounded(text: &str) -> Result<BTreeMap<String, serde_json::Value>> {
        if text.trim().is_empty() {
            return Ok(BTreeMap::new());
        }
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text)?;
        anyhow::ensure!(value.is_mapping(), "not a mapping");
        match serde_json::to_value(value)? {
            serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
            _ => bail!("not a mapping"),
        }
    }

    fn same_as_before(text: &str) {
        let now = parse_mapping(text, "front matter");
        let before = unbounded(text);
        match (now, before) {
            (Ok(now), Ok(before)) => assert_eq!(now, before, "{text}"),
            (Err(_), Err(_)) => {}
            (now, before) => panic!("{text:?}: now {now:?}, before {before:?}"),
        }
    }

    /// Refuses `text` with a reason containing `reason` (before the expensive step: a walk
    /// that went on would take the minutes the old parser did, not a timing this test asserts).
    fn refused_fast(text: &str, reason: &str) {
        let err = parse_mapping(text, "front matter").unwrap_err().to_string();
        assert!(err.contains(reason), "{err}");
        assert!(err.contains("front matter"), "{err}");
    }

    fn example_metadata() -> Vec<(std::path::PathBuf, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kb");
        let mut found = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.to_string_lossy().to_string();
                if path.is_dir() {
                    dirs.push(path);
                } else if name.ends_with(".metadata.yaml") {
                    found.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
                } else if name.ends_with(".md") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if let Some(rest) = text.strip_prefix("---\n")
                        && let Some(end) = rest.find("\n---\n")
                    {
                        found.push((path.clone(), rest[..=end].to_string()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn the_example_knowledge_bases_metadata_reads_as_before() {
        let found = example_metadata();
        assert!(found.len() >= 10, "{found:?}");
        for (path, text) in found {
            let now = parse_mapping(&text, "front matter").unwrap();
            assert_eq!(now, unbounded(&text).unwrap(), "{}", path.display());
            assert!(
                now.contains_key("id") || now.contains_key("title"),
                "{now:?}"
            );
        }
    }

    #[test]
    fn ordinary_metadata_keeps_its_types() {
        let text = r#"
id: doc-1
title: "标题：混合检索"
plain: some words here
count: 42
negative: -7
hex: 0x1F
ratio: 0.25
exp: 1e3
inf: .inf
yes_word: yes
flag: true
Flag2: False
nothing: ~
empty:
date: 2024-05-01
stamp: 2024-05-01T10:00:00Z
ttl: 30d
version: 1.2.3
quoted_number: "42"
single: 'it''s'
tags: [a, b, 3, true]
block_list:
  - one
  - two: 2
nested:
  deep:
    deeper: [1, [2, [3]]]
folded: >
  folded text
  over lines
literal: |
  line one
  line two
tagged: !!str 123
amp: R&D and a*b
tabbed:	after the colon
tabs_inside: "a	b"	
1: numeric key
true: bool key
"#;
        same_as_before(text);
        let map = parse_mapping(text, "front matter").unwrap();
        assert_eq!(map["date"], serde_json::json!("2024-05-01"));
        assert_eq!(map["count"], serde_json::json!(42));
        assert_eq!(map["flag"], serde_json::json!(true));
        assert_eq!(map["amp"], serde_json::json!("R&D and a*b"));
        assert_eq!(map["nothing"], serde_json::Value::Null);
        assert_eq!(map["tags"], serde_json::json!(["a", "b", 3, true]));
    }

    #[test]
    fn empty_is_empty_and_anything_but_a_mapping_is_refused_as_before() {
        assert!(parse_mapping("", "front matter").unwrap().is_empty());
        assert!(
            parse_mapping("  \n\t\n", "front matter")
                .unwrap()
                .is_empty()
        );
        for text in [
            "- a\n- b\n",
            "just a string\n",
            "42\n",
            "a: [unclosed\n",
            "a: 1\na: 2\n",
            "a: 1\n---\nb: 2\n",
            "key: value\n  bad indent: here\n",
        ] {
            let err = parse_mapping(text, "sidecar metadata")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("malformed sidecar metadata"),
                "{text:?}: {err}"
            );
            same_as_before(text);
        }
    }

    #[test]
    fn an_alias_bomb_is_refused_at_its_first_anchor() {
        // The issue's shape: a wide anchor referenced by three levels of ten aliases each,
        // about 40 KB, which serde_yaml_ng expands to 2×10⁷ values.
        let mut text = format!("l0: &l0 [{}]\n", vec!["x"; 20_000].join(", "));
        for level in 1..=3 {
            let refs = vec![format!("*l{}", level - 1); 10].join(", ");
            text.push_str(&format!("l{level}: &l{level} [{refs}]\n"));
        }
        assert!(text.len() < MAX_BYTES, "{}", text.len());
        refused_fast(&text, "anchor");
        let err = parse_mapping(&text, "front matter")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1"), "{err}");
        // An alias alone (to an anchor it never defines) and an anchor alone are refused too.
        refused_fast("a: *nowhere\n", "anchor");
        refused_fast("a: &x 1\nb: 2\n", "anchor");
        refused_fast("a: 1\nb: &m {c: 1}\nd:\n  <<: *m\n", "anchor");
    }

    #[test]
    fn deep_flow_nesting_is_refused_at_the_limit_in_linear_time() {
        // The issue's 100,000 nested flow sequences: past the size bound before any parsing.
        let deep = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        refused_fast(&deep, "larger than the 65536 byte limit");
        // The event walk alone stops at level 33 however deep the text goes: linear, and cut
        // short (serde_yaml_ng took 38 s on this text).
        let err = check_events(&deep, "front matter").unwrap_err().to_string();
        assert!(err.contains("nests deeper than 32 levels"), "{err}");
        // Within the size bound: refused by depth, unclosed or as mappings as well.
        let within = format!("a: {}{}\n", "[".repeat(30_000), "]".repeat(30_000));
        assert!(within.len() < MAX_BYTES);
        refused_fast(&within, "nests deeper than 32 levels at line 1, column");
        refused_fast(&format!("a: {}\n", "[".repeat(60_000)), "nests deeper");
        refused_fast(
            &format!("a: {}{}\n", "{b: ".repeat(10_000), "}".repeat(10_000)),
            "nests deeper",
        );
        // At the limit it reads, as it did.
        let at_limit = format!("a: {}{}\n", "[".repeat(31), "]".repeat(31));
        assert!(parse_mapping(&at_limit, "front matter").is_ok());
        same_as_before(&at_limit);
        let past = format!("a: {}{}\n", "[".repeat(32), "]".repeat(32));
        refused_fast(&past, "nests deeper than 32 levels");
    }

    /// The event parser walks its input once: ten times the text gives ten times the events,
    /// on nested, wide and long shapes, and inputs of 200,000 items are read whole (a walk
    /// that went back over its input would take minutes here, not a ratio of timings that a
    /// loaded machine can upset: speed is for benches, not timed tests).
    #[test]
    fn the_event_walk_is_linear_in_the_input() {
        let shapes: [fn(usize) -> String; 3] = [
            |n| format!("a: [{}]\n", vec!["[1, {b: 2}]"; n].join(", ")),
            |n| (0..n).map(|i| format!("k{i}: \"v {i}\"\n")).collect(),
            |n| format!("a: {}\n", "word ".repeat(n)),
        ];
        for shape in shapes {
            let events = |n: usize| {
                let text = shape(n);
                let mut count = 0usize;
                for event in Parser::new_from_str(&text) {
                    assert!(event.is_ok());
                    count += 1;
                }
                count
            };
            let (small, large) = (events(2_000), events(20_000));
            // The same events per item, give or take the document's own few.
            assert!(large.abs_diff(10 * small) <= 100, "{small} then {large}");
            assert!(events(200_000) >= large);
        }
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        let mut text = String::new();
        for level in 0..200 {
            text.push_str(&" ".repeat(level));
            text.push_str("k:\n");
        }
        refused_fast(&text, "nests deeper than 32 levels");
        let mut dashes = String::new();
        for level in 0..200 {
            dashes.push_str(&"  ".repeat(level));
            dashes.push_str("-\n");
        }
        refused_fast(&format!("a:\n{dashes}"), "nests deeper");
    }

    #[test]
    fn size_and_value_count_are_bounded() {
        let long = format!("a: {}\n", "x".repeat(MAX_BYTES));
        refused_fast(&long, "larger than the 65536 byte limit");
        let many = format!("a: [{}]\n", vec!["1"; MAX_NODES + 10].join(","));
        assert!(many.len() < MAX_BYTES);
        refused_fast(&many, "more than 10000 values");
        let fits = format!("a: [{}]\n", vec!["1"; MAX_NODES - 10].join(","));
        assert_eq!(
            parse_mapping(&fits, "front matter").unwrap()["a"]
                .as_array()
                .unwrap()
                .len(),
            MAX_NODES - 10
        );
    }

    #[test]
    fn a_bound_names_what_it_read() {
        let err = parse_mapping("a: &x 1\n", "sidecar metadata")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("sidecar metadata defines an anchor at line 1"),
            "{err}"
        );
    }

    fn scalar() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            (-1.0e9f64..1.0e9).prop_map(serde_json::Value::from),
            "[ -~]{0,20}".prop_map(serde_json::Value::from),
            "[a-z0-9:&*!#|>@%,\\[\\]{}\\- ]{0,12}".prop_map(serde_json::Value::from),
            "\\PC{0,8}".prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
        ]
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        scalar().prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z_]{1,8}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Metadata written by a YAML writer (block or flow style) reads as serde_yaml_ng
        /// alone read it.
        #[test]
        fn written_metadata_reads_as_before(
            map in prop::collection::btree_map("[a-z_]{1,10}", value(), 1..8)
        ) {
            let map: serde_json::Map<String, serde_json::Value> = map.into_iter().collect();
            let block = serde_yaml_ng::to_string(&map).unwrap();
            same_as_before(&block);
            let flow = serde_json::to_string(&map).unwrap();
            same_as_before(&flow);
        }

        /// Whatever the text, the answer is the unbounded one or a refusal: never another value.
        #[test]
        fn any_text_reads_as_before_or_is_refused(
            text in "[a-z0-9:&*!#|>@%,\\[\\]{}\\-'\" \n\t]{0,60}"
        ) {
            let now = parse_mapping(&text, "front matter");
            if let (Ok(now), Ok(before)) = (now, unbounded(&text)) {
                prop_assert_eq!(now, before);
            }
        }
    }
}
