//! The Han-pairs field in a query: the pairs (single characters and two adjacent ones) add to
//! the scores of the candidates the pruned walk over the words found.

mod common;
use common::ranked;
use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::LexicalIndex;
use zhiku_tests::contract::fixtures::Spec;

#[test]
fn a_shared_single_character_orders_chunks_that_share_the_same_words() {
    let index = TantivyLexicalIndex::in_ram(LexicalConfig::default()).unwrap();
    // Equal on the query's word "分词" and its pairs; only "北京" holds the query's "京",
    // inside a word jieba keeps whole. By chunk ID "a-…" would come first.
    let chunks = [
        Spec::new("a-shanghai", "s", "分词 上海"),
        Spec::new("b-beijing", "s", "分词 北京"),
    ]
    .map(|s| s.chunk());
    index.upsert(&chunks).unwrap();
    index.commit().unwrap();
    assert_eq!(ranked(&index, "分词 京"), ["b-beijing", "a-shanghai"]);
    assert_eq!(ranked(&index, "分词 海"), ["a-shanghai", "b-beijing"]);
}

#[test]
fn a_chunk_sharing_no_word_with_the_query_is_no_candidate() {
    let index = TantivyLexicalIndex::in_ram(LexicalConfig::default()).unwrap();
    let chunks = [
        Spec::new("city", "s", "北京的图书馆"),
        Spec::new("other", "s", "京城旧事"),
    ]
    .map(|s| s.chunk());
    index.upsert(&chunks).unwrap();
    index.commit().unwrap();
    // "京" alone, inside 北京: no word of "京剧" — not a hit.
    assert_eq!(ranked(&index, "京剧"), Vec::<String>::new());
    // One word is enough: 京城 finds the chunk that writes it.
    assert_eq!(ranked(&index, "京城的故事"), ["other"]);
}
