//! A real `zhiku serve` on an ephemeral port, and a small knowledge base with two scopes.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use zhiku_adapters_sqlite::SqliteCatalog;
use zhiku_domain::ports::{CatalogStore, StoredCatalog};
use zhiku_http::settings::token_digest;

/// The public steps of an answered run, in order (routes may repeat).
pub const ANSWER_STAGES: [&str; 12] = [
    "query",
    "rewrite",
    "intent",
    "retrieval.route",
    "fusion",
    "revision_check",
    "budget",
    "context",
    "generation",
    "support_check",
    "citation_validation",
    "answer",
];

/// `zhiku --kb KB` with a clean environment and the hashing embedder (embedding counts are real
/// without a model).
pub fn zhiku(kb: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("zhiku").unwrap();
    cmd.env_clear()
        .env("ZHIKU_EMBEDDER", "hashing")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .arg("--kb")
        .arg(kb);
    cmd
}

/// Writes `text` to `kb/rel`.
pub fn write(kb: &Path, rel: &str, text: &str) {
    let path = kb.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A knowledge base with documents in scopes `alpha`, `beta` and `public`, stored on disk with
/// the hashing embedder, and `zhiku.toml` granting the three fixture tokens. `extra` is appended
/// to the configuration's top level (before the tables).
pub fn two_scope_kb(dir: &Path, extra: &str, serve_extra: &str) -> PathBuf {
    let kb = dir.join("kb");
    write(
        &kb,
        "alpha/returns.md",
        "---\nid: alpha-returns\nscope: alpha\n---\n# 退货政策\n\nalpha 客户的退货期限是三十天，凭发票办理退货。\n",
    );
    write(
        &kb,
        "alpha/shipping.md",
        "---\nid: alpha-shipping\nscope: alpha\n---\n# 发货\n\nalpha 仓库在下单后两天内发货。\n",
    );
    write(
        &kb,
        "beta/returns.md",
        "---\nid: beta-returns\nscope: beta\n---\n# 退货政策\n\nbeta 客户的退货期限是七天。内部代号蓝鲸，只给 beta 看。\n",
    );
    write(
        &kb,
        "public/about.md",
        "---\nid: about\nscope: public\n---\n# 关于\n\nzhiku 是一个知识库引擎，回答都带引用。\n",
    );
    let config = format!(
        "embedder = \"hashing\"\nvectors = \"ann\"\nlexical = \"disk\"\nscopes = [\"alpha\", \"public\"]\n{extra}\n\
         [serve]\n{serve_extra}\n\
         [[serve.tokens]]\nname = \"a\"\nsha256 = \"{}\"\nscopes = [\"alpha\", \"public\"]\nwrite = true\n\
         [[serve.tokens]]\nname = \"a-read\"\nsha256 = \"{}\"\nscopes = [\"alpha\"]\n\
         [[serve.tokens]]\nname = \"b\"\nsha256 = \"{}\"\nscopes = [\"beta\"]\nwrite = true\n",
        token_digest("tok-a"),
        token_digest("tok-a-read"),
        token_digest("tok-b"),
    );
    write(&kb, "zhiku.toml", &config);
    kb
}

/// A running `zhiku serve`, stopped on drop.
pub struct Server {
    child: Child,
    pub base: String,
    pub kb: PathBuf,
}

impl Server {
    /// Starts `zhiku --kb KB serve --bind 127.0.0.1:0 ARGS…` and waits until it listens.
    pub fn start(kb: &Path, args: &[&str]) -> Self {
        Self::spawn(kb, args, None)
    }

    /// Like [`Server::start`], with the process's open-file limit set to `max_open_files`
    /// (`ulimit -n` in `sh`, then `exec`).
    pub fn start_with_file_limit(kb: &Path, args: &[&str], max_open_files: u32) -> Self {
        Self::spawn(kb, args, Some(max_open_files))
    }

    fn spawn(kb: &Path, args: &[&str], max_open_files: Option<u32>) -> Self {
        let bin = assert_cmd::cargo::cargo_bin("zhiku");
        let mut command = match max_open_files {
            None => Command::new(bin),
            Some(n) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(bin);
                sh
            }
        };
        let mut child = command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .arg("--kb")
            .arg(kb)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start zhiku serve");
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr);
        let mut seen = String::new();
        let base = loop {
            let mut line = String::new();
            if lines.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("zhiku serve exited before listening:\n{seen}");
            }
            seen.push_str(&line);
            if let Some(rest) = line.split("serving ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = lines.read_to_string(&mut sink);
        });
        Self {
            child,
            base,
            kb: kb.to_path_buf(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `host:port` the server listens on.
    pub fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    /// Sends SIGTERM and waits at most `within` for the process to exit (`None`: still running).
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
        let started = std::time::Instant::now();
        while started.elapsed() < within {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status, headers of interest and the parsed JSON body (or the raw text).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub www_authenticate: Option<String>,
    pub retry_after: Option<String>,
    pub content_type: Option<String>,
    pub request_id: Option<String>,
    /// The body's bytes (a picture's too).
    pub bytes: Vec<u8>,
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
}

fn reply(r: Result<ureq::Response, ureq::Error>) -> Reply {
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = resp.status();
    let www_authenticate = resp.header("www-authenticate").map(str::to_string);
    let retry_after = resp.header("retry-after").map(str::to_string);
    let content_type = resp.header("content-type").map(str::to_string);
    let request_id = resp.header("x-request-id").map(str::to_string);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes).unwrap_or_default();
    let text = String::from_utf8(bytes.clone()).unwrap_or_default();
    Reply {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
        www_authenticate,
        retry_after,
        content_type,
        request_id,
        bytes,
    }
}

/// `METHOD url` with these headers and an optional JSON body.
pub fn call_with_headers(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let mut req = agent().request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    reply(match body {
        Some(b) => req.send_json(b.clone()),
        None => req.call(),
    })
}

/// `METHOD url` with an optional bearer token and JSON body.
pub fn call(method: &str, url: &str, token: Option<&str>, body: Option<&Value>) -> Reply {
    let mut req = agent().request(method, url);
    if let Some(t) = token {
        req = req.set("authorization", &format!("Bearer {t}"));
    }
    reply(match body {
        Some(b) => req.send_json(b.clone()),
        None => req.call(),
    })
}

/// Asserts the command behind `out` succeeded, showing its stdout and stderr when it did not.
pub fn assert_succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{} failed:\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each line of a command's output, parsed as JSON.
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A lexical search of `query` (top 10) by `token`, answered 200.
pub fn lexical_search(s: &Server, token: &str, query: &str) -> Reply {
    let r = call(
        "POST",
        &s.url("/v1/search"),
        Some(token),
        Some(&serde_json::json!({"query": query, "k": 10, "mode": "lexical"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    r
}

/// POSTs a raw body.
pub fn post_raw(url: &str, token: Option<&str>, body: &str) -> Reply {
    let mut req = agent().post(url).set("content-type", "application/json");
    if let Some(t) = token {
        req = req.set("authorization", &format!("Bearer {t}"));
    }
    reply(req.send_string(body))
}

/// Server-sent events of a POST: (event name, data) in order.
pub fn sse(
    url: &str,
    token: Option<&str>,
    body: &Value,
    accept_header: bool,
) -> Vec<(String, String)> {
    let mut req = agent().post(url);
    if let Some(t) = token {
        req = req.set("authorization", &format!("Bearer {t}"));
    }
    if accept_header {
        req = req.set("accept", "text/event-stream");
    }
    let resp = req.send_json(body.clone()).expect("sse request");
    assert!(
        resp.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "not an event stream"
    );
    let mut events = Vec::new();
    let (mut name, mut data) = (String::new(), String::new());
    for line in BufReader::new(resp.into_reader()).lines() {
        let line = line.unwrap();
        if line.is_empty() {
            if !name.is_empty() || !data.is_empty() {
                let done = name == "answer" || name == "error";
                events.push((std::mem::take(&mut name), std::mem::take(&mut data)));
                if done {
                    break;
                }
            }
        } else if let Some(v) = line.strip_prefix("event:") {
            name = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    events
}

/// Accepts up to `n` connections and never answers, for 30 s: a generator that hangs.
pub fn hanging_server(n: usize) -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(n) {
            held.push(conn);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    (port, handle)
}

/// [`two_scope_kb`] whose generator is an OpenAI-compatible server that accepts and never
/// answers (one attempt per ask, 15 s generator timeout, no fallback): every ask holds its
/// worker until the request's deadline. Keep the handle alive for the test.
pub fn hanging_generator_kb(
    dir: &Path,
    serve_extra: &str,
) -> (PathBuf, std::thread::JoinHandle<()>) {
    let (port, hang) = hanging_server(4);
    let extra = format!(
        "generator = \"openai\"\nllm_url = \"http://127.0.0.1:{port}/v1\"\nllm_timeout_ms = 15000\nask_attempts = 1\ngenerator_fallback = []\n"
    );
    (two_scope_kb(dir, &extra, serve_extra), hang)
}

/// What a [`Server`] started by [`start_logged`] has written to stderr so far.
#[derive(Clone, Default)]
pub struct Log(std::sync::Arc<std::sync::Mutex<String>>);

impl Log {
    /// Everything written so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Waits (at most `within`) until `done` holds for the text written so far, and returns it.
    pub fn wait_for(&self, within: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + within;
        loop {
            let text = self.text();
            if done(&text) || std::time::Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts `zhiku --kb KB serve --bind BIND ARGS…` with the environment variables `envs` (on a
/// cleared environment, as [`Server::start`]), waits until it listens, and keeps its stderr.
pub fn start_logged(kb: &Path, bind: &str, args: &[&str], envs: &[(&str, &str)]) -> (Server, Log) {
    let bin = assert_cmd::cargo::cargo_bin("zhiku");
    let mut child = Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(envs.iter().copied())
        .arg("--kb")
        .arg(kb)
        .args(["serve", "--bind", bind])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zhiku serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap());
    let log = Log::default();
    let base = loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("zhiku serve exited before listening:\n{}", log.text());
        }
        log.0.lock().unwrap().push_str(&line);
        if let Some(rest) = line.split("serving ").nth(1) {
            break rest
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap()
                .to_string();
        }
    };
    let sink = log.clone();
    std::thread::spawn(move || {
        loop {
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => sink.0.lock().unwrap().push_str(&line),
            }
        }
    });
    (
        Server {
            child,
            base,
            kb: kb.to_path_buf(),
        },
        log,
    )
}

/// The catalog the store in `store_dir` holds now.
pub fn stored_catalog(store_dir: &Path) -> StoredCatalog {
    SqliteCatalog::read_only_in_store(store_dir)
        .load()
        .unwrap()
        .expect("a saved catalog")
}

/// Saves `catalog` as the store's catalog again: what a writer that committed its indexes and
/// died before saving its catalog leaves.
pub fn restore_catalog(store_dir: &Path, catalog: &StoredCatalog) {
    SqliteCatalog::in_store(store_dir).save(catalog).unwrap();
}

/// Holds the catalog database's write lock: every save fails (busy) until it is dropped.
pub struct CatalogBlocked(rusqlite::Connection);

impl CatalogBlocked {
    /// Takes the write lock of the catalog of the store in `store_dir`.
    pub fn new(store_dir: &Path) -> Self {
        let conn = rusqlite::Connection::open(store_dir.join(zhiku_adapters_sqlite::CATALOG_FILE))
            .unwrap();
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        Self(conn)
    }
}

impl Drop for CatalogBlocked {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }
}

/// A Python with the official `mcp` package (`ZHIKU_MCP_PYTHON`, or the venv
/// `scripts/setup-mcp-client.sh` makes), when there is one.
pub fn mcp_python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ZHIKU_MCP_PYTHON").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/zhiku/venv-mcp/bin/python")),
    ];
    candidates.into_iter().flatten().find(|p| {
        p.exists()
            && Command::new(p)
                .args(["-c", "import mcp"])
                .output()
                .is_ok_and(|o| o.status.success())
    })
}

/// A small deterministic generator (splitmix64): a test's random choices are the same on every
/// run of one seed (the kill moments of the crash tests, the leak test's corpus).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}
