//! The catalog as an SQLite database (`catalog.sqlite` in the store folder): a
//! [`CatalogStore`] whose save writes only the rows that changed.
//!
//! # Format (`zhiku-catalog/1`)
//!
//! - `meta(key, value)`: `format` (the tag above), `header` (JSON: policy, space, analyzer,
//!   origin, generations — everything of a [`StoredCatalog`] but its per-document maps — and
//!   the numbers of documents and chunks, so a process that answers queries reads the header
//!   and looks up the few documents it needs, see [`CatalogStore::load_header`]) and
//!   `version` (a counter every save increments).
//! - `docs(id, entry)`: each indexed document's catalog entry (revision, fingerprint, chunk IDs)
//!   as JSON; `sources(id, path)`: each document's source path; `stamps(path, stamp)`: the
//!   document store's stamp of each path.
//!
//! Nothing was ever saved when there is no `header` row (or no file).
//!
//! # Saving by what changed
//!
//! A handle remembers the `version` the database had when it last loaded or saved it.
//! [`CatalogStore::save_changed`] writes, in one transaction, the header and only the rows of
//! the documents and paths the change lists (an ingest of one document writes a handful of rows
//! and copies nothing, whatever the size of the catalog). When the version in the database is
//! not the one remembered (another handle saved in between, or this handle has not read it yet),
//! and for every [`CatalogStore::save`], every row is written instead. Either way the
//! transaction makes the save atomic: a reader, now or after a crash, sees the previous catalog
//! or the new one. The database runs in WAL mode with `synchronous=FULL`, so a save that
//! returned survives a power cut.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{
    CachedStatement, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};
use serde::{Deserialize, Serialize};
use zhiku_domain::ports::{
    CatalogCounts, CatalogError, CatalogStore, Changed, Generations, Origin, StoredCatalog,
};
use zhiku_domain::usecases::{Catalog, CatalogEntry};
use zhiku_domain::{ChunkingPolicy, DocId};

/// The database's format tag.
pub const CATALOG_FORMAT: &str = "zhiku-catalog/1";

/// The database's file name inside the store folder.
pub const CATALOG_FILE: &str = "catalog.sqlite";

const ADAPTER: &str = "sqlite";

/// How long a save waits for another handle's transaction before giving up (temporary). Short:
/// one process writes a store (it holds the store lock), and WAL readers never block it.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, entry TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sources (id TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS stamps (path TEXT PRIMARY KEY, stamp TEXT NOT NULL) WITHOUT ROWID;
";

/// Everything of a stored catalog but its per-document maps: one `meta` row.
#[derive(Serialize, Deserialize)]
struct Header {
    policy: ChunkingPolicy,
    space: Option<String>,
    analyzer: String,
    origin: Option<Origin>,
    #[serde(default)]
    generations: Generations,
    /// Absent in headers written before it was kept: counted from the rows then.
    #[serde(default)]
    counts: Option<CatalogCounts>,
}

impl Header {
    fn of(stored: &StoredCatalog, counts: CatalogCounts) -> Self {
        Self {
            policy: stored.catalog.policy,
            space: stored.catalog.space.clone(),
            analyzer: stored.catalog.analyzer.clone(),
            origin: stored.origin.clone(),
            generations: stored.generations,
            counts: Some(counts),
        }
    }

    fn stored(self) -> StoredCatalog {
        let mut stored = StoredCatalog::empty(Catalog::new(self.policy, self.space, self.analyzer));
        stored.generations = self.generations;
        stored.origin = self.origin;
        stored
    }
}

/// The catalog database of one store folder.
#[derive(Debug)]
pub struct SqliteCatalog {
    path: PathBuf,
    read_only: bool,
    /// Opened on first use: a read-only handle on a folder without a database opens nothing.
    conn: Mutex<Option<Connection>>,
    /// The database's `version` when this handle last loaded or saved it.
    version: Mutex<Option<i64>>,
}

impl SqliteCatalog {
    /// The catalog database in the store folder `dir`, created on first use.
    pub fn in_store(dir: &Path) -> Self {
        Self::at(&dir.join(CATALOG_FILE))
    }

    /// The catalog database in the store folder `dir`, to read: the handle never creates the
    /// file and refuses to save.
    pub fn read_only_in_store(dir: &Path) -> Self {
        Self::read_only_at(&dir.join(CATALOG_FILE))
    }

    /// The catalog database at `path`, created on first use.
    pub fn at(path: &Path) -> Self {
        Self::handle(path, false)
    }

