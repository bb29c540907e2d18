//! Loading a knowledge-base folder into documents.
//!
//! The folder is walked recursively, honouring `.gitignore`, `.ignore` and `.zhikuignore` files
//! and skipping hidden files. Markdown (`.md`, `.markdown`) may carry YAML front matter and/or a
//! sidecar `<name>.metadata.yaml` (front matter wins on conflicts) and a sidecar of its own,
//! `<name>.<ext>.metadata.yaml`, which wins over both; `.txt` is plain text. PDF,
//! Word, HTML, EPUB, PowerPoint, CSV and Excel files are read by their
//! [extractors](zhiku_formats), chosen by content as well as extension; their sidecar plays the
//! part of front matter, and the title and language the file declares itself come next. Keys
//! `id`, `title`, `locale`, `scope` and `access` (who may read it: `user:NAME`, `group:NAME`,
//! `*`; one or a list) set the document's attributes; every other key (including
//! `tags` and `category`) becomes filterable metadata. Without an `id` the document ID is the
//! path relative to the root, with `/` separators.
//!
//! Text files (`.txt`, Markdown, CSV, HTML) are read as UTF-8, UTF-16 with a byte order mark,
//! or GB18030 (GBK) or Big5 told from their bytes ([`formats::decode_text_file`]).
//!
//! Bad input never stops the load: each file that is in none of those encodings, is binary,
//! exceeds a size, page or time limit, is damaged, encrypted or of an unsupported format, has
//! no text, has malformed front matter or is a broken symlink is reported with its path and
//! reason, and every other document is still loaded.
//!
//! Symbolic links never cross the knowledge-base root: a link (to a file or a folder, the file
//! itself or any folder above it) whose target lies outside the root is skipped with that reason,
//! at scan time and whenever a file is re-read. Links inside the root are followed only with
//! [`LoaderConfig::follow_links_inside`] (`follow_links_inside = true` in `zhiku.toml`; off by
//! default), otherwise skipped with that reason too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use zhiku_domain::ports::{KnownFile, LoadedDocuments, SkippedFile};
use zhiku_domain::{
    Access, AccessRule, DocId, Document, LineBox, Locale, Metadata, PageBox, Scope, Source, Title,
};

use crate::stamp::Stamper;
use zhiku_formats::{self as formats, Format, Limits};

pub use crate::config::{CUSTOM_IGNORE, ExtractCache, LoaderConfig};

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Loads every document under `root`, stamping each file for the next
/// [`load_folder_changed`].
pub fn load_folder(root: &Path, config: &LoaderConfig) -> Result<LoadedDocuments> {
    load_folder_changed(root, config, &BTreeMap::new())
}

/// Loads the documents under `root`, except that a file of `known` whose [stamp](Stamper) is
/// unchanged is listed in `unchanged` rather than read: with the known document of each, the
/// result is what [`load_folder`] returns.
pub fn load_folder_changed(
    root: &Path,
    config: &LoaderConfig,
    known: &BTreeMap<String, KnownFile>,
) -> Result<LoadedDocuments> {
    let stamper = Stamper::new(config);
    if !root.is_dir() {
        bail!("{} is not a directory", root.display());
    }
    let mut loaded = LoadedDocuments::default();
    let files = walk(root, config, &mut loaded.skipped)?;
    let mut claims = Claims::default();
    let mut unchanged: Vec<(String, DocId)> = Vec::new();
    for path in files {
        let rel = relative(root, &path);
        // Stamped before it is read: a write during the read gives another stamp next time.
        let stamp = stamper.stamp(&path);
        if let (Some(stamp), Some(k)) = (&stamp, known.get(&rel))
            && &k.stamp == stamp
        {
            if claims.claim(&k.doc, &rel) {
                unchanged.push((rel.clone(), k.doc.clone()));
                loaded.stamps.insert(rel, stamp.clone());
            }
            continue;
        }
        // The walk already judged every link on the way (pruned or followed): no re-check.
        match read_document(&path, &rel, config) {
            Ok(doc) => {
                if claims.claim(doc.id(), &rel) {
                    if let Some(stamp) = stamp {
                        loaded.stamps.insert(rel, stamp);
                    }
                    loaded.documents.push(doc);
                }
            }
            Err(reason) => loaded.skipped.push(SkippedFile {
                path: rel,
                reason: format!("{reason:#}"),
            }),
        }
    }
    claims.drop_duplicates(&mut loaded, &mut unchanged);
    loaded.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    loaded.unchanged = unchanged.into_iter().map(|(rel, _)| rel).collect();
    Ok(loaded)
}

