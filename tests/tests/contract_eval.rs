//! The BEIR corpus as a read-only document store, against the contract suite.

mod corpus_documents {
    use zhiku_domain::{DocId, Scope};
    use zhiku_eval::corpus_documents::CorpusDocuments;
    use zhiku_tests::contract::documents::DocumentPlace;

    fn seeded(_: ()) -> Option<Box<DocumentPlace>> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("corpus.jsonl"),
            concat!(
                "{\"_id\": \"p1\", \"title\": \"长城\", \"text\": \"长城是中国古代的军事防御工程。\"}\n",
                "{\"_id\": \"p2\", \"title\": \"\", \"text\": \"The Great Wall is long.\"}\n",
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("queries.jsonl"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("qrels")).unwrap();
        std::fs::write(
            dir.path().join("qrels/test.tsv"),
            "query-id\tcorpus-id\tscore\n",
        )
        .unwrap();
        Some(Box::new(DocumentPlace {
            store: Box::new(CorpusDocuments::new(
                dir.path().to_path_buf(),
                Scope::new("alpha").unwrap(),
            )),
            seeded: vec![DocId::new("p1").unwrap(), DocId::new("p2").unwrap()],
            guard: Box::new(dir),
        }))
    }

    zhiku_tests::read_only_document_store_contract!(seeded);
}
