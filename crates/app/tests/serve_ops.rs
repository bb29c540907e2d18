//! `zhiku serve` as an operator runs it: one structured log line per request (never a token),
//! a request ID in every response and in the answer's trace, and Prometheus metrics at
//! `/metrics` for the operator only — against a real server on an ephemeral port.

mod support;

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Server, call, hanging_generator_kb, start_logged, two_scope_kb};

/// A request with extra headers: (status, `X-Request-Id` of the response, body text).
fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Option<String>, String) {
    let r = support::call_with_headers(method, url, headers, body);
    (r.status, r.request_id, r.text)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The access-log lines (`target` `zhiku::http`) of a JSON log; every line must be JSON.
fn access_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"))
        })
        .filter(|v| v["target"] == "zhiku::http")
        .collect()
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn json_logs_have_one_line_per_request_and_never_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    // At the most verbose level every library logs what it logs; still no token may show.
    let (s, log) = start_logged(
        &kb,
        "127.0.0.1:0",
        &["--log-format", "json"],
        &[("ZHIKU_LOG", "trace")],
    );
    let a = bearer("tok-a");
    let wrong = bearer("tok-wrong-secret-4711");
    let mut sent: Vec<(String, &str, &str, u16, Option<&str>)> = Vec::new();
    let mut send = |method: &'static str,
                    path: &str,
                    auth: Option<&str>,
                    body: Option<Value>,
                    route: &'static str,
                    caller: Option<&'static str>| {
        let id = format!("req-{}", sent.len());
        // (`/mcp` wants both; the other routes do not mind.)
        let mut headers = vec![
            ("x-request-id", id.as_str()),
            ("accept", "application/json, text/event-stream"),
        ];
        if let Some(auth) = auth {
            headers.push(("authorization", auth));
        }
        let (status, echoed, text) = request(method, &s.url(path), &headers, body.as_ref());
        assert_eq!(echoed.as_deref(), Some(id.as_str()), "{path}: {text}");
        sent.push((id.clone(), method, route, status, caller));
    };
    send("GET", "/healthz", None, None, "/healthz", None);
    send(
        "POST",
        "/v1/search",
        Some(&a),
        Some(json!({"query": "退货"})),
        "/v1/search",
        Some("a"),
    );
    send(
        "GET",
        "/v1/documents/alpha-returns",
        Some(&a),
        None,
        "/v1/documents/{*id}",
        Some("a"),
    );
    send("GET", "/v1/status", Some(&wrong), None, "/v1/status", None);
    send("GET", "/no/such/route", Some(&a), None, "unmatched", None);
    // An MCP session: the library logs what it receives, the token must not be part of it.
    let mcp = |id: &str, session: Option<&str>, body: Value| {
        let mut req = ureq::post(&s.url("/mcp"))
            .set("authorization", &a)
            .set("accept", "application/json, text/event-stream")
            .set("mcp-protocol-version", "2025-06-18")
            .set("x-request-id", id);
        if let Some(session) = session {
            req = req.set("mcp-session-id", session);
        }
        let resp = req.send_json(body).expect("an MCP answer");
        let status = resp.status();
        let session = resp.header("mcp-session-id").map(str::to_string);
        let text = resp.into_string().unwrap();
        (status, session, text)
    };
    let (status, session, text) = mcp(
        "mcp-0",
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "ops-test", "version": "1"}}}),
    );
    assert_eq!(status, 200, "{text}");
    let session = session.expect("a session");
    let (status, _, _) = mcp(
        "mcp-1",
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202);
    let (status, _, text) = mcp(
        "mcp-2",
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "search_knowledge", "arguments": {"query": "退货"}}}),
    );
    assert_eq!(status, 200);
    assert!(text.contains("alpha-returns"), "{text}");
    for (id, status) in [("mcp-0", 200), ("mcp-1", 202), ("mcp-2", 200)] {
        sent.push((id.to_string(), "POST", "/mcp", status, Some("a")));
    }
    assert_eq!(sent[1].3, 200);
    assert_eq!(sent[2].3, 200);
    assert_eq!(sent[3].3, 401);
    assert_eq!(sent[4].3, 404);
    let text = log.wait_for(Duration::from_secs(10), |t| {
        access_lines(t).len() >= sent.len()
    });
    let lines = access_lines(&text);
    assert_eq!(lines.len(), sent.len(), "one line per request:\n{text}");
    for (id, method, route, status, caller) in &sent {
        let line = lines
            .iter()
            .find(|l| l["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no log line for {id}:\n{text}"));
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!(line["method"], *method, "{line}");
        assert_eq!(line["route"], *route, "{line}");
        assert_eq!(line["status"], *status, "{line}");
        assert_eq!(line["caller"].as_str(), *caller, "{line}");
        let ms = line["latency_ms"].as_f64().expect("latency_ms is a number");
        assert!((0.0..60_000.0).contains(&ms), "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
    }
    // The raw path (a document ID) is not the route.
    assert!(
        !lines
            .iter()
            .any(|l| l["route"] == "/v1/documents/alpha-returns")
    );
    for secret in ["tok-a", "tok-wrong-secret-4711", "authorization"] {
        assert!(
            !text
                .to_ascii_lowercase()
                .contains(&secret.to_ascii_lowercase()),
            "{secret:?} is in the log:\n{text}"
        );
    }
}

