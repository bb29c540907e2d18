//! The usearch + SQLite vector index against the contract suite (exact and approximate
//! properties), and its persistence: reopen, read-only handles, snapshots and replay.

use std::sync::Mutex;

use zhiku_adapters_usearch::{AnnOptions, AnnVectorIndex, Quantization};
use zhiku_domain::EmbeddingSpace;
use zhiku_domain::ports::VectorIndex;

/// Keeps each test's directory alive for the whole test process.
static DIRS: Mutex<Vec<tempfile::TempDir>> = Mutex::new(Vec::new());

/// An index with `options` in a fresh temporary folder.
fn fresh(space: EmbeddingSpace, options: AnnOptions) -> Option<Box<dyn VectorIndex>> {
    let dir = tempfile::tempdir().unwrap();
    let index = AnnVectorIndex::open(dir.path(), space, options).unwrap();
    DIRS.lock().unwrap().push(dir);
    Some(Box::new(index))
}

/// The default options: i8 with exact rescoring.
mod usearch_vector {
    use super::*;
    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| fresh(
        space,
        AnnOptions::default()
    ));
}

/// A binary graph (sign bits, Hamming), always rescored on the f32 vectors.
mod usearch_b1_graph_only {
    use super::*;
    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| fresh(
        space,
        AnnOptions {
            exact_scan_below: 0,
            ..AnnOptions::new(Quantization::B1)
        }
    ));
}

/// The binary graph's recall against the exact index at 384 dimensions (a bit per component:
/// 64 would leave 64 bits), every search a graph walk.
mod usearch_b1_approximate {
    use super::*;
    zhiku_tests::approximate_vector_index_contract!(
        |space: EmbeddingSpace| fresh(
            space,
            AnnOptions {
                exact_scan_below: 0,
                ..AnnOptions::new(Quantization::B1)
            }
        ),
        zhiku_tests::contract::fixtures::ann_space_of(384)
    );
}

/// The index as the records of the embedded store's lexical index.
mod usearch_records {
    use super::*;
    use std::sync::Arc;
    use zhiku_tests::contract::records::RecordsUnderTest;
    zhiku_tests::chunk_records_contract!(
        |space: EmbeddingSpace| -> Option<Box<RecordsUnderTest>> {
            let dir = tempfile::tempdir().unwrap();
            let index = AnnVectorIndex::open(dir.path(), space, AnnOptions::default()).unwrap();
            DIRS.lock().unwrap().push(dir);
            Some(Box::new(RecordsUnderTest::of(Arc::new(index))))
        }
    );
}

/// The tantivy index of the embedded store keeping its records here: the whole lexical
/// contract, each hit's record read from SQLite.
mod tantivy_records_in_usearch {
    use super::*;
    use std::sync::Arc;
    use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
    use zhiku_domain::ports::LexicalIndex;
    use zhiku_tests::contract::records::LexicalOverRecords;
    zhiku_tests::lexical_index_contract!(|()| -> Option<Box<dyn LexicalIndex>> {
        let dir = tempfile::tempdir().unwrap();
        let vectors = Arc::new(
            AnnVectorIndex::open(
                dir.path(),
                zhiku_tests::contract::fixtures::space(),
                AnnOptions::default(),
            )
            .unwrap(),
        );
        let lexical = TantivyLexicalIndex::open_or_create(
            &dir.path().join("lexical"),
            LexicalConfig::default(),
        )
        .unwrap()
        .with_records_in(vectors.clone());
        DIRS.lock().unwrap().push(dir);
        Some(Box::new(LexicalOverRecords {
            lexical: Box::new(lexical),
            vectors,
        }))
    });
}

/// The default options on 2,000 vectors: small filters are exact scans.
mod usearch_approximate {
    use super::*;
    zhiku_tests::approximate_vector_index_contract!(|space: EmbeddingSpace| fresh(
        space,
        AnnOptions::default()
    ));
}

