//! A cross-encoder reranker: the question and each candidate read together by one BERT-family
//! sequence classifier, its logit the candidate's score.
//!
//! Models: `BertForSequenceClassification` (e.g. the ms-marco MiniLM cross-encoders) and
//! `XLMRobertaForSequenceClassification` / `RobertaForSequenceClassification` (e.g.
//! `BAAI/bge-reranker-base`), from a local folder or the hub through the embedder's own loading
//! path ([`Checkpoint`]). The encoder is the embedder's ([`BertEncoder`]): pairs are packed, not
//! padded, so a candidate's score does not depend on the others of its batch.
//!
//! # The head
//!
//! Both families put a tanh layer over the first token's last hidden state, then a linear
//! classifier:
//!
//! ```text
//! z = W_c · tanh(W_d · h_[CLS] + b_d) + b_c
//! ```
//!
//! (BERT's `pooler.dense` + `classifier`; RoBERTa's `classifier.dense` + `classifier.out_proj`).
//! With one label the score is `z`; with two (relevant vs not) it is `z_1 − z_0`, the log-odds.
//! Scores are logits: comparable within one question, not calibrated probabilities.

use tokenizers::{Encoding, Tokenizer};
use zhiku_domain::ports::{RerankCandidate, RerankError, Reranker};

use crate::encoder::BertEncoder;
use crate::{Checkpoint, LoadError, ModelSource};

const ADAPTER: &str = "candle-cross-encoder";

/// Tuning of the cross-encoder.
#[derive(Debug, Clone)]
pub struct CrossEncoderOptions {
    /// Pairs per packed forward pass at most (the token budget of a pass applies too).
    pub batch_size: usize,
    /// Overrides the maximum pair length in tokens (default: the model's positions, at most 512).
    pub max_length: Option<usize>,
    /// Characters of a candidate read at most, title and headings included (the tokenizer
    /// truncates to the model's window anyway; this bounds its work).
    pub max_chars: usize,
}

impl Default for CrossEncoderOptions {
    fn default() -> Self {
        Self {
            batch_size: 32,
            max_length: None,
            max_chars: 8000,
        }
    }
}

/// A dense layer kept as plain rows (the head runs on one row per candidate).
#[derive(Debug)]
struct Dense {
    /// `out × in`, row-major.
    w: Vec<f32>,
    b: Vec<f32>,
    input: usize,
}

impl Dense {
    fn load(
        vb: &candle_nn::VarBuilder<'_>,
        name: &str,
        out: usize,
        input: usize,
    ) -> candle_core::Result<Self> {
        Ok(Self {
            w: vb
                .get((out, input), &format!("{name}.weight"))?
                .flatten_all()?
                .to_vec1()?,
            b: vb.get(out, &format!("{name}.bias"))?.to_vec1()?,
            input,
        })
    }

    fn apply(&self, x: &[f32]) -> Vec<f32> {
        self.w
            .chunks_exact(self.input)
            .zip(&self.b)
            .map(|(row, b)| row.iter().zip(x).map(|(w, x)| w * x).sum::<f32>() + b)
            .collect()
    }
}

/// A BERT-family sequence classifier scoring (question, candidate) pairs.
pub struct CrossEncoder {
    model: BertEncoder,
    dense: Dense,
    classifier: Dense,
    tokenizer: Tokenizer,
    name: String,
    batch_size: usize,
    max_length: usize,
    max_chars: usize,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("name", &self.name)
            .field("max_length", &self.max_length)
            .field("labels", &self.classifier.b.len())
            .finish()
    }
}

/// Where the tanh layer and the classifier live, per family.
fn head_names(roberta: bool) -> (&'static str, &'static str) {
    if roberta {
        ("classifier.dense", "classifier.out_proj")
    } else {
        ("pooler.dense", "classifier")
    }
}