#[test]
fn text_logs_are_the_default_and_a_bad_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let (s, log) = start_logged(&kb, "127.0.0.1:0", &[], &[]);
    let (status, id, _) = request(
        "GET",
        &s.url("/v1/status"),
        &[("authorization", "Bearer tok-a")],
        None,
    );
    assert_eq!(status, 200);
    let id = id.expect("a generated request ID");
    let text = log.wait_for(Duration::from_secs(10), |t| t.contains(&id));
    let line = text
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("no line for {id}:\n{text}"));
    assert!(line.contains("INFO"), "{line}");
    for field in [
        "route=/v1/status",
        "method=\"GET\"",
        "caller=\"a\"",
        "status=200",
        "latency_ms=",
    ] {
        let bare = field.replace('"', "");
        assert!(
            line.contains(field) || line.contains(&bare),
            "{field} missing: {line}"
        );
    }
    assert!(!text.contains("tok-a"), "{text}");
    drop(s);

    let bin = assert_cmd::cargo::cargo_bin("zhiku");
    let out = std::process::Command::new(bin)
        .env_clear()
        .arg("--kb")
        .arg(&kb)
        .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn request_ids_are_echoed_generated_and_kept_in_the_answer_trace() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let a = bearer("tok-a");
    let auth = ("authorization", a.as_str());

    // A well-formed ID is kept.
    let (status, id, _) = request(
        "GET",
        &s.url("/v1/status"),
        &[auth, ("x-request-id", "client-7f3a:1.x_y")],
        None,
    );
    assert_eq!((status, id.as_deref()), (200, Some("client-7f3a:1.x_y")));
    // None, or one that could forge a log line, gets a fresh UUID.
    let long = "x".repeat(129);
    let mut seen = Vec::new();
    for given in [
        None,
        Some("two words"),
        Some("a\"b"),
        Some(long.as_str()),
        Some("a;b=c"),
    ] {
        let mut headers = vec![auth];
        if let Some(g) = given {
            headers.push(("x-request-id", g));
        }
        let (status, id, _) = request("GET", &s.url("/v1/status"), &headers, None);
        assert_eq!(status, 200);
        let id = id.expect("every response has an ID");
        assert!(is_uuid(&id), "{given:?} -> {id}");
        seen.push(id);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "IDs are fresh: {seen:?}");
    // Errors carry it too: refused, unknown route, bad body, public routes.
    for (method, path, headers, body) in [
        ("GET", "/v1/status", vec![], None),
        (
            "GET",
            "/v1/status",
            vec![("authorization", "Bearer nope")],
            None,
        ),
        ("GET", "/nowhere", vec![auth], None),
        ("POST", "/v1/search", vec![auth], Some(json!({"query": ""}))),
        ("DELETE", "/healthz", vec![], None),
        ("GET", "/healthz", vec![], None),
        ("GET", "/", vec![], None),
    ] {
        let mut h = headers.clone();
        h.push(("x-request-id", "err-1"));
        let (status, id, _) = request(method, &s.url(path), &h, body.as_ref());
        assert_eq!(id.as_deref(), Some("err-1"), "{method} {path} ({status})");
        let (_, id, _) = request(method, &s.url(path), &headers, body.as_ref());
        assert!(
            id.as_deref().is_some_and(is_uuid),
            "{method} {path}: {id:?}"
        );
    }

    // The answer's stored trace names the request.
    let (status, id, text) = request(
        "POST",
        &s.url("/v1/ask"),
        &[auth, ("x-request-id", "ask-req-42")],
        Some(&json!({"question": "退货期限是多少天？"})),
    );
    assert_eq!((status, id.as_deref()), (200, Some("ask-req-42")), "{text}");
    let frame: Value = serde_json::from_str(&text).unwrap();
    let trace_id = frame["trace_id"].as_str().expect("trace id").to_string();
    let trace = call(
        "GET",
        &s.url(&format!("/v1/traces/{trace_id}")),
        Some("tok-a"),
        None,
    );
    assert_eq!(trace.status, 200, "{}", trace.text);
    let query = trace.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["stage"] == "query")
        .expect("a query step");
    assert_eq!(query["data"]["request_id"], "ask-req-42", "{query}");
    // The trace is otherwise as before: the scopes it searched are still there.
    assert!(query["data"]["scopes"].is_array(), "{query}");

    // A streamed answer's query step carries the generated ID of its response.
    let agent = ureq::AgentBuilder::new().build();
    let resp = agent
        .post(&s.url("/v1/ask"))
        .set("authorization", &a)
        .send_json(json!({"question": "退货期限是多少天？", "stream": true}))
        .unwrap();
    let id = resp.header("x-request-id").expect("an ID").to_string();
    assert!(is_uuid(&id), "{id}");
    let body = resp.into_string().unwrap();
    let query = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|e| e["stage"] == "query")
        .unwrap_or_else(|| panic!("no query stage: {body}"));
    assert_eq!(query["data"]["request_id"], id.as_str());
}

