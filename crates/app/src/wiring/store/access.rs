//! How a process opens the store: what for, and whether it writes.

/// What the store is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Searching only: a missing embedder degrades to lexical retrieval.
    Read,
    /// Indexing: every configured index must be writable.
    Write,
}

/// How a process opens the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Holding the store lock: what a killed writer left is removed and the store is repaired
    /// from its catalog. The purpose says whether an index that cannot be opened now (no
    /// embedder, an unreachable vector server) may leave retrieval lexical.
    Writing(Purpose),
    /// As `Writing(Purpose::Write)`, after discarding everything in the store but the lock,
    /// under the lock (`zhiku index --rebuild`).
    Rebuilding,
    /// The last committed state: no lock, no repair, nothing created or written.
    ReadOnly,
    /// As `ReadOnly`, for a process that answers queries or shows the status: only the
    /// catalog's header is loaded.
    ToQuery,
}

impl Access {
    /// What the store is opened for.
    pub fn purpose(self) -> Purpose {
        match self {
            Access::Writing(purpose) => purpose,
            Access::Rebuilding => Purpose::Write,
            Access::ReadOnly | Access::ToQuery => Purpose::Read,
        }
    }

    /// True when nothing is written: no lock, no repair.
    pub fn is_read_only(self) -> bool {
        matches!(self, Access::ReadOnly | Access::ToQuery)
    }
}
