//! A git repository as a document source (`crates/adapters-git`).
//!
//! The git program does the work (any URL git reaches, with the credentials git is set up with:
//! an SSH key, a credential helper; it is never allowed to prompt). Each source keeps a bare
//! repository of its own (`cache`), into which every scan fetches the configured branch or tag,
//! shallow and forced (a force-push is simply the new tip), and then compares the tip's tree
//! with what the last sync holds: an item's stamp is its blob ID, so an unchanged file is
//! recognised from the tree listing alone, and only the blobs that changed are read (one `git
//! cat-file --batch` for all of them). A scan therefore costs one fetch and three local
//! commands whatever the repository's size; a deleted branch or tag fails it (the mirror keeps
//! its files), never empties it.
//!
//! Each item's reference is `path@commit` (the commit's first 12 hex digits), and its link the
//! `permalink` template with `{commit}`, `{path}` and `{ref}` filled in.

mod run;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zhiku_domain::ports::{
    DocumentSource, ScanError, ScanEvent, ScanRequest, Scanned, SourceItem, is_item_path,
};

use run::{RunError, git, run};

/// Which paths of a source become items (the formats the knowledge base reads).
pub type Wanted = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The local ref each scan fetches the branch or tag into.
const TIP: &str = "refs/zhiku/tip";

/// How a git source is reached and read.
#[derive(Clone)]
pub struct GitSettings {
    /// What git fetches from: a URL (`https://…`, `ssh://…`, `git@host:path`) or a local path.
    pub url: String,
    /// The branch or tag.
    pub reference: String,
    /// Folders of the repository to read (`docs`, `handbook/zh`); empty: all of it.
    pub paths: Vec<String>,
    /// A browser's URL of a file at a commit, with `{commit}`, `{path}` and `{ref}` (e.g.
    /// `https://git.example/team/handbook/blob/{commit}/{path}`).
    pub permalink: Option<String>,
    /// The bare repository this source keeps (created on the first scan).
    pub cache: PathBuf,
    /// Longest git command (the fetch above all).
    pub timeout: Duration,
    /// The git program.
    pub program: PathBuf,
    /// Which paths are items.
    pub wanted: Wanted,
}

impl std::fmt::Debug for GitSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitSettings")
            .field("url", &without_credentials(&self.url))
            .field("reference", &self.reference)
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

/// A git repository's branch or tag, as a document source.
#[derive(Debug)]
pub struct GitSource {
    settings: GitSettings,
}

/// `url` without a `user:password@` part.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{path}"),
        None => url.to_string(),
    }
}

/// Paths of the tree that are no items, with why (a link, a submodule, a name not UTF-8).
type NotItems = Vec<(String, String)>;

/// What receives each blob read.
type BlobSink<'a> = dyn FnMut(&Entry, Vec<u8>) -> Result<(), ScanError> + 'a;

/// One file of the tip's tree.
struct Entry {
    path: String,
    blob: String,
    size: u64,
}

impl GitSource {
    /// A source over `settings` (nothing is run until a scan).
    pub fn new(settings: GitSettings) -> Self {
        Self { settings }
    }

    fn unavailable(&self, message: impl Into<String>) -> ScanError {
        ScanError::Unavailable {
            kind: "git",
            location: self.location(),
            message: message.into(),
        }
    }

    fn refused(&self, message: impl Into<String>) -> ScanError {
        ScanError::Refused {
            kind: "git",
            location: self.location(),
            message: message.into(),
        }
    }

    fn ran(&self, e: RunError) -> ScanError {
        self.unavailable(e.to_string())
    }

    /// Creates the bare repository if there is none, and fetches the branch or tag into it.
    fn fetch(&self) -> Result<(), ScanError> {
        let s = &self.settings;
        if !s.cache.join("HEAD").exists() {
            std::fs::create_dir_all(&s.cache).map_err(|e| {
                self.unavailable(format!("cannot create {}: {e}", s.cache.display()))
            })?;
            let mut init = git(&s.program, &s.cache);
            init.args(["init", "--bare", "--quiet"]);
            let done = run(init, s.timeout, 1 << 20).map_err(|e| self.ran(e))?;
            if !done.ok {
                return Err(self.unavailable(format!("git init: {}", done.stderr.trim())));
            }
        }
        // A local path is fetched as a file:// URL, so that a shallow fetch is shallow too.
        let url = if Path::new(&s.url).is_absolute() && !s.url.contains("://") {
            format!("file://{}", s.url)
        } else {
            s.url.clone()
        };
        let mut fetch = git(&s.program, &s.cache);
        fetch.args([
            "fetch",
            "--quiet",
            "--force",
            "--no-tags",
            "--depth=1",
            "--no-write-fetch-head",
            "--",
            &url,
            &format!("+{}:{TIP}", s.reference),
        ]);
        let done = run(fetch, s.timeout, 1 << 20).map_err(|e| self.ran(e))?;
        if done.ok {
            return Ok(());
        }
        let said = done.stderr.trim().to_string();
        let lower = said.to_ascii_lowercase();
        if lower.contains("couldn't find remote ref") || lower.contains("invalid refspec") {
            return Err(self.refused(format!(
                "the branch or tag {:?} is not there (deleted or renamed?); the files of the last sync are kept",
                s.reference
            )));
        }
        if lower.contains("authentication failed")
            || lower.contains("permission denied")
            || lower.contains("could not read username")
            || lower.contains("terminal prompts disabled")
            || lower.contains("403")
        {
            return Err(self.refused(format!("credentials refused: {said}")));
        }
        Err(self.unavailable(format!("git fetch: {said}")))
    }

