//! A source's mirror in the knowledge-base folder: `sources/<name>/…`, one file per item, each
//! with its own sidecar (`<file>.metadata.yaml`) naming the source, the item's reference and
//! permalink, and the scope and readers the source's configuration pins. The folder's loader
//! then reads the mirror like any other files (its stamps tell a copy that did not change), so
//! only what a sync wrote is extracted again.
//!
//! The sync's state (`.zhiku-source.json`) and lock (`.zhiku-sync/writer.lock`) are hidden,
//! so the folder scan never reads them. A sync takes the lock for its whole run; a folder
//! under `sources/` that holds files but no state is someone's own and is never written.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use zhiku_domain::ports::{
    MirrorError, SourceItem, SourceMirror, SyncState, is_item_path, is_source_name,
};

use crate::lock::StoreLock;
use crate::paths::{SIDECAR_SUFFIX, move_aside, own_sidecar_of, write_file};

/// The folder, under the knowledge-base root, that holds every source's mirror.
pub const SOURCES_DIR: &str = "sources";
/// The state file in a mirror.
pub const STATE_FILE: &str = ".zhiku-source.json";
/// The lock folder in a mirror.
const LOCK_DIR: &str = ".zhiku-sync";
/// Most bytes of a state file read back (10,000 items take about 2 MB).
const MAX_STATE_BYTES: u64 = 512 * 1024 * 1024;

/// The mirror of source `name` under a knowledge-base folder, held by this process while it
/// lives.
#[derive(Debug)]
pub struct FolderMirror {
    root: PathBuf,
    rel: String,
    name: String,
    pinned: Map<String, Value>,
    _lock: StoreLock,
}

impl FolderMirror {
    /// Opens (and takes) the mirror of source `name` in the knowledge base at `root`. `pinned`
    /// is written into every item's own sidecar (`scope`, `access`): it wins over what the
    /// item says of itself. Refused when another sync holds it, or when its folder holds
    /// files no sync wrote.
    pub fn open(root: &Path, name: &str, pinned: Map<String, Value>) -> Result<Self, MirrorError> {
        if !is_source_name(name) {
            return Err(MirrorError::Io(format!(
                "source name {name:?} must be 1-64 of a-z, 0-9, - and _"
            )));
        }
        let rel = format!("{SOURCES_DIR}/{name}");
        let dir = root.join(SOURCES_DIR).join(name);
        if std::fs::symlink_metadata(root.join(SOURCES_DIR))
            .is_ok_and(|m| m.file_type().is_symlink())
            || std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(MirrorError::Io(format!(
                "{rel} is a symbolic link: a source's mirror is never written through one"
            )));
        }
        let owned = dir.join(STATE_FILE).exists();
        if !owned
            && let Ok(mut entries) = std::fs::read_dir(&dir)
            && entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.')))
        {
            return Err(MirrorError::Io(format!(
                "{rel} holds files no sync wrote: move them, or give the source another name"
            )));
        }
        let lock = StoreLock::acquire(&dir.join(LOCK_DIR)).map_err(|e| {
            MirrorError::Io(format!(
                "source {name} is being synced by another process ({e:#})"
            ))
        })?;
        Ok(Self {
            root: root.to_path_buf(),
            rel,
            name: name.to_string(),
            pinned,
            _lock: lock,
        })
    }

    /// The mirror's folder, relative to the knowledge-base root.
    pub fn folder(&self) -> &str {
        &self.rel
    }

    /// Reads the state of the mirror of `name` without taking it (for `status`).
    pub fn peek_state(root: &Path, name: &str) -> Result<Option<SyncState>, MirrorError> {
        read_state(&root.join(SOURCES_DIR).join(name).join(STATE_FILE))
    }

    fn refused(&self, path: &str, reason: impl Into<String>) -> MirrorError {
        MirrorError::Refused {
            path: path.to_string(),
            reason: reason.into(),
        }
    }

    fn within(&self, path: &str) -> String {
        format!("{}/{path}", self.rel)
    }

    fn sidecar(&self, item: &SourceItem) -> Vec<u8> {
        let mut meta = Map::new();
        meta.insert("source_name".into(), Value::String(self.name.clone()));
        meta.insert(
            zhiku_domain::SOURCE_REF_KEY.into(),
            Value::String(item.reference.clone()),
        );
        if let Some(link) = &item.link {
            meta.insert(
                zhiku_domain::SOURCE_URL_KEY.into(),
                Value::String(link.clone()),
            );
        }
        meta.extend(self.pinned.clone());
        // JSON is YAML: the loader's YAML reader takes this flow mapping as it is, quoted.
        let mut text = serde_json::to_vec(&Value::Object(meta)).unwrap_or_default();
        text.push(b'\n');
        text
    }
}

