//! The document-source port: where documents come from before they are in the knowledge base
//! (a git repository, a web site, a file share), and the mirror a sync copies them into.

use std::collections::BTreeMap;

use crate::contracts::Timestamp;

/// One item a source holds now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceItem {
    /// Where it lives inside the source, as a relative path (`/`-separated, no empty, `.` or
    /// `..` segment): the path of its copy in the mirror.
    pub path: String,
    /// What changes whenever its bytes do (a git blob ID, an HTTP entity tag with its
    /// `Last-Modified`, a WebDAV `getetag`); the source compares it with the one it was given.
    pub stamp: String,
    /// How people name it at the source: `docs/a.md@3f2c1e0` (path at commit), a page's URL.
    pub reference: String,
    /// Where a browser shows it at that revision (a permalink), when the source has one.
    pub link: Option<String>,
}

/// What a scan found of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanEvent {
    /// New, or changed since its known stamp: its bytes, at most the request's bound.
    Changed {
        /// The item now.
        item: SourceItem,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// Held with the stamp it was known by: nothing of it was transferred beyond the check.
    Unchanged {
        /// Its path.
        path: String,
    },
    /// Known, and no longer held (deleted, moved away, answered 404 or 410).
    Gone {
        /// Its path.
        path: String,
        /// How the source told (`deleted in 9a1b2c3`, `404 Not Found`).
        reason: String,
    },
    /// Held, but not to be had now (a failed request, over the size bound, a link or a
    /// submodule): the copy of an earlier sync, if any, stands.
    Failed {
        /// Its path.
        path: String,
        /// Why, in words.
        reason: String,
    },
}

impl ScanEvent {
    /// The item's path.
    pub fn path(&self) -> &str {
        match self {
            ScanEvent::Changed { item, .. } => &item.path,
            ScanEvent::Unchanged { path }
            | ScanEvent::Gone { path, .. }
            | ScanEvent::Failed { path, .. } => path,
        }
    }
}

/// What a scan is given.
#[derive(Debug, Clone, Copy)]
pub struct ScanRequest<'a> {
    /// The stamp of every item the last sync holds, by path.
    pub known: &'a BTreeMap<String, String>,
    /// Where the last complete scan ended (a commit), if the source keeps one.
    pub cursor: Option<&'a str>,
    /// Most bytes of one item: a larger one is [`ScanEvent::Failed`], read no further than
    /// the bound.
    pub max_item_bytes: u64,
}

/// What a complete scan cost, and where it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Where the next scan starts (a commit), if the source keeps one.
    pub cursor: Option<String>,
    /// Requests made (HTTP requests; git commands run).
    pub requests: u64,
    /// Bytes of items transferred.
    pub bytes: u64,
}

/// Why a scan did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// The source cannot be reached or read now (network, server error, a fetch that failed).
    /// Temporary.
    #[error("{kind} source {location} is unavailable: {message}")]
    Unavailable {
        /// Adapter kind.
        kind: &'static str,
        /// Where (no credential).
        location: String,
        /// What happened.
        message: String,
    },
    /// The source refused the credentials, or names what is not there (a branch that is gone,
    /// a start URL outside the prefix). Not temporary.
    #[error("{kind} source {location}: {message}")]
    Refused {
        /// Adapter kind.
        kind: &'static str,
        /// Where (no credential).
        location: String,
        /// What happened.
        message: String,
    },
    /// What the scan reported could not be taken (the mirror could not be written).
    #[error("the sync stopped: {0}")]
    Stopped(String),
}

impl ScanError {
    /// True when retrying later can help.
    pub fn is_temporary(&self) -> bool {
        matches!(self, ScanError::Unavailable { .. })
    }
}

/// Where documents come from before they are in the knowledge base.
///
/// # Contract
///
/// - [`scan`](Self::scan) reports every item the source holds now exactly once, to `sink`,
///   and every path of `known` that it no longer holds as [`ScanEvent::Gone`]: an item whose
///   stamp equals its known one is [`ScanEvent::Unchanged`] and its bytes MUST NOT be
///   transferred (a conditional request that answers 304, a tree entry compared, a listing's
///   entity tag); any other is [`ScanEvent::Changed`] with its bytes and its stamp now, or
///   [`ScanEvent::Failed`] when it cannot be had (the bound of `max_item_bytes` is checked
///   before more than that is read).
/// - A stamp MUST change whenever the item's bytes do.
/// - Paths are relative (`/`-separated; no empty, `.` or `..` segment; no segment starting
///   with `.`), each item's path unique.
/// - A scan that cannot list the source (unreachable, credentials refused, the branch gone)
///   MUST fail with [`ScanError`] before it reports any [`ScanEvent::Gone`]: a source that
///   cannot be read never empties the knowledge base.
/// - An error `sink` returns stops the scan with it.
/// - [`location`](Self::location) never shows a credential.
pub trait DocumentSource: Send + Sync {
    /// The adapter's kind: `git`, `web`, `webdav`, `memory`.
    fn kind(&self) -> &'static str;

