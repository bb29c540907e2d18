//! Retention: when a document stops being evidence, and which documents a sweep removes.
//!
//! A document says how long it lives in its metadata (front matter, a sidecar, or the
//! attributes of an API write): `expires_at`, an RFC 3339 instant, and/or `ttl`, a span such as
//! `7d` or `12h` counted from when the document was indexed ([`CatalogEntry::indexed_at`]).
//! With both, the earlier instant wins. A scope may carry a cap (most documents); a sweep then
//! evicts its oldest documents first (by `indexed_at`, ties by ID; a document indexed before
//! times were kept counts as oldest).
//!
//! Expiry is checked at query time ([`crate::rules::revision::check`] drops an expired hit as
//! `expired`), so a document is never evidence after it expires, even before a sweep removes it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::contracts::{Catalog, CatalogEntry};
use crate::contracts::{DocId, Document, Metadata, Scope, TimeToLive, Timestamp};

/// The metadata key of an absolute expiry.
pub const EXPIRES_AT: &str = "expires_at";
/// The metadata key of a time-to-live.
pub const TTL: &str = "ttl";

/// What a document says about how long it lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Its `expires_at`.
    pub expires_at: Option<Timestamp>,
    /// Its `ttl`.
    pub ttl: Option<TimeToLive>,
}

/// A document's `expires_at` or `ttl` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {doc}: invalid {key} {value}: {reason}")]
pub struct RetentionError {
    /// The document.
    pub doc: String,
    /// `expires_at` or `ttl`.
    pub key: &'static str,
    /// The value as written (JSON).
    pub value: String,
    /// Why it was refused.
    pub reason: String,
}

impl Retention {
    /// What `metadata` of document `doc` says (an error names the document, the key and the
    /// value).
    pub fn of_metadata(doc: &str, metadata: &Metadata) -> Result<Self, RetentionError> {
        let err = |key: &'static str, value: &serde_json::Value, reason: String| RetentionError {
            doc: doc.to_string(),
            key,
            value: value.to_string().chars().take(80).collect(),
            reason,
        };
        let text = |key: &'static str| -> Result<Option<&str>, RetentionError> {
            match metadata.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(err(key, other, "must be a string".into())),
            }
        };
        let expires_at = match text(EXPIRES_AT)? {
            Some(s) => Some(
                Timestamp::parse(s)
                    .map_err(|e| err(EXPIRES_AT, &serde_json::Value::from(s), e.reason.clone()))?,
            ),
            None => None,
        };
        let ttl = match text(TTL)? {
            Some(s) => Some(
                TimeToLive::parse(s)
                    .map_err(|e| err(TTL, &serde_json::Value::from(s), e.reason.clone()))?,
            ),
            None => None,
        };
        Ok(Self { expires_at, ttl })
    }

    /// What `doc` says.
    pub fn of(doc: &Document) -> Result<Self, RetentionError> {
        Self::of_metadata(doc.id().as_str(), &doc.attributes().metadata)
    }

    /// When a document indexed at `indexed_at` expires: the earlier of `expires_at` and
    /// `indexed_at` + `ttl` (a `ttl` without an indexing time sets nothing).
    pub fn expiry(&self, indexed_at: Option<Timestamp>) -> Option<Timestamp> {
        let from_ttl = self.ttl.zip(indexed_at).map(|(ttl, at)| at.plus(ttl));
        match (self.expires_at, from_ttl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// True when something that expires at `expires_at` has expired at `now` (the instant itself
/// counts as expired).
pub fn is_expired(expires_at: Option<Timestamp>, now: Timestamp) -> bool {
    expires_at.is_some_and(|at| at <= now)
}

/// Why a sweep removes a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SweepReason {
    /// It expired.
    Expired {
        /// When.
        expires_at: Timestamp,
    },
    /// Its scope holds more documents than its cap; it was among the oldest.
    OverCap {
        /// The scope's cap.
        cap: usize,
    },
}

impl SweepReason {
    /// `expired` or `over_cap`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Expired { .. } => "expired",
            Self::OverCap { .. } => "over_cap",
        }
    }
}

/// A document a sweep removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Swept {
    /// The document.
    pub doc_id: DocId,
    /// Why.
    #[serde(flatten)]
    pub reason: SweepReason,
}