fn read_state(path: &Path) -> Result<Option<SyncState>, MirrorError> {
    let bytes = match crate::atomic::open_store_file_to_read(path) {
        Ok(file) => {
            use std::io::Read;
            let mut bytes = Vec::new();
            file.take(MAX_STATE_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| MirrorError::Io(format!("cannot read {}: {e}", path.display())))?;
            bytes
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(MirrorError::Io(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| MirrorError::Io(format!("{} is not a sync state: {e}", path.display())))
}

impl SourceMirror for FolderMirror {
    fn load_state(&self) -> Result<Option<SyncState>, MirrorError> {
        read_state(&self.root.join(&self.rel).join(STATE_FILE))
    }

    fn save_state(&self, state: &SyncState) -> Result<(), MirrorError> {
        let bytes = serde_json::to_vec(state).map_err(|e| MirrorError::Io(e.to_string()))?;
        write_file(&self.root, &self.within(STATE_FILE), &bytes)
            .map_err(|e| MirrorError::Io(e.to_string()))
    }

    fn put(&self, item: &SourceItem, bytes: &[u8]) -> Result<(), MirrorError> {
        if !is_item_path(&item.path) {
            return Err(self.refused(&item.path, "not a plain relative path"));
        }
        // An item named like the sidecar this mirror writes for a document (`a.md` ->
        // `a.md.metadata.yaml`) would be overwritten by it: it is the one refused. A shared
        // sidecar of the source's own (`v1.2.metadata.yaml` for `v1.2.md`) is an item.
        if let Some(stem) = item.path.strip_suffix(SIDECAR_SUFFIX)
            && stem
                .rsplit_once('.')
                .is_some_and(|(_, ext)| zhiku_formats::Format::announced(ext).is_some())
        {
            return Err(self.refused(
                &item.path,
                format!("its name is the sidecar zhiku writes for {stem}"),
            ));
        }
        let rel = self.within(&item.path);
        // The sidecar first: a reader never sees the new bytes under the old reference's
        // absence of pins (both files are replaced atomically, each).
        write_file(&self.root, &own_sidecar_of(&rel), &self.sidecar(item))
            .map_err(|e| self.refused(&item.path, e.to_string()))?;
        write_file(&self.root, &rel, bytes).map_err(|e| self.refused(&item.path, e.to_string()))
    }

    fn remove(&self, path: &str) -> Result<(), MirrorError> {
        if !is_item_path(path) {
            return Ok(());
        }
        let rel = self.within(path);
        for file in [rel.clone(), own_sidecar_of(&rel)] {
            match move_aside(&self.root, &file) {
                Ok(Some(moved)) => moved
                    .discard()
                    .map_err(|e| MirrorError::Io(format!("cannot remove {file}: {e}")))?,
                Ok(None) => {}
                Err(e) => return Err(MirrorError::Io(e.to_string())),
            }
        }
        // Folders emptied by the removal go too, up to the mirror's own.
        let top = self.root.join(&self.rel);
        let mut dir = self.root.join(&rel);
        while dir.pop() && dir != top && dir.starts_with(&top) {
            if std::fs::remove_dir(&dir).is_err() {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loader::{LoaderConfig, load_folder};

    fn item(path: &str, reference: &str) -> SourceItem {
        SourceItem {
            path: path.into(),
            stamp: "s1".into(),
            reference: reference.into(),
            link: Some(format!("https://git.example/blob/{reference}")),
        }
    }

    #[test]
    fn a_mirrored_item_loads_with_its_reference_and_the_pinned_scope() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut pinned = Map::new();
        pinned.insert("scope".into(), Value::String("eng".into()));
        let mirror = FolderMirror::open(root, "handbook", pinned).unwrap();
        // The item says another scope of itself: the pinned one wins.
        let text = "---\nscope: finance\ntitle: 出差\n---\n# 出差\n\n住宿标准每晚 500 元。\n";
        mirror
            .put(
                &item("docs/trip.md", "docs/trip.md@3f2c1e0"),
                text.as_bytes(),
            )
            .unwrap();
        mirror
            .put(&item("docs/trip.txt", "docs/trip.txt@3f2c1e0"), b"plain")
            .unwrap();
        let loaded = load_folder(root, &LoaderConfig::default()).unwrap();
        assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
        let doc = loaded
            .documents
            .iter()
            .find(|d| d.id().as_str() == "sources/handbook/docs/trip.md")
            .expect("the mirrored file");
        let a = doc.attributes();
        assert_eq!(a.scope.as_str(), "eng");
        assert_eq!(a.title.as_ref(), "出差");
        assert_eq!(
            a.metadata.get("source_ref"),
            Some(&Value::String("docs/trip.md@3f2c1e0".into()))
        );
        assert_eq!(
            a.metadata.get("source_name"),
            Some(&Value::String("handbook".into()))
        );
        let txt = loaded
            .documents
            .iter()
            .find(|d| d.id().as_str() == "sources/handbook/docs/trip.txt")
            .expect("its neighbour with the same stem");
        assert_eq!(
            txt.attributes().metadata.get("source_ref"),
            Some(&Value::String("docs/trip.txt@3f2c1e0".into()))
        );
        assert_eq!(
            loaded.documents.len(),
            2,
            "the state and sidecars are no documents"
        );

        mirror.remove("docs/trip.md").unwrap();
        mirror.remove("docs/trip.txt").unwrap();
        mirror.remove("never/there.md").unwrap();
        assert!(
            !root.join("sources/handbook/docs").exists(),
            "emptied folders go"
        );
        let loaded = load_folder(root, &LoaderConfig::default()).unwrap();
        assert!(loaded.documents.is_empty());
    }

    #[test]
    fn a_mirror_is_taken_by_one_sync_and_never_written_over_someones_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let first = FolderMirror::open(root, "wiki", Map::new()).unwrap();
        first.save_state(&SyncState::default()).unwrap();
        let busy = FolderMirror::open(root, "wiki", Map::new()).unwrap_err();
        assert!(busy.to_string().contains("another process"), "{busy}");
        drop(first);
        assert!(FolderMirror::open(root, "wiki", Map::new()).is_ok());

        std::fs::create_dir_all(root.join("sources/mine")).unwrap();
        std::fs::write(root.join("sources/mine/notes.md"), "mine").unwrap();
        let theirs = FolderMirror::open(root, "mine", Map::new()).unwrap_err();
        assert!(theirs.to_string().contains("no sync wrote"), "{theirs}");
        assert!(FolderMirror::open(root, "Bad/Name", Map::new()).is_err());
    }

    #[test]
    fn items_that_cannot_be_written_are_refused_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = FolderMirror::open(dir.path(), "s", Map::new()).unwrap();
        for bad in ["../escape.md", "a/.git/config", "a.md.metadata.yaml"] {
            let e = mirror.put(&item(bad, bad), b"x").unwrap_err();
            assert!(matches!(e, MirrorError::Refused { .. }), "{bad}: {e}");
        }
        assert!(!dir.path().join("escape.md").exists());
        // A source's own shared sidecars are items like any other.
        for shared in ["a.metadata.yaml", "v1.2.metadata.yaml"] {
            mirror.put(&item(shared, shared), b"title: A\n").unwrap();
        }
    }
}
