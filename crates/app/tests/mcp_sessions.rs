//! MCP sessions over HTTP are bounded (issue 35): per token and in all, refused beyond with
//! 429 or 503 and `Retry-After`, their slots freed when a client closes a session or it idles
//! out (`[serve] mcp_max_sessions`, `mcp_max_sessions_per_token`, `mcp_session_idle_ms`).

mod support;

use std::time::Duration;

use serde_json::{Value, json};

use support::{Server, two_scope_kb};

/// What opening a session answered: status, session ID, `Retry-After`, body.
struct Opened {
    status: u16,
    session: Option<String>,
    retry_after: Option<String>,
    body: String,
}

fn request(url: &str, method: &str, token: &str, session: Option<&str>) -> ureq::Request {
    let mut req = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build()
        .request(method, url)
        .set("authorization", &format!("Bearer {token}"))
        .set("accept", "application/json, text/event-stream")
        .set("content-type", "application/json");
    if let Some(s) = session {
        req = req
            .set("mcp-session-id", s)
            .set("mcp-protocol-version", "2025-06-18");
    }
    req
}

fn open(url: &str, token: &str) -> Opened {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp_sessions", "version": "1"}}});
    let resp = match request(url, "POST", token, None).send_string(&init.to_string()) {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let opened = Opened {
        status: resp.status(),
        session: resp.header("mcp-session-id").map(str::to_string),
        retry_after: resp.header("retry-after").map(str::to_string),
        body: resp.into_string().unwrap_or_default(),
    };
    if let Some(s) = &opened.session {
        request(url, "POST", token, Some(s))
            .send_string(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            )
            .unwrap();
    }
    opened
}

fn refused(o: &Opened, status: u16, says: &str) {
    assert_eq!(o.status, status, "{}", o.body);
    assert!(o.session.is_none());
    assert!(o.retry_after.is_some(), "no Retry-After");
    let body: Value = serde_json::from_str(&o.body).unwrap();
    assert_eq!(body["error"]["code"], "too_many_sessions", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
}

#[test]
fn sessions_are_capped_per_token_and_in_all_and_freed_by_close_and_idle() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(
        dir.path(),
        "",
        "mcp_max_sessions = 5\nmcp_max_sessions_per_token = 3\nmcp_session_idle_ms = 1500\n",
    );
    let s = Server::start(&kb, &[]);
    let url = s.url("/mcp");

    // One read-only token: three sessions, then 429.
    let mine: Vec<String> = (0..3)
        .map(|_| {
            let o = open(&url, "tok-a-read");
            assert_eq!(o.status, 200, "{}", o.body);
            o.session.unwrap()
        })
        .collect();
    refused(&open(&url, "tok-a-read"), 429, "mcp_max_sessions_per_token");
    // Another token still opens its own, up to the server's five; then everyone gets 503.
    for _ in 0..2 {
        assert_eq!(open(&url, "tok-a").status, 200);
    }
    refused(&open(&url, "tok-b"), 503, "mcp_max_sessions");

    // The sessions held keep working.
    let listed = request(&url, "POST", "tok-a-read", Some(&mine[0]))
        .send_string(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
        .unwrap();
    assert_eq!(listed.status(), 200);
    assert!(listed.into_string().unwrap().contains("search_knowledge"));

    // A session its client closes frees its slot at once.
    let closed = request(&url, "DELETE", "tok-a-read", Some(&mine[1]))
        .call()
        .unwrap();
    assert!(closed.status() < 300, "{}", closed.status());
    let again = open(&url, "tok-a-read");
    assert_eq!(again.status, 200, "{}", again.body);
    refused(&open(&url, "tok-b"), 503, "mcp_max_sessions");

    // Idle sessions are closed after mcp_session_idle_ms, and their slots come back.
    std::thread::sleep(Duration::from_millis(3_000));
    for token in ["tok-b", "tok-b", "tok-b"] {
        let o = open(&url, token);
        assert_eq!(o.status, 200, "{}", o.body);
    }
    refused(&open(&url, "tok-b"), 429, "b holds 3 MCP sessions");
    // An idled-out session is gone for its client too.
    let gone = request(&url, "POST", "tok-a-read", Some(&mine[0]))
        .send_string(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string());
    assert!(
        matches!(gone, Err(ureq::Error::Status(404, _))),
        "{:?}",
        gone.map(|r| r.status())
    );
}

#[test]
fn the_session_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let kb = two_scope_kb(dir.path(), "", "mcp_max_sessions_per_token = 0\n");
    let out = support::zhiku(&kb)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp_max_sessions_per_token"), "{err}");
}
