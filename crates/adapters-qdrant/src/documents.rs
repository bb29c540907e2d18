//! [`QdrantDocuments`]: a knowledge base's documents in a Qdrant collection, so that a replica
//! on any machine reads a document, re-checks a hit against its current revision and writes a
//! document through the API without a folder of its own.
//!
//! One point per document, without vectors: its ID and path (payload indexes), its revision,
//! its attributes and its text, as loaded (a file's extraction ran where it was read: nothing is
//! parsed here). A document put through the API is built from the request as the folder store
//! would read it back (title from the request or the first heading, locale from the request or
//! detected), without a file. `zhiku index` of a folder fills the collection
//! ([`QdrantDocuments::put_documents`], [`QdrantDocuments::remove_documents`]).

use std::collections::{BTreeMap, HashMap};

use qdrant_client::Payload;
use qdrant_client::qdrant::{
    DeletePointsBuilder, FieldType, GetPointsBuilder, PointId, PointStruct, PointsIdsList,
    RetrievedPoint,
};
use zhiku_domain::ports::{
    DocumentError, DocumentStore, DocumentStoreCapabilities, IndexError, KnownFile,
    LoadedDocuments, PreparedPut, PutRequest, SourceError, SourcePaths, SourceStore, Staged,
};
use zhiku_domain::{DocAttributes, DocId, Document, Locale, Metadata, Source, SourceRecord, Title};

use crate::collection::{Collection, OpenError, PAGE, PayloadIndex};
use crate::config::QdrantConfig;
use crate::payload::{string_field, uuid_of};

/// Format of the record zhiku keeps in a documents collection's metadata.
const FORMAT: &str = "zhiku-qdrant-documents/1";
/// The adapter's name, as `status` shows the origin kind.
const ADAPTER: &str = "qdrant";
const ID: &str = "doc_id";
const PATH: &str = "path";
const REVISION: &str = "revision";
const ATTRIBUTES: &str = "attributes";
const TEXT: &str = "text";
/// True for a document `zhiku index` brought from a folder, false for one put through the API.
const FROM_FOLDER: &str = "from_folder";
const FIELDS: &[PayloadIndex] = &[
    (ID, FieldType::Keyword, false),
    (PATH, FieldType::Keyword, false),
];
/// Longest path a put may name, in bytes.
const MAX_PATH: usize = 512;

/// The documents of a knowledge base in one Qdrant collection (see the module documentation).
pub struct QdrantDocuments {
    collection: std::sync::Arc<Collection>,
}

impl std::fmt::Debug for QdrantDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantDocuments")
            .field("url", &self.collection.config.url)
            .field("collection", &self.collection.name)
            .finish()
    }
}

fn io(e: IndexError) -> DocumentError {
    DocumentError::Io(e.to_string())
}

/// The point of a document: a UUID from the sha256 of its ID.
fn doc_point(id: &DocId) -> PointId {
    uuid_of(&format!("document\0{id}")).into()
}

/// The point that keeps `doc` at `path` (brought from a folder, or put through the API).
fn to_point(doc: &Document, path: &str, from_folder: bool) -> Result<PointStruct, DocumentError> {
    let attributes = serde_json::to_string(&**doc.attributes())
        .map_err(|e| DocumentError::Io(format!("cannot encode {}: {e}", doc.id())))?;
    let payload = Payload::try_from(serde_json::json!({
        ID: doc.id().as_str(),
        PATH: path,
        REVISION: doc.revision().to_string(),
        ATTRIBUTES: attributes,
        TEXT: doc.content(),
        FROM_FOLDER: from_folder,
    }))
    .map_err(|e| DocumentError::Io(format!("cannot encode {}: {e}", doc.id())))?;
    Ok(PointStruct::new(
        doc_point(doc.id()),
        HashMap::<String, Vec<f32>>::new(),
        payload,
    ))
}

/// A document kept in the collection.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The document.
    pub document: Document,
    /// Its path.
    pub path: String,
    /// True when `zhiku index` brought it from a folder, false when it was put through the API.
    pub from_folder: bool,
}

