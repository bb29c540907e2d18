//! Loading a knowledge-base folder into documents.
//!
//! The folder is walked recursively, honouring `.gitignore`, `.ignore` and `.zhikuignore` files
//! and skipping hidden files. Markdown (`.md`, `.markdown`) may carry YAML front matter and/or a
//! sidecar `<name>.metadata.yaml` (front matter wins on conflicts); `.txt` is plain text. Keys
//! `id`, `title`, `locale` and `scope` set the document's attributes; every key (including
//! `tags` and `category`) becomes filterable metadata. Without an `id` the document ID is the
//! path relative to the root, with `/` separators.
//!
//! Bad input never stops the load: each file that is not UTF-8, is binary, exceeds the size
//! limit, has malformed front matter or is a broken symlink is reported with its path and reason,
//! and every other document is still loaded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use zhiku_domain::{DocId, Document, Locale, Metadata, Scope, Source, Title};

/// Loader settings.
#[derive(Debug, Clone)]
pub struct LoaderConfig {
    /// Files larger than this are skipped.
    pub max_file_bytes: u64,
    /// Scope of documents that do not declare one.
    pub default_scope: Scope,
}

impl Default for LoaderConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            default_scope: Scope::default_scope(),
        }
    }
}

/// A file that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Path relative to the knowledge-base root.
    pub path: String,
    /// Why, in words.
    pub reason: String,
}

/// The outcome of loading a folder.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Documents, sorted by path.
    pub docs: Vec<Document>,
    /// Files that could not be loaded.
    pub skipped: Vec<Skipped>,
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Loads every document under `root`.
pub fn load_folder(root: &Path, config: &LoaderConfig) -> Result<Loaded> {
    if !root.is_dir() {
        bail!("{} is not a directory", root.display());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    let mut loaded = Loaded::default();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .add_custom_ignore_filename(".zhikuignore")
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                loaded.skipped.push(Skipped {
                    path: root.display().to_string(),
                    reason: format!("cannot walk: {e}"),
                });
                continue;
            }
        };
        let path = entry.path().to_path_buf();
        let is_doc = matches!(
            path.extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("md" | "markdown" | "txt")
        );
        if !is_doc {
            continue;
        }
        if entry.path_is_symlink() && std::fs::metadata(&path).is_err() {
            loaded.skipped.push(Skipped {
                path: relative(root, &path),
                reason: "broken symlink".into(),
            });
            continue;
        }
        if path.is_file() {
            files.push(path);
        }
    }
    let mut owners: BTreeMap<DocId, String> = BTreeMap::new();
    let mut duplicates: BTreeMap<DocId, Vec<String>> = BTreeMap::new();
    for path in files {
        let rel = relative(root, &path);
        match load_path(&path, &rel, config) {
            Ok(doc) => {
                if let Some(first) = owners.get(doc.id()) {
                    duplicates
                        .entry(doc.id().clone())
                        .or_insert_with(|| vec![first.clone()])
                        .push(rel);
                } else {
                    owners.insert(doc.id().clone(), rel);
                    loaded.docs.push(doc);
                }
            }
            Err(reason) => loaded.skipped.push(Skipped {
                path: rel,
                reason: format!("{reason:#}"),
            }),
        }
    }
    // Two files claiming one ID: neither is trusted; both are reported.
    for (id, paths) in duplicates {
        loaded.docs.retain(|d| d.id() != &id);
        for p in &paths {
            loaded.skipped.push(Skipped {
                path: p.clone(),
                reason: format!(
                    "duplicate document id {id:?}, claimed by {}",
                    paths.join(" and ")
                ),
            });
        }
    }
    loaded.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(loaded)
}