/// Every search walks the graph (no exact-scan shortcut), so filters run as usearch predicates.
mod usearch_approximate_graph_only {
    use super::*;
    zhiku_tests::approximate_vector_index_contract!(|space: EmbeddingSpace| fresh(
        space,
        AnnOptions {
            exact_scan_below: 0,
            ..AnnOptions::default()
        }
    ));
}

/// f32 without rescoring: the graph's own distances are the scores.
mod usearch_f32_graph_only {
    use super::*;
    zhiku_tests::vector_index_contract!(|space: EmbeddingSpace| fresh(
        space,
        AnnOptions {
            exact_scan_below: 0,
            ..AnnOptions::new(Quantization::F32)
        }
    ));
}

mod persistence {
    use std::path::Path;

    use zhiku_adapters_usearch::{
        AnnOptions, AnnVectorIndex, COLUMNS_FILE, GraphSource, Quantization, SNAPSHOT_FILE,
    };
    use zhiku_domain::ports::{EmbeddedChunk, IndexError, VectorIndex};
    use zhiku_domain::{ChunkId, DocId, Filter, Locale, Scope};
    use zhiku_tests::contract::fixtures::{
        ANN_SCOPES, Rng, Spec, ann_corpus, ann_space, axis, embedded, other_space, random_unit,
        space,
    };

    fn scope(s: &str) -> Filter {
        Filter::for_scope(Scope::new(s).unwrap())
    }

    fn everywhere() -> Filter {
        Filter::for_scopes(ANN_SCOPES.iter().map(|s| Scope::new(*s).unwrap())).unwrap()
    }

    fn open(dir: &Path) -> AnnVectorIndex {
        AnnVectorIndex::open(dir, ann_space(), AnnOptions::default()).unwrap()
    }

    fn open_reader(dir: &Path) -> AnnVectorIndex {
        AnnVectorIndex::open_read_only(dir, ann_space(), AnnOptions::default()).unwrap()
    }

    fn contents(index: &dyn VectorIndex, filter: &Filter) -> Vec<String> {
        index
            .search(&axis(1), 10, filter)
            .unwrap()
            .iter()
            .map(|h| h.chunk.content().to_string())
            .collect()
    }

