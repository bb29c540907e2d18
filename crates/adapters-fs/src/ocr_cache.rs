//! What OCR read of a file, kept by the file's content: a scan read once is never read again
//! while its bytes, the engine and the extraction bounds stay the same — after a rename, a
//! touch that changed its stamp, an `index --rebuild`, or in another knowledge base on the
//! same machine.
//!
//! An entry is the extraction (JSON) under the SHA-256 of the file's bytes and of what else
//! decides the result (the engine's identity, the bounds); it is written atomically, read
//! back within a size bound, and anything unreadable is a miss. Only extractions that OCR took
//! part in are kept: the rest is cheap to extract again.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zhiku_formats::{Extracted, Limits};

use crate::atomic::write_atomically;

/// Where OCR results are kept, and the identity of the engine that makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrCache {
    /// The folder of entries (created on the first write).
    pub dir: PathBuf,
    /// What decides OCR's result besides the bytes: the engine, its models and settings.
    pub engine: String,
}

impl OcrCache {
    /// The entry's path for `bytes` extracted within `limits`.
    fn entry(&self, bytes: &[u8], limits: &Limits) -> PathBuf {
        let mut hash = Sha256::new();
        hash.update(b"zhiku-ocr-cache\0");
        hash.update(zhiku_formats::EXTRACTION_VERSION.to_le_bytes());
        hash.update(self.engine.as_bytes());
        hash.update(b"\0");
        for bound in [
            limits.max_unpacked_bytes,
            limits.max_text_bytes as u64,
            limits.max_pages as u64,
            limits.max_image_pixels,
        ] {
            hash.update(bound.to_le_bytes());
        }
        hash.update(Sha256::digest(bytes));
        let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(&hex[..2]).join(format!("{hex}.json"))
    }

    /// The extraction kept for `bytes`, if any (a damaged or oversized entry is a miss).
    pub fn get(&self, bytes: &[u8], limits: &Limits) -> Option<Extracted> {
        read_bounded(
            &self.entry(bytes, limits),
            // The text, and the boxes of its lines (about a hundred bytes a line).
            4 * limits.max_text_bytes as u64 + (1 << 20),
        )
        .and_then(|json| serde_json::from_slice::<Extracted>(&json).ok())
        .filter(|e| e.ocr.is_some())
    }

    /// Keeps `extracted` for `bytes` when OCR took part in it; a failure to write is only
    /// logged by the caller's next miss (the cache never fails a load).
    pub fn put(&self, bytes: &[u8], limits: &Limits, extracted: &Extracted) {
        if extracted.ocr.is_none() {
            return;
        }
        if let Ok(json) = serde_json::to_vec(extracted) {
            let _ = write_atomically(&self.entry(bytes, limits), &json);
        }
    }
}

/// The file at `path`, when it is a regular file of at most `max` bytes.
fn read_bounded(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = crate::atomic::open_store_file_to_read(path).ok()?;
    if file.metadata().ok()?.len() > max {
        return None;
    }
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_unpacked_bytes: 1 << 20,
            max_text_bytes: 1 << 20,
            max_pages: 10,
            max_image_pixels: 1_000_000,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    fn read(text: &str) -> Extracted {
        Extracted {
            text: text.into(),
            ocr: Some("engine-a".into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_entry_is_found_by_content_engine_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let cache = OcrCache {
            dir: dir.path().join("ocr"),
            engine: "engine-a".into(),
        };
        assert!(cache.get(b"scan", &limits()).is_none());
        cache.put(b"scan", &limits(), &read("合同"));
        assert_eq!(cache.get(b"scan", &limits()).unwrap().text, "合同");
        // Other bytes, another engine or other bounds: a miss.
        assert!(cache.get(b"scan2", &limits()).is_none());
        let other = OcrCache {
            engine: "engine-b".into(),
            ..cache.clone()
        };
        assert!(other.get(b"scan", &limits()).is_none());
        let mut fewer = limits();
        fewer.max_pages = 5;
        assert!(cache.get(b"scan", &fewer).is_none());
        // What OCR took no part in is not kept.
        let plain = Extracted {
            text: "text layer".into(),
            ..Default::default()
        };
        cache.put(b"plain", &limits(), &plain);
        assert!(cache.get(b"plain", &limits()).is_none());
    }

    #[test]
    fn a_damaged_entry_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = OcrCache {
            dir: dir.path().to_path_buf(),
            engine: "e".into(),
        };
        cache.put(b"scan", &limits(), &read("x"));
        let entry = cache.entry(b"scan", &limits());
        std::fs::write(&entry, b"{ not json").unwrap();
        assert!(cache.get(b"scan", &limits()).is_none());
        // A later put mends it.
        cache.put(b"scan", &limits(), &read("y"));
        assert_eq!(cache.get(b"scan", &limits()).unwrap().text, "y");
    }
}
