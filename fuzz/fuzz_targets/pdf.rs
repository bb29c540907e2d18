//! `formats::pdf::extract` over arbitrary bytes: no crash, no stack overflow, no hang past the
//! deadline, no memory blow-up; a parser panic is caught by the extractor (see
//! `zhiku_fuzz::panics_caught_by_design`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::pdf;

fuzz_target!(|data: &[u8]| {
    zhiku_fuzz::panics_caught_by_design();
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = zhiku_fuzz::run_catching(|| pdf::extract(data, &limits)) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
    }
});
