//! The loader's settings ([`LoaderConfig`]) and the cache of extracted documents its clones
//! share: what the folder walk, the path rules and the file stamps all read.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zhiku_domain::{Document, Scope};

use crate::worker::Parsers;

/// Files modified this recently before a scan are not stamped, by default.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Loader settings.
#[derive(Debug, Clone)]
pub struct LoaderConfig {
    /// Text files (Markdown, text, HTML, CSV) larger than this are skipped, and so is a file
    /// whose extracted text is larger.
    pub max_file_bytes: u64,
    /// PDF, Office and EPUB files larger than this are skipped.
    pub max_document_bytes: u64,
    /// Most bytes unpacked from one zip package (docx, pptx, xlsx, epub): a zip bomb stops here.
    pub max_unpacked_bytes: u64,
    /// Most pages of one PDF (and slides of one deck, chapters of one book).
    pub max_pages: usize,
    /// Longest extraction of one file.
    pub max_extract_time: std::time::Duration,
    /// Most pixels of one page picture (checked from the image's header before decoding).
    pub max_image_pixels: u64,
    /// Scope of documents that do not declare one.
    pub default_scope: Scope,
    /// Follow symbolic links whose target lies inside the knowledge-base root (links to
    /// outside it are never followed).
    pub follow_links_inside: bool,
    /// The store's folder (canonical), when it lies inside the knowledge base: never scanned.
    pub store_dir: Option<PathBuf>,
    /// A file modified less than this before a scan is not stamped (it is read again next
    /// time). Tests that write and re-scan at once set it to zero.
    pub racy_window: std::time::Duration,
    /// Documents extracted from PDF, Office, EPUB, HTML and CSV files, by path and stamp, so
    /// that re-checking a hit at its source does not extract a large file again. Shared by
    /// the clones of one configuration.
    pub extracted: ExtractCache,
    /// Where OCR results are kept by content, so a scan is read once (`None`: not kept).
    pub ocr_cache: Option<crate::ocr_cache::OcrCache>,
    /// Where the format extractors and the front-matter parser run: the binary sets
    /// [worker processes](crate::worker), so that a parser's crash costs one file; the
    /// default runs them in this process (tests, benchmarks).
    pub parsers: Parsers,
}

/// Documents extracted lately, each kept with the stamp of its file when it
/// was read: an entry serves only while the file (and its sidecar, and the loader settings)
/// still has that stamp, so an edit is always read again. A file without a stamp (modified
/// within the racy window) is never served from here. Bounded by the text it holds.
#[derive(Clone, Default)]
pub struct ExtractCache(Arc<Mutex<CacheEntries>>);

#[derive(Default)]
struct CacheEntries {
    by_path: std::collections::HashMap<PathBuf, (String, Document)>,
    bytes: usize,
}

/// The most document text an [`ExtractCache`] holds before it starts afresh.
const EXTRACT_CACHE_BYTES: usize = 64 << 20;

impl std::fmt::Debug for ExtractCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.0.lock().map(|e| e.by_path.len()).unwrap_or(0);
        f.debug_struct("ExtractCache")
            .field("entries", &entries)
            .finish()
    }
}

impl ExtractCache {
    /// The document extracted from `path` when its file had `stamp`.
    pub(crate) fn get(&self, path: &Path, stamp: &str) -> Option<Document> {
        let entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .by_path
            .get(path)
            .filter(|(s, _)| s == stamp)
            .map(|(_, d)| d.clone())
    }

    /// Keeps the document extracted from `path` with the file's `stamp` (unless it is large).
    pub(crate) fn put(&self, path: &Path, stamp: String, doc: &Document) {
        let size = doc.content().len();
        if size > EXTRACT_CACHE_BYTES / 4 {
            return;
        }
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if entries.bytes + size > EXTRACT_CACHE_BYTES {
            entries.by_path.clear();
            entries.bytes = 0;
        }
        if let Some((_, old)) = entries
            .by_path
            .insert(path.to_path_buf(), (stamp, doc.clone()))
        {
            entries.bytes -= old.content().len();
        }
        entries.bytes += size;
    }
}

/// The ignore file of zhiku's own, beside `.gitignore` and `.ignore`.
pub const CUSTOM_IGNORE: &str = ".zhikuignore";

impl Default for LoaderConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            max_document_bytes: 200 * 1024 * 1024,
            max_unpacked_bytes: 512 * 1024 * 1024,
            max_pages: 10_000,
            max_image_pixels: 50_000_000,
            max_extract_time: std::time::Duration::from_secs(60),
            default_scope: Scope::default_scope(),
            follow_links_inside: false,
            store_dir: None,
            racy_window: RACY_WINDOW,
            extracted: ExtractCache::default(),
            ocr_cache: None,
            parsers: Parsers::default(),
        }
    }
}
