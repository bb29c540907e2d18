//! Paths of documents inside a knowledge-base folder: one canonical form, the folder scan's
//! ignore rules, and writing, moving and restoring files without following a symbolic link.
//!
//! A [`KbPath`] is validated on the raw string, never through `Path::components()` (which
//! silently drops empty and `.` segments): `a//b.md`, `a/./b.md`, `b.md/`, `b.md/.` are refused,
//! so the string a caller sends is the string stored in the manifest, compared with `==`.
//! Unicode is not normalised: a path must already be in NFC (a decomposed `é` is refused rather
//! than silently rewritten), and look-alike characters (fullwidth `．` and `／`, the one-dot
//! leader `․`, the division slash `∕`) are ordinary characters of a segment, never dots or
//! separators.
//!
//! Errors name paths relative to the knowledge-base root only; the server's absolute paths
//! never reach a caller.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// The longest segment accepted, in bytes (the usual file-name limit).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Why a path cannot be used; the message names the path relative to the root only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is malformed, hidden, ignored, or goes through a symbolic link: the caller's
    /// mistake.
    #[error("{0}")]
    Invalid(String),
    /// Something else is in the way on disk: a file where the path needs a folder, a folder
    /// where it needs a file. Told apart from a free path, this would reveal what another
    /// scope keeps in the folder, so the service answers it as "not found".
    #[error("{0}")]
    Occupied(String),
    /// The file system refused (permissions, disk full…).
    #[error("{0}")]
    Io(String),
}

/// A canonical path of a Markdown document relative to the knowledge-base root: segments
/// separated by single `/`, none empty, `.`, `..` or hidden, no control character, no `\`,
/// no `:`, in NFC, ending in `.md` or `.markdown`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KbPath(String);

impl KbPath {
    /// Validates `raw` as it is (nothing is dropped or rewritten).
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        let bad = |why: &str| Err(PathError::Invalid(format!("path {raw:?} {why}")));
        if raw.is_empty() {
            return bad("must not be empty");
        }
        if raw.len() > MAX_PATH_BYTES {
            return bad(&format!("is longer than {MAX_PATH_BYTES} bytes"));
        }
        if raw.starts_with('/') {
            return bad("must be relative (no leading /)");
        }
        if raw.ends_with('/') {
            return bad("must name a file (no trailing /)");
        }
        if raw.contains('\\') {
            return bad("must use / as the separator (no backslash)");
        }
        if raw.chars().any(char::is_control) {
            return bad("must not contain control characters");
        }
        if raw.contains(':') {
            return bad("must not contain ':' (drive letters, streams)");
        }
        if !unicode_normalization::is_nfc(raw) {
            return bad("must be in Unicode normalization form NFC");
        }
        for seg in raw.split('/') {
            if seg.is_empty() {
                return bad("must not contain an empty segment (//)");
            }
            if seg == "." || seg == ".." {
                return bad("must not contain a . or .. segment");
            }
            if seg.starts_with('.') {
                return bad("must not name a hidden file or folder");
            }
            if seg.ends_with('.') || seg.ends_with(' ') {
                return bad("must not have a segment ending in a dot or a space");
            }
            if seg.len() > MAX_SEGMENT_BYTES {
                return bad(&format!(
                    "has a segment longer than {MAX_SEGMENT_BYTES} bytes"
                ));
            }
        }
        let name = raw.rsplit('/').next().unwrap_or(raw);
        let ext = name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        if !matches!(ext.as_str(), "md" | "markdown") {
            return bad("must end in .md or .markdown");
        }
        Ok(Self(raw.to_string()))
    }

    /// The path as stored in the manifest.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The file under `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        p.extend(self.segments());
        p
    }

    /// The sidecar metadata file the loader reads beside this document
    /// (`x.md` → `x.metadata.yaml`), relative to the root.
    pub fn sidecar(&self) -> String {
        sidecar_of(&self.0)
    }
}

impl std::fmt::Display for KbPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a sidecar's name adds to its document's folder and stem.
pub const SIDECAR_SUFFIX: &str = ".metadata.yaml";

