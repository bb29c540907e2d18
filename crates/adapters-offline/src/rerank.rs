//! The rule reranker: zhiku's offline default [`Reranker`], with no model.
//!
//! Each candidate's score adds up four signals, each in [0, 1] before its weight:
//!
//! - **coverage**: the share of the question's term weight found in the chunk's text, each term
//!   weighted by its rarity among the candidates (a term every candidate has says little about
//!   which one answers, a term none has is left out);
//! - **heading**: the same share in the document's title and the chunk's heading path;
//! - **prior**: the fused rank, `1 / (1 + ln rank)`, so agreement of the routes still counts;
//! - **metadata boosts**: configured `key = value` pairs that lift a candidate whose document has
//!   that metadata (an official handbook over a chat export, say).
//!
//! Then **near-duplicate suppression**: walking the candidates best first, one whose terms
//! overlap a better candidate's by at least the configured Jaccard similarity loses the
//! duplicate penalty, so the context is not five copies of one paragraph.
//!
//! Terms are those of the domain's overlap scoring (`zhiku_text::terms`: lower-cased words and
//! CJK character bigrams), so Chinese and English questions are treated alike.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use zhiku_domain::ports::{RerankCandidate, RerankError, Reranker};
use zhiku_text::terms;

/// A metadata value that lifts a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetadataBoost {
    /// The metadata key.
    pub key: String,
    /// The value (compared as text; a list matches when it holds the value).
    pub value: String,
    /// Added to the score of a matching candidate.
    pub boost: f64,
}

/// The rule reranker's weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuleConfig {
    /// Weight of the rarity-weighted question-term coverage of the chunk's text.
    pub coverage: f64,
    /// Weight of the coverage of the title and heading path.
    pub heading: f64,
    /// Weight of the fused-rank prior.
    pub prior: f64,
    /// Jaccard similarity of term sets at which a lower candidate is a near-duplicate.
    pub duplicate_similarity: f64,
    /// Subtracted from a near-duplicate's score.
    pub duplicate_penalty: f64,
    /// Metadata boosts.
    pub boosts: Vec<MetadataBoost>,
}

impl Default for RuleConfig {
    fn default() -> Self {
        Self {
            coverage: 1.0,
            heading: 0.3,
            prior: 0.5,
            duplicate_similarity: 0.8,
            duplicate_penalty: 1.0,
            boosts: Vec::new(),
        }
    }
}

impl RuleConfig {
    /// Checks the weights.
    pub fn validate(&self) -> Result<(), String> {
        let weights = [
            ("coverage", self.coverage),
            ("heading", self.heading),
            ("prior", self.prior),
            ("duplicate_penalty", self.duplicate_penalty),
        ];
        for (name, w) in weights {
            if !(w.is_finite() && w >= 0.0) {
                return Err(format!(
                    "rule reranker: {name} must be a number ≥ 0, not {w}"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.duplicate_similarity) {
            return Err(format!(
                "rule reranker: duplicate_similarity must lie in [0, 1], not {}",
                self.duplicate_similarity
            ));
        }
        if let Some(b) = self.boosts.iter().find(|b| !b.boost.is_finite()) {
            return Err(format!(
                "rule reranker: the boost of {} is not a number",
                b.key
            ));
        }
        Ok(())
    }
}

/// Reranks by rules; see the crate documentation.
#[derive(Debug, Clone, Default)]
pub struct RuleReranker {
    config: RuleConfig,
}

impl RuleReranker {
    /// A rule reranker with `config` (validated).
    pub fn new(config: RuleConfig) -> Result<Self, String> {
        config.validate()?;
        Ok(Self { config })
    }
}

/// The weighted share of `query`'s terms that `have` holds.
fn covered(query: &[(String, f64)], have: &BTreeSet<String>) -> f64 {
    let total: f64 = query.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return 0.0;
    }
    query
        .iter()
        .filter(|(t, _)| have.contains(t))
        .map(|(_, w)| w)
        .sum::<f64>()
        / total
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

fn metadata_matches(value: &serde_json::Value, wanted: &str) -> bool {
    match value {
        serde_json::Value::String(s) => s == wanted,
        serde_json::Value::Array(items) => items.iter().any(|v| metadata_matches(v, wanted)),
        serde_json::Value::Null | serde_json::Value::Object(_) => false,
        other => wanted
            .parse::<serde_json::Value>()
            .is_ok_and(|w| &w == other),
    }
}

impl Reranker for RuleReranker {
    fn name(&self) -> &str {
        "rules-v1"
    }

    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<BTreeSet<String>> = candidates
            .iter()
            .map(|c| terms(&c.chunk.indexed_text()))
            .collect();
        let headings: Vec<BTreeSet<String>> = candidates
            .iter()
            .map(|c| {
                let mut h = terms(c.chunk.doc().title.as_str());
                for heading in c.chunk.heading_path() {
                    h.extend(terms(heading));
                }
                h
            })
            .collect();
        let mut df: HashMap<&str, usize> = HashMap::new();
        for (text, heading) in texts.iter().zip(&headings) {
            for t in text.union(heading) {
                *df.entry(t.as_str()).or_default() += 1;
            }
        }
        let n = candidates.len() as f64;
        // A question term no candidate holds cannot tell them apart: it is left out.
        let question: Vec<(String, f64)> = terms(query)
            .into_iter()
            .filter_map(|t| {
                let seen = df.get(t.as_str()).copied()? as f64;
                let w = (1.0 + (n + 1.0) / (seen + 0.5)).ln();
                Some((t, w))
            })
            .collect();
        let c = &self.config;
        let mut scores: Vec<f64> = candidates
            .iter()
            .enumerate()
            .map(|(i, cand)| {
                let prior = 1.0 / (1.0 + (cand.fused_rank.max(1) as f64).ln());
                let boost: f64 = c
                    .boosts
                    .iter()
                    .filter(|b| {
                        cand.chunk
                            .doc()
                            .metadata
                            .get(&b.key)
                            .is_some_and(|v| metadata_matches(v, &b.value))
                    })
                    .map(|b| b.boost)
                    .sum();
                c.coverage * covered(&question, &texts[i])
                    + c.heading * covered(&question, &headings[i])
                    + c.prior * prior
                    + boost
            })
            .collect();
        // Near-duplicates, best first: ties by fused rank, so the walk is deterministic.
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then(candidates[a].fused_rank.cmp(&candidates[b].fused_rank))
        });
        let mut kept: Vec<usize> = Vec::new();
        for i in order {
            if kept
                .iter()
                .any(|&j| jaccard(&texts[i], &texts[j]) >= c.duplicate_similarity)
            {
                scores[i] -= c.duplicate_penalty;
            } else {
                kept.push(i);
            }
        }
        Ok(scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::{Chunk, ChunkingPolicy, DocId, Document, Metadata, Source, Title, chunker};

    fn chunk(id: &str, title: &str, text: &str, metadata: &[(&str, &str)]) -> Chunk {
        let meta: serde_json::Map<String, serde_json::Value> = metadata
            .iter()
            .map(|(k, v)| ((*k).to_string(), serde_json::Value::String((*v).into())))
            .collect();
        let meta: Metadata = serde_json::from_value(serde_json::Value::Object(meta)).unwrap();
        let doc = Document::builder(
            DocId::new(id).unwrap(),
            Source::new(format!("{id}.md")).unwrap(),
            text,
        )
        .title(Title::new(title).unwrap())
        .metadata(meta)
        .build();
        chunker::chunk_document(&doc, &ChunkingPolicy::default())
            .into_iter()
            .next()
            .unwrap()
    }

    fn ranks(reranker: &RuleReranker, query: &str, chunks: &[Chunk]) -> Vec<usize> {
        let cands: Vec<RerankCandidate<'_>> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| RerankCandidate {
                chunk: c,
                fused_rank: i + 1,
                fused_score: 1.0 / (i + 1) as f64,
            })
            .collect();
        let scores = reranker.rerank(query, &cands).unwrap();
        assert_eq!(scores.len(), chunks.len());
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        order
    }