/// The document files under `root` that the scan reads, in path order. What it passes over
/// with a reason (a folder it cannot walk, a broken link, a name that is not UTF-8, a link
/// it does not follow) is added to `skipped`.
fn walk(
    root: &Path,
    config: &LoaderConfig,
    skipped: &mut Vec<SkippedFile>,
) -> Result<Vec<PathBuf>> {
    let real_root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let pruned: Arc<Mutex<Vec<SkippedFile>>> = Arc::default();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(config.follow_links_inside)
        .add_custom_ignore_filename(CUSTOM_IGNORE)
        .filter_entry(link_filter(root, real_root, config, pruned.clone()))
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                skipped.push(SkippedFile {
                    path: root.display().to_string(),
                    reason: format!("cannot walk: {e}"),
                });
                continue;
            }
        };
        let path = entry.path().to_path_buf();
        if !is_document(&path) {
            continue;
        }
        let reason = if entry.path_is_symlink() && std::fs::metadata(&path).is_err() {
            "broken symlink"
        } else if path
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .is_none()
        {
            // Its recorded path could not name it again (to re-read, replace or delete it).
            "file name is not valid UTF-8"
        } else {
            if path.is_file() {
                files.push(path);
            }
            continue;
        };
        skipped.push(SkippedFile {
            path: relative(root, &path),
            reason: reason.into(),
        });
    }
    skipped.extend(std::mem::take(
        &mut *pruned.lock().unwrap_or_else(|p| p.into_inner()),
    ));
    Ok(files)
}

/// The walker's filter: links are judged before the walker follows them, so one pointing
/// outside the root (or any link, unless inside links are followed) is pruned, and reported
/// in `pruned` when it points to a folder or looks like a document. The store's folder is
/// never entered.
fn link_filter(
    root: &Path,
    real_root: PathBuf,
    config: &LoaderConfig,
    pruned: Arc<Mutex<Vec<SkippedFile>>>,
) -> impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static {
    let root = root.to_path_buf();
    let follow = config.follow_links_inside;
    let store_dir = config.store_dir.clone();
    move |e: &ignore::DirEntry| {
        if let Some(store_dir) = &store_dir
            && e.file_type().is_some_and(|t| t.is_dir())
            && e.path().canonicalize().is_ok_and(|p| &p == store_dir)
        {
            return false;
        }
        if !e.path_is_symlink() {
            return true;
        }
        let Ok(target) = e.path().canonicalize() else {
            return true; // broken: reported by the walk when it looks like a document
        };
        let reason = if !target.starts_with(&real_root) {
            "symbolic link to outside the knowledge base: not followed"
        } else if !follow {
            "symbolic link: not followed (set follow_links_inside = true to follow links inside the knowledge base)"
        } else {
            return true;
        };
        if target.is_dir() || is_document(e.path()) {
            pruned
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(SkippedFile {
                    path: relative(&root, e.path()),
                    reason: reason.into(),
                });
        }
        false
    }
}

/// The file that claimed each document ID first, and the IDs more than one file claims.
#[derive(Default)]
struct Claims {
    owners: BTreeMap<DocId, String>,
    duplicates: BTreeMap<DocId, Vec<String>>,
}

impl Claims {
    /// Records that the file `rel` holds document `id`: false when another file claimed it
    /// first (both are then duplicates).
    fn claim(&mut self, id: &DocId, rel: &str) -> bool {
        match self.owners.get(id) {
            Some(first) => {
                self.duplicates
                    .entry(id.clone())
                    .or_insert_with(|| vec![first.clone()])
                    .push(rel.to_string());
                false
            }
            None => {
                self.owners.insert(id.clone(), rel.to_string());
                true
            }
        }
    }

