//! [`QdrantCatalogStore`]: the [`CatalogStore`] port in a Qdrant collection, so that the record
//! of what is indexed lives on the cluster with the routes, and any replica can read and write
//! it.
//!
//! # Layout
//!
//! A catalog collection holds points without vectors:
//!
//! - one **head** (point 0): the catalog's header (policy, space, analyzer, generations,
//!   origin, counts), the list of **live commits**, a version that moves with every save, the
//!   writer lease ([`Lease`]), and `seq`, which moves with every change of the head;
//! - **rows**, one per document (its entry and source path) or file stamp and commit, each
//!   tagged with the commit that wrote it; a row without a value is a removal.
//!
//! The catalog is the latest row of each key among the live commits (a later commit in the
//! list shadows an earlier one). A row of a commit that is not live is never read.
//!
//! # Saves are atomic
//!
//! A save writes its rows under a fresh commit number, then changes the head in one
//! compare-and-set: an upsert of point 0 whose `update_filter` requires the `seq` it read,
//! through the shard's leader (`WriteOrdering::Medium`). Rows of a save that never reached
//! the head (a crash, a lost race) are not live and so never read. A full save makes its
//! commit the only live one; a save of what changed appends its commit, and the newest
//! commits are then merged as a size-tiered log does (`merge_start`). Rows of commits that leave
//! the list are deleted afterwards. A reader takes the head, reads the rows of its live
//! commits and takes the head again: when `seq` moved in between (a save, a merge, a lease
//! change) it reads again, so a load never mixes two catalogs.
//!
//! # The writer lease
//!
//! The head carries who may write: an owner, an epoch that moves with every new holder, and
//! an expiry (wall-clock milliseconds). [`QdrantCatalogStore::acquire`] takes it by a
//! compare-and-set when it is free, expired or already this handle's, and waits otherwise;
//! every save by a handle that holds a lease is fenced: its head change requires the lease
//! still to be this handle's, unexpired, in the same epoch, so a writer that lost its lease
//! (paused past the expiry, say) cannot make its catalog the one on record.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qdrant_client::Payload;
use qdrant_client::qdrant::{
    Condition, DeletePointsBuilder, FieldType, Filter as QFilter, GetPointsBuilder, PointId,
    PointStruct, UpdateMode, UpsertPointsBuilder, WriteOrdering, WriteOrderingType,
};
use serde::{Deserialize, Serialize};
use zhiku_domain::DocId;
use zhiku_domain::contracts::CatalogEntry;
use zhiku_domain::ports::{
    CatalogCounts, CatalogError, CatalogStore, Changed, IndexError, StoredCatalog, WriteTurn,
};

use crate::collection::{Collection, OpenError, PayloadIndex};
use crate::config::QdrantConfig;
use crate::payload::{integer_field, string_field, uuid_of};

/// Format of the record zhiku keeps in a catalog collection's metadata.
const FORMAT: &str = "zhiku-qdrant-catalog/1";
/// The adapter's name in errors.
const ADAPTER: &str = "qdrant-catalog";
/// Half the live commits past which the whole tail is merged, whatever the sizes (a head an
/// earlier version wrote, without sizes); the size-tiered merges keep far fewer.
pub const MERGE_AT: usize = 16;
/// Reads of a catalog that a concurrent save moved under them before a load gives up.
const READ_ATTEMPTS: usize = 20;
/// How many changes of the head before it a head remembers (their nonces), so a writer that
/// reads the head back after others changed it again still tells whether its own went through.
const RECENT: usize = 32;
/// The head's point.
const HEAD: u64 = 0;
/// How long a write lease lasts unless renewed; a turn renews it every third of that. It is
/// how long writes wait after a writer dies holding it (the failover bench measured 30.8 to
/// 31.3 s with 30 s), and how long a writer may stall before its lease can be taken (its save
/// is then refused, never recorded).
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How soon a renewal that failed (not lost: the head could not be read or changed) is tried
/// again.
const RENEW_RETRY: Duration = Duration::from_millis(500);
/// How long a writer waits for another's lease before it gives up (temporarily).
pub const LEASE_WAIT: Duration = Duration::from_secs(120);

const KIND: &str = "kind";
const COMMIT: &str = "commit";
const KEY: &str = "key";
const VALUE: &str = "value";
const SEQ: &str = "seq";
const STATE: &str = "head";

const FIELDS: &[PayloadIndex] = &[
    (KIND, FieldType::Keyword, false),
    (KEY, FieldType::Keyword, false),
    (COMMIT, FieldType::Integer, false),
];

/// Who may write the knowledge base now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The holder (a replica's name for itself; empty: nobody).
    pub owner: String,
    /// Moves with every new holder, so a holder recognises a lease it lost and took back.
    pub epoch: u64,
    /// Wall-clock milliseconds since the Unix epoch when the lease lapses.
    pub until_ms: i64,
}

impl Lease {
    fn held_by(&self, owner: &str, now_ms: i64) -> bool {
        self.owner == owner && self.until_ms > now_ms
    }

