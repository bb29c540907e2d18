//! Issue 15: which embedded transactional store should hold chunk records, the catalog and the
//! source fingerprints? One run measures redb, LMDB (heed), fjall and SQLite (rusqlite, bundled,
//! WAL) on the same workload, and LanceDB (Python) as the peer:
//!
//! 1. bulk load: N chunk records + N/1.3 catalog entries, 1,000 records per durable transaction;
//! 2. one-document ingest: one durable transaction that reads the document's catalog entry,
//!    deletes its old chunk records, writes ~2 new ones and the new entry (1,000 ingests);
//! 3. a fresh process (this binary re-run as a child) opens the store — beside the parent's open
//!    writer where the library allows it — and reads 100 random chunk records by id;
//! 4. a full scan of the catalog (what `status` does);
//! 5. bytes on disk (allocated blocks) after the bulk load and after close;
//! 6. a writer killed with SIGKILL amid ingests: the next open (recovery included) and a scan
//!    that finds every catalog entry.
//!
//! Candidates: redb (`SingleWriter` mode, with and without quick-repair), LMDB through heed,
//! fjall, SQLite through rusqlite (bundled, WAL, `synchronous = FULL`). Every write is a durable
//! commit: the library's default where it is durable (redb `Durability::Immediate`, LMDB's
//! sync on commit, SQLite's `synchronous = FULL`), fjall's `PersistMode::SyncAll` (its default
//! stops at the OS buffers). The fresh process reads with a warm page cache (the parent just
//! wrote the files; dropping the machine's caches is not ours to do).
//!
//! Records are the domain's own: a [`ChunkRecord`] (from [`Chunk::to_record`]) and a catalog
//! entry ([`CatalogEntry`] plus source path, size and mtime), both as JSON, the same bytes for
//! every store. Text: real Chinese sentences of `../shared/datasets/cmrc2018-dev`, recombined.
//!
//! ```text
//! cargo bench -p zhiku-bench-store --bench store                 # N = 100,000
//! ZHIKU_BENCH_STORE_N=1000000 cargo bench -p zhiku-bench-store --bench store
//! ZHIKU_BENCH_STORE_ONLY=redb,heed ...                             # a subset
//! ```
//! The peer runs from `~/.cache/zhiku/venv-bench` (`scripts/setup-store-peer.sh`) or
//! `ZHIKU_BENCH_PYTHON`; without it the peer rows say SKIPPED and how to enable them.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use zhiku_domain::usecases::CatalogEntry;
use zhiku_domain::{
    Chunk, ChunkId, DocAttributes, DocId, Locale, Metadata, Revision, Scope, Source, Title,
};

const BATCH: usize = 1_000;
const INGESTS: usize = 1_000;
const READS: usize = 100;
const SCOPES: usize = 10;

// ---------------------------------------------------------------------------------------------
// The workload: deterministic documents built from real sentences
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (splitmix64), so the child process can rebuild ids.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The catalog entry the embedded store keeps per document: the domain's entry plus what a
/// cheap refresh needs (source path, size, mtime).
#[derive(Debug, Serialize, Deserialize)]
struct DocEntry {
    #[serde(flatten)]
    entry: CatalogEntry,
    source: String,
    size: u64,
    mtime_ns: i64,
}

/// One document: its catalog key and value, and its chunk records.
#[derive(Debug)]
struct GenDoc {
    doc_key: String,
    doc_val: Vec<u8>,
    chunks: Vec<(String, Vec<u8>)>,
}

#[derive(Debug)]
struct Corpus {
    sentences: Vec<String>,
    n_chunks: usize,
    n_docs: usize,
}

impl Corpus {
    fn load(n_chunks: usize) -> Result<Self> {
        let path = dataset_dir().join("corpus.jsonl");
        let file = fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut sentences = Vec::new();
        for line in std::io::BufReader::new(file).lines() {
            let value: serde_json::Value = serde_json::from_str(&line?)?;
            let text = value["text"].as_str().unwrap_or_default();
            for s in text.split_inclusive('。') {
                let s = s.trim();
                if s.chars().count() >= 8 {
                    sentences.push(s.to_string());
                }
            }
        }
        if sentences.is_empty() {
            bail!("no sentences in {}", path.display());
        }
        let n_docs = (n_chunks * 10).div_ceil(13);
        Ok(Self {
            sentences,
            n_chunks,
            n_docs,
        })
    }

    /// Chunks of document `d`: the first `n_chunks - n_docs` documents have two, the rest one.
    fn chunks_of(&self, d: usize) -> usize {
        if d < self.n_chunks - self.n_docs {
            2
        } else {
            1
        }
    }

    fn doc_id(d: usize) -> String {
        format!("scale/s{}/d{d:07}.md", d % SCOPES)
    }

    /// About 100 characters (~300 bytes) of real sentences, chosen by `rng`.
    fn text(&self, rng: &mut Rng) -> String {
        let mut out = String::new();
        while out.chars().count() < 100 {
            out.push_str(&self.sentences[rng.below(self.sentences.len())]);
        }
        out.chars().take(110).collect()
    }

