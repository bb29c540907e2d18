//! Per-file extraction bounds: what every extractor keeps within.

use std::time::Instant;

use anyhow::{Result, bail};

/// Per-file extraction bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most bytes read out of a zip package (all parts together): a zip bomb stops here.
    pub max_unpacked_bytes: u64,
    /// Most bytes of extracted text.
    pub max_text_bytes: usize,
    /// Most pages of a PDF (or slides, sheets' rows in thousands are bounded by text).
    pub max_pages: usize,
    /// Most pixels of one page picture (an image file's page, a scanned PDF page), checked
    /// from the image's header before it is decoded.
    pub max_image_pixels: u64,
    /// When extraction must have finished.
    pub deadline: Instant,
}

impl Limits {
    /// Bounds no test file comes near (a minute, 1 GiB unpacked, 10 MiB of text, 1,000 pages).
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        Self {
            max_unpacked_bytes: 1 << 30,
            max_text_bytes: 10 << 20,
            max_pages: 1000,
            max_image_pixels: 50_000_000,
            deadline: Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    /// Fails once the deadline has passed.
    pub fn check_time(&self) -> Result<()> {
        if Instant::now() > self.deadline {
            bail!("extraction took longer than the time limit (loader.max_extract_seconds)");
        }
        Ok(())
    }
}
