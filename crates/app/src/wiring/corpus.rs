//! An in-memory knowledge base built from a corpus, for evaluation and benchmarks.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use zhiku_adapters_candle::{CandleEmbedder, EmbedderOptions, ModelSource};
use zhiku_adapters_memory::{HashingEmbedder, MemorySourceStore, MemoryVectorIndex};
use zhiku_adapters_openai::{OpenAiEmbedder, OpenAiEmbedderConfig};
use zhiku_adapters_qdrant::{Bm25, QdrantConfig, QdrantLexicalIndex};
use zhiku_adapters_tantivy::{LexicalConfig, TantivyLexicalIndex};
use zhiku_domain::ports::{Embedder, LexicalIndex};
use zhiku_domain::usecases::{Catalog, IndexReport, Indexer, Retriever, SyncMode};
use zhiku_domain::{ChunkingPolicy, Document, Scope};

use zhiku_eval::beir::{Passage, passage_document};

/// The scope corpus documents are indexed in.
pub fn corpus_scope() -> Scope {
    Scope::default_scope()
}

/// A corpus indexed lexically (tantivy in RAM, or a scratch lexical collection on Qdrant that
/// is dropped with the index) and, optionally, densely.
pub struct CorpusIndex {
    /// The BM25 index.
    pub lexical: Arc<dyn LexicalIndex>,
    /// The dense route, when built.
    pub dense: Option<(Box<dyn Embedder>, MemoryVectorIndex)>,
    /// The corpus as the source of truth.
    pub source: MemorySourceStore,
    /// What was indexed.
    pub catalog: Catalog,
    /// The indexer's report.
    pub report: IndexReport,
    /// Seconds spent chunking, analysing, embedding and committing.
    pub build_seconds: f64,
}

/// Where a corpus index keeps its lexical route.
#[derive(Debug, Clone)]
pub enum CorpusLexical {
    /// tantivy in RAM, with these settings.
    Tantivy(LexicalConfig),
    /// A scratch collection of sparse vectors on the Qdrant deployment of these settings,
    /// dropped with the index.
    Qdrant(QdrantConfig),
}

impl CorpusLexical {
    /// The lexical index `kind` asks for, with default settings.
    pub fn of(kind: crate::config::LexicalKind, qdrant: &QdrantConfig) -> Self {
        match kind {
            crate::config::LexicalKind::Qdrant => Self::Qdrant(qdrant.clone()),
            _ => Self::Tantivy(LexicalConfig::default()),
        }
    }

    /// The index, and the tantivy index to merge once built.
    fn open(self) -> Result<OpenedLexical> {
        Ok(match self {
            Self::Tantivy(config) => {
                let index = Arc::new(TantivyLexicalIndex::in_ram(config)?);
                (index.clone(), Some(index))
            }
            Self::Qdrant(config) => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0);
                let name = format!(
                    "{}corpus_scratch_{}_{nanos:x}",
                    config.collection_prefix,
                    std::process::id()
                );
                let index = QdrantLexicalIndex::open_collection(&config, &name, Bm25::default())?
                    .dropped_with_handle();
                (Arc::new(index), None)
            }
        })
    }
}

/// An opened corpus lexical index, and the same index when it is tantivy's.
type OpenedLexical = (Arc<dyn LexicalIndex>, Option<Arc<TantivyLexicalIndex>>);

impl std::fmt::Debug for CorpusIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorpusIndex")
            .field("report", &self.report)
            .finish()
    }
}

/// Which embedder backs the dense route of a corpus index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenseChoice {
    /// No dense route.
    None,
    /// The hashing test double (no semantics; for wiring checks only).
    Hashing,
    /// A BERT-family model run by candle: a folder or a hub id.
    Candle(String),
    /// An OpenAI-compatible embeddings server.
    OpenAi(OpenAiEmbedderConfig),
}

/// [`build_corpus_index`] with the lexical analyzer every store uses.
pub fn build_default_corpus_index(
    passages: &[Passage],
    policy: ChunkingPolicy,
    dense: DenseChoice,
) -> Result<CorpusIndex> {
    build_corpus_index(
        passages,
        policy,
        CorpusLexical::Tantivy(LexicalConfig::default()),
        dense,
    )
}

/// Converts passages to documents and indexes them.
pub fn build_corpus_index(
    passages: &[Passage],
    policy: ChunkingPolicy,
    lexical: CorpusLexical,
    dense: DenseChoice,
) -> Result<CorpusIndex> {
    let scope = corpus_scope();
    let docs: Vec<Document> = passages
        .iter()
        .map(|p| passage_document(p, &scope).with_context(|| format!("passage {}", p.id)))
        .collect::<Result<_>>()?;
    let source = MemorySourceStore::new();
    for d in &docs {
        source.put(d);
    }
    let (lexical, tantivy) = lexical.open()?;
    let dense: Option<(Box<dyn Embedder>, MemoryVectorIndex)> = match dense {
        DenseChoice::None => None,
        DenseChoice::Hashing => {
            let embedder = HashingEmbedder::new(384)?;
            let vectors = MemoryVectorIndex::new(embedder.space().clone());
            Some((Box::new(embedder), vectors))
        }
        DenseChoice::Candle(model) => {
            let embedder =
                CandleEmbedder::load(&ModelSource::parse(&model), &EmbedderOptions::default())?;
            let vectors = MemoryVectorIndex::new(embedder.space().clone());
            Some((Box::new(embedder), vectors))
        }
        DenseChoice::OpenAi(config) => {
            let url = config.base_url.clone();
            let embedder = OpenAiEmbedder::connect(config)
                .with_context(|| format!("the embeddings server at {url}"))?;
            let vectors = MemoryVectorIndex::new(embedder.space().clone());
            Some((Box::new(embedder), vectors))
        }
    };
    let started = Instant::now();
    let indexer = match &dense {
        Some((embedder, vectors)) => {
            Indexer::hybrid(policy, embedder.as_ref(), vectors, lexical.as_ref())?
        }
        None => Indexer::lexical_only(policy, lexical.as_ref()),
    };
    let empty = indexer.empty_catalog();
    let (catalog, report) = indexer.run(&empty, docs, SyncMode::Full, &mut |_| {})?;
    if let Some(tantivy) = tantivy {
        tantivy.merge_segments()?;
    }
    let build_seconds = started.elapsed().as_secs_f64();
    Ok(CorpusIndex {
        lexical,
        dense,
        source,
        catalog,
        report,
        build_seconds,
    })
}

impl CorpusIndex {
    /// A retriever over this index's routes.
    pub fn retriever(&self) -> Retriever<'_> {
        let r = Retriever::new(&self.source).with_lexical(self.lexical.as_ref());
        match &self.dense {
            Some((embedder, vectors)) => r.with_dense(embedder.as_ref(), vectors),
            None => r.without_dense("no embedder was built for this corpus"),
        }
    }
}
