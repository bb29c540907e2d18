//! An approximate-nearest-neighbour [`VectorIndex`] for the embedded store, whose costs grow
//! with what changed rather than with the corpus.
//!
//! Three parts, in `<dir>`:
//!
//! - **SQLite, the durable truth** (`vectors.sqlite`, see [`store`]): one row per chunk with a
//!   compact integer key, the chunk record, the f32 vector and the attributes a filter needs;
//!   a `meta` table with the format, the [`EmbeddingSpace`] and the **commit generation**.
//!   [`upsert`](VectorIndex::upsert) and the deletes change this handle's memory at once (its
//!   searches see them, which the port allows); [`commit`](VectorIndex::commit) writes them in
//!   one transaction (cost ∝ changed rows) and adds 1 to the generation.
//! - **The HNSW graph in usearch** (see [`graph`]): cosine over f32/f16/i8 (default i8), or
//!   Hamming over sign bits (b1), searched with the filter as a predicate inside the walk (see
//!   [`attrs`]); by default a shortlist of `max(4k, 40)` (b1: `max(60k, 600)`, always) is
//!   rescored exactly on the f32 vectors read back from SQLite.
//! - **A snapshot of the graph** (`vectors.usearch`), with the generation it reflects recorded
//!   in `meta`. It is written (temporary file, fsync, rename) when a commit finds that the rows
//!   changed since the last snapshot reach 10 % of the rows or 50 000 (configurable, see
//!   [`AnnOptions`]), and on [`AnnVectorIndex::checkpoint`].
//!
//! **Opening** reads the small attribute columns of every row (never a record), loads the
//! snapshot and **replays** what changed after its generation: rows whose `generation` is
//! greater are re-inserted, keys in `tombstones` with a greater generation are removed. So a
//! crash between a commit and the next snapshot loses nothing, and an open costs the snapshot
//! load plus the delta. A read-only handle whose store's snapshot reflects the last commit maps
//! the snapshot instead of loading it (`Graph::view`) and reads that generation's attribute
//! columns (`vectors.attrs`, see [`columns`], written with every snapshot) instead of every
//! row: a process that only searches reads one flat file and the graph pages its searches
//! visit; one that must replay loads, and a refresh of a mapped handle reloads. A missing, unreadable or mismatched snapshot (another quantisation, a
//! graph disagreeing with the rows) is rebuilt from SQLite's vectors, and a writer saves the
//! rebuilt graph as the new snapshot. Keys are allocated in increasing order and never reused,
//! which keeps replay idempotent: a snapshot newer than its record (a crash between the rename
//! and the record) replays changes it already holds, harmlessly.
//!
//! **Searching**: the filter becomes integer sets over the interned attributes. When it allows
//! at most [`AnnOptions::exact_scan_below`] chunks (known from per-scope and per-document
//! counts, e.g. a filter on a few documents), those chunks are scored exactly and the graph is
//! not walked. Otherwise usearch's filtered search walks the graph with the predicate, so a
//! chunk of another scope is never a candidate; when the walk returns fewer than `k` while more
//! chunks pass, the search falls back to the exact scan of those that pass. The final chunks'
//! records come from SQLite and are checked against the filter once more (a read-only handle's
//! memory can lag a writer in another process). Scores are cosine similarities of the f32
//! vectors when rescoring (the default for i8); without rescoring they are `1 - distance` of
//! the graph's quantised copy, approximate for f16 and i8.
//!
//! **Why usearch and SQLite.** In `crates/bench-ann` (RESULTS.md, 20k text-like vectors, 384
//! dims, recall@10 ≥ 0.95) usearch i8 with exact rescoring of a 40-shortlist matched the tuned
//! hnswlib reference: p50 338 µs against 385 µs unfiltered, 1 555 µs against 3 568 µs with a
//! one-scope-of-ten filter, in a sixth of the memory of f32 (16 MiB against 64 MiB), where the
//! pure-Rust hnsw_rs was 3.6× slower and arroy 28×. In `crates/bench-store`
//! (results/store-1m.md, 1M chunk records) SQLite in WAL mode with `synchronous = FULL` had the
//! best durable one-document ingest p99 of redb, LMDB, fjall and SQLite (14.5 ms; the others
//! 20–415 ms), opened in 0.23 ms beside a live writer (fjall: 42 ms, and single-process), and
//! lets any number of reader processes follow one writer.
//!
//! **Concurrency.** The handle is `Send + Sync`; searches share a read lock and run in
//! parallel (each takes one of usearch's per-thread contexts, waiting for a free one), writes
//! are serialised by the writer connection's mutex. [`AnnVectorIndex::open_read_only`] opens
//! SQLite read-only for processes that only search: it never writes a snapshot, refuses
//! writes, and follows a writer's commits with [`AnnVectorIndex::refresh`].

