//! The candle cross-encoder reranker.
//!
//! - With a trained cross-encoder (`ZHIKU_TEST_RERANK_MODEL`: a folder or hub id of a BERT or
//!   XLM-RoBERTa sequence classifier, e.g. `BAAI/bge-reranker-base` or
//!   `cross-encoder/ms-marco-MiniLM-L-6-v2`): the whole reranker contract, relevance included.
//!   No such model ships in a package this project can install, so without the variable these
//!   tests print SKIPPED.
//! - With all-MiniLM-L6-v2 (`scripts/fetch-test-model.sh`) and a **stand-in classification
//!   head** (seeded values, no training): the loading and scoring path — the mechanics of the
//!   contract, packing, truncation, errors. Its scores mean nothing; no relevance is asserted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use candle_core::{Device, Tensor};
use zhiku_adapters_candle::{CrossEncoder, CrossEncoderOptions, LoadError, ModelSource};
use zhiku_domain::ports::Reranker;

fn skipped(what: &str) {
    let msg = format!("SKIPPED: {what}");
    println!("{msg}");
    eprintln!("{msg}");
}

/// A trained cross-encoder, when one is configured.
fn trained() -> Option<&'static CrossEncoder> {
    static M: OnceLock<Option<CrossEncoder>> = OnceLock::new();
    M.get_or_init(|| {
        let Some(spec) = std::env::var("ZHIKU_TEST_RERANK_MODEL")
            .ok()
            .filter(|s| !s.is_empty())
        else {
            skipped(
                "no trained cross-encoder (set ZHIKU_TEST_RERANK_MODEL to a folder or hub id, e.g. BAAI/bge-reranker-base)",
            );
            return None;
        };
        Some(
            CrossEncoder::load(&ModelSource::parse(&spec), &CrossEncoderOptions::default())
                .unwrap_or_else(|e| panic!("ZHIKU_TEST_RERANK_MODEL={spec}: {e}")),
        )
    })
    .as_ref()
}

fn minilm_dir() -> Option<PathBuf> {
    zhiku_tests::local::test_model_dir()
        .map_err(|why| skipped(&why))
        .ok()
}

/// MiniLM turned into a `BertForSequenceClassification` folder: its encoder and pooler, plus a
/// seeded `classifier` of `labels` rows.
fn stand_in(to: &Path, labels: usize) -> Option<()> {
    stand_in_as(to, labels, false)
}

/// The stand-in, as a BERT classifier or (`roberta`) declared an
/// `XLMRobertaForSequenceClassification`: `roberta.` names, positions from `pad_token_id + 1 = 2`,
/// one token type, the pooler as `classifier.dense` and the head as `classifier.out_proj`.
fn stand_in_as(to: &Path, labels: usize, roberta: bool) -> Option<()> {
    let from = minilm_dir()?;
    std::fs::copy(from.join("tokenizer.json"), to.join("tokenizer.json")).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(from.join("config.json")).unwrap()).unwrap();
    config["architectures"] = serde_json::json!(["BertForSequenceClassification"]);
    config["num_labels"] = serde_json::json!(labels);
    if roberta {
        config["architectures"] = serde_json::json!(["XLMRobertaForSequenceClassification"]);
        config["model_type"] = serde_json::json!("xlm-roberta");
        config["pad_token_id"] = serde_json::json!(1);
        config["type_vocab_size"] = serde_json::json!(1);
    }
    std::fs::write(to.join("config.json"), config.to_string()).unwrap();
    let mut tensors: HashMap<String, Tensor> =
        candle_core::safetensors::load(from.join("model.safetensors"), &Device::Cpu).unwrap();
    // A fixed pseudo-random head (xorshift), small enough to keep logits moderate.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let weights: Vec<f32> = (0..labels * 384)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2
        })
        .collect();
    let head = if roberta {
        "classifier.out_proj"
    } else {
        "classifier"
    };
    tensors.insert(
        format!("{head}.weight"),
        Tensor::from_vec(weights, (labels, 384), &Device::Cpu).unwrap(),
    );
    tensors.insert(
        format!("{head}.bias"),
        Tensor::zeros(labels, candle_core::DType::F32, &Device::Cpu).unwrap(),
    );
    if roberta {
        let types = tensors["embeddings.token_type_embeddings.weight"].clone();
        tensors.insert(
            "embeddings.token_type_embeddings.weight".into(),
            types.narrow(0, 0, 1).unwrap(),
        );
        for part in ["weight", "bias"] {
            let pooler = tensors.remove(&format!("pooler.dense.{part}")).unwrap();
            tensors.insert(format!("classifier.dense.{part}"), pooler);
        }
        tensors = tensors
            .into_iter()
            .map(|(k, v)| {
                if k.starts_with("classifier.") {
                    (k, v)
                } else {
                    (format!("roberta.{k}"), v)
                }
            })
            .collect();
    }
    candle_core::safetensors::save(&tensors, to.join("model.safetensors")).unwrap();
    Some(())
}

