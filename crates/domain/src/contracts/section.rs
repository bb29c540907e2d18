//! Sections: the part of a document under one heading path, with a stable ID.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::values::{DocId, InvalidValue, sha256_hex};

/// The ID of a section of a document: 16 lower-case hex digits of the sha256 of the document ID
/// and the section's heading path (outermost first, each heading with its whitespace collapsed).
///
/// A function of those two alone: an edit anywhere else in the document keeps it, a renamed
/// heading (or one moved under another parent) makes a new one, and the empty path is the whole
/// document. Sections with the same heading path in one document (two `## Example` under one
/// parent) share an ID and are read together.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SectionId(Arc<str>);

/// A heading as a section ID sees it: trimmed, inner whitespace collapsed to one space.
pub fn normalise_heading(heading: &str) -> String {
    heading.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl SectionId {
    /// The ID of the section of `doc_id` under `heading_path` (outermost first).
    pub fn derive<S: AsRef<str>>(doc_id: &DocId, heading_path: &[S]) -> Self {
        let mut key = String::from("zhiku-section-v1\u{0}");
        key.push_str(doc_id.as_str());
        for heading in heading_path {
            key.push('\u{0}');
            key.push_str(&normalise_heading(heading.as_ref()));
        }
        Self(Arc::from(&sha256_hex(key)[..16]))
    }

    /// Parses and validates a section ID (16 lower-case hex digits).
    pub fn parse(value: &str) -> Result<Self, InvalidValue> {
        if value.len() != 16
            || !value
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(InvalidValue::new(
                "section id",
                value,
                "must be 16 lower-case hex digits",
            ));
        }
        Ok(Self(Arc::from(value)))
    }

    /// The text of the ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SectionId {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SectionId> for String {
    fn from(value: SectionId) -> Self {
        value.0.to_string()
    }
}

impl fmt::Display for SectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SectionId({:?})", &*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(doc: &str, path: &[&str]) -> SectionId {
        SectionId::derive(&DocId::new(doc).unwrap(), path)
    }

    #[test]
    fn ids_are_short_hex_and_parse_back() {
        let s = id("guide.md", &["Install", "Linux"]);
        assert_eq!(s.as_str().len(), 16);
        assert_eq!(SectionId::parse(s.as_str()).unwrap(), s);
        assert!(SectionId::parse("ABCDEF0123456789").is_err());
        assert!(SectionId::parse("abc").is_err());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<SectionId>(&json).unwrap(), s);
    }

    #[test]
    fn ids_depend_on_document_and_whole_path_only() {
        let base = id("a.md", &["Install", "Linux"]);
        assert_eq!(base, id("a.md", &["Install", "Linux"]));
        // Whitespace inside a heading is not a rename.
        assert_eq!(base, id("a.md", &[" Install ", "Linux"]));
        assert_ne!(base, id("a.md", &["Install", "Linux x86"]));
        assert_ne!(base, id("b.md", &["Install", "Linux"]));
        // The same heading under another parent is another section.
        assert_ne!(base, id("a.md", &["Setup", "Linux"]));
        assert_ne!(base, id("a.md", &["Install"]));
        // Path parts cannot be re-split into another path.
        assert_ne!(id("a.md", &["a b"]), id("a.md", &["a", "b"]));
        assert_ne!(id("a.md", &[]), id("a.md", &[""]));
    }
}
