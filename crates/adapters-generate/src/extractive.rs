//! The extractive generator: answers with the evidence's own sentences.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_domain::contracts::Locale;
use zhiku_domain::ports::{GenerateError, GenerationRequest, Generator};
use zhiku_domain::rules::text::{sentences, terms};

/// Tuning of the extractive strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExtractiveConfig {
    /// Share of the question's term weight the best sentence must cover; below it the answer
    /// is the no-material sentence.
    pub min_coverage: f64,
    /// Most sentences in an answer.
    pub max_sentences: usize,
    /// Most characters in an answer, markers excluded (the best sentence is always kept).
    pub max_chars: usize,
    /// A further sentence is kept only when it covers at least this share of the best one.
    pub keep_ratio: f64,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        Self {
            min_coverage: 0.4,
            max_sentences: 3,
            max_chars: 360,
            keep_ratio: 0.6,
        }
    }
}

/// Answers with the sentences of the evidence that cover the question best, each cited with its
/// source's marker. Deterministic: the same request always gives the same answer.
///
/// Scoring: the question's terms (CJK bigrams, Latin words, question words removed) are
/// weighted by how rare they are among the candidate sentences; a sentence's coverage is the
/// weight of the question terms it contains over the weight of all question terms, nudged by
/// the source's rank. Sentences are picked greedily by the weight of question terms they add,
/// then put back in source order.
#[derive(Debug, Clone, Default)]
pub struct ExtractiveGenerator {
    config: ExtractiveConfig,
}

struct Candidate {
    marker: u32,
    position: usize,
    text: String,
    terms: BTreeSet<String>,
}

impl ExtractiveGenerator {
    /// A generator with `config`.
    pub fn new(config: ExtractiveConfig) -> Self {
        Self { config }
    }

    /// The answer for `request` (the no-material sentence when nothing covers the question).
    pub fn compose(&self, request: &GenerationRequest) -> String {
        let question = terms(&request.question);
        if question.is_empty() {
            return request.no_material.clone();
        }
        let mut candidates = Vec::new();
        for block in &request.sources {
            for (position, text) in sentences(&block.text).into_iter().enumerate() {
                let sentence_terms: BTreeSet<String> = terms(&text);
                if text.chars().count() < 4 || sentence_terms.is_disjoint(&question) {
                    continue;
                }
                candidates.push(Candidate {
                    marker: block.marker,
                    position,
                    text,
                    terms: sentence_terms,
                });
            }
        }
        if candidates.is_empty() {
            return request.no_material.clone();
        }
        // Rarer question terms weigh more (smoothed inverse sentence frequency).
        let n = candidates.len() as f64;
        let weight: BTreeMap<&str, f64> = question
            .iter()
            .map(|t| {
                let df = candidates.iter().filter(|c| c.terms.contains(t)).count() as f64;
                (t.as_str(), (1.0 + (n + 1.0) / (df + 1.0)).ln())
            })
            .collect();
        let total: f64 = weight.values().sum();
        let covered = |c: &Candidate, done: &BTreeSet<&str>| -> f64 {
            weight
                .iter()
                .filter(|(t, _)| c.terms.contains(**t) && !done.contains(**t))
                .map(|(_, w)| w)
                .sum::<f64>()
                / total
        };
        let prior = |c: &Candidate| 1.0 - 0.03 * f64::from(c.marker.saturating_sub(1).min(10));
        let none = BTreeSet::new();
        let score = |c: &Candidate| covered(c, &none) * prior(c);
        let best = candidates
            .iter()
            .enumerate()
            .max_by(|(ia, a), (ib, b)| score(a).total_cmp(&score(b)).then(ib.cmp(ia)))
            .map(|(i, _)| i)
            .unwrap_or_default();
        let best_coverage = covered(&candidates[best], &none);
        if best_coverage < self.config.min_coverage {
            return request.no_material.clone();
        }
        let mut picked = vec![best];
        let mut done: BTreeSet<&str> = weight
            .keys()
            .copied()
            .filter(|t| candidates[best].terms.contains(*t))
            .collect();
        let mut chars = candidates[best].text.chars().count();
        while picked.len() < self.config.max_sentences {
            let next = candidates
                .iter()
                .enumerate()
                .filter(|(i, c)| {
                    !picked.contains(i)
                        && !picked.iter().any(|p| candidates[*p].text == c.text)
                        && covered(c, &none) >= self.config.keep_ratio * best_coverage
                        && chars + c.text.chars().count() <= self.config.max_chars
                })
                .map(|(i, c)| (i, covered(c, &done) * prior(c)))
                .filter(|(_, gain)| *gain > 0.0)
                .max_by(|(ia, a), (ib, b)| a.total_cmp(b).then(ib.cmp(ia)));
            let Some((i, _)) = next else { break };
            done.extend(
                weight
                    .keys()
                    .copied()
                    .filter(|t| candidates[i].terms.contains(*t)),
            );
            chars += candidates[i].text.chars().count();
            picked.push(i);
        }
        picked.sort_by_key(|&i| (candidates[i].marker, candidates[i].position));
        let chinese = Locale::detect(&request.question).language() == "zh";
        let mut answer = String::new();
        for i in picked {
            let c = &candidates[i];
            if !answer.is_empty() && !chinese {
                answer.push(' ');
            }
            let text = c.text.trim_end_matches(['。', '.', '；', ';']);
            answer.push_str(text);
            answer.push_str(&format!("[{}]", c.marker));
            answer.push(if chinese { '。' } else { '.' });
        }
        answer
    }
}

