//! `formats::html::extract` (and the EPUB table-of-contents reader `html::toc_links`) over
//! arbitrary text: no crash, no stack overflow, no hang past the deadline (the tokenizer's
//! attribute check was quadratic), no memory blow-up. html5ever panics are caught by the
//! extractor by design (see `zhiku_fuzz::panics_caught_by_design`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::{decode_text, html};

fuzz_target!(|data: &[u8]| {
    zhiku_fuzz::panics_caught_by_design();
    // As `formats::extract` does: UTF-8 (BOM or not) or UTF-16 with a BOM.
    let Ok(text) = decode_text(data) else { return };
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = zhiku_fuzz::run_catching(|| html::extract(&text, &limits)) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
    }
    if data.first().is_some_and(|b| b & 1 == 1) {
        let limits = zhiku_fuzz::limits();
        let _ = zhiku_fuzz::run_catching(|| html::toc_links(&text, &limits));
    }
});