/// The document a point keeps and its path; its stored revision must be its text's.
fn from_point(point: &RetrievedPoint) -> Result<Kept, DocumentError> {
    let field = |key| {
        string_field(&point.payload, key)
            .ok_or_else(|| DocumentError::Io(format!("a stored document has no {key}")))
    };
    let id = DocId::new(field(ID)?).map_err(|e| DocumentError::Io(e.to_string()))?;
    let attributes: DocAttributes = serde_json::from_str(&field(ATTRIBUTES)?)
        .map_err(|e| DocumentError::Io(format!("stored document {id}: {e}")))?;
    let mut builder = Document::builder(id.clone(), attributes.source.clone(), field(TEXT)?)
        .scope(attributes.scope.clone())
        .locale(attributes.locale.clone())
        .title(attributes.title.clone())
        .metadata(attributes.metadata.clone());
    if let Some(pages) = attributes.page_count {
        builder = builder.page_count(pages);
    }
    let doc = builder.build().with_expiry(attributes.expires_at);
    if doc.revision() != &attributes.revision {
        return Err(DocumentError::Io(format!(
            "stored document {id} is corrupt: its text is not revision {}",
            attributes.revision
        )));
    }
    let from_folder = matches!(
        point.payload.get(FROM_FOLDER).and_then(|v| v.kind.as_ref()),
        Some(qdrant_client::qdrant::value::Kind::BoolValue(true))
    );
    Ok(Kept {
        document: doc,
        path: field(PATH)?,
        from_folder,
    })
}

/// A path a put may name: relative, `/`-separated, without empty, `.` or `..` parts or control
/// characters.
fn check_path(path: &str) -> Result<(), DocumentError> {
    let bad = path.is_empty()
        || path.len() > MAX_PATH
        || path.starts_with('/')
        || path.chars().any(|c| c.is_control() || c == '\\')
        || path
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(DocumentError::Invalid(format!(
            "{path:?} is not a relative path of at most {MAX_PATH} bytes without empty, . or .. parts"
        )));
    }
    Ok(())
}

impl QdrantDocuments {
    /// Opens the documents collection of knowledge base `kb` (see
    /// [`QdrantConfig::tagged_collection_name`]), creating it when it does not exist.
    pub fn open(config: &QdrantConfig, kb: &str) -> Result<Self, DocumentError> {
        Self::open_collection(config, &config.tagged_collection_name(kb, "documents"))
    }

    /// Opens or creates the documents collection `name`.
    pub fn open_collection(config: &QdrantConfig, name: &str) -> Result<Self, DocumentError> {
        let collection =
            Collection::open_records(config, name, FORMAT, FIELDS, false).map_err(|e| match e {
                OpenError::Index(e) => io(e),
                OpenError::NotFormat(_) => DocumentError::Io(format!(
                    "Qdrant collection {name} is not a {FORMAT} collection"
                )),
            })?;
        Ok(Self {
            collection: std::sync::Arc::new(collection),
        })
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection.name
    }

    /// The same store, whose collection is deleted when it is dropped.
    pub fn dropped_with_handle(self) -> Self {
        match std::sync::Arc::try_unwrap(self.collection) {
            Ok(mut collection) => {
                collection.scratch = true;
                Self {
                    collection: std::sync::Arc::new(collection),
                }
            }
            Err(shared) => Self { collection: shared },
        }
    }

    /// Keeps each document at its path: read from a folder at that path (`from_folder`), or
    /// put through the API.
    pub fn put_documents(
        &self,
        docs: &[(&Document, &str)],
        from_folder: bool,
    ) -> Result<(), DocumentError> {
        let points = docs
            .iter()
            .map(|(doc, path)| to_point(doc, path, from_folder))
            .collect::<Result<Vec<_>, _>>()?;
        self.collection.upsert(points).map_err(io)
    }