pub mod attrs;
pub mod columns;
mod error;
mod files;
pub mod graph;
pub mod options;
pub mod records;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use zhiku_domain::ports::{
    EmbeddedChunk, IndexCapabilities, IndexError, ScoredChunk, VectorIndex, VectorIndexExt,
};
use zhiku_domain::{Chunk, ChunkId, DocId, Embedding, EmbeddingSpace, Filter, cosine};

use crate::attrs::{Attrs, Compiled, Key, RowAttrs};
use crate::columns::Columns;
pub use crate::error::ADAPTER;
use crate::error::backend;
pub use crate::files::{COLUMNS_FILE, DATABASE_FILE, FILES, SNAPSHOT_FILE};
use crate::graph::{Graph, unit};
pub use crate::options::{AnnOptions, AnnSettings, Quantization};
pub use crate::records::RecordFile;
use crate::store::{Meta, PutRow};

/// Vectors read from SQLite per batch while rebuilding the graph.
const REBUILD_BATCH: usize = 4096;
/// Idle read connections kept for searches.
const READER_POOL: usize = 8;

/// Where the graph of an open came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphSource {
    /// The store had no rows: an empty graph.
    Empty,
    /// The snapshot of `generation`, then the changes committed after it.
    Snapshot {
        /// The generation the snapshot reflected.
        generation: u64,
        /// Rows re-inserted from SQLite.
        replayed_rows: usize,
        /// Keys removed because of tombstones.
        replayed_deletes: usize,
    },
    /// Rebuilt from every vector in SQLite, for the given reason.
    Rebuilt {
        /// Why the snapshot was not used.
        reason: String,
    },
}

/// What opening (or a full [`refresh`](AnnVectorIndex::refresh)) did, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Stored chunks.
    pub rows: usize,
    /// The committed generation opened.
    pub generation: u64,
    /// Where the graph came from.
    pub graph: GraphSource,
    /// A writer saved a new snapshot while opening (after a rebuild or a long replay).
    pub snapshot_written: bool,
    /// The filter attributes were read from the column file of the mapped snapshot's
    /// generation, not from every row in SQLite.
    pub columns_read: bool,
    /// Wall time of the open.
    pub elapsed: Duration,
}

/// A change not yet committed.
#[derive(Debug)]
enum Change {
    Put {
        chunk: Box<Chunk>,
        vector: Vec<f32>,
    },
    /// A stored chunk's record replaced, its vector kept.
    Record {
        chunk: Box<Chunk>,
    },
    Delete,
}

/// The filter attributes of every stored chunk: in memory, where writes change them, or the
/// column file of a mapped snapshot's generation, which a read-only handle answers in place.
#[derive(Debug)]
enum AttrSet {
    Owned(Attrs),
    Columns(Columns),
}

impl AttrSet {
    fn len(&self) -> usize {
        match self {
            Self::Owned(a) => a.len(),
            Self::Columns(c) => c.len(),
        }
    }

    fn key_of(&self, id: &ChunkId) -> Option<Key> {
        match self {
            Self::Owned(a) => a.key_of(id),
            Self::Columns(c) => c.key_of(id),
        }
    }

    fn chunk_id(&self, key: Key) -> Option<&str> {
        match self {
            Self::Owned(a) => a.by_key.get(&key).map(|a| a.chunk_id.as_str()),
            Self::Columns(c) => c.chunk_id(key),
        }
    }

    fn compile(&self, filter: &Filter) -> Option<Compiled> {
        match self {
            Self::Owned(a) => a.compile(filter),
            Self::Columns(c) => attrs::compile(c, filter),
        }
    }

    fn passes(&self, key: Key, filter: &Compiled) -> bool {
        match self {
            Self::Owned(a) => a.passes(key, filter),
            Self::Columns(c) => c.passes(key, filter),
        }
    }

    fn allowed_keys(&self, filter: &Compiled) -> Vec<Key> {
        match self {
            Self::Owned(a) => a.allowed_keys(filter),
            Self::Columns(c) => c.allowed_keys(filter),
        }
    }

    fn doc_keys(&self, doc: &str) -> Vec<Key> {
        match self {
            Self::Owned(a) => a.doc_keys(doc),
            Self::Columns(c) => c.doc_keys(doc),
        }
    }

    fn chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        match self {
            Self::Owned(a) => Ok(a.by_id.keys().cloned().collect()),
            Self::Columns(c) => c.chunk_ids(),
        }
    }

    /// The attributes writes change. Only a read-only handle holds columns, and it refuses
    /// writes before they reach here.
    fn owned(&mut self) -> Result<&mut Attrs, IndexError> {
        match self {
            Self::Owned(a) => Ok(a),
            Self::Columns(_) => Err(backend(
                "the attribute columns of a mapped snapshot cannot change",
            )),
        }
    }
}

/// Everything in memory: the attributes, the graph, the uncommitted changes.
#[derive(Debug)]
struct State {
    attrs: AttrSet,
    graph: Graph,
    pending: BTreeMap<Key, Change>,
    next_key: Key,
    generation: u64,
    snapshot_generation: Option<u64>,
    /// Rows (and deletes) committed since the snapshot.
    changed_since_snapshot: usize,
    /// The last snapshot failure, cleared by a successful snapshot.
    snapshot_error: Option<String>,
}

