//! `zhiku serve` as an operator runs it: one structured log line per request (never a token)
//! and a request ID in every response and in the answer's trace — against a real server on an
//! ephemeral port.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Server, call, start_logged, two_scope_kb};

/// A request with extra headers: (status, `X-Request-Id` of the response, body text).
fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Option<String>, String) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let mut req = agent.request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let resp = match body {
        Some(b) => req.send_json(b.clone()),
        None => req.call(),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = resp.status();
    let id = resp.header("x-request-id").map(str::to_string);
    (status, id, resp.into_string().unwrap_or_default())
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
