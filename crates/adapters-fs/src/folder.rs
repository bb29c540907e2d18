//! The knowledge-base folder as a writable [`DocumentStore`]: Markdown and text files with
//! front matter and sidecar metadata, written under the path rules of [`crate::paths`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use zhiku_domain::ports::{
    DocumentError, DocumentStore, DocumentStoreCapabilities, KnownFile, LoadedDocuments,
    PageRequest, PreparedPut, PutRequest, SourcePaths, SourceStore, Staged,
};
use zhiku_domain::{DocId, Document};

use crate::folder_source::FolderSource;
use crate::loader::{LoaderConfig, load_folder, load_folder_changed, load_path, load_text};
use crate::paths::{
    Found, KbPath, MovedAside, PathError, SIDECAR_SUFFIX, check_recorded, inspect, move_aside,
    own_sidecar_of, scan_ignores, settle_leftovers, sidecar_of, write_file,
};

/// A folder of documents.
#[derive(Debug, Clone)]
pub struct FolderDocuments {
    root: PathBuf,
    config: LoaderConfig,
}

impl FolderDocuments {
    /// The folder at `root` (absolute), loaded with `config`.
    pub fn new(root: PathBuf, config: LoaderConfig) -> Self {
        Self { root, config }
    }

    /// The folder's root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// "Not found" for a path whose file or sidecar is not the caller's document.
fn no_document_at(rel: &str) -> DocumentError {
    DocumentError::NotFound(format!("no document of yours at {rel:?}"))
}

/// A path check's error for a request naming `rel`.
fn path_error(e: PathError, rel: &str) -> DocumentError {
    match e {
        PathError::Invalid(m) => DocumentError::Invalid(m),
        // What is in the way may be another scope's: answered exactly as a path holding
        // another scope's document.
        PathError::Occupied(_) => no_document_at(rel),
        PathError::Io(m) => DocumentError::Io(m),
    }
}

/// `api/<id>.md`, with characters that do not belong in a file name replaced.
pub fn default_path(id: &DocId) -> String {
    let name: String = id
        .as_str()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name: String = unicode_normalization::UnicodeNormalization::nfc(name.as_str()).collect();
    let name = name.trim_start_matches('.');
    if name.ends_with(".md") {
        format!("api/{name}")
    } else {
        format!("api/{name}.md")
    }
}

/// The Markdown file of a document: YAML front matter with its attributes, then the body.
fn render_markdown(put: &PutRequest<'_>) -> Result<String, DocumentError> {
    let mut front: BTreeMap<String, Value> = BTreeMap::new();
    for (k, v) in put.metadata {
        if matches!(k.as_str(), "id" | "title" | "scope" | "locale") {
            return Err(DocumentError::Invalid(format!(
                "metadata key {k:?} is reserved; use the request's field"
            )));
        }
        zhiku_domain::Metadata::check_key(k).map_err(|e| DocumentError::Invalid(e.to_string()))?;
        front.insert(k.clone(), v.clone());
    }
    front.insert("id".into(), Value::String(put.id.to_string()));
    front.insert("scope".into(), Value::String(put.scope.to_string()));
    if let Some(t) = put.title {
        front.insert("title".into(), Value::String(t.to_string()));
    }
    if let Some(l) = put.locale {
        front.insert("locale".into(), Value::String(l.to_string()));
    }
    let yaml = serde_yaml_ng::to_string(&front).map_err(|e| DocumentError::Io(e.to_string()))?;
    Ok(format!("---\n{yaml}---\n{}", put.text))
}

/// A file written over what the path held: undone by writing the old bytes back (or removing
/// the new file).
struct Written {
    root: PathBuf,
    rel: String,
    previous: Option<Vec<u8>>,
}

impl Staged for Written {
    fn undo(self: Box<Self>) {
        let _ = match &self.previous {
            Some(old) => write_file(&self.root, &self.rel, old).map_err(|e| e.to_string()),
            None => std::fs::remove_file(self.root.join(&self.rel)).map_err(|e| e.to_string()),
        };
    }