    /// Where the source is (a URL or path), without credentials.
    fn location(&self) -> String;

    /// Scans the source against what the last sync holds.
    fn scan(
        &self,
        request: &ScanRequest<'_>,
        sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
    ) -> Result<Scanned, ScanError>;
}

/// What the last sync of one item recorded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MirroredItem {
    /// The stamp it was copied at.
    pub stamp: String,
    /// Its reference at the source.
    pub reference: String,
    /// Its permalink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Since when the source says it is gone, while its grace period runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_since: Option<Timestamp>,
}

/// How one sync of a source ended, kept with its state for `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncOutcome {
    /// When it began.
    pub at: Option<Timestamp>,
    /// Items copied for the first time.
    pub added: usize,
    /// Items copied again, changed.
    pub changed: usize,
    /// Items the source still holds unchanged.
    pub unchanged: usize,
    /// Items removed from the mirror.
    pub removed: usize,
    /// Items the source no longer holds, kept until their grace period ends.
    pub pending_removal: usize,
    /// Items that could not be had, by path, with why.
    pub failed: Vec<(String, String)>,
    /// Requests the scan made.
    pub requests: u64,
    /// Bytes of items it transferred.
    pub bytes: u64,
    /// The error that stopped it, if one did (its items are then as the last sync left them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything a mirror keeps of its source between syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncState {
    /// The source's kind when this state was written.
    pub kind: String,
    /// Its location then.
    pub location: String,
    /// Where the last complete scan ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Every item the mirror holds, by path.
    pub items: BTreeMap<String, MirroredItem>,
    /// The last sync's outcome.
    #[serde(default)]
    pub last: SyncOutcome,
    /// When the last sync that completed ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_success: Option<Timestamp>,
}

/// Why the mirror failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    /// The path cannot be written there (malformed, a link on the way, the store's own files).
    /// Not temporary: that item fails alone.
    #[error("{path}: {reason}")]
    Refused {
        /// The item's path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The mirror cannot be read or written now (disk full, permissions, another sync holds
    /// it). Stops the sync.
    #[error("{0}")]
    Io(String),
}

/// The copy a sync keeps of one source, where the knowledge base reads it.
///
/// # Contract
///
/// - [`put`](Self::put) makes `path` hold exactly `bytes` and `item`'s reference (a reader of
///   the mirror sees both or the earlier ones, never half a file); a path it must not write
///   (malformed, through a link) is [`MirrorError::Refused`] and changes nothing.
/// - [`remove`](Self::remove) takes `path` out; removing what is not there succeeds.
/// - [`save_state`](Self::save_state) replaces the state atomically; [`load_state`](Self::load_state)
///   reads what was last saved, `None` before the first.
pub trait SourceMirror: Send + Sync {
    /// The state the last sync saved.
    fn load_state(&self) -> Result<Option<SyncState>, MirrorError>;
    /// Saves the state.
    fn save_state(&self, state: &SyncState) -> Result<(), MirrorError>;
    /// Writes one item's copy.
    fn put(&self, item: &SourceItem, bytes: &[u8]) -> Result<(), MirrorError>;
    /// Removes one item's copy.
    fn remove(&self, path: &str) -> Result<(), MirrorError>;
}

/// True when `path` is a source item path the contract allows: relative, `/`-separated, no
/// empty, `.` or `..` segment, none starting with `.`, no control character or `\`.
pub fn is_item_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 4096
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path
            .split('/')
            .all(|s| !s.is_empty() && !s.starts_with('.'))
}

/// True when `name` can name a source (and the folder of its mirror): 1–64 of `a-z`, `0-9`,
/// `-`, `_`, starting with a letter or digit.
pub fn is_source_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_are_relative_and_plain() {
        for ok in ["a.md", "docs/说明.md", "a/b/c.pdf", "x..y"] {
            assert!(is_item_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "./a",
            "../a",
            "a/../b",
            ".git/x",
            "a\\b",
            "a\nb",
            "a/.hidden",
        ] {
            assert!(!is_item_path(bad), "{bad:?}");
        }
    }

    #[test]
    fn sync_state_round_trips() {
        let mut state = SyncState {
            kind: "git".into(),
            location: "https://git.example/r.git".into(),
            cursor: Some("abc".into()),
            ..SyncState::default()
        };
        state.items.insert(
            "a.md".into(),
            MirroredItem {
                stamp: "s".into(),
                reference: "a.md@abc".into(),
                link: None,
                missing_since: Some(Timestamp::from_unix(5)),
            },
        );
        let text = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<SyncState>(&text).unwrap(), state);
    }
}
