//! Opening a knowledge base's store: the adapters its profile picks, checked against what the
//! store recorded, wired into a [`zhiku_service::Store`].
//!
//! One opener per kind of store, each a short recipe over the shared steps of `steps` (take
//! the lock, discard for a rebuild, open the catalog, check compatibility, open the dense
//! route, open the lexical index, hand everything to the service):
//!
//! - `embedded` — `vectors = "ann"` (profile `local`): everything on disk, the vectors in the
//!   embedded ANN index (or the vector file of an earlier version);
//! - `qdrant` — `vectors = "qdrant"` (profile `prod`): the vectors on a Qdrant server;
//! - `memory` — `vectors = "memory"` (profile `dev`): the vectors in memory.
//!
//! A new kind is a new opener beside them; [`Store::open_as`] is the one place that picks.
//!
//! Layout of a store directory (default `.zhiku/` beside the knowledge base):
//!
//! ```text
//! catalog.sqlite  the catalog (SQLite, WAL): policy, embedding space, analyzer, the indexes'
//!                 generations, every document's revision, fingerprint, chunk IDs, source path
//!                 and file stamp, one row each
//! lexical/        the tantivy index: terms and chunk IDs (the records are read from
//!                 vectors.sqlite when the store has one, so the text is stored once)
//! vectors.sqlite  the vector index's truth (when the store has an embedding space): chunk
//!                 records, f32 vectors, commit generation (SQLite, WAL)
//! vectors.usearch the HNSW graph's last snapshot (the commits after it are replayed on open)
//! writer.lock     the store lock: held by the one process that may write (holds its pid)
//! ```
//!
//! No entry of a store is a symbolic link: every open of a store refuses one anywhere inside
//! it ([`refuse_linked_entries`]) before any file is opened, and the store's own files are
//! opened with `O_NOFOLLOW` (SQLite's `SQLITE_OPEN_NOFOLLOW`), so a link planted in the store
//! (say `writer.lock` pointing at a file elsewhere) is never truncated, written or read through.
//!
//! Every process that writes (`index`, `index --rebuild`, a refreshing `search` or `ask`,
//! `serve`, `mcp`) opens the store with [`Store::open`] (or [`Store::rebuild`]), which takes the
//! store lock first; a second writer is refused with [`StoreLocked::Busy`], and destructive
//! steps (the deletions of `--rebuild`) happen only under the lock, which they never delete.
//! Read-only commands open it with [`Store::open_read_only`]: no lock, no repair, nothing
//! written; they read the last committed state (tantivy's committed meta, the catalog's last
//! transaction, and the vector file, which is only ever replaced by rename), beside a running
//! writer.
//!
//! A store written before the catalog moved to SQLite has a `manifest.json` (one JSON document
//! rewritten whole on every save) instead: the first writing open copies it into
//! `catalog.sqlite` and then removes it (a crash in between leaves both, and the next open
//! removes the manifest); a read-only open reads it as it is. Likewise a store written before
//! the ANN index has a `vectors.bin` (every record and vector, rewritten whole on every
//! commit): the first writing open copies its vectors into the index in one commit (nothing is
//! embedded again), then removes it; a read-only open searches it exactly, in memory.
//!
//! With `vectors = "qdrant"` (profile `prod`) the vectors live in a Qdrant collection instead
//! (see [`crate::wiring::qdrant`]); catalog and lexical index stay on disk. With profile
//! `cluster` the catalog, the lexical index, the documents and the audit trail are Qdrant
//! collections too, the folder holds only the trace log, and writers take turns through the
//! catalog's lease instead of `writer.lock` (ARCHITECTURE.md, *Writers on a cluster*). A server that
//! cannot be reached fails `index` before anything is recorded, and makes a read-only open fall
//! back to lexical retrieval with a notice.
//!
//! Writes are crash-safe: both indexes commit first, then the catalog is saved in one
//! transaction, recording the generations the indexes committed. A writing open removes the
//! files a killed tantivy writer left behind; then the service checks and repairs the store
//! ([`zhiku_service::Store::check_and_repair`]): when both indexes still carry the recorded
//! generations, nothing committed since the catalog was saved and nothing needs checking (O(1)).
//! Otherwise it checks chunk by chunk that catalog, vectors and lexical index agree and on a
//! mismatch repairs from the catalog in one step: documents with missing chunks are dropped
//! from the catalog and from both indexes (queued for re-indexing), then every chunk the
//! catalog does not list is deleted, so the first check after any crash finds the store
//! consistent. `zhiku verify` always checks chunk by chunk ([`zhiku_service::Store::problems`]).
//! A store built with another chunking policy, embedding space or analyzer is refused with the
//! difference and the rebuild command.

mod access;
mod catalog;
mod compatible;
mod embedded;
mod embedder;
mod lexical;
mod memory;
mod opened;
mod qdrant;
mod request;
mod steps;

use std::path::Path;

use anyhow::Result;

use crate::config::{Config, VectorsKind};
pub use crate::wiring::qdrant::VectorsUnavailable;
pub use access::{Access, Purpose};
pub use compatible::NeedsRebuild;
pub use embedder::resolve_embedder;
pub use opened::Store;
pub use zhiku_adapters_fs::atomic::write_atomically;
pub use zhiku_adapters_fs::lock::{LOCK_FILE, StoreLock, StoreLocked, refuse_linked_entries};
pub use zhiku_adapters_sqlite::CATALOG_FILE;
pub use zhiku_domain::ports::Origin;

impl Store {
    /// Opens (or creates) the store in `dir` for writing: takes the store lock first (a second
    /// writer gets [`StoreLocked`]), removes what a killed writer left, and repairs the store
    /// from its catalog.
    pub fn open(
        dir: &Path,
        config: Config,
        purpose: Purpose,
        kb_hint: Option<&Path>,
    ) -> Result<Self> {
        Self::open_as(dir, config, Access::Writing(purpose), kb_hint)
    }

    /// Opens the store in `dir` for indexing from scratch: as [`Store::open`], after
    /// discarding everything in it but the lock, under the lock.
    pub fn rebuild(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_as(dir, config, Access::Rebuilding, kb_hint)
    }

    /// Opens the last committed state of the store in `dir` for reading: no lock, no repair,
    /// nothing created or written, so it works beside a running writer and on a read-only
    /// folder. A missing store reads as empty.
    pub fn open_read_only(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_as(dir, config, Access::ReadOnly, kb_hint)
    }

    /// Opens the last committed state read-only, as [`Store::open_read_only`] does, for a
    /// process that answers queries or shows the status: only the catalog's header is loaded
    /// (its counts say what the rows hold), and the source paths of the documents a query
    /// checks are looked up one by one. What costs an open at a million chunks is then the
    /// indexes' own maps, not the catalog.
    pub fn open_to_query(dir: &Path, config: Config, kb_hint: Option<&Path>) -> Result<Self> {
        Self::open_as(dir, config, Access::ToQuery, kb_hint)
    }

    /// Opens the store in `dir` with `access`, by the opener of its kind (where its vectors
    /// live). `kb_hint` is the knowledge base the rebuild command of an error names.
    pub fn open_as(
        dir: &Path,
        config: Config,
        access: Access,
        kb_hint: Option<&Path>,
    ) -> Result<Self> {
        let request = request::Request {
            dir,
            config,
            access,
            kb_hint,
        };
        match request.config.vectors {
            VectorsKind::Ann => embedded::open(request),
            VectorsKind::Qdrant => qdrant::open(request),
            VectorsKind::Memory => memory::open(request),
        }
    }
}
