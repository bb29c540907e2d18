//! The durable truth of the index: one SQLite database, `<dir>/vectors.sqlite`, in WAL mode
//! with `synchronous = FULL` (a commit is on disk when it returns).
//!
//! Format `zhiku-ann/1`:
//!
//! ```text
//! meta(name TEXT PRIMARY KEY, value TEXT)      -- format, space (JSON), generation,
//!                                              -- snapshot_generation, pruned_through, next_key
//! chunks(key INTEGER PRIMARY KEY,              -- the graph's key of the chunk
//!        chunk_id TEXT UNIQUE, doc_id, scope, locale TEXT,
//!        terms BLOB,                           -- sorted metadata terms, u32-LE length + UTF-8 each
//!        record TEXT,                          -- the chunk's ChunkRecord as JSON
//!        vector BLOB,                          -- dims × f32 little-endian, as upserted
//!        generation INTEGER)                   -- the commit that last wrote the row (indexed)
//! tombstones(key INTEGER PRIMARY KEY, generation INTEGER)   -- deletes, for replay (indexed)
//! ```
//!
//! The record is JSON, the serde form the domain already defines (as in the vector file and
//! the store bench, ~800 B a chunk): it stays readable with the `sqlite3` shell and tolerant of
//! added fields, and it is only parsed for the few chunks a search returns. The columns a
//! filter needs are stored beside it so that opening never parses a record.
//!
//! A commit is one transaction: deletes (row removed, tombstone written), then upserts (row
//! written with the new generation), then `generation + 1` and `next_key` in `meta`. Its cost
//! grows with the rows it changes. Tombstones older than the last snapshot are pruned when a
//! snapshot is recorded (`pruned_through`), since no replay needs them any more.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, params};
use zhiku_domain::ports::IndexError;
use zhiku_domain::{Chunk, ChunkId, ChunkRecord, EmbeddingSpace};

use crate::attrs::{Key, RowAttrs};
use crate::error::backend;

/// The format this crate writes and reads.
pub(crate) const FORMAT: &str = "zhiku-ann/1";

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT_MS: u64 = 10_000;

/// Keys per `IN (…)` list of a batched read.
const BATCH: usize = 256;

/// What `meta` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Commits so far (0 for a new store).
    pub(crate) generation: u64,
    /// The generation the graph snapshot on disk reflects, if one was recorded.
    pub(crate) snapshot_generation: Option<u64>,
    /// Tombstones of generations up to this one were pruned.
    pub(crate) pruned_through: u64,
    /// The next key to allocate.
    pub(crate) next_key: Key,
}

/// A row to write at commit.
#[derive(Debug)]
pub(crate) struct PutRow<'a> {
    pub(crate) key: Key,
    pub(crate) attrs: RowAttrs,
    pub(crate) record: String,
    /// `None`: the row is stored and keeps its vector (a record update).
    pub(crate) vector: Option<&'a [f32]>,
}

fn sql(e: rusqlite::Error) -> IndexError {
    backend(e)
}

/// Opens (creating) the database for writing.
pub(crate) fn open_writer(path: &Path) -> Result<Connection, IndexError> {
    // Never through a symbolic link (`SQLITE_OPEN_NOFOLLOW`): a link planted in the store under
    // this file's name is refused, its target neither read nor written.
    let conn =
        Connection::open_with_flags(path, OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW)
            .map_err(sql)?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(sql)?;
    // Pages of 16 KiB (set before the first table exists; a store created with another size
    // keeps it): a row is a 1.5 KiB vector (384 f32) plus its record, ~2.3 KiB, so 4 KiB pages
    // held one row each and left 40 % of the file empty; 16 KiB pages hold seven.
    // WAL: readers (also in other processes) never block the writer and see the last commit.
    // synchronous = FULL fsyncs the WAL at each commit: NORMAL could lose the last commits on
    // a power cut.
    conn.execute_batch(
        "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;",
    )
    .map_err(sql)?;
    Ok(conn)
}

