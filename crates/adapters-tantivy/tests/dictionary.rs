//! A team's user dictionary (issue 41): its words are kept whole at index and at query time,
//! and a changed dictionary analyses again only the chunks holding a changed word.

mod common;
use common::ranked;
use zhiku_adapters_tantivy::{
    Analyzer, LexicalConfig, Reanalysed, TantivyLexicalIndex, UserDictionary,
};
use zhiku_domain::ports::LexicalIndex;
use zhiku_tests::contract::fixtures::Spec;

fn config(words: &str) -> LexicalConfig {
    LexicalConfig {
        analyzer: Analyzer::with_dictionary(UserDictionary::parse(words).unwrap()),
        ..LexicalConfig::default()
    }
}

fn open(dir: &std::path::Path, words: &str) -> TantivyLexicalIndex {
    TantivyLexicalIndex::open_or_create(dir, config(words)).unwrap()
}

#[test]
fn user_words_are_kept_whole_and_a_change_reanalyses_only_the_chunks_holding_one() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = open(dir.path(), "");
        let chunks = [
            Spec::new(
                "project",
                "s",
                "玄武湖计划的预算由财务部审批，每季度复核一次。",
            ),
            Spec::new("lake", "s", "玄武湖在南京，湖边有步道，周末人很多。"),
            Spec::new("plan", "s", "每个计划都要写周报，周五之前提交。"),
        ]
        .map(|s| s.chunk());
        index.upsert(&chunks).unwrap();
        index.commit().unwrap();
        assert!(index.changed_words().is_empty());
    }
    // The code name becomes a word of its own: analysed again are the chunks holding it, no
    // other; the query keeps it whole too.
    {
        let index = open(dir.path(), "玄武湖计划\n# a comment\n预算 nz\n");
        assert_eq!(
            index.changed_words().into_iter().collect::<Vec<_>>(),
            ["玄武湖计划", "预算"]
        );
        assert_eq!(index.reanalyse().unwrap(), Reanalysed { chunks: 1, of: 3 });
        assert!(index.changed_words().is_empty());
        assert_eq!(ranked(&index, "玄武湖计划怎么审批？")[0], "project");
        assert!(
            index.analyzer_identity().contains("user dictionary"),
            "{}",
            index.analyzer_identity()
        );
        assert_eq!(index.analyzer(), zhiku_adapters_tantivy::ANALYZER_IDENTITY);
    }
    // Recorded with the index: the same dictionary again changes nothing.
    assert!(
        open(dir.path(), "预算 nz\n玄武湖计划")
            .changed_words()
            .is_empty()
    );
    // A commit before the affected chunks are analysed again keeps the old dictionary on
    // record, so the next open still knows which words changed.
    {
        let index = open(dir.path(), "");
        assert_eq!(index.changed_words().len(), 2);
        index
            .upsert(&[Spec::new("new", "s", "新的段落。").chunk()])
            .unwrap();
        index.commit().unwrap();
    }
    let index = open(dir.path(), "");
    assert_eq!(index.changed_words().len(), 2);
    assert_eq!(index.reanalyse().unwrap(), Reanalysed { chunks: 1, of: 4 });
    drop(index);
    assert!(open(dir.path(), "").changed_words().is_empty());
}

#[test]
fn a_dictionary_is_bounded_and_reads_back() {
    let d = UserDictionary::parse("玄武湖计划 20 nz\n臺北捷運\n# comment\n\n").unwrap();
    // Words are kept in their Simplified form, as text is segmented.
    assert_eq!(d.words().collect::<Vec<_>>(), ["台北捷运", "玄武湖计划"]);
    assert_eq!(UserDictionary::parse(&d.to_text()).unwrap(), d);
    for bad in [
        "玄武湖计划 many words here",
        "，，，",
        &"长".repeat(UserDictionary::MAX_WORD_CHARS + 1),
        "词 12 nz extra",
    ] {
        let err = UserDictionary::parse(bad).unwrap_err();
        assert!(err.starts_with("line 1"), "{bad}: {err}");
    }
}
