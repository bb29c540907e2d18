//! The trusted retrieval filter.

use std::collections::BTreeSet;

use serde::Serialize;

use super::access::{Access, Principal, reader_index_term};
use super::chunk::Chunk;
use super::document::{Metadata, metadata_term};
use super::values::{DocId, InvalidValue, Locale, Reader, Scope};

/// What a retrieval may see. Built from the caller's identity by the application, never from
/// model output or request bodies.
///
/// Semantics, which every index adapter implements inside its search (before ranking):
/// - `scopes`: required and non-empty; a chunk matches when its scope is one of them.
/// - `doc_ids`: when set, the chunk's document is one of them.
/// - `locale`: when set, the lower-cased tag is one of the chunk locale's
///   [`match_terms`](Locale::match_terms), so `zh` matches `zh` and `zh-CN`.
/// - `metadata`: every `key = value` pair must equal one of the chunk's metadata
///   [`filter_terms`](Metadata::filter_terms) (scalars compare in canonical text; an array
///   matches when one element does).
/// - `readers`: when set (the caller acts for a [`Principal`]), one of the chunk's
///   [access terms](super::Access::terms) is one of them: the principal's `*`, `user:NAME` and
///   `group:G` terms. Unset, every chunk of the scopes passes (a caller that reads whole scopes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Filter {
    scopes: BTreeSet<Scope>,
    doc_ids: Option<BTreeSet<DocId>>,
    locale: Option<Locale>,
    metadata: BTreeSet<(String, String)>,
    readers: Option<BTreeSet<Reader>>,
}

impl Filter {
    /// A filter for the given scopes; at least one is required, so retrieval never runs
    /// unscoped.
    pub fn for_scopes(scopes: impl IntoIterator<Item = Scope>) -> Result<Self, InvalidValue> {
        let scopes: BTreeSet<Scope> = scopes.into_iter().collect();
        if scopes.is_empty() {
            return Err(InvalidValue::new(
                "filter",
                "",
                "needs at least one scope: retrieval never runs unscoped",
            ));
        }
        Ok(Self {
            scopes,
            doc_ids: None,
            locale: None,
            metadata: BTreeSet::new(),
            readers: None,
        })
    }

    /// A filter for one scope.
    pub fn for_scope(scope: Scope) -> Self {
        Self {
            scopes: BTreeSet::from([scope]),
            doc_ids: None,
            locale: None,
            metadata: BTreeSet::new(),
            readers: None,
        }
    }

    /// Restricts to the documents `principal` may read.
    pub fn for_principal(mut self, principal: &Principal) -> Self {
        self.readers = Some(principal.readers().clone());
        self
    }

    /// The readers a chunk's document must list one of, when the caller acts for a person.
    pub fn readers(&self) -> Option<&BTreeSet<Reader>> {
        self.readers.as_ref()
    }

    /// The reader condition as index terms: a chunk passes when its
    /// [index terms](Access::index_terms) lack [`RESTRICTED_TERM`](super::RESTRICTED_TERM) or hold one of these
    /// (sorted). `None` when there is no reader condition.
    pub fn reader_index_terms(&self) -> Option<Vec<String>> {
        self.readers.as_ref().map(|readers| {
            readers
                .iter()
                .filter(|r| !r.is_everyone())
                .map(reader_index_term)
                .collect()
        })
    }

    /// Restricts to the given documents.
    pub fn with_doc_ids(mut self, ids: impl IntoIterator<Item = DocId>) -> Self {
        self.doc_ids = Some(ids.into_iter().collect());
        self
    }

    /// Restricts to a locale (prefix match on subtags).
    pub fn with_locale(mut self, locale: Locale) -> Self {
        self.locale = Some(locale);
        self
    }

