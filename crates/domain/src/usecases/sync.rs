//! Syncing a document source into its mirror: what changed at the source is copied, what is
//! gone is removed after its grace period, and the knowledge base's incremental indexing reads
//! the mirror like any folder (only the copies that changed are extracted again).

use std::collections::{BTreeMap, BTreeSet};

use crate::contracts::Timestamp;
use crate::ports::{
    DocumentSource, MirrorError, MirroredItem, ScanError, ScanEvent, ScanRequest, SourceMirror,
    SyncOutcome, SyncState,
};

/// How a sync treats its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncPolicy {
    /// How long an item the source no longer holds stays, in seconds, from the first sync that
    /// found it gone (0: removed by that sync).
    pub gone_after_secs: u64,
    /// Most bytes of one item.
    pub max_item_bytes: u64,
    /// Items copied between two saves of the state, so a sync killed midway does not copy
    /// them again.
    pub save_every: usize,
}

impl Default for SyncPolicy {
    fn default() -> Self {
        Self {
            gone_after_secs: 0,
            max_item_bytes: 64 * 1024 * 1024,
            save_every: 256,
        }
    }
}

/// Why a sync failed: nothing the scan had not reported was changed, and the state on record
/// is the last one saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// The source could not be scanned.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// The mirror could not be read or written.
    #[error("the mirror: {0}")]
    Mirror(#[from] MirrorError),
}

impl SyncError {
    /// True when retrying later can help.
    pub fn is_temporary(&self) -> bool {
        match self {
            SyncError::Scan(e) => e.is_temporary(),
            SyncError::Mirror(e) => matches!(e, MirrorError::Io(_)),
        }
    }
}

/// Syncs `source` into `mirror` at `now`.
///
/// Every item the scan reports changed is written to the mirror; an item reported gone is
/// removed once `policy.gone_after_secs` have passed since a sync first found it gone (it
/// leaves no earlier: an item that comes back in between is simply kept); a failed item keeps
/// the copy it had. The state (each item's stamp and reference, and the scan's cursor) is saved
/// every `policy.save_every` copies and at the end; a sync stopped by an error saves what it
/// copied and keeps the earlier cursor, so the next scan reports the rest again.
pub fn sync_source(
    source: &dyn DocumentSource,
    mirror: &dyn SourceMirror,
    policy: SyncPolicy,
    now: Timestamp,
) -> Result<SyncOutcome, SyncError> {
    let mut state = mirror.load_state()?.unwrap_or_default();
    // A cursor is a position in one source: another source (its URL changed) scans whole,
    // comparing stamps.
    let same_source = state.kind == source.kind() && state.location == source.location();
    if !same_source {
        state.cursor = None;
    }
    state.kind = source.kind().to_string();
    state.location = source.location();
    // Items already found gone are not offered as known: a source that reports changes since
    // its cursor would not mention them again, and one still not reported is still gone.
    let pending: BTreeSet<String> = state
        .items
        .iter()
        .filter(|(_, i)| i.missing_since.is_some())
        .map(|(p, _)| p.clone())
        .collect();
    let known: BTreeMap<String, String> = state
        .items
        .iter()
        .filter(|(p, _)| !pending.contains(*p))
        .map(|(p, i)| (p.clone(), i.stamp.clone()))
        .collect();
    let mut outcome = SyncOutcome {
        at: Some(now),
        ..SyncOutcome::default()
    };
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut since_save = 0usize;
    let cursor = state.cursor.clone();
    let request = ScanRequest {
        known: &known,
        cursor: cursor.as_deref(),
        max_item_bytes: policy.max_item_bytes,
    };
    let scanned = {
        let mut sink = |event: ScanEvent| -> Result<(), ScanError> {
            if !reported.insert(event.path().to_string()) {
                // Reported twice against the contract: the first word stands.
                return Ok(());
            }
            match event {
                ScanEvent::Changed { item, bytes } => {
                    let known_before = state
                        .items
                        .get(&item.path)
                        .is_some_and(|i| i.missing_since.is_none());
                    match mirror.put(&item, &bytes) {
                        Ok(()) => {}
                        Err(MirrorError::Refused { path, reason }) => {
                            outcome.failed.push((path, reason));
                            return Ok(());
                        }
                        Err(e @ MirrorError::Io(_)) => {
                            return Err(ScanError::Stopped(e.to_string()));
                        }
                    }
                    if known_before {
                        outcome.changed += 1;
                    } else {
                        outcome.added += 1;
                    }
                    state.items.insert(
                        item.path.clone(),
                        MirroredItem {
                            stamp: item.stamp,
                            reference: item.reference,
                            link: item.link,
                            missing_since: None,
                        },
                    );
                    since_save += 1;
                    if since_save >= policy.save_every.max(1) {
                        since_save = 0;
                        mirror
                            .save_state(&state)
                            .map_err(|e| ScanError::Stopped(e.to_string()))?;
                    }
                }
                ScanEvent::Unchanged { path } => {
                    outcome.unchanged += 1;
                    if let Some(i) = state.items.get_mut(&path) {
                        i.missing_since = None;
                    }
                }
                ScanEvent::Gone { path, .. } => {
                    gone(&mut state, &mut outcome, mirror, policy, now, &path)
                        .map_err(|e| ScanError::Stopped(e.to_string()))?;
                }
                ScanEvent::Failed { path, reason } => {
                    if let Some(i) = state.items.get_mut(&path) {
                        i.missing_since = None;
                    }
                    outcome.failed.push((path, reason));
                }
            }
            Ok(())
        };
        source.scan(&request, &mut sink)
    };
    let scanned = match scanned {
        Ok(s) => s,
        Err(e) => {
            outcome.error = Some(e.to_string());
            state.last = outcome;
            mirror.save_state(&state)?;
            return Err(e.into());
        }
    };
    // Pending removals the scan did not mention are still gone: their grace runs on.
    for path in pending.difference(&reported) {
        gone(&mut state, &mut outcome, mirror, policy, now, path)?;
    }
    outcome.requests = scanned.requests;
    outcome.bytes = scanned.bytes;
    state.cursor = scanned.cursor;
    state.last = outcome.clone();
    state.last_success = Some(now);
    mirror.save_state(&state)?;
    Ok(outcome)
}