/// The documents of `catalog` a sweep at `now` removes: every expired one, then, in each scope
/// with a cap in `caps`, the oldest of those left until the scope holds no more than its cap.
/// In document order within each reason. A document whose entry does not know its scope is
/// never evicted for a cap (only an expiry removes it).
pub fn sweep_plan(catalog: &Catalog, now: Timestamp, caps: &BTreeMap<Scope, usize>) -> Vec<Swept> {
    let mut out = Vec::new();
    let mut by_scope: BTreeMap<&Scope, Vec<(&DocId, &CatalogEntry)>> = BTreeMap::new();
    for (id, entry) in &catalog.docs {
        if let Some(at) = entry.expires_at.filter(|at| *at <= now) {
            out.push(Swept {
                doc_id: id.clone(),
                reason: SweepReason::Expired { expires_at: at },
            });
            continue;
        }
        if let Some(about) = &entry.about
            && caps.contains_key(&about.scope)
        {
            by_scope.entry(&about.scope).or_default().push((id, entry));
        }
    }
    for (scope, mut docs) in by_scope {
        let cap = caps[scope];
        if docs.len() <= cap {
            continue;
        }
        // Oldest first: no time (indexed before times were kept) before any time, ties by ID.
        docs.sort_by(|a, b| a.1.indexed_at.cmp(&b.1.indexed_at).then(a.0.cmp(b.0)));
        let over = docs.len() - cap;
        let mut evicted: Vec<Swept> = docs[..over]
            .iter()
            .map(|(id, _)| Swept {
                doc_id: (*id).clone(),
                reason: SweepReason::OverCap { cap },
            })
            .collect();
        evicted.sort_by(|a, b| a.doc_id.cmp(&b.doc_id));
        out.extend(evicted);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::ChunkingPolicy;
    use crate::usecases::DocAbout;
    use serde_json::json;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn meta(pairs: &[(&str, serde_json::Value)]) -> Metadata {
        let mut m = Metadata::new();
        for (k, v) in pairs {
            m.insert(*k, v.clone()).unwrap();
        }
        m
    }

    #[test]
    fn a_ttl_counts_from_indexing_and_the_earlier_expiry_wins() {
        let r = Retention::of_metadata("d", &meta(&[("ttl", json!("7d"))])).unwrap();
        assert_eq!(r.expiry(None), None);
        assert_eq!(
            r.expiry(Some(at("2026-01-01T00:00:00Z"))),
            Some(at("2026-01-08T00:00:00Z"))
        );
        let both = Retention::of_metadata(
            "d",
            &meta(&[
                ("ttl", json!("7d")),
                ("expires_at", json!("2026-01-03T00:00:00Z")),
            ]),
        )
        .unwrap();
        assert_eq!(
            both.expiry(Some(at("2026-01-01T00:00:00Z"))),
            Some(at("2026-01-03T00:00:00Z"))
        );
        assert_eq!(
            Retention::of_metadata("d", &Metadata::new())
                .unwrap()
                .expiry(Some(at("2026-01-01T00:00:00Z"))),
            None
        );
        assert!(is_expired(
            Some(at("2026-01-01T00:00:00Z")),
            at("2026-01-01T00:00:00Z")
        ));
        assert!(!is_expired(
            Some(at("2026-01-02T00:00:00Z")),
            at("2026-01-01T00:00:00Z")
        ));
        assert!(!is_expired(None, at("2026-01-01T00:00:00Z")));
    }

    #[test]
    fn an_invalid_expiry_or_ttl_names_the_document_key_and_value() {
        let e = Retention::of_metadata("notes/a.md", &meta(&[("expires_at", json!("next week"))]))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("notes/a.md") && text.contains("expires_at"),
            "{text}"
        );
        assert!(
            text.contains("next week") && text.contains("RFC 3339"),
            "{text}"
        );
        let e = Retention::of_metadata("b", &meta(&[("ttl", json!("7 days"))])).unwrap_err();
        assert_eq!((e.doc.as_str(), e.key), ("b", "ttl"));
        let e = Retention::of_metadata("c", &meta(&[("ttl", json!(7))])).unwrap_err();
        assert!(e.to_string().contains("must be a string"), "{e}");
    }

    fn entry(scope: &str, indexed: Option<&str>, expires: Option<&str>) -> CatalogEntry {
        CatalogEntry {
            revision: crate::Revision::of_content(scope),
            fingerprint: String::new(),
            chunk_ids: Vec::new(),
            about: Some(DocAbout {
                title: String::new(),
                source: String::new(),
                scope: Scope::new(scope).unwrap(),
                access: crate::Access::everyone(),
            }),
            indexed_at: indexed.map(at),
            expires_at: expires.map(at),
        }
    }

    #[test]
    fn a_sweep_removes_the_expired_then_the_oldest_over_a_cap() {
        let mut c = Catalog::new(ChunkingPolicy::default(), None, "a".into());
        let id = |s: &str| DocId::new(s).unwrap();
        c.docs.insert(
            id("web/old"),
            entry("web", Some("2026-01-01T00:00:00Z"), None),
        );
        c.docs.insert(
            id("web/new"),
            entry("web", Some("2026-01-03T00:00:00Z"), None),
        );
        c.docs.insert(
            id("web/mid"),
            entry("web", Some("2026-01-02T00:00:00Z"), None),
        );
        c.docs.insert(
            id("web/gone"),
            entry(
                "web",
                Some("2026-01-04T00:00:00Z"),
                Some("2026-01-05T00:00:00Z"),
            ),
        );
        c.docs.insert(id("kb/a"), entry("kb", None, None));
        c.docs
            .insert(id("kb/b"), entry("kb", None, Some("2027-01-01T00:00:00Z")));
        let caps = BTreeMap::from([(Scope::new("web").unwrap(), 1)]);
        let plan = sweep_plan(&c, at("2026-01-06T00:00:00Z"), &caps);
        let got: Vec<(&str, &str)> = plan
            .iter()
            .map(|s| (s.doc_id.as_str(), s.reason.code()))
            .collect();
        // The expired one goes first and no longer counts against the cap; then the two oldest.
        assert_eq!(
            got,
            vec![
                ("web/gone", "expired"),
                ("web/mid", "over_cap"),
                ("web/old", "over_cap")
            ]
        );
        assert!(sweep_plan(&c, at("2026-01-01T00:00:00Z"), &BTreeMap::new()).is_empty());
    }
}
