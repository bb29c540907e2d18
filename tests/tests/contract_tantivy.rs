//! The contract suite and adapter-specific tests for the tantivy lexical index.

use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::{IndexError, LexicalIndex};
use zhiku_domain::{Filter, Scope};
use zhiku_tests::contract::fixtures::Spec;
use zhiku_tests::contract::records::LexicalOverRecords;

/// The index in `dir` keeping only chunk IDs, its records in a fresh exact vector index, the two
/// written together as the indexer writes them.
fn over_memory_records(dir: &std::path::Path) -> LexicalOverRecords {
    let vectors = std::sync::Arc::new(zhiku_adapters_memory::MemoryVectorIndex::new(
        zhiku_tests::contract::fixtures::space(),
    ));
    LexicalOverRecords {
        lexical: Box::new(
            TantivyLexicalIndex::open_or_create(dir, LexicalConfig::default())
                .unwrap()
                .with_records_in(vectors.clone()),
        ),
        vectors,
    }
}

mod tantivy_ram {
    use super::*;
    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        Some(Box::new(
            TantivyLexicalIndex::in_ram(LexicalConfig::default()).unwrap(),
        ))
    });
}

mod tantivy_disk {
    use super::*;
    use std::sync::Mutex;

    /// Keeps each test's directory alive for the whole test process.
    static DIRS: Mutex<Vec<tempfile::TempDir>> = Mutex::new(Vec::new());

    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        let dir = tempfile::tempdir().unwrap();
        let index =
            TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
        DIRS.lock().unwrap().push(dir);
        Some(Box::new(index))
    });
}

/// On disk, keeping only chunk IDs: the records live in an exact vector index written with it.
mod tantivy_records_elsewhere {
    use super::*;
    use std::sync::Mutex;

    static DIRS: Mutex<Vec<tempfile::TempDir>> = Mutex::new(Vec::new());

    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        let dir = tempfile::tempdir().unwrap();
        let pair = over_memory_records(dir.path());
        DIRS.lock().unwrap().push(dir);
        Some(Box::new(pair))
    });
}

fn scope() -> Filter {
    Filter::for_scope(Scope::new("s").unwrap())
}

#[test]
fn committed_chunks_survive_a_reopen_and_uncommitted_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index =
            TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
        index
            .upsert(&[Spec::new("a", "s", "持久化 committed").chunk()])
            .unwrap();
        index.commit().unwrap();
        // Written but never committed: a crash here must leave the previous commit readable.
        index
            .upsert(&[Spec::new("b", "s", "持久化 uncommitted").chunk()])
            .unwrap();
    }
    let index = TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
    let hits = index.search("持久化", 10, &scope()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk.doc_id().as_str(), "a");
}

#[test]
fn a_reopened_index_reports_the_generation_its_last_commit_left() {
    let dir = tempfile::tempdir().unwrap();
    let committed = {
        let index =
            TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
        index
            .upsert(&[Spec::new("a", "s", "代数 generation").chunk()])
            .unwrap();
        index.commit().unwrap();
        let committed = index.generation().unwrap();
        // Written, never committed: the generation on disk stays the committed one.
        index
            .upsert(&[Spec::new("b", "s", "未提交 uncommitted").chunk()])
            .unwrap();
        committed
    };
    assert!(committed.is_some());
    let reopened =
        TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
    assert_eq!(reopened.generation().unwrap(), committed);
    let reader = TantivyLexicalIndex::open_read_only(dir.path(), LexicalConfig::default()).unwrap();
    assert_eq!(reader.generation().unwrap(), committed);
}

#[test]
fn an_index_built_with_another_analyzer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index =
            tantivy::Index::create_in_dir(dir.path(), tantivy::schema::Schema::builder().build())
                .unwrap();
        let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
        let mut prepared = writer.prepare_commit().unwrap();
        prepared.set_payload("some-other-tokenizer/3");
        prepared.commit().unwrap();
    }
    let err =
        TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::ConfigMismatch {
                what: "lexical analyzer",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("rebuild"), "{err}");
}