    fn keep(self: Box<Self>) {}
}

/// Files moved aside: undone by moving them back, kept by deleting them.
struct MovedFiles(Vec<MovedAside>);

impl MovedFiles {
    fn put_back(self) {
        for m in self.0.into_iter().rev() {
            let _ = m.restore();
        }
    }
}

impl Staged for MovedFiles {
    fn undo(self: Box<Self>) {
        self.put_back();
    }

    fn keep(self: Box<Self>) {
        for m in self.0 {
            // A leftover is a hidden file, which the folder scan never reads.
            let _ = m.discard();
        }
    }
}

impl DocumentStore for FolderDocuments {
    fn capabilities(&self) -> DocumentStoreCapabilities {
        DocumentStoreCapabilities {
            adapter: "folder",
            writable: true,
        }
    }

    fn root(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn load_all(&self) -> Result<LoadedDocuments, DocumentError> {
        load_folder(&self.root, &self.config).map_err(|e| DocumentError::Io(format!("{e:#}")))
    }

    fn load_changed(
        &self,
        known: &BTreeMap<String, KnownFile>,
    ) -> Result<LoadedDocuments, DocumentError> {
        load_folder_changed(&self.root, &self.config, known)
            .map_err(|e| DocumentError::Io(format!("{e:#}")))
    }

    fn read(&self, _id: &DocId, path: &str) -> Result<Option<Document>, DocumentError> {
        load_path(&self.root.join(path), path, &self.config)
            .map(Some)
            .map_err(|e| DocumentError::Io(format!("{e:#}")))
    }

    fn original(&self, _id: &DocId, path: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        crate::loader::read_original(&self.root.join(path), path, &self.config)
            .map(Some)
            .map_err(|e| DocumentError::Io(format!("{e:#}")))
    }

    fn page_png(
        &self,
        _id: &DocId,
        path: &str,
        page: PageRequest,
    ) -> Result<Option<Vec<u8>>, DocumentError> {
        crate::loader::page_png(
            &self.root.join(path),
            path,
            (page.page, page.turn, page.max_side),
            &self.config,
        )
        .map_err(|e| DocumentError::Io(format!("{e:#}")))
    }

    fn source_store<'a>(&'a self, recorded: &'a dyn SourcePaths) -> Box<dyn SourceStore + 'a> {
        Box::new(FolderSource::new(&self.root, recorded, &self.config))
    }

    fn settle(&self, recorded: &[&str]) -> Vec<String> {
        settle_leftovers(&self.root, recorded)
            .into_iter()
            .map(|done| format!("{done:?}"))
            .collect()
    }

    fn prepare_put(&self, put: &PutRequest<'_>) -> Result<PreparedPut, DocumentError> {
        let id = put.id;
        let requested = put
            .path
            .map(KbPath::parse)
            .transpose()
            .map_err(|e| path_error(e, put.path.unwrap_or_default()))?;
        let root = &self.root;
        let visible = put.visible;
        let recorded = put.recorded.get(id).cloned();
        // Another scope's document, or one whose owner cannot be read now (its file is
        // broken and its indexed version is kept): answered as an unknown one, untouched.
        if recorded.is_some() && !visible(id) {
            return Err(DocumentError::NotFound(format!(
                "no document {:?}",
                id.as_str()
            )));
        }
        let rel = match (&requested, &recorded) {
            (Some(p), Some(r)) if p.as_str() != r => {
                return Err(DocumentError::Conflict(format!(
                    "document {:?} lives at {r}; it cannot move to {p}",
                    id.as_str()
                )));
            }
            (Some(p), _) => p.as_str().to_string(),
            (None, Some(r)) => {
                check_recorded(r).map_err(|e| path_error(e, r))?;
                r.clone()
            }
            (None, None) => KbPath::parse(&default_path(id))
                .map_err(|e| path_error(e, &default_path(id)))?
                .as_str()
                .to_string(),
        };
        let mine = recorded.as_deref() == Some(rel.as_str());
        if let Some(why) = scan_ignores(root, &rel, &self.config) {
            return Err(DocumentError::Invalid(format!(
                "path {rel:?} would not be seen by the folder scan ({why}); choose another path"
            )));
        }
        // The path, and the sidecar the loader would merge into it, belong to no document
        // the caller cannot see.
        let sidecar = sidecar_of(&rel);
        // Every recorded path is compared, so the loop must cost a comparison, not an
        // allocation: a path sharing the sidecar starts with the sidecar's folder and stem (at
        // 726,000 documents, building each path's sidecar name was most of an ingest).
        let stem = sidecar.strip_suffix(SIDECAR_SUFFIX).unwrap_or(&sidecar);
        for (other, p) in put.recorded {
            if other == id {
                continue;
            }
            if *p == rel && visible(other) {
                return Err(DocumentError::Conflict(format!(
                    "{rel} already holds document {:?}",
                    other.as_str()
                )));
            }
            if *p == rel || (p.starts_with(stem) && sidecar_of(p) == sidecar && !visible(other)) {
                return Err(no_document_at(&rel));
            }
        }
        let found = inspect(root, &rel).map_err(|e| path_error(e, &rel))?;
        let sidecar_found = inspect(root, &sidecar).map_err(|e| path_error(e, &rel))?;
        let path = root.join(&rel);
        // A file already there must be this caller's own document, as it reads now.
        let previous = match found {
            Found::Nothing => None,
            Found::File if !mine => return Err(no_document_at(&rel)),
            Found::File => match load_path(&path, &rel, &self.config) {
                Ok(d) if d.id() == id && (put.sees)(&d.attributes().scope) => Some(d),
                _ => return Err(no_document_at(&rel)),
            },
        };
        let own_found = inspect(root, &own_sidecar_of(&rel)).map_err(|e| path_error(e, &rel))?;
        if (sidecar_found == Found::File || own_found == Found::File) && previous.is_none() {
            return Err(no_document_at(&rel));
        }
        let text = render_markdown(put)?;
        let document = load_text(&path, &rel, &text, &self.config)
            .map_err(|e| DocumentError::Invalid(format!("{e:#}")))?;
        if document.id() != id || document.attributes().scope != *put.scope {
            return Err(DocumentError::Invalid(
                "a sidecar metadata file beside this path overrides the document's id or scope"
                    .into(),
            ));
        }
        Ok(PreparedPut {
            document,
            path: rel,
            previous,
            bytes: text.into_bytes(),
        })
    }

    fn write(&self, prepared: &PreparedPut) -> Result<Box<dyn Staged>, DocumentError> {
        let rel = &prepared.path;
        let previous = match &prepared.previous {
            Some(_) => Some(
                std::fs::read(self.root.join(rel))
                    .map_err(|e| DocumentError::Io(format!("cannot read {rel}: {}", e.kind())))?,
            ),
            None => None,
        };
        write_file(&self.root, rel, &prepared.bytes).map_err(|e| path_error(e, rel))?;
        Ok(Box::new(Written {
            root: self.root.clone(),
            rel: rel.clone(),
            previous,
        }))
    }

    fn remove(
        &self,
        id: &DocId,
        path: &str,
        recorded: &BTreeMap<DocId, String>,
    ) -> Result<(Option<Document>, Box<dyn Staged>), DocumentError> {
        let cannot = |e: PathError| DocumentError::Conflict(format!("cannot delete: {e}"));
        check_recorded(path).map_err(cannot)?;
        let current = load_path(&self.root.join(path), path, &self.config).ok();
        let mut moved = MovedFiles(Vec::new());
        moved
            .0
            .extend(move_aside(&self.root, path).map_err(cannot)?);
        match move_aside(&self.root, &own_sidecar_of(path)) {
            Ok(m) => moved.0.extend(m),
            Err(e) => {
                moved.put_back();
                return Err(cannot(e));
            }
        }
        let sidecar = sidecar_of(path);
        let shared = recorded
            .iter()
            .any(|(other, p)| other != id && sidecar_of(p) == sidecar);
        if !shared {
            match move_aside(&self.root, &sidecar) {
                Ok(m) => moved.0.extend(m),
                Err(e) => {
                    moved.put_back();
                    return Err(cannot(e));
                }
            }
        }
        Ok((current, Box::new(moved)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_paths_are_safe_file_names() {
        assert_eq!(
            default_path(&DocId::new("team/a b").unwrap()),
            "api/team_a_b.md"
        );
        assert_eq!(default_path(&DocId::new("..x.md").unwrap()), "api/x.md");
    }
}
