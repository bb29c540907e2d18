//! Property tests of the chunker's invariants on arbitrary Unicode, CJK, emoji, CRLF and
//! Markdown structure.

use proptest::prelude::*;
use unicode_segmentation::UnicodeSegmentation;
use zhiku_domain::chunker::chunk_document;
use zhiku_domain::{Chunk, ChunkingPolicy, DocId, Document, Source};

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("中文句子在这里。".to_string()),
        Just("第二句话很长很长很长很长很长很长很长很长很长！".to_string()),
        Just("为什么？".to_string()),
        Just("Hello world. ".to_string()),
        Just("A longer English sentence, with a comma; and more words! ".to_string()),
        Just("Supercalifragilisticexpialidocious".to_string()),
        Just("👨‍👩‍👧‍👦".to_string()),
        Just("🇨🇳🇬🇧".to_string()),
        Just("e\u{301}".to_string()),
        Just("\r\n".to_string()),
        Just("\n\n".to_string()),
        Just("\r\n\r\n".to_string()),
        Just("\n# 标题\n".to_string()),
        Just("\n## Section two\n".to_string()),
        Just("\n```\n# not a heading\n\ncode\n```\n".to_string()),
        Just("   ".to_string()),
        "\\PC{0,30}",
        ".{0,12}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|parts| parts.concat())
}

fn policy() -> impl Strategy<Value = ChunkingPolicy> {
    (16usize..160)
        .prop_flat_map(|max| (Just(max), 0..max / 2))
        .prop_map(|(max, overlap)| ChunkingPolicy::with_sizes(max, overlap).unwrap())
}

fn chunks(text: &str, policy: &ChunkingPolicy) -> Vec<Chunk> {
    let doc = Document::builder(
        DocId::new("doc").unwrap(),
        Source::new("doc").unwrap(),
        text,
    )
    .build();
    chunk_document(&doc, policy)
}

fn is_single_grapheme(s: &str) -> bool {
    s.graphemes(true).count() == 1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every chunk's content is exactly the source between its character offsets.
    #[test]
    fn content_is_the_source_slice(text in text(), policy in policy()) {
        let chars: Vec<char> = text.chars().collect();
        for c in chunks(&text, &policy) {
            let slice: String = chars[c.start()..c.end()].iter().collect();
            prop_assert_eq!(c.content(), slice.as_str());
        }
    }

    /// Chunks are ordered, contiguous or overlapping, and cover every character.
    #[test]
    fn every_character_is_covered(text in text(), policy in policy()) {
        let n = text.chars().count();
        let cs = chunks(&text, &policy);
        if n == 0 {
            prop_assert!(cs.is_empty());
        } else {
            prop_assert_eq!(cs[0].start(), 0);
            let mut covered = 0;
            for (i, c) in cs.iter().enumerate() {
                prop_assert!(c.start() <= covered, "gap before chunk {}", i);
                prop_assert!(c.end() > covered, "chunk {} adds nothing", i);
                prop_assert_eq!(c.ordinal() as usize, i);
                covered = c.end();
            }
            prop_assert_eq!(covered, n);
        }
    }

    /// No chunk exceeds max_chars, except one grapheme cluster longer than max_chars.
    #[test]
    fn chunks_respect_max_chars(text in text(), policy in policy()) {
        for c in chunks(&text, &policy) {
            prop_assert!(
                c.char_len() <= policy.max_chars() || is_single_grapheme(c.content()),
                "chunk of {} chars > {}: {:?}", c.char_len(), policy.max_chars(), c.content()
            );
        }
    }

    /// Cuts never split a grapheme cluster, so never a CRLF pair.
    #[test]
    fn cuts_keep_grapheme_clusters_whole(text in text(), policy in policy()) {
        for c in chunks(&text, &policy) {
            let before: String = text.chars().take(c.start()).collect();
            let boundary = before.len();
            let clusters_start: Vec<usize> = text.grapheme_indices(true).map(|(b, _)| b).collect();
            prop_assert!(boundary == 0 || clusters_start.binary_search(&boundary).is_ok());
        }
    }

    /// The same input and policy always give the same chunks.
    #[test]
    fn chunking_is_deterministic(text in text(), policy in policy()) {
        prop_assert_eq!(chunks(&text, &policy), chunks(&text, &policy));
    }

    /// An edit leaves the IDs of the chunks that end more than 2 × max_chars before it
    /// unchanged.
    #[test]
    fn an_edit_near_the_end_keeps_earlier_ids(
        text in text(),
        policy in policy(),
        at in 0.6f64..1.0,
        removed in 0usize..20,
        inserted in fragment(),
    ) {
        let chars: Vec<char> = text.chars().collect();
        let p = ((chars.len() as f64) * at) as usize;
        let q = (p + removed).min(chars.len());
        let edited: String = chars[..p].iter().collect::<String>() + &inserted
            + &chars[q..].iter().collect::<String>();
        let before = chunks(&text, &policy);
        let after = chunks(&edited, &policy);
        let after_ids: std::collections::HashSet<_> =
            after.iter().map(|c| c.chunk_id().clone()).collect();
        for c in before.iter().filter(|c| c.end() + 2 * policy.max_chars() <= p) {
            prop_assert!(after_ids.contains(c.chunk_id()), "lost {:?}", c.chunk_id());
        }
    }
}

