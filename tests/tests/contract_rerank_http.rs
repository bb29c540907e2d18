//! The HTTP reranker (`OpenAiReranker`) against a real reranking server: llama.cpp's
//! `llama-server --reranking` serving the MiniLM stand-in cross-encoder that
//! `scripts/make-rerank-standin.py` writes (its scores carry no relevance, so the mechanics
//! contract runs, not the relevance property).
//!
//! Set `ZHIKU_TEST_RERANK_URL` to the server's root (`bash scripts/rerank-server.sh start` builds
//! and starts it, printing `http://127.0.0.1:8090` on its last line). Without it
//! every test prints a `SKIPPED` line naming it and checks nothing, unless
//! `ZHIKU_REQUIRE_RERANK_SERVER=1`, when a missing server fails the test: these tests never pass
//! against a fake.

use std::time::Duration;

use zhiku_adapters_openai::{OpenAiReranker, OpenAiRerankerConfig, RerankApi};
use zhiku_domain::ports::{RerankError, Reranker};
use zhiku_tests::contract::rerank::{candidates, presented, same_scores};

const VAR: &str = "ZHIKU_TEST_RERANK_URL";
const REQUIRE: &str = "ZHIKU_REQUIRE_RERANK_SERVER";

/// The server's root, or `None` after the loud notice (a failure when required).
fn server(test: &str) -> Option<String> {
    match std::env::var(VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            if std::env::var(REQUIRE).as_deref() == Ok("1") {
                panic!("{REQUIRE}=1 but {VAR} is not set");
            }
            zhiku_tests::contract::notice(&format!(
                "SKIPPED rerank_http::{test}: set {VAR}=http://127.0.0.1:8090 (bash scripts/rerank-server.sh start: llama-server --reranking serving the MiniLM stand-in) to run it against a real reranking server"
            ));
            None
        }
    }
}

fn connect(test: &str, api: Option<RerankApi>, max_documents: usize) -> Option<OpenAiReranker> {
    let mut config = OpenAiRerankerConfig::new(server(test)?);
    config.api = api;
    config.max_documents = max_documents;
    Some(OpenAiReranker::connect(config).unwrap_or_else(|e| panic!("{test}: {e}")))
}

mod contract {
    use super::*;
    zhiku_tests::reranker_mechanics_contract!(|()| -> Option<Box<dyn Reranker>> {
        Some(Box::new(connect("reranker_contract", None, 32)?))
    });
}

#[test]
fn both_wire_shapes_give_the_same_scores() {
    let Some(jina) = connect("both_wire_shapes", Some(RerankApi::Jina), 32) else {
        return;
    };
    let tei = connect("both_wire_shapes", Some(RerankApi::Tei), 32).unwrap();
    assert_eq!(jina.api(), RerankApi::Jina);
    assert_eq!(tei.api(), RerankApi::Tei);
    let chunks = candidates();
    let a = jina.rerank("故宫在哪里？", &presented(&chunks)).unwrap();
    let b = tei.rerank("故宫在哪里？", &presented(&chunks)).unwrap();
    assert_eq!(a.len(), chunks.len());
    assert!(same_scores(&a, &b), "{a:?} vs {b:?}");
    // Discovery finds a shape and names the served model.
    let found = connect("both_wire_shapes", None, 32).unwrap();
    assert!(!found.model().is_empty());
    assert!(found.name().starts_with("http-rerank:"), "{}", found.name());
}

#[test]
fn batches_with_an_anchor_score_like_one_request() {
    let Some(one) = connect("batches", None, 64) else {
        return;
    };
    // Three documents per request: the first three candidates, then the anchor and the last two.
    let small = connect("batches", None, 3).unwrap();
    let chunks = candidates();
    assert!(chunks.len() > 3, "the fixture must take several requests");
    let whole = one.rerank("北京的宫殿", &presented(&chunks)).unwrap();
    let split = small.rerank("北京的宫殿", &presented(&chunks)).unwrap();
    assert!(same_scores(&whole, &split), "{whole:?} vs {split:?}");
}

#[test]
fn an_unreachable_server_is_unavailable() {
    if server("unreachable").is_none() {
        return;
    }
    let port = zhiku_tests::local::unused_local_port();
    let mut config = OpenAiRerankerConfig::new(format!("http://127.0.0.1:{port}"));
    config.timeout = Duration::from_secs(2);
    match OpenAiReranker::connect(config) {
        Err(RerankError::Unavailable { .. }) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// llama-server does not truncate: a pair over its batch (512 tokens here) is refused with a
/// 500. The default pair size keeps a long Chinese chunk under it; a larger one is refused as
/// invalid input naming the setting, not retried as a server fault.
#[test]
fn long_chinese_passages_fit_by_default_and_oversize_is_invalid_input() {
    let Some(url) = server("long_passages") else {
        return;
    };
    let text =
        "长江是亚洲第一长河，流经青藏高原、四川盆地和长江中下游平原，最终注入东海。".repeat(20);
    let chunk = zhiku_tests::contract::fixtures::Spec::new("long", "s", &text)
        .locale("zh-CN")
        .title("长江")
        .chunk();
    let chunks = vec![chunk];
    let fits = OpenAiReranker::connect(OpenAiRerankerConfig::new(&url)).unwrap();
    let scores = fits.rerank("长江流入哪里？", &presented(&chunks)).unwrap();
    assert_eq!(scores.len(), 1);
    assert!(scores[0].is_finite());

    let mut config = OpenAiRerankerConfig::new(&url);
    config.max_chars = 2000;
    let oversize = OpenAiReranker::connect(config).unwrap();
    match oversize.rerank("长江流入哪里？", &presented(&chunks)) {
        Err(RerankError::InvalidInput(message)) => {
            assert!(message.contains("rerank_chars"), "{message}")
        }
        other => panic!("expected InvalidInput naming rerank_chars, got {other:?}"),
    }
}