/// The sidecar of a document at `rel` (relative to the root), as the loader names it:
/// `<folder>/<stem>` + [`SIDECAR_SUFFIX`].
pub fn sidecar_of(rel: &str) -> String {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, rel),
    };
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let file = format!("{stem}{SIDECAR_SUFFIX}");
    match dir {
        Some(d) => format!("{d}/{file}"),
        None => file,
    }
}

/// The sidecar of the file at `rel` alone (`guide.pdf` → `guide.pdf.metadata.yaml`): what it
/// says wins over the shared sidecar of [`sidecar_of`] and over front matter.
pub fn own_sidecar_of(rel: &str) -> String {
    format!("{rel}{SIDECAR_SUFFIX}")
}

/// A recorded path (from the manifest) checked structurally: relative, `/`-separated, no
/// empty, `.` or `..` segment. Files the folder scan found may carry names the API would not
/// create (`:` or a decomposed accent); they can still be replaced or deleted at that path.
pub fn check_recorded(rel: &str) -> Result<(), PathError> {
    let ok = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.ends_with('/')
        && !rel.contains('\\')
        && !rel.contains('\0')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if ok {
        Ok(())
    } else {
        Err(PathError::Invalid(format!(
            "recorded path {rel:?} cannot be changed over the API"
        )))
    }
}

/// Whether the folder scan (`loader::load_folder` with `config`) would skip `rel` under
/// `root`: because it lies in the store's folder, which the scan never enters, or because of a
/// `.zhikuignore`, `.ignore` or `.gitignore` file. The reason, naming the ignore file, or
/// `None` when the scan would see it. Every directory on the way is checked too, as the scan
/// does not descend into an ignored directory.
pub fn scan_ignores(
    root: &Path,
    rel: &str,
    config: &crate::config::LoaderConfig,
) -> Option<String> {
    if let (Some(store_dir), Ok(real_root)) = (&config.store_dir, root.canonicalize())
        && real_root.join(rel).starts_with(store_dir)
    {
        return Some("the store's folder lies there".into());
    }
    const KINDS: [&str; 3] = [crate::config::CUSTOM_IGNORE, ".ignore", ".gitignore"];
    let segs: Vec<&str> = rel.split('/').collect();
    // Per directory level, from the root down: its matchers in the order the walker ranks them.
    let mut levels: Vec<(String, [Gitignore; 3])> = Vec::new();
    let mut dir = root.to_path_buf();
    let mut dir_rel = String::new();
    for (depth, seg) in segs.iter().enumerate() {
        let matchers = KINDS.map(|name| {
            let file = dir.join(name);
            let mut b = GitignoreBuilder::new(&dir);
            if file.exists() {
                let _ = b.add(&file);
            }
            b.build().unwrap_or_else(|_| Gitignore::empty())
        });
        levels.push((dir_rel.clone(), matchers));
        let candidate = dir.join(seg);
        let is_dir = depth + 1 < segs.len();
        for (kind, name) in KINDS.iter().enumerate() {
            // The deepest level with a matching rule decides, for each kind; the first kind
            // with a decision wins.
            let decided =
                levels
                    .iter()
                    .rev()
                    .find_map(|(at, m)| match m[kind].matched(&candidate, is_dir) {
                        Match::None => None,
                        Match::Ignore(_) => Some(Some(at.clone())),
                        Match::Whitelist(_) => Some(None),
                    });
            match decided {
                Some(Some(at)) => {
                    let file = if at.is_empty() {
                        name.to_string()
                    } else {
                        format!("{at}/{name}")
                    };
                    return Some(format!("{file} excludes it from the folder scan"));
                }
                Some(None) => break,
                None => continue,
            }
        }
        dir = candidate;
        dir_rel = if dir_rel.is_empty() {
            seg.to_string()
        } else {
            format!("{dir_rel}/{seg}")
        };
    }
    None
}