    /// Document `d` at `version` (0 = bulk load; an ingest bumps it, which changes the text).
    fn doc(&self, d: usize, version: u64) -> GenDoc {
        let mut rng = Rng(((d as u64) << 20) ^ version.wrapping_mul(0x1234_5677));
        let doc_id = Self::doc_id(d);
        let n = self.chunks_of(d);
        let texts: Vec<String> = (0..n).map(|_| self.text(&mut rng)).collect();
        let content = texts.join("\n\n");
        let mut metadata = Metadata::new();
        metadata
            .insert("tags", serde_json::json!(["cmrc", format!("t{}", d % 7)]))
            .expect("valid key");
        metadata
            .insert("year", serde_json::json!(2000 + (d % 25) as i64))
            .expect("valid key");
        let attrs = Arc::new(DocAttributes {
            revision: Revision::of_content(&content),
            scope: Scope::new(format!("scope{}", d % SCOPES)).expect("scope"),
            locale: Locale::zh(),
            title: Title::new(texts[0].chars().take(12).collect::<String>()).expect("title"),
            source: Source::new(&doc_id).expect("source"),
            metadata,
            page_count: None,
            expires_at: None,
            access: Default::default(),
        });
        let did = DocId::new(&doc_id).expect("doc id");
        let mut start = 0;
        let mut chunk_ids: Vec<ChunkId> = Vec::with_capacity(n);
        let mut chunks = Vec::with_capacity(n);
        for (i, t) in texts.into_iter().enumerate() {
            let len = t.chars().count();
            let chunk = Chunk::new(
                did.clone(),
                start,
                t,
                vec!["标题".to_string(), format!("第{}节", i + 1)],
                i as u32,
                attrs.clone(),
            );
            start += len + 2;
            chunk_ids.push(chunk.chunk_id().clone());
            let value = serde_json::to_vec(&chunk.to_record()).expect("json");
            chunks.push((chunk.chunk_id().as_str().to_string(), value));
        }
        let entry = DocEntry {
            entry: CatalogEntry {
                revision: attrs.revision.clone(),
                fingerprint: zhiku_domain::sha256_hex(format!("{}{version}", attrs.revision)),
                chunk_ids,
                about: None,
                indexed_at: None,
                expires_at: None,
            },
            source: doc_id.clone(),
            size: content.len() as u64,
            mtime_ns: 1_700_000_000_000_000_000 + (d as i64) * 1_000 + version as i64,
        };
        GenDoc {
            doc_key: doc_id,
            doc_val: serde_json::to_vec(&entry).expect("json"),
            chunks,
        }
    }
}

fn dataset_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("ZHIKU_BENCH_DATASET") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/cmrc2018-dev")
}

/// Decodes a catalog entry when `decode`; otherwise reads its bytes (so the scan touches them).
fn check(value: &[u8], decode: bool) -> Result<()> {
    if decode {
        let _: DocEntry = serde_json::from_slice(value)?;
    } else if value.first() != Some(&b'{') {
        bail!("a catalog entry that is not a JSON object");
    }
    Ok(())
}

fn old_chunk_ids(doc_val: &[u8]) -> Result<Vec<String>> {
    let entry: DocEntry = serde_json::from_slice(doc_val)?;
    Ok(entry
        .entry
        .chunk_ids
        .into_iter()
        .map(|c| c.as_str().to_string())
        .collect())
}

// ---------------------------------------------------------------------------------------------
// The candidates
// ---------------------------------------------------------------------------------------------

/// What the embedded store needs of a library, each write one durable transaction.
trait Store {
    /// One transaction writing these catalog entries and chunk records.
    fn put_batch(&mut self, docs: &[(String, Vec<u8>)], chunks: &[(String, Vec<u8>)])
    -> Result<()>;
    /// One transaction: read the entry of `doc.doc_key`, delete its chunk records, write the new
    /// ones and the new entry.
    fn replace_doc(&mut self, doc: &GenDoc) -> Result<()>;
    /// Every catalog entry, decoded as JSON when `decode` (what `status` does), else only
    /// touched (the store's own cost): count of entries.
    fn scan_catalog(&self, decode: bool) -> Result<usize>;
    /// Closes the writer (flushes what the library flushes on close).
    fn close(self: Box<Self>) -> Result<()>;
}

/// A read-only handle of a fresh process.
trait Reader {
    fn get_chunk(&self, id: &str) -> Result<Option<usize>>;
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Redb,
    /// redb with quick-repair: every commit saves the allocator state (2-phase commit), so the
    /// open after a crash does not walk the whole file.
    RedbQuick,
    Heed,
    Fjall,
    Sqlite,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Redb,
        Kind::RedbQuick,
        Kind::Heed,
        Kind::Fjall,
        Kind::Sqlite,
    ];
    fn name(self) -> &'static str {
        match self {
            Kind::Redb => "redb",
            Kind::RedbQuick => "redb-qr",
            Kind::Heed => "heed",
            Kind::Fjall => "fjall",
            Kind::Sqlite => "sqlite",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Kind::Redb => "redb 4.6 (SingleWriter)",
            Kind::RedbQuick => "redb 4.6 (SingleWriter, quick-repair)",
            Kind::Heed => "LMDB (heed 0.23)",
            Kind::Fjall => "fjall 3.1 (LSM)",
            Kind::Sqlite => "SQLite (rusqlite 0.43, WAL)",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| anyhow!("unknown store {s}"))
    }
    /// Whether a second process may open the store read-only while the writer has it open.
    fn reads_beside_writer(self) -> bool {
        !matches!(self, Kind::Fjall)
    }
    fn open_writer(self, dir: &Path) -> Result<Box<dyn Store>> {
        Ok(match self {
            Kind::Redb => Box::new(RedbStore::open(dir, false)?),
            Kind::RedbQuick => Box::new(RedbStore::open(dir, true)?),
            Kind::Heed => Box::new(HeedStore::open(dir)?),
            Kind::Fjall => Box::new(FjallStore::open(dir)?),
            Kind::Sqlite => Box::new(SqliteStore::open(dir)?),
        })
    }
    fn open_reader(self, dir: &Path) -> Result<Box<dyn Reader>> {
        Ok(match self {
            Kind::Redb | Kind::RedbQuick => Box::new(RedbReader::open(dir)?),
            Kind::Heed => Box::new(HeedStore::open(dir)?),
            Kind::Fjall => Box::new(FjallStore::open(dir)?),
            Kind::Sqlite => Box::new(SqliteReader::open(dir)?),
        })
    }
}