/// The approximate-nearest-neighbour vector index of the embedded store: SQLite for the truth,
/// usearch for the graph. See the [crate documentation](crate).
#[derive(Debug)]
pub struct AnnVectorIndex {
    dir: PathBuf,
    space: EmbeddingSpace,
    options: AnnOptions,
    /// The writer connection, also the lock that serialises writes; `None` when read-only.
    writer: Mutex<Option<Connection>>,
    /// Idle read connections.
    readers: Mutex<Vec<Connection>>,
    read_only: bool,
    state: RwLock<State>,
    last_open: Mutex<OpenReport>,
}

impl AnnVectorIndex {
    /// Opens the index in `dir` for reading and writing, creating the folder and an empty
    /// store when there is none. A store of another embedding space is refused with
    /// [`IndexError::SpaceMismatch`], one of another format with
    /// [`IndexError::ConfigMismatch`].
    pub fn open(
        dir: &Path,
        space: EmbeddingSpace,
        options: AnnOptions,
    ) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| backend(format!("cannot create {}: {e}", dir.display())))?;
        let mut conn = store::open_writer(&dir.join(DATABASE_FILE))?;
        store::init(&mut conn, &space)?;
        Self::open_with(dir, space, options, conn, false)
    }

    /// Opens an existing index in `dir` for searching only: SQLite is opened read-only, no
    /// snapshot is ever written, writes are refused with [`IndexError::Unsupported`], and
    /// [`refresh`](Self::refresh) catches up with a writer's commits.
    pub fn open_read_only(
        dir: &Path,
        space: EmbeddingSpace,
        options: AnnOptions,
    ) -> Result<Self, IndexError> {
        let path = dir.join(DATABASE_FILE);
        if !path.exists() {
            return Err(backend(format!(
                "no vector store at {}: index the knowledge base first",
                path.display()
            )));
        }
        let conn = store::open_reader(&path)?;
        store::check(&conn, &space)?;
        Self::open_with(dir, space, options, conn, true)
    }

    fn open_with(
        dir: &Path,
        space: EmbeddingSpace,
        options: AnnOptions,
        conn: Connection,
        read_only: bool,
    ) -> Result<Self, IndexError> {
        let (state, report) = load_state(&conn, &space, &options, dir, read_only)?;
        let (writer, readers) = if read_only {
            (None, vec![conn])
        } else {
            (Some(conn), Vec::new())
        };
        let index = Self {
            dir: dir.to_path_buf(),
            space,
            options,
            writer: Mutex::new(writer),
            readers: Mutex::new(readers),
            read_only,
            state: RwLock::new(state),
            last_open: Mutex::new(report),
        };
        if !read_only {
            let snapshot_due = {
                let state = index.read();
                let report = index.last_open();
                (matches!(report.graph, GraphSource::Rebuilt { .. }) && state.attrs.len() > 0)
                    || index
                        .options
                        .wants_snapshot(state.changed_since_snapshot, state.attrs.len())
            };
            if snapshot_due {
                let mut writer = index.lock_writer();
                let conn = writer.as_mut().expect("a writer has its connection");
                index.snapshot(conn)?;
                let mut report = index.last_open.lock().unwrap_or_else(|e| e.into_inner());
                report.snapshot_written = true;
            }
        }
        Ok(index)
    }

    /// The folder of the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The options the index was opened with.
    pub fn options(&self) -> &AnnOptions {
        &self.options
    }

    /// The last committed generation this handle holds: 0 for a new store, +1 per commit.
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// True when this (read-only) handle searches a memory map of the snapshot in place: it
    /// opened, or last reloaded, a store whose snapshot reflected its last commit.
    pub fn is_mapped(&self) -> bool {
        self.read().graph.is_mapped()
    }

    /// The generation the snapshot on disk reflects, if one was written.
    pub fn snapshot_generation(&self) -> Option<u64> {
        self.read().snapshot_generation
    }

    /// What the last open (or full refresh) did.
    pub fn last_open(&self) -> OpenReport {
        self.last_open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The last failure to write a snapshot, if the latest attempt failed. A snapshot failure
    /// never fails the commit that triggered it (the commit is durable; the next open replays
    /// more), so it is reported here.
    pub fn snapshot_error(&self) -> Option<String> {
        self.read().snapshot_error.clone()
    }

    /// Commits pending writes (if any: without them no generation is added), then saves a
    /// snapshot of the graph if anything was committed since the last one (or none exists).
    /// Refused on a read-only handle.
    pub fn checkpoint(&self) -> Result<(), IndexError> {
        let mut writer = self.writable()?;
        let conn = writer.as_mut().expect("a writer has its connection");
        if !self.read().pending.is_empty() {
            self.commit_locked(conn)?;
        }
        let (due, columns_stale) = {
            let state = self.read();
            let due = state.changed_since_snapshot > 0
                || (state.snapshot_generation.is_none() && state.attrs.len() > 0);
            (due, self.columns_stale(&state))
        };
        if due {
            self.snapshot(conn)?;
        } else if columns_stale {
            // The snapshot is current but its columns are missing (a store written before
            // they existed) or damaged: write them alone.
            self.write_columns(&self.read())?;
        }
        Ok(())
    }

    /// Writes the column file of the committed state in memory (a writer's attributes are in
    /// memory; a read-only handle writes nothing).
    fn write_columns(&self, state: &State) -> Result<(), IndexError> {
        if let AttrSet::Owned(attrs) = &state.attrs {
            columns::write(&columns::path(&self.dir), attrs, state.generation)?;
        }
        Ok(())
    }

    /// True when the snapshot reflects the last commit but the column file is not of that
    /// generation, so readers would read every row instead of mapping.
    fn columns_stale(&self, state: &State) -> bool {
        state.attrs.len() > 0
            && state.snapshot_generation == Some(state.generation)
            && columns::generation_of(&columns::path(&self.dir)) != Some(state.generation)
    }

    /// Every committed chunk with its vector, handed to `f` in batches of up to `batch`, in the
    /// order they were first stored, from one read transaction (a consistent state beside a
    /// writer): for copying the index elsewhere — another store, a Qdrant collection — without
    /// embedding anything again. Returns how many were exported.
    pub fn export(
        &self,
        batch: usize,
        mut f: impl FnMut(Vec<EmbeddedChunk>) -> Result<(), IndexError>,
    ) -> Result<usize, IndexError> {
        let batch = batch.max(1);
        self.with_reader(|conn| {
            let tx = conn.unchecked_transaction().map_err(backend)?;
            let mut pending = Vec::with_capacity(batch);
            let mut count = 0;
            store::for_each_row(&tx, self.space.dims(), |chunk, values| {
                let embedding = self.space.embedding(values, false).map_err(backend)?;
                pending.push(EmbeddedChunk { chunk, embedding });
                count += 1;
                if pending.len() == batch {
                    f(std::mem::take(&mut pending))?;
                }
                Ok(())
            })?;
            if !pending.is_empty() {
                f(pending)?;
            }
            Ok(count)
        })
    }

    /// Catches a read-only handle up with the commits a writer made since it opened (or last
    /// refreshed): the rows and tombstones of later generations are applied, or everything is
    /// reloaded when the tombstones it would need were pruned. Returns whether anything
    /// changed. On a writing handle it does nothing (it is the only writer).
    pub fn refresh(&self) -> Result<bool, IndexError> {
        if !self.read_only {
            return Ok(false);
        }
        self.with_reader(|conn| {
            let mut state = self.write();
            let meta = store::meta(conn)?;
            if meta.generation == state.generation {
                return Ok(false);
            }
            if meta.pruned_through > state.generation || state.graph.is_mapped() {
                // The tombstones this handle would need are gone, or its graph is a mapping that
                // cannot change: reload everything.
                let (fresh, report) =
                    load_state(conn, &self.space, &self.options, &self.dir, true)?;
                *state = fresh;
                *self.last_open.lock().unwrap_or_else(|e| e.into_inner()) = report;
                return Ok(true);
            }
            let tx = conn.unchecked_transaction().map_err(backend)?;
            let meta = store::meta(&tx)?;
            let since = state.generation;
            let state = &mut *state;
            let attrs = state.attrs.owned()?;
            store::for_each_attrs(&tx, Some(since), |key, row| attrs.put(key, &row))?;
            store::for_each_vector(&tx, Some(since), self.space.dims(), |key, vector| {
                state.graph.put(key, &vector)
            })?;
            for key in store::deleted_since(&tx, since)? {
                attrs.remove(key);
                state.graph.remove(key)?;
            }
            if meta.pruned_through > since {
                // A snapshot pruned tombstones between the two reads: reload to be sure.
                drop(tx);
                let (fresh, report) =
                    load_state(conn, &self.space, &self.options, &self.dir, true)?;
                *state = fresh;
                *self.last_open.lock().unwrap_or_else(|e| e.into_inner()) = report;
                return Ok(true);
            }
            state.generation = meta.generation;
            state.next_key = meta.next_key;
            state.snapshot_generation = meta.snapshot_generation;
            Ok(true)
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, Option<Connection>> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer lock, or `Unsupported` on a read-only handle.
    fn writable(&self) -> Result<std::sync::MutexGuard<'_, Option<Connection>>, IndexError> {
        if self.read_only {
            return Err(IndexError::Unsupported {
                adapter: ADAPTER,
                operation: "writing through a read-only handle",
            });
        }
        Ok(self.lock_writer())
    }

    /// Runs `f` on an idle read connection (opening one when none is idle).
    fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        let idle = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => store::open_reader(&self.dir.join(DATABASE_FILE))?,
        };
        let result = f(&conn);
        let mut pool = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < READER_POOL {
            pool.push(conn);
        }
        result
    }

    /// Writes the pending changes as one commit. The caller holds the writer lock.
    fn commit_locked(&self, conn: &mut Connection) -> Result<(), IndexError> {
        let written = {
            let state = self.read();
            let mut deletes = Vec::new();
            let mut puts = Vec::new();
            for (key, change) in &state.pending {
                match change {
                    Change::Delete => deletes.push(*key),
                    Change::Put { chunk, vector } => puts.push(PutRow {
                        key: *key,
                        attrs: RowAttrs::of(chunk),
                        record: serde_json::to_string(&chunk.to_record()).map_err(backend)?,
                        vector: Some(vector),
                    }),
                    Change::Record { chunk } => puts.push(PutRow {
                        key: *key,
                        attrs: RowAttrs::of(chunk),
                        record: serde_json::to_string(&chunk.to_record()).map_err(backend)?,
                        vector: None,
                    }),
                }
            }
            let generation = state.generation + 1;
            store::commit(conn, generation, state.next_key, &deletes, &puts)?;
            (generation, deletes.len() + puts.len())
        };
        let (generation, changed) = written;
        let due = {
            let mut state = self.write();
            state.pending.clear();
            state.generation = generation;
            state.changed_since_snapshot += changed;
            self.options
                .wants_snapshot(state.changed_since_snapshot, state.attrs.len())
        };
        if due {
            // The commit is durable; a failed snapshot is recorded, not returned.
            if let Err(e) = self.snapshot(conn) {
                self.write().snapshot_error = Some(e.to_string());
            }
        }
        Ok(())
    }

    /// Saves the graph as the snapshot of the committed generation. The caller holds the
    /// writer lock and has no pending changes, so the graph is exactly that generation's.
    fn snapshot(&self, conn: &mut Connection) -> Result<(), IndexError> {
        let generation = {
            let state = self.read();
            debug_assert!(state.pending.is_empty());
            self.write_columns(&state)?;
            state.graph.save(&self.dir.join(SNAPSHOT_FILE))?;
            state.generation
        };
        store::record_snapshot(conn, generation)?;
        let mut state = self.write();
        state.snapshot_generation = Some(generation);
        state.changed_since_snapshot = 0;
        state.snapshot_error = None;
        Ok(())
    }

    /// The f32 vectors of `keys`: uncommitted ones from memory, the rest from SQLite.
    fn vectors(&self, state: &State, keys: &[Key]) -> Result<HashMap<Key, Vec<f32>>, IndexError> {
        let mut out = HashMap::with_capacity(keys.len());
        let mut stored = Vec::new();
        for key in keys {
            match state.pending.get(key) {
                Some(Change::Put { vector, .. }) => {
                    out.insert(*key, vector.clone());
                }
                Some(Change::Delete) => {}
                Some(Change::Record { .. }) | None => stored.push(*key),
            }
        }
        if !stored.is_empty() {
            out.extend(self.with_reader(|conn| store::vectors(conn, &stored, self.space.dims()))?);
        }
        Ok(out)
    }

    /// The chunks of `keys`: uncommitted ones from memory, the rest from SQLite.
    fn chunks(&self, state: &State, keys: &[Key]) -> Result<HashMap<Key, Chunk>, IndexError> {
        let mut out = HashMap::with_capacity(keys.len());
        let mut stored = Vec::new();
        for key in keys {
            match state.pending.get(key) {
                Some(Change::Put { chunk, .. } | Change::Record { chunk }) => {
                    out.insert(*key, (**chunk).clone());
                }
                Some(Change::Delete) => {}
                None => stored.push(*key),
            }
        }
        if !stored.is_empty() {
            out.extend(self.with_reader(|conn| store::chunks(conn, &stored))?);
        }
        Ok(out)
    }

    /// Exact cosine of `query` (unit) with the f32 vectors of `keys`, best `k` first (ties by
    /// chunk ID).
    fn exact_top(
        &self,
        state: &State,
        query: &[f32],
        keys: &[Key],
        k: usize,
    ) -> Result<Vec<(Key, f32)>, IndexError> {
        let mut scored = Vec::with_capacity(keys.len());
        for part in keys.chunks(REBUILD_BATCH) {
            let vectors = self.vectors(state, part)?;
            for key in part {
                if let Some(v) = vectors.get(key) {
                    scored.push((*key, cosine(query, v)));
                }
            }
        }
        Ok(top(state, scored, k))
    }

    /// The graph's candidates for `query` under `filter`, scored and cut to `k`.
    fn graph_top(
        &self,
        state: &State,
        query: &[f32],
        k: usize,
        filter: &Compiled,
    ) -> Result<Vec<(Key, f32)>, IndexError> {
        let wanted = self.options.shortlist(k).min(state.attrs.len()).max(k);
        let allow = |key: Key| state.attrs.passes(key, filter);
        let found = if filter.everything {
            state.graph.search(query, wanted, None)?
        } else {
            state.graph.search(query, wanted, Some(&allow))?
        };
        if found.len() < k {
            // The walk found fewer than k: if more chunks pass, score all of them exactly.
            let allowed = state.attrs.allowed_keys(filter);
            if allowed.len() > found.len() {
                return self.exact_top(state, query, &allowed, k);
            }
        }
        if self.options.rescores() {
            let keys: Vec<Key> = found.iter().map(|(key, _)| *key).collect();
            return self.exact_top(state, query, &keys, k);
        }
        let scored = found
            .into_iter()
            .map(|(key, distance)| (key, 1.0 - distance))
            .collect();
        Ok(top(state, scored, k))
    }
}

