//! The loader's path for a non-text file: `formats::detect` (content first, the announced
//! extension second; the first byte of the input picks the extension) and then
//! `formats::extract` of whatever format it chose. Covers the zip-package sniffing, the
//! legacy/binary refusals and the dispatch, and reaches every extractor from one corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::{self as formats, Announced, Format};

const EXTENSIONS: &[&str] = &[
    "pdf", "docx", "pptx", "xlsx", "xlsm", "epub", "html", "htm", "xhtml", "csv", "md", "txt",
    "doc", "ppt", "xls",
];

fuzz_target!(|data: &[u8]| {
    zhiku_fuzz::panics_caught_by_design();
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let extension = EXTENSIONS[pick as usize % EXTENSIONS.len()];
    let announced: Announced = Format::announced(extension).expect("a known extension");
    let Ok(format) = formats::detect(announced, bytes) else {
        return;
    };
    if format.is_text() {
        return;
    }
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = zhiku_fuzz::run_catching(|| formats::extract(format, bytes, &limits)) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
        assert!(
            !extracted.text.trim().is_empty(),
            "extract returned blank text"
        );
    }
});
