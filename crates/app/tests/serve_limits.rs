//! `zhiku serve` under slow, idle and many clients, against a real server on an ephemeral port:
//! connection limits and timeouts, one admission gate for HTTP and MCP, one Host check, SSE
//! overload, trace rotation and graceful shutdown.
//!
//! Timeouts in these configurations are short (about a second); the assertions only use
//! generous bounds.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Server, call, hanging_generator_kb, two_scope_kb};

/// Short connection timeouts for the tests.
const QUICK: &str = "header_timeout_ms = 1000\nidle_timeout_ms = 1000\nbody_timeout_ms = 1000\n";

/// Connects, sends `request` and reads until the server closes or 10 s pass: (what was read,
/// whether the server closed the connection).
fn exchange(addr: &str, request: &[u8]) -> (String, bool) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut out = Vec::new();
    let closed = match stream.read_to_end(&mut out) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    (String::from_utf8_lossy(&out).into_owned(), closed)
}

/// The status code of a raw HTTP response.
fn status_of(response: &str) -> Option<u16> {
    response.split(' ').nth(1)?.parse().ok()
}

#[test]
fn idle_sockets_do_not_starve_health_under_a_small_file_limit() {
    // 300 sockets here, beside the other tests' files.
    if zhiku_http::conn::open_file_limit().is_some_and(|n| n < 600) {
        eprintln!(
            "SKIPPED idle_sockets_do_not_starve_health_under_a_small_file_limit: this process may open fewer than 600 files (ulimit -n)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", QUICK);
    // 256 files for the whole server, store included; 300 sockets that never send a byte.
    let s = Server::start_with_file_limit(&kb, &[], 256);
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(s.addr()).unwrap())
        .collect();
    let started = Instant::now();
    let mut answered = None;
    while started.elapsed() < Duration::from_secs(20) {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(2))
            .build();
        if let Ok(r) = agent.get(&s.url("/healthz")).call() {
            answered = Some((r.status(), started.elapsed()));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, after) = answered.expect("/healthz never answered with 300 idle sockets open");
    assert_eq!(status, 200);
    eprintln!("/healthz answered {after:?} after 300 idle sockets were opened");
    // The idle sockets were closed by the server (header deadline or refusal), not kept.
    for mut socket in idle.into_iter().step_by(30) {
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 512];
        let closed = loop {
            match socket.read(&mut buf) {
                Ok(0) => break true,
                Ok(_) => continue, // a 503 refusal before the close
                Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        };
        assert!(closed, "an idle socket stayed open");
    }
}

#[test]
fn slow_headers_slow_bodies_and_idle_keep_alive_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", QUICK);
    let s = Server::start(&kb, &[]);
    let addr = s.addr();

    // A head that never ends.
    let started = Instant::now();
    let (_, closed) = exchange(&addr, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    assert!(closed, "a slow-header connection stayed open");
    assert!(started.elapsed() < Duration::from_secs(8));

    // A head trickled byte by byte is cut off too: the deadline is for the whole head.
    let mut trickle = TcpStream::connect(&addr).unwrap();
    let started = Instant::now();
    let mut cut = false;
    // Once the server has closed it, the next writes fail (reset).
    for b in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
        .iter()
        .cycle()
    {
        if trickle.write_all(&[*b]).is_err() {
            cut = true;
            break;
        }
        if started.elapsed() > Duration::from_secs(8) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(cut, "a trickled head was never cut off");
    assert!(started.elapsed() < Duration::from_secs(8));

    // A body that never ends: 408 (or a closed connection), and never a worker held.
    let started = Instant::now();
    let (response, closed) = exchange(
        &addr,
        b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-a\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"query\": ",
    );
    assert!(closed, "a slow-body connection stayed open: {response}");
    assert!(
        response.is_empty() || status_of(&response) == Some(408),
        "{response}"
    );
    assert!(started.elapsed() < Duration::from_secs(8));

    // A kept-alive connection with no next request is closed once idle.
    let started = Instant::now();
    let (response, closed) = exchange(
        &addr,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n",
    );
    assert_eq!(status_of(&response), Some(200), "{response}");
    assert!(closed, "an idle keep-alive connection stayed open");
    assert!(started.elapsed() < Duration::from_secs(8));

    // Normal requests still work.
    assert_eq!(call("GET", &s.url("/healthz"), None, None).status, 200);
}

/// A minimal MCP client over streamable HTTP: one session per client.
struct Mcp {
    url: String,
    token: &'static str,
    session: Option<String>,
}

impl Mcp {
    fn post(&self, body: &Value) -> ureq::Response {
        let mut req = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .build()
            .post(&self.url)
            .set("authorization", &format!("Bearer {}", self.token))
            .set("accept", "application/json, text/event-stream")
            .set("content-type", "application/json");
        if let Some(s) = &self.session {
            req = req
                .set("mcp-session-id", s)
                .set("mcp-protocol-version", "2025-06-18");
        }
        match req.send_string(&body.to_string()) {
            Ok(r) => r,
            Err(e) => panic!("MCP request failed: {e}"),
        }
    }

    /// The JSON-RPC response with `id` in a JSON or event-stream response.
    fn response(resp: ureq::Response, id: u64) -> Value {
        let json = resp
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json"));
        if json {
            return serde_json::from_str(&resp.into_string().unwrap()).unwrap();
        }
        for line in BufReader::new(resp.into_reader()).lines() {
            let line = line.unwrap();
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && v["id"] == id
            {
                return v;
            }
        }
        panic!("no response {id} in the event stream");
    }

    fn connect(url: String, token: &'static str) -> Self {
        let mut mcp = Self {
            url,
            token,
            session: None,
        };
        let resp = mcp.post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "serve_limits", "version": "1"}}}),
        );
        mcp.session = resp.header("mcp-session-id").map(str::to_string);
        let init = Self::response(resp, 1);
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        mcp.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn call_tool(&self, name: &str, arguments: Value) -> Value {
        let resp = self.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}}));
        Self::response(resp, 2)
    }
}