    /// Two files claiming one ID: neither is trusted (dropped from the documents, the
    /// unchanged files and the stamps); both are reported.
    fn drop_duplicates(self, loaded: &mut LoadedDocuments, unchanged: &mut Vec<(String, DocId)>) {
        for (id, paths) in self.duplicates {
            loaded.documents.retain(|d| d.id() != &id);
            unchanged.retain(|(_, doc)| doc != &id);
            for p in &paths {
                loaded.stamps.remove(p);
                loaded.skipped.push(SkippedFile {
                    path: p.clone(),
                    reason: format!(
                        "duplicate document id {id:?}, claimed by {}",
                        paths.join(" and ")
                    ),
                });
            }
        }
    }
}

fn is_document(path: &Path) -> bool {
    announced(path).is_some()
}

/// What the extension of `path` announces (`None`: not a document file).
fn announced(path: &Path) -> Option<formats::Announced> {
    // `a.metadata.yaml` sidecars and the like have no document extension: passed over.
    Format::announced(path.extension()?.to_str()?)
}

/// The root `path` lies under, given its `rel`ative path.
fn root_of<'a>(path: &'a Path, rel: &str) -> &'a Path {
    let mut root = path;
    for _ in rel.split('/') {
        root = root.parent().unwrap_or(root);
    }
    root
}

/// Refuses a file reached through a symbolic link (the file itself or a folder above it, up to
/// the root) whose target is outside the root, or any link unless inside links are followed.
fn check_links(path: &Path, rel: &str, config: &LoaderConfig) -> Result<()> {
    let root = root_of(path, rel);
    let mut p = root.to_path_buf();
    let mut shown = String::new();
    for seg in rel.split('/') {
        p.push(seg);
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(seg);
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            return Ok(()); // missing: reading it reports that
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        let Ok(target) = p.canonicalize() else {
            bail!("broken symlink ({shown})");
        };
        let real_root = root.canonicalize().context("cannot resolve the root")?;
        if !target.starts_with(&real_root) {
            bail!("{shown} is a symbolic link to outside the knowledge base: not followed");
        }
        if !config.follow_links_inside {
            bail!(
                "{shown} is a symbolic link: not followed (set follow_links_inside = true to follow links inside the knowledge base)"
            );
        }
    }
    Ok(())
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

/// Parses YAML metadata where the configuration's [parsers](LoaderConfig::parsers) run,
/// within the extraction time limit.
fn parse_yaml(
    text: &str,
    what: &str,
    config: &LoaderConfig,
) -> Result<BTreeMap<String, serde_json::Value>> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let deadline = std::time::Instant::now() + config.max_extract_time;
    config.parsers.metadata(text, what, deadline)
}

fn string_key(meta: &BTreeMap<String, serde_json::Value>, key: &str) -> Result<Option<String>> {
    match meta.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(serde_json::Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => bail!("front matter key {key:?} must be a string, found {other}"),
    }
}

/// The document's own readers (`access:` in front matter or the sidecar): one reader or a
/// list, each `user:NAME`, `group:NAME` or `*`. A key that cannot be read skips the file (a
/// document meant for few must never be indexed open to its whole scope).
fn access_key(meta: &BTreeMap<String, serde_json::Value>) -> Result<Option<Access>> {
    let readers: Vec<String> = match meta.get("access") {
        None => return Ok(None),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => Ok(s.clone()),
                other => bail!("front matter key \"access\" lists {other}, not a reader"),
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            bail!(
                "front matter key \"access\" must be a reader or a list of readers, found {other}"
            )
        }
    };
    let access = Access::parse(&readers, AccessRule::Document)
        .map_err(|e| anyhow::anyhow!("front matter key \"access\": {e}"))?;
    Ok(Some(access))
}

/// Loads one file (`rel` is its path relative to the knowledge-base root).
pub fn load_path(path: &Path, rel: &str, config: &LoaderConfig) -> Result<Document> {
    check_links(path, rel, config)?;
    read_document(path, rel, config)
}

/// The bytes of one document file, under the same link rule and size bound as a load.
pub fn read_original(path: &Path, rel: &str, config: &LoaderConfig) -> Result<Vec<u8>> {
    check_links(path, rel, config)?;
    announced(path).context("not a document file")?;
    let meta = std::fs::metadata(path).context("cannot read file metadata")?;
    let most = config.max_file_bytes.max(config.max_document_bytes);
    if meta.len() > most {
        bail!(
            "file is {} bytes, larger than the {most} byte limit",
            meta.len()
        );
    }
    std::fs::read(path).context("cannot read file")
}

