//! The revision re-check: evidence must still be true at the source.

use serde::Serialize;

use crate::contracts::SourceRecord;
use crate::contracts::{Chunk, Filter, Revision, Timestamp};

/// Why a retrieved chunk was dropped after retrieval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DropReason {
    /// The source holds another revision of the document: the indexed text is out of date.
    StaleRevision {
        /// Revision stored with the chunk.
        indexed: Revision,
        /// Revision at the source now.
        current: Revision,
    },
    /// The document no longer exists at the source.
    Deleted,
    /// The source hides the document, or moved it to a scope the caller may not see.
    NotVisible,
    /// The document expired (its `expires_at`, or its `ttl` after it was indexed): it is no
    /// evidence any more, even before a sweep removes it.
    Expired {
        /// When it expired.
        expires_at: Timestamp,
    },
}

impl DropReason {
    /// A short code: `stale_revision`, `deleted`, `not_visible` or `expired`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::StaleRevision { .. } => "stale_revision",
            Self::Deleted => "deleted",
            Self::NotVisible => "not_visible",
            Self::Expired { .. } => "expired",
        }
    }
}

/// Checks one retrieved chunk against its document's state at the source and, when `now` is
/// given, against the expiry stored with it (see [`crate::rules::retention`]). `Ok` keeps it.
/// A document gone or invisible says so first (an expiry is no reason to reveal anything).
pub fn check(
    chunk: &Chunk,
    source: Option<&SourceRecord>,
    filter: &Filter,
    now: Option<Timestamp>,
) -> Result<(), DropReason> {
    let Some(record) = source else {
        return Err(DropReason::Deleted);
    };
    if !record.visible || !filter.scopes().contains(&record.scope) {
        return Err(DropReason::NotVisible);
    }
    if let (Some(now), Some(expires_at)) = (now, chunk.doc().expires_at)
        && expires_at <= now
    {
        return Err(DropReason::Expired { expires_at });
    }
    if record.revision != chunk.doc().revision {
        return Err(DropReason::StaleRevision {
            indexed: chunk.doc().revision.clone(),
            current: record.revision.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DocId, Document, Scope, Source};
    use std::sync::Arc;

    fn chunk() -> Chunk {
        chunk_expiring(None)
    }

    fn chunk_expiring(expires_at: Option<Timestamp>) -> Chunk {
        let d = Document::builder(DocId::new("d").unwrap(), Source::new("d").unwrap(), "v1")
            .scope(Scope::new("a").unwrap())
            .build()
            .with_expiry(expires_at);
        Chunk::new(
            d.id().clone(),
            0,
            "v1".into(),
            vec![],
            0,
            Arc::clone(d.attributes()),
        )
    }

    fn record(content: &str, scope: &str, visible: bool) -> SourceRecord {
        SourceRecord {
            revision: Revision::of_content(content),
            scope: Scope::new(scope).unwrap(),
            visible,
        }
    }

    #[test]
    fn current_visible_chunks_pass_and_others_drop_with_reason() {
        let c = chunk();
        let f = Filter::for_scope(Scope::new("a").unwrap());
        assert_eq!(check(&c, Some(&record("v1", "a", true)), &f, None), Ok(()));
        assert_eq!(check(&c, None, &f, None), Err(DropReason::Deleted));
        assert_eq!(
            check(&c, Some(&record("v1", "a", false)), &f, None),
            Err(DropReason::NotVisible)
        );
        assert_eq!(
            check(&c, Some(&record("v1", "b", true)), &f, None),
            Err(DropReason::NotVisible)
        );
        let stale = check(&c, Some(&record("v2", "a", true)), &f, None).unwrap_err();
        assert_eq!(stale.code(), "stale_revision");
    }

    #[test]
    fn an_expired_chunk_drops_as_expired_at_and_after_its_instant_only() {
        let at = |s: &str| Timestamp::parse(s).unwrap();
        let c = chunk_expiring(Some(at("2026-01-02T00:00:00Z")));
        let f = Filter::for_scope(Scope::new("a").unwrap());
        let r = record("v1", "a", true);
        assert_eq!(
            check(&c, Some(&r), &f, Some(at("2026-01-01T23:59:59Z"))),
            Ok(())
        );
        let e = check(&c, Some(&r), &f, Some(at("2026-01-02T00:00:00Z"))).unwrap_err();
        assert_eq!(e.code(), "expired");
        // Without a time there is nothing to judge an expiry by.
        assert_eq!(check(&c, Some(&r), &f, None), Ok(()));
        // A document gone says so before its expiry does.
        assert_eq!(
            check(&c, None, &f, Some(at("2030-01-01T00:00:00Z"))),
            Err(DropReason::Deleted)
        );
        assert_eq!(
            check(&chunk(), Some(&r), &f, Some(at("2030-01-01T00:00:00Z"))),
            Ok(())
        );
    }
}
