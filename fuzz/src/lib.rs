//! Helpers shared by the fuzz targets of `fuzz_targets/`.

use std::time::{Duration, Instant};

use zhiku_formats::Limits;

/// Small per-file bounds for the extractors, far below the loader's defaults so that one input
/// costs little: 16 MiB unpacked from a zip package, 1 MiB of text, 50 pages, and a deadline
/// 2 s from now (libFuzzer's own `-timeout=10` reports an extractor that ignores it).
pub fn limits() -> Limits {
    Limits {
        max_unpacked_bytes: 16 << 20,
        max_text_bytes: 1 << 20,
        max_pages: 50,
        max_image_pixels: 4_000_000,
        deadline: Instant::now() + Duration::from_secs(2),
    }
}

/// What every successful extraction must satisfy, whatever the format: the text is within
/// its bound and not blank (`formats::extract` refuses blank text), and the page count stays
/// within `max_pages`.
pub fn check_extracted(extracted: &zhiku_formats::Extracted, limits: &Limits) {
    assert!(
        extracted.text.len() <= limits.max_text_bytes + 1,
        "extracted text of {} bytes is past max_text_bytes {}",
        extracted.text.len(),
        limits.max_text_bytes
    );
    if let Some(pages) = extracted.pages {
        assert!(
            pages as usize <= limits.max_pages,
            "{pages} pages is past max_pages {}",
            limits.max_pages
        );
    }
}

/// Lets panics unwind quietly, for the extractors that catch their parser's panics by design
/// (`formats::pdf` runs the parser under `catch_unwind` and skips the file; `formats::html`
/// does the same around html5ever): such a panic is the file's error there, as in production,
/// not a finding. A panic that escapes the call still crashes the target, with its message
/// (see [`run_catching`]). Set `ZHIKU_FUZZ_PANIC_ABORT=1` to keep libFuzzer's hook instead, so
/// that every panic, caught or not, is reported at the point it happens.
pub fn panics_caught_by_design() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("ZHIKU_FUZZ_PANIC_ABORT").is_some_and(|v| v != "0") {
            return;
        }
        std::panic::set_hook(Box::new(|info| {
            let message = format!("{info}");
            LAST_PANIC.with(|p| *p.borrow_mut() = message);
        }));
    });
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f`; a panic that escapes it is printed and aborts the process (a libFuzzer crash),
/// also when [`panics_caught_by_design`] has silenced the panic hook.
pub fn run_catching<T>(f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(_) => {
            let message = LAST_PANIC.with(|p| p.borrow().clone());
            eprintln!("panic escaped the extractor: {message}");
            std::process::abort();
        }
    }
}
