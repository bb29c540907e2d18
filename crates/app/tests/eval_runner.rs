//! The evaluation runner on a tiny hand-made BEIR set with known answers.

use std::path::Path;

use zhiku_adapters_tantivy::LexicalConfig;
use zhiku_app::wiring::corpus::{DenseChoice, build_corpus_index, corpus_scope};
use zhiku_domain::usecases::RetrievalMode;
use zhiku_domain::{ChunkingPolicy, Filter};
use zhiku_eval::beir::{load_beir, load_golden};
use zhiku_eval::runner::evaluate;

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Three passages; q1 and q2 have one clear answer each, q3's answer ranks second behind a
/// passage that repeats the query words, q4 is empty text.
fn tiny_beir(dir: &Path) {
    write(
        dir,
        "corpus.jsonl",
        concat!(
            r#"{"_id": "d1", "title": "长城", "text": "长城是古代中国修建的军事防御工程，总长度超过两万公里。"}"#,
            "\n",
            r#"{"_id": "d2", "title": "Tantivy", "text": "Tantivy is a full-text search engine library written in Rust."}"#,
            "\n",
            r#"{"_id": "d3", "title": "熊猫", "text": "大熊猫主要吃竹子。竹子竹子竹子，熊猫每天花很多时间吃竹子。"}"#,
            "\n",
        ),
    );
    write(
        dir,
        "queries.jsonl",
        concat!(
            r#"{"_id": "q1", "text": "长城有多长？"}"#,
            "\n",
            r#"{"_id": "q2", "text": "search engine library in Rust"}"#,
            "\n",
            r#"{"_id": "q3", "text": "竹子"}"#,
            "\n",
            r#"{"_id": "q4", "text": "   "}"#,
            "\n",
            r#"{"_id": "unjudged", "text": "没有相关性标注的问题"}"#,
            "\n",
        ),
    );
    write(
        dir,
        "qrels/test.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td1\t1\nq4\td2\t1\n",
    );
    write(
        dir,
        "spans.jsonl",
        concat!(
            r#"{"query_id": "q1", "doc_id": "d1", "start": 22, "end": 28, "answer": "超过两万公里"}"#,
            "\n",
            r#"{"query_id": "q2", "doc_id": "d2", "start": 0, "end": 7, "answer": "Tantivy"}"#,
            "\n",
        ),
    );
}

#[test]
fn known_answers_give_known_metrics() {
    let dir = tempfile::tempdir().unwrap();
    tiny_beir(dir.path());
    let set = load_beir(dir.path()).unwrap();
    assert_eq!(set.corpus.len(), 3);
    assert_eq!(
        set.queries.len(),
        4,
        "queries without judgements are left out"
    );
    let index = build_corpus_index(
        &set.corpus,
        ChunkingPolicy::default(),
        zhiku_app::wiring::corpus::CorpusLexical::Tantivy(LexicalConfig::default()),
        DenseChoice::None,
    )
    .unwrap();
    let filter = Filter::for_scope(corpus_scope());
    let mut results = Vec::new();
    let summary = evaluate(
        &index.retriever(),
        &zhiku_adapters_offline::RulesPlanner,
        &filter,
        RetrievalMode::Lexical,
        &set,
        &mut |r| results.push(r.clone()),
    )
    .unwrap();
    let by_id = |id: &str| results.iter().find(|r| r.id == id).unwrap().clone();
    assert_eq!(by_id("q1").first_hit_rank, Some(1));
    assert_eq!(by_id("q2").first_hit_rank, Some(1));
    assert_eq!(by_id("q3").first_hit_rank, None, "d1 never mentions bamboo");
    assert_eq!(by_id("q3").top10, vec!["d3".to_string()]);
    let empty = by_id("q4");
    assert!(
        empty.warning.is_some() && empty.first_hit_rank.is_none(),
        "empty query is a miss with a warning"
    );
    let json = summary.to_json();
    assert_eq!(json["queries"], 4);
    assert_eq!(json["hit@1"], 0.5);
    assert_eq!(json["hit@10"], 0.5);
    assert_eq!(json["mrr@10"], 0.5);
    assert_eq!(json["ndcg@10"], 0.5);
    assert_eq!(
        json["span_hit@5"], 1.0,
        "both span queries retrieve a chunk overlapping the answer"
    );
    for key in [
        "queries",
        "hit@1",
        "hit@5",
        "hit@10",
        "mrr@10",
        "ndcg@10",
        "span_hit@5",
    ] {
        assert!(json.get(key).is_some(), "summary key {key}");
    }
}

#[test]
fn document_ids_play_no_part_in_ranking() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "corpus.jsonl",
        concat!(
            r#"{"_id": "answer-here", "title": "", "text": "unrelated words only"}"#,
            "\n",
            r#"{"_id": "other", "title": "", "text": "the answer is here"}"#,
            "\n",
        ),
    );
    write(
        dir.path(),
        "queries.jsonl",
        "{\"_id\": \"q\", \"text\": \"answer here\"}\n",
    );
    write(
        dir.path(),
        "qrels/test.tsv",
        "query-id\tcorpus-id\tscore\nq\tother\t1\n",
    );
    let set = load_beir(dir.path()).unwrap();
    let index = build_corpus_index(
        &set.corpus,
        ChunkingPolicy::default(),
        zhiku_app::wiring::corpus::CorpusLexical::Tantivy(LexicalConfig::default()),
        DenseChoice::None,
    )
    .unwrap();
    let filter = Filter::for_scope(corpus_scope());
    let mut top = Vec::new();
    evaluate(
        &index.retriever(),
        &zhiku_adapters_offline::RulesPlanner,
        &filter,
        RetrievalMode::Lexical,
        &set,
        &mut |r| top = r.top10.clone(),
    )
    .unwrap();
    assert_eq!(top, vec!["other".to_string()]);
}

#[test]
fn golden_sets_name_documents_and_spans_not_chunks() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "retrieval.jsonl",
        concat!(
            r#"{"id": "g1", "query": "长城有多长", "expected": {"doc_ids": ["d1"]}, "citationMustBeValid": true}"#,
            "\n",
            r#"{"id": "g2", "query": "Tantivy", "expected": {"spans": [{"doc_id": "d2", "start": 0, "end": 7}]}}"#,
            "\n",
        ),
    );
    let set = load_golden(&dir.path().join("retrieval.jsonl")).unwrap();
    assert_eq!(set.queries.len(), 2);
    assert!(set.queries[0].citation_must_be_valid);
    assert!(
        set.queries[1].relevant.contains("d2"),
        "a span's document is relevant"
    );
    assert_eq!(set.queries[1].spans.len(), 1);
}