/// A parsed OpenMetrics exposition: the metric families' types and every sample.
#[derive(Debug)]
struct Exposition {
    types: BTreeMap<String, String>,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with(|c: char| c.is_ascii_digit())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// Parses and checks the text format: `# HELP/TYPE/UNIT` lines, samples of declared families
/// with well-formed labels and numeric values, `# EOF` last.
fn parse_exposition(text: &str) -> Exposition {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.last(),
        Some(&"# EOF"),
        "the exposition ends with # EOF"
    );
    for line in &lines[..lines.len() - 1] {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            assert!(valid_name(name), "bad metric name in {line:?}");
            match kind {
                "TYPE" => {
                    let t = parts.next().unwrap_or("");
                    assert!(
                        [
                            "counter",
                            "gauge",
                            "histogram",
                            "info",
                            "summary",
                            "unknown"
                        ]
                        .contains(&t),
                        "{line}"
                    );
                    types.insert(name.to_string(), t.to_string());
                }
                "HELP" | "UNIT" => {}
                _ => panic!("unexpected comment {line:?}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name and value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                let mut labels = BTreeMap::new();
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").expect("label=\"value\"");
                    let v = v.strip_suffix('"').unwrap_or(v);
                    assert!(valid_name(k), "bad label name in {line:?}");
                    assert!(
                        !v.contains(['"', '\\', '\n']),
                        "unescaped value in {line:?}"
                    );
                    labels.insert(k.to_string(), v.to_string());
                }
                (name, labels)
            }
            None => (series, BTreeMap::new()),
        };
        let family = types
            .keys()
            .filter(|f| {
                name == f.as_str()
                    || ["_total", "_bucket", "_sum", "_count", "_created"]
                        .iter()
                        .any(|s| name.strip_suffix(s) == Some(f.as_str()))
            })
            .max_by_key(|f| f.len())
            .unwrap_or_else(|| panic!("sample of an undeclared family: {line:?}"));
        let t = types[family].as_str();
        match t {
            "counter" => assert!(
                name.ends_with("_total") || name.ends_with("_created"),
                "{line}"
            ),
            "gauge" => assert_eq!(name, family, "{line}"),
            "histogram" => assert!(name != family, "{line}"),
            _ => {}
        }
        samples.push((name.to_string(), labels, value));
    }
    Exposition { types, samples }
}