fn io(what: &str, rel: &str, e: &std::io::Error) -> PathError {
    // `io::Error`'s display carries no path; only the relative one is named.
    PathError::Io(format!("cannot {what} {rel}: {}", e.kind()))
}

/// What is at a path relative to the root, looked at without following a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing.
    Nothing,
    /// A regular file.
    File,
}

/// Checks `rel` under `root` without following links: every existing ancestor is a real
/// directory (not a symbolic link), and the path itself is nothing or a regular file.
pub fn inspect(root: &Path, rel: &str) -> Result<Found, PathError> {
    let segs: Vec<&str> = rel.split('/').collect();
    let mut p = root.to_path_buf();
    for (i, seg) in segs.iter().enumerate() {
        p.push(seg);
        let shown = segs[..=i].join("/");
        let last = i + 1 == segs.len();
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(PathError::Invalid(format!(
                    "path {rel:?} goes through the symbolic link {shown}; links are not written through"
                )));
            }
            Ok(m) if last => {
                return if m.is_file() {
                    Ok(Found::File)
                } else {
                    Err(PathError::Occupied(format!(
                        "path {rel:?} names a folder, not a file"
                    )))
                };
            }
            Ok(m) if !m.is_dir() => {
                return Err(PathError::Occupied(format!(
                    "path {rel:?} goes through {shown}, which is a file, not a folder"
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Nothing),
            Err(e) => return Err(io("inspect", &shown, &e)),
        }
    }
    Ok(Found::Nothing)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh hidden name beside `name` (the folder scan skips hidden files, so a leftover after
/// a crash is never indexed).
fn temp_name(name: &str, purpose: &str) -> String {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    // At most 64 bytes of the name (on a character boundary): the temp name stays far below
    // the 255-byte file-name limit whatever the script.
    let mut cut = name.len().min(64);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = &name[..cut];
    format!(".{stem}.{}-{n}.zhiku-{purpose}", std::process::id())
}

/// What [`settle_leftovers`] did with one file a killed writer left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    /// An unfinished write's temporary file, removed.
    Removed(String),
    /// A file moved aside by a delete whose manifest was never saved: put back.
    Restored(String),
}

/// Settles the hidden files a killed writer left in the folder (`.NAME.PID-N.zhiku-tmp`,
/// `.NAME.PID-N.zhiku-deleted`; the scan never reads them). An unfinished write's temporary
/// file is removed. A file moved aside by a delete is put back when the manifest still lists
/// its document (`recorded`: the recorded paths; a sidecar goes back with its document) and
/// nothing has taken its place; otherwise the delete was recorded, and the file is removed.
/// Hidden folders (`.git`, the store) are not entered. Only a writer may call this.
pub fn settle_leftovers(root: &Path, recorded: &[&str]) -> Vec<Leftover> {
    let mut wanted: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for rel in recorded {
        wanted.insert((*rel).to_string());
        wanted.insert(sidecar_of(rel));
        wanted.insert(own_sidecar_of(rel));
    }
    let mut done = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            if kind.is_dir() {
                if !name.starts_with('.') {
                    dirs.push((entry.path(), format!("{rel}/")));
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let Some((stem, purpose)) = leftover_parts(&name) else {
                continue;
            };
            let shown = format!("{prefix}{stem}");
            // The stem is the original name cut at 64 bytes: the recorded names it fits.
            let original = wanted.iter().find(|w| {
                w.strip_prefix(prefix.as_str()).is_some_and(|n| {
                    !n.contains('/') && (n == stem || (stem.len() >= 60 && n.starts_with(stem)))
                })
            });
            let restored = purpose == "deleted"
                && original.is_some_and(|o| {
                    !root.join(o).exists() && std::fs::rename(entry.path(), root.join(o)).is_ok()
                });
            if restored {
                done.push(Leftover::Restored(original.cloned().unwrap_or(shown)));
            } else if std::fs::remove_file(entry.path()).is_ok() {
                done.push(Leftover::Removed(rel));
            }
        }
    }
    done.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    done
}

/// `(stem, purpose)` of a name [`temp_name`] made: `.STEM.PID-N.zhiku-PURPOSE`.
fn leftover_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix('.')?;
    let (rest, purpose) = rest.rsplit_once(".zhiku-")?;
    if !matches!(purpose, "tmp" | "deleted") {
        return None;
    }
    let (stem, counter) = rest.rsplit_once('.')?;
    let (pid, n) = counter.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n) && !stem.is_empty()).then_some((stem, purpose))
}