    fn free_at(&self, now_ms: i64) -> bool {
        self.owner.is_empty() || self.until_ms <= now_ms
    }
}

/// The head of a catalog collection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Head {
    /// Moves with every change of the head.
    seq: u64,
    /// Moves with every save.
    version: u64,
    /// The commits whose rows make the catalog, oldest first.
    live: Vec<i64>,
    /// The rows each live commit wrote, in the order of `live` (empty, or of another length,
    /// in a head an earlier version wrote: then counted when needed).
    #[serde(default)]
    sizes: Vec<u64>,
    /// The catalog without its rows; `None` until the first save.
    header: Option<StoredCatalog>,
    /// What the rows hold.
    counts: CatalogCounts,
    /// Who may write.
    lease: Lease,
    /// True when the last turn ended finished (see [`WriteTurn::finish`]); false while a turn
    /// runs, and after one that failed or was killed midway.
    #[serde(default)]
    clean: bool,
    /// Unique to the change that wrote this head, so a writer recognises its own.
    nonce: String,
    /// The nonces of the last [`RECENT`] heads before this one, newest last: a writer whose
    /// change was followed by others (a lease renewal right after a save) finds it here.
    #[serde(default)]
    recent: Vec<String>,
}

/// A document's row: its entry and its source path (the catalog may hold either alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DocRow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entry: Option<CatalogEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

/// One row to write: kind (`doc` or `stamp`), key, and value (`None`: removed).
type Row = (&'static str, String, Option<String>);

/// A catalog store in one Qdrant collection (see the module documentation).
pub struct QdrantCatalogStore {
    collection: Arc<Collection>,
    /// The version this handle last loaded or saved.
    seen: Mutex<Option<u64>>,
    /// The lease this handle holds, when it holds one (shared with the thread that renews it).
    lease: Arc<Mutex<Option<Lease>>>,
    /// This handle's name as a lease holder: unique to it.
    owner: String,
    /// Whether the turn before the one this handle took last had been finished.
    earlier_finished: Mutex<bool>,
    /// Set when this handle's turn checked the store chunk by chunk.
    vouched: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for QdrantCatalogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantCatalogStore")
            .field("url", &self.collection.config.url)
            .field("collection", &self.collection.name)
            .finish_non_exhaustive()
    }
}

fn catalog_error(e: IndexError) -> CatalogError {
    match e {
        IndexError::Unavailable { message, .. } => CatalogError::Unavailable {
            adapter: ADAPTER,
            message,
        },
        other => {
            let temporary = other.is_temporary();
            CatalogError::Backend {
                adapter: ADAPTER,
                source: Box::new(other),
                temporary,
            }
        }
    }
}