    /// The commit the tip names.
    fn tip(&self) -> Result<String, ScanError> {
        let s = &self.settings;
        let mut c = git(&s.program, &s.cache);
        c.args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{TIP}^{{commit}}"),
        ]);
        let done = run(c, s.timeout, 4096).map_err(|e| self.ran(e))?;
        let commit = String::from_utf8_lossy(&done.stdout).trim().to_string();
        if !done.ok || commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.refused(format!(
                "{:?} does not name a commit: {}",
                s.reference,
                done.stderr.trim()
            )));
        }
        Ok(commit)
    }

    /// Every regular file of the tip's tree under the configured folders; entries that are
    /// no item (a link, a submodule, a name that is not UTF-8 or not plain) are returned apart,
    /// with why.
    fn tree(&self) -> Result<(Vec<Entry>, NotItems), ScanError> {
        let s = &self.settings;
        let mut c = git(&s.program, &s.cache);
        c.args(["ls-tree", "-r", "-z", "-l", "--full-tree", TIP]);
        if !s.paths.is_empty() {
            c.arg("--");
            c.args(s.paths.iter().map(|p| p.trim_matches('/')));
        }
        let done = run(c, s.timeout, 1 << 30).map_err(|e| self.ran(e))?;
        if !done.ok {
            return Err(self.unavailable(format!("git ls-tree: {}", done.stderr.trim())));
        }
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        for record in done.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let Some(tab) = record.iter().position(|&b| b == b'\t') else {
                continue;
            };
            let (head, name) = (&record[..tab], &record[tab + 1..]);
            let head = String::from_utf8_lossy(head);
            let mut fields = head.split_ascii_whitespace();
            let (mode, kind, blob, size) = (
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
            );
            let Ok(path) = String::from_utf8(name.to_vec()) else {
                skipped.push((
                    String::from_utf8_lossy(name).replace(['/', '.'], "_"),
                    "its name is not UTF-8".to_string(),
                ));
                continue;
            };
            if !is_item_path(&path) || !(s.wanted)(&path) {
                // Hidden files and folders (`.github/…`) and formats no one reads are no items.
                continue;
            }
            if kind != "blob" || !matches!(mode, "100644" | "100755") {
                let what = if mode == "120000" {
                    "a symbolic link"
                } else {
                    "a submodule"
                };
                skipped.push((path, format!("{what} in the repository: not read")));
                continue;
            }
            entries.push(Entry {
                path,
                blob: blob.to_string(),
                size: size.parse().unwrap_or(u64::MAX),
            });
        }
        Ok((entries, skipped))
    }

    fn item(&self, entry: &Entry, commit: &str) -> SourceItem {
        let s = &self.settings;
        SourceItem {
            path: entry.path.clone(),
            stamp: entry.blob.clone(),
            reference: format!("{}@{}", entry.path, &commit[..12]),
            link: s.permalink.as_ref().map(|t| {
                t.replace("{commit}", commit)
                    .replace("{ref}", &s.reference)
                    .replace("{path}", &encode_path(&entry.path))
            }),
        }
    }

    /// Reads the blobs of `wanted` in order, handing each to `each`; one `git cat-file
    /// --batch` for all of them, killed at the deadline.
    fn read_blobs(&self, wanted: &[&Entry], each: &mut BlobSink<'_>) -> Result<(), ScanError> {
        if wanted.is_empty() {
            return Ok(());
        }
        let s = &self.settings;
        let mut c = git(&s.program, &s.cache);
        c.args(["cat-file", "--batch"]).stdin(Stdio::piped());
        let mut child = c.spawn().map_err(|e| self.ran(RunError::Spawn(e)))?;
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let child = Arc::new(Mutex::new(child));
        let ids: Vec<String> = wanted.iter().map(|e| format!("{}\n", e.blob)).collect();
        let writer = std::thread::spawn(move || {
            if let Some(stdin) = stdin.as_mut() {
                for id in ids {
                    if stdin.write_all(id.as_bytes()).is_err() {
                        break;
                    }
                }
            }
        });
        let watchdog = {
            let child = Arc::clone(&child);
            let deadline = std::time::Instant::now() + s.timeout.max(Duration::from_secs(1)) * 4;
            std::thread::spawn(move || {
                while std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                    let mut c = child.lock().unwrap_or_else(|e| e.into_inner());
                    if matches!(c.try_wait(), Ok(Some(_))) {
                        return;
                    }
                }
                let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
            })
        };
        let result = (|| {
            let mut out = BufReader::new(stdout.ok_or_else(|| self.unavailable("no output"))?);
            for entry in wanted {
                let mut header = String::new();
                out.read_line(&mut header)
                    .map_err(|e| self.unavailable(format!("git cat-file: {e}")))?;
                let mut f = header.split_ascii_whitespace();
                let (id, kind, size) = (f.next(), f.next(), f.next());
                if id != Some(entry.blob.as_str()) || kind != Some("blob") {
                    return Err(self.unavailable(format!(
                        "git cat-file answered {:?} for {}",
                        header.trim(),
                        entry.path
                    )));
                }
                let size: u64 = size.and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
                if size != entry.size {
                    return Err(self.unavailable(format!("{}: size changed", entry.path)));
                }
                let mut bytes = Vec::with_capacity(size as usize);
                (&mut out)
                    .take(size)
                    .read_to_end(&mut bytes)
                    .map_err(|e| self.unavailable(format!("git cat-file: {e}")))?;
                let mut newline = [0u8; 1];
                out.read_exact(&mut newline)
                    .map_err(|e| self.unavailable(format!("git cat-file: {e}")))?;
                if bytes.len() as u64 != size {
                    return Err(self.unavailable("git cat-file stopped early".to_string()));
                }
                each(entry, bytes)?;
            }
            Ok(())
        })();
        let _ = writer.join();
        {
            let mut c = child.lock().unwrap_or_else(|e| e.into_inner());
            if result.is_err() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
        let _ = watchdog.join();
        result
    }
}

