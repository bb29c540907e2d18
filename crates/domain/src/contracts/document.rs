//! Documents and their metadata.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::access::Access;
use super::position::LineBox;
use super::time::Timestamp;
use super::values::{DocId, InvalidValue, Locale, Revision, Scope, Source, Title, sha256_hex};

/// Filterable document metadata: string keys, JSON-like values.
///
/// Keys are 1-128 characters of ASCII letters, digits, `_`, `-` and `.`. Values may be any JSON
/// value; scalars and arrays of scalars can be matched by a [`Filter`](super::Filter), nested
/// objects are stored but are not filterable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "BTreeMap<String, serde_json::Value>")]
pub struct Metadata(BTreeMap<String, serde_json::Value>);

impl Metadata {
    /// An empty metadata map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks that `key` is a valid metadata key.
    pub fn check_key(key: &str) -> Result<(), InvalidValue> {
        if key.is_empty() || key.len() > 128 {
            return Err(InvalidValue::new(
                "metadata key",
                key,
                "must be 1-128 characters",
            ));
        }
        if !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(InvalidValue::new(
                "metadata key",
                key,
                "may contain only ASCII letters, digits and _ - .",
            ));
        }
        Ok(())
    }

    /// Inserts a value, validating the key.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: serde_json::Value,
    ) -> Result<(), InvalidValue> {
        let key = key.into();
        Self::check_key(&key)?;
        self.0.insert(key, value);
        Ok(())
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.0.get(key)
    }

    /// Iterates over entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &serde_json::Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The equality terms a filter can match: `key=value` for every scalar value and for every
    /// scalar element of an array value, with values in their canonical text form (see
    /// [`canonical_text`]). Adapters index these terms verbatim.
    pub fn filter_terms(&self) -> Vec<String> {
        let mut terms = Vec::new();
        for (key, value) in &self.0 {
            match value {
                serde_json::Value::Array(items) => {
                    for item in items {
                        if let Some(text) = canonical_text(item) {
                            terms.push(metadata_term(key, &text));
                        }
                    }
                }
                other => {
                    if let Some(text) = canonical_text(other) {
                        terms.push(metadata_term(key, &text));
                    }
                }
            }
        }
        terms.sort();
        terms.dedup();
        terms
    }
}

impl TryFrom<BTreeMap<String, serde_json::Value>> for Metadata {
    type Error = InvalidValue;
    fn try_from(map: BTreeMap<String, serde_json::Value>) -> Result<Self, Self::Error> {
        for key in map.keys() {
            Self::check_key(key)?;
        }
        Ok(Self(map))
    }
}

/// The canonical text of a scalar JSON value: strings as they are, numbers in JSON notation,
/// booleans as `true`/`false`. `null`, arrays and objects have none.
pub fn canonical_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The indexed term for `key` equal to `text`. Keys cannot contain `=`, so terms are unambiguous.
pub fn metadata_term(key: &str, text: &str) -> String {
    format!("{key}={text}")
}

/// The attributes a document shares with each of its chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocAttributes {
    /// sha256 of the document content.
    pub revision: Revision,
    /// Access scope.
    pub scope: Scope,
    /// Language of the document.
    pub locale: Locale,
    /// Title.
    pub title: Title,
    /// Traceable origin.
    pub source: Source,
    /// Filterable metadata.
    pub metadata: Metadata,
    /// The page count of a document with pages (a PDF): its content then separates pages with
    /// form feeds (`\u{c}`), page `n` being the text after the `n-1`-th, and every chunk knows
    /// its [pages](super::Chunk::pages). Absent for a document without pages. (Named apart
    /// from a chunk's `pages`, which sits beside these attributes in a chunk's record.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_count: Option<u32>,
    /// When the indexed document stops being evidence: resolved by the indexer from the
    /// document's `expires_at` and `ttl` metadata ([`crate::rules::retention`]) when it indexes
    /// it, and stored with every chunk so a hit carries it to the query-time check. Never set
    /// by a loader (so a document's fingerprint does not depend on when it was indexed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Who may read the document inside its scope, and by which rule (absent: everyone who
    /// may read the scope, by no rule). Stored with every chunk, tested inside every search.
    #[serde(default, skip_serializing_if = "Access::is_unruled_open")]
    pub access: Access,
}

/// The metadata key under which a document copied from a document source names itself there
/// (`docs/a.md@3f2c1e0a9b7d`: path at commit; a page's URL): what citations and hits show as
/// its source.
pub const SOURCE_REF_KEY: &str = "source_ref";
/// The metadata key of a copied document's permalink at its source.
pub const SOURCE_URL_KEY: &str = "source_url";

impl DocAttributes {
    /// How people name the document's origin: its reference at the source it was copied from
    /// ([`SOURCE_REF_KEY`]) when it was, else its source path.
    pub fn reference(&self) -> &str {
        match self.metadata.get(SOURCE_REF_KEY) {
            Some(serde_json::Value::String(r)) if !r.is_empty() => r,
            _ => self.source.as_str(),
        }
    }

    /// Where a browser shows the document at its source ([`SOURCE_URL_KEY`]), if anywhere.
    pub fn link(&self) -> Option<&str> {
        match self.metadata.get(SOURCE_URL_KEY) {
            Some(serde_json::Value::String(u)) if !u.is_empty() => Some(u),
            _ => None,
        }
    }
}

/// A document to index.
///
/// The revision is always computed from the content, so a `Document` can never carry a revision
/// that disagrees with its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    id: DocId,
    attributes: Arc<DocAttributes>,
    content: String,
    line_boxes: Vec<LineBox>,
}