/// Sorts by descending score then ascending chunk ID, and keeps `k`.
fn top(state: &State, mut scored: Vec<(Key, f32)>, k: usize) -> Vec<(Key, f32)> {
    let id = |key: &Key| state.attrs.chunk_id(*key);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| id(&a.0).cmp(&id(&b.0))));
    scored.truncate(k);
    scored
}

/// Builds the in-memory state from the database behind `conn` (in one read transaction) and
/// the snapshot in `dir`.
/// With `map` (a read-only handle), a snapshot of the last committed generation is mapped
/// rather than loaded ([`Graph::view`]), and its generation's attribute columns are read instead
/// of every row's attributes; one followed by later commits is loaded and replayed.
fn load_state(
    conn: &Connection,
    space: &EmbeddingSpace,
    options: &AnnOptions,
    dir: &Path,
    map: bool,
) -> Result<(State, OpenReport), IndexError> {
    let started = Instant::now();
    let snapshot_path = dir.join(SNAPSHOT_FILE);
    let tx = conn.unchecked_transaction().map_err(backend)?;
    let meta: Meta = store::meta(&tx)?;
    let dims = space.dims();
    let state = |attrs: AttrSet, graph: Graph, changed: usize| State {
        attrs,
        graph,
        pending: BTreeMap::new(),
        next_key: meta.next_key,
        generation: meta.generation,
        snapshot_generation: meta.snapshot_generation,
        changed_since_snapshot: changed,
        snapshot_error: None,
    };
    if map
        && meta.generation > 0
        && meta.snapshot_generation == Some(meta.generation)
        && let Some((columns, graph)) = mapped(dir, meta.generation, dims, options)
    {
        let report = OpenReport {
            rows: columns.len(),
            generation: meta.generation,
            graph: GraphSource::Snapshot {
                generation: meta.generation,
                replayed_rows: 0,
                replayed_deletes: 0,
            },
            snapshot_written: false,
            columns_read: true,
            elapsed: started.elapsed(),
        };
        return Ok((state(AttrSet::Columns(columns), graph, 0), report));
    }
    let mut attrs = Attrs::default();
    attrs.reserve(store::row_count(&tx)?);
    store::for_each_attrs(&tx, None, |key, row| attrs.put(key, &row))?;

    let snapshot = match meta.snapshot_generation {
        None => Err("no snapshot recorded".to_string()),
        Some(g) if g > meta.generation => Err(format!(
            "the snapshot's generation {g} is ahead of the store's {}",
            meta.generation
        )),
        Some(g) if !snapshot_path.exists() => Err(format!(
            "the snapshot of generation {g} is missing ({})",
            snapshot_path.display()
        )),
        Some(g) => {
            // A snapshot of the last commit has nothing to replay, so a reader can map it; one
            // that commits came after is loaded, for the replay to change it.
            let opened = if map && g == meta.generation {
                Graph::view(&snapshot_path, dims, options)
            } else {
                Graph::load(&snapshot_path, dims, options)
            };
            opened
                .map_err(|e| format!("the snapshot {} is unusable: {e}", snapshot_path.display()))
                .and_then(|graph| replay(&tx, graph, g, dims, attrs.len()))
        }
    };
    let (graph, source, changed) = match snapshot {
        Ok((graph, source, changed)) => (graph, source, changed),
        Err(_) if attrs.len() == 0 => (Graph::new(dims, options)?, GraphSource::Empty, 0),
        Err(reason) => (
            rebuild(&tx, dims, options, attrs.len())?,
            GraphSource::Rebuilt { reason },
            0,
        ),
    };
    drop(tx);
    let report = OpenReport {
        rows: attrs.len(),
        generation: meta.generation,
        graph: source,
        snapshot_written: false,
        columns_read: false,
        elapsed: started.elapsed(),
    };
    Ok((state(AttrSet::Owned(attrs), graph, changed), report))
}

