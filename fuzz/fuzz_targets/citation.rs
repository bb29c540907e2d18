//! The citation scanner of `rules::citation` over an arbitrary answer: `references`, `markers`,
//! `strip`, `neutralise` and `resolve`.
//!
//! Properties: no panic (the scanner slices the text at bracket positions, including the
//! full-width 【】), no hang; `references(&neutralise(t))` is empty for every `t` (documented:
//! evidence text cannot smuggle a citation into an answer); `strip` only removes text;
//! `resolve` counts every citation written and maps markers onto sources 1..=n.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_domain::rules::citation::{self, CitationRef};
use zhiku_domain::{ChunkId, DocId, sha256_hex};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let refs = citation::references(text);
    let markers = citation::markers(text);
    assert_eq!(
        markers.len(),
        refs.iter()
            .filter(|r| matches!(r, CitationRef::Marker(_)))
            .count()
    );

    let stripped = citation::strip(text);
    assert!(stripped.len() <= text.len(), "strip added text");

    let neutral = citation::neutralise(text);
    assert!(
        citation::references(&neutral).is_empty(),
        "neutralise({text:?}) = {neutral:?} still holds citations"
    );

    // Three sources; the text's own chunk IDs count only when they are one of them.
    let sources: Vec<ChunkId> = (0..3)
        .map(|i| {
            let doc = DocId::new(format!("doc{i}")).unwrap();
            ChunkId::derive(&doc, i, &sha256_hex(format!("content {i}")))
        })
        .collect();
    let resolved = citation::resolve(text, &sources);
    assert_eq!(resolved.written, refs.len());
    assert!(resolved.cited.len() + resolved.unknown.len() <= resolved.written);
    for (marker, id) in &resolved.cited {
        assert!((1..=sources.len() as u32).contains(marker));
        assert_eq!(&sources[*marker as usize - 1], id);
    }
    let _ = resolved.check();
});
