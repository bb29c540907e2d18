//! Reading evaluation data: BEIR-layout directories and zhiku's golden JSONL format.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use zhiku_domain::rules::grading::GoldSpan;
use zhiku_domain::{DocId, Document, Scope, Source, Title};

/// One corpus passage.
#[derive(Debug, Clone, Deserialize)]
pub struct Passage {
    /// Document id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Title (may be empty).
    #[serde(default)]
    pub title: String,
    /// Text.
    pub text: String,
}

/// One evaluation query with its relevance judgements.
#[derive(Debug, Clone, Default)]
pub struct EvalQuery {
    /// Query id.
    pub id: String,
    /// Query text.
    pub text: String,
    /// Relevant document ids.
    pub relevant: HashSet<String>,
    /// Gold answer spans, if known.
    pub spans: Vec<GoldSpan>,
    /// When true, the answer's citations must all come from this round's retrieval.
    pub citation_must_be_valid: bool,
    /// The knowledge base has no material on this question (not graded for retrieval).
    pub no_answer: bool,
    /// Earlier questions of the conversation, asked first in order (each answered, the
    /// answers sent back as history); the case is graded on its last question.
    pub history: Vec<String>,
    /// Documents the answer must all cite (a several-part question: one per part).
    pub must_cite: Vec<String>,
    /// What a right answer states (figures, names), each found in the answer's text.
    pub answer_must_contain: Vec<String>,
    /// The part of the set the case belongs to (`dev`: rules may be written against it;
    /// `held_out`: they may not), if the set says.
    pub split: Option<String>,
    /// What kind of case it is (`entity`, `condition`, `comparison`, …), if the set says.
    pub kind: Option<String>,
}

/// A corpus and its queries.
#[derive(Debug, Clone, Default)]
pub struct EvalSet {
    /// Passages (empty for golden sets over an existing knowledge base).
    pub corpus: Vec<Passage>,
    /// Queries with judgements.
    pub queries: Vec<EvalQuery>,
}

fn jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: cannot read", path.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .with_context(|| format!("{}:{}: not a valid record", path.display(), n + 1))?,
        );
    }
    Ok(out)
}

/// Loads a BEIR directory: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv` and, when present,
/// `spans.jsonl` (`query_id`, `doc_id`, `start`, `end` in characters). Queries without a
/// relevance judgement are left out.
pub fn load_beir(dir: &Path) -> Result<EvalSet> {
    let corpus: Vec<Passage> = jsonl(&dir.join("corpus.jsonl"))?;
    Ok(EvalSet {
        corpus,
        queries: load_beir_queries(dir)?,
    })
}

/// Loads the judged queries of a BEIR directory (`queries.jsonl`, `qrels/test.tsv`, optional
/// `spans.jsonl`) without its corpus: a second question set over the same passages, such as
/// `evals/cmrc-paraphrased/`.
pub fn load_beir_queries(dir: &Path) -> Result<Vec<EvalQuery>> {
    #[derive(Deserialize)]
    struct Query {
        #[serde(rename = "_id")]
        id: String,
        text: String,
    }
    #[derive(Deserialize)]
    struct Span {
        query_id: String,
        doc_id: String,
        start: usize,
        end: usize,
    }
    let queries: Vec<Query> = jsonl(&dir.join("queries.jsonl"))?;
    let qrels_path = dir.join("qrels/test.tsv");
    let qrels_text = std::fs::read_to_string(&qrels_path)
        .with_context(|| format!("cannot read {}", qrels_path.display()))?;
    let mut qrels: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for (n, line) in qrels_text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if n == 0 && cols.first() == Some(&"query-id") || line.trim().is_empty() {
            continue;
        }
        if cols.len() < 3 {
            bail!(
                "{}:{}: expected query-id, corpus-id, score",
                qrels_path.display(),
                n + 1
            );
        }
        let score: f64 = cols[2]
            .trim()
            .parse()
            .with_context(|| format!("{}:{}: bad score", qrels_path.display(), n + 1))?;
        if score > 0.0 {
            qrels
                .entry(cols[0].to_string())
                .or_default()
                .insert(cols[1].to_string());
        }
    }
    let mut spans: BTreeMap<String, Vec<GoldSpan>> = BTreeMap::new();
    let spans_path = dir.join("spans.jsonl");
    if spans_path.exists() {
        for s in jsonl::<Span>(&spans_path)? {
            spans.entry(s.query_id).or_default().push(GoldSpan {
                doc_id: s.doc_id,
                start: s.start,
                end: s.end,
            });
        }
    }
    let queries = queries
        .into_iter()
        .filter_map(|q| {
            let relevant = qrels.get(&q.id)?.clone();
            Some(EvalQuery {
                spans: spans.remove(&q.id).unwrap_or_default(),
                id: q.id,
                text: q.text,
                relevant,
                citation_must_be_valid: false,
                no_answer: false,
                history: Vec::new(),
                must_cite: Vec::new(),
                answer_must_contain: Vec::new(),
                split: None,
                kind: None,
            })
        })
        .collect();
    Ok(queries)
}

