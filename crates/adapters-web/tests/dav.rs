//! The source contract over a real WebDAV server: wsgidav from PyPI (`scripts/setup-webdav.sh`,
//! the python it prints in `ZHIKU_WEBDAV_PYTHON`), started per test on a free port over its own
//! folder, with Basic authentication. Without the variable every test says SKIPPED; with
//! `ZHIKU_REQUIRE_WEBDAV=1` (set by `scripts/check`) a missing one fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use zhiku_adapters_web::{DavSettings, DavSource};
use zhiku_domain::ports::DocumentSource;
use zhiku_tests::contract::source::{SourceUnderTest, scan};
use zhiku_tests::sources::{Wsgidav, webdav_python};

fn settings(url: &str, password: &str) -> DavSettings {
    DavSettings {
        url: url.to_string(),
        user: Some("li".into()),
        password: Some(password.into()),
        timeout: Duration::from_secs(10),
        max_entries: 100_000,
        wanted: Arc::new(|p: &str| !p.ends_with(".tmp")),
    }
}

struct Dav {
    _dir: tempfile::TempDir,
    root: PathBuf,
    server: Wsgidav,
    url: String,
    source: DavSource,
}

impl Dav {
    fn start(python: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let share = dir.path().join("share");
        std::fs::create_dir_all(share.join("handbook")).unwrap();
        let server = Wsgidav::start(python, &share);
        let url = format!("{}handbook/", server.url);
        let source = DavSource::new(settings(&url, "s3cret"));
        Self {
            _dir: dir,
            root: share.join("handbook"),
            server,
            url,
            source,
        }
    }

    fn stop(&mut self) {
        self.server.stop();
    }
}

/// Writes through a new file renamed into place, as sync clients upload: wsgidav's entity tag
/// is inode, modification second and size, so an in-place rewrite of the same size within the
/// same second would keep it (a limit of that server, which Nextcloud's random tags do not
/// share).
fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

struct Share(std::sync::Mutex<Dav>, DavSource);

impl SourceUnderTest for Share {
    fn source(&self) -> &dyn DocumentSource {
        &self.1
    }
    fn put(&self, path: &str, bytes: &[u8]) {
        write(&self.0.lock().unwrap().root.join(path), bytes);
    }
    fn delete(&self, path: &str) {
        std::fs::remove_file(self.0.lock().unwrap().root.join(path)).unwrap();
    }
    fn publish(&self) {}
    fn cut(&self) {
        self.0.lock().unwrap().stop();
    }
    fn with_wrong_credentials(&self) -> Option<Box<dyn DocumentSource>> {
        let url = self.0.lock().unwrap().url.clone();
        Some(Box::new(DavSource::new(settings(&url, "wrong-password"))))
    }
}

zhiku_tests::document_source_contract!(|()| -> Option<Box<dyn SourceUnderTest>> {
    let python = webdav_python("WebDAV contract")?;
    let dav = Dav::start(&python);
    let source = DavSource::new(settings(&dav.url, "s3cret"));
    Some(Box::new(Share(std::sync::Mutex::new(dav), source)))
});

#[test]
fn an_unchanged_share_is_one_listing_per_folder_and_no_file_is_fetched() {
    let Some(python) = webdav_python("WebDAV costs") else {
        return;
    };
    let dav = Dav::start(&python);
    for i in 0..30 {
        write(
            &dav.root.join(format!("d{}/f{i}.html", i % 3)),
            &zhiku_tests::contract::source::page(i, 0),
        );
    }
    let first = scan(&dav.source, &Default::default(), None, 1 << 20).unwrap();
    assert_eq!(first.changed.len(), 30);
    assert_eq!(first.scanned.requests, 4 + 30, "4 listings, 30 GETs");
    let known = first.known();
    let again = scan(&dav.source, &known, None, 1 << 20).unwrap();
    assert_eq!((again.unchanged.len(), again.scanned.requests), (30, 4));
    let item_reference = &first.changed;
    assert!(item_reference.contains_key("d0/f0.html"));
}