fn backend(message: String) -> CatalogError {
    CatalogError::Backend {
        adapter: ADAPTER,
        source: message.into(),
        temporary: false,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A number no other save or head change will use: the low 62 bits of a v4 UUID (all random:
/// its version and variant bits lie above them), positive in an `i64`.
fn unique() -> i64 {
    ((uuid::Uuid::new_v4().as_u128() as u64 & ((1 << 62) - 1)) as i64).max(1)
}

/// The point of a row: a UUID from the sha256 of its commit, kind and key.
fn row_point(commit: i64, kind: &str, key: &str) -> PointId {
    uuid_of(&format!("{commit}\0{kind}\0{key}")).into()
}

impl QdrantCatalogStore {
    /// Opens the catalog collection of knowledge base `kb` (see
    /// [`QdrantConfig::catalog_collection_name`]), creating it when it does not exist.
    pub fn open(config: &QdrantConfig, kb: &str) -> Result<Self, CatalogError> {
        Self::open_collection(config, &config.catalog_collection_name(kb))
    }

    /// Opens or creates the catalog collection `name`: one shard (the head is one point and
    /// every save changes it), replicated as the configuration says.
    pub fn open_collection(config: &QdrantConfig, name: &str) -> Result<Self, CatalogError> {
        let collection =
            Collection::open_records(config, name, FORMAT, FIELDS, true).map_err(|e| match e {
                OpenError::Index(e) => catalog_error(e),
                OpenError::NotFormat(found) => CatalogError::FormatMismatch {
                    location: format!("Qdrant collection {name}"),
                    expected: FORMAT.to_string(),
                    found: found.unwrap_or_else(|| "none (not a zhiku catalog)".into()),
                },
            })?;
        Ok(Self {
            collection: Arc::new(collection),
            seen: Mutex::new(None),
            lease: Arc::new(Mutex::new(None)),
            earlier_finished: Mutex::new(false),
            vouched: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            owner: format!(
                "{}:{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
        })
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection.name
    }

    /// The gRPC URL this store talks to.
    pub fn url(&self) -> &str {
        &self.collection.config.url
    }

    /// Deletes the collection and everything in it.
    pub fn drop_collection(&self) -> Result<(), CatalogError> {
        self.collection.drop_collection().map_err(catalog_error)
    }

    /// The version of the catalog on record (0 before the first save): moves with every save
    /// by any handle.
    pub fn version(&self) -> Result<u64, CatalogError> {
        Ok(self.read_head()?.map_or(0, |h| h.version))
    }

    /// The live commits on record now, oldest first (for tests and diagnostics).
    pub fn live_commits(&self) -> Result<Vec<i64>, CatalogError> {
        Ok(self.read_head()?.map(|h| h.live).unwrap_or_default())
    }

    /// The points of the catalog collection: the head and every row, live or not (for tests
    /// and diagnostics: rows of commits that are not live are dead weight).
    pub fn points(&self) -> Result<usize, CatalogError> {
        self.collection.count().map_err(|e| backend(e.to_string()))
    }

    /// The lease on record now.
    pub fn lease_on_record(&self) -> Result<Lease, CatalogError> {
        Ok(self.read_head()?.map(|h| h.lease).unwrap_or_default())
    }

    /// This handle's name as a lease holder.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Takes the writer lease for this handle for `ttl`, waiting up to `wait` while another
    /// holds it. Returns `false` when it is still held by another after `wait`. Holding it
    /// already, it is renewed.
    pub fn acquire(&self, ttl: Duration, wait: Duration) -> Result<bool, CatalogError> {
        Ok(acquire(&self.collection, &self.lease, &self.owner, ttl, wait)?.is_some())
    }

    /// Gives the lease up, when this handle holds it (and it is still the one on record),
    /// recording whether its turn was `finished`.
    pub fn release(&self, finished: bool) -> Result<(), CatalogError> {
        release(&self.collection, &self.lease, finished)
    }

    fn held(&self) -> Option<Lease> {
        self.lease.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Refuses a change of `head` by a handle that held a lease and no longer does.
    fn check_fence(&self, head: &Head) -> Result<(), CatalogError> {
        match self.held() {
            // A renewal moves only `until_ms`: the lease is still this handle's when the head
            // names its owner and epoch and has not lapsed (the head may carry a renewal this
            // handle's copy has not taken in yet).
            Some(mine)
                if head.lease.epoch != mine.epoch || !head.lease.held_by(&mine.owner, now_ms()) =>
            {
                Err(CatalogError::Backend {
                    adapter: ADAPTER,
                    source: format!(
                        "the writer lease of {} (epoch {}) was lost: {} holds epoch {} now; nothing was saved",
                        mine.owner, mine.epoch, head.lease.owner, head.lease.epoch
                    )
                    .into(),
                    temporary: true,
                })
            }
            _ => Ok(()),
        }
    }

    fn read_head(&self) -> Result<Option<Head>, CatalogError> {
        read_head(&self.collection)
    }

    fn swap_head(&self, seen: Option<&Head>, next: Head) -> Result<bool, CatalogError> {
        swap_head(&self.collection, seen, next)
    }
}

/// Takes the lease of the catalog in `c` into `cell` for `owner` (see
/// [`QdrantCatalogStore::acquire`]); returns the catalog version on record when it was taken
/// (the head it replaced was the current one) and whether the turn before had been finished,
/// `None` when another still holds it after `wait`. A new turn marks the head not clean until
/// it is finished.
fn acquire(
    c: &Collection,
    cell: &Mutex<Option<Lease>>,
    owner: &str,
    ttl: Duration,
    wait: Duration,
) -> Result<Option<(u64, bool)>, CatalogError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        let head = read_head(c)?;
        let current = head.clone().unwrap_or_default();
        let now = now_ms();
        let held = cell.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The lease on record is this handle's when it is the one it holds, or when it names this
        // handle's owner (unique to it) and has not lapsed: a change of the head that went
        // through while the read after it said otherwise.
        let mine = held.filter(|l| current.lease == *l).or_else(|| {
            current
                .lease
                .held_by(owner, now)
                .then(|| current.lease.clone())
        });
        if mine.is_some() || current.lease.free_at(now) {
            let epoch = match &mine {
                Some(l) => l.epoch,
                None => current.lease.epoch + 1,
            };
            let lease = Lease {
                owner: owner.to_string(),
                epoch,
                until_ms: now + ttl.as_millis() as i64,
            };
            let next = Head {
                lease: lease.clone(),
                clean: mine.is_some() && current.clean,
                ..current.clone()
            };
            let version = next.version;
            if swap_head(c, head.as_ref(), next)? {
                *cell.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease);
                return Ok(Some((version, current.clean)));
            }
            continue;
        }
        if started.elapsed() >= wait {
            return Ok(None);
        }
        std::thread::sleep(pause.min(wait.saturating_sub(started.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// Extends the lease `cell` holds by `ttl`, when it is still the one on record in `c`; false
/// when it was lost (another holder took it after it lapsed). A lost lease stays in `cell`, so
/// the holder's next save is refused by the fence rather than made under a lease it lost.
fn renew(c: &Collection, cell: &Mutex<Option<Lease>>, ttl: Duration) -> Result<bool, CatalogError> {
    for _ in 0..READ_ATTEMPTS {
        let Some(mine) = cell.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
            return Ok(false);
        };
        let head = read_head(c)?;
        let Some(current) = head.as_ref().filter(|h| h.lease == mine) else {
            return Ok(false);
        };
        let lease = Lease {
            until_ms: now_ms() + ttl.as_millis() as i64,
            ..mine
        };
        let next = Head {
            lease: lease.clone(),
            ..current.clone()
        };
        if swap_head(c, head.as_ref(), next)? {
            *cell.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease);
            return Ok(true);
        }
    }
    Ok(false)
}

/// Gives up the lease `cell` holds, when it is still the one on record in `c`, recording
/// whether the turn was `finished`.
fn release(
    c: &Collection,
    cell: &Mutex<Option<Lease>>,
    finished: bool,
) -> Result<(), CatalogError> {
    let Some(mine) = cell.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return Ok(());
    };
    for _ in 0..READ_ATTEMPTS {
        let Some(head) = read_head(c)? else {
            return Ok(());
        };
        if head.lease != mine {
            return Ok(());
        }
        let next = Head {
            lease: Lease {
                owner: String::new(),
                until_ms: 0,
                ..mine.clone()
            },
            clean: finished,
            ..head.clone()
        };
        if swap_head(c, Some(&head), next)? {
            return Ok(());
        }
    }
    Ok(())
}

/// The head of the catalog in `c`, `None` before anything was recorded.
fn read_head(c: &Collection) -> Result<Option<Head>, CatalogError> {
    {
        let points = c
            .run(async {
                c.retry("read the catalog head", |client| {
                    client.get_points(
                        GetPointsBuilder::new(&c.name, vec![PointId::from(HEAD)])
                            .with_payload(true),
                    )
                })
                .await
            })
            .map_err(catalog_error)?
            .result;
        let Some(point) = points.into_iter().next() else {
            return Ok(None);
        };
        let text = string_field(&point.payload, STATE)
            .ok_or_else(|| backend(format!("the head of {} has no state", c.name)))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| CatalogError::Unreadable {
                location: format!("Qdrant collection {}", c.name),
                source: Box::new(e),
            })
    }
}

/// Replaces the head `seen` of the catalog in `c` (none: there was none) by `next` (its `seq`
/// and `nonce` set here) if nothing changed it since; true when `next` is now on record.
fn swap_head(c: &Collection, seen: Option<&Head>, mut next: Head) -> Result<bool, CatalogError> {
    next.seq = seen.map_or(1, |h| h.seq + 1);
    next.nonce = unique().to_string();
    next.recent = seen.map_or_else(Vec::new, |h| {
        let mut recent = h.recent.clone();
        recent.push(h.nonce.clone());
        let extra = recent.len().saturating_sub(RECENT);
        recent.drain(..extra);
        recent
    });
    let state = serde_json::to_string(&next).map_err(|e| backend(e.to_string()))?;
    let payload = Payload::try_from(serde_json::json!({
        KIND: "head",
        SEQ: next.seq as i64,
        STATE: state,
    }))
    .map_err(|e| backend(e.to_string()))?;
    let point = PointStruct::new(HEAD, HashMap::<String, Vec<f32>>::new(), payload);
    c.run(async {
        c.retry("change the catalog head", |client| {
            let mut request = UpsertPointsBuilder::new(&c.name, vec![point.clone()])
                .wait(true)
                .ordering(WriteOrdering {
                    r#type: WriteOrderingType::Medium as i32,
                });
            request = match seen {
                None => request.update_mode(UpdateMode::InsertOnly),
                Some(h) => {
                    request.update_filter(QFilter::must([Condition::matches(SEQ, h.seq as i64)]))
                }
            };
            client.upsert_points(request)
        })
        .await
    })
    .map_err(catalog_error)?;
    // A read may reach a copy of the head that has not applied the change yet: read again
    // while it shows an older head, then tell by the nonce whose change is on record: the head
    // itself, or one of the changes it remembers (another writer's lease renewal may have
    // followed this one at once; taking that for a lost race once dropped a merge that was
    // live, and its rows with it).
    for _ in 0..READ_ATTEMPTS {
        let Some(now) = read_head(c)? else {
            return Ok(false);
        };
        if now.seq < next.seq {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        if now.nonce == next.nonce || now.recent.contains(&next.nonce) {
            return Ok(true);
        }
        // The head at this change's place is another's when it is remembered at all.
        let remembered = now.seq - next.seq <= now.recent.len() as u64;
        if now.seq == next.seq || remembered {
            return Ok(false);
        }
        return Err(CatalogError::Backend {
            adapter: ADAPTER,
            source: format!(
                "the catalog head moved {} times after a change of it; whether that change \
                 went through is not known",
                now.seq - next.seq
            )
            .into(),
            temporary: true,
        });
    }
    Ok(false)
}

impl QdrantCatalogStore {
    fn write_rows(&self, commit: i64, rows: &[Row]) -> Result<(), CatalogError> {
        let mut points = Vec::with_capacity(rows.len());
        for (kind, key, value) in rows {
            let mut json = serde_json::json!({ KIND: kind, COMMIT: commit, KEY: key });
            if let Some(v) = value {
                json[VALUE] = serde_json::json!(v);
            }
            let payload = Payload::try_from(json).map_err(|e| backend(e.to_string()))?;
            points.push(PointStruct::new(
                row_point(commit, kind, key),
                HashMap::<String, Vec<f32>>::new(),
                payload,
            ));
        }
        self.collection.upsert(points).map_err(catalog_error)
    }

    fn delete_commits(&self, commits: &[i64]) -> Result<(), CatalogError> {
        if commits.is_empty() {
            return Ok(());
        }
        let c = &self.collection;
        let filter = QFilter::must([Condition::matches(COMMIT, commits.to_vec())]);
        c.run(async {
            c.retry("delete catalog rows", |client| {
                client.delete_points(
                    DeletePointsBuilder::new(&c.name)
                        .points(filter.clone())
                        .wait(true),
                )
            })
            .await
        })
        .map(|_| ())
        .map_err(catalog_error)
    }

    /// Deletes the rows of `commit`, which a save or merge wrote but could not make live,
    /// unless the head on record holds it after all (a change whose outcome was misread must
    /// cost dead rows at worst, never live ones). Best effort: rows left are never read.
    fn drop_unpublished(&self, commit: i64) {
        if let Ok(head) = self.read_head()
            && !head.is_some_and(|h| h.live.contains(&commit))
        {
            let _ = self.delete_commits(&[commit]);
        }
    }

    /// The latest row of each key among `live` (restricted to `keys` of `kind` when given):
    /// `(kind, key) → value`, a removal as `None`.
    fn read_rows(
        &self,
        live: &[i64],
        only: Option<(&str, Vec<String>)>,
    ) -> Result<BTreeMap<(String, String), Option<String>>, CatalogError> {
        if live.is_empty() {
            return Ok(BTreeMap::new());
        }
        let rank: HashMap<i64, usize> = live.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let mut must = vec![Condition::matches(COMMIT, live.to_vec())];
        if let Some((kind, keys)) = &only {
            must.push(Condition::matches(KIND, kind.to_string()));
            must.push(Condition::matches(KEY, keys.clone()));
        }
        let filter = QFilter::must(must);
        let c = &self.collection;
        let points = c
            .scroll("read catalog rows", Some(filter), None)
            .map_err(catalog_error)?;
        let mut latest: BTreeMap<(String, String), (usize, Option<String>)> = BTreeMap::new();
        for point in points {
            let (Some(kind), Some(key), Some(commit)) = (
                string_field(&point.payload, KIND),
                string_field(&point.payload, KEY),
                integer_field(&point.payload, COMMIT),
            ) else {
                return Err(backend(format!("a row of {} is incomplete", c.name)));
            };
            let Some(&at) = rank.get(&commit) else {
                continue;
            };
            let value = string_field(&point.payload, VALUE);
            let slot = latest.entry((kind, key)).or_insert((at, value.clone()));
            if at >= slot.0 {
                *slot = (at, value);
            }
        }
        Ok(latest.into_iter().map(|(k, (_, v))| (k, v)).collect())
    }

    /// The catalog of `head` (which records one) read whole, or `None` when the head moved
    /// while it was read.
    fn read_catalog(&self, head: &Head) -> Result<Option<StoredCatalog>, CatalogError> {
        let Some(mut stored) = head.header.clone() else {
            return Err(backend(format!(
                "the head of {} records no catalog",
                self.collection.name
            )));
        };
        let rows = self.read_rows(&head.live, None)?;
        if self.read_head()?.map(|h| h.seq) != Some(head.seq) {
            return Ok(None);
        }
        for ((kind, key), value) in rows {
            let Some(value) = value else { continue };
            match kind.as_str() {
                "doc" => {
                    let id = DocId::new(&key).map_err(|e| backend(format!("row {key}: {e}")))?;
                    let row: DocRow =
                        serde_json::from_str(&value).map_err(|e| CatalogError::Unreadable {
                            location: format!(
                                "row {key} of Qdrant collection {}",
                                self.collection.name
                            ),
                            source: Box::new(e),
                        })?;
                    if let Some(entry) = row.entry {
                        stored.catalog.docs.insert(id.clone(), entry);
                    }
                    if let Some(source) = row.source {
                        stored.sources.insert(id, source);
                    }
                }
                "stamp" => {
                    stored.stamps.insert(key, value);
                }
                _ => {}
            }
        }
        Ok(Some(stored))
    }

    /// The rows of `catalog`'s documents `docs` and stamps `stamps`.
    fn rows_of<'a>(
        catalog: &StoredCatalog,
        docs: impl Iterator<Item = &'a DocId>,
        stamps: impl Iterator<Item = &'a String>,
    ) -> Result<Vec<Row>, CatalogError> {
        let mut rows = Vec::new();
        for id in docs {
            let row = DocRow {
                entry: catalog.catalog.docs.get(id).cloned(),
                source: catalog.sources.get(id).cloned(),
            };
            let value = match row {
                DocRow {
                    entry: None,
                    source: None,
                } => None,
                row => Some(serde_json::to_string(&row).map_err(|e| backend(e.to_string()))?),
            };
            rows.push(("doc", id.as_str().to_string(), value));
        }
        for path in stamps {
            rows.push(("stamp", path.clone(), catalog.stamps.get(path).cloned()));
        }
        Ok(rows)
    }

    /// Makes `commit` part of the catalog on record: `replace` it wholly (a full save) or
    /// append it to the live commits, with `catalog`'s header. Fails when the version on record
    /// is not `base` (when given) or this handle lost its lease.
    fn publish(
        &self,
        catalog: &StoredCatalog,
        commit: i64,
        rows: u64,
        replace: bool,
        base: Option<u64>,
    ) -> Result<bool, CatalogError> {
        let header = catalog.header();
        for _ in 0..READ_ATTEMPTS {
            let head = self.read_head()?;
            let current = head.clone().unwrap_or_default();
            if base.is_some_and(|b| b != current.version) {
                return Ok(false);
            }
            self.check_fence(&current)?;
            let (mut live, mut sizes) = if replace {
                (Vec::new(), Vec::new())
            } else {
                (current.live.clone(), current.sizes.clone())
            };
            // A save that changed no row (the header alone) adds no commit.
            if replace || rows > 0 {
                live.push(commit);
                sizes.push(rows);
            }
            if sizes.len() != live.len() {
                sizes.clear();
            }
            let next = Head {
                version: current.version + 1,
                live,
                sizes,
                header: Some(header.clone()),
                counts: CatalogCounts::of(&catalog.catalog),
                ..current.clone()
            };
            let version = next.version;
            if self.swap_head(head.as_ref(), next)? {
                *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(version);
                if replace {
                    // Best effort: a row left behind is not live and never read.
                    let _ = self.delete_commits(&current.live);
                }
                return Ok(true);
            }
        }
        Err(CatalogError::Backend {
            adapter: ADAPTER,
            source: "the catalog head kept changing; nothing was saved".into(),
            temporary: true,
        })
    }

    /// Merges the newest live commits as a size-tiered log does, after every save: the
    /// longest run of newest commits whose rows together are at least as many as the commit
    /// before the run's first is folded into that one, never the first live commit (see
    /// [`merge_start`]). So live commits shrink in size from oldest to newest, there are a
    /// logarithm of the rows of them, and a row is rewritten a logarithm of times: a big
    /// indexing run's commits stay as they are while one-document saves fold together. Past
    /// [`MERGE_AT`] × 2 live commits (a head an earlier version wrote), the whole tail is
    /// merged. Best effort: a merge that loses a race to a save is dropped (its rows are
    /// deleted, never live); one that only crossed a lease renewal is made again on the
    /// renewed head.
    fn merge_tail(&self) -> Result<(), CatalogError> {
        let Some(head) = self.read_head()? else {
            return Ok(());
        };
        if head.live.len() < 3 {
            return Ok(());
        }
        let sizes = if head.sizes.len() == head.live.len() {
            head.sizes.clone()
        } else {
            let mut sizes = Vec::with_capacity(head.live.len());
            for commit in &head.live {
                let filter = QFilter::must([Condition::matches(COMMIT, *commit)]);
                sizes.push(
                    self.collection
                        .count_where(Some(&filter))
                        .map_err(|e| backend(e.to_string()))? as u64,
                );
            }
            sizes
        };
        let from = if head.live.len() > 2 * MERGE_AT {
            1
        } else {
            match merge_start(&sizes) {
                Some(from) => from,
                None => return Ok(()),
            }
        };
        let merging = head.live[from..].to_vec();
        let rows = self.read_rows(&merging, None)?;
        let merged = unique();
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|((kind, key), value)| {
                let kind = if kind == "doc" { "doc" } else { "stamp" };
                (kind, key, value)
            })
            .collect();
        self.write_rows(merged, &rows)?;
        match self.publish_merge(head, from, sizes, merged, rows.len() as u64) {
            Ok(true) => {
                let _ = self.delete_commits(&merging);
                Ok(())
            }
            // Not made live, whatever stopped it: its rows go (best effort; never read).
            outcome => {
                self.drop_unpublished(merged);
                outcome.map(|_| ())
            }
        }
    }

    /// Makes `merged` (the rows of `seen.live[from..]`) live in their place; false when the
    /// catalog changed meanwhile (a save) or the lease is not this handle's. Crossing a lease
    /// renewal (the catalog is the same, only the lease moved) is not a change: the merge is
    /// made on the renewed head.
    fn publish_merge(
        &self,
        mut seen: Head,
        from: usize,
        sizes: Vec<u64>,
        merged: i64,
        merged_rows: u64,
    ) -> Result<bool, CatalogError> {
        let (live, version) = (seen.live.clone(), seen.version);
        for _ in 0..READ_ATTEMPTS {
            if self.check_fence(&seen).is_ok() {
                let mut next_live = live[..from].to_vec();
                next_live.push(merged);
                let mut next_sizes = sizes[..from].to_vec();
                next_sizes.push(merged_rows);
                let next = Head {
                    live: next_live,
                    sizes: next_sizes,
                    ..seen.clone()
                };
                if self.swap_head(Some(&seen), next)? {
                    return Ok(true);
                }
            }
            match self.read_head()? {
                Some(now) if now.live == live && now.version == version => seen = now,
                _ => return Ok(false),
            }
        }
        Ok(false)
    }
}

/// Where a merge of live commits of `sizes` rows (oldest first) starts: the longest run of
/// newest commits, two or more, whose rows add up to at least the commit before each step
/// (so equal neighbours fold, as a binary counter carries); never at the first commit.
/// `None` when the newest commit is smaller than the one before it.
fn merge_start(sizes: &[u64]) -> Option<usize> {
    let n = sizes.len();
    if n < 3 {
        return None;
    }
    let mut start = n - 1;
    let mut rows = sizes[start];
    while start > 1 && rows >= sizes[start - 1] {
        start -= 1;
        rows += sizes[start];
    }
    (n - start >= 2).then_some(start)
}

impl QdrantCatalogStore {
    /// A turn over the lease this handle just took: a thread renews it every third of
    /// [`LEASE_TTL`] until the turn ends, which gives it up.
    fn keep_lease(&self) -> WriteTurn {
        use std::sync::mpsc::RecvTimeoutError;
        let (stop, stopped) = std::sync::mpsc::channel::<bool>();
        let (c, cell) = (Arc::clone(&self.collection), Arc::clone(&self.lease));
        // A finished turn leaves the store clean only if the one before did, or if this one
        // checked it chunk by chunk.
        let earlier = *self
            .earlier_finished
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let vouched = Arc::clone(&self.vouched);
        vouched.store(false, std::sync::atomic::Ordering::Relaxed);
        let clean = move |finished: bool| {
            finished && (earlier || vouched.load(std::sync::atomic::Ordering::Relaxed))
        };
        let renewer = std::thread::Builder::new()
            .name("zhiku-lease".into())
            .spawn(move || {
                let finished = loop {
                    match stopped.recv_timeout(LEASE_TTL / 3) {
                        Ok(finished) => break finished,
                        Err(RecvTimeoutError::Disconnected) => break false,
                        Err(RecvTimeoutError::Timeout) => match renew(&c, &cell, LEASE_TTL) {
                            Ok(true) => {}
                            // Lost: wait for the turn to end (release leaves it alone).
                            Ok(false) => break stopped.recv().unwrap_or(false),
                            // The head could not be read or changed now (a busy or failing
                            // node): try again soon; if the lease lapses meanwhile, the next
                            // save is refused by the fence, never made without it.
                            Err(_) => match stopped.recv_timeout(RENEW_RETRY) {
                                Ok(finished) => break finished,
                                Err(RecvTimeoutError::Disconnected) => break false,
                                Err(RecvTimeoutError::Timeout) => {
                                    let _ = renew(&c, &cell, LEASE_TTL);
                                }
                            },
                        },
                    }
                };
                let _ = release(&c, &cell, finished);
            });
        let (c, cell) = (Arc::clone(&self.collection), Arc::clone(&self.lease));
        WriteTurn::releasing(move |finished| match renewer {
            Ok(thread) => {
                let _ = stop.send(clean(finished));
                let _ = thread.join();
            }
            Err(_) => {
                let _ = release(&c, &cell, clean(finished));
            }
        })
    }
}

impl QdrantCatalogStore {
    /// The catalog on record, read whole once the head read says version `min` or later (a
    /// read may reach a replica of the head that has not applied the latest change yet).
    fn load_at_least(&self, min: u64) -> Result<Option<StoredCatalog>, CatalogError> {
        for _ in 0..READ_ATTEMPTS {
            let Some(head) = self.read_head()? else {
                return Ok(None);
            };
            if head.version < min {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            if head.header.is_none() {
                return Ok(None);
            }
            if let Some(stored) = self.read_catalog(&head)? {
                *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(head.version);
                return Ok(Some(stored));
            }
        }
        Err(CatalogError::Backend {
            adapter: ADAPTER,
            source: "the catalog kept changing while it was read".into(),
            temporary: true,
        })
    }
}

impl CatalogStore for QdrantCatalogStore {
    /// Takes the knowledge base's write lease (waiting up to [`LEASE_WAIT`]), renewed until the
    /// turn ends; then the catalog on record, when another writer saved since this handle last
    /// loaded or saved.
    fn begin_write(&self) -> Result<(WriteTurn, Option<StoredCatalog>), CatalogError> {
        let taken = acquire(
            &self.collection,
            &self.lease,
            &self.owner,
            LEASE_TTL,
            LEASE_WAIT,
        )?;
        let Some((version, earlier_finished)) = taken else {
            let holder = self.lease_on_record()?;
            return Err(CatalogError::Backend {
                adapter: ADAPTER,
                source: format!(
                    "another writer ({}) has held this knowledge base's write lease for more than {} s; try again later",
                    holder.owner,
                    LEASE_WAIT.as_secs()
                )
                .into(),
                temporary: true,
            });
        };
        *self
            .earlier_finished
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = earlier_finished;
        let turn = self.keep_lease();
        // The head the lease replaced was the current one: its version is the catalog to start
        // from (a replica read afterwards may lag behind it, so the load waits for it).
        let seen = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = if version > 0 && seen != Some(version) {
            self.load_at_least(version)?
        } else {
            None
        };
        Ok((turn, fresh))
    }

    fn vouch_consistent(&self) {
        self.vouched
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn earlier_turns_finished(&self) -> Option<bool> {
        self.held().map(|_| {
            *self
                .earlier_finished
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        })
    }

    fn moved(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        let seen = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let on_record = self
            .read_head()?
            .filter(|h| h.header.is_some())
            .map(|h| h.version);
        // Versions only grow: a lower one is a replica of the head that lags, not news.
        match on_record {
            Some(version) if seen.is_none_or(|seen| version > seen) => self.load_at_least(version),
            _ => Ok(None),
        }
    }

    fn load(&self) -> Result<Option<StoredCatalog>, CatalogError> {
        self.load_at_least(0)
    }

    fn load_header(&self) -> Result<Option<(StoredCatalog, CatalogCounts)>, CatalogError> {
        Ok(self
            .read_head()?
            .and_then(|h| h.header.map(|header| (header, h.counts))))
    }

    fn source_paths(&self, ids: &[DocId]) -> Result<BTreeMap<DocId, String>, CatalogError> {
        let Some(head) = self.read_head()? else {
            return Ok(BTreeMap::new());
        };
        let keys: Vec<String> = ids.iter().map(|d| d.as_str().to_string()).collect();
        if keys.is_empty() {
            return Ok(BTreeMap::new());
        }
        let rows = self.read_rows(&head.live, Some(("doc", keys)))?;
        let mut out = BTreeMap::new();
        for ((_, key), value) in rows {
            let Some(value) = value else { continue };
            let row: DocRow = serde_json::from_str(&value).map_err(|e| backend(e.to_string()))?;
            if let (Some(source), Ok(id)) = (row.source, DocId::new(&key)) {
                out.insert(id, source);
            }
        }
        Ok(out)
    }

    fn save(&self, catalog: &StoredCatalog) -> Result<(), CatalogError> {
        let commit = unique();
        let docs: std::collections::BTreeSet<&DocId> = catalog
            .catalog
            .docs
            .keys()
            .chain(catalog.sources.keys())
            .collect();
        let rows = Self::rows_of(catalog, docs.into_iter(), catalog.stamps.keys())?;
        self.write_rows(commit, &rows)?;
        match self.publish(catalog, commit, rows.len() as u64, true, None) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.drop_unpublished(commit);
                Err(e)
            }
        }
    }

    fn save_changed(&self, catalog: &StoredCatalog, changed: &Changed) -> Result<(), CatalogError> {
        let seen = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let Some(base) = seen else {
            return self.save(catalog);
        };
        let commit = unique();
        let rows = Self::rows_of(catalog, changed.docs.keys(), changed.stamps.keys())?;
        self.write_rows(commit, &rows)?;
        match self.publish(catalog, commit, rows.len() as u64, false, Some(base)) {
            Ok(true) => {
                let _ = self.merge_tail();
                Ok(())
            }
            // Another handle saved in between: save the whole catalog, as the contract says.
            Ok(false) => {
                self.drop_unpublished(commit);
                self.save(catalog)
            }
            Err(e) => {
                self.drop_unpublished(commit);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_start;

    #[test]
    fn merges_fold_the_newest_commits_as_a_binary_counter_carries() {
        // A large indexing commit, then one-row saves: only the saves fold.
        assert_eq!(merge_start(&[400, 1_000, 2, 2]), Some(2));
        assert_eq!(merge_start(&[400, 1_000, 4, 2]), None);
        assert_eq!(merge_start(&[400, 1_000, 4, 2, 2]), Some(2));
        // Equal indexing batches carry into one another, never into the first commit.
        assert_eq!(merge_start(&[10, 10, 10, 10]), Some(1));
        assert_eq!(merge_start(&[10, 40, 20, 10, 10]), Some(1));
        assert_eq!(merge_start(&[10, 100, 20, 10, 10]), Some(2));
        assert_eq!(merge_start(&[5, 5]), None);
        assert_eq!(merge_start(&[]), None);
    }
}
