//! The fallback chain over real TCP conditions: a closed local port (unreachable) and a
//! listener that accepts and never answers (a timeout). No fake chat server answers here; the
//! answer comes from the extractive generator at the end of the chain.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zhiku_adapters_offline::{ExtractiveGenerator, FallbackGenerator};
use zhiku_adapters_openai::{ChatConfig, OpenAiGenerator};
use zhiku_domain::ports::{Generator, SourceBlock};
use zhiku_domain::rules::context::build_request;
use zhiku_domain::{ChunkId, DocId, sha256_hex};
use zhiku_tests::local::unused_local_port;

fn block(marker: u32, text: &str) -> SourceBlock {
    SourceBlock {
        marker,
        chunk_id: ChunkId::derive(
            &DocId::new("kb").unwrap(),
            marker as usize,
            &sha256_hex(text),
        ),
        title: "退货政策".into(),
        source: "policy.md".into(),
        heading_path: vec![],
        pages: None,
        text: text.into(),
    }
}

fn chat(port: u16, timeout: Duration) -> Arc<dyn Generator> {
    let mut c = ChatConfig::new(format!("http://127.0.0.1:{port}/v1"), "local");
    c.timeout = timeout;
    Arc::new(OpenAiGenerator::new(c))
}

fn request() -> zhiku_domain::ports::GenerationRequest {
    build_request(
        "退货期限是多少天？",
        vec![block(1, "标准客户的退货期限是 30 天，自签收之日起计算。")],
        None,
        1,
    )
}

#[test]
fn an_unreachable_server_falls_back_to_the_extractive_generator_with_a_notice() {
    let port = unused_local_port();
    let extractive = ExtractiveGenerator::default();
    let chain = FallbackGenerator::new(vec![
        chat(port, Duration::from_secs(10)),
        Arc::new(extractive.clone()),
    ])
    .unwrap();
    let started = Instant::now();
    let g = chain.generate_attributed(&request()).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(g.generator, extractive.identity());
    assert_eq!(g.text, "标准客户的退货期限是 30 天，自签收之日起计算[1]。");
    assert_eq!(g.notices.len(), 1, "{:?}", g.notices);
    assert!(
        g.notices[0].contains(&format!("127.0.0.1:{port}")) && g.notices[0].contains("unavailable"),
        "{:?}",
        g.notices
    );
}

#[test]
fn a_server_that_never_answers_times_out_and_the_chain_goes_on() {
    // Accepts connections and never writes a byte.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hanging = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(2).collect();
        std::thread::sleep(Duration::from_secs(20));
        drop(held);
    });
    let closed = unused_local_port();
    let extractive = ExtractiveGenerator::default();
    let chain = FallbackGenerator::new(vec![
        chat(hanging, Duration::from_millis(800)),
        chat(closed, Duration::from_secs(5)),
        Arc::new(extractive.clone()),
    ])
    .unwrap();
    let started = Instant::now();
    let g = chain.generate_attributed(&request()).unwrap();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(700), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert_eq!(g.generator, extractive.identity());
    assert_eq!(g.notices.len(), 2, "{:?}", g.notices);
    assert!(
        g.notices[0].contains(&format!("127.0.0.1:{hanging}")),
        "{:?}",
        g.notices
    );
    assert!(
        g.notices[1].contains(&format!("127.0.0.1:{closed}")),
        "{:?}",
        g.notices
    );
}