    /// Forgets the listed documents.
    pub fn remove_documents(&self, ids: &[DocId]) -> Result<(), DocumentError> {
        let c = &self.collection;
        c.run(async {
            for part in ids.chunks(PAGE) {
                let points: Vec<PointId> = part.iter().map(doc_point).collect();
                c.retry("remove documents", |client| {
                    client.delete_points(
                        DeletePointsBuilder::new(&c.name)
                            .points(PointsIdsList {
                                ids: points.clone(),
                            })
                            .wait(true),
                    )
                })
                .await?;
            }
            Ok(())
        })
        .map_err(io)
    }

    /// Every document kept, sorted by ID.
    pub fn all(&self) -> Result<Vec<Kept>, DocumentError> {
        let points = self
            .collection
            .scroll("read the documents", None, None)
            .map_err(io)?;
        let mut docs = points
            .iter()
            .map(from_point)
            .collect::<Result<Vec<_>, _>>()?;
        docs.sort_by(|a, b| a.document.id().cmp(b.document.id()));
        Ok(docs)
    }

    /// The stamp [`DocumentStore::load_all`] gives a kept document's path.
    pub fn stamp(doc: &Document) -> String {
        format!("revision {}", doc.revision())
    }

    /// The document kept as `id`.
    fn get(&self, id: &DocId) -> Result<Option<Kept>, DocumentError> {
        let c = &self.collection;
        let points = c
            .run(async {
                c.retry("read a document", |client| {
                    client.get_points(
                        GetPointsBuilder::new(&c.name, vec![doc_point(id)]).with_payload(true),
                    )
                })
                .await
            })
            .map_err(io)?
            .result;
        points.first().map(from_point).transpose()
    }

    /// Puts `id` back as `previous` was (absent when `None`).
    fn restore(&self, id: &DocId, previous: Option<&Kept>) {
        let restored = match previous {
            Some(kept) => {
                self.put_documents(&[(&kept.document, kept.path.as_str())], kept.from_folder)
            }
            None => self.remove_documents(std::slice::from_ref(id)),
        };
        if let Err(e) = restored {
            eprintln!("warning: could not restore document {id} in the cluster: {e}");
        }
    }
}

/// A change to the collection that can be taken back.
struct Undo {
    store: QdrantDocuments,
    id: DocId,
    previous: Option<Kept>,
}

impl Staged for Undo {
    fn undo(self: Box<Self>) {
        self.store.restore(&self.id, self.previous.as_ref());
    }

    fn keep(self: Box<Self>) {}
}

/// Hits re-checked against the revision the collection keeps now.
struct Revisions<'a>(&'a QdrantDocuments);

impl SourceStore for Revisions<'_> {
    fn lookup(&self, doc: &DocId) -> Result<Option<SourceRecord>, SourceError> {
        let found = self.0.get(doc).map_err(|e| SourceError::Unavailable {
            adapter: ADAPTER,
            message: e.to_string(),
        })?;
        Ok(found.map(|kept| SourceRecord {
            revision: kept.document.revision().clone(),
            scope: kept.document.attributes().scope.clone(),
            visible: true,
        }))
    }
}

impl DocumentStore for QdrantDocuments {
    fn capabilities(&self) -> DocumentStoreCapabilities {
        DocumentStoreCapabilities {
            adapter: ADAPTER,
            writable: true,
        }
    }

    /// Every document kept; each path's stamp is its document's revision.
    fn load_all(&self) -> Result<LoadedDocuments, DocumentError> {
        let mut loaded = LoadedDocuments::default();
        for kept in self.all()? {
            loaded.stamps.insert(kept.path, Self::stamp(&kept.document));
            loaded.documents.push(kept.document);
        }
        Ok(loaded)
    }

    fn load_changed(
        &self,
        known: &BTreeMap<String, KnownFile>,
    ) -> Result<LoadedDocuments, DocumentError> {
        let mut loaded = self.load_all()?;
        let (changed, unchanged): (Vec<Document>, Vec<Document>) =
            std::mem::take(&mut loaded.documents)
                .into_iter()
                .partition(|doc| {
                    let path = doc.attributes().source.to_string();
                    !known.get(&path).is_some_and(|k| {
                        &k.doc == doc.id() && loaded.stamps.get(&path) == Some(&k.stamp)
                    })
                });
        loaded.documents = changed;
        loaded.unchanged = unchanged
            .iter()
            .map(|d| d.attributes().source.to_string())
            .collect();
        Ok(loaded)
    }