// --- redb ------------------------------------------------------------------------------------

const REDB_CHUNKS: redb::TableDefinition<'_, &str, &[u8]> = redb::TableDefinition::new("chunks");
const REDB_DOCS: redb::TableDefinition<'_, &str, &[u8]> = redb::TableDefinition::new("docs");

struct RedbStore {
    db: redb::Database,
    quick_repair: bool,
}

impl RedbStore {
    fn open(dir: &Path, quick_repair: bool) -> Result<Self> {
        fs::create_dir_all(dir)?;
        let db = redb::Builder::new()
            .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
            .create(dir.join("store.redb"))?;
        Ok(Self { db, quick_repair })
    }

    fn begin_write(&self) -> Result<redb::WriteTransaction> {
        // Durability::Immediate is the default: the commit returns after the fsync.
        let mut tx = self.db.begin_write()?;
        tx.set_quick_repair(self.quick_repair);
        Ok(tx)
    }
}

impl Store for RedbStore {
    fn put_batch(
        &mut self,
        docs: &[(String, Vec<u8>)],
        chunks: &[(String, Vec<u8>)],
    ) -> Result<()> {
        let tx = self.begin_write()?;
        {
            let mut t = tx.open_table(REDB_CHUNKS)?;
            for (k, v) in chunks {
                t.insert(k.as_str(), v.as_slice())?;
            }
            let mut t = tx.open_table(REDB_DOCS)?;
            for (k, v) in docs {
                t.insert(k.as_str(), v.as_slice())?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn replace_doc(&mut self, doc: &GenDoc) -> Result<()> {
        use redb::ReadableTable;
        let tx = self.begin_write()?;
        {
            let mut docs = tx.open_table(REDB_DOCS)?;
            let old = match docs.get(doc.doc_key.as_str())? {
                Some(v) => old_chunk_ids(v.value())?,
                None => Vec::new(),
            };
            let mut chunks = tx.open_table(REDB_CHUNKS)?;
            for id in &old {
                chunks.remove(id.as_str())?;
            }
            for (k, v) in &doc.chunks {
                chunks.insert(k.as_str(), v.as_slice())?;
            }
            docs.insert(doc.doc_key.as_str(), doc.doc_val.as_slice())?;
        }
        tx.commit()?;
        Ok(())
    }
    fn scan_catalog(&self, decode: bool) -> Result<usize> {
        use redb::{ReadableDatabase, ReadableTable};
        let tx = self.db.begin_read()?;
        let t = tx.open_table(REDB_DOCS)?;
        let mut n = 0;
        for row in t.iter()? {
            let (_, v) = row?;
            check(v.value(), decode)?;
            n += 1;
        }
        Ok(n)
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}

struct RedbReader {
    db: redb::ReadOnlyDatabase,
}

impl RedbReader {
    fn open(dir: &Path) -> Result<Self> {
        let db = redb::Builder::new()
            .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
            .open_read_only(dir.join("store.redb"))?;
        Ok(Self { db })
    }
}

impl Reader for RedbReader {
    fn get_chunk(&self, id: &str) -> Result<Option<usize>> {
        use redb::ReadableDatabase;
        let tx = self.db.begin_read()?;
        let t = tx.open_table(REDB_CHUNKS)?;
        Ok(t.get(id)?.map(|v| v.value().len()))
    }
}

// --- LMDB (heed) -----------------------------------------------------------------------------

use heed::types::{Bytes, Str};

type HeedDb = heed::Database<'static, Str, Bytes>;

struct HeedStore {
    env: heed::Env,
    chunks: HeedDb,
    docs: HeedDb,
}

impl HeedStore {
    fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir)?;
        let mut options = heed::EnvOpenOptions::new();
        options.map_size(64 << 30).max_dbs(4);
        // SAFETY: the environment is opened once per process and its files are changed only
        // through LMDB (the bench never truncates or rewrites them behind its back).
        #[allow(unsafe_code)]
        let env = unsafe { options.open(dir)? };
        // Databases created in a committed transaction are `'static` handles.
        let (chunks, docs): (HeedDb, HeedDb) = env
            .create_databases_and_commit(env.write_txn()?, |dbo, wtxn| -> heed::Result<_> {
                let chunks = dbo.create_database::<Str, Bytes>(wtxn, Some("chunks"))?;
                let docs = dbo.create_database::<Str, Bytes>(wtxn, Some("docs"))?;
                Ok(heed::CommitOrAbort::<_, ()>::Commit((chunks, docs)))
            })?
            .unwrap_commit();
        Ok(Self { env, chunks, docs })
    }
}

impl Store for HeedStore {
    fn put_batch(
        &mut self,
        docs: &[(String, Vec<u8>)],
        chunks: &[(String, Vec<u8>)],
    ) -> Result<()> {
        let mut tx = self.env.write_txn()?; // LMDB syncs on commit unless NOSYNC flags are set
        for (k, v) in chunks {
            self.chunks.put(&mut tx, k, v)?;
        }
        for (k, v) in docs {
            self.docs.put(&mut tx, k, v)?;
        }
        tx.commit()?;
        Ok(())
    }
    fn replace_doc(&mut self, doc: &GenDoc) -> Result<()> {
        let mut tx = self.env.write_txn()?;
        let old = match self.docs.get(&tx, &doc.doc_key)? {
            Some(v) => old_chunk_ids(v)?,
            None => Vec::new(),
        };
        for id in &old {
            self.chunks.delete(&mut tx, id)?;
        }
        for (k, v) in &doc.chunks {
            self.chunks.put(&mut tx, k, v)?;
        }
        self.docs.put(&mut tx, &doc.doc_key, &doc.doc_val)?;
        tx.commit()?;
        Ok(())
    }
    fn scan_catalog(&self, decode: bool) -> Result<usize> {
        let tx = self.env.read_txn()?;
        let mut n = 0;
        for row in self.docs.iter(&tx)? {
            let (_, v) = row?;
            check(v, decode)?;
            n += 1;
        }
        Ok(n)
    }
    fn close(self: Box<Self>) -> Result<()> {
        // Every commit already synced; this only checks nothing is pending.
        self.env.force_sync()?;
        drop(self);
        Ok(())
    }
}

impl Reader for HeedStore {
    fn get_chunk(&self, id: &str) -> Result<Option<usize>> {
        let tx = self.env.read_txn()?;
        Ok(self.chunks.get(&tx, id)?.map(<[u8]>::len))
    }
}

// --- fjall -----------------------------------------------------------------------------------

struct FjallStore {
    db: fjall::Database,
    chunks: fjall::Keyspace,
    docs: fjall::Keyspace,
}

impl FjallStore {
    fn open(dir: &Path) -> Result<Self> {
        let db = fjall::Database::builder(dir).open()?;
        let chunks = db.keyspace("chunks", fjall::KeyspaceCreateOptions::default)?;
        let docs = db.keyspace("docs", fjall::KeyspaceCreateOptions::default)?;
        Ok(Self { db, chunks, docs })
    }
    fn batch(&self) -> fjall::OwnedWriteBatch {
        // fjall's default only reaches the OS buffers; the durable commit asks for an fsync.
        self.db
            .batch()
            .durability(Some(fjall::PersistMode::SyncAll))
    }
}

impl Store for FjallStore {
    fn put_batch(
        &mut self,
        docs: &[(String, Vec<u8>)],
        chunks: &[(String, Vec<u8>)],
    ) -> Result<()> {
        let mut b = self.batch();
        for (k, v) in chunks {
            b.insert(&self.chunks, k.as_str(), v.as_slice());
        }
        for (k, v) in docs {
            b.insert(&self.docs, k.as_str(), v.as_slice());
        }
        b.commit()?;
        Ok(())
    }
    fn replace_doc(&mut self, doc: &GenDoc) -> Result<()> {
        // One writer: the read before the atomic batch cannot race another write.
        let old = match self.docs.get(&doc.doc_key)? {
            Some(v) => old_chunk_ids(&v)?,
            None => Vec::new(),
        };
        let mut b = self.batch();
        for id in &old {
            b.remove(&self.chunks, id.as_str());
        }
        for (k, v) in &doc.chunks {
            b.insert(&self.chunks, k.as_str(), v.as_slice());
        }
        b.insert(&self.docs, doc.doc_key.as_str(), doc.doc_val.as_slice());
        b.commit()?;
        Ok(())
    }
    fn scan_catalog(&self, decode: bool) -> Result<usize> {
        let mut n = 0;
        for row in self.docs.iter() {
            let v = row.value()?;
            check(&v, decode)?;
            n += 1;
        }
        Ok(n)
    }
    fn close(self: Box<Self>) -> Result<()> {
        // A clean close flushes the memtables, so the next open does not replay the journal.
        self.chunks.rotate_memtable_and_wait()?;
        self.docs.rotate_memtable_and_wait()?;
        self.db.persist(fjall::PersistMode::SyncAll)?;
        Ok(())
    }
}

impl Reader for FjallStore {
    fn get_chunk(&self, id: &str) -> Result<Option<usize>> {
        Ok(self.chunks.get(id)?.map(|v| v.len()))
    }
}

// --- SQLite ----------------------------------------------------------------------------------

struct SqliteStore {
    conn: rusqlite::Connection,
}

impl SqliteStore {
    fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir)?;
        let conn = rusqlite::Connection::open(dir.join("store.sqlite"))?;
        // WAL; synchronous = FULL fsyncs the WAL on every commit (NORMAL would not be durable
        // across a power loss).
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, rec BLOB NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, rec BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        Ok(Self { conn })
    }
}