/// Opens the database read-only (it must exist).
pub(crate) fn open_reader(path: &Path) -> Result<Connection, IndexError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let opened = Connection::open_with_flags(path, flags).and_then(|c| {
        c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(c)
    });
    let conn = match opened {
        Ok(conn) => Ok(conn),
        // A WAL database in a folder this process cannot write, with no writer around (the
        // last writer to close removed its -wal and -shm files): SQLite cannot create the
        // shared-memory file, so the file is read as immutable, which it then is.
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
            ) =>
        {
            Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
        }
        Err(e) => Err(e),
    }
    .map_err(|e| backend(format!("cannot open {} read-only: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(sql)?;
    Ok(conn)
}

/// `file:<path>?immutable=1`, the path percent-encoded.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri + "?immutable=1"
}

/// Creates the schema of a new store, or checks the format and space of an existing one.
pub(crate) fn init(conn: &mut Connection, space: &EmbeddingSpace) -> Result<(), IndexError> {
    let tx = conn.transaction().map_err(sql)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS chunks (
             key INTEGER PRIMARY KEY,
             chunk_id TEXT NOT NULL UNIQUE,
             doc_id TEXT NOT NULL,
             scope TEXT NOT NULL,
             locale TEXT NOT NULL,
             terms BLOB NOT NULL,
             record TEXT NOT NULL,
             vector BLOB NOT NULL,
             generation INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS chunks_attrs
             ON chunks (generation, key, chunk_id, doc_id, scope, locale, terms);
         DROP INDEX IF EXISTS chunks_generation;
         CREATE TABLE IF NOT EXISTS tombstones (key INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS tombstones_generation ON tombstones (generation);",
    )
    .map_err(sql)?;
    let format: Option<String> = get(&tx, "format")?;
    match format {
        None => {
            let space_json = serde_json::to_string(space).map_err(backend)?;
            for (name, value) in [
                ("format", FORMAT.to_string()),
                ("space", space_json),
                ("generation", "0".into()),
                ("pruned_through", "0".into()),
                ("next_key", "1".into()),
            ] {
                set(&tx, name, &value)?;
            }
        }
        Some(_) => check(&tx, space)?,
    }
    tx.commit().map_err(sql)
}

/// Refuses a store of another format or embedding space.
pub(crate) fn check(conn: &Connection, space: &EmbeddingSpace) -> Result<(), IndexError> {
    check_format(conn)?;
    let stored: String =
        get(conn, "space")?.ok_or_else(|| backend("the vector store has no space record"))?;
    let stored: EmbeddingSpace = serde_json::from_str(&stored).map_err(backend)?;
    if &stored != space {
        return Err(IndexError::SpaceMismatch {
            expected: stored.identity().to_string(),
            found: space.identity().to_string(),
        });
    }
    Ok(())
}

/// Refuses a store of another format.
pub(crate) fn check_format(conn: &Connection) -> Result<(), IndexError> {
    let format: Option<String> = get(conn, "format")?;
    let format = format.ok_or_else(|| backend("the vector store has no format record"))?;
    if format != FORMAT {
        return Err(IndexError::ConfigMismatch {
            what: "vector store format",
            expected: format,
            found: FORMAT.into(),
        });
    }
    Ok(())
}

fn get(conn: &Connection, name: &str) -> Result<Option<String>, IndexError> {
    conn.prepare_cached("SELECT value FROM meta WHERE name = ?1")
        .map_err(sql)?
        .query_row([name], |r| r.get(0))
        .optional()
        .map_err(sql)
}

fn set(conn: &Connection, name: &str, value: &str) -> Result<(), IndexError> {
    conn.prepare_cached("INSERT OR REPLACE INTO meta (name, value) VALUES (?1, ?2)")
        .map_err(sql)?
        .execute([name, value])
        .map_err(sql)?;
    Ok(())
}

fn get_u64(conn: &Connection, name: &str) -> Result<Option<u64>, IndexError> {
    get(conn, name)?
        .map(|v| {
            v.parse::<u64>()
                .map_err(|e| backend(format!("meta {name} = {v:?}: {e}")))
        })
        .transpose()
}

/// Reads `meta`.
pub(crate) fn meta(conn: &Connection) -> Result<Meta, IndexError> {
    Ok(Meta {
        generation: get_u64(conn, "generation")?.unwrap_or(0),
        snapshot_generation: get_u64(conn, "snapshot_generation")?,
        pruned_through: get_u64(conn, "pruned_through")?.unwrap_or(0),
        next_key: get_u64(conn, "next_key")?.unwrap_or(1),
    })
}

fn to_key(v: i64) -> Key {
    v as Key
}

fn from_key(k: Key) -> i64 {
    k as i64
}

fn encode_terms(terms: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(terms.iter().map(|t| t.len() + 4).sum());
    for t in terms {
        out.extend_from_slice(&(t.len() as u32).to_le_bytes());
        out.extend_from_slice(t.as_bytes());
    }
    out
}

fn decode_terms(mut bytes: &[u8]) -> Result<Vec<String>, IndexError> {
    let mut terms = Vec::new();
    while !bytes.is_empty() {
        let bad = || backend("a chunk's terms column is truncated");
        let len = bytes.get(..4).ok_or_else(bad)?;
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let text = bytes.get(4..4 + len).ok_or_else(bad)?;
        terms.push(String::from_utf8(text.to_vec()).map_err(backend)?);
        bytes = &bytes[4 + len..];
    }
    Ok(terms)
}

/// The f32 little-endian bytes of a vector.
pub(crate) fn encode_vector(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A vector from its bytes, checked against the space's dimensions.
pub(crate) fn decode_vector(bytes: &[u8], dims: usize) -> Result<Vec<f32>, IndexError> {
    if bytes.len() != dims * 4 {
        return Err(backend(format!(
            "a stored vector has {} bytes, the space has {dims} dims",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn row_attrs(
    chunk_id: &str,
    doc_id: String,
    scope: String,
    locale: String,
    terms: &[u8],
) -> Result<RowAttrs, IndexError> {
    Ok(RowAttrs {
        chunk_id: ChunkId::parse(chunk_id).map_err(backend)?,
        doc_id,
        scope,
        locale,
        terms: decode_terms(terms)?,
    })
}

/// The number of stored rows (counted on the covering index: a few MiB at 1M rows).
pub(crate) fn row_count(conn: &Connection) -> Result<usize, IndexError> {
    let n: i64 = conn
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
        .map_err(sql)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Calls `f` with the key and filterable attributes of every row written after `since` (every
/// row when `None`): the small columns only, never the record. They are read from the covering
/// index `chunks_attrs` alone (an open reads a few MiB, not every row's record and vector;
/// a store written before that index existed gets it at its next writing open).
pub(crate) fn for_each_attrs(
    conn: &Connection,
    since: Option<u64>,
    mut f: impl FnMut(Key, RowAttrs),
) -> Result<(), IndexError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT key, chunk_id, doc_id, scope, locale, terms FROM chunks WHERE generation > ?1",
        )
        .map_err(sql)?;
    let since = since.map_or(-1, |g| g as i64);
    let mut rows = stmt.query([since]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let key = to_key(row.get(0).map_err(sql)?);
        let chunk_id = row.get_ref(1).map_err(sql)?.as_str().map_err(backend)?;
        let attrs = row_attrs(
            chunk_id,
            row.get(2).map_err(sql)?,
            row.get(3).map_err(sql)?,
            row.get(4).map_err(sql)?,
            row.get_ref(5).map_err(sql)?.as_blob().map_err(backend)?,
        )?;
        f(key, attrs);
    }
    Ok(())
}

/// Calls `f` with the key and vector of every row written after `since` (every row when
/// `None`), in key order.
pub(crate) fn for_each_vector(
    conn: &Connection,
    since: Option<u64>,
    dims: usize,
    mut f: impl FnMut(Key, Vec<f32>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let Some(since) = since else {
        // Every row: one scan of the table in key order.
        let mut stmt = conn
            .prepare_cached("SELECT key, vector FROM chunks ORDER BY key")
            .map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        while let Some(row) = rows.next().map_err(sql)? {
            let key = to_key(row.get(0).map_err(sql)?);
            f(key, row_vector(row, dims)?)?;
        }
        return Ok(());
    };
    // The rows of later generations, found through the index on the generation (an `ORDER BY
    // key` would make SQLite scan the whole table for them), then put in key order.
    let mut stmt = conn
        .prepare_cached("SELECT key, vector FROM chunks WHERE generation > ?1")
        .map_err(sql)?;
    let mut rows = stmt.query([since as i64]).map_err(sql)?;
    let mut later = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        later.push((to_key(row.get(0).map_err(sql)?), row_vector(row, dims)?));
    }
    later.sort_unstable_by_key(|(key, _)| *key);
    for (key, vector) in later {
        f(key, vector)?;
    }
    Ok(())
}

fn row_vector(row: &rusqlite::Row<'_>, dims: usize) -> Result<Vec<f32>, IndexError> {
    decode_vector(
        row.get_ref(1).map_err(sql)?.as_blob().map_err(backend)?,
        dims,
    )
}

/// Calls `f` with the chunk (record parsed and validated) and vector of every stored row, in
/// key order.
pub(crate) fn for_each_row(
    conn: &Connection,
    dims: usize,
    mut f: impl FnMut(Chunk, Vec<f32>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let mut stmt = conn
        .prepare_cached("SELECT record, vector FROM chunks ORDER BY key")
        .map_err(sql)?;
    let mut rows = stmt.query([]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let record: ChunkRecord =
            serde_json::from_str(row.get_ref(0).map_err(sql)?.as_str().map_err(backend)?)
                .map_err(backend)?;
        let vector = decode_vector(
            row.get_ref(1).map_err(sql)?.as_blob().map_err(backend)?,
            dims,
        )?;
        f(Chunk::from_record(record).map_err(backend)?, vector)?;
    }
    Ok(())
}

/// Keys deleted after generation `since`.
pub(crate) fn deleted_since(conn: &Connection, since: u64) -> Result<Vec<Key>, IndexError> {
    let mut stmt = conn
        .prepare_cached("SELECT key FROM tombstones WHERE generation > ?1")
        .map_err(sql)?;
    stmt.query_map([since as i64], |r| r.get::<_, i64>(0))
        .map_err(sql)?
        .map(|k| k.map(to_key).map_err(sql))
        .collect()
}

/// Runs `SELECT key, <column> FROM chunks WHERE key IN (…)` over `keys` in batches.
fn by_keys(
    conn: &Connection,
    column: &str,
    keys: &[Key],
    mut f: impl FnMut(Key, rusqlite::types::ValueRef<'_>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let keys: Vec<i64> = keys.iter().map(|k| from_key(*k)).collect();
    in_batches(conn, "key", column, &keys, |row| {
        f(
            to_key(row.get(0).map_err(sql)?),
            row.get_ref(1).map_err(sql)?,
        )
    })
}

/// Runs `SELECT <by>, <column> FROM chunks WHERE <by> IN (…)` over `values` in batches, calling
/// `f` with each row found.
fn in_batches<V: rusqlite::ToSql>(
    conn: &Connection,
    by: &str,
    column: &str,
    values: &[V],
    mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    for part in values.chunks(BATCH) {
        let marks = vec!["?"; part.len()].join(",");
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {by}, {column} FROM chunks WHERE {by} IN ({marks})"
            ))
            .map_err(sql)?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(part.iter()))
            .map_err(sql)?;
        while let Some(row) = rows.next().map_err(sql)? {
            f(row)?;
        }
    }
    Ok(())
}

/// A stored record, parsed and validated.
fn chunk_of(value: rusqlite::types::ValueRef<'_>) -> Result<Chunk, IndexError> {
    let record: ChunkRecord =
        serde_json::from_str(value.as_str().map_err(backend)?).map_err(backend)?;
    Chunk::from_record(record).map_err(backend)
}

/// The stored vectors of `keys` (absent keys are missing from the map).
pub(crate) fn vectors(
    conn: &Connection,
    keys: &[Key],
    dims: usize,
) -> Result<HashMap<Key, Vec<f32>>, IndexError> {
    let mut out = HashMap::with_capacity(keys.len());
    by_keys(conn, "vector", keys, |key, v| {
        out.insert(key, decode_vector(v.as_blob().map_err(backend)?, dims)?);
        Ok(())
    })?;
    Ok(out)
}

/// The stored chunks of `keys`, each record parsed and validated.
pub(crate) fn chunks(conn: &Connection, keys: &[Key]) -> Result<HashMap<Key, Chunk>, IndexError> {
    let mut out = HashMap::with_capacity(keys.len());
    by_keys(conn, "record", keys, |key, v| {
        out.insert(key, chunk_of(v)?);
        Ok(())
    })?;
    Ok(out)
}

/// The stored chunks of `ids`, looked up by chunk ID (the unique index), in the order asked;
/// `None` where no row holds the ID.
pub(crate) fn chunks_by_id(
    conn: &Connection,
    ids: &[ChunkId],
) -> Result<Vec<Option<Chunk>>, IndexError> {
    let mut found: HashMap<String, Chunk> = HashMap::with_capacity(ids.len());
    let ids_text: Vec<&str> = ids.iter().map(ChunkId::as_str).collect();
    in_batches(conn, "chunk_id", "record", &ids_text, |row| {
        found.insert(
            row.get(0).map_err(sql)?,
            chunk_of(row.get_ref(1).map_err(sql)?)?,
        );
        Ok(())
    })?;
    Ok(ids
        .iter()
        .map(|id| found.get(id.as_str()).cloned())
        .collect())
}

/// Writes one commit: the deletes, then the upserts, then the new generation and next key, in
/// one transaction.
pub(crate) fn commit(
    conn: &mut Connection,
    generation: u64,
    next_key: Key,
    deletes: &[Key],
    puts: &[PutRow<'_>],
) -> Result<(), IndexError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    write_changes(&tx, generation, deletes, puts)?;
    set(&tx, "generation", &generation.to_string())?;
    set(&tx, "next_key", &next_key.to_string())?;
    tx.commit().map_err(sql)
}

fn write_changes(
    tx: &Transaction<'_>,
    generation: u64,
    deletes: &[Key],
    puts: &[PutRow<'_>],
) -> Result<(), IndexError> {
    let g = generation as i64;
    {
        let mut delete = tx
            .prepare_cached("DELETE FROM chunks WHERE key = ?1")
            .map_err(sql)?;
        let mut tombstone = tx
            .prepare_cached("INSERT OR REPLACE INTO tombstones (key, generation) VALUES (?1, ?2)")
            .map_err(sql)?;
        for key in deletes {
            delete.execute([from_key(*key)]).map_err(sql)?;
            tombstone.execute([from_key(*key), g]).map_err(sql)?;
        }
    }
    let mut put = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO chunks
                 (key, chunk_id, doc_id, scope, locale, terms, record, vector, generation)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(sql)?;
    let mut update = tx
        .prepare_cached(
            "UPDATE chunks SET chunk_id = ?2, doc_id = ?3, scope = ?4, locale = ?5, terms = ?6,
                 record = ?7, generation = ?8
             WHERE key = ?1",
        )
        .map_err(sql)?;
    for row in puts {
        match row.vector {
            Some(vector) => put.execute(params![
                from_key(row.key),
                row.attrs.chunk_id.as_str(),
                row.attrs.doc_id,
                row.attrs.scope,
                row.attrs.locale,
                encode_terms(&row.attrs.terms),
                row.record,
                encode_vector(vector),
                g,
            ]),
            None => update.execute(params![
                from_key(row.key),
                row.attrs.chunk_id.as_str(),
                row.attrs.doc_id,
                row.attrs.scope,
                row.attrs.locale,
                encode_terms(&row.attrs.terms),
                row.record,
                g,
            ]),
        }
        .map_err(sql)?;
    }
    Ok(())
}

/// Records that the snapshot on disk reflects `generation`, and prunes the tombstones no
/// replay needs any more.
pub(crate) fn record_snapshot(conn: &mut Connection, generation: u64) -> Result<(), IndexError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    set(&tx, "snapshot_generation", &generation.to_string())?;
    set(&tx, "pruned_through", &generation.to_string())?;
    tx.execute(
        "DELETE FROM tombstones WHERE generation <= ?1",
        [generation as i64],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_and_vectors_round_trip() {
        let terms = vec!["a=1".to_string(), "tags=中文".to_string(), String::new()];
        assert_eq!(decode_terms(&encode_terms(&terms)).unwrap(), terms);
        assert!(decode_terms(&[3, 0, 0, 0, b'a']).is_err());
        let v = vec![1.5f32, -0.25, 0.0];
        assert_eq!(decode_vector(&encode_vector(&v), 3).unwrap(), v);
        assert!(decode_vector(&encode_vector(&v), 4).is_err());
    }
}