#[test]
fn mixed_chinese_english_and_digit_queries_match() {
    let index = TantivyLexicalIndex::in_ram(LexicalConfig::default()).unwrap();
    let dims = Spec::new(
        "dims",
        "s",
        "bge-small-zh-v1.5 的维度是 512，使用 CLS 池化。",
    );
    let http = Spec::new("http", "s", "遇到 HTTP 404 错误时，先检查地址是否正确。");
    let other = Spec::new("other", "s", "混合检索把两个路由的结果融合在一起。");
    index
        .upsert(&[dims.chunk(), http.chunk(), other.chunk()])
        .unwrap();
    index.commit().unwrap();
    let top = |q: &str| {
        index.search(q, 1, &scope()).unwrap()[0]
            .chunk
            .doc_id()
            .to_string()
    };
    assert_eq!(top("bge-small-zh-v1.5 的维度"), "dims");
    assert_eq!(top("HTTP 404 错误"), "http");
    assert_eq!(top("404"), "http");
}

#[test]
fn title_matches_count_and_the_title_boost_applies() {
    let titled =
        Spec::new("titled", "s", "这篇文章讲的是别的事情，只有标题提到它。").title("倒排索引");
    let body = Spec::new(
        "body",
        "s",
        "倒排索引出现在正文里，这篇文章讲的是别的事情。",
    );
    let both = Spec::new(
        "both",
        "s",
        "倒排索引出现在正文里，这篇文章讲的是别的事情。",
    )
    .title("倒排索引");
    let order = |boost: f32| {
        let index = TantivyLexicalIndex::in_ram(LexicalConfig {
            title_boost: boost,
            ..LexicalConfig::default()
        })
        .unwrap();
        index
            .upsert(&[titled.chunk(), body.chunk(), both.chunk()])
            .unwrap();
        index.commit().unwrap();
        let hits = index.search("倒排索引", 3, &scope()).unwrap();
        hits.iter()
            .map(|h| h.chunk.doc_id().to_string())
            .collect::<Vec<_>>()
    };
    // A match in the title adds to a match in the content.
    assert_eq!(order(LexicalConfig::default().title_boost)[0], "both");
    // The boost really applies: heavy titles lift the title-only chunk over the body-only one.
    let heavy = order(4.0);
    assert!(
        heavy.iter().position(|d| d == "titled") < heavy.iter().position(|d| d == "body"),
        "{heavy:?}"
    );
    let none = order(0.0);
    assert!(
        none.iter().position(|d| d == "body") < none.iter().position(|d| d == "titled"),
        "{none:?}"
    );
}

