//! A document source and a mirror in memory: the reference the source contract suite runs
//! first, and the double the sync's tests use.

use std::collections::BTreeMap;
use std::sync::Mutex;

use zhiku_domain::ports::{
    DocumentSource, MirrorError, ScanError, ScanEvent, ScanRequest, Scanned, SourceItem,
    SourceMirror, SyncState,
};

/// Items in memory, each stamped with the sha256 of its bytes; it counts what a scan
/// transfers, and can be cut off.
#[derive(Debug, Default)]
pub struct MemoryDocumentSource {
    items: Mutex<BTreeMap<String, Vec<u8>>>,
    cut: Mutex<bool>,
}

impl MemoryDocumentSource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `path` hold `bytes`.
    pub fn put(&self, path: &str, bytes: &[u8]) {
        lock(&self.items).insert(path.to_string(), bytes.to_vec());
    }

    /// Removes `path`.
    pub fn delete(&self, path: &str) {
        lock(&self.items).remove(path);
    }

    /// Makes every later scan fail as unreachable (`true`) or work again.
    pub fn set_cut(&self, cut: bool) {
        *lock(&self.cut) = cut;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DocumentSource for MemoryDocumentSource {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn location(&self) -> String {
        "memory".into()
    }

    fn scan(
        &self,
        request: &ScanRequest<'_>,
        sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
    ) -> Result<Scanned, ScanError> {
        if *lock(&self.cut) {
            return Err(ScanError::Unavailable {
                kind: "memory",
                location: self.location(),
                message: "cut off".into(),
            });
        }
        let items = lock(&self.items).clone();
        let mut scanned = Scanned {
            requests: 1,
            ..Scanned::default()
        };
        for (path, bytes) in &items {
            let stamp = zhiku_domain::sha256_hex(bytes);
            if request.known.get(path) == Some(&stamp) {
                sink(ScanEvent::Unchanged { path: path.clone() })?;
            } else if bytes.len() as u64 > request.max_item_bytes {
                sink(ScanEvent::Failed {
                    path: path.clone(),
                    reason: format!(
                        "{} bytes, over the bound of {}",
                        bytes.len(),
                        request.max_item_bytes
                    ),
                })?;
            } else {
                scanned.bytes += bytes.len() as u64;
                sink(ScanEvent::Changed {
                    item: SourceItem {
                        path: path.clone(),
                        reference: format!("memory:{path}"),
                        stamp,
                        link: None,
                    },
                    bytes: bytes.clone(),
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
        Ok(scanned)
    }
}

/// A mirror in memory: the files, their references and the state.
#[derive(Debug, Default)]
pub struct MemoryMirror {
    files: Mutex<BTreeMap<String, (Vec<u8>, String)>>,
    state: Mutex<Option<SyncState>>,
}

impl MemoryMirror {
    /// An empty mirror.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every file it holds, by path: its bytes and reference.
    pub fn files(&self) -> BTreeMap<String, (Vec<u8>, String)> {
        lock(&self.files).clone()
    }
}

impl SourceMirror for MemoryMirror {
    fn load_state(&self) -> Result<Option<SyncState>, MirrorError> {
        Ok(lock(&self.state).clone())
    }

    fn save_state(&self, state: &SyncState) -> Result<(), MirrorError> {
        *lock(&self.state) = Some(state.clone());
        Ok(())
    }

    fn put(&self, item: &SourceItem, bytes: &[u8]) -> Result<(), MirrorError> {
        if !zhiku_domain::ports::is_item_path(&item.path) {
            return Err(MirrorError::Refused {
                path: item.path.clone(),
                reason: "not a plain relative path".into(),
            });
        }
        lock(&self.files).insert(item.path.clone(), (bytes.to_vec(), item.reference.clone()));
        Ok(())
    }

    fn remove(&self, path: &str) -> Result<(), MirrorError> {
        lock(&self.files).remove(path);
        Ok(())
    }
}
