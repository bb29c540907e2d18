//! Round trip of the stored identifier and string types (`contracts`): for each of `DocId`,
//! `Scope`, `Source`, `Title`, `Revision`, `Locale` (`new`), `ChunkId` and `SectionId`
//! (`parse`), and metadata keys (`Metadata::check_key`): whatever the input parses to must
//! display as the input itself, parse back to the same value, and survive serde (the catalog,
//! chunk records and the audit log are JSON). `PageSpan` is built from the input's first 8
//! bytes and must survive serde too. `ChunkId::start`/`doc_part` must agree with the ID's
//! parts.
#![no_main]

use std::fmt::{Debug, Display};

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use zhiku_domain::{
    ChunkId, DocId, InvalidValue, Locale, Metadata, PageSpan, Revision, Scope, SectionId, Source,
    Title,
};

fn check<T>(text: &str, parse: fn(&str) -> Result<T, InvalidValue>, kind: &str)
where
    T: Display + Debug + PartialEq + Serialize + DeserializeOwned,
{
    let Ok(value) = parse(text) else { return };
    let shown = value.to_string();
    assert_eq!(
        shown, text,
        "{kind}: {value:?} displays differently from its input"
    );
    assert_eq!(
        parse(&shown).as_ref(),
        Ok(&value),
        "{kind}: {shown:?} does not parse back"
    );
    let json = serde_json::to_string(&value).unwrap();
    let back: T = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{kind}: {json} does not deserialise back: {e}"));
    assert_eq!(back, value, "{kind}: changed through JSON");
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= 8 {
        let first = u32::from_le_bytes(data[..4].try_into().unwrap());
        let last = u32::from_le_bytes(data[4..8].try_into().unwrap());
        if let Ok(span) = PageSpan::new(first, last) {
            let json = serde_json::to_string(&span).unwrap();
            let back: PageSpan = serde_json::from_str(&json).expect("page span reads back");
            assert_eq!(back, span);
        }
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check(text, |s| DocId::new(s), "DocId");
    check(text, |s| Scope::new(s), "Scope");
    check(text, |s| Source::new(s), "Source");
    check(text, |s| Title::new(s), "Title");
    check(text, |s| Revision::new(s), "Revision");
    check(text, |s| Locale::new(s), "Locale");
    check(text, ChunkId::parse, "ChunkId");
    check(text, SectionId::parse, "SectionId");
    if Metadata::check_key(text).is_ok() {
        let mut metadata = Metadata::new();
        metadata.insert(text, serde_json::Value::from(1)).unwrap();
        let json = serde_json::to_string(&metadata).unwrap();
        let back: Metadata = serde_json::from_str(&json).expect("metadata reads back");
        assert_eq!(back, metadata);
    }
    if let Ok(id) = ChunkId::parse(text) {
        // The document part is a valid DocId and the ID is `doc:start:hash`.
        let doc = DocId::new(id.doc_part()).expect("doc part of a parsed ChunkId is a DocId");
        let start_text = text[doc.as_str().len() + 1..].split(':').next().unwrap();
        if let Ok(start) = start_text.parse::<usize>() {
            assert_eq!(id.start(), start, "ChunkId::start of {text:?}");
        }
    }
});