/// The bounds of one file's extraction under `config`, its deadline from now.
fn extraction_limits(config: &LoaderConfig) -> Limits {
    Limits {
        max_unpacked_bytes: config.max_unpacked_bytes,
        max_text_bytes: usize::try_from(config.max_file_bytes).unwrap_or(usize::MAX),
        max_pages: config.max_pages,
        max_image_pixels: config.max_image_pixels,
        deadline: std::time::Instant::now() + config.max_extract_time,
    }
}

/// The picture of page `page` (from 1) of the file at `path`, turned `turn` clockwise quarter
/// turns, as PNG of at most `max_side` pixels a side, made by the configured parsers (in an
/// extraction worker: the file is as hostile here as when it was indexed). `None` when the
/// page has no picture (a PDF page with a text layer).
pub fn page_png(
    path: &Path,
    rel: &str,
    (page, turn, max_side): (u32, u16, u32),
    config: &LoaderConfig,
) -> Result<Option<Vec<u8>>> {
    let bytes = read_original(path, rel, config)?;
    let announced = announced(path).context("not a document file")?;
    let limits = extraction_limits(config);
    config
        .parsers
        .page_png(announced, &bytes, (page, turn, max_side), &limits)
}

/// Reads one document file of any format: its content decides how it is read.
fn read_document(path: &Path, rel: &str, config: &LoaderConfig) -> Result<Document> {
    let announced = announced(path).context("not a document file")?;
    let meta = std::fs::metadata(path).context("cannot read file metadata")?;
    let most = config.max_file_bytes.max(config.max_document_bytes);
    if meta.len() > most {
        bail!(
            "file is {} bytes, larger than the {} byte limit (loader.max_document_bytes)",
            meta.len(),
            most
        );
    }
    // Stamped before it is read, as the folder walk does: a write during the read gives another
    // stamp next time.
    let stamp = Stamper::new(config).stamp(path);
    if let Some(doc) = stamp.as_deref().and_then(|s| config.extracted.get(path, s)) {
        return Ok(doc);
    }
    let bytes = std::fs::read(path).context("cannot read file")?;
    // A zip package's format is told by its parts: reading its directory is parsing, left to
    // the extractor. Every other signature is a prefix comparison, made here.
    let format = if bytes.starts_with(b"PK\x03\x04") {
        None
    } else {
        Some(formats::detect(announced, &bytes)?)
    };
    if format.is_some_and(|f| f.is_text() || matches!(f, Format::Html | Format::Csv))
        && bytes.len() as u64 > config.max_file_bytes
    {
        bail!(
            "file is {} bytes, larger than the {} byte limit (loader.max_file_bytes)",
            bytes.len(),
            config.max_file_bytes
        );
    }
    if format.is_some_and(Format::is_text) {
        // UTF-8, UTF-16 with a BOM, or GB18030/Big5 told from the bytes; anything else is
        // reported with what it seems to be.
        let text = formats::decode_text_file(&bytes)?;
        drop(bytes);
        if text.contains('\0') {
            bail!("binary file (contains NUL bytes)");
        }
        return load_text(path, rel, &text, config);
    }
    let announced = match format {
        Some(f) => formats::Announced::Known(f),
        None => announced,
    };
    let limits = extraction_limits(config);
    let cached = config
        .ocr_cache
        .as_ref()
        .and_then(|cache| cache.get(&bytes, &limits));
    let extracted = match cached {
        Some(extracted) => extracted,
        None => {
            let extracted = config.parsers.extract(announced, &bytes, &limits)?;
            if let Some(cache) = &config.ocr_cache {
                cache.put(&bytes, &limits, &extracted);
            }
            extracted
        }
    };
    drop(bytes);
    let doc = build_document(path, rel, config, extracted, None)?;
    if let Some(stamp) = stamp {
        config.extracted.put(path, stamp, &doc);
    }
    Ok(doc)
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
    match announced(Path::new(rel)) {
        Some(formats::Announced::Known(f)) if f.is_text() => {}
        _ => bail!("only Markdown (.md) and text (.txt) documents can be written as text"),
    }
    let is_markdown = !rel.to_ascii_lowercase().ends_with(".txt");
    let (front, body) = if is_markdown {
        split_front_matter(text)?
    } else {
        (None, text)
    };
    let extracted = formats::Extracted {
        text: body.to_string(),
        ..Default::default()
    };
    build_document(path, rel, config, extracted, front)
}

