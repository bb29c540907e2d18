//! `formats::docx::extract` over arbitrary bytes (a zip package): no panic, no stack overflow,
//! no hang past the deadline, no memory blow-up; a result stays within the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::docx;

fuzz_target!(|data: &[u8]| {
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = docx::extract(data, &limits, None) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
    }
});