/// The stand-in, loaded once.
fn stand_in_encoder() -> Option<&'static CrossEncoder> {
    static M: OnceLock<Option<(tempfile::TempDir, CrossEncoder)>> = OnceLock::new();
    M.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        stand_in(dir.path(), 1)?;
        let model = CrossEncoder::load(
            &ModelSource::Dir(dir.path().to_path_buf()),
            &CrossEncoderOptions {
                batch_size: 3,
                ..Default::default()
            },
        )
        .unwrap();
        Some((dir, model))
    })
    .as_ref()
    .map(|(_, m)| m)
}

struct Shared(&'static CrossEncoder);

impl Reranker for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn rerank(
        &self,
        query: &str,
        candidates: &[zhiku_domain::ports::RerankCandidate<'_>],
    ) -> Result<Vec<f64>, zhiku_domain::ports::RerankError> {
        self.0.rerank(query, candidates)
    }
}

mod trained_model {
    use super::*;
    zhiku_tests::reranker_contract!(|()| -> Option<Box<dyn Reranker>> {
        Some(Box::new(Shared(trained()?)))
    });
}

mod stand_in_head {
    use super::*;
    zhiku_tests::reranker_mechanics_contract!(|()| -> Option<Box<dyn Reranker>> {
        Some(Box::new(Shared(stand_in_encoder()?)))
    });
}

#[test]
fn a_trained_model_ranks_the_answering_passage_first_in_chinese_and_english() {
    let Some(model) = trained() else { return };
    let cases: [(&str, [&str; 3], usize); 2] = [
        (
            "长江的源头在哪里？",
            [
                "黄河发源于青海省巴颜喀拉山脉，流经九个省区。",
                "长江发源于青藏高原的唐古拉山脉各拉丹冬峰西南侧。",
                "上海是中国的经济中心，位于长江入海口。",
            ],
            1,
        ),
        (
            "Which metal is liquid at room temperature?",
            [
                "Mercury is the only metal that is liquid at standard conditions.",
                "Iron is the most common element on Earth by mass.",
                "Room temperature is usually taken to be about 20 degrees Celsius.",
            ],
            0,
        ),
    ];
    for (query, passages, answer) in cases {
        let scores = model.score(query, &passages).unwrap();
        let best = (0..3)
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap();
        assert_eq!(best, answer, "{query}: {scores:?}");
    }
}

#[test]
fn pairs_packed_together_score_as_they_do_alone() {
    let Some(model) = stand_in_encoder() else {
        return;
    };
    let query = "故宫是哪个朝代修建的？";
    let passages = [
        "故宫始建于明朝永乐四年，是明清两代的皇家宫殿。",
        "北京春天多风。",
        "The Forbidden City was built between 1406 and 1420 under the Ming dynasty.",
        "长城是古代中国为抵御北方游牧民族而修建的防御工程，东起山海关，西至嘉峪关，全长两万多公里。",
        "。",
        "紫禁城",
        "A palace is a grand residence, especially a royal residence.",
    ];
    // batch_size 3: three passes of mixed lengths.
    let together = model.score(query, &passages).unwrap();
    for (passage, got) in passages.iter().zip(&together) {
        let alone = model.score(query, &[passage]).unwrap()[0];
        assert!(
            (alone - got).abs() < 1e-4,
            "{passage}: {alone} alone vs {got} packed"
        );
    }
    // Different passages, different scores: the passage is read, not just the query.
    let distinct: std::collections::BTreeSet<String> =
        together.iter().map(|s| format!("{s:.6}")).collect();
    assert_eq!(distinct.len(), passages.len(), "{together:?}");
}

#[test]
fn a_passage_longer_than_the_window_is_truncated_not_refused() {
    let Some(model) = stand_in_encoder() else {
        return;
    };
    let long = "故宫始建于明朝永乐四年，是明清两代的皇家宫殿。".repeat(200);
    let scores = model.score("故宫是哪个朝代修建的？", &[&long]).unwrap();
    assert!(scores[0].is_finite());
    assert!(model.max_length() <= 512);
    // The question is kept whole: a different question over the same truncated passage scores
    // differently.
    let other = model.score("长城有多长？", &[&long]).unwrap();
    assert_ne!(scores[0], other[0]);
}

#[test]
fn two_labels_score_the_relevant_logit_minus_the_other() {
    let Some(_) = minilm_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    stand_in(dir.path(), 2).unwrap();
    let model = CrossEncoder::load(
        &ModelSource::Dir(dir.path().to_path_buf()),
        &CrossEncoderOptions::default(),
    )
    .unwrap();
    let scores = model.score("问题", &["答案", "无关"]).unwrap();
    assert!(scores.iter().all(|s| s.is_finite()));
    assert!(
        model.name().starts_with("cross-encoder:"),
        "{}",
        model.name()
    );
}

#[test]
fn an_embedding_model_is_refused_with_the_reason() {
    let Some(from) = minilm_dir() else { return };
    // The MiniLM folder as shipped: a BertModel, no classification head.
    let err =
        CrossEncoder::load(&ModelSource::Dir(from), &CrossEncoderOptions::default()).unwrap_err();
    assert!(matches!(err, LoadError::Architecture { .. }), "{err}");
    assert!(err.to_string().contains("BertModel"), "{err}");
    // Declared a classifier, but the head is missing from the weights.
    let dir = tempfile::tempdir().unwrap();
    stand_in(dir.path(), 1).unwrap();
    let mut tensors: HashMap<String, Tensor> =
        candle_core::safetensors::load(dir.path().join("model.safetensors"), &Device::Cpu).unwrap();
    tensors.remove("classifier.weight");
    candle_core::safetensors::save(&tensors, dir.path().join("model.safetensors")).unwrap();
    let err = CrossEncoder::load(
        &ModelSource::Dir(dir.path().to_path_buf()),
        &CrossEncoderOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no classification head"), "{err}");
    // Three labels (an NLI model) is no reranker.
    let dir = tempfile::tempdir().unwrap();
    stand_in(dir.path(), 3).unwrap();
    let err = CrossEncoder::load(
        &ModelSource::Dir(dir.path().to_path_buf()),
        &CrossEncoderOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("3 labels"), "{err}");
}

/// The stand-in's logits match an independent NumPy float64 forward pass of the same weights
/// and head (tests/fixtures/gen_cross_parity.py), truncated pairs included: as a BERT
/// classifier and declared an XLM-RoBERTa one (offset positions, one token type).
#[test]
fn logits_match_the_numpy_reference() {
    let Some(bert) = stand_in_encoder() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    stand_in_as(dir.path(), 1, true).unwrap();
    let roberta = CrossEncoder::load(
        &ModelSource::Dir(dir.path().to_path_buf()),
        &CrossEncoderOptions::default(),
    )
    .unwrap();
    assert_eq!(roberta.max_length(), 510);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/parity-cross-minilm.json"
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 6);
    for case in cases {
        let (query, passage) = (
            case["query"].as_str().unwrap(),
            case["passage"].as_str().unwrap(),
        );
        for (model, key) in [(bert, "score"), (&roberta, "roberta_score")] {
            let want = case[key].as_f64().unwrap();
            let got = model.score(query, &[passage]).unwrap()[0];
            assert!(
                (got - want).abs() < 2e-4,
                "{key} {query} / {}: {got} vs NumPy {want}",
                passage.chars().take(20).collect::<String>()
            );
        }
    }
}
