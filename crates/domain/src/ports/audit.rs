//! The audit port: one entry for every agent write-back, accepted or refused.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::contracts::Timestamp;

/// What was decided about one write-back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When.
    pub at: Timestamp,
    /// Who wrote (the caller's name).
    pub who: String,
    /// The document written, or that would have been.
    pub doc_id: String,
    /// Its scope.
    pub scope: String,
    /// `accepted`, `merged`, `skipped` or `refused`.
    pub decision: String,
    /// Why, as a code (`new`, `near_duplicate`, `duplicate`, `too_short`, `echoes_question`,
    /// `refusal`, `invalid`, …).
    pub reason: String,
    /// The reason in words.
    pub detail: String,
    /// The document it duplicates, for a duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// The normalised content hash of the text.
    pub content_hash: String,
}

/// The audit log could not be written or read.
#[derive(Debug, thiserror::Error)]
#[error("audit log: {0}")]
pub struct AuditError(pub String);

/// Where audit entries are kept.
///
/// # Contract
///
/// - [`append`](Self::append) keeps the entry durably before it returns `Ok`; entries are never
///   changed or dropped by the log itself.
/// - [`entries`](Self::entries) returns entries in the order they were appended.
pub trait AuditLog: Send + Sync {
    /// Appends one entry.
    fn append(&self, entry: &AuditEntry) -> Result<(), AuditError>;
    /// Every entry, oldest first.
    fn entries(&self) -> Result<Vec<AuditEntry>, AuditError>;
}

/// An audit log in memory: for tests, and for a service given no other.
#[derive(Debug, Default)]
pub struct MemoryAuditLog(Mutex<Vec<AuditEntry>>);

impl AuditLog for MemoryAuditLog {
    fn append(&self, entry: &AuditEntry) -> Result<(), AuditError> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(entry.clone());
        Ok(())
    }

    fn entries(&self) -> Result<Vec<AuditEntry>, AuditError> {
        Ok(self.0.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}