/// The document of the file at `path` with the `extracted` body, its sidecar's metadata and
/// then its `front` matter's (front matter wins), then what the file declares itself.
fn build_document(
    path: &Path,
    rel: &str,
    config: &LoaderConfig,
    extracted: formats::Extracted,
    front: Option<&str>,
) -> Result<Document> {
    let body = extracted.text.as_str();
    let mut meta: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let sidecar = path.with_extension("metadata.yaml");
    if std::fs::symlink_metadata(&sidecar).is_ok() {
        let sidecar_rel = crate::paths::sidecar_of(rel);
        check_links(&sidecar, &sidecar_rel, config)
            .with_context(|| format!("sidecar {sidecar_rel}"))?;
    }
    if sidecar.is_file() {
        let yaml = read_text(&sidecar, config.max_file_bytes)
            .with_context(|| format!("sidecar {}", crate::paths::sidecar_of(rel)))?;
        meta.extend(parse_yaml(&yaml, "sidecar metadata", config)?);
    }
    if let Some(yaml) = front {
        meta.extend(parse_yaml(yaml, "front matter", config)?);
    }
    // The file's own sidecar (`guide.pdf.metadata.yaml`) is the most specific: it wins over
    // the shared one and over front matter, so what a sync pins (scope, readers, reference)
    // holds whatever the synced file says of itself.
    let own = crate::paths::own_sidecar_of(rel);
    let own_path = path.with_file_name(crate::paths::own_sidecar_of(
        &path.file_name().unwrap_or_default().to_string_lossy(),
    ));
    if std::fs::symlink_metadata(&own_path).is_ok() {
        check_links(&own_path, &own, config).with_context(|| format!("sidecar {own}"))?;
        let yaml = read_text(&own_path, config.max_file_bytes)
            .with_context(|| format!("sidecar {own}"))?;
        meta.extend(parse_yaml(&yaml, "sidecar metadata", config)?);
    }
    let id = match string_key(&meta, "id")? {
        Some(id) => DocId::new(id)?,
        None => DocId::new(rel)?,
    };
    let first_heading = |body| {
        (!extracted.synthetic_headings)
            .then(|| first_heading(body))
            .flatten()
    };
    // A title the sidecar or front matter gives must be valid; one the file declares itself,
    // its first heading or its name is made valid (control characters out, whitespace
    // collapsed, at most 1,024 characters): a NUL-terminated PDF title loses no document.
    let title = match string_key(&meta, "title")? {
        Some(t) => Title::new(t.replace(['\r', '\n', '\t'], " ").trim())?,
        None => [
            extracted.title.clone(),
            first_heading(body),
            Path::new(rel)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned()),
        ]
        .into_iter()
        .flatten()
        .find_map(|t| {
            Title::new(clean_title(&t))
                .ok()
                .filter(|t| !t.as_ref().is_empty())
        })
        .unwrap_or_else(|| Title::new("").unwrap_or_else(|_| unreachable!())),
    };
    let mut builder = Document::builder(id, Source::new(rel)?, body.to_string())
        .title(title)
        .scope(match string_key(&meta, "scope")? {
            Some(s) => Scope::new(s)?,
            None => config.default_scope.clone(),
        });
    if let Some(locale) = string_key(&meta, "locale")? {
        builder = builder.locale(Locale::new(locale)?);
    } else if let Some(locale) = extracted
        .locale
        .as_deref()
        .and_then(|l| Locale::new(normalise_locale(l)).ok())
    {
        // A language tag the file declares but zhiku cannot hold is passed over, not fatal.
        builder = builder.locale(locale);
    }
    if let Some(access) = access_key(&meta)? {
        builder = builder.access(access);
    }
    if let Some(pages) = extracted.pages {
        builder = builder.page_count(pages);
    }
    if !extracted.boxes.is_empty() {
        builder = builder.line_boxes(
            extracted
                .boxes
                .iter()
                .map(|b| LineBox {
                    start: b.start,
                    end: b.end,
                    at: PageBox {
                        page: b.page,
                        x0: b.x0,
                        y0: b.y0,
                        x1: b.x1,
                        y1: b.y1,
                        turn: b.turn,
                        confidence: b.confidence,
                    },
                })
                .collect(),
        );
    }
    let mut metadata = Metadata::new();
    for (key, value) in meta {
        if matches!(key.as_str(), "id" | "title" | "scope" | "locale" | "access") {
            continue;
        }
        metadata.insert(key, value)?;
    }
    let doc = builder.metadata(metadata).build();
    // `expires_at` and `ttl` are read when the document is indexed; one that cannot be read
    // skips the file with its reason now, naming the document, rather than failing a refresh.
    zhiku_domain::rules::retention::Retention::of(&doc)?;
    Ok(doc)
}