    #[test]
    fn committed_writes_survive_a_reopen_and_uncommitted_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap();
            assert_eq!(index.generation(), 0);
            index
                .upsert(&[embedded(&Spec::new("a", "s", "kept"), axis(1))])
                .unwrap();
            index.commit().unwrap();
            assert_eq!(index.generation(), 1);
            index
                .upsert(&[embedded(&Spec::new("b", "s", "lost"), axis(1))])
                .unwrap();
            index.delete_document(&DocId::new("a").unwrap()).unwrap();
            // Visible to this handle before the commit (the port allows it)...
            assert_eq!(contents(&index, &scope("s")), vec!["lost"]);
        }
        // ...but not durable without one.
        let index = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap();
        assert_eq!(index.generation(), 1);
        assert_eq!(contents(&index, &scope("s")), vec!["kept"]);
        assert_eq!(index.count().unwrap(), 1);
        index.commit().unwrap();
        assert_eq!(index.generation(), 2, "every commit adds one");
    }

    #[test]
    fn export_hands_over_every_committed_chunk_and_vector_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let index = open(dir.path());
        let mut rng = Rng::new(7);
        let items: Vec<EmbeddedChunk> = (0..5)
            .map(|i| {
                let spec = Spec::new(format!("d{i}"), ANN_SCOPES[i % 2], format!("text {i}"));
                embedded(&spec, random_unit(&mut rng, &ann_space()))
            })
            .collect();
        index.upsert(&items).unwrap();
        index.commit().unwrap();
        index.delete_document(&DocId::new("d0").unwrap()).unwrap();
        index.commit().unwrap();
        // Not committed: not exported.
        index
            .upsert(&[embedded(
                &Spec::new("late", ANN_SCOPES[0], "late"),
                random_unit(&mut rng, &ann_space()),
            )])
            .unwrap();
        let mut batches = Vec::new();
        let n = index
            .export(2, |batch| {
                batches.push(batch);
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 4);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2]);
        let exported: Vec<&EmbeddedChunk> = batches.iter().flatten().collect();
        for (got, want) in exported.iter().zip(&items[1..]) {
            assert_eq!(got.chunk, want.chunk);
            assert_eq!(got.embedding.values(), want.embedding.values());
        }
        // A failure of the receiver stops the export and is returned as it is.
        let err = index
            .export(1, |_| {
                Err(IndexError::Unsupported {
                    adapter: "receiver",
                    operation: "stop",
                })
            })
            .unwrap_err();
        assert!(matches!(err, IndexError::Unsupported { .. }), "{err}");
    }

    #[test]
    fn another_space_or_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let index = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap();
        index
            .upsert(&[embedded(&Spec::new("a", "s", "x"), axis(1))])
            .unwrap();
        index.commit().unwrap();
        drop(index);
        let err =
            AnnVectorIndex::open(dir.path(), other_space(), AnnOptions::default()).unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
        let err = AnnVectorIndex::open(dir.path(), ann_space(), AnnOptions::default()).unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
        let err = AnnVectorIndex::open_read_only(dir.path(), other_space(), AnnOptions::default())
            .unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");
        // Another format version.
        change_the_format_record(dir.path());
        let err = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::ConfigMismatch {
                    what: "vector store format",
                    ..
                }
            ),
            "{err}"
        );
    }

    /// Turns the recorded format `zhiku-ann/1` into `zhiku-ann/0` by editing the database
    /// file's bytes in place (the test has no SQLite client of its own). Closing the last
    /// connection has folded the WAL into the main file.
    fn change_the_format_record(dir: &Path) {
        let path = dir.join(zhiku_adapters_usearch::DATABASE_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let needle = b"zhiku-ann/1";
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("the format record is in the main database file");
        bytes[at + needle.len() - 1] = b'0';
        std::fs::write(&path, bytes).unwrap();
    }

    #[test]
    fn a_read_only_handle_searches_refuses_writes_and_follows_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let missing = AnnVectorIndex::open_read_only(dir.path(), space(), AnnOptions::default());
        assert!(missing.is_err(), "no store yet");
        let writer = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap();
        writer
            .upsert(&[embedded(&Spec::new("a", "s", "first"), axis(1))])
            .unwrap();
        writer.commit().unwrap();
        let reader =
            AnnVectorIndex::open_read_only(dir.path(), space(), AnnOptions::default()).unwrap();
        assert!(
            reader.is_mapped(),
            "the snapshot reflects the last commit: mapped, not loaded"
        );
        assert!(!writer.is_mapped());
        assert_eq!(contents(&reader, &scope("s")), vec!["first"]);
        let err = reader
            .upsert(&[embedded(&Spec::new("b", "s", "no"), axis(1))])
            .unwrap_err();
        assert!(matches!(err, IndexError::Unsupported { .. }), "{err}");
        assert!(reader.delete_document(&DocId::new("a").unwrap()).is_err());
        assert!(reader.checkpoint().is_err());
        reader.commit().unwrap();
        assert_eq!(reader.generation(), 1);

        writer
            .upsert(&[embedded(&Spec::new("b", "s", "second"), axis(1))])
            .unwrap();
        writer.delete_document(&DocId::new("a").unwrap()).unwrap();
        writer.commit().unwrap();
        assert_eq!(
            contents(&reader, &scope("s")),
            Vec::<String>::new(),
            "lagging: a's record is gone"
        );
        assert!(reader.refresh().unwrap());
        assert_eq!(
            reader.is_mapped(),
            writer.snapshot_generation() == Some(writer.generation()),
            "mapped when the snapshot reflects the last commit, loaded and replayed otherwise"
        );
        assert!(!reader.refresh().unwrap());
        assert_eq!(reader.generation(), 2);
        assert_eq!(contents(&reader, &scope("s")), vec!["second"]);
        assert_eq!(
            reader.all_chunk_ids().unwrap(),
            writer.all_chunk_ids().unwrap()
        );

        // After a snapshot pruned the tombstones it needed, a refresh reloads everything.
        writer
            .upsert(&[embedded(&Spec::new("c", "s", "third"), axis(2))])
            .unwrap();
        writer.delete_document(&DocId::new("b").unwrap()).unwrap();
        writer.checkpoint().unwrap();
        assert!(reader.refresh().unwrap());
        assert!(reader.is_mapped(), "a checkpoint: mapped again");
        assert_eq!(contents(&reader, &scope("s")), vec!["third"]);
        assert_eq!(reader.generation(), writer.generation());
        assert_eq!(
            reader.all_chunk_ids().unwrap(),
            writer.all_chunk_ids().unwrap()
        );
        assert!(
            !std::fs::read_dir(dir.path()).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp"))
        );
    }

    /// 1,000 rows: the first commit writes a snapshot (everything changed); a small second
    /// commit does not; a reopen loads the snapshot and replays exactly the second commit.
    #[test]
    fn a_reopen_loads_the_snapshot_and_replays_only_the_delta() {
        let dir = tempfile::tempdir().unwrap();
        let items = ann_corpus(7, 100, 10);
        let index = open(dir.path());
        index.upsert(&items).unwrap();
        index.commit().unwrap();
        assert_eq!(
            index.snapshot_generation(),
            Some(1),
            "1,000 changed rows ≥ 10 %"
        );
        assert!(dir.path().join(SNAPSHOT_FILE).exists());

        // 10 replaced vectors, 10 new chunks, 5 deletes: 25 < 10 % of 1,005.
        let mut rng = Rng::new(99);
        let replaced: Vec<EmbeddedChunk> = items[..10]
            .iter()
            .map(|item| EmbeddedChunk {
                chunk: item.chunk.clone(),
                embedding: random_unit(&mut rng, &ann_space()),
            })
            .collect();
        let added: Vec<EmbeddedChunk> = (0..10)
            .map(|i| {
                embedded(
                    &Spec::new("new", "s0", format!("new{i}")).at(i),
                    random_unit(&mut rng, &ann_space()),
                )
            })
            .collect();
        let deleted: Vec<ChunkId> = items[500..505]
            .iter()
            .map(|item| item.chunk.chunk_id().clone())
            .collect();
        index.upsert(&replaced).unwrap();
        index.upsert(&added).unwrap();
        index.delete_chunks(&deleted).unwrap();
        index.commit().unwrap();
        assert_eq!(index.generation(), 2);
        assert_eq!(
            index.snapshot_generation(),
            Some(1),
            "a small commit writes no snapshot"
        );
        let before = index.all_chunk_ids().unwrap();
        drop(index);

        // A reader cannot map a snapshot that commits came after: it loads and replays too.
        let reader = open_reader(dir.path());
        assert!(!reader.is_mapped());
        assert_eq!(reader.all_chunk_ids().unwrap(), before);
        drop(reader);

        let index = open(dir.path());
        let report = index.last_open();
        assert_eq!(
            report.graph,
            GraphSource::Snapshot {
                generation: 1,
                replayed_rows: 20,
                replayed_deletes: 5
            }
        );
        assert!(!report.snapshot_written);
        assert_eq!(report.rows, 1005);
        assert_eq!(index.generation(), 2);
        assert_eq!(index.all_chunk_ids().unwrap(), before);
        // The replayed rows are searchable with their new vectors; the deleted ones are gone.
        for item in replaced.iter().chain(&added) {
            let scope_name = item.chunk.doc().scope.as_str();
            let hit = &index
                .search(&item.embedding, 1, &scope(scope_name))
                .unwrap()[0];
            assert_eq!(hit.chunk.chunk_id(), item.chunk.chunk_id());
            assert!((hit.score - 1.0).abs() < 1e-4);
        }
        for id in &deleted {
            let item = items.iter().find(|i| i.chunk.chunk_id() == id).unwrap();
            let hits = index.search(&item.embedding, 10, &everywhere()).unwrap();
            assert!(hits.iter().all(|h| h.chunk.chunk_id() != id));
        }
        // A checkpoint folds the delta into a new snapshot; the next open replays nothing.
        index.checkpoint().unwrap();
        assert_eq!(index.snapshot_generation(), Some(2));
        drop(index);
        let index = open(dir.path());
        assert_eq!(
            index.last_open().graph,
            GraphSource::Snapshot {
                generation: 2,
                replayed_rows: 0,
                replayed_deletes: 0
            }
        );
        // A reader maps that snapshot and finds what the writer finds.
        let reader = open_reader(dir.path());
        assert!(reader.is_mapped());
        for item in replaced.iter().chain(&added) {
            let scope_name = item.chunk.doc().scope.as_str();
            let mine = reader
                .search(&item.embedding, 5, &scope(scope_name))
                .unwrap();
            let theirs = index
                .search(&item.embedding, 5, &scope(scope_name))
                .unwrap();
            assert_eq!(
                mine.iter().map(|h| h.chunk.chunk_id()).collect::<Vec<_>>(),
                theirs
                    .iter()
                    .map(|h| h.chunk.chunk_id())
                    .collect::<Vec<_>>()
            );
        }
    }

    /// A read-only open of a store whose snapshot reflects its last commit reads the attribute
    /// columns of that generation instead of every row, and answers every kind of filter,
    /// document listing and lookup exactly as the writer does; a damaged or missing column file
    /// is read around (the rows are read) and the writer's next checkpoint writes it again.
    #[test]
    fn a_mapped_reader_answers_from_the_columns_as_the_writer_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng::new(23);
        let locales = ["zh-CN", "zh-TW", "en"];
        let items: Vec<EmbeddedChunk> = (0..1200)
            .map(|i| {
                let team = ["a", "b", "c"][i / 4 % 3];
                let spec = Spec::new(
                    format!("d{:03}", i / 4),
                    ANN_SCOPES[i / 4 % 10],
                    format!("c{i}"),
                )
                .at(i % 4 * 100)
                .locale(locales[i / 4 % 3])
                .metadata(serde_json::json!({
                    "team": team,
                    "year": 2020 + i / 4 % 5
                }));
                embedded(&spec, random_unit(&mut rng, &ann_space()))
            })
            .collect();
        let writer = open(dir.path());
        writer.upsert(&items).unwrap();
        writer.commit().unwrap();
        writer
            .delete_document(&DocId::new("d007").unwrap())
            .unwrap();
        writer.commit().unwrap();
        writer.checkpoint().unwrap();
        let columns = dir.path().join(COLUMNS_FILE);
        assert!(columns.exists());

        let filters: Vec<Filter> = {
            let s = |n: &str| Scope::new(n).unwrap();
            let d = |n: &str| DocId::new(n).unwrap();
            vec![
                everywhere(),
                scope("s3"),
                Filter::for_scopes([s("s1"), s("s2")])
                    .unwrap()
                    .with_locale(Locale::new("zh").unwrap()),
                scope("s4").with_locale(Locale::new("zh-TW").unwrap()),
                everywhere().with_metadata("team", "b").unwrap(),
                everywhere()
                    .with_metadata("year", "2022")
                    .unwrap()
                    .with_metadata("team", "a")
                    .unwrap(),
                everywhere().with_doc_ids([d("d007"), d("d012"), d("d100"), d("nope")]),
                scope("s2").with_doc_ids([d("d012")]),
                scope("nowhere"),
            ]
        };
        let answers = |index: &AnnVectorIndex| {
            let mut out = Vec::new();
            for (i, filter) in filters.iter().enumerate() {
                let hits = index.search(&items[i * 97].embedding, 10, filter).unwrap();
                out.push(
                    hits.iter()
                        .map(|h| format!("{} {:.5}", h.chunk.chunk_id(), h.score))
                        .collect::<Vec<_>>(),
                );
            }
            for doc in ["d000", "d007", "d123", "nope"] {
                let ids = index.chunk_ids(&DocId::new(doc).unwrap()).unwrap();
                out.push(ids.iter().map(ToString::to_string).collect());
            }
            let ids: Vec<ChunkId> = items[20..40]
                .iter()
                .map(|i| i.chunk.chunk_id().clone())
                .collect();
            let found = index.embeddings(&ids).unwrap();
            out.push(found.iter().map(|e| e.is_some().to_string()).collect());
            out.push(vec![index.count().unwrap().to_string()]);
            out.push(
                index
                    .all_chunk_ids()
                    .unwrap()
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            );
            out
        };
        let expected = answers(&writer);
        assert!(
            expected[0].len() == 10 && expected[6].len() == 8,
            "{:?}",
            &expected[..7]
        );

        let read = || open_reader(dir.path());
        let reader = read();
        assert!(reader.is_mapped() && reader.last_open().columns_read);
        assert_eq!(answers(&reader), expected);

        // Damaged, then missing: the reader reads the rows and answers the same.
        let bytes = std::fs::read(&columns).unwrap();
        std::fs::write(&columns, &bytes[..bytes.len() / 2]).unwrap();
        let reader = read();
        assert!(!reader.last_open().columns_read);
        assert_eq!(answers(&reader), expected);
        std::fs::remove_file(&columns).unwrap();
        let reader = read();
        assert!(!reader.last_open().columns_read);
        assert_eq!(answers(&reader), expected);

        // The writer's checkpoint writes the columns again (the snapshot itself is current).
        VectorIndex::checkpoint(&writer).unwrap();
        assert!(columns.exists());
        let reader = read();
        assert!(reader.last_open().columns_read);
        assert_eq!(answers(&reader), expected);

        // A commit after the snapshot: readers load and replay, whatever the columns say.
        writer
            .delete_document(&DocId::new("d012").unwrap())
            .unwrap();
        writer.commit().unwrap();
        let reader = read();
        assert!(!reader.last_open().columns_read && !reader.is_mapped());
        assert_eq!(answers(&reader), answers(&writer));
    }

    /// The port's checkpoint saves a snapshot whenever something was committed after the one on
    /// disk (a lagging snapshot costs every reader a full load), and only then; a reader opened
    /// after it maps the snapshot and reads the columns.
    #[test]
    fn the_ports_checkpoint_saves_any_delta_so_readers_can_map() {
        let dir = tempfile::tempdir().unwrap();
        let items = ann_corpus(11, 100, 10);
        let index = open(dir.path());
        index.upsert(&items).unwrap();
        index.commit().unwrap();
        assert_eq!(index.snapshot_generation(), Some(1));
        VectorIndex::checkpoint(&index).unwrap();
        assert_eq!(
            index.snapshot_generation(),
            Some(1),
            "nothing new: not saved"
        );
        index.upsert(&items[..1]).unwrap();
        index.commit().unwrap();
        let lagging = open_reader(dir.path());
        assert!(
            !lagging.is_mapped(),
            "a lagging snapshot is loaded and replayed"
        );
        VectorIndex::checkpoint(&index).unwrap();
        assert_eq!(
            index.snapshot_generation(),
            Some(2),
            "1 row of 1,000: saved"
        );
        let reader = open_reader(dir.path());
        assert!(reader.is_mapped() && reader.last_open().columns_read);
    }

    #[test]
    fn a_missing_unreadable_or_mismatched_snapshot_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let items = ann_corpus(8, 30, 10);
        let index = open(dir.path());
        index.upsert(&items).unwrap();
        index.checkpoint().unwrap();
        drop(index);
        let snapshot = dir.path().join(SNAPSHOT_FILE);
        let probe = &items[123];
        let check = |index: &AnnVectorIndex| {
            let scope_name = probe.chunk.doc().scope.as_str();
            let hit = &index
                .search(&probe.embedding, 1, &scope(scope_name))
                .unwrap()[0];
            assert_eq!(hit.chunk.chunk_id(), probe.chunk.chunk_id());
            assert_eq!(index.count().unwrap(), 300);
        };

        std::fs::remove_file(&snapshot).unwrap();
        let index = open(dir.path());
        let report = index.last_open();
        assert!(
            matches!(report.graph, GraphSource::Rebuilt { .. }),
            "{report:?}"
        );
        assert!(report.snapshot_written, "the rebuilt graph is saved");
        check(&index);
        drop(index);
        let index = open(dir.path());
        assert!(matches!(
            index.last_open().graph,
            GraphSource::Snapshot { .. }
        ));
        drop(index);

        std::fs::write(&snapshot, b"garbage, not a usearch file").unwrap();
        let index = open(dir.path());
        assert!(matches!(
            index.last_open().graph,
            GraphSource::Rebuilt { .. }
        ));
        check(&index);
        drop(index);

        // Another quantisation: the snapshot is not used, the graph is rebuilt in f16.
        let f16 = AnnVectorIndex::open(dir.path(), ann_space(), AnnOptions::new(Quantization::F16))
            .unwrap();
        assert!(matches!(f16.last_open().graph, GraphSource::Rebuilt { .. }));
        check(&f16);
        drop(f16);

        // A read-only handle rebuilds in memory and writes nothing.
        std::fs::remove_file(&snapshot).unwrap();
        let reader = open_reader(dir.path());
        let report = reader.last_open();
        assert!(matches!(report.graph, GraphSource::Rebuilt { .. }));
        assert!(!report.snapshot_written);
        check(&reader);
        assert!(!snapshot.exists());
    }

    #[test]
    fn searches_run_beside_writes_from_other_threads() {
        let dir = tempfile::tempdir().unwrap();
        let options = AnnOptions {
            search_threads: 2,
            exact_scan_below: 0,
            ..AnnOptions::default()
        };
        let index = AnnVectorIndex::open(dir.path(), ann_space(), options).unwrap();
        let items = ann_corpus(9, 40, 10);
        index.upsert(&items[..200]).unwrap();
        index.commit().unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let index = &index;
                s.spawn(move || {
                    let mut rng = Rng::new(t);
                    for _ in 0..50 {
                        let q = random_unit(&mut rng, &ann_space());
                        let hits = index.search(&q, 5, &everywhere()).unwrap();
                        assert_eq!(hits.len(), 5);
                    }
                });
            }
            let index = &index;
            s.spawn(move || {
                for part in items[200..].chunks(20) {
                    index.upsert(part).unwrap();
                    index.commit().unwrap();
                }
            });
        });
        assert_eq!(index.count().unwrap(), 400);
        assert_eq!(index.generation(), 11);
    }
}

