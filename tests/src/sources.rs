//! What the source tests share: git run in a work tree, and a real WebDAV server (wsgidav from
//! PyPI, `scripts/setup-webdav.sh`) started per test over a folder.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs git in `dir` with a fixed identity and no system or user configuration; panics with
/// git's message when it fails. Returns its output, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=zhiku",
            "-c",
            "user.email=zhiku@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The python of the WebDAV server's virtual environment (`ZHIKU_WEBDAV_PYTHON`), or `None`
/// after a loud SKIPPED line; with `ZHIKU_REQUIRE_WEBDAV` set, a missing one fails the test.
pub fn webdav_python(what: &str) -> Option<String> {
    match std::env::var("ZHIKU_WEBDAV_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var("ZHIKU_REQUIRE_WEBDAV").is_err(),
                "ZHIKU_REQUIRE_WEBDAV is set but ZHIKU_WEBDAV_PYTHON is not"
            );
            crate::notice(&format!(
                "SKIPPED {what}: set ZHIKU_WEBDAV_PYTHON=$(bash scripts/setup-webdav.sh | tail -n 1)"
            ));
            None
        }
    }
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Waits until something listens on `port` of 127.0.0.1.
pub fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A wsgidav server over a folder, user `li` with password `s3cret` (Basic authentication),
/// stopped when dropped or [`stop`](Self::stop)ped.
#[derive(Debug)]
pub struct Wsgidav {
    child: Option<Child>,
    /// Its root URL (`http://127.0.0.1:PORT/`).
    pub url: String,
    _config: tempfile::TempDir,
}

impl Wsgidav {
    /// Starts wsgidav with `python` serving `root` on a free port, and waits until it listens.
    pub fn start(python: &str, root: &Path) -> Self {
        let config = tempfile::tempdir().expect("a temporary folder");
        let port = free_port();
        let file: PathBuf = config.path().join("wsgidav.yaml");
        std::fs::write(
            &file,
            format!(
                "host: 127.0.0.1\nport: {port}\nprovider_mapping:\n  \"/\": {root:?}\n\
                 http_authenticator:\n  accept_basic: true\n  accept_digest: false\n  default_to_digest: false\n\
                 simple_dc:\n  user_mapping:\n    \"*\":\n      \"li\":\n        password: \"s3cret\"\n\
                 verbose: 0\nlogging:\n  enable_loggers: []\n"
            ),
        )
        .expect("write the server's configuration");
        let child = Command::new(python)
            .args(["-m", "wsgidav.server.server_cli", "--config"])
            .arg(&file)
            .current_dir(config.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wsgidav starts");
        wait_listening(port);
        Self {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}/"),
            _config: config,
        }
    }

    /// Stops the server (later requests find nothing listening).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Wsgidav {
    fn drop(&mut self) {
        self.stop();
    }
}
