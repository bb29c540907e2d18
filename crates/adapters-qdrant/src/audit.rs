//! [`QdrantAuditLog`]: the write-back audit trail in a Qdrant collection, so that every
//! replica of a knowledge base kept on a cluster appends to one trail and any of them reads it
//! whole.
//!
//! One point per entry, without vectors: the entry as JSON, and an `order` key (the wall-clock
//! nanoseconds of the append, then a random tiebreak) by which [`AuditLog::entries`] returns
//! them. Appends of one handle are in order; appends of two replicas are ordered by their
//! clocks. An append waits for the server's acknowledgement, so an entry is durable (on every
//! replica of its shard) before the write-back it records goes on.

use std::collections::HashMap;

use qdrant_client::Payload;
use qdrant_client::qdrant::{FieldType, PointStruct};
use zhiku_domain::ports::{AuditEntry, AuditError, AuditLog};

use crate::collection::{Collection, OpenError, PayloadIndex};
use crate::config::QdrantConfig;
use crate::payload::{integer_field, string_field};

/// Format of the record zhiku keeps in an audit collection's metadata.
const FORMAT: &str = "zhiku-qdrant-audit/1";
const ORDER: &str = "order";
const TIEBREAK: &str = "tiebreak";
const ENTRY: &str = "entry";
const FIELDS: &[PayloadIndex] = &[(ORDER, FieldType::Integer, false)];

/// A write-back audit trail in one Qdrant collection (see the module documentation).
pub struct QdrantAuditLog {
    collection: Collection,
    /// The order key of this handle's last append, so its own appends never go back in time.
    last: std::sync::Mutex<i64>,
}

impl std::fmt::Debug for QdrantAuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantAuditLog")
            .field("url", &self.collection.config.url)
            .field("collection", &self.collection.name)
            .finish_non_exhaustive()
    }
}

fn failed(what: &str, collection: &str, e: impl std::fmt::Display) -> AuditError {
    AuditError(format!(
        "cannot {what} the audit trail in Qdrant collection {collection}: {e}"
    ))
}

impl QdrantAuditLog {
    /// Opens the audit collection of knowledge base `kb` (see
    /// [`QdrantConfig::tagged_collection_name`]), creating it when it does not exist.
    pub fn open(config: &QdrantConfig, kb: &str) -> Result<Self, AuditError> {
        Self::open_collection(config, &config.tagged_collection_name(kb, "audit"))
    }

    /// Opens or creates the audit collection `name` (one shard, replicated as configured).
    pub fn open_collection(config: &QdrantConfig, name: &str) -> Result<Self, AuditError> {
        let collection =
            Collection::open_records(config, name, FORMAT, FIELDS, true).map_err(|e| match e {
                OpenError::Index(e) => failed("open", name, e),
                OpenError::NotFormat(_) => {
                    failed("open", name, format!("it is not a {FORMAT} collection"))
                }
            })?;
        Ok(Self {
            collection,
            last: std::sync::Mutex::new(0),
        })
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection.name
    }

    /// Deletes the collection and everything in it.
    pub fn drop_collection(&self) -> Result<(), AuditError> {
        self.collection
            .drop_collection()
            .map_err(|e| failed("drop", &self.collection.name, e))
    }

    /// The order key of an append now: the wall clock in nanoseconds, after this handle's last.
    fn next_order(&self) -> i64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        *last = now.max(*last + 1);
        *last
    }
}

impl AuditLog for QdrantAuditLog {
    fn append(&self, entry: &AuditEntry) -> Result<(), AuditError> {
        let name = &self.collection.name;
        let text = serde_json::to_string(entry).map_err(|e| failed("encode for", name, e))?;
        let id = uuid::Uuid::new_v4();
        let payload = Payload::try_from(serde_json::json!({
            ORDER: self.next_order(),
            TIEBREAK: id.to_string(),
            ENTRY: text,
        }))
        .map_err(|e| failed("encode for", name, e))?;
        let point = PointStruct::new(id.to_string(), HashMap::<String, Vec<f32>>::new(), payload);
        self.collection
            .upsert(vec![point])
            .map_err(|e| failed("append to", name, e))
    }

    fn entries(&self) -> Result<Vec<AuditEntry>, AuditError> {
        let c = &self.collection;
        let points = c
            .scroll("read the audit trail", None, None)
            .map_err(|e| failed("read", &c.name, e))?;
        let mut keyed = Vec::with_capacity(points.len());
        for point in points {
            let (Some(order), Some(tiebreak), Some(text)) = (
                integer_field(&point.payload, ORDER),
                string_field(&point.payload, TIEBREAK),
                string_field(&point.payload, ENTRY),
            ) else {
                return Err(failed("read", &c.name, "an entry is incomplete"));
            };
            let entry: AuditEntry =
                serde_json::from_str(&text).map_err(|e| failed("read", &c.name, e))?;
            keyed.push(((order, tiebreak), entry));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keyed.into_iter().map(|(_, e)| e).collect())
    }
}