impl Exposition {
    /// The value of the one sample of `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
            })
            .map(|(_, _, v)| *v)
            .collect();
        assert!(matching.len() <= 1, "{name} {labels:?} is ambiguous");
        matching.first().copied()
    }

    fn count(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels).unwrap_or(0.0)
    }
}

fn scrape(s: &Server, headers: &[(&str, &str)]) -> (u16, String) {
    let (status, _, text) = request("GET", &s.url("/metrics"), headers, None);
    (status, text)
}

#[test]
fn metrics_count_requests_ingests_and_documents_per_scope() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let s = Server::start(&kb, &[]);
    let (status, before) = scrape(&s, &[]);
    assert_eq!(status, 200, "{before}");
    let before = parse_exposition(&before);
    let (_, second) = scrape(&s, &[]);
    for (family, t) in [
        ("zhiku_http_requests", "counter"),
        ("zhiku_http_request_duration_seconds", "histogram"),
        ("zhiku_ingests", "counter"),
        ("zhiku_documents", "gauge"),
        ("zhiku_chunks", "gauge"),
        ("zhiku_backend_errors", "counter"),
        ("zhiku_admission_rejections", "counter"),
    ] {
        let types = parse_exposition(&second).types;
        assert_eq!(
            types.get(family).map(String::as_str),
            Some(t),
            "{family}: {second}"
        );
    }
    let search = [
        ("route", "/v1/search"),
        ("method", "POST"),
        ("status", "2xx"),
    ];
    for _ in 0..3 {
        let r = call(
            "POST",
            &s.url("/v1/search"),
            Some("tok-a"),
            Some(&json!({"query": "退货"})),
        );
        assert_eq!(r.status, 200);
    }
    let r = call(
        "GET",
        &s.url("/v1/documents/beta-returns"),
        Some("tok-a"),
        None,
    );
    assert_eq!(r.status, 404);
    // Ingests: one created, one refused (a read-only token).
    let doc = json!({"id": "alpha-new", "scope": "alpha", "text": "# 新文档\n\n新的退货说明。\n"});
    assert_eq!(
        call("POST", &s.url("/v1/documents"), Some("tok-a"), Some(&doc)).status,
        201
    );
    assert_eq!(
        call(
            "POST",
            &s.url("/v1/documents"),
            Some("tok-a-read"),
            Some(&doc)
        )
        .status,
        403
    );
    assert_eq!(
        call("POST", &s.url("/v1/documents"), Some("tok-a"), Some(&doc)).status,
        200
    );

    let (_, after_text) = scrape(&s, &[]);
    let after = parse_exposition(&after_text);
    assert_eq!(
        after.count("zhiku_http_requests_total", &search)
            - before.count("zhiku_http_requests_total", &search),
        3.0
    );
    let missing = [
        ("route", "/v1/documents/{*id}"),
        ("method", "GET"),
        ("status", "4xx"),
    ];
    assert_eq!(after.count("zhiku_http_requests_total", &missing), 1.0);
    for (result, n) in [
        ("created", 1.0),
        ("rejected", 1.0),
        ("unchanged", 1.0),
        ("failed", 0.0),
    ] {
        assert_eq!(
            after.count("zhiku_ingests_total", &[("result", result)])
                - before.count("zhiku_ingests_total", &[("result", result)]),
            n,
            "{result}"
        );
    }
    // The histogram: cumulative buckets up to +Inf, which equals the count.
    let mut buckets: Vec<(f64, f64)> = after
        .samples
        .iter()
        .filter(|(n, l, _)| {
            n == "zhiku_http_request_duration_seconds_bucket"
                && search
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
        })
        .map(|(_, l, v)| {
            let le = match l["le"].as_str() {
                "+Inf" => f64::INFINITY,
                x => x.parse().unwrap(),
            };
            (le, *v)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.len() >= 10, "{buckets:?}");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    assert_eq!(buckets.last().unwrap().0, f64::INFINITY);
    let count = after
        .value("zhiku_http_request_duration_seconds_count", &search)
        .unwrap();
    assert_eq!(buckets.last().unwrap().1, count);
    assert!(count >= 3.0);
    assert!(
        after
            .value("zhiku_http_request_duration_seconds_sum", &search)
            .unwrap()
            > 0.0
    );
    // Documents and chunks per scope equal what each scope's own token sees.
    for (token, scope) in [("tok-a-read", "alpha"), ("tok-b", "beta")] {
        let status = call("GET", &s.url("/v1/status"), Some(token), None);
        let docs = after.value("zhiku_documents", &[("scope", scope)]).unwrap();
        let chunks = after.value("zhiku_chunks", &[("scope", scope)]).unwrap();
        assert_eq!(docs, status.body["documents"].as_f64().unwrap(), "{scope}");
        assert_eq!(chunks, status.body["chunks"].as_f64().unwrap(), "{scope}");
    }
    assert_eq!(
        after.value("zhiku_documents", &[("scope", "alpha")]),
        Some(3.0)
    );
    assert_eq!(
        after.value("zhiku_documents", &[("scope", "public")]),
        Some(1.0)
    );
    // No token and no caller name is a label or a value.
    for secret in ["tok-a", "tok-b", "a-read"] {
        assert!(!after_text.contains(secret), "{secret} in the metrics");
    }
}

