//! The source contract over a real WebDAV server: wsgidav from PyPI (`scripts/setup-webdav.sh`,
//! the python it prints in `ZHIKU_WEBDAV_PYTHON`), started per test on a free port over its own
//! folder, with Basic authentication. Without the variable every test says SKIPPED; with
//! `ZHIKU_REQUIRE_WEBDAV=1` (set by `scripts/check`) a missing one fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zhiku_adapters_web::{DavSettings, DavSource};
use zhiku_domain::ports::DocumentSource;
use zhiku_tests::contract::source::{SourceUnderTest, scan};

fn python() -> Option<String> {
    match std::env::var("ZHIKU_WEBDAV_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var("ZHIKU_REQUIRE_WEBDAV").is_err(),
                "ZHIKU_REQUIRE_WEBDAV is set but ZHIKU_WEBDAV_PYTHON is not"
            );
            zhiku_tests::contract::notice(
                "SKIPPED WebDAV tests: set ZHIKU_WEBDAV_PYTHON=$(bash scripts/setup-webdav.sh | tail -n 1)",
            );
            None
        }
    }
}

struct Dav {
    _dir: tempfile::TempDir,
    root: PathBuf,
    child: Option<Child>,
    url: String,
    source: DavSource,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

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

impl Dav {
    fn start(python: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("share");
        std::fs::create_dir_all(root.join("handbook")).unwrap();
        let port = free_port();
        let config = dir.path().join("wsgidav.yaml");
        std::fs::write(
            &config,
            format!(
                "host: 127.0.0.1\nport: {port}\nprovider_mapping:\n  \"/\": {root:?}\n\
                 http_authenticator:\n  accept_basic: true\n  accept_digest: false\n  default_to_digest: false\n\
                 simple_dc:\n  user_mapping:\n    \"*\":\n      \"li\":\n        password: \"s3cret\"\n\
                 verbose: 0\nlogging:\n  enable_loggers: []\n"
            ),
        )
        .unwrap();
        let child = Command::new(python)
            .args(["-m", "wsgidav.server.server_cli", "--config"])
            .arg(&config)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wsgidav starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "wsgidav did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let url = format!("http://127.0.0.1:{port}/handbook/");
        let source = DavSource::new(settings(&url, "s3cret"));
        Self {
            _dir: dir,
            root: root.join("handbook"),
            child: Some(child),
            url,
            source,
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Dav {
    fn drop(&mut self) {
        self.stop();
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
    let python = python()?;
    let dav = Dav::start(&python);
    let source = DavSource::new(settings(&dav.url, "s3cret"));
    Some(Box::new(Share(std::sync::Mutex::new(dav), source)))
});

#[test]
fn an_unchanged_share_is_one_listing_per_folder_and_no_file_is_fetched() {
    let Some(python) = python() else { return };
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
    let known = first
        .changed
        .iter()
        .map(|(p, (_, s))| (p.clone(), s.clone()))
        .collect();
    let again = scan(&dav.source, &known, None, 1 << 20).unwrap();
    assert_eq!((again.unchanged.len(), again.scanned.requests), (30, 4));
    let item_reference = &first.changed;
    assert!(item_reference.contains_key("d0/f0.html"));
}