#[test]
fn mcp_tool_calls_go_through_the_same_admission_gate_and_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (kb, _hang) = hanging_generator_kb(dir.path(), "timeout_ms = 1500\nmax_concurrent = 1\n");
    let s = Server::start(&kb, &[]);
    const CALLS: usize = 12;
    let clients: Vec<Mcp> = (0..CALLS)
        .map(|_| Mcp::connect(s.url("/mcp"), "tok-a"))
        .collect();
    let barrier = Arc::new(Barrier::new(CALLS));
    let results: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter()
            .map(|c| {
                let barrier = barrier.clone();
                scope.spawn(move || {
                    barrier.wait();
                    c.call_tool(
                        "ask_knowledge",
                        json!({"question": "alpha 客户的退货期限是多少天？"}),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let code = |r: &Value| r["error"]["code"].as_i64();
    let busy = results.iter().filter(|r| code(r) == Some(-32000)).count();
    let timeouts = results.iter().filter(|r| code(r) == Some(-32001)).count();
    eprintln!("{CALLS} concurrent MCP asks, max_concurrent 1: {busy} busy, {timeouts} timed out");
    // One worker: one call ran (and hit the deadline on the hung generator), the rest were
    // refused at once.
    assert_eq!(timeouts, 1, "{results:?}");
    assert_eq!(busy, CALLS - 1, "{results:?}");
    let refusal = results.iter().find(|r| code(r) == Some(-32000)).unwrap();
    assert_eq!(refusal["error"]["data"]["retry_after_s"], 1, "{refusal}");
    // The worker is still taken by the hung run: HTTP is refused too (one gate).
    let r = call(
        "POST",
        &s.url("/v1/search"),
        Some("tok-a"),
        Some(&json!({"query": "退货"})),
    );
    assert_eq!(r.status, 503, "{}", r.text);
    let search = clients[0].call_tool("search_knowledge", json!({"query": "退货"}));
    assert_eq!(code(&search), Some(-32000), "{search}");
    // Every refusal is counted, whichever transport it came through: 12 MCP and 1 HTTP busy,
    // 1 MCP deadline (MCP refusals travel inside a 200, the access log cannot see them).
    let metrics = call("GET", &s.url("/metrics"), None, None);
    assert_eq!(metrics.status, 200, "{}", metrics.text);
    let rejections = |reason: &str| {
        let name = format!("zhiku_admission_rejections_total{{reason=\"{reason}\"}} ");
        metrics
            .text
            .lines()
            .find_map(|l| l.strip_prefix(name.as_str()))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in {}", metrics.text))
    };
    assert_eq!(rejections("busy"), CALLS as u64 + 1);
    assert_eq!(rejections("timeout"), 1);
}

#[test]
fn a_foreign_host_is_refused_on_every_route_but_health() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    // No tokens: anonymous read-only access on loopback, the DNS-rebinding target.
    std::fs::write(
        kb.join("zhiku.toml"),
        "embedder = \"hashing\"\nvectors = \"file\"\nlexical = \"disk\"\nscopes = [\"alpha\", \"public\"]\n\
         [serve]\nallowed_hosts = [\"kb.example.com\"]\n",
    )
    .unwrap();
    let s = Server::start(&kb, &[]);
    let addr = s.addr();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let search = "{\"query\": \"退货\", \"mode\": \"lexical\"}";
    let request = |method: &str, path: &str, host: &str| {
        let body = if method == "POST" { search } else { "" };
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (response, _) = exchange(&addr, raw.as_bytes());
        status_of(&response).unwrap_or(0)
    };
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.nip.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("evil@127.0.0.1:{port}"),
        "localhost:evil".to_string(),
    ] {
        for (method, path) in [
            ("POST", "/v1/search"),
            ("GET", "/v1/status"),
            ("GET", "/v1/documents"),
            ("GET", "/"),
            ("GET", "/v1/openapi.json"),
            ("POST", "/mcp"),
            ("GET", "/nowhere"),
        ] {
            assert_eq!(
                request(method, path, &host),
                403,
                "{method} {path} Host {host}"
            );
        }
        assert_eq!(
            request("GET", "/healthz", &host),
            200,
            "healthz Host {host}"
        );
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_string(),
        "kb.example.com".to_string(),
    ] {
        assert_eq!(request("POST", "/v1/search", &host), 200, "Host {host}");
    }
    // A second Host header, and an absolute-form target naming another host, are refused
    // although the (first) Host header names this server.
    for (path, host) in [
        (
            "/v1/status".to_string(),
            format!("127.0.0.1:{port}\r\nHost: evil.example"),
        ),
        (
            "http://evil.example/v1/status".to_string(),
            format!("127.0.0.1:{port}"),
        ),
    ] {
        let status = request("GET", &path, &host);
        assert!(
            status == 400 || status == 403,
            "GET {path} Host {host:?}: {status}"
        );
    }
    assert_eq!(
        request(
            "GET",
            &format!("http://127.0.0.1:{port}/v1/status"),
            &format!("127.0.0.1:{port}")
        ),
        200
    );
}

#[test]
fn a_streamed_ask_is_refused_with_503_under_overload() {
    let dir = tempfile::tempdir().unwrap();
    let (kb, _hang) = hanging_generator_kb(dir.path(), "timeout_ms = 1000\nmax_concurrent = 1\n");
    let s = Server::start(&kb, &[]);
    // The hung generator takes the only worker (for longer than the request's deadline).
    let r = call(
        "POST",
        &s.url("/v1/ask"),
        Some("tok-a"),
        Some(&json!({"question": "退货期限是多少天？"})),
    );
    assert_eq!(r.status, 504, "{}", r.text);
    for body in [
        json!({"question": "退货期限是多少天？", "stream": true}),
        json!({"question": "退货期限是多少天？"}),
    ] {
        let mut req = ureq::post(&s.url("/v1/ask"))
            .set("authorization", "Bearer tok-a")
            .set("accept", "text/event-stream");
        req = req.timeout(Duration::from_secs(30));
        let (status, retry_after, content_type) = match req.send_json(body) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => (
                r.status(),
                r.header("retry-after").map(str::to_string),
                r.header("content-type").map(str::to_string),
            ),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(status, 503, "content-type {content_type:?}");
        assert_eq!(retry_after.as_deref(), Some("1"));
        assert!(content_type.is_some_and(|c| c.starts_with("application/json")));
    }
}

#[test]
fn traces_rotate_within_their_retention_and_stay_findable() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(
        dir.path(),
        "",
        "traces_max_bytes = 2000\ntraces_keep_files = 2\n",
    );
    // A run's trace here is about 2.7 KB: one or two runs per file, so eight runs rotate
    // more often than the two files kept.
    let s = Server::start(&kb, &[]);
    let mut ids = Vec::new();
    for i in 0..8 {
        let r = call(
            "POST",
            &s.url("/v1/ask"),
            Some("tok-a"),
            Some(&json!({"question": format!("alpha 客户的退货期限是多少天？第{i}问")})),
        );
        assert_eq!(r.status, 200, "{}", r.text);
        ids.push(r.body["trace_id"].as_str().unwrap().to_string());
    }
    let store = kb.join(".zhiku");
    let rotated: Vec<_> = std::fs::read_dir(store.join("traces.d"))
        .expect("no rotated trace files")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert!(!rotated.is_empty(), "nothing was rotated");
    assert!(rotated.len() <= 2, "{} rotated files kept", rotated.len());
    let mut files = rotated.clone();
    files.push(store.join("traces.jsonl"));
    let holds = |id: &str| {
        files
            .iter()
            .any(|f| std::fs::read_to_string(f).unwrap_or_default().contains(id))
    };
    let mut in_rotated = 0;
    for id in &ids {
        let r = call(
            "GET",
            &s.url(&format!("/v1/traces/{id}")),
            Some("tok-a"),
            None,
        );
        if holds(id) {
            assert_eq!(r.status, 200, "{id}: {}", r.text);
            let events = r.body["events"].as_array().unwrap();
            assert_eq!(events[0]["stage"], "query");
            assert_eq!(events.last().unwrap()["stage"], "answer");
            assert!(events.iter().all(|e| e["trace_id"] == id.as_str()));
            if rotated
                .iter()
                .any(|f| std::fs::read_to_string(f).unwrap().contains(id.as_str()))
            {
                in_rotated += 1;
            }
            // Another scope's token still cannot read it.
            let other = call(
                "GET",
                &s.url(&format!("/v1/traces/{id}")),
                Some("tok-b"),
                None,
            );
            assert_eq!(other.status, 404, "{}", other.text);
        } else {
            assert_eq!(r.status, 404, "{id} was removed but answers: {}", r.text);
        }
    }
    assert!(!holds(&ids[0]), "the oldest trace outlived the retention");
    assert!(holds(ids.last().unwrap()));
    assert!(in_rotated > 0, "no trace was found in a rotated file");
}

/// A document whose ingest takes a second or two.
fn big_doc() -> Value {
    let mut text = String::from("# 大文档\n\n");
    for i in 0..3000 {
        text.push_str(&format!(
            "## 第{i}节\n\n这是大文档的第{i}节，讲述退货、发货与保修的细则，编号{i}。\n\n"
        ));
    }
    json!({"id": "big-doc", "text": text})
}

#[test]
fn sigterm_lets_an_ingest_finish_then_the_server_exits() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(
        dir.path(),
        "",
        "shutdown_timeout_ms = 20000\nheader_timeout_ms = 2000\n",
    );
    let mut s = Server::start(&kb, &[]);
    let doc = big_doc();
    let url = s.url("/v1/documents");
    // A client stuck in its request head must not hold the shutdown up either.
    let mut stuck = TcpStream::connect(s.addr()).unwrap();
    stuck.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let ingest = std::thread::spawn(move || {
        let started = Instant::now();
        let r = call("POST", &url, Some("tok-a"), Some(&doc));
        (r, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    let status = s
        .terminate(Duration::from_secs(40))
        .expect("zhiku serve did not exit after SIGTERM");
    let (r, took) = ingest.join().unwrap();
    eprintln!(
        "ingest took {took:?}; the server exited {:?} after SIGTERM",
        signalled.elapsed()
    );
    assert!(status.success(), "exit status {status:?}");
    assert_eq!(r.status, 201, "{}", r.text);
    if took < Duration::from_millis(300) {
        eprintln!("note: the ingest finished before the signal; the drain was not exercised");
    }
    drop(stuck);
    let s = Server::start(&kb, &["--no-refresh"]);
    let r = call("GET", &s.url("/v1/documents/big-doc"), Some("tok-a"), None);
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn sigterm_waits_for_an_ingest_that_outlived_its_request() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(
        dir.path(),
        "",
        "timeout_ms = 200\nshutdown_timeout_ms = 20000\n",
    );
    let mut s = Server::start(&kb, &[]);
    let started = Instant::now();
    let r = call(
        "POST",
        &s.url("/v1/documents"),
        Some("tok-a"),
        Some(&big_doc()),
    );
    // The request's deadline passed; the ingest goes on in the background.
    assert_eq!(r.status, 504, "{}", r.text);
    let status = s
        .terminate(Duration::from_secs(40))
        .expect("zhiku serve did not exit after SIGTERM");
    eprintln!(
        "the server exited {:?} after the 504 (ingest in the background)",
        started.elapsed()
    );
    assert!(status.success(), "exit status {status:?}");
    // Reading the big document back needs more than 200 ms.
    let config = std::fs::read_to_string(kb.join("zhiku.toml")).unwrap();
    std::fs::write(
        kb.join("zhiku.toml"),
        config.replace("timeout_ms = 200\n", "timeout_ms = 60000\n"),
    )
    .unwrap();
    let s = Server::start(&kb, &["--no-refresh"]);
    let r = call("GET", &s.url("/v1/documents/big-doc"), Some("tok-a"), None);
    assert_eq!(r.status, 200, "the ingest was cut short: {}", r.text);
}