    fn read(&self, id: &DocId, path: &str) -> Result<Option<Document>, DocumentError> {
        Ok(self
            .get(id)?
            .filter(|kept| kept.path == path)
            .map(|kept| kept.document))
    }

    fn source_store<'a>(&'a self, _recorded: &'a dyn SourcePaths) -> Box<dyn SourceStore + 'a> {
        Box::new(Revisions(self))
    }

    fn prepare_put(&self, put: &PutRequest<'_>) -> Result<PreparedPut, DocumentError> {
        let not_found =
            |path: &str| DocumentError::NotFound(format!("no document of yours at {path:?}"));
        let own = put.recorded.get(put.id);
        let path = match (put.path, own) {
            (Some(path), _) => path.to_string(),
            (None, Some(recorded)) => recorded.clone(),
            (None, None) => format!("api/{}.md", put.id),
        };
        check_path(&path)?;
        if let Some((other, _)) = put
            .recorded
            .iter()
            .find(|(other, p)| *other != put.id && p.as_str() == path)
        {
            return Err(if (put.visible)(other) {
                DocumentError::Conflict(format!("{path:?} holds document {other}"))
            } else {
                not_found(&path)
            });
        }
        if own.is_some() && !(put.visible)(put.id) {
            return Err(not_found(&path));
        }
        let previous = match own {
            Some(recorded) => self.read(put.id, recorded)?,
            None => None,
        };
        let mut metadata = Metadata::new();
        for (key, value) in put.metadata {
            metadata
                .insert(key, value.clone())
                .map_err(|e| DocumentError::Invalid(format!("metadata {key:?}: {e}")))?;
        }
        let title = put
            .title
            .or_else(|| zhiku_text::first_heading(put.text))
            .unwrap_or_default();
        let mut builder = Document::builder(
            put.id.clone(),
            Source::new(&path).map_err(|e| DocumentError::Invalid(e.to_string()))?,
            put.text,
        )
        .scope(put.scope.clone())
        .title(Title::new(title).map_err(|e| DocumentError::Invalid(e.to_string()))?)
        .metadata(metadata);
        if let Some(locale) = put.locale {
            builder = builder
                .locale(Locale::new(locale).map_err(|e| DocumentError::Invalid(e.to_string()))?);
        }
        let document = builder.build();
        let bytes = put.text.as_bytes().to_vec();
        Ok(PreparedPut {
            document,
            path,
            previous,
            bytes,
        })
    }

    fn write(&self, prepared: &PreparedPut) -> Result<Box<dyn Staged>, DocumentError> {
        let id = prepared.document.id().clone();
        let previous = self.get(&id)?;
        self.put_documents(&[(&prepared.document, prepared.path.as_str())], false)?;
        Ok(Box::new(Undo {
            store: self.share(),
            id,
            previous,
        }))
    }

    fn remove(
        &self,
        id: &DocId,
        path: &str,
        recorded: &BTreeMap<DocId, String>,
    ) -> Result<(Option<Document>, Box<dyn Staged>), DocumentError> {
        let _ = recorded;
        let previous = self.get(id)?.filter(|kept| kept.path == path);
        if previous.is_some() {
            self.remove_documents(std::slice::from_ref(id))?;
        }
        let current = previous.as_ref().map(|kept| kept.document.clone());
        Ok((
            current,
            Box::new(Undo {
                store: self.share(),
                id: id.clone(),
                previous,
            }),
        ))
    }
}

impl QdrantDocuments {
    /// Another handle onto the same collection and client.
    fn share(&self) -> Self {
        Self {
            collection: std::sync::Arc::clone(&self.collection),
        }
    }
}