/// The attribute columns and the mapped graph of the snapshot of `generation`, when both are
/// there, readable and of the same size; otherwise `None`, and the open reads the rows (a
/// damaged column file is then rewritten by the next snapshot).
fn mapped(
    dir: &Path,
    generation: u64,
    dims: usize,
    options: &AnnOptions,
) -> Option<(Columns, Graph)> {
    let columns = Columns::read(&columns::path(dir), generation).ok()??;
    let graph = Graph::view(&dir.join(SNAPSHOT_FILE), dims, options).ok()?;
    (graph.len() == columns.len()).then_some((columns, graph))
}

/// Applies to a snapshot's graph the rows and deletes committed after its generation, and
/// checks that it then holds exactly the stored rows. A snapshot of the last commit gets
/// neither, so a mapped graph (which cannot change) passes through untouched.
fn replay(
    conn: &Connection,
    mut graph: Graph,
    since: u64,
    dims: usize,
    rows: usize,
) -> Result<(Graph, GraphSource, usize), String> {
    let mut replayed_rows = 0;
    let deleted = store::deleted_since(conn, since).map_err(|e| e.to_string())?;
    for key in &deleted {
        graph.remove(*key).map_err(|e| e.to_string())?;
    }
    store::for_each_vector(conn, Some(since), dims, |key, vector| {
        replayed_rows += 1;
        graph.put(key, &vector)
    })
    .map_err(|e| e.to_string())?;
    if graph.len() != rows {
        return Err(format!(
            "the snapshot plus replay holds {} vectors, the store {rows} rows",
            graph.len()
        ));
    }
    let changed = replayed_rows + deleted.len();
    Ok((
        graph,
        GraphSource::Snapshot {
            generation: since,
            replayed_rows,
            replayed_deletes: deleted.len(),
        },
        changed,
    ))
}