/// The machine's address on its default route, when it has one other than loopback.
fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn metrics_without_a_token_answer_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "");
    let (s, _log) = start_logged(&kb, "0.0.0.0:0", &[], &[]);
    let port = s.base.rsplit(':').next().unwrap().to_string();
    let local = format!("http://127.0.0.1:{port}/metrics");
    let (status, _, text) = request("GET", &local, &[], None);
    assert_eq!(status, 200, "{text}");
    parse_exposition(&text);
    // A /v1 token changes nothing; a foreign Host (DNS rebinding) is refused.
    let (status, _, _) = request("GET", &local, &[("authorization", "Bearer tok-a")], None);
    assert_eq!(status, 200);
    let (status, _, text) = request("GET", &local, &[("host", "metrics.evil.example")], None);
    assert_eq!(status, 403, "{text}");
    assert!(!text.contains("zhiku_documents"));
    match non_loopback_ip() {
        Some(ip) => {
            let url = format!(
                "http://{}/metrics",
                std::net::SocketAddr::new(ip, port.parse().unwrap())
            );
            let (status, _, text) = request("GET", &url, &[("host", "localhost")], None);
            assert_eq!(status, 403, "{url}: {text}");
            assert!(!text.contains("zhiku_documents"));
        }
        None => eprintln!(
            "SKIPPED the non-loopback half of metrics_without_a_token_answer_loopback_only: this machine has no non-loopback address"
        ),
    }
}