/// Reads a file as UTF-8 text within the size limit, refusing binary content.
fn read_text(path: &Path, limit: u64) -> Result<String> {
    let meta = std::fs::metadata(path).context("cannot read file metadata")?;
    if meta.len() > limit {
        bail!(
            "file is {} bytes, larger than the {} byte limit (loader.max_file_bytes)",
            meta.len(),
            limit
        );
    }
    let bytes = std::fs::read(path).context("cannot read file")?;
    if bytes.contains(&0) {
        bail!("binary file (contains NUL bytes)");
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Splits YAML front matter from a Markdown body.
fn split_front_matter(text: &str) -> Result<(Option<&str>, &str)> {
    let rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(after) = rest
        .strip_prefix("---\n")
        .or_else(|| rest.strip_prefix("---\r\n"))
    else {
        return Ok((None, text));
    };
    let mut offset = 0;
    for line in after.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            let yaml = &after[..offset];
            let body = &after[offset + line.len()..];
            return Ok((Some(yaml), body));
        }
        offset += line.len();
    }
    bail!("malformed front matter: no closing '---' line")
}

fn parse_yaml(text: &str, what: &str) -> Result<BTreeMap<String, serde_json::Value>> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| anyhow::anyhow!("malformed {what}: {e}"))?;
    if !value.is_mapping() {
        bail!("malformed {what}: expected a mapping of keys to values");
    }
    let json = serde_json::to_value(value).map_err(|e| anyhow::anyhow!("malformed {what}: {e}"))?;
    match json {
        serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
        _ => bail!("malformed {what}: expected a mapping"),
    }
}

fn string_key(meta: &BTreeMap<String, serde_json::Value>, key: &str) -> Result<Option<String>> {
    match meta.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => bail!("front matter key {key:?} must be a string, found {other}"),
    }
}

/// Loads one file (`rel` is its path relative to the knowledge-base root).
pub fn load_path(path: &Path, rel: &str, config: &LoaderConfig) -> Result<Document> {
    let text = read_text(path, config.max_file_bytes)?;
    load_text(path, rel, &text, config)
}

/// Parses `text` as the content of the file at `path` (`rel` relative to the root), exactly as
/// [`load_path`] would once the file holds `text`; a sidecar beside `path` is read from disk.
pub fn load_text(path: &Path, rel: &str, text: &str, config: &LoaderConfig) -> Result<Document> {
    if text.len() as u64 > config.max_file_bytes {
        bail!(
            "{} bytes exceed the {} byte limit",
            text.len(),
            config.max_file_bytes
        );
    }
    if text.contains('\0') {
        bail!("binary content (contains NUL characters)");
    }
    let is_markdown = !rel.to_ascii_lowercase().ends_with(".txt");
    let (front, body) = if is_markdown {
        split_front_matter(text)?
    } else {
        (None, text)
    };
    let mut meta: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let sidecar = path.with_extension("metadata.yaml");
    if sidecar.is_file() {
        let yaml = read_text(&sidecar, config.max_file_bytes)
            .with_context(|| format!("sidecar {}", sidecar.display()))?;
        meta.extend(parse_yaml(&yaml, "sidecar metadata")?);
    }
    if let Some(yaml) = front {
        meta.extend(parse_yaml(yaml, "front matter")?);
    }
    let id = match string_key(&meta, "id")? {
        Some(id) => DocId::new(id)?,
        None => DocId::new(rel)?,
    };
    let title = match string_key(&meta, "title")? {
        Some(t) => t,
        None => first_heading(body).unwrap_or_else(|| {
            Path::new(rel)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
    };
    let mut builder = Document::builder(id, Source::new(rel)?, body.to_string())
        .title(Title::new(title.replace(['\r', '\n', '\t'], " ").trim())?)
        .scope(match string_key(&meta, "scope")? {
            Some(s) => Scope::new(s)?,
            None => config.default_scope.clone(),
        });
    if let Some(locale) = string_key(&meta, "locale")? {
        builder = builder.locale(Locale::new(locale)?);
    }
    let mut metadata = Metadata::new();
    for (key, value) in meta {
        if matches!(key.as_str(), "id" | "title" | "scope" | "locale") {
            continue;
        }
        metadata.insert(key, value)?;
    }
    Ok(builder.metadata(metadata).build())
}

fn first_heading(body: &str) -> Option<String> {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        let (fm, body) = split_front_matter("---\nid: a\n---\n# T\nbody\n").unwrap();
        assert_eq!(fm, Some("id: a\n"));
        assert_eq!(body, "# T\nbody\n");
        assert!(split_front_matter("---\nid: a\nno end").is_err());
        assert_eq!(split_front_matter("no front matter").unwrap().0, None);
    }
}
