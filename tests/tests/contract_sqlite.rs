//! The SQLite adapters against the contract suite: the catalog database as a catalog store.

mod sqlite_catalog {
    use std::sync::Arc;

    use zhiku_adapters_sqlite::SqliteCatalog;
    use zhiku_tests::contract::catalog::OpenCatalogStore;

    zhiku_tests::catalog_store_contract!(|()| -> Option<Box<OpenCatalogStore>> {
        let dir = Arc::new(tempfile::tempdir().expect("tempdir"));
        Some(Box::new(move || {
            Box::new(SqliteCatalog::in_store(dir.path()))
        }))
    });
}

mod sqlite_catalog_files {
    use zhiku_adapters_sqlite::SqliteCatalog;
    use zhiku_domain::ports::{CatalogError, CatalogStore};
    use zhiku_tests::contract::catalog::stored_catalog;

    #[test]
    fn a_read_only_handle_loads_but_never_saves_nor_creates() {
        let dir = tempfile::tempdir().unwrap();
        let reader = SqliteCatalog::read_only_in_store(dir.path());
        assert_eq!(reader.load().unwrap(), None);
        assert!(
            !reader.path().exists(),
            "a read-only handle created the database"
        );
        let stored = stored_catalog(&[("a", 2)], None);
        SqliteCatalog::in_store(dir.path()).save(&stored).unwrap();
        assert_eq!(reader.load().unwrap(), Some(stored.clone()));
        let refused = reader.save(&stored);
        assert!(
            matches!(refused, Err(CatalogError::ReadOnly { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_catalog_says_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCatalog::in_store(dir.path());
        std::fs::write(store.path(), vec![b'x'; 4096]).unwrap();
        let e = store.load().unwrap_err();
        assert!(e.needs_rebuild(), "{e}");
        assert!(e.to_string().contains("zhiku index --rebuild"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCatalog::in_store(dir.path());
        store.save(&stored_catalog(&[("a", 1)], None)).unwrap();
        let conn = rusqlite::Connection::open(store.path()).unwrap();
        conn.execute(
            "UPDATE meta SET value = 'zhiku-catalog/0' WHERE key = 'format'",
            [],
        )
        .unwrap();
        drop(conn);
        let e = SqliteCatalog::in_store(dir.path()).load().unwrap_err();
        assert!(matches!(e, CatalogError::FormatMismatch { .. }), "{e}");
    }

    #[test]
    fn a_one_document_save_writes_only_that_documents_rows() {
        use zhiku_domain::ports::Changed;
        use zhiku_domain::usecases::CatalogChanges;

        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCatalog::in_store(dir.path());
        let docs: Vec<(String, usize)> = (0..2000).map(|i| (format!("doc{i}"), 3)).collect();
        let docs: Vec<(&str, usize)> = docs.iter().map(|(d, n)| (d.as_str(), *n)).collect();
        let mut stored = stored_catalog(&docs, None);
        store.save(&stored).unwrap();
        // Every row but doc7's gets a mark behind the store's back (trailing JSON whitespace).
        let conn = rusqlite::Connection::open(store.path()).unwrap();
        conn.execute(
            "UPDATE docs SET entry = entry || ' ' WHERE id != 'doc7'",
            [],
        )
        .unwrap();
        drop(conn);
        // A save of what changed rewrites doc7's row and leaves every other row as it is
        // (the marked rows keep their mark: they were not rewritten).
        let doc7 = zhiku_domain::DocId::new("doc7").unwrap();
        let mut entry = stored.catalog.docs[&doc7].clone();
        entry.fingerprint = "changed".into();
        let mut changes = CatalogChanges::default();
        changes.write(doc7.clone(), entry);
        let mut changed = Changed::default();
        stored.apply(&changes, &mut changed);
        store.save_changed(&stored, &changed).unwrap();
        let conn = rusqlite::Connection::open(store.path()).unwrap();
        let marked: i64 = conn
            .query_row("SELECT count(*) FROM docs WHERE entry LIKE '% '", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(marked, 1999);
        let fingerprint: String = conn
            .query_row("SELECT entry FROM docs WHERE id = 'doc7'", [], |r| r.get(0))
            .unwrap();
        assert!(fingerprint.contains("\"changed\""), "{fingerprint}");
    }
}