fn file_names(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The second run of an indexer: replaces document `a` (a delete in the committed segment, so
/// the commit writes that segment's `<segment>.<opstamp>.del`) and commits.
fn second_run(index: &TantivyLexicalIndex) -> Result<(), IndexError> {
    index.delete_document(&zhiku_domain::DocId::new("a").unwrap())?;
    index.upsert(&[Spec::new("a", "s", "持久化 second run").chunk()])?;
    index.commit()
}

#[test]
fn a_writer_killed_before_its_commit_landed_does_not_wedge_the_next_one() {
    // The live index runs both runs; the crashed copy has every file of the second run's commit
    // but the old meta.json: the state a kill -9 between writing the files and replacing
    // meta.json leaves behind.
    let live = tempfile::tempdir().unwrap();
    let crashed = tempfile::tempdir().unwrap();
    {
        let index =
            TantivyLexicalIndex::open_or_create(live.path(), LexicalConfig::default()).unwrap();
        index
            .upsert(&[
                Spec::new("a", "s", "持久化 first run").chunk(),
                Spec::new("b", "s", "持久化 kept").chunk(),
            ])
            .unwrap();
        index.commit().unwrap();
    }
    for name in file_names(live.path()) {
        if !name.starts_with(".tantivy") {
            std::fs::copy(live.path().join(&name), crashed.path().join(&name)).unwrap();
        }
    }
    let before = file_names(crashed.path());
    {
        let index =
            TantivyLexicalIndex::open_or_create(live.path(), LexicalConfig::default()).unwrap();
        second_run(&index).unwrap();
    }
    let mut left = Vec::new();
    for name in file_names(live.path()) {
        let new_file =
            name != "meta.json" && !name.starts_with(".tantivy") && !before.contains(&name);
        if new_file || name == ".managed.json" {
            std::fs::copy(live.path().join(&name), crashed.path().join(&name)).unwrap();
            left.push(name);
        }
    }
    assert!(
        left.iter().any(|n| n.ends_with(".del")),
        "the second run wrote a delete bitset: {left:?}"
    );

    // A read-only look reports the stray files without touching them.
    let strays = TantivyLexicalIndex::stray_files(crashed.path()).unwrap();
    assert!(strays.iter().any(|n| n.ends_with(".del")), "{strays:?}");
    assert!(!strays.contains(&"meta.json".to_string()));
    assert_eq!(
        TantivyLexicalIndex::stray_files(crashed.path()).unwrap(),
        strays
    );

    // The same run again on the crashed copy: it replays to the same opstamp and writes the same
    // file names. Before the stray files were swept, its commit failed with FileAlreadyExists.
    let index =
        TantivyLexicalIndex::open_or_create(crashed.path(), LexicalConfig::default()).unwrap();
    assert_eq!(index.swept_files(), strays.as_slice());
    second_run(&index).unwrap();
    let hits = index.search("持久化", 10, &scope()).unwrap();
    let mut docs: Vec<String> = hits.iter().map(|h| h.chunk.content().to_string()).collect();
    docs.sort();
    assert_eq!(docs, ["持久化 kept", "持久化 second run"]);
    assert!(
        TantivyLexicalIndex::stray_files(crashed.path())
            .unwrap()
            .is_empty()
    );
    // Every file the committed state references is still there: a fresh open reads it all.
    drop(index);
    let reopened =
        TantivyLexicalIndex::open_read_only(crashed.path(), LexicalConfig::default()).unwrap();
    assert_eq!(reopened.count().unwrap(), 2);
}

#[test]
fn a_read_only_open_reads_the_last_commit_beside_a_writer_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
    writer
        .upsert(&[Spec::new("a", "s", "持久化 committed").chunk()])
        .unwrap();
    writer.commit().unwrap();
    writer
        .upsert(&[Spec::new("b", "s", "持久化 in progress").chunk()])
        .unwrap();
    // The writer holds tantivy's writer lock; a second writer is refused, a reader is not.
    assert!(TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).is_err());
    let reader = TantivyLexicalIndex::open_read_only(dir.path(), LexicalConfig::default()).unwrap();
    assert!(reader.is_read_only());
    let hits = reader.search("持久化", 10, &scope()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk.doc_id().as_str(), "a");
    let err = reader
        .upsert(&[Spec::new("c", "s", "x").chunk()])
        .unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert!(reader.commit().is_err());
    // Nothing was created by the read-only open of a folder without an index.
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("lexical");
    let none = TantivyLexicalIndex::open_read_only(&missing, LexicalConfig::default()).unwrap();
    assert_eq!(none.count().unwrap(), 0);
    assert!(!missing.exists());
}

/// Bytes of the segments' document stores (`*.store`) in `dir`: where stored records live.
fn stored_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "store"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn long_chunks(n: usize) -> Vec<zhiku_domain::Chunk> {
    (0..n)
        .map(|i| {
            let text = format!("第{i}段：{}", "检索增强生成把文档切成片段。".repeat(40));
            Spec::new(format!("doc{i}"), "s", text).chunk()
        })
        .collect()
}

