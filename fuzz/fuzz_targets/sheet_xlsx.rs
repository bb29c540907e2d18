//! `formats::sheet::extract_xlsx` over arbitrary bytes (an Excel zip package, read by
//! calamine): no panic, no stack overflow, no hang, no memory blow-up; a result stays within
//! the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::sheet;

fuzz_target!(|data: &[u8]| {
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = sheet::extract_xlsx(data, &limits) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
    }
});