impl CrossEncoder {
    /// Loads a sequence-classification model from a folder or the hub.
    pub fn load(source: &ModelSource, options: &CrossEncoderOptions) -> Result<Self, LoadError> {
        let mut checkpoint = Checkpoint::open(source)?;
        let wanted = "BERT, RoBERTa or XLM-RoBERTa sequence classifiers (cross-encoders)";
        let classifier = checkpoint.config.model_type != "bert" && !checkpoint.config.is_roberta()
            || checkpoint.architectures.is_empty()
            || !checkpoint
                .architectures
                .iter()
                .all(|a| a.ends_with("ForSequenceClassification"));
        if classifier {
            return Err(checkpoint.architecture_error(wanted));
        }
        let labels = checkpoint.labels();
        if !(1..=2).contains(&labels) {
            return Err(LoadError::Invalid {
                path: checkpoint.config_path.clone(),
                reason: format!(
                    "{labels} labels: a reranker has one relevance logit, or two (not relevant, relevant)"
                ),
            });
        }
        let (model, vb) = checkpoint.encoder()?;
        let roberta = checkpoint.config.is_roberta();
        let h = checkpoint.config.hidden_size;
        let (dense_name, classifier_name) = head_names(roberta);
        // BERT keeps its pooler under the encoder's prefix.
        let dense_vb = if !roberta && vb.contains_tensor("bert.pooler.dense.weight") {
            vb.pp("bert")
        } else {
            vb.clone()
        };
        let dense =
            Dense::load(&dense_vb, dense_name, h, h).map_err(|e| checkpoint.head_missing(e))?;
        let classifier =
            Dense::load(&vb, classifier_name, labels, h).map_err(|e| checkpoint.head_missing(e))?;
        let max_length = options
            .max_length
            .unwrap_or(512)
            .min(checkpoint.config.max_tokens())
            .max(8);
        let tokenizer = checkpoint.tokenizer(max_length)?;
        Ok(Self {
            model,
            dense,
            classifier,
            tokenizer,
            name: format!(
                "cross-encoder:{}@{}",
                checkpoint.model_id(),
                checkpoint.revision()
            ),
            batch_size: options.batch_size.max(1),
            max_length,
            max_chars: options.max_chars.max(1),
        })
    }

    /// The maximum pair length in tokens.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Scores pairs of `query` with each of `passages`, in input order.
    pub fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f64>, RerankError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let pairs: Vec<(String, String)> = passages
            .iter()
            .map(|p| (query.to_string(), p.to_string()))
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(pairs, true)
            .map_err(|e| RerankError::InvalidInput(e.to_string()))?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
        let sorted: Vec<&Encoding> = order.iter().map(|&i| &encodings[i]).collect();
        let mut scores = vec![0f64; encodings.len()];
        let mut done = 0;
        for pass in sorted
            .chunks(self.batch_size)
            .flat_map(crate::CandleEmbedder::pack)
        {
            for score in self.forward(pass)? {
                scores[order[done]] = score;
                done += 1;
            }
        }
        Ok(scores)
    }

    /// One packed pass: the first token of each pair through the head.
    fn forward(&self, pass: &[&Encoding]) -> Result<Vec<f64>, RerankError> {
        let ids: Vec<&[u32]> = pass.iter().map(|e| e.get_ids()).collect();
        let types: Vec<&[u32]> = pass.iter().map(|e| e.get_type_ids()).collect();
        let hidden = self
            .model
            .forward(&ids, &types)
            .map_err(|e| RerankError::Backend {
                adapter: ADAPTER,
                source: Box::new(e),
                temporary: false,
            })?;
        let h = self.model.hidden_size();
        let mut first = 0;
        Ok(pass
            .iter()
            .map(|enc| {
                let cls = &hidden[first * h..(first + 1) * h];
                first += enc.get_ids().len();
                let pooled: Vec<f32> = self.dense.apply(cls).into_iter().map(f32::tanh).collect();
                match self.classifier.apply(&pooled)[..] {
                    [z] => f64::from(z),
                    [not, relevant] => f64::from(relevant - not),
                    _ => unreachable!("labels checked at load"),
                }
            })
            .collect())
    }
}

impl Reranker for CrossEncoder {
    fn name(&self) -> &str {
        &self.name
    }

    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError> {
        let passages: Vec<String> = candidates
            .iter()
            .map(|c| c.passage(self.max_chars))
            .collect();
        let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
        self.score(query, &refs)
    }
}