/// A title a file declares, made valid: control characters dropped, whitespace collapsed, at
/// most 1,024 characters.
fn clean_title(title: &str) -> String {
    let text: String = title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    formats::one_line(&text).chars().take(1024).collect()
}

/// A language tag as files write it (`EN-US`, `zh_CN`) in its usual form (`en-US`, `zh-CN`).
fn normalise_locale(tag: &str) -> String {
    let mut parts = tag.trim().split(['-', '_']);
    let mut out = parts.next().unwrap_or_default().to_ascii_lowercase();
    for part in parts {
        out.push('-');
        match part.len() {
            2 => out.push_str(&part.to_ascii_uppercase()),
            4 => {
                let mut c = part.chars();
                out.extend(c.next().map(|f| f.to_ascii_uppercase()));
                out.push_str(&c.as_str().to_ascii_lowercase());
            }
            _ => out.push_str(&part.to_ascii_lowercase()),
        }
    }
    out
}

fn first_heading(body: &str) -> Option<String> {
    zhiku_text::first_heading(body).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_languages_a_file_declares_are_made_valid_not_fatal() {
        assert_eq!(clean_title("Quarterly report\0"), "Quarterly report");
        assert_eq!(clean_title("a\r\nb\tc"), "a b c");
        assert_eq!(clean_title(&"长".repeat(3000)).chars().count(), 1024);
        assert_eq!(normalise_locale("EN-US"), "en-US");
        assert_eq!(normalise_locale("zh_hans_cn"), "zh-Hans-CN");
        assert_eq!(normalise_locale("ZH"), "zh");
    }

    fn known(loaded: &LoadedDocuments) -> BTreeMap<String, KnownFile> {
        loaded
            .documents
            .iter()
            .map(|d| {
                let path = d.attributes().source.to_string();
                let stamp = loaded.stamps[&path].clone();
                (
                    path,
                    KnownFile {
                        doc: d.id().clone(),
                        stamp,
                    },
                )
            })
            .collect()
    }

    fn read_paths(loaded: &LoadedDocuments) -> Vec<String> {
        loaded
            .documents
            .iter()
            .map(|d| d.attributes().source.to_string())
            .collect()
    }

    #[test]
    fn text_files_in_gbk_big5_or_utf16_are_read_and_others_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |name: &str, bytes: &[u8]| std::fs::write(root.join(name), bytes).unwrap();
        // "# 部门说明\n\n研发部负责产品的设计与开发，市场部负责推广。\n" in GBK.
        let gbk = b"# \xB2\xBF\xC3\xC5\xCB\xB5\xC3\xF7\n\n\xD1\xD0\xB7\xA2\xB2\xBF\xB8\xBA\xD4\xF0\xB2\xFA\
            \xC6\xB7\xB5\xC4\xC9\xE8\xBC\xC6\xD3\xEB\xBF\xAA\xB7\xA2\xA3\xAC\xCA\xD0\xB3\xA1\xB2\xBF\
            \xB8\xBA\xD4\xF0\xCD\xC6\xB9\xE3\xA1\xA3\n";
        write("gbk.md", gbk);
        // "繁體中文的說明文件，內容包含常用的繁體字。\n" in Big5.
        let big5 =
            b"\xC1c\xC5\xE9\xA4\xA4\xA4\xE5\xAA\xBA\xBB\xA1\xA9\xFA\xA4\xE5\xA5\xF3\xA1A\xA4\xBA\
            \xAEe\xA5]\xA7t\xB1`\xA5\xCE\xAA\xBA\xC1c\xC5\xE9\xA6r\xA1C\n";
        write("big5.txt", big5);
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("UTF-16 的文本\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        write("utf16.txt", &utf16);
        // "Größe,Straße\nMüller,Köln\n" in Latin-1 (valid GB18030 too, into nonsense).
        write("latin1.txt", b"Gr\xF6\xDFe,Stra\xDFe\nM\xFCller,K\xF6ln\n");
        write("binary.txt", b"\x01\x02\x03\xFF\xFE\x80\x00\x00junk");
        let config = LoaderConfig {
            racy_window: std::time::Duration::ZERO,
            ..LoaderConfig::default()
        };
        let loaded = load_folder(root, &config).unwrap();
        let docs: BTreeMap<String, &Document> = loaded
            .documents
            .iter()
            .map(|d| (d.attributes().source.to_string(), d))
            .collect();
        assert_eq!(
            docs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["big5.txt", "gbk.md", "utf16.txt"]
        );
        assert_eq!(docs["gbk.md"].attributes().title.as_str(), "部门说明");
        assert!(docs["gbk.md"].content().contains("研发部负责产品"));
        assert!(docs["big5.txt"].content().contains("繁體中文的說明文件"));
        assert!(docs["utf16.txt"].content().contains("UTF-16 的文本"));
        let skipped: BTreeMap<&str, &str> = loaded
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.as_str()))
            .collect();
        assert!(skipped["latin1.txt"].contains("not UTF-8, UTF-16, GB18030"));
        assert!(skipped["latin1.txt"].contains("Latin-1"));
        assert!(skipped["binary.txt"].contains("binary"), "{skipped:?}");
        assert_eq!(skipped.len(), 2, "{skipped:?}");
    }

    #[test]
    fn access_is_read_from_front_matter_and_sidecars_and_a_bad_one_skips_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).unwrap();
        write(
            "hr.md",
            "---\naccess: [group:hr, user:li.lei@corp]\n---\n# 薪酬\n\n文本\n",
        );
        write("one.md", "---\naccess: group:finance\n---\n# One\n\ntext\n");
        write("side.md", "# Side\n\ntext\n");
        write("side.metadata.yaml", "access:\n  - user:wang@corp\n");
        write("open.md", "# Open\n\ntext\n");
        write("nobody.md", "---\naccess: []\n---\n# Nobody\n\ntext\n");
        write("bad.md", "---\naccess: [hr]\n---\n# Bad\n\ntext\n");
        write(
            "worse.md",
            "---\naccess: {group: hr}\n---\n# Worse\n\ntext\n",
        );
        let loaded = load_folder(root, &LoaderConfig::default()).unwrap();
        let readers = |id: &str| {
            let d = loaded
                .documents
                .iter()
                .find(|d| d.id().as_str() == id)
                .unwrap_or_else(|| panic!("{id} loaded"));
            let a = &d.attributes().access;
            assert!(
                d.attributes().metadata.get("access").is_none(),
                "not metadata"
            );
            (a.terms(), a.rule().clone())
        };
        let own = AccessRule::Document;
        assert_eq!(
            readers("hr.md"),
            (
                vec!["group:hr".into(), "user:li.lei@corp".into()],
                own.clone()
            )
        );
        assert_eq!(
            readers("one.md"),
            (vec!["group:finance".into()], own.clone())
        );
        assert_eq!(
            readers("side.md"),
            (vec!["user:wang@corp".into()], own.clone())
        );
        assert_eq!(readers("nobody.md"), (Vec::<String>::new(), own));
        assert_eq!(readers("open.md"), (vec!["*".into()], AccessRule::Open));
        let skipped: Vec<(&str, &str)> = loaded
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(
            skipped.iter().all(|(_, why)| why.contains("access")),
            "{skipped:?}"
        );
    }

    #[test]
    fn only_changed_files_are_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in ["a", "b", "c", "d", "e"] {
            std::fs::write(
                root.join(format!("{name}.md")),
                format!("# {name}\n\ntext\n"),
            )
            .unwrap();
        }
        let config = LoaderConfig {
            racy_window: std::time::Duration::ZERO,
            ..LoaderConfig::default()
        };
        let first = load_folder(root, &config).unwrap();
        assert_eq!(first.stamps.len(), 5);
        let known = known(&first);

        let again = load_folder_changed(root, &config, &known).unwrap();
        assert!(again.documents.is_empty());
        assert_eq!(again.unchanged.len(), 5);
        assert_eq!(again.stamps, first.stamps);

        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("a.md"), "# a\n\nlonger text now\n").unwrap(); // edited
        std::fs::write(root.join("b.metadata.yaml"), "scope: beta\n").unwrap(); // sidecar added
        std::fs::remove_file(root.join("c.md")).unwrap(); // deleted
        std::fs::write(root.join("c2.md"), "# c\n\ntext\n").unwrap(); // new
        // Replaced by a file of the same size (a new inode).
        std::fs::write(root.join("d.tmp"), "# d\n\ntext\n").unwrap();
        std::fs::rename(root.join("d.tmp"), root.join("d.md")).unwrap();
        // A new file claiming an unchanged document's ID: neither is trusted.
        std::fs::write(root.join("f.md"), "---\nid: e.md\n---\n# f\n").unwrap();

        let changed = load_folder_changed(root, &config, &known).unwrap();
        assert_eq!(read_paths(&changed), ["a.md", "b.md", "c2.md", "d.md"]);
        assert!(changed.unchanged.is_empty(), "{:?}", changed.unchanged);
        let skipped: Vec<&str> = changed.skipped.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(skipped, ["e.md", "f.md"]);
        assert!(!changed.stamps.contains_key("e.md") && !changed.stamps.contains_key("c.md"));
        let b = &changed.documents[1];
        assert_eq!(b.attributes().scope.as_str(), "beta");

        // What load_changed read equals what a full load reads.
        let full = load_folder(root, &config).unwrap();
        let fingerprints = |l: &LoadedDocuments| {
            l.documents
                .iter()
                .map(|d| d.fingerprint())
                .collect::<Vec<_>>()
        };
        assert_eq!(fingerprints(&changed), fingerprints(&full));
    }

    #[test]
    fn an_unreadable_expiry_or_ttl_skips_the_file_naming_the_document() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(
            root.join("ok.md"),
            "---\nttl: 7d\nexpires_at: 2030-01-01T00:00:00Z\n---\n# Ok\nbody\n",
        )
        .unwrap();
        std::fs::write(
            root.join("bad.md"),
            "---\nexpires_at: soon\n---\n# Bad\nbody\n",
        )
        .unwrap();
        std::fs::write(
            root.join("worse.md"),
            "---\nttl: forever\n---\n# Worse\nbody\n",
        )
        .unwrap();
        let loaded = load_folder(root, &LoaderConfig::default()).unwrap();
        let ids: Vec<&str> = loaded.documents.iter().map(|d| d.id().as_str()).collect();
        assert_eq!(ids, vec!["ok.md"]);
        let mut reasons: Vec<(String, String)> = loaded
            .skipped
            .iter()
            .map(|s| (s.path.clone(), s.reason.clone()))
            .collect();
        reasons.sort();
        assert_eq!(reasons[0].0, "bad.md");
        assert!(
            reasons[0]
                .1
                .contains("document bad.md: invalid expires_at \"soon\""),
            "{:?}",
            reasons[0]
        );
        assert!(
            reasons[1]
                .1
                .contains("document worse.md: invalid ttl \"forever\""),
            "{:?}",
            reasons[1]
        );
    }

    #[test]
    fn front_matter_is_split_from_the_body() {
        let (fm, body) = split_front_matter("---\nid: a\n---\n# T\nbody\n").unwrap();
        assert_eq!(fm, Some("id: a\n"));
        assert_eq!(body, "# T\nbody\n");
        assert!(split_front_matter("---\nid: a\nno end").is_err());
        assert_eq!(split_front_matter("no front matter").unwrap().0, None);
    }
}
