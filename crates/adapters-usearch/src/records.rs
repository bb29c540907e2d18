//! The store's chunk records for the other index: the lexical index of the embedded store keeps
//! only chunk IDs and reads each hit's record here, so a chunk's text is stored once.
//!
//! Two readers of the same rows: the [`AnnVectorIndex`] itself (its pending writes first, then
//! SQLite, as its own searches see them), and [`RecordFile`], the records alone, for a process
//! that searches lexically without the dense route (no embedder, so no space to open the
//! vectors with): it opens `vectors.sqlite` read-only, loads no attribute and no graph.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;
use zhiku_domain::ports::{ChunkRecords, IndexError};
use zhiku_domain::{Chunk, ChunkId};

use crate::attrs::Key;
use crate::files::DATABASE_FILE;
use crate::{AnnVectorIndex, store};

impl ChunkRecords for AnnVectorIndex {
    fn records(&self, ids: &[ChunkId]) -> Result<Vec<Option<Chunk>>, IndexError> {
        let state = self.read();
        let keys: Vec<Option<Key>> = ids.iter().map(|id| state.attrs.key_of(id)).collect();
        let present: Vec<Key> = keys.iter().flatten().copied().collect();
        let chunks = self.chunks(&state, &present)?;
        Ok(keys
            .into_iter()
            .map(|key| key.and_then(|key| chunks.get(&key).cloned()))
            .collect())
    }
}

/// The chunk records of a vector store, read-only, without its vectors (see the
/// [module documentation](self)).
#[derive(Debug)]
pub struct RecordFile {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl RecordFile {
    /// Opens the records of the vector store in `dir` for reading; `None` when it has none.
    /// A store of another format is refused with [`IndexError::ConfigMismatch`].
    pub fn open_read_only(dir: &Path) -> Result<Option<Self>, IndexError> {
        let path = dir.join(DATABASE_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let conn = store::open_reader(&path)?;
        store::check_format(&conn)?;
        Ok(Some(Self {
            path,
            conn: Mutex::new(conn),
        }))
    }

    /// The database file read.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ChunkRecords for RecordFile {
    fn records(&self, ids: &[ChunkId]) -> Result<Vec<Option<Chunk>>, IndexError> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        store::chunks_by_id(&conn, ids)
    }
}