/// The parent folder of `rel`, opened after every component was checked, and a path that
/// reaches entries inside that very folder (on Linux, through the opened handle, so a folder
/// swapped for a link after the check is not followed).
struct Parent {
    _handle: File,
    via: PathBuf,
}

fn open_parent(root: &Path, rel: &str, created: &mut Vec<PathBuf>) -> Result<Parent, PathError> {
    let segs: Vec<&str> = rel.split('/').collect();
    let mut dir = root.to_path_buf();
    for (i, seg) in segs[..segs.len() - 1].iter().enumerate() {
        dir.push(seg);
        let shown = segs[..=i].join("/");
        let check = |dir: &Path| match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => Err(PathError::Invalid(format!(
                "path {rel:?} goes through the symbolic link {shown}; links are not written through"
            ))),
            Ok(m) if !m.is_dir() => Err(PathError::Occupied(format!(
                "path {rel:?} goes through {shown}, which is a file, not a folder"
            ))),
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io("inspect", &shown, &e)),
        };
        if !check(&dir)? {
            match std::fs::create_dir(&dir) {
                Ok(()) => created.push(dir.clone()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io("create the folder", &shown, &e)),
            }
            // Re-check what is there now: a link raced in is refused.
            if !check(&dir)? {
                return Err(PathError::Io(format!("cannot create the folder {shown}")));
            }
        }
    }
    let handle = File::open(&dir).map_err(|e| io("open the folder of", rel, &e))?;
    let opened = handle
        .metadata()
        .map_err(|e| io("open the folder of", rel, &e))?;
    let now = std::fs::symlink_metadata(&dir).map_err(|e| io("open the folder of", rel, &e))?;
    if !opened.is_dir() || !same_file(&opened, &now) {
        return Err(PathError::Invalid(format!(
            "the folder of {rel:?} changed while it was written"
        )));
    }
    let via = handle_path(&handle).unwrap_or(dir);
    Ok(Parent {
        _handle: handle,
        via,
    })
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    !b.file_type().is_symlink()
}

#[cfg(target_os = "linux")]
fn handle_path(handle: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let p = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    p.is_dir().then_some(p)
}

