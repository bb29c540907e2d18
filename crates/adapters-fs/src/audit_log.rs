//! The write-back audit trail as `audit.jsonl` in the store folder: one JSON line per decision,
//! appended and synced before the write-back answers, never rewritten.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use zhiku_domain::ports::{AuditEntry, AuditError, AuditLog};

use crate::atomic::{open_store_file, open_store_file_to_read};

/// `audit.jsonl`, appended under a lock so lines never interleave within this process.
#[derive(Debug)]
pub struct JsonlAuditLog {
    path: PathBuf,
    lock: Mutex<()>,
}

impl JsonlAuditLog {
    /// The log of the store in `store_dir`.
    pub fn in_store(store_dir: &Path) -> Self {
        Self::new(store_dir.join("audit.jsonl"))
    }

    /// A log at `path` (created with its folder on the first entry).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }
}

fn failed(what: &str, path: &Path, e: impl std::fmt::Display) -> AuditError {
    AuditError(format!("cannot {what} {}: {e}", path.display()))
}

impl AuditLog for JsonlAuditLog {
    fn append(&self, entry: &AuditEntry) -> Result<(), AuditError> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| failed("create", dir, e))?;
        }
        let mut line =
            serde_json::to_vec(entry).map_err(|e| failed("encode for", &self.path, e))?;
        line.push(b'\n');
        let mut file = open_store_file(
            &self.path,
            std::fs::OpenOptions::new().create(true).append(true),
        )
        .map_err(|e| failed("open", &self.path, e))?;
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|e| failed("append to", &self.path, e))
    }

    fn entries(&self) -> Result<Vec<AuditEntry>, AuditError> {
        let file = match open_store_file_to_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(failed("open", &self.path, e)),
        };
        let mut out = Vec::new();
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| failed("read", &self.path, e))?;
            // A line cut short by a crash mid-append is the last one: passed over.
            if let Ok(entry) = serde_json::from_str(&line) {
                out.push(entry);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::Timestamp;

    #[test]
    fn entries_come_back_in_order_and_a_torn_last_line_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let log = JsonlAuditLog::in_store(&dir.path().join("store"));
        assert!(log.entries().unwrap().is_empty());
        let entry = |doc: &str, decision: &str| AuditEntry {
            at: Timestamp::from_unix(1_800_000_000),
            who: "agent".into(),
            doc_id: doc.into(),
            scope: "web".into(),
            decision: decision.into(),
            reason: "new".into(),
            detail: String::new(),
            duplicate_of: None,
            content_hash: "h".into(),
        };
        log.append(&entry("a", "accepted")).unwrap();
        log.append(&entry("b", "refused")).unwrap();
        let path = dir.path().join("store/audit.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"at\":\"2027").unwrap();
        let got = log.entries().unwrap();
        assert_eq!(got, vec![entry("a", "accepted"), entry("b", "refused")]);
    }
}