    /// The catalog database at `path`, to read (as [`Self::read_only_in_store`]).
    pub fn read_only_at(path: &Path) -> Self {
        Self::handle(path, true)
    }

    fn handle(path: &Path, read_only: bool) -> Self {
        Self {
            path: path.to_path_buf(),
            read_only,
            conn: Mutex::new(None),
            version: Mutex::new(None),
        }
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// Runs `f` on the connection, opening it first; `Ok(None)` when a read-only handle finds
    /// no database.
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, CatalogError>,
    ) -> Result<Option<T>, CatalogError> {
        let mut slot = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            if self.read_only && !self.path.exists() {
                return Ok(None);
            }
            *slot = Some(self.open()?);
        }
        let conn = slot.as_mut().expect("opened above");
        f(conn).map(Some)
    }

    fn open(&self) -> Result<Connection, CatalogError> {
        // Never through a symbolic link (`SQLITE_OPEN_NOFOLLOW`): a link planted in the store
        // under the catalog's name is refused, its target neither read nor written.
        let flags = if self.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW
        };
        let conn = match Connection::open_with_flags(&self.path, flags).and_then(|c| {
            c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            Ok(c)
        }) {
            Ok(conn) => conn,
            // A WAL database in a folder this process cannot write, with no writer around (its
            // -wal and -shm files are gone once the last writer closed): SQLite cannot create
            // the shared-memory file, so it is read as an immutable file, which it then is.
            Err(e) if self.read_only && cannot_open(&e) => Connection::open_with_flags(
                immutable_uri(&self.path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(|e| self.error(e))?,
            Err(e) => return Err(self.error(e)),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| self.error(e))?;
        if !self.read_only {
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| self.error(e))?;
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(|e| self.error(e))?;
            conn.execute_batch(SCHEMA).map_err(|e| self.error(e))?;
        }
        Ok(conn)
    }

    /// Maps an SQLite error: "not a database" and corruption are unreadable (rebuild), a busy
    /// or full database is temporary, the rest a backend failure.
    fn error(&self, e: rusqlite::Error) -> CatalogError {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                CatalogError::Unreadable {
                    location: self.location(),
                    source: e.into(),
                }
            }
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::CannotOpen
                | ErrorCode::SystemIoFailure,
            ) => CatalogError::Unavailable {
                adapter: ADAPTER,
                message: format!("{}: {e}", self.location()),
            },
            _ => CatalogError::Backend {
                adapter: ADAPTER,
                source: e.into(),
                temporary: false,
            },
        }
    }

    fn unreadable(&self, what: &str, e: impl std::fmt::Display) -> CatalogError {
        CatalogError::Unreadable {
            location: self.location(),
            source: format!("{what}: {e}").into(),
        }
    }

    fn meta(&self, conn: &Connection, key: &str) -> Result<Option<String>, CatalogError> {
        match conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
        {
            Ok(v) => Ok(v),
            // A read-only handle on a database whose writer never created the tables.
            Err(rusqlite::Error::SqliteFailure(_, Some(m))) if m.starts_with("no such table") => {
                Ok(None)
            }
            Err(e) => Err(self.error(e)),
        }
    }

    fn version(&self, conn: &Connection) -> Result<i64, CatalogError> {
        Ok(match self.meta(conn, "version")? {
            Some(v) => v.parse().map_err(|e| self.unreadable("version", e))?,
            None => 0,
        })
    }

    /// Reads the whole catalog; `None` when nothing was saved. Checks the format first.
    fn check_format(&self, conn: &Connection) -> Result<(), CatalogError> {
        match self.meta(conn, "format")? {
            Some(format) if format != CATALOG_FORMAT => Err(CatalogError::FormatMismatch {
                location: self.location(),
                expected: CATALOG_FORMAT.into(),
                found: format,
            }),
            _ => Ok(()),
        }
    }

    fn read_all(
        &self,
        conn: &Connection,
        with_stamps: bool,
    ) -> Result<Option<StoredCatalog>, CatalogError> {
        self.check_format(conn)?;
        let Some(header) = self.meta(conn, "header")? else {
            return Ok(None);
        };
        let header: Header =
            serde_json::from_str(&header).map_err(|e| self.unreadable("header", e))?;
        let mut stored = header.stored();
        let catalog = &mut stored.catalog;
        // Each row is handed over as it is read (no list of every row's strings in between).
        let rows = |sql: &str,
                    each: &mut dyn FnMut(String, &str) -> Result<(), CatalogError>|
         -> Result<(), CatalogError> {
            let mut statement = conn.prepare(sql).map_err(|e| self.error(e))?;
            let mut rows = statement.query([]).map_err(|e| self.error(e))?;
            while let Some(row) = rows.next().map_err(|e| self.error(e))? {
                let key: String = row.get(0).map_err(|e| self.error(e))?;
                let value = row.get_ref(1).map_err(|e| self.error(e))?;
                let value = value.as_str().map_err(|e| self.unreadable("row", e))?;
                each(key, value)?;
            }
            Ok(())
        };
        rows("SELECT id, entry FROM docs", &mut |id, entry| {
            let id = DocId::new(id).map_err(|e| self.unreadable("document id", e))?;
            let entry: CatalogEntry = serde_json::from_str(entry)
                .map_err(|e| self.unreadable(&format!("entry of {id}"), e))?;
            catalog.docs.insert(id, entry);
            Ok(())
        })?;
        let mut sources = BTreeMap::new();
        rows("SELECT id, path FROM sources", &mut |id, path| {
            let id = DocId::new(id).map_err(|e| self.unreadable("document id", e))?;
            sources.insert(id, path.to_string());
            Ok(())
        })?;
        let mut stamps = BTreeMap::new();
        if with_stamps {
            rows("SELECT path, stamp FROM stamps", &mut |path, stamp| {
                stamps.insert(path, stamp.to_string());
                Ok(())
            })?;
        }
        stored.sources = sources;
        stored.stamps = stamps;
        Ok(Some(stored))
    }

    /// The header alone, with the counts it records (or, in a header written before they
    /// were kept, counted from the rows by SQLite).
    fn read_header(
        &self,
        conn: &Connection,
    ) -> Result<Option<(StoredCatalog, CatalogCounts)>, CatalogError> {
        self.check_format(conn)?;
        let Some(header) = self.meta(conn, "header")? else {
            return Ok(None);
        };
        let mut header: Header =
            serde_json::from_str(&header).map_err(|e| self.unreadable("header", e))?;
        let counts = match header.counts.take() {
            Some(counts) => counts,
            None => {
                let (documents, chunks): (i64, i64) = conn
                    .query_row(
                        "SELECT count(*), coalesce(sum(json_array_length(entry, '$.chunk_ids')), 0)
                         FROM docs",
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(|e| self.error(e))?;
                CatalogCounts {
                    documents: usize::try_from(documents).unwrap_or(0),
                    chunks: usize::try_from(chunks).unwrap_or(0),
                }
            }
        };
        Ok(Some((header.stored(), counts)))
    }

    /// Writes the header and the next `version`, then every row of `catalog` (`changed`:
    /// `None`) or only the rows of what `changed` lists.
    fn write(
        &self,
        tx: &Transaction<'_>,
        catalog: &StoredCatalog,
        changed: Option<&Changed>,
        version: i64,
    ) -> Result<(), CatalogError> {
        let e = |e| self.error(e);
        let counts = match changed {
            Some(changed) => self.counts_after(tx, catalog, changed)?,
            None => CatalogCounts::of(&catalog.catalog),
        };
        let header = serde_json::to_string(&Header::of(catalog, counts)).map_err(backend)?;
        let mut meta = self.table(tx, &META)?;
        meta.set("format", Some(CATALOG_FORMAT))?;
        meta.set("header", Some(&header))?;
        meta.set("version", Some(&version.to_string()))?;
        let mut docs = self.table(tx, &DOCS)?;
        let mut sources = self.table(tx, &SOURCES)?;
        let mut stamps = self.table(tx, &STAMPS)?;
        let entry = |id: &DocId| {
            catalog
                .catalog
                .docs
                .get(id)
                .map(|entry| serde_json::to_string(entry).map_err(backend))
                .transpose()
        };
        match changed {
            Some(changed) => {
                for id in changed.docs.keys() {
                    docs.set(id.as_str(), entry(id)?.as_deref())?;
                    sources.set(id.as_str(), catalog.sources.get(id).map(String::as_str))?;
                }
                for path in changed.stamps.keys() {
                    stamps.set(path, catalog.stamps.get(path).map(String::as_str))?;
                }
            }
            None => {
                tx.execute_batch("DELETE FROM docs; DELETE FROM sources; DELETE FROM stamps;")
                    .map_err(e)?;
                for id in catalog.catalog.docs.keys() {
                    docs.set(id.as_str(), entry(id)?.as_deref())?;
                }
                for (id, path) in &catalog.sources {
                    sources.set(id.as_str(), Some(path))?;
                }
                for (path, stamp) in &catalog.stamps {
                    stamps.set(path, Some(stamp))?;
                }
            }
        }
        Ok(())
    }

    /// The counts of `catalog`, which differs from what the database holds only in what
    /// `changed` lists: the recorded counts moved by the changed documents (an ingest does not
    /// count a million entries), or counted whole when the header has none.
    fn counts_after(
        &self,
        conn: &Connection,
        catalog: &StoredCatalog,
        changed: &Changed,
    ) -> Result<CatalogCounts, CatalogError> {
        let recorded = match self.meta(conn, "header")? {
            Some(header) => {
                serde_json::from_str::<Header>(&header)
                    .map_err(|e| self.unreadable("header", e))?
                    .counts
            }
            None => None,
        };
        let Some(mut counts) = recorded else {
            return Ok(CatalogCounts::of(&catalog.catalog));
        };
        for (id, (before, _)) in &changed.docs {
            let after = catalog.catalog.docs.get(id);
            let chunks = |e: Option<&CatalogEntry>| e.map_or(0, |e| e.chunk_ids.len());
            counts.documents = (counts.documents + usize::from(after.is_some()))
                .saturating_sub(usize::from(before.is_some()));
            counts.chunks = (counts.chunks + chunks(after)).saturating_sub(chunks(before.as_ref()));
        }
        Ok(counts)
    }

    /// The row writer of one of the key-value tables.
    fn table<'t>(
        &'t self,
        tx: &'t Transaction<'_>,
        columns: &Columns,
    ) -> Result<Table<'t>, CatalogError> {
        let Columns { table, key, value } = columns;
        let e = |e| self.error(e);
        Ok(Table {
            catalog: self,
            put: tx
                .prepare_cached(&format!(
                    "INSERT OR REPLACE INTO {table} ({key}, {value}) VALUES (?1, ?2)"
                ))
                .map_err(e)?,
            delete: tx
                .prepare_cached(&format!("DELETE FROM {table} WHERE {key} = ?1"))
                .map_err(e)?,
        })
    }

    /// One write transaction: the whole catalog, or only what `changed` lists when the
    /// database still holds what this handle last loaded or saved.
    fn save_rows(
        &self,
        catalog: &StoredCatalog,
        changed: Option<&Changed>,
    ) -> Result<(), CatalogError> {
        if self.read_only {
            return Err(CatalogError::ReadOnly {
                adapter: ADAPTER,
                location: self.location(),
            });
        }
        self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.error(e))?;
            let version = self.version(&tx)?;
            let mut known = self.version.lock().unwrap_or_else(|e| e.into_inner());
            // Version 0: nothing saved yet, so nothing to write changes onto.
            let changed = changed.filter(|_| *known == Some(version) && version > 0);
            self.write(&tx, catalog, changed, version + 1)?;
            tx.commit().map_err(|e| self.error(e))?;
            *known = Some(version + 1);
            Ok(())
        })?;
        Ok(())
    }
}

