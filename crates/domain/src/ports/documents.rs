//! The document-store port: where an origin's documents are loaded from, read back and written.

use std::collections::BTreeMap;

use crate::contracts::{DocId, Document, Scope};

use super::source::{SourcePaths, SourceStore};

/// What a document store can do. An operation it does not support is refused with
/// [`DocumentError::Unsupported`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentStoreCapabilities {
    /// Adapter name, e.g. `folder`, `beir`; also the origin kind shown by `status`.
    pub adapter: &'static str,
    /// Documents can be put and removed.
    pub writable: bool,
}

/// A file the store could not load, and why (the rest is loaded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedFile {
    /// Its path relative to the store's root.
    pub path: String,
    /// Why it was skipped, in words.
    pub reason: String,
}

/// Everything a store holds now.
#[derive(Debug, Default)]
pub struct LoadedDocuments {
    /// The documents read this time, in a stable order.
    pub documents: Vec<Document>,
    /// Files that could not be loaded.
    pub skipped: Vec<SkippedFile>,
    /// Paths recognised by their stamp as unchanged since their document was indexed: they
    /// were not read, and the document recorded for each stands (only
    /// [`DocumentStore::load_changed`] fills this).
    pub unchanged: Vec<String>,
    /// The stamp of each path read or recognised, for the next
    /// [`DocumentStore::load_changed`]. A path the store cannot stamp reliably (a file written
    /// too recently to tell a later write apart) has none and is read again next time.
    pub stamps: BTreeMap<String, String>,
}

/// What the catalog recorded about one source path: the document read from it and the store's
/// stamp of the file at that time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownFile {
    /// The document the path held.
    pub doc: DocId,
    /// The stamp [`LoadedDocuments::stamps`] gave it.
    pub stamp: String,
}

/// A document to write, as the service has checked it: the caller may write to `scope`, and
/// `id` is a well-formed new or existing ID.
pub struct PutRequest<'a> {
    /// The document's ID.
    pub id: &'a DocId,
    /// Its scope.
    pub scope: &'a Scope,
    /// Where the caller asked it to live (raw, unchecked), if anywhere.
    pub path: Option<&'a str>,
    /// Its title, when given.
    pub title: Option<&'a str>,
    /// Its locale, when given.
    pub locale: Option<&'a str>,
    /// Its filterable metadata.
    pub metadata: &'a BTreeMap<String, serde_json::Value>,
    /// Its body.
    pub text: &'a str,
    /// Every recorded document's path.
    pub recorded: &'a BTreeMap<DocId, String>,
    /// Who may see which document: a path or file of a document outside this set is treated
    /// exactly as an unknown one.
    pub visible: &'a (dyn Fn(&DocId) -> bool + Sync),
    /// Which scopes the caller may see.
    pub sees: &'a (dyn Fn(&Scope) -> bool + Sync),
}

impl std::fmt::Debug for PutRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PutRequest")
            .field("id", self.id)
            .field("scope", self.scope)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A write checked and rendered, not yet made.
#[derive(Debug, Clone)]
pub struct PreparedPut {
    /// The document as the store will read it back once written.
    pub document: Document,
    /// Its path relative to the store's root.
    pub path: String,
    /// The document the path holds now (the caller's own), if any.
    pub previous: Option<Document>,
    /// The bytes that will be written.
    pub bytes: Vec<u8>,
}

/// A change made to the store that can still be taken back. Dropping it keeps the change.
pub trait Staged: Send {
    /// Puts the store back as it was before the change.
    fn undo(self: Box<Self>);
    /// Makes the change final (releases what was kept for an undo).
    fn keep(self: Box<Self>);
}

/// Which page picture [`DocumentStore::page_png`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// The page, from 1.
    pub page: u32,
    /// Clockwise quarter turns (0–3), as a citation's box says.
    pub turn: u16,
    /// Most pixels of the PNG's longer side.
    pub max_side: u32,
}

/// The documents of one origin (a folder, a corpus file).
///
/// # Contract
///
/// - [`load_all`](Self::load_all) returns every document the store holds now; a file that
///   cannot be loaded is reported in `skipped` (by path and reason) and MUST NOT fail the load.
/// - [`load_changed`](Self::load_changed) MAY leave out a `known` path whose stamp is
///   unchanged, listing it in `unchanged` instead of reading it; what it returns, with the
///   `known` document of each unchanged path, MUST equal what `load_all` returns now (the same
///   documents with the same fingerprints, the same skipped paths). A stamp MUST change
///   whenever anything the path's document is derived from changes (its bytes, a companion
///   file, the store's loading settings); when the store cannot be sure, it reads the file.
/// - [`read`](Self::read) returns the document recorded at `path` as it is now, `Ok(None)` when
///   it is gone or now claims another ID.
/// - [`source_store`](Self::source_store) re-checks hits against the store's current state.
/// - A store whose capabilities say `writable: false` MUST refuse
///   [`prepare_put`](Self::prepare_put) and [`remove`](Self::remove) with
///   [`DocumentError::Unsupported`] and change nothing.
/// - A writable store: `prepare_put` changes nothing; it MUST refuse (as
///   [`DocumentError::NotFound`], the words of an unknown document) a path, file or companion
///   file belonging to a document the request's `visible` does not include. [`write`](Self::write)
///   makes the prepared change; its [`Staged::undo`] MUST restore the previous bytes (or absence)
///   of the path. `remove` takes a document's file out of the store; its `undo` MUST put it back.
pub trait DocumentStore: Send + Sync {
    /// What this store can do.
    fn capabilities(&self) -> DocumentStoreCapabilities;