/// The records alone, for a reader without the dense route: the last commit, like the index.
#[test]
fn a_record_file_reads_the_committed_records_as_the_index_does() {
    use zhiku_adapters_usearch::RecordFile;
    use zhiku_domain::ports::ChunkRecords;
    use zhiku_tests::contract::fixtures::{Spec, axis, embedded, space};

    let dir = tempfile::tempdir().unwrap();
    assert!(RecordFile::open_read_only(dir.path()).unwrap().is_none());
    let index = AnnVectorIndex::open(dir.path(), space(), AnnOptions::default()).unwrap();
    let a = Spec::new("a", "s", "甲 alpha")
        .title("标题")
        .locale("zh-CN");
    let b = Spec::new("b", "t", "乙 beta");
    index
        .upsert(&[embedded(&a, axis(0)), embedded(&b, axis(1))])
        .unwrap();
    index.commit().unwrap();
    let file = RecordFile::open_read_only(dir.path()).unwrap().unwrap();
    let pending = Spec::new("c", "s", "丙 uncommitted");
    index.upsert(&[embedded(&pending, axis(2))]).unwrap();
    let ids = [
        a.chunk().chunk_id().clone(),
        pending.chunk().chunk_id().clone(),
        b.chunk().chunk_id().clone(),
    ];
    assert_eq!(
        file.records(&ids).unwrap(),
        vec![Some(a.chunk()), None, Some(b.chunk())]
    );
    assert_eq!(index.records(&ids).unwrap()[1], Some(pending.chunk()));
    index.commit().unwrap();
    assert_eq!(file.records(&ids).unwrap()[1], Some(pending.chunk()));
}