impl Document {
    /// Starts building a document. Defaults: scope `default`, locale detected from the content,
    /// empty title and metadata.
    pub fn builder(id: DocId, source: Source, content: impl Into<String>) -> DocumentBuilder {
        DocumentBuilder {
            id,
            source,
            content: content.into(),
            scope: None,
            locale: None,
            title: None,
            metadata: Metadata::new(),
            page_count: None,
            line_boxes: Vec::new(),
            access: Access::everyone(),
        }
    }

    /// Stable identity.
    pub fn id(&self) -> &DocId {
        &self.id
    }

    /// sha256 of the content.
    pub fn revision(&self) -> &Revision {
        &self.attributes.revision
    }

    /// The attributes shared with every chunk.
    pub fn attributes(&self) -> &Arc<DocAttributes> {
        &self.attributes
    }

    /// The full text.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Where the content's lines stand on their pages, ordered by where they start (empty for
    /// a document read without positions).
    pub fn line_boxes(&self) -> &[LineBox] {
        &self.line_boxes
    }

    /// The same document, its attributes saying it expires at `expires_at` (see
    /// [`DocAttributes::expires_at`]).
    pub fn with_expiry(mut self, expires_at: Option<Timestamp>) -> Self {
        if self.attributes.expires_at != expires_at {
            Arc::make_mut(&mut self.attributes).expires_at = expires_at;
        }
        self
    }

    /// The same document, readable by `access` (see [`DocAttributes::access`]).
    pub fn with_access(mut self, access: Access) -> Self {
        if self.attributes.access != access {
            Arc::make_mut(&mut self.attributes).access = access;
        }
        self
    }

    /// A hash of the revision and every attribute that is stored with the chunks (scope, locale,
    /// title, source, metadata, access). The indexer skips a document only when this is unchanged, so a
    /// scope change in front matter is re-indexed even though the content is the same.
    pub fn fingerprint(&self) -> String {
        let attrs = serde_json::to_string(&*self.attributes).unwrap_or_default();
        sha256_hex(format!("{}\n{attrs}", self.id))[..32].to_string()
    }
}

/// Builder for [`Document`].
#[derive(Debug)]
pub struct DocumentBuilder {
    id: DocId,
    source: Source,
    content: String,
    scope: Option<Scope>,
    locale: Option<Locale>,
    title: Option<Title>,
    metadata: Metadata,
    page_count: Option<u32>,
    line_boxes: Vec<LineBox>,
    access: Access,
}

impl DocumentBuilder {
    /// Sets who may read the document inside its scope (default: everyone who may read it).
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Declares where the content's lines stand on their pages. Boxes that are not valid or
    /// reach past the content are dropped; the rest are ordered by where they start.
    pub fn line_boxes(mut self, boxes: Vec<LineBox>) -> Self {
        let chars = self.content.chars().count();
        let mut boxes: Vec<LineBox> = boxes
            .into_iter()
            .filter(|b| b.is_valid() && b.end <= chars)
            .collect();
        boxes.sort_by_key(|b| (b.start, b.end));
        self.line_boxes = boxes;
        self
    }

    /// Declares the content paginated into `pages` pages separated by form feeds (see
    /// [`DocAttributes::page_count`]).
    pub fn page_count(mut self, pages: u32) -> Self {
        self.page_count = Some(pages);
        self
    }

    /// Sets the access scope.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Sets the locale (otherwise detected from the content).
    pub fn locale(mut self, locale: Locale) -> Self {
        self.locale = Some(locale);
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: Title) -> Self {
        self.title = Some(title);
        self
    }

    /// Sets the metadata.
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Builds the document, computing its revision.
    pub fn build(self) -> Document {
        let revision = Revision::of_content(&self.content);
        let locale = self.locale.unwrap_or_else(|| Locale::detect(&self.content));
        Document {
            id: self.id,
            attributes: Arc::new(DocAttributes {
                revision,
                scope: self.scope.unwrap_or_else(Scope::default_scope),
                locale,
                title: self
                    .title
                    .unwrap_or_else(|| Title::new("").unwrap_or_else(|_| unreachable!())),
                source: self.source,
                metadata: self.metadata,
                page_count: self.page_count,
                expires_at: None,
                access: self.access,
            }),
            content: self.content,
            line_boxes: self.line_boxes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(content: &str, scope: &str) -> Document {
        Document::builder(
            DocId::new("a.md").unwrap(),
            Source::new("kb/a.md").unwrap(),
            content,
        )
        .scope(Scope::new(scope).unwrap())
        .build()
    }

    #[test]
    fn revision_follows_content_and_fingerprint_follows_attributes() {
        let a = doc("hello", "public");
        let b = doc("hello", "secret");
        assert_eq!(a.revision(), b.revision());
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(doc("hello!", "public").revision(), a.revision());
    }

    #[test]
    fn metadata_terms_cover_scalars_and_arrays() {
        let mut m = Metadata::new();
        m.insert("tags", json!(["rust", "rag", {"x": 1}])).unwrap();
        m.insert("year", json!(2024)).unwrap();
        m.insert("draft", json!(false)).unwrap();
        m.insert("nested", json!({"a": 1})).unwrap();
        assert_eq!(
            m.filter_terms(),
            vec!["draft=false", "tags=rag", "tags=rust", "year=2024"]
        );
        assert!(m.insert("bad key", json!(1)).is_err());
        let parsed: Result<Metadata, _> = serde_json::from_str(r#"{"a b": 1}"#);
        assert!(parsed.is_err());
    }
}