    /// Every document the store holds now.
    fn load_all(&self) -> Result<LoadedDocuments, DocumentError>;

    /// Every document the store holds now, except that a path of `known` whose stamp is
    /// unchanged is listed in `unchanged` rather than read. Stores without stamps read
    /// everything.
    fn load_changed(
        &self,
        known: &BTreeMap<String, KnownFile>,
    ) -> Result<LoadedDocuments, DocumentError> {
        let _ = known;
        self.load_all()
    }

    /// The document recorded as `id` at `path`, as it reads now.
    fn read(&self, id: &DocId, path: &str) -> Result<Option<Document>, DocumentError>;

    /// The bytes of the file the document recorded as `id` at `path` was read from (a PDF, to
    /// open at a cited page), or `None` when the store keeps no such file. The caller has
    /// checked, through [`read`](Self::read), that the path still holds this document and that
    /// it may see it; the store still refuses a path it would not read.
    fn original(&self, id: &DocId, path: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        let _ = (id, path);
        Ok(None)
    }

    /// The picture of a page of the file document `id` was read from at `path`, as PNG: a
    /// picture file's page (each of a TIFF's) or a PDF page without a text layer (its scan),
    /// turned and bounded as `page` says. `None` when the store keeps no such file or the page
    /// has no picture (a PDF page with a text layer). The caller has checked that it may see
    /// the document, as for [`original`](Self::original); the file is parsed where a crash
    /// costs only this request.
    fn page_png(
        &self,
        id: &DocId,
        path: &str,
        page: PageRequest,
    ) -> Result<Option<Vec<u8>>, DocumentError> {
        let _ = (id, path, page);
        Ok(None)
    }

    /// The source of truth hits are re-checked against, given each document's recorded path.
    /// It borrows the recorded paths: a search builds one per query, so it must not copy them,
    /// and asks them only for the documents it checks.
    fn source_store<'a>(&'a self, recorded: &'a dyn SourcePaths) -> Box<dyn SourceStore + 'a>;

    /// The local folder the store lives in, if it is one. The service never shows it to a
    /// caller: messages name paths relative to it.
    fn root(&self) -> Option<&std::path::Path> {
        None
    }

    /// Finishes what a writer killed mid-change left behind, given the recorded paths; returns
    /// one line per repair. Stores without such state do nothing.
    fn settle(&self, recorded: &[&str]) -> Vec<String> {
        let _ = recorded;
        Vec::new()
    }

    /// Checks and renders a write.
    fn prepare_put(&self, put: &PutRequest<'_>) -> Result<PreparedPut, DocumentError> {
        let _ = put;
        Err(self.unsupported("adding documents"))
    }

    /// Makes a prepared write.
    fn write(&self, prepared: &PreparedPut) -> Result<Box<dyn Staged>, DocumentError> {
        let _ = prepared;
        Err(self.unsupported("adding documents"))
    }

    /// Takes the document `id` recorded at `path` out of the store (with companion files no
    /// other recorded path uses). Returns the document as it read before, if it could be read.
    fn remove(
        &self,
        id: &DocId,
        path: &str,
        recorded: &BTreeMap<DocId, String>,
    ) -> Result<(Option<Document>, Box<dyn Staged>), DocumentError> {
        let _ = (id, path, recorded);
        Err(self.unsupported("removing documents"))
    }

    /// The [`DocumentError::Unsupported`] of `operation` on this store.
    fn unsupported(&self, operation: &'static str) -> DocumentError {
        DocumentError::Unsupported {
            adapter: self.capabilities().adapter,
            operation,
        }
    }
}

/// Why a document-store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// The request is malformed (a bad path, a reserved metadata key). Not temporary.
    #[error("{0}")]
    Invalid(String),
    /// Nothing the caller may see is there. Not temporary.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what is stored. Not temporary.
    #[error("{0}")]
    Conflict(String),
    /// This store does not do that.
    #[error("the {adapter} document store does not support {operation}")]
    Unsupported {
        /// Adapter name.
        adapter: &'static str,
        /// What was asked.
        operation: &'static str,
    },
    /// The store cannot be read or written now. Maybe temporary.
    #[error("{0}")]
    Io(String),
}

impl DocumentError {
    /// True when retrying later can help.
    pub fn is_temporary(&self) -> bool {
        matches!(self, DocumentError::Io(_))
    }
}