/// `path` as a URL path: each segment percent-encoded but for unreserved characters.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl DocumentSource for GitSource {
    fn kind(&self) -> &'static str {
        "git"
    }

    fn location(&self) -> String {
        format!(
            "{}#{}",
            without_credentials(&self.settings.url),
            self.settings.reference
        )
    }

    fn scan(
        &self,
        request: &ScanRequest<'_>,
        sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
    ) -> Result<Scanned, ScanError> {
        self.fetch()?;
        let commit = self.tip()?;
        let (entries, skipped) = self.tree()?;
        let mut scanned = Scanned {
            cursor: Some(commit.clone()),
            requests: 4,
            bytes: 0,
        };
        let mut held: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let mut to_read = Vec::new();
        for entry in &entries {
            held.insert(entry.path.clone());
            if request.known.get(&entry.path) == Some(&entry.blob) {
                sink(ScanEvent::Unchanged {
                    path: entry.path.clone(),
                })?;
            } else if entry.size > request.max_item_bytes {
                sink(ScanEvent::Failed {
                    path: entry.path.clone(),
                    reason: format!(
                        "{} bytes, over the bound of {} (max_document_bytes)",
                        entry.size, request.max_item_bytes
                    ),
                })?;
            } else {
                to_read.push(entry);
            }
        }
        for (path, reason) in skipped {
            if held.insert(path.clone()) {
                sink(ScanEvent::Failed { path, reason })?;
            }
        }
        if to_read.is_empty() {
            scanned.requests -= 1;
        }
        // What is gone goes first (the listing is complete): a file that became a folder
        // (`a` -> `a/b.md`) leaves before what replaces it is written.
        for path in request.known.keys() {
            if !held.contains(path) {
                sink(ScanEvent::Gone {
                    path: path.clone(),
                    reason: format!("not in {} at {}", self.settings.reference, &commit[..12]),
                })?;
            }
        }
        self.read_blobs(&to_read, &mut |entry, bytes| {
            scanned.bytes += bytes.len() as u64;
            sink(ScanEvent::Changed {
                item: self.item(entry, &commit),
                bytes,
            })
        })?;
        Ok(scanned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            without_credentials("https://bot:s3cret@git.example/a/b.git"),
            "https://git.example/a/b.git"
        );
        assert_eq!(without_credentials("git@host:a/b.git"), "git@host:a/b.git");
        assert_eq!(without_credentials("/srv/repo"), "/srv/repo");
    }

    #[test]
    fn paths_are_encoded_per_segment() {
        assert_eq!(
            encode_path("docs/出差 规定.md"),
            "docs/%E5%87%BA%E5%B7%AE%20%E8%A7%84%E5%AE%9A.md"
        );
    }
}