    /// Adds a metadata equality condition.
    pub fn with_metadata(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, InvalidValue> {
        let key = key.into();
        Metadata::check_key(&key)?;
        self.metadata.insert((key, value.into()));
        Ok(self)
    }

    /// The allowed scopes.
    pub fn scopes(&self) -> &BTreeSet<Scope> {
        &self.scopes
    }
    /// The allowed documents, if restricted.
    pub fn doc_ids(&self) -> Option<&BTreeSet<DocId>> {
        self.doc_ids.as_ref()
    }
    /// The locale condition, if any.
    pub fn locale(&self) -> Option<&Locale> {
        self.locale.as_ref()
    }
    /// The lower-cased locale term a chunk must carry, if any.
    pub fn locale_term(&self) -> Option<String> {
        self.locale
            .as_ref()
            .map(|l| l.as_str().to_ascii_lowercase())
    }
    /// The metadata conditions as `(key, value)` pairs.
    pub fn metadata(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    /// The metadata conditions as indexed terms (`key=value`).
    pub fn metadata_terms(&self) -> Vec<String> {
        self.metadata
            .iter()
            .map(|(k, v)| metadata_term(k, v))
            .collect()
    }

    /// The reference semantics: true when `chunk` passes every condition.
    pub fn matches(&self, chunk: &Chunk) -> bool {
        let doc = chunk.doc();
        let metadata_terms = if self.metadata.is_empty() {
            Vec::new()
        } else {
            doc.metadata.filter_terms()
        };
        self.matches_terms(
            chunk.doc_id(),
            &doc.scope,
            &doc.locale.match_terms(),
            &metadata_terms,
        ) && self.admits(&doc.access)
    }

    /// True when the reader condition admits a document of `access`.
    pub fn admits(&self, access: &Access) -> bool {
        self.readers
            .as_ref()
            .is_none_or(|readers| access.readers().iter().any(|r| readers.contains(r)))
    }

    /// The same semantics but the reader condition ([`Filter::admits`]) over
    /// precomputed terms, for adapters that index them: `locale_terms` from
    /// [`Locale::match_terms`], `metadata_terms` (sorted) from [`Metadata::filter_terms`].
    pub fn matches_terms(
        &self,
        doc_id: &DocId,
        scope: &Scope,
        locale_terms: &[String],
        metadata_terms: &[String],
    ) -> bool {
        if !self.scopes.contains(scope) {
            return false;
        }
        if let Some(ids) = &self.doc_ids
            && !ids.contains(doc_id)
        {
            return false;
        }
        if let Some(term) = self.locale_term()
            && !locale_terms.contains(&term)
        {
            return false;
        }
        self.metadata
            .iter()
            .all(|(k, v)| metadata_terms.binary_search(&metadata_term(k, v)).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Document, Source};
    use serde_json::json;
    use std::sync::Arc;

    fn chunk(scope: &str, locale: &str, meta: serde_json::Value) -> Chunk {
        let metadata: Metadata = serde_json::from_value(meta).unwrap();
        let d = Document::builder(DocId::new("d").unwrap(), Source::new("d").unwrap(), "text")
            .scope(Scope::new(scope).unwrap())
            .locale(Locale::new(locale).unwrap())
            .metadata(metadata)
            .build();
        Chunk::new(
            d.id().clone(),
            0,
            "text".into(),
            vec![],
            0,
            Arc::clone(d.attributes()),
        )
    }

    #[test]
    fn scope_is_required_and_enforced() {
        assert!(Filter::for_scopes(Vec::new()).is_err());
        let f = Filter::for_scope(Scope::new("a").unwrap());
        assert!(f.matches(&chunk("a", "en", json!({}))));
        assert!(!f.matches(&chunk("b", "en", json!({}))));
    }

    #[test]
    fn locale_doc_and_metadata_conditions() {
        let c = chunk("a", "zh-CN", json!({"tags": ["x", "y"], "year": 2024}));
        let base = Filter::for_scope(Scope::new("a").unwrap());
        assert!(
            base.clone()
                .with_locale(Locale::new("zh").unwrap())
                .matches(&c)
        );
        assert!(
            !base
                .clone()
                .with_locale(Locale::new("en").unwrap())
                .matches(&c)
        );
        assert!(base.clone().with_metadata("tags", "y").unwrap().matches(&c));
        assert!(
            base.clone()
                .with_metadata("year", "2024")
                .unwrap()
                .matches(&c)
        );
        assert!(!base.clone().with_metadata("tags", "z").unwrap().matches(&c));
        assert!(
            !base
                .clone()
                .with_doc_ids([DocId::new("other").unwrap()])
                .matches(&c)
        );
        assert!(base.with_doc_ids([DocId::new("d").unwrap()]).matches(&c));
    }
}
