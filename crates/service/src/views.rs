//! What the service returns: search results, documents, ingests and the status.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use zhiku_domain::usecases::{CatalogEntry, DocAbout, IndexReport, RetrievalMode, RouteReport};
use zhiku_domain::{Access, DocId, Document, Scope, Timestamp};

/// What is known about a document without reading it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocInfo {
    /// Its ID.
    pub id: DocId,
    /// Its title (the first heading when the document declares none).
    pub title: String,
    /// Its source path (relative to the knowledge-base root) or corpus name.
    pub source: String,
    /// The scope that decides who may read it.
    pub scope: Scope,
    /// When its current version was indexed (absent for a store indexed before it was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<Timestamp>,
    /// When it stops being evidence (its `expires_at`, or `ttl` after `indexed_at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Who may read it inside its scope (not shown: a reader list names people and groups).
    #[serde(skip)]
    pub access: Access,
}

impl DocInfo {
    /// What `doc` says about itself.
    pub fn of(doc: &Document) -> Self {
        Self::described(doc.id(), DocAbout::of(doc))
    }

    /// What the catalog recorded of document `id`, if it recorded it.
    pub fn indexed(id: &DocId, entry: &CatalogEntry) -> Option<Self> {
        entry.about.clone().map(|about| Self {
            indexed_at: entry.indexed_at,
            expires_at: entry.expires_at,
            ..Self::described(id, about)
        })
    }

    fn described(id: &DocId, about: DocAbout) -> Self {
        Self {
            id: id.clone(),
            title: about.title,
            source: about.source,
            scope: about.scope,
            indexed_at: None,
            expires_at: None,
            access: about.access,
        }
    }
}

/// One piece of evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// 1-based rank.
    pub rank: usize,
    /// The evidence chunk (`doc:start:sha16`), what a citation names.
    pub chunk_id: String,
    /// The document the chunk was cut from.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// The document's source: its path, or its reference at the source it was synced from
    /// (`docs/a.md@3f2c1e0a9b7d`, a page's URL).
    pub source: String,
    /// Where a browser shows the document at its source (a permalink), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headings above the chunk.
    pub heading_path: Vec<String>,
    /// The section the chunk sits in, to read it whole (`GET /v1/documents/{id}/sections/{section}`).
    pub section: String,
    /// The pages of the document the chunk lies on (a PDF's), as `[first, last]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<zhiku_domain::PageSpan>,
    /// The score after fusing the routes (reciprocal rank fusion); comparable within one
    /// result only.
    pub score: f64,
    /// Each route's rank and score.
    pub routes: Vec<zhiku_domain::usecases::RouteHit>,
    /// The chunk's text.
    pub content: String,
    /// The header rows of the table the chunk continues (not part of `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_header: Option<String>,
}

impl Hit {
    /// The evidence of a retrieval, in rank order.
    pub fn all(retrieval: &zhiku_domain::usecases::Retrieval) -> Vec<Hit> {
        retrieval
            .evidence
            .iter()
            .map(|e| Hit {
                rank: e.rank,
                chunk_id: e.chunk_id.to_string(),
                doc_id: e.chunk.doc_id().to_string(),
                title: e.chunk.doc().title.to_string(),
                source: e.chunk.doc().reference().to_string(),
                url: e.chunk.doc().link().map(str::to_string),
                heading_path: e.chunk.heading_path().to_vec(),
                section: e.chunk.section().to_string(),
                pages: e.chunk.pages(),
                score: e.score,
                routes: e.routes.clone(),
                content: e.chunk.content().to_string(),
                table_header: e.chunk.table_header().map(str::to_string),
            })
            .collect()
    }
}

/// A search's result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// The query as asked.
    pub query: String,
    /// The routes asked for.
    pub mode: RetrievalMode,
    /// What each route did.
    pub routes: Vec<RouteReport>,
    /// Why the dense route is missing, when it is.
    pub notice: Option<String>,
    /// Evidence in rank order.
    pub hits: Vec<Hit>,
    /// Hits dropped by the revision check (stale, deleted, invisible).
    pub dropped: Vec<zhiku_domain::usecases::Dropped>,
    /// Wall time of the search in the service, in milliseconds.
    pub latency_ms: f64,
}

/// A document to add or replace.
#[derive(Debug, Clone, Default)]
pub struct NewDocument {
    /// Its ID (stable across updates).
    pub id: String,
    /// Path of its file relative to the knowledge-base root (default: `api/<id>.md`).
    pub path: Option<String>,
    /// Title (default: the first heading).
    pub title: Option<String>,
    /// The Markdown body, without front matter (the attributes go in the other fields).
    pub text: String,
    /// Scope (default: the caller's first scope); must be one of the caller's.
    pub scope: Option<String>,
    /// Its language tag (`zh-CN`, `en`), when known.
    pub locale: Option<String>,
    /// `key: value` attributes a search can filter on (`id`, `title`, `scope`, `locale` are
    /// reserved).
    pub metadata: BTreeMap<String, Value>,
}