impl Store for SqliteStore {
    fn put_batch(
        &mut self,
        docs: &[(String, Vec<u8>)],
        chunks: &[(String, Vec<u8>)],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut c =
                tx.prepare_cached("INSERT OR REPLACE INTO chunks (id, rec) VALUES (?1, ?2)")?;
            for (k, v) in chunks {
                c.execute((k, v))?;
            }
            let mut d =
                tx.prepare_cached("INSERT OR REPLACE INTO docs (id, rec) VALUES (?1, ?2)")?;
            for (k, v) in docs {
                d.execute((k, v))?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn replace_doc(&mut self, doc: &GenDoc) -> Result<()> {
        use rusqlite::OptionalExtension;
        let tx = self.conn.transaction()?;
        {
            let old: Option<Vec<u8>> = tx
                .prepare_cached("SELECT rec FROM docs WHERE id = ?1")?
                .query_row([&doc.doc_key], |r| r.get(0))
                .optional()?;
            let old = match old {
                Some(v) => old_chunk_ids(&v)?,
                None => Vec::new(),
            };
            let mut del = tx.prepare_cached("DELETE FROM chunks WHERE id = ?1")?;
            for id in &old {
                del.execute([id])?;
            }
            let mut c =
                tx.prepare_cached("INSERT OR REPLACE INTO chunks (id, rec) VALUES (?1, ?2)")?;
            for (k, v) in &doc.chunks {
                c.execute((k, v))?;
            }
            tx.prepare_cached("INSERT OR REPLACE INTO docs (id, rec) VALUES (?1, ?2)")?
                .execute((&doc.doc_key, &doc.doc_val))?;
        }
        tx.commit()?;
        Ok(())
    }
    fn scan_catalog(&self, decode: bool) -> Result<usize> {
        let mut stmt = self.conn.prepare("SELECT rec FROM docs ORDER BY id")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            let v = row.get_ref(0)?.as_blob()?;
            check(v, decode)?;
            n += 1;
        }
        Ok(n)
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.conn.close().map_err(|(_, e)| e)?;
        Ok(())
    }
}

struct SqliteReader {
    conn: rusqlite::Connection,
}

impl SqliteReader {
    fn open(dir: &Path) -> Result<Self> {
        let conn = rusqlite::Connection::open_with_flags(
            dir.join("store.sqlite"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Ok(Self { conn })
    }
}

impl Reader for SqliteReader {
    fn get_chunk(&self, id: &str) -> Result<Option<usize>> {
        use rusqlite::OptionalExtension;
        let len: Option<i64> = self
            .conn
            .prepare_cached("SELECT length(rec) FROM chunks WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        Ok(len.map(|n| n as usize))
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Lat {
    p50_ms: f64,
    p99_ms: f64,
}

fn lat(mut samples: Vec<Duration>) -> Lat {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e3
    };
    Lat {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
    }
}

/// What one candidate (or the peer) measured; `None` where it was not measured.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Figures {
    name: String,
    bulk_s: Option<f64>,
    disk_bulk_mb: Option<f64>,
    ingest: Option<Lat>,
    raw_scan_ms: Option<f64>,
    scan_ms: Option<f64>,
    open_ms: Option<f64>,
    first_read_ms: Option<f64>,
    reads: Option<Lat>,
    child_wall_ms: Option<f64>,
    disk_closed_mb: Option<f64>,
    crash_open_ms: Option<f64>,
    crash_scan_ms: Option<f64>,
    note: String,
}

/// Child-process report of a fresh open.
#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    open_ms: f64,
    first_read_ms: f64,
    reads: Lat,
    found: usize,
}

/// Allocated bytes (not the apparent length: LMDB's map and sparse files would lie) under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                total += disk_bytes(&e.path());
            } else {
                total += meta.blocks() * 512;
            }
        }
    }
    total
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The chunk ids a fresh process reads: 100 random documents' first chunks (version 0 ids of
/// documents the ingests did not touch, so every read finds its record).
fn read_ids(corpus: &Corpus, touched: &std::collections::HashSet<usize>) -> Vec<String> {
    let mut rng = Rng(0xC0FFEE);
    let mut ids = Vec::with_capacity(READS);
    while ids.len() < READS {
        let d = rng.below(corpus.n_docs);
        if touched.contains(&d) {
            continue;
        }
        ids.push(corpus.doc(d, 0).chunks[0].0.clone());
    }
    ids
}