/// An item the source no longer holds: its grace begins, runs on or ends with its removal.
fn gone(
    state: &mut SyncState,
    outcome: &mut SyncOutcome,
    mirror: &dyn SourceMirror,
    policy: SyncPolicy,
    now: Timestamp,
    path: &str,
) -> Result<(), MirrorError> {
    let Some(item) = state.items.get_mut(path) else {
        return Ok(());
    };
    let since = *item.missing_since.get_or_insert(now);
    let due = now.unix().saturating_sub(since.unix()) as u64 >= policy.gone_after_secs;
    if due {
        mirror.remove(path)?;
        state.items.remove(path);
        outcome.removed += 1;
    } else {
        outcome.pending_removal += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::ports::{Scanned, SourceItem};

    /// A source of fixed items that compares stamps itself, and can be made to fail.
    #[derive(Default)]
    struct Items {
        items: Mutex<BTreeMap<String, String>>,
        fail: Mutex<bool>,
    }

    impl DocumentSource for Items {
        fn kind(&self) -> &'static str {
            "test"
        }
        fn location(&self) -> String {
            "here".into()
        }
        fn scan(
            &self,
            request: &ScanRequest<'_>,
            sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
        ) -> Result<Scanned, ScanError> {
            if *self.fail.lock().unwrap() {
                return Err(ScanError::Unavailable {
                    kind: "test",
                    location: "here".into(),
                    message: "down".into(),
                });
            }
            let items = self.items.lock().unwrap().clone();
            for (path, text) in &items {
                if request.known.get(path) == Some(text) {
                    sink(ScanEvent::Unchanged { path: path.clone() })?;
                } else {
                    sink(ScanEvent::Changed {
                        item: SourceItem {
                            path: path.clone(),
                            stamp: text.clone(),
                            reference: format!("{path}@x"),
                            link: None,
                        },
                        bytes: text.as_bytes().to_vec(),
                    })?;
                }
            }
            for path in request.known.keys() {
                if !items.contains_key(path) {
                    sink(ScanEvent::Gone {
                        path: path.clone(),
                        reason: "deleted".into(),
                    })?;
                }
            }
            Ok(Scanned::default())
        }
    }

    #[derive(Default)]
    struct Mirror {
        files: Mutex<BTreeMap<String, Vec<u8>>>,
        state: Mutex<Option<SyncState>>,
    }

    impl SourceMirror for Mirror {
        fn load_state(&self) -> Result<Option<SyncState>, MirrorError> {
            Ok(self.state.lock().unwrap().clone())
        }
        fn save_state(&self, state: &SyncState) -> Result<(), MirrorError> {
            *self.state.lock().unwrap() = Some(state.clone());
            Ok(())
        }
        fn put(&self, item: &SourceItem, bytes: &[u8]) -> Result<(), MirrorError> {
            self.files
                .lock()
                .unwrap()
                .insert(item.path.clone(), bytes.to_vec());
            Ok(())
        }
        fn remove(&self, path: &str) -> Result<(), MirrorError> {
            self.files.lock().unwrap().remove(path);
            Ok(())
        }
    }

    fn set(source: &Items, path: &str, text: Option<&str>) {
        let mut items = source.items.lock().unwrap();
        match text {
            Some(t) => items.insert(path.into(), t.into()),
            None => items.remove(path),
        };
    }

    #[test]
    fn a_sync_copies_changes_and_removes_what_is_gone_after_its_grace() {
        let source = Items::default();
        let mirror = Mirror::default();
        set(&source, "a.md", Some("one"));
        set(&source, "b.md", Some("two"));
        let policy = SyncPolicy {
            gone_after_secs: 100,
            ..SyncPolicy::default()
        };
        let t = |s: i64| Timestamp::from_unix(1_000 + s);
        let first = sync_source(&source, &mirror, policy, t(0)).unwrap();
        assert_eq!((first.added, first.changed, first.unchanged), (2, 0, 0));
        set(&source, "a.md", Some("one, edited"));
        set(&source, "b.md", None);
        let second = sync_source(&source, &mirror, policy, t(10)).unwrap();
        assert_eq!(
            (second.changed, second.removed, second.pending_removal),
            (1, 0, 1)
        );
        assert!(
            mirror.files.lock().unwrap().contains_key("b.md"),
            "within its grace"
        );
        let third = sync_source(&source, &mirror, policy, t(50)).unwrap();
        assert_eq!((third.unchanged, third.pending_removal), (1, 1));
        let fourth = sync_source(&source, &mirror, policy, t(110)).unwrap();
        assert_eq!(fourth.removed, 1);
        assert_eq!(
            mirror.files.lock().unwrap().keys().collect::<Vec<_>>(),
            ["a.md"]
        );
    }

    #[test]
    fn an_item_back_within_its_grace_is_kept_and_a_failed_scan_removes_nothing() {
        let source = Items::default();
        let mirror = Mirror::default();
        set(&source, "a.md", Some("one"));
        let policy = SyncPolicy {
            gone_after_secs: 100,
            ..SyncPolicy::default()
        };
        sync_source(&source, &mirror, policy, Timestamp::from_unix(0)).unwrap();
        set(&source, "a.md", None);
        sync_source(&source, &mirror, policy, Timestamp::from_unix(10)).unwrap();
        set(&source, "a.md", Some("one"));
        let back = sync_source(&source, &mirror, policy, Timestamp::from_unix(20)).unwrap();
        assert_eq!((back.removed, back.pending_removal), (0, 0));
        let state = mirror.load_state().unwrap().unwrap();
        assert_eq!(state.items["a.md"].missing_since, None);

        *source.fail.lock().unwrap() = true;
        let err = sync_source(&source, &mirror, policy, Timestamp::from_unix(500)).unwrap_err();
        assert!(err.is_temporary(), "{err}");
        assert!(mirror.files.lock().unwrap().contains_key("a.md"));
        let state = mirror.load_state().unwrap().unwrap();
        assert!(state.last.error.is_some());
        assert_eq!(state.last_success, Some(Timestamp::from_unix(20)));
    }

    #[test]
    fn without_grace_a_deleted_item_leaves_in_the_same_sync() {
        let source = Items::default();
        let mirror = Mirror::default();
        set(&source, "a.md", Some("one"));
        set(&source, "b.md", Some("two"));
        let policy = SyncPolicy::default();
        sync_source(&source, &mirror, policy, Timestamp::from_unix(0)).unwrap();
        set(&source, "a.md", None);
        let out = sync_source(&source, &mirror, policy, Timestamp::from_unix(0)).unwrap();
        assert_eq!((out.removed, out.unchanged), (1, 1));
        assert!(!mirror.files.lock().unwrap().contains_key("a.md"));
    }
}