#[test]
fn metrics_with_a_token_need_that_token() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(
        dir.path(),
        "",
        "metrics_token_env = \"ZHIKU_TEST_METRICS_TOKEN\"\n",
    );
    // Without the variable the server does not start.
    let bin = assert_cmd::cargo::cargo_bin("zhiku");
    let out = std::process::Command::new(&bin)
        .env_clear()
        .arg("--kb")
        .arg(&kb)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ZHIKU_TEST_METRICS_TOKEN"),
        "{out:?}"
    );
    let (s, log) = start_logged(
        &kb,
        "127.0.0.1:0",
        &["--log-format", "json"],
        &[("ZHIKU_TEST_METRICS_TOKEN", "m-secret-0815")],
    );
    for auth in [
        None,
        Some("Bearer tok-a"),
        Some("Bearer m-secret-081"),
        Some("Basic m-secret-0815"),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let (status, text) = scrape(&s, &headers);
        assert_eq!(status, 401, "{auth:?}: {text}");
        assert!(!text.contains("zhiku_documents"));
    }
    let (status, text) = scrape(&s, &[("authorization", "Bearer m-secret-0815")]);
    assert_eq!(status, 200, "{text}");
    let e = parse_exposition(&text);
    assert!(e.value("zhiku_documents", &[("scope", "beta")]).is_some());
    let text = log.wait_for(Duration::from_secs(10), |t| {
        access_lines(t)
            .iter()
            .filter(|l| l["route"] == "/metrics")
            .count()
            >= 5
    });
    assert!(!text.contains("m-secret"), "{text}");
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    zhiku_tests::local::unused_local_port()
}

/// Accepts connections and never answers (a generator that hangs).
#[test]
fn metrics_count_backend_errors_and_admission_rejections() {
    // A generator that refuses connections, with no fallback: each ask is one generator error,
    // a 503 that is not an admission rejection.
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "generator = \"openai\"\nllm_url = \"http://127.0.0.1:{}/v1\"\nask_attempts = 1\ngenerator_fallback = []\n",
        closed_port()
    );
    let kb = two_scope_kb(dir.path(), &extra, "");
    let s = Server::start(&kb, &[]);
    let ask = json!({"question": "退货期限是多少天？"});
    for _ in 0..2 {
        let r = call("POST", &s.url("/v1/ask"), Some("tok-a"), Some(&ask));
        assert_eq!(r.status, 503, "{}", r.text);
    }
    let (_, text) = scrape(&s, &[]);
    let e = parse_exposition(&text);
    assert_eq!(
        e.value("zhiku_backend_errors_total", &[("backend", "generator")]),
        Some(2.0)
    );
    assert_eq!(
        e.value("zhiku_backend_errors_total", &[("backend", "embedder")]),
        Some(0.0)
    );
    assert_eq!(
        e.value("zhiku_backend_errors_total", &[("backend", "vector_index")]),
        Some(0.0)
    );
    assert_eq!(
        e.value("zhiku_admission_rejections_total", &[("reason", "busy")]),
        Some(0.0)
    );
    drop(s);

    // A generator that hangs past the deadline holds the only worker: 504, then 503 busy.
    let dir = tempfile::tempdir().unwrap();
    let (kb, _hang) = hanging_generator_kb(dir.path(), "timeout_ms = 500\nmax_concurrent = 1\n");
    let s = Server::start(&kb, &[]);
    let r = call("POST", &s.url("/v1/ask"), Some("tok-a"), Some(&ask));
    assert_eq!(r.status, 504, "{}", r.text);
    let r = call(
        "POST",
        &s.url("/v1/search"),
        Some("tok-a"),
        Some(&json!({"query": "退货"})),
    );
    assert_eq!(r.status, 503, "{}", r.text);
    let (status, text) = scrape(&s, &[]);
    assert_eq!(status, 200, "/metrics needs no worker");
    let e = parse_exposition(&text);
    assert_eq!(
        e.value("zhiku_admission_rejections_total", &[("reason", "timeout")]),
        Some(1.0)
    );
    assert_eq!(
        e.value("zhiku_admission_rejections_total", &[("reason", "busy")]),
        Some(1.0)
    );
    assert_eq!(
        e.value(
            "zhiku_http_requests_total",
            &[("route", "/v1/ask"), ("method", "POST"), ("status", "5xx")]
        ),
        Some(1.0)
    );
}