/// The documents `set` expects that are not in `known` (the knowledge base's document IDs):
/// each as (case ID, document ID), in case order. A golden set naming a document the
/// knowledge base does not hold grades nothing but its own typo; it is refused, not scored.
pub fn unknown_documents(set: &EvalSet, known: &HashSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for q in &set.queries {
        let mut expected: Vec<&String> = q
            .relevant
            .iter()
            .chain(&q.must_cite)
            .chain(q.spans.iter().map(|s| &s.doc_id))
            .collect();
        expected.sort();
        expected.dedup();
        for doc in expected {
            if !known.contains(doc) {
                out.push((q.id.clone(), doc.clone()));
            }
        }
    }
    out
}

/// Loads a golden set in zhiku's format, one JSON object per line:
/// `{"id", "query", "expected": {"doc_ids": [...], "spans": [{"doc_id", "start", "end"}]},
/// "noAnswer": bool, "citationMustBeValid": bool}`, and for conversations `history`,
/// `mustCite`, `answerMustContain` (what a right answer states), `split` and `kind`.
pub fn load_golden(path: &Path) -> Result<EvalSet> {
    #[derive(Deserialize)]
    struct Expected {
        #[serde(default)]
        doc_ids: Vec<String>,
        #[serde(default)]
        spans: Vec<SpanRecord>,
    }
    #[derive(Deserialize)]
    struct SpanRecord {
        doc_id: String,
        start: usize,
        end: usize,
    }
    #[derive(Deserialize)]
    struct Case {
        id: String,
        query: String,
        #[serde(default)]
        expected: Option<Expected>,
        #[serde(default, rename = "citationMustBeValid")]
        citation_must_be_valid: bool,
        #[serde(default, rename = "noAnswer")]
        no_answer: bool,
        #[serde(default)]
        history: Vec<String>,
        #[serde(default, rename = "mustCite")]
        must_cite: Vec<String>,
        #[serde(default, rename = "answerMustContain")]
        answer_must_contain: Vec<String>,
        #[serde(default)]
        split: Option<String>,
        #[serde(default)]
        kind: Option<String>,
    }
    let cases: Vec<Case> = jsonl(path)?;
    let queries = cases
        .into_iter()
        .map(|c| {
            let expected = c.expected.unwrap_or(Expected {
                doc_ids: vec![],
                spans: vec![],
            });
            let mut relevant: HashSet<String> = expected.doc_ids.into_iter().collect();
            relevant.extend(expected.spans.iter().map(|s| s.doc_id.clone()));
            EvalQuery {
                id: c.id,
                text: c.query,
                relevant,
                spans: expected
                    .spans
                    .into_iter()
                    .map(|s| GoldSpan {
                        doc_id: s.doc_id,
                        start: s.start,
                        end: s.end,
                    })
                    .collect(),
                citation_must_be_valid: c.citation_must_be_valid,
                no_answer: c.no_answer,
                history: c.history,
                must_cite: c.must_cite,
                answer_must_contain: c.answer_must_contain,
                split: c.split,
                kind: c.kind,
            }
        })
        .collect();
    Ok(EvalSet {
        corpus: Vec::new(),
        queries,
    })
}

/// Turns a passage into a document of the given scope: id from `_id`, source
/// `corpus.jsonl#<id>`.
pub fn passage_document(p: &Passage, scope: &Scope) -> Result<Document> {
    Ok(Document::builder(
        DocId::new(&p.id)?,
        Source::new(format!("corpus.jsonl#{}", p.id))?,
        p.text.clone(),
    )
    .title(Title::new(p.title.replace(['\n', '\r', '\t'], " "))?)
    .scope(scope.clone())
    .build())
}