/// A new graph of every stored vector, built on several threads.
fn rebuild(
    conn: &Connection,
    dims: usize,
    options: &AnnOptions,
    rows: usize,
) -> Result<Graph, IndexError> {
    let mut graph = Graph::new(dims, options)?;
    graph.reserve(rows)?;
    let mut batch: Vec<(Key, Vec<f32>)> = Vec::with_capacity(REBUILD_BATCH);
    store::for_each_vector(conn, None, dims, |key, vector| {
        batch.push((key, vector));
        if batch.len() == REBUILD_BATCH {
            graph.add_parallel(&batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    graph.add_parallel(&batch)?;
    Ok(graph)
}

impl VectorIndex for AnnVectorIndex {
    fn capabilities(&self) -> IndexCapabilities {
        IndexCapabilities {
            adapter: ADAPTER,
            persistent: true,
            max_k: 10_000,
            upsert_max_batch: None,
            filter_doc_ids: true,
            filter_locale: true,
            filter_metadata: true,
        }
    }

    fn space(&self) -> &EmbeddingSpace {
        &self.space
    }

    fn upsert(&self, items: &[EmbeddedChunk]) -> Result<(), IndexError> {
        // Validate everything first so a refused batch changes nothing.
        for item in items {
            self.check_space(&item.embedding)?;
        }
        let _writer = self.writable()?;
        let mut state = self.write();
        let state = &mut *state;
        // The last occurrence of a chunk ID in the batch wins.
        let mut batch: BTreeMap<Key, &EmbeddedChunk> = BTreeMap::new();
        let attrs = state.attrs.owned()?;
        for item in items {
            let key = match attrs.key_of(item.chunk.chunk_id()) {
                Some(key) => key,
                None => {
                    let key = state.next_key;
                    state.next_key += 1;
                    // Reserve the ID now so a later duplicate in the batch finds the same key.
                    attrs.put(key, &RowAttrs::of(&item.chunk));
                    key
                }
            };
            batch.insert(key, item);
        }
        for key in batch.keys() {
            state.graph.remove(*key)?;
        }
        let vectors: Vec<(Key, Vec<f32>)> = batch
            .iter()
            .map(|(key, item)| (*key, item.embedding.values().to_vec()))
            .collect();
        state.graph.add_parallel(&vectors)?;
        for ((key, item), (_, vector)) in batch.into_iter().zip(vectors) {
            state.attrs.owned()?.put(key, &RowAttrs::of(&item.chunk));
            state.pending.insert(
                key,
                Change::Put {
                    chunk: Box::new(item.chunk.clone()),
                    vector,
                },
            );
        }
        Ok(())
    }

    fn update_records(&self, chunks: &[Chunk]) -> Result<usize, IndexError> {
        let _writer = self.writable()?;
        let mut state = self.write();
        let state = &mut *state;
        let mut updated = 0;
        for chunk in chunks {
            let Some(key) = state.attrs.key_of(chunk.chunk_id()) else {
                continue;
            };
            state.attrs.owned()?.put(key, &RowAttrs::of(chunk));
            let change = match state.pending.remove(&key) {
                // Not committed yet: the new record goes with the pending vector.
                Some(Change::Put { vector, .. }) => Change::Put {
                    chunk: Box::new(chunk.clone()),
                    vector,
                },
                _ => Change::Record {
                    chunk: Box::new(chunk.clone()),
                },
            };
            state.pending.insert(key, change);
            updated += 1;
        }
        Ok(updated)
    }

    fn delete_chunks(&self, ids: &[ChunkId]) -> Result<(), IndexError> {
        let _writer = self.writable()?;
        let mut state = self.write();
        for id in ids {
            if let Some(key) = state.attrs.key_of(id) {
                state.attrs.owned()?.remove(key);
                state.graph.remove(key)?;
                state.pending.insert(key, Change::Delete);
            }
        }
        Ok(())
    }

    fn delete_document(&self, doc: &DocId) -> Result<(), IndexError> {
        let _writer = self.writable()?;
        let mut state = self.write();
        for key in state.attrs.doc_keys(doc.as_str()) {
            state.attrs.owned()?.remove(key);
            state.graph.remove(key)?;
            state.pending.insert(key, Change::Delete);
        }
        Ok(())
    }

    fn search(
        &self,
        query: &Embedding,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<ScoredChunk>, IndexError> {
        self.capabilities().check_search(k, filter)?;
        self.check_space(query)?;
        let state = self.read();
        let Some(compiled) = state.attrs.compile(filter) else {
            return Ok(Vec::new());
        };
        let q = unit(query.values());
        let best = if compiled.bound <= self.options.exact_scan_below {
            let allowed = state.attrs.allowed_keys(&compiled);
            self.exact_top(&state, &q, &allowed, k)?
        } else {
            self.graph_top(&state, &q, k, &compiled)?
        };
        let keys: Vec<Key> = best.iter().map(|(key, _)| *key).collect();
        let mut chunks = self.chunks(&state, &keys)?;
        let mut hits: Vec<ScoredChunk> = best
            .into_iter()
            .filter_map(|(key, score)| {
                chunks
                    .remove(&key)
                    .map(|chunk| ScoredChunk { chunk, score })
            })
            // The stored record has the last word: a read-only handle's memory can lag a writer.
            .filter(|hit| filter.matches(&hit.chunk))
            .collect();
        zhiku_domain::ports::rank_and_truncate(&mut hits, k);
        Ok(hits)
    }

    fn chunk_ids(&self, doc: &DocId) -> Result<Vec<ChunkId>, IndexError> {
        let state = self.read();
        let mut ids: Vec<ChunkId> = state
            .attrs
            .doc_keys(doc.as_str())
            .iter()
            .filter_map(|key| state.attrs.chunk_id(*key))
            .map(ChunkId::parse)
            .collect::<Result<_, _>>()
            .map_err(backend)?;
        ids.sort();
        Ok(ids)
    }

    fn all_chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        self.read().attrs.chunk_ids()
    }

    fn embeddings(&self, ids: &[ChunkId]) -> Result<Vec<Option<Embedding>>, IndexError> {
        let state = self.read();
        let keys: Vec<Option<Key>> = ids.iter().map(|id| state.attrs.key_of(id)).collect();
        let present: Vec<Key> = keys.iter().flatten().copied().collect();
        let vectors = self.vectors(&state, &present)?;
        keys.into_iter()
            .map(|key| {
                key.and_then(|key| vectors.get(&key))
                    .map(|v| self.space.embedding(v.clone(), false).map_err(backend))
                    .transpose()
            })
            .collect()
    }

    fn count(&self) -> Result<usize, IndexError> {
        Ok(self.read().attrs.len())
    }

    fn commit(&self) -> Result<(), IndexError> {
        if self.read_only {
            return Ok(());
        }
        let mut writer = self.lock_writer();
        let conn = writer.as_mut().expect("a writer has its connection");
        self.commit_locked(conn)
    }

    /// The generation in SQLite's `meta` row as this handle last committed or loaded it: every
    /// commit adds one, so a catalog that recorded it vouches for exactly this state.
    fn generation(&self) -> Result<Option<u64>, IndexError> {
        Ok(Some(AnnVectorIndex::generation(self)))
    }

    /// Saves the graph as the snapshot of the last commit (see [`AnnVectorIndex::checkpoint`])
    /// whenever anything was committed after the one on disk. Replaying a few rows would be
    /// cheap, but a reader whose snapshot lags the last commit cannot map it and read its
    /// columns: it loads the whole graph and every row's attributes (at 1M × 384: 3.9–4.3 s
    /// and 1.2 GiB for each fresh `status` after 50 served ingests, against 0.18 s and 313 MiB
    /// mapped), while the writer saves a 530 MB snapshot and its columns in ~2–3 s once, at the
    /// end of a run or a server's session. (An earlier rule left deltas under 1/256 of the rows
    /// to replay, which cost every later reader the full load.) A read-only handle has nothing
    /// to save.
    fn checkpoint(&self) -> Result<(), IndexError> {
        if self.read_only {
            return Ok(());
        }
        let worth_it = {
            let state = self.read();
            (state.snapshot_generation.is_none() && state.attrs.len() > 0)
                || state.changed_since_snapshot > 0
                || self.columns_stale(&state)
        };
        if worth_it {
            AnnVectorIndex::checkpoint(self)?;
        }
        Ok(())
    }
}