/// A key-value table of the [`SCHEMA`]: its name, its key column and its value column.
struct Columns {
    table: &'static str,
    key: &'static str,
    value: &'static str,
}

const META: Columns = Columns {
    table: "meta",
    key: "key",
    value: "value",
};
const DOCS: Columns = Columns {
    table: "docs",
    key: "id",
    value: "entry",
};
const SOURCES: Columns = Columns {
    table: "sources",
    key: "id",
    value: "path",
};
const STAMPS: Columns = Columns {
    table: "stamps",
    key: "path",
    value: "stamp",
};

/// Puts and deletes the rows of one table.
struct Table<'t> {
    catalog: &'t SqliteCatalog,
    put: CachedStatement<'t>,
    delete: CachedStatement<'t>,
}

impl Table<'_> {
    /// Writes `value` under `key`, or deletes the row when there is none.
    fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), CatalogError> {
        match value {
            Some(value) => self.put.execute([key, value]),
            None => self.delete.execute([key]),
        }
        .map(drop)
        .map_err(|e| self.catalog.error(e))
    }
}

fn backend(e: serde_json::Error) -> CatalogError {
    CatalogError::Backend {
        adapter: ADAPTER,
        source: e.into(),
        temporary: false,
    }
}

fn cannot_open(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
    )
}

