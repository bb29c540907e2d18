//! An expired document is never evidence (issue 18 §6): over the reference adapters, a
//! document's `ttl` counts from the time the indexer was given, the retriever judged at a later
//! time drops its chunks in the revision check as `expired`, the answer's trace records it in
//! the `revision_check` stage, and nothing of it reaches the context or the citations.

use zhiku_adapters_memory::{
    HashingEmbedder, MemoryLexicalIndex, MemorySourceStore, MemoryTraceSink, MemoryVectorIndex,
};
use zhiku_adapters_offline::ExtractiveGenerator;
use zhiku_domain::ports::{FrozenClock, Stage};
use zhiku_domain::usecases::{
    AnswerPolicy, Answerer, Indexer, RetrievalMode, RetrievalRequest, Retriever, SyncMode,
};
use zhiku_domain::{
    ChunkingPolicy, DocId, Document, Filter, Metadata, Scope, Source, Timestamp, Title,
};

fn doc(id: &str, content: &str, ttl: Option<&str>) -> Document {
    let mut metadata = Metadata::new();
    if let Some(ttl) = ttl {
        metadata.insert("ttl", serde_json::json!(ttl)).unwrap();
    }
    Document::builder(
        DocId::new(id).unwrap(),
        Source::new(format!("kb/{id}.md")).unwrap(),
        content,
    )
    .scope(Scope::new("public").unwrap())
    .title(Title::new(id).unwrap())
    .metadata(metadata)
    .build()
}

fn at(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

#[test]
fn an_expired_document_is_never_evidence_and_the_trace_says_expired() {
    let policy = ChunkingPolicy::with_sizes(120, 16).unwrap();
    let embedder = HashingEmbedder::new(256).unwrap();
    let vectors = MemoryVectorIndex::new(zhiku_domain::ports::Embedder::space(&embedder).clone());
    let lexical = MemoryLexicalIndex::new();
    let source = MemorySourceStore::new();
    let docs = vec![
        doc(
            "cache",
            "# 缓存\n\n斑马线的宽度是四十厘米，这条网页缓存十二小时后过期。",
            Some("12h"),
        ),
        doc(
            "curated",
            "# 规范\n\n斑马线的宽度按规范是四十五厘米。",
            None,
        ),
    ];
    for d in &docs {
        source.put(d);
    }
    let indexer = Indexer::hybrid(policy, &embedder, &vectors, &lexical)
        .unwrap()
        .at(at("2026-05-01T00:00:00Z"));
    let (catalog, _) = indexer
        .run(&indexer.empty_catalog(), docs, SyncMode::Full, &mut |_| {})
        .unwrap();
    let cache = &catalog.docs[&DocId::new("cache").unwrap()];
    assert_eq!(cache.indexed_at, Some(at("2026-05-01T00:00:00Z")));
    assert_eq!(cache.expires_at, Some(at("2026-05-01T12:00:00Z")));
    assert_eq!(
        catalog.docs[&DocId::new("curated").unwrap()].expires_at,
        None
    );

    let filter = Filter::for_scope(Scope::new("public").unwrap());
    let question = "斑马线的宽度是多少？";
    let retriever_at = |now: &str| {
        Retriever::new(&source)
            .with_dense(&embedder, &vectors)
            .with_lexical(&lexical)
            .at(at(now))
    };
    let request = RetrievalRequest {
        query: question,
        filter: &filter,
        mode: RetrievalMode::Hybrid,
        k: 5,
        budget: None,
    };
    let docs_of = |r: &zhiku_domain::usecases::Retrieval| {
        let mut d: Vec<String> = r
            .evidence
            .iter()
            .map(|e| e.chunk.doc_id().to_string())
            .collect();
        d.dedup();
        d
    };
    let before = retriever_at("2026-05-01T11:59:59Z")
        .retrieve(&request)
        .unwrap();
    assert!(docs_of(&before).contains(&"cache".to_string()));
    let after = retriever_at("2026-05-01T12:00:00Z")
        .retrieve(&request)
        .unwrap();
    assert_eq!(docs_of(&after), ["curated"]);
    assert!(
        after
            .dropped
            .iter()
            .all(|d| d.doc_id.as_str() == "cache" && d.reason.code() == "expired")
    );
    assert!(!after.dropped.is_empty());

    // Asked after the expiry: the trace's revision check names the expired chunks, and the
    // answer's evidence and citations hold only the curated document.
    let retriever = retriever_at("2026-05-02T00:00:00Z");
    let sink = MemoryTraceSink::new();
    let generator = ExtractiveGenerator::default();
    let answerer = Answerer::new(
        &retriever,
        &generator,
        &sink,
        &FrozenClock,
        AnswerPolicy::default(),
    );
    let frame = answerer.ask(question, &filter, "t-exp").unwrap();
    assert!(
        frame
            .evidence
            .iter()
            .all(|e| e.doc_id.as_str() == "curated"),
        "{frame:?}"
    );
    assert!(
        frame
            .citations
            .iter()
            .all(|c| c.doc_id.as_str() == "curated"),
        "{frame:?}"
    );
    let events = sink.events_for("t-exp");
    let check = events
        .iter()
        .find_map(|e| match &e.stage {
            Stage::RevisionCheck(step) => Some(step.clone()),
            _ => None,
        })
        .expect("a revision_check stage");
    assert!(!check.dropped.is_empty());
    for d in &check.dropped {
        assert_eq!((d.doc_id.as_str(), d.reason.as_str()), ("cache", "expired"));
    }
}
