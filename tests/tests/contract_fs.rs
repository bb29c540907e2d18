//! The filesystem adapters against the contract suite: the folder as a document store, the
//! manifest file as a catalog store, the vector file as a vector index and the JSONL trace log
//! as a trace store.

mod folder_documents {
    use zhiku_adapters_fs::folder::FolderDocuments;
    use zhiku_adapters_fs::loader::LoaderConfig;
    use zhiku_domain::DocId;
    use zhiku_tests::contract::documents::DocumentPlace;

    fn seeded(_: ()) -> Option<Box<DocumentPlace>> {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical root");
        std::fs::create_dir_all(root.join("guide")).unwrap();
        std::fs::write(
            root.join("guide/install.md"),
            "---\nid: install\nscope: alpha\n---\n# 安装\n\n先下载，再安装。\n",
        )
        .unwrap();
        std::fs::write(
            root.join("notes.md"),
            "---\nid: notes\nscope: beta\n---\n# Notes\n\nPlain notes.\n",
        )
        .unwrap();
        Some(Box::new(DocumentPlace {
            // Files written just now are stamped (the racy window guards real edits).
            store: Box::new(FolderDocuments::new(
                root,
                LoaderConfig {
                    racy_window: std::time::Duration::ZERO,
                    ..LoaderConfig::default()
                },
            )),
            seeded: vec![DocId::new("install").unwrap(), DocId::new("notes").unwrap()],
            guard: Box::new(dir),
        }))
    }

    zhiku_tests::writable_document_store_contract!(seeded);
}

mod manifest_file {
    use std::sync::Arc;

    use zhiku_adapters_fs::manifest::ManifestFile;
    use zhiku_tests::contract::catalog::OpenCatalogStore;

    zhiku_tests::catalog_store_contract!(|()| -> Option<Box<OpenCatalogStore>> {
        let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
        Some(Box::new(move || {
            Box::new(ManifestFile::in_store(dir.path()))
        }))
    });

    #[test]
    fn a_read_only_handle_loads_but_never_saves() {
        use zhiku_domain::ports::{CatalogError, CatalogStore};
        let dir = tempfile::tempdir().unwrap();
        let stored = zhiku_tests::contract::catalog::stored_catalog(&[("a", 2)], None);
        ManifestFile::in_store(dir.path()).save(&stored).unwrap();
        let reader = ManifestFile::read_only_in_store(dir.path());
        assert_eq!(reader.load().unwrap(), Some(stored.clone()));
        let refused = reader.save(&stored);
        assert!(
            matches!(refused, Err(CatalogError::ReadOnly { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn a_manifest_of_another_format_or_none_at_all_says_rebuild() {
        use zhiku_domain::ports::CatalogStore;
        let dir = tempfile::tempdir().unwrap();
        let file = ManifestFile::in_store(dir.path());
        std::fs::write(file.path(), "{\"format\": \"zhiku-store/0\"}").unwrap();
        let e = file.load().unwrap_err();
        assert!(e.needs_rebuild(), "{e}");
        assert!(
            e.to_string().contains("rebuild with zhiku index --rebuild"),
            "{e}"
        );
        std::fs::write(file.path(), "not json").unwrap();
        let e = file.load().unwrap_err();
        assert!(e.needs_rebuild(), "{e}");
        assert!(
            e.to_string().contains("is not a valid zhiku manifest"),
            "{e}"
        );
    }
}

mod legacy_vector_file {
    use zhiku_adapters_fs::vector_file;
    use zhiku_domain::ports::IndexError;
    use zhiku_tests::contract::fixtures::{Spec, axis, embedded, other_space, space};

    #[test]
    fn what_an_earlier_version_wrote_reads_back_whole_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(vector_file::FILE_NAME);
        assert!(vector_file::read(&path, &space()).unwrap().is_none());
        let items = vec![
            embedded(&Spec::new("a", "s", "first"), axis(1)),
            embedded(&Spec::new("b", "t", "second"), axis(2)),
        ];
        vector_file::write(&path, &space(), &items).unwrap();
        let back = vector_file::read(&path, &space()).unwrap().unwrap();
        assert_eq!(back.len(), 2);
        for (a, b) in items.iter().zip(&back) {
            assert_eq!(a.chunk, b.chunk);
            assert_eq!(a.embedding.values(), b.embedding.values());
        }
        let err = vector_file::read(&path, &other_space()).unwrap_err();
        assert!(matches!(err, IndexError::SpaceMismatch { .. }), "{err}");

        // A cut file names the record it could not read; garbage names the header.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let err = vector_file::read(&path, &space()).unwrap_err().to_string();
        assert!(err.contains("record 1"), "{err}");
        std::fs::write(&path, b"not a vector file\n").unwrap();
        let err = vector_file::read(&path, &space()).unwrap_err().to_string();
        assert!(err.contains("bad header"), "{err}");
    }
}

mod jsonl_trace_log {
    use std::sync::Mutex;

    use zhiku_adapters_fs::trace_log::{JsonlTraceSink, Retention};
    use zhiku_domain::ports::TraceStore;

    /// Keeps each test's directory alive for the whole test process.
    static DIRS: Mutex<Vec<tempfile::TempDir>> = Mutex::new(Vec::new());

    zhiku_tests::trace_store_contract!(|()| -> Option<Box<dyn TraceStore>> {
        let dir = tempfile::tempdir().unwrap();
        // A small rotation size, so the runs also cross rotated files.
        let sink = JsonlTraceSink::new(dir.path().join("traces.jsonl"))
            .with_retention(Retention::new(600, 8, 0));
        DIRS.lock().unwrap().push(dir);
        Some(Box::new(sink))
    });
}
