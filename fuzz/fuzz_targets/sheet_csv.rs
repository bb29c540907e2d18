//! `formats::sheet::extract_csv` over arbitrary bytes: no panic, no hang, no memory blow-up; a
//! result stays within the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_formats::sheet;

fuzz_target!(|data: &[u8]| {
    let limits = zhiku_fuzz::limits();
    if let Ok(extracted) = sheet::extract_csv(data, &limits) {
        zhiku_fuzz::check_extracted(&extracted, &limits);
    }
});
