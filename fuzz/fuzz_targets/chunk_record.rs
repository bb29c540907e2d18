//! Round trip of chunk records, the largest stored type (every chunk of the store is one, in
//! JSON): `ChunkRecord` → `Chunk::from_record` → `to_record` → JSON → `from_record` gives the
//! same chunk.
//!
//! - An input starting with `{` is a record as JSON, as the store reads it back (a damaged or
//!   hostile store file must be refused, never crash the reader).
//! - Anything else builds a chunk with `Chunk::new` as the indexer does: the first 8 bytes are
//!   its start offset, then lines: the document ID, the heading path (`/`-separated), the page
//!   span (`first-last`, optional) and the content (the rest). Whatever the indexer can build
//!   must be written and read back to the same chunk.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use zhiku_domain::{
    Chunk, ChunkRecord, DocAttributes, DocId, Locale, Metadata, PageSpan, Revision, Scope, Source,
    Title, sha256_hex,
};

fn round_trip(chunk: &Chunk, how: &str) {
    let json = serde_json::to_string(&chunk.to_record()).expect("a record serialises");
    let record: ChunkRecord = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{how}: stored record does not read back: {e}\n{json}"));
    let back = Chunk::from_record(record)
        .unwrap_or_else(|e| panic!("{how}: stored record is refused on reading: {e}\n{json}"));
    assert_eq!(&back, chunk, "{how}: chunk changed through its record");
}

fuzz_target!(|data: &[u8]| {
    if data.first() == Some(&b'{') {
        let Ok(record) = serde_json::from_slice::<ChunkRecord>(data) else {
            return;
        };
        if let Ok(chunk) = Chunk::from_record(record) {
            round_trip(&chunk, "from JSON");
        }
        return;
    }
    let mut start = [0u8; 8];
    let n = data.len().min(8);
    start[..n].copy_from_slice(&data[..n]);
    let start = u64::from_le_bytes(start) as usize;
    let Ok(text) = std::str::from_utf8(&data[n..]) else {
        return;
    };
    let mut lines = text.splitn(4, '\n');
    let (Some(doc), Some(headings), Some(pages), Some(content)) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return;
    };
    let Ok(doc_id) = DocId::new(doc) else { return };
    // The indexer's offsets are character counts of a document held in memory.
    if start.checked_add(content.chars().count()).is_none() {
        return;
    }
    let heading_path: Vec<String> = headings
        .split('/')
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .collect();
    let attributes = DocAttributes {
        revision: Revision::new(sha256_hex(content)).unwrap(),
        scope: Scope::default_scope(),
        locale: Locale::detect(content),
        title: Title::new("t").unwrap(),
        source: Source::new("fuzz.md").unwrap(),
        metadata: Metadata::new(),
        page_count: None,
        expires_at: None,
    };
    let mut chunk = Chunk::new(
        doc_id,
        start,
        content.to_string(),
        heading_path,
        0,
        Arc::new(attributes),
    );
    if let Some((first, last)) = pages.split_once('-') {
        if let (Ok(first), Ok(last)) = (first.parse(), last.parse()) {
            if let Ok(span) = PageSpan::new(first, last) {
                chunk = chunk.with_pages(span);
            }
        }
    }
    round_trip(&chunk, "Chunk::new");
});