#[cfg(not(target_os = "linux"))]
fn handle_path(_: &File) -> Option<PathBuf> {
    None
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// Writes `contents` to `rel` under `root` atomically (a hidden temporary file in the same
/// folder, synced, then renamed over the target), creating missing folders. Refused when any
/// folder on the way or the target is a symbolic link, or an ancestor is a file. On any error
/// the temporary file and the folders this call created are removed.
pub fn write_file(root: &Path, rel: &str, contents: &[u8]) -> Result<(), PathError> {
    let mut created = Vec::new();
    let result = write_inner(root, rel, contents, &mut created);
    if result.is_err() {
        for dir in created.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
    result
}

fn write_inner(
    root: &Path,
    rel: &str,
    contents: &[u8],
    created: &mut Vec<PathBuf>,
) -> Result<(), PathError> {
    let parent = open_parent(root, rel, created)?;
    let name = file_name(rel);
    let target = parent.via.join(name);
    match std::fs::symlink_metadata(&target) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(PathError::Invalid(format!(
                "path {rel:?} is a symbolic link; links are not written through"
            )));
        }
        Ok(m) if !m.is_file() => {
            return Err(PathError::Occupied(format!(
                "path {rel:?} names a folder, not a file"
            )));
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("inspect", rel, &e)),
    }
    let tmp = parent.via.join(temp_name(name, "tmp"));
    let written = (|| {
        // `create_new` never follows a link nor reuses an existing file.
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("write", rel, &e));
    }
    if let Ok(dir) = File::open(&parent.via) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A file moved aside to a hidden name in its folder, to be deleted for good or put back.
#[derive(Debug)]
pub struct MovedAside {
    from: PathBuf,
    to: PathBuf,
}

impl MovedAside {
    /// Deletes the moved file.
    pub fn discard(self) -> std::io::Result<()> {
        std::fs::remove_file(&self.to)
    }

    /// Puts the file back where it was.
    pub fn restore(self) -> std::io::Result<()> {
        std::fs::rename(&self.to, &self.from)
    }
}

/// Moves the regular file `rel` under `root` aside (same folder, hidden name), refusing to go
/// through a symbolic link. `Ok(None)` when there is no file.
pub fn move_aside(root: &Path, rel: &str) -> Result<Option<MovedAside>, PathError> {
    match inspect(root, rel) {
        Ok(Found::Nothing) => return Ok(None),
        Ok(Found::File) => {}
        Err(e) => return Err(e),
    }
    let from = root.join(rel);
    let parent = from
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    let to = parent.join(temp_name(file_name(rel), "deleted"));
    match std::fs::rename(&from, &to) {
        Ok(()) => Ok(Some(MovedAside { from, to })),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("delete", rel, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::LoaderConfig;

    #[test]
    fn a_killed_writers_leftovers_are_settled_by_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // A delete killed before its manifest was saved: document and sidecar moved aside.
        put("a/.doc.md.77-0.zhiku-deleted", "doc");
        put("a/.doc.metadata.yaml.77-1.zhiku-deleted", "k: v\n");
        // A delete that was recorded: its document is no longer listed.
        put("a/.gone.md.77-2.zhiku-deleted", "gone");
        // An unfinished write.
        put("b/.new.md.77-3.zhiku-tmp", "half");
        // A recorded document whose file was written again meanwhile: never overwritten.
        put("c/kept.md", "new");
        put("c/.kept.md.77-4.zhiku-deleted", "old");
        // Not ours, or in a hidden folder: untouched.
        put(".git/.x.md.1-1.zhiku-tmp", "git");
        put("a/.hidden.md", "hidden");
        put("a/.y.md.pid-1.zhiku-tmp", "not a counter");
        let done = settle_leftovers(root, &["a/doc.md", "c/kept.md"]);
        assert_eq!(
            done,
            vec![
                Leftover::Removed("a/.gone.md.77-2.zhiku-deleted".into()),
                Leftover::Removed("b/.new.md.77-3.zhiku-tmp".into()),
                Leftover::Removed("c/.kept.md.77-4.zhiku-deleted".into()),
                Leftover::Restored("a/doc.md".into()),
                Leftover::Restored("a/doc.metadata.yaml".into()),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join("a/doc.md")).unwrap(),
            "doc"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("c/kept.md")).unwrap(),
            "new"
        );
        for untouched in [
            ".git/.x.md.1-1.zhiku-tmp",
            "a/.hidden.md",
            "a/.y.md.pid-1.zhiku-tmp",
        ] {
            assert!(root.join(untouched).exists(), "{untouched}");
        }
        assert!(settle_leftovers(root, &["a/doc.md", "c/kept.md"]).is_empty());
    }

    #[test]
    fn the_canonical_form_is_checked_on_the_raw_string() {
        for bad in [
            "",
            "/etc/x.md",
            "../x.md",
            "a/../../x.md",
            "a//b.md",
            "operations//release-checklist.md",
            "a/./b.md",
            "./b.md",
            "x.md/.",
            "a/b.md/",
            "x.md/..",
            ".hidden.md",
            "a/.git/x.md",
            "a\\b.md",
            "a\u{0}.md",
            "a\u{7f}.md",
            "a\u{85}.md",
            "C:/x.md",
            "C:x.md",
            "x.md:stream",
            "x.txt",
            "x",
            "a./b.md",
            "a /b.md",
            "cafe\u{301}.md",
            "..md.md",
        ] {
            assert!(KbPath::parse(bad).is_err(), "{bad:?} was accepted");
        }
        for good in [
            "x.md",
            "a/b/c.markdown",
            "指南/安装.md",
            "X.MD",
            "caf\u{e9}.md",
            "\u{ff0e}\u{ff0e}/x.md",
            "a\u{ff0f}b.md",
            "\u{2024}/x.md",
            "a\u{2215}b.md",
            "\u{2024}\u{2024}.md",
        ] {
            let p = KbPath::parse(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            assert_eq!(p.as_str(), good, "nothing is rewritten");
        }
    }

    #[test]
    fn sidecars_are_named_as_the_loader_names_them() {
        for rel in ["x.md", "a/b.markdown", "a/b.c.md", "指南/安装.md"] {
            let expected = Path::new(rel).with_extension("metadata.yaml");
            assert_eq!(sidecar_of(rel), expected.to_str().unwrap());
        }
    }

    #[test]
    fn ignore_rules_match_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".zhikuignore"), "drafts/\nsecret*.md\n").unwrap();
        std::fs::create_dir_all(root.join("docs/keep")).unwrap();
        std::fs::write(root.join("docs/.gitignore"), "*.md\n!keep/\n!keep/*.md\n").unwrap();
        std::fs::write(root.join(".ignore"), "tmp.md\n").unwrap();
        assert!(scan_ignores(root, "drafts/x.md", &LoaderConfig::default()).is_some());
        assert!(scan_ignores(root, "a/drafts/x.md", &LoaderConfig::default()).is_some());
        assert!(scan_ignores(root, "secret-plan.md", &LoaderConfig::default()).is_some());
        assert!(scan_ignores(root, "tmp.md", &LoaderConfig::default()).is_some());
        assert!(scan_ignores(root, "docs/x.md", &LoaderConfig::default()).is_some());
        assert_eq!(
            scan_ignores(root, "docs/keep/x.md", &LoaderConfig::default()),
            None
        );
        assert_eq!(scan_ignores(root, "x.md", &LoaderConfig::default()), None);
        // The same files, written, are what the scan finds.
        for rel in [
            "drafts/x.md",
            "a/drafts/x.md",
            "secret-plan.md",
            "tmp.md",
            "docs/x.md",
            "docs/keep/x.md",
            "x.md",
        ] {
            write_file(root, rel, b"# t\n").unwrap();
        }
        let loaded =
            crate::loader::load_folder(root, &crate::loader::LoaderConfig::default()).unwrap();
        let seen: Vec<String> = loaded
            .documents
            .iter()
            .map(|d| d.attributes().source.to_string())
            .collect();
        assert_eq!(seen, ["docs/keep/x.md", "x.md"]);
    }

    #[cfg(unix)]
    #[test]
    fn writes_never_go_through_a_link_and_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("kb");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("t.md"), "outside").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("t.md"), root.join("t.md")).unwrap();
        std::fs::write(root.join("file.md"), "x").unwrap();
        for rel in ["linked/x.md", "linked/new/x.md", "t.md", "file.md/x.md"] {
            let e = write_file(&root, rel, b"attack").unwrap_err();
            if rel == "file.md/x.md" {
                assert!(matches!(e, PathError::Occupied(_)), "{rel}: {e}");
            } else {
                assert!(matches!(e, PathError::Invalid(_)), "{rel}: {e}");
            }
            assert!(!e.to_string().contains(dir.path().to_str().unwrap()));
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("t.md")).unwrap(),
            "outside"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        write_file(&root, "a/b/c.md", b"ok").unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.md")).unwrap(), b"ok");
        let leftovers: Vec<_> = walk(&root)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("zhiku-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let moved = move_aside(&root, "a/b/c.md").unwrap().unwrap();
        assert!(!root.join("a/b/c.md").exists());
        moved.restore().unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.md")).unwrap(), b"ok");
        assert!(move_aside(&root, "t.md").is_err(), "a link is not moved");
        assert!(move_aside(&root, "none.md").unwrap().is_none());
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
        out
    }
}
