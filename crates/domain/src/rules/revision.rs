//! The revision re-check: evidence must still be true at the source.

use serde::Serialize;

use crate::contracts::{Chunk, Filter, Revision};
use crate::ports::SourceRecord;

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
}

impl DropReason {
    /// A short code: `stale_revision`, `deleted` or `not_visible`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::StaleRevision { .. } => "stale_revision",
            Self::Deleted => "deleted",
            Self::NotVisible => "not_visible",
        }
    }
}

/// Checks one retrieved chunk against its document's state at the source. `Ok` keeps it.
pub fn check(
    chunk: &Chunk,
    source: Option<&SourceRecord>,
    filter: &Filter,
) -> Result<(), DropReason> {
    let Some(record) = source else {
        return Err(DropReason::Deleted);
    };
    if !record.visible || !filter.scopes().contains(&record.scope) {
        return Err(DropReason::NotVisible);
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
        let d = Document::builder(DocId::new("d").unwrap(), Source::new("d").unwrap(), "v1")
            .scope(Scope::new("a").unwrap())
            .build();
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
        assert_eq!(check(&c, Some(&record("v1", "a", true)), &f), Ok(()));
        assert_eq!(check(&c, None, &f), Err(DropReason::Deleted));
        assert_eq!(
            check(&c, Some(&record("v1", "a", false)), &f),
            Err(DropReason::NotVisible)
        );
        assert_eq!(
            check(&c, Some(&record("v1", "b", true)), &f),
            Err(DropReason::NotVisible)
        );
        let stale = check(&c, Some(&record("v2", "a", true)), &f).unwrap_err();
        assert_eq!(stale.code(), "stale_revision");
    }
}