fn run_candidate(
    kind: Kind,
    corpus: &Corpus,
    root: &Path,
    ids_file: &Path,
    ingest_docs: &[usize],
) -> Result<Figures> {
    let dir = root.join(kind.name());
    let mut fig = Figures {
        name: kind.label().to_string(),
        ..Figures::default()
    };
    let mut writer = Some(kind.open_writer(&dir)?);
    let store = writer.as_mut().expect("just opened");

    // (1) bulk load
    let t0 = Instant::now();
    let mut docs = Vec::with_capacity(BATCH);
    let mut chunks = Vec::with_capacity(BATCH + 2);
    for d in 0..corpus.n_docs {
        let g = corpus.doc(d, 0);
        docs.push((g.doc_key, g.doc_val));
        chunks.extend(g.chunks);
        if chunks.len() >= BATCH {
            store.put_batch(&docs, &chunks)?;
            docs.clear();
            chunks.clear();
        }
    }
    if !chunks.is_empty() {
        store.put_batch(&docs, &chunks)?;
    }
    fig.bulk_s = Some(t0.elapsed().as_secs_f64());
    fig.disk_bulk_mb = Some(mb(disk_bytes(&dir)));

    // (2) one-document ingests (documents generated before the clock starts)
    let mut samples = Vec::with_capacity(INGESTS);
    let prepared: Vec<GenDoc> = ingest_docs.iter().map(|&d| corpus.doc(d, 1)).collect();
    for g in &prepared {
        let t = Instant::now();
        store.replace_doc(g)?;
        samples.push(t.elapsed());
    }
    fig.ingest = Some(lat(samples));

    // (4) catalog scan
    let t = Instant::now();
    let n = store.scan_catalog(false)?;
    fig.raw_scan_ms = Some(t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let n2 = store.scan_catalog(true)?;
    fig.scan_ms = Some(t.elapsed().as_secs_f64() * 1e3);
    if n2 != n {
        bail!("{}: two scans disagree", kind.name());
    }
    if n != corpus.n_docs {
        bail!(
            "{}: scanned {n} entries, expected {}",
            kind.name(),
            corpus.n_docs
        );
    }

    // (3) fresh process: beside the open writer when the library allows a second process
    if !kind.reads_beside_writer() {
        writer.take().expect("open").close()?;
        fig.note = "fresh open after the writer closed (single-process only)".into();
    }
    let t = Instant::now();
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", kind.name()])
        .arg(&dir)
        .arg(ids_file)
        .output()?;
    let wall = t.elapsed();
    if !out.status.success() {
        bail!(
            "{} child failed: {}",
            kind.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report: ChildReport = serde_json::from_slice(&out.stdout)?;
    if report.found != READS {
        bail!(
            "{}: child found {} of {READS} records",
            kind.name(),
            report.found
        );
    }
    fig.open_ms = Some(report.open_ms);
    fig.first_read_ms = Some(report.first_read_ms);
    fig.reads = Some(report.reads);
    fig.child_wall_ms = Some(wall.as_secs_f64() * 1e3);
    if let Some(store) = writer.take() {
        store.close()?;
        fig.note = "fresh open beside the open writer".into();
    }
    fig.disk_closed_mb = Some(mb(disk_bytes(&dir)));

    // (6) a writer killed (SIGKILL) while it commits one ingest after another: the open that
    // follows (with whatever recovery the library runs) and a full catalog scan.
    let (open, scan) = crash_and_reopen(kind, corpus, &dir)?;
    fig.crash_open_ms = Some(open);
    fig.crash_scan_ms = Some(scan);
    Ok(fig)
}

fn crash_and_reopen(kind: Kind, corpus: &Corpus, dir: &Path) -> Result<(f64, f64)> {
    use std::io::{BufRead, BufReader};
    let mut victim = Command::new(std::env::current_exe()?)
        .args(["--crash-writer", kind.name()])
        .arg(dir)
        .arg(corpus.n_chunks.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(victim.stdout.take().expect("piped")).read_line(&mut line)?;
    if line.trim() != "ready" {
        let _ = victim.kill();
        bail!("{}: the writer to kill said {line:?}", kind.name());
    }
    // Past the first commits, at no particular point of the current transaction.
    std::thread::sleep(Duration::from_millis(250));
    victim.kill()?; // SIGKILL
    victim.wait()?;
    let t = Instant::now();
    let store = kind.open_writer(dir)?;
    let open = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let n = store.scan_catalog(false)?;
    let scan = t.elapsed().as_secs_f64() * 1e3;
    store.close()?;
    if n != corpus.n_docs {
        bail!(
            "{}: {n} catalog entries after the kill, expected {}",
            kind.name(),
            corpus.n_docs
        );
    }
    Ok((open, scan))
}

/// The process the crash test kills: ingests documents (version 2 and up) until killed.
fn crash_writer(args: &[String]) -> Result<()> {
    let [kind, dir, n_chunks] = args else {
        bail!("usage: --crash-writer STORE DIR N");
    };
    let kind = Kind::parse(kind)?;
    let corpus = Corpus::load(n_chunks.parse()?)?;
    let mut store = kind.open_writer(Path::new(dir))?;
    let mut rng = Rng(7);
    for version in 2.. {
        store.replace_doc(&corpus.doc(rng.below(corpus.n_docs), version))?;
        if version == 2 {
            println!("ready");
            std::io::stdout().flush()?;
        }
    }
    Ok(())
}

fn child(args: &[String]) -> Result<()> {
    let [kind, dir, ids_file] = args else {
        bail!("usage: --child STORE DIR IDS_FILE");
    };
    let kind = Kind::parse(kind)?;
    let ids: Vec<String> = fs::read_to_string(ids_file)?
        .lines()
        .map(str::to_string)
        .collect();
    let t = Instant::now();
    let reader = kind.open_reader(Path::new(dir))?;
    let open = t.elapsed();
    let mut samples = Vec::with_capacity(ids.len());
    let mut found = 0;
    for id in &ids {
        let t = Instant::now();
        if reader.get_chunk(id)?.is_some() {
            found += 1;
        }
        samples.push(t.elapsed());
    }
    let report = ChildReport {
        open_ms: open.as_secs_f64() * 1e3,
        first_read_ms: samples[0].as_secs_f64() * 1e3,
        reads: lat(samples),
        found,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The peer: LanceDB, in Python
// ---------------------------------------------------------------------------------------------

fn peer_python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("ZHIKU_BENCH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")?;
    let cache = std::env::var_os("ZHIKU_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&home).join(".cache/zhiku"));
    let py = cache.join("venv-bench/bin/python");
    py.exists().then_some(py)
}

fn run_peer(corpus: &Corpus, root: &Path, ids_file: &Path, ingest_docs: &[usize]) -> Figures {
    let mut fig = Figures {
        name: "peer: LanceDB (Python)".into(),
        ..Figures::default()
    };
    let Some(python) = peer_python() else {
        fig.note = "SKIPPED: no ~/.cache/zhiku/venv-bench; run scripts/setup-store-peer.sh \
                    (or set ZHIKU_BENCH_PYTHON)"
            .into();
        return fig;
    };
    match run_peer_inner(&python, corpus, root, ids_file, ingest_docs) {
        Ok(f) => f,
        Err(e) => {
            fig.note = format!("SKIPPED: the peer failed: {e:#}");
            fig
        }
    }
}

fn run_peer_inner(
    python: &Path,
    corpus: &Corpus,
    root: &Path,
    ids_file: &Path,
    ingest_docs: &[usize],
) -> Result<Figures> {
    // The same records, as JSONL lines the script reads: {"kind", "key", "value"}.
    #[derive(Serialize)]
    struct Line<'a> {
        kind: &'a str,
        key: &'a str,
        value: &'a str,
    }
    let write = |path: &Path, docs: &mut dyn Iterator<Item = GenDoc>| -> Result<()> {
        let mut w = BufWriter::new(fs::File::create(path)?);
        for g in docs {
            for (k, v) in &g.chunks {
                let line = Line {
                    kind: "chunk",
                    key: k,
                    value: std::str::from_utf8(v)?,
                };
                serde_json::to_writer(&mut w, &line)?;
                w.write_all(b"\n")?;
            }
        }
        w.flush()?;
        Ok(())
    };
    let bulk = root.join("peer-bulk.jsonl");
    let ingest = root.join("peer-ingest.jsonl");
    write(&bulk, &mut (0..corpus.n_docs).map(|d| corpus.doc(d, 0)))?;
    write(&ingest, &mut ingest_docs.iter().map(|&d| corpus.doc(d, 1)))?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/store_peer.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(root.join("lancedb"))
        .arg(&bulk)
        .arg(&ingest)
        .arg(ids_file)
        .arg(BATCH.to_string())
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let stdout = String::from_utf8(out.stdout)?;
    let last = stdout.lines().last().unwrap_or_default();
    let mut fig: Figures =
        serde_json::from_str(last).with_context(|| format!("peer said {last}"))?;
    fig.name = "peer: LanceDB (Python)".into();
    Ok(fig)
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

fn table(title: &str, unit: &str, rows: &[(&Figures, Option<f64>)], peer: Option<f64>) {
    println!("\n### {title}\n");
    println!("| store | {unit} | × best | × peer |");
    println!("|---|---:|---:|---:|");
    let best = rows
        .iter()
        .filter(|(f, _)| !f.name.starts_with("peer"))
        .filter_map(|(_, v)| *v)
        .fold(f64::INFINITY, f64::min);
    for (f, v) in rows {
        let cell = |x: Option<f64>| match x {
            Some(x) => format!("{x:.3}"),
            None => "—".into(),
        };
        let ratio = |base: Option<f64>| match (*v, base) {
            (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
            _ => "—".into(),
        };
        let base = best.is_finite().then_some(best);
        let value = match v {
            Some(_) => cell(*v),
            None if f.note.starts_with("SKIPPED") => {
                format!("— ({})", f.note)
            }
            None => "—".into(),
        };
        println!(
            "| {} | {value} | {} | {} |",
            f.name,
            ratio(base),
            ratio(peer)
        );
    }
}

/// Crash safety and concurrency as each library documents it.
const CRASH_NOTES: [(&str, &str); 5] = [
    (
        "redb",
        "copy-on-write B-trees, two checksummed commit slots; a commit with the default \
         Durability::Immediate is durable when it returns. A killed writer leaves the last \
         commit; the next writing open repairs (walks the whole file unless quick-repair was \
         on). ConcurrencyMode::SingleWriter (4.5+): one writing process, read-only processes \
         beside it following its commits (MVCC read transactions, no mmap: a page cache of \
         its own). Pure Rust, MIT/Apache-2.0, one maintainer-led project.",
    ),
    (
        "LMDB (heed)",
        "copy-on-write B+tree in one memory map, two meta pages; a commit fsyncs (fdatasync) \
         unless NOSYNC flags are set. A killed writer leaves the last commit, no recovery step \
         (stale reader slots are cleared). Any number of processes read beside one writer (MVCC \
         snapshots, readers never block the writer); the map size must be set up front. C \
         (OpenLDAP licence) behind heed (MIT, Meilisearch); opening is an unsafe fn.",
    ),
    (
        "fjall",
        "LSM tree with a journal; by default a write reaches only the OS buffers, a batch with \
         PersistMode::SyncAll is durable. A killed writer leaves the journal, replayed on the \
         next open (a torn batch is truncated). One process only: no reader beside a writer in \
         another process. Pure Rust, MIT/Apache-2.0, background compaction threads.",
    ),
    (
        "SQLite (WAL)",
        "write-ahead log with checksummed frames; synchronous=FULL fsyncs the WAL at each \
         commit. A killed writer leaves uncommitted frames that the next open ignores. One \
         writer and any number of readers across processes (readers see the last commit; a \
         checkpoint copies the WAL back). C, public domain, bundled by rusqlite (MIT).",
    ),
    (
        "LanceDB (peer)",
        "each add writes new data files and then a new manifest version; a killed writer \
         leaves the previous version plus orphan files. Whether a local commit fsyncs was not \
         checked here. Columnar, versioned; every one-row insert adds a fragment until \
         compaction.",
    ),
];

fn print_tables(figs: &[Figures], peer: &Figures, n_chunks: usize, n_docs: usize) {
    let all: Vec<&Figures> = figs.iter().chain(std::iter::once(peer)).collect();
    let rows = |get: &dyn Fn(&Figures) -> Option<f64>| -> Vec<(&Figures, Option<f64>)> {
        all.iter().map(|f| (*f, get(f))).collect()
    };
    let p = |get: &dyn Fn(&Figures) -> Option<f64>| get(peer);
    let bulk = |f: &Figures| f.bulk_s;
    table(
        &format!(
            "(1) bulk load: {n_chunks} chunk records + {n_docs} catalog entries, {BATCH} records per durable transaction"
        ),
        "seconds",
        &rows(&bulk),
        p(&bulk),
    );
    let ing50 = |f: &Figures| f.ingest.as_ref().map(|l| l.p50_ms);
    let ing99 = |f: &Figures| f.ingest.as_ref().map(|l| l.p99_ms);
    table(
        "(2a) one-document ingest, durable (peer: one-row insert), p50",
        "ms",
        &rows(&ing50),
        p(&ing50),
    );
    table(
        "(2b) one-document ingest, durable (peer: one-row insert), p99",
        "ms",
        &rows(&ing99),
        p(&ing99),
    );
    let open = |f: &Figures| f.open_ms;
    table("(3a) fresh process: open", "ms", &rows(&open), p(&open));
    let first = |f: &Figures| f.first_read_ms;
    table(
        "(3b) fresh process: first point read",
        "ms",
        &rows(&first),
        p(&first),
    );
    let r50 = |f: &Figures| f.reads.as_ref().map(|l| l.p50_ms);
    let r99 = |f: &Figures| f.reads.as_ref().map(|l| l.p99_ms);
    table(
        &format!("(3c) fresh process: {READS} point reads by chunk id, p50"),
        "ms",
        &rows(&r50),
        p(&r50),
    );
    table(
        &format!("(3d) fresh process: {READS} point reads by chunk id, p99"),
        "ms",
        &rows(&r99),
        p(&r99),
    );
    let wall = |f: &Figures| f.child_wall_ms;
    table(
        "(3e) fresh process: spawn + open + 100 reads + exit, wall",
        "ms",
        &rows(&wall),
        p(&wall),
    );
    let raw = |f: &Figures| f.raw_scan_ms;
    table(
        &format!("(4a) full catalog scan ({n_docs} entries, bytes only: the store's own cost)"),
        "ms",
        &rows(&raw),
        p(&raw),
    );
    let scan = |f: &Figures| f.scan_ms;
    table(
        &format!(
            "(4b) full catalog scan ({n_docs} entries, each decoded as JSON: what `status` pays)"
        ),
        "ms",
        &rows(&scan),
        p(&scan),
    );
    let d1 = |f: &Figures| f.disk_bulk_mb;
    table(
        "(5a) bytes on disk after the bulk load (allocated, writer open)",
        "MB",
        &rows(&d1),
        p(&d1),
    );
    let d2 = |f: &Figures| f.disk_closed_mb;
    table(
        "(5b) bytes on disk after the ingests and close",
        "MB",
        &rows(&d2),
        p(&d2),
    );
    let c1 = |f: &Figures| f.crash_open_ms;
    table(
        "(6a) writer open after a writer was killed (SIGKILL) amid ingests (recovery included)",
        "ms",
        &rows(&c1),
        p(&c1),
    );
    let c2 = |f: &Figures| f.crash_scan_ms;
    table(
        "(6b) first full catalog scan after that open (bytes only; all entries present)",
        "ms",
        &rows(&c2),
        p(&c2),
    );
    println!(
        "\nWhat each library promises (from its documentation, not tested here beyond (6)):\n"
    );
    for (name, text) in CRASH_NOTES {
        println!("- {name}: {text}");
    }
    println!("\nNotes:");
    for f in &all {
        if !f.note.is_empty() {
            println!("- {}: {}", f.name, f.note);
        }
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--child") => return child(&args[1..]),
        Some("--crash-writer") => return crash_writer(&args[1..]),
        _ => {}
    }
    let n_chunks: usize = std::env::var("ZHIKU_BENCH_STORE_N")
        .ok()
        .map(|s| s.replace('_', "").parse())
        .transpose()?
        .unwrap_or(100_000);
    let kinds: Vec<Kind> = match std::env::var("ZHIKU_BENCH_STORE_ONLY") {
        Ok(list) => list.split(',').map(Kind::parse).collect::<Result<_>>()?,
        Err(_) => Kind::ALL.to_vec(),
    };
    let corpus = Corpus::load(n_chunks)?;
    let root_parent = std::env::var_os("ZHIKU_BENCH_STORE_DIR").map(PathBuf::from);
    let root = match &root_parent {
        Some(p) => tempfile::tempdir_in(p)?,
        None => tempfile::tempdir()?,
    };

    let mut rng = Rng(42);
    let mut touched = std::collections::HashSet::new();
    // Distinct documents, leaving at least half untouched for the reads (small N).
    let ingests = INGESTS.min(corpus.n_docs / 2);
    if corpus.n_docs < 2 * READS {
        bail!(
            "N = {n_chunks} is too small: at least {} chunk records",
            3 * READS
        );
    }
    let ingest_docs: Vec<usize> = (0..ingests)
        .map(|_| {
            loop {
                let d = rng.below(corpus.n_docs);
                if touched.insert(d) {
                    break d;
                }
            }
        })
        .collect();
    let ids = read_ids(&corpus, &touched);
    let ids_file = root.path().join("read-ids.txt");
    fs::write(&ids_file, ids.join("\n"))?;

    let uptime = |when: &str| {
        let out = Command::new("uptime").output().ok();
        let text = out
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "(uptime unavailable)".into());
        println!("uptime {when}: {text}");
    };
    println!("## embedded-store comparison (issue 15)\n");
    println!(
        "parameters: N = {n_chunks} chunk records, {} catalog entries ({SCOPES} scopes), batch {BATCH}, \
         {ingests} ingests, {READS} reads; {} sentences from {}; store dir {}",
        corpus.n_docs,
        corpus.sentences.len(),
        dataset_dir().display(),
        root.path().display()
    );
    let sample = corpus.doc(0, 0);
    println!(
        "record sizes: chunk key {} B, chunk record {} B (JSON ChunkRecord), catalog entry {} B (JSON)",
        sample.chunks[0].0.len(),
        sample.chunks[0].1.len(),
        sample.doc_val.len()
    );
    uptime("before");

    let mut figs = Vec::new();
    let mut by_name = BTreeMap::new();
    for kind in kinds {
        eprintln!("measuring {} ...", kind.label());
        let t = Instant::now();
        match run_candidate(kind, &corpus, root.path(), &ids_file, &ingest_docs) {
            Ok(f) => {
                eprintln!("  done in {:.1} s", t.elapsed().as_secs_f64());
                by_name.insert(kind.name(), f.clone());
                figs.push(f);
            }
            Err(e) => {
                eprintln!("  FAILED: {e:#}");
                figs.push(Figures {
                    name: kind.label().to_string(),
                    note: format!("FAILED: {e:#}"),
                    ..Figures::default()
                });
            }
        }
        let _ = fs::remove_dir_all(root.path().join(kind.name()));
    }
    eprintln!("measuring the peer ...");
    let peer = if std::env::var_os("ZHIKU_BENCH_STORE_NO_PEER").is_some() {
        Figures {
            name: "peer: LanceDB (Python)".into(),
            note: "SKIPPED: ZHIKU_BENCH_STORE_NO_PEER is set".into(),
            ..Figures::default()
        }
    } else {
        run_peer(&corpus, root.path(), &ids_file, &ingest_docs)
    };
    uptime("after");
    print_tables(&figs, &peer, n_chunks, corpus.n_docs);
    Ok(())
}