impl Generator for ExtractiveGenerator {
    fn identity(&self) -> String {
        format!(
            "extractive-v1(min_coverage={},max_sentences={})",
            self.config.min_coverage, self.config.max_sentences
        )
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        Ok(self.compose(request))
    }
}

#[cfg(test)]
mod tests {
    use zhiku_domain::ports::SourceBlock;
    use zhiku_domain::rules::citation::resolve;
    use zhiku_domain::rules::context::{NO_MATERIAL_EN, NO_MATERIAL_ZH, build_request};
    use zhiku_domain::{ChunkId, DocId, sha256_hex};

    use super::*;

    fn block(marker: u32, text: &str) -> SourceBlock {
        SourceBlock {
            marker,
            chunk_id: ChunkId::derive(
                &DocId::new("d").unwrap(),
                marker as usize,
                &sha256_hex(text),
            ),
            title: "t".into(),
            source: "d.md".into(),
            heading_path: vec![],
            pages: None,
            text: text.into(),
        }
    }

    #[test]
    fn answers_with_cited_sentences_from_the_evidence() {
        let sources = vec![
            block(
                1,
                "知库把文档切成块。每个块的 ID 由文档 ID、起始位置和内容哈希组成。",
            ),
            block(2, "混合检索用倒数排名融合合并两路结果。"),
        ];
        let ids: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
        let req = build_request("块的 ID 是怎么组成的？", sources, None, 1);
        let answer = ExtractiveGenerator::default().compose(&req);
        assert!(answer.contains("内容哈希组成[1]"), "{answer}");
        assert!(!answer.contains("倒数排名"), "{answer}");
        let r = resolve(&answer, &ids);
        assert!(r.check().is_ok());
        // Deterministic.
        assert_eq!(answer, ExtractiveGenerator::default().compose(&req));
    }

    #[test]
    fn english_answers_cite_each_sentence() {
        let sources = vec![
            block(1, "The lexical route uses BM25 over titles and content."),
            block(
                2,
                "Scope filters apply before ranking. BM25 weights rare terms more.",
            ),
        ];
        let req = build_request(
            "How does the lexical route rank with BM25?",
            sources,
            None,
            1,
        );
        let answer = ExtractiveGenerator::default().compose(&req);
        assert!(
            answer.starts_with("The lexical route uses BM25 over titles and content[1]."),
            "{answer}"
        );
    }

    #[test]
    fn says_no_material_when_nothing_covers_the_question() {
        let sources = vec![block(1, "知库把文档切成块。")];
        let req = build_request("明天北京天气怎么样？", sources.clone(), None, 1);
        assert_eq!(ExtractiveGenerator::default().compose(&req), NO_MATERIAL_ZH);
        let req = build_request("Does it support audio search?", sources, None, 1);
        assert_eq!(ExtractiveGenerator::default().compose(&req), NO_MATERIAL_EN);
        let req = build_request("什么？", vec![], None, 1);
        assert_eq!(ExtractiveGenerator::default().compose(&req), NO_MATERIAL_ZH);
    }
}