/// `file:<path>?immutable=1`, the path percent-encoded.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(char::from(*byte));
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

impl SqliteCatalog {
    fn load_with(&self, with_stamps: bool) -> Result<Option<StoredCatalog>, CatalogError> {
        let loaded = self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Deferred)
                .map_err(|e| self.error(e))?;
            let version = self.version(&tx)?;
            let stored = self.read_all(&tx, with_stamps)?;
            // A handle that did not read the stamps must not save by difference from them.
            let version = if with_stamps { Some(version) } else { None };
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = version;
            Ok(stored)
        })?;
        Ok(loaded.flatten())
    }
}

impl CatalogStore for SqliteCatalog {
    /// Skips the stamps: a process that only reads never refreshes.
    fn load_for_reading(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        self.load_with(false)
    }

    fn load(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        self.load_with(true)
    }

    /// One `meta` row. The handle does not learn the version: it read no rows, so it must not
    /// save by difference from them.
    fn load_header(&self) -> Result<Option<(StoredCatalog, CatalogCounts)>, CatalogError> {
        let loaded = self.with_conn(|conn| {
            *self.version.lock().unwrap_or_else(|e| e.into_inner()) = None;
            self.read_header(conn)
        })?;
        Ok(loaded.flatten())
    }

    /// One primary-key lookup per document.
    fn source_paths(&self, ids: &[DocId]) -> Result<BTreeMap<DocId, String>, CatalogError> {
        let found = self.with_conn(|conn| {
            let mut lookup = conn
                .prepare_cached("SELECT path FROM sources WHERE id = ?1")
                .map_err(|e| self.error(e))?;
            let mut out = BTreeMap::new();
            for id in ids {
                let path: Option<String> = lookup
                    .query_row([id.as_str()], |r| r.get(0))
                    .optional()
                    .map_err(|e| self.error(e))?;
                if let Some(path) = path {
                    out.insert(id.clone(), path);
                }
            }
            Ok(out)
        })?;
        Ok(found.unwrap_or_default())
    }