#[test]
fn with_records_elsewhere_only_chunk_ids_are_stored() {
    let chunks = long_chunks(200);
    let own_dir = tempfile::tempdir().unwrap();
    let own =
        TantivyLexicalIndex::open_or_create(own_dir.path(), LexicalConfig::default()).unwrap();
    own.upsert(&chunks).unwrap();
    own.commit().unwrap();

    let ids_dir = tempfile::tempdir().unwrap();
    let pair = over_memory_records(ids_dir.path());
    pair.upsert(&chunks).unwrap();
    pair.commit().unwrap();

    let text: usize = chunks.iter().map(|c| c.content().len()).sum();
    let (own_bytes, ids_bytes) = (stored_bytes(own_dir.path()), stored_bytes(ids_dir.path()));
    assert!(
        own_bytes as usize > text,
        "own records: {own_bytes} B for {text} B of text"
    );
    assert!(
        (ids_bytes as usize) < text / 20,
        "IDs only: {ids_bytes} B stored for {text} B of text"
    );
    // Both answer the same chunks.
    let a = own.search("检索增强 第7段", 5, &scope()).unwrap();
    let b = pair.search("检索增强 第7段", 5, &scope()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a[0].chunk, chunks[7]);

    // Opened without the store of its records, the index says where they are.
    drop(pair);
    let alone =
        TantivyLexicalIndex::open_read_only(ids_dir.path(), LexicalConfig::default()).unwrap();
    let err = alone.search("检索增强", 5, &scope()).unwrap_err();
    assert!(err.to_string().contains("vector index"), "{err}");
}

#[test]
fn an_index_with_its_own_records_keeps_reading_them_once_given_a_record_store() {
    // Written before the records moved out: every document carries its record.
    let dir = tempfile::tempdir().unwrap();
    let old = Spec::new("old", "s", "升级前写入的片段 upgrade");
    {
        let index =
            TantivyLexicalIndex::open_or_create(dir.path(), LexicalConfig::default()).unwrap();
        index.upsert(&[old.chunk()]).unwrap();
        index.commit().unwrap();
    }
    // Reopened with an (empty) record store: the old document is read from its own record,
    // a new one from the store.
    let pair = over_memory_records(dir.path());
    let new = Spec::new("new", "s", "升级后写入的片段 upgrade");
    pair.upsert(&[new.chunk()]).unwrap();
    pair.commit().unwrap();
    let hits = pair.search("upgrade 片段", 10, &scope()).unwrap();
    let mut docs: Vec<_> = hits.iter().map(|h| h.chunk.clone()).collect();
    docs.sort_by(|a, b| a.doc_id().cmp(b.doc_id()));
    assert_eq!(docs, vec![new.chunk(), old.chunk()]);
}

#[test]
fn a_hit_its_record_store_lacks_or_no_longer_admits_is_left_out() {
    use std::sync::Arc;
    use zhiku_adapters_memory::MemoryVectorIndex;
    use zhiku_domain::ports::{EmbeddedChunk, VectorIndex};

    let vectors = Arc::new(MemoryVectorIndex::new(
        zhiku_tests::contract::fixtures::space(),
    ));
    let lexical = TantivyLexicalIndex::in_ram(LexicalConfig::default())
        .unwrap()
        .with_records_in(vectors.clone());
    let kept = Spec::new("kept", "s", "共同的词 common");
    let lost = Spec::new("lost", "s", "共同的词 common");
    let moved = Spec::new("moved", "s", "共同的词 common");
    lexical
        .upsert(&[kept.chunk(), lost.chunk(), moved.chunk()])
        .unwrap();
    lexical.commit().unwrap();
    // The record store holds `kept`, nothing of `lost`, and `moved` in another scope (its
    // document's new attributes, committed there before the lexical index's).
    let moved_away = Spec::new("moved", "elsewhere", "共同的词 common");
    assert_eq!(moved_away.chunk().chunk_id(), moved.chunk().chunk_id());
    let items: Vec<EmbeddedChunk> = [&kept, &moved_away]
        .iter()
        .map(|s| {
            zhiku_tests::contract::fixtures::embedded(s, zhiku_tests::contract::fixtures::axis(0))
        })
        .collect();
    vectors.upsert(&items).unwrap();
    let hits = lexical.search("common", 10, &scope()).unwrap();
    let docs: Vec<_> = hits.iter().map(|h| h.chunk.doc_id().to_string()).collect();
    assert_eq!(docs, vec!["kept"]);
}