/// A cell of a generated table: Chinese, English, a number, an escaped bar, or empty.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("保修期".to_string()),
        Just("三年。含人工费".to_string()),
        Just("Warranty period".to_string()),
        Just("1,250.00".to_string()),
        Just(r"a \| b".to_string()),
        Just(String::new()),
        "[\\p{Han}a-z ]{0,24}",
    ]
}

/// Prose around a table, with no bar in it.
fn prose() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("中文句子在这里。".to_string()),
            Just("A longer English sentence, with a comma; and more words! ".to_string()),
            Just("\n\n".to_string()),
            Just("\n## 小节\n".to_string()),
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

/// A Markdown pipe table: its header rows (header and delimiter, each ending in a line
/// break), its body rows, and its text.
#[derive(Debug, Clone)]
struct GeneratedTable {
    header: String,
    rows: Vec<String>,
}

impl GeneratedTable {
    fn text(&self) -> String {
        format!("{}{}", self.header, self.rows.concat())
    }
}

fn table() -> impl Strategy<Value = GeneratedTable> {
    (1usize..5)
        .prop_flat_map(|width| {
            (
                prop::collection::vec(cell(), width),
                prop::collection::vec(prop::collection::vec(cell(), width), 0..30),
                any::<bool>(),
            )
        })
        .prop_map(|(head, body, outer_bars)| {
            let row = |cells: &[String]| {
                if outer_bars {
                    format!("| {} |\n", cells.join(" | "))
                } else {
                    format!("{}\n", cells.join(" | "))
                }
            };
            // A one-cell row, or one with an empty first or last cell, needs its outer bars.
            let row = |cells: &[String]| {
                let edges = [cells.first(), cells.last()];
                if cells.len() == 1 || edges.iter().any(|c| c.is_none_or(|c| c.trim().is_empty())) {
                    format!("| {} |\n", cells.join(" | "))
                } else {
                    row(cells)
                }
            };
            let delimiter: Vec<String> = head.iter().map(|_| "---".to_string()).collect();
            GeneratedTable {
                header: format!("{}{}", row(&head), row(&delimiter)),
                rows: body.iter().map(|cells| row(cells)).collect(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A chunk that starts inside a table below its header row carries the table's header
    /// rows, whatever the sizes; a chunk that starts anywhere else carries none; the content
    /// stays the source slice; and when every row fits in a chunk, chunks inside the table
    /// start and end at row boundaries.
    #[test]
    fn a_chunk_that_continues_a_table_repeats_its_header(
        before in prose(),
        table in table(),
        after in prose(),
        policy in policy(),
    ) {
        let text = format!("{before}\n\n{}\n{after}", table.text());
        let chars: Vec<char> = text.chars().collect();
        let start = before.chars().count() + 2;
        let body = start + table.header.chars().count();
        let mut row_starts = vec![body];
        for row in &table.rows {
            row_starts.push(row_starts.last().unwrap() + row.chars().count());
        }
        let end = *row_starts.last().unwrap();
        let fits = table.header.chars().count() <= policy.max_chars()
            && table.rows.iter().all(|r| r.chars().count() <= policy.max_chars());
        let header = table.header.trim_end();
        for c in chunks(&text, &policy) {
            let slice: String = chars[c.start()..c.end()].iter().collect();
            prop_assert_eq!(c.content(), slice.as_str());
            if start < c.start() && c.start() < end {
                prop_assert_eq!(c.table_header(), Some(header), "chunk at {}", c.start());
                prop_assert!(c.indexed_text().starts_with(header));
                prop_assert!(c.indexed_text().ends_with(c.content()));
            } else {
                prop_assert_eq!(c.table_header(), None, "chunk at {}", c.start());
                prop_assert_eq!(c.indexed_text(), c.content());
            }
            if fits && body <= c.start() && c.start() < end {
                prop_assert!(row_starts.contains(&c.start()), "starts mid-row at {}", c.start());
            }
            if fits && body < c.end() && c.end() < end {
                prop_assert!(row_starts.contains(&c.end()), "ends mid-row at {}", c.end());
            }
        }
    }

    /// A chunk's header is part of what identifies it: the same rows under another header
    /// are other chunks, and a chunk read back from its record is the same chunk.
    #[test]
    fn a_table_header_is_part_of_a_chunks_identity(
        table in table(),
        policy in policy(),
    ) {
        let text = table.text();
        let renamed = format!("| 另一个表头 |\n| --- |\n{}", table.rows.concat());
        let ids = |text: &str| -> std::collections::BTreeSet<_> {
            chunks(text, &policy)
                .into_iter()
                .filter(|c| c.table_header().is_some())
                .map(|c| c.chunk_id().clone())
                .collect()
        };
        let (a, b) = (ids(&text), ids(&renamed));
        prop_assert!(a.is_disjoint(&b) || table.header == "| 另一个表头 |\n| --- |\n");
        for c in chunks(&text, &policy) {
            let back = Chunk::from_record(c.to_record()).unwrap();
            prop_assert_eq!(back, c);
        }
    }
}