/// What an ingest did.
#[derive(Debug, Clone, Serialize)]
pub struct Ingested {
    /// The document written.
    pub doc_id: String,
    /// Its file, relative to the knowledge-base root.
    pub path: String,
    /// The content hash of what was written.
    pub revision: String,
    /// The IDs of its chunks now in both indexes.
    pub chunk_ids: Vec<String>,
    /// What the indexer did.
    pub report: IndexReport,
}

/// A chunk of a document, for showing where a citation points.
#[derive(Debug, Clone, Serialize)]
pub struct ChunkView {
    /// The chunk's ID, as citations name it.
    pub chunk_id: String,
    /// Headings above it.
    pub heading_path: Vec<String>,
    /// The section it sits in.
    pub section: String,
    /// The pages of the document it lies on (a PDF's), as `[first, last]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<zhiku_domain::PageSpan>,
    /// Offset of its first character (Unicode scalar value, not byte) in the document's text.
    pub start: usize,
    /// Offset after its last character.
    pub end: usize,
    /// Its text: the document's own, from `start` to `end`.
    pub content: String,
    /// The header rows of the table it continues, indexed and shown with it (not part of
    /// `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_header: Option<String>,
}

impl ChunkView {
    /// The view of `c`.
    pub fn of(c: &zhiku_domain::Chunk) -> Self {
        Self {
            chunk_id: c.chunk_id().to_string(),
            heading_path: c.heading_path().to_vec(),
            section: c.section().to_string(),
            pages: c.pages(),
            start: c.start(),
            end: c.end(),
            content: c.content().to_string(),
            table_header: c.table_header().map(str::to_string),
        }
    }
}

/// A document, or one section of it with its subsections, read in order.
#[derive(Debug, Clone, Serialize)]
pub struct SectionView {
    /// The document's ID.
    pub doc_id: String,
    /// Its title as it reads now.
    pub title: String,
    /// Its file relative to the knowledge-base root.
    pub source: String,
    /// The scope that decides who may read it.
    pub scope: String,
    /// The revision (content hash) the text was read at.
    pub revision: String,
    /// The section read; the whole document's when none was asked for.
    pub section: String,
    /// Its headings, outermost first (empty for the whole document).
    pub heading_path: Vec<String>,
    /// Its text, in reading order.
    pub text: String,
    /// Characters of `text`.
    pub chars: usize,
    /// The sections within it (itself first), in document order.
    pub outline: Vec<zhiku_domain::rules::section::SectionEntry>,
    /// Its chunks, in document order: what citations name.
    pub chunks: Vec<ChunkView>,
}

/// A document as the caller may read it.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentView {
    /// The document's ID.
    pub id: String,
    /// Its title as it reads now.
    pub title: String,
    /// Its file relative to the knowledge-base root (a corpus passage: `corpus.jsonl#id`).
    pub source: String,
    /// The scope that decides who may read it.
    pub scope: String,
    /// Locale, when declared.
    pub locale: Option<String>,
    /// Revision (content hash).
    pub revision: String,
    /// Its filterable attributes.
    pub metadata: BTreeMap<String, Value>,
    /// Its body as the source holds it now (chunk offsets point into it).
    pub text: String,
    /// Its chunks under the current chunking policy.
    pub chunks: Vec<ChunkView>,
    /// When its current version was indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_at: Option<Timestamp>,
    /// When it stops being evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// The knowledge base's state, as a caller may see it.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Documents in the caller's scopes.
    pub documents: usize,
    /// The chunks of those documents in the indexes.
    pub chunks: usize,
    /// The caller's scopes.
    pub scopes: Vec<String>,
    /// Whether the caller may write.
    pub write: bool,
    /// The configuration profile the server runs (`dev`, `local`, `prod` or a custom one).
    pub profile: String,
    /// Adapters picked and why.
    pub adapters: BTreeMap<String, String>,
    /// The embedding space of the dense route, when there is one.
    pub embedding_space: Option<String>,
    /// Why there is no dense route, when there is none.
    pub dense_notice: Option<String>,
    /// What writes answers, with its model where there is one.
    pub generator: String,
    /// `folder` or `beir`.
    pub origin: Option<String>,
    /// Seconds since the service started.
    pub uptime_s: u64,
}

/// A synced source as the service last heard of it (for the operator: `/metrics`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceStatus {
    /// Its name (`sources/<name>/` in the folder).
    pub name: String,
    /// `git`, `web` or `webdav`.
    pub kind: String,
    /// Where it is (no credential).
    pub location: String,
    /// Seconds between two scheduled syncs.
    pub every_s: u64,
    /// Items its mirror holds.
    pub items: usize,
    /// How its last sync ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<zhiku_domain::ports::SyncOutcome>,
    /// When its last complete sync began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_success: Option<Timestamp>,
    /// True while it is being synced.
    pub syncing: bool,
}
