//! A question in one Chinese script finds a passage written in the other (issue 17): the
//! analyzer folds Traditional into Simplified at index and at query time alike.

use zhiku_adapters_tantivy::{ANALYZER_IDENTITY, LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::{IndexError, LexicalIndex};
use zhiku_domain::{Filter, Scope};
use zhiku_tests::contract::fixtures::Spec;

fn scope() -> Filter {
    Filter::for_scope(Scope::new("s").unwrap())
}

fn index() -> TantivyLexicalIndex {
    let index = TantivyLexicalIndex::in_ram(LexicalConfig::default()).unwrap();
    let chunks = [
        Spec::new(
            "hans",
            "s",
            "《战国无双3》是由光荣和ω-force开发的战国无双系列的正统第三续作。",
        )
        .title("战国无双3"),
        Spec::new(
            "hant",
            "s",
            "臺灣高速鐵路連接臺北與高雄，全長約三百五十公里，於二〇〇七年通車營運。",
        )
        .title("臺灣高速鐵路"),
        Spec::new(
            "other",
            "s",
            "混合检索把两个路由的结果融合在一起，再按引用检查答案。",
        ),
    ]
    .map(|s| s.chunk());
    index.upsert(&chunks).unwrap();
    index.commit().unwrap();
    index
}

fn top(index: &TantivyLexicalIndex, query: &str) -> String {
    index.search(query, 1, &scope()).unwrap()[0]
        .chunk
        .doc_id()
        .to_string()
}

#[test]
fn a_traditional_question_finds_a_simplified_passage() {
    let index = index();
    assert_eq!(
        top(&index, "《戰國無雙3》是由哪兩個公司合作開發的？"),
        "hans"
    );
    assert_eq!(top(&index, "光榮開發"), "hans");
}

#[test]
fn a_simplified_question_finds_a_traditional_passage() {
    let index = index();
    assert_eq!(top(&index, "台湾高速铁路连接哪两座城市？"), "hant");
    assert_eq!(top(&index, "高铁通车营运"), "hant");
}

#[test]
fn both_forms_of_a_question_score_alike() {
    let index = index();
    let scores = |q: &str| -> Vec<(String, f32)> {
        index
            .search(q, 3, &scope())
            .unwrap()
            .into_iter()
            .map(|h| (h.chunk.doc_id().to_string(), h.score))
            .collect()
    };
    assert_eq!(
        scores("戰國無雙系列的正統續作"),
        scores("战国无双系列的正统续作")
    );
}

#[test]
fn an_index_of_the_previous_analyzer_asks_for_a_rebuild_naming_the_analyzer() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index =
            TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
        index.commit().unwrap();
    }
    // Stamp the index as the jieba analyzer without script folding stamped it.
    {
        let raw = tantivy::Index::open_in_dir(dir.path()).unwrap();
        let mut writer: tantivy::IndexWriter = raw.writer(15_000_000).unwrap();
        let mut prepared = writer.prepare_commit().unwrap();
        prepared.set_payload(
            "zhiku-jieba/1 (jieba-rs 0.11 default dictionary, search mode, no HMM; lower-case; stop-words zh-v1)",
        );
        prepared.commit().unwrap();
    }
    let err =
        TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap_err();
    let IndexError::ConfigMismatch {
        what,
        expected,
        found,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*what, "lexical analyzer");
    assert!(expected.starts_with("zhiku-jieba/1"), "{expected}");
    assert_eq!(found, ANALYZER_IDENTITY);
    let message = err.to_string();
    assert!(
        message.contains("lexical analyzer") && message.contains("rebuild"),
        "{message}"
    );
}