    #[test]
    fn the_chunk_that_covers_the_rare_question_terms_rises() {
        let chunks = vec![
            chunk("a", "天气", "北京的天气在春天多风，秋天晴朗。", &[]),
            chunk("b", "历史", "北京的故宫建于明朝永乐年间，是皇家宫殿。", &[]),
            chunk("c", "交通", "北京的地铁线路很多。", &[]),
        ];
        let order = ranks(&RuleReranker::default(), "故宫是哪个朝代建的？", &chunks);
        assert_eq!(order[0], 1);
    }

    #[test]
    fn a_heading_match_and_a_metadata_boost_count() {
        let chunks = vec![
            chunk("a", "Release notes", "Version 2 adds hybrid search.", &[]),
            chunk("b", "Backups", "Version 2 adds hybrid search.", &[]),
        ];
        // Same text (and so near-duplicates): the title decides, the copy is pushed down.
        let order = ranks(&RuleReranker::default(), "how do backups work", &chunks);
        assert_eq!(order, vec![1, 0]);
        let boosted = RuleReranker::new(RuleConfig {
            boosts: vec![MetadataBoost {
                key: "kind".into(),
                value: "handbook".into(),
                boost: 2.0,
            }],
            ..RuleConfig::default()
        })
        .unwrap();
        let chunks = vec![
            chunk("a", "Chat", "Backups run nightly at two.", &[]),
            chunk(
                "b",
                "Handbook",
                "Backups are taken every night.",
                &[("kind", "handbook")],
            ),
        ];
        assert_eq!(ranks(&boosted, "when do backups run", &chunks)[0], 1);
    }

    #[test]
    fn near_duplicates_are_pushed_below_distinct_evidence() {
        let text = "混合检索把向量检索和关键词检索的结果融合在一起，再按分数排序。";
        let chunks = vec![
            chunk("a", "检索", text, &[]),
            chunk("b", "检索", text, &[]),
            chunk("c", "检索", "融合之后还会做重排序，去掉过期的块。", &[]),
        ];
        let order = ranks(&RuleReranker::default(), "混合检索怎么融合结果？", &chunks);
        assert_eq!(order[0], 0);
        assert_eq!(order[2], 1, "the copy goes last: {order:?}");
    }

    #[test]
    fn empty_input_and_bad_weights() {
        assert!(RuleReranker::default().rerank("q", &[]).unwrap().is_empty());
        assert!(
            RuleReranker::new(RuleConfig {
                coverage: f64::NAN,
                ..RuleConfig::default()
            })
            .is_err()
        );
        assert!(
            RuleReranker::new(RuleConfig {
                duplicate_similarity: 2.0,
                ..RuleConfig::default()
            })
            .is_err()
        );
    }
}
