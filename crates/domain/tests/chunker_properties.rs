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