    fn save(&self, catalog: &StoredCatalog) -> Result<(), CatalogError> {
        self.save_rows(catalog, None)
    }

    fn save_changed(&self, catalog: &StoredCatalog, changed: &Changed) -> Result<(), CatalogError> {
        self.save_rows(catalog, Some(changed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header written before the counts were kept: they are counted from the rows.
    #[test]
    fn a_header_without_counts_is_counted_from_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteCatalog::in_store(dir.path());
        let mut stored = StoredCatalog::empty(Catalog::new(
            ChunkingPolicy::with_sizes(640, 64).unwrap(),
            None,
            "a/1".into(),
        ));
        for (doc, n) in [("a", 2), ("b", 0), ("c", 5)] {
            let chunk_ids = (0..n)
                .map(|i| zhiku_domain::ChunkId::parse(&format!("{doc}:{i}:0000000000000000")))
                .collect::<Result<_, _>>()
                .unwrap();
            stored.catalog.docs.insert(
                DocId::new(doc).unwrap(),
                CatalogEntry {
                    revision: zhiku_domain::Revision::of_content(doc),
                    fingerprint: String::new(),
                    chunk_ids,
                    about: None,
                    indexed_at: None,
                    expires_at: None,
                },
            );
        }
        store.save(&stored).unwrap();
        store
            .with_conn(|conn| {
                conn.execute(
                    "UPDATE meta SET value = json_remove(value, '$.counts') WHERE key = 'header'",
                    [],
                )
                .map_err(|e| store.error(e))
            })
            .unwrap();
        let (_, counts) = SqliteCatalog::read_only_in_store(dir.path())
            .load_header()
            .unwrap()
            .unwrap();
        assert_eq!(
            counts,
            CatalogCounts {
                documents: 3,
                chunks: 7
            }
        );
    }

    #[test]
    fn immutable_uris_encode_every_special_character() {
        assert_eq!(
            immutable_uri(Path::new("/kb/笔 记?#%/catalog.sqlite")),
            "file:/kb/%E7%AC%94%20%E8%AE%B0%3F%23%25/catalog.sqlite?immutable=1"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_catalog_that_is_a_link_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("precious.txt");
        std::fs::write(&outside, "not a database\n").unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        std::os::unix::fs::symlink(&outside, store.join(CATALOG_FILE)).unwrap();
        let empty = StoredCatalog::empty(Catalog::new(
            ChunkingPolicy::with_sizes(640, 64).unwrap(),
            None,
            "a/1".into(),
        ));
        assert!(SqliteCatalog::in_store(&store).save(&empty).is_err());
        assert!(SqliteCatalog::in_store(&store).load().is_err());
        assert!(SqliteCatalog::read_only_in_store(&store).load().is_err());
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "not a database\n"
        );
        assert!(!store.join(format!("{CATALOG_FILE}-wal")).exists());
    }
}
