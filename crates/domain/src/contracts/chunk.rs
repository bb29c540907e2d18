//! Chunks: the unit that is embedded, indexed, retrieved and cited.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::document::DocAttributes;
use super::position::{LineBox, PageBox};
use super::section::SectionId;
use super::values::{DocId, InvalidValue, sha256_hex};

/// `"{doc_id}:{start}:{first 16 hex of sha256(content)}"`.
///
/// Never random and never a counter: an unchanged window of an unchanged document keeps its ID
/// across re-indexing, whatever happens elsewhere in the document.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChunkId(Arc<str>);

impl ChunkId {
    /// The ID of the chunk of `doc_id` that starts at character `start` and has content hash
    /// `sha256_hex`.
    pub fn derive(doc_id: &DocId, start: usize, sha256_hex: &str) -> Self {
        let prefix = sha256_hex.get(..16).unwrap_or(sha256_hex);
        Self(Arc::from(format!("{doc_id}:{start}:{prefix}")))
    }

    /// Parses and validates a chunk ID.
    pub fn parse(value: &str) -> Result<Self, InvalidValue> {
        let mut parts = value.rsplitn(3, ':');
        let hash = parts.next().unwrap_or_default();
        let start = parts.next().unwrap_or_default();
        let doc = parts.next().unwrap_or_default();
        if hash.len() != 16 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(InvalidValue::new(
                "chunk id",
                value,
                "must end with 16 lower-case hex digits",
            ));
        }
        if start.is_empty() || !start.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InvalidValue::new(
                "chunk id",
                value,
                "must be doc_id:start:hash with a numeric start",
            ));
        }
        DocId::new(doc)
            .map_err(|e| InvalidValue::new("chunk id", value, format!("bad document id: {e}")))?;
        Ok(Self(Arc::from(value)))
    }

    /// The text of the ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The chunk's first character offset in its document, as the ID records it (0 for a
    /// chunk that opens its document).
    pub fn start(&self) -> usize {
        // `parse` and `derive` guarantee a numeric middle part.
        self.0
            .rsplit(':')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_default()
    }

    /// The document part of the ID.
    pub fn doc_part(&self) -> &str {
        let mut parts = self.0.rsplitn(3, ':');
        parts.next();
        parts.next();
        parts.next().unwrap_or_default()
    }
}

impl TryFrom<String> for ChunkId {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<ChunkId> for String {
    fn from(value: ChunkId) -> Self {
        value.0.to_string()
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChunkId({:?})", &*self.0)
    }
}

impl AsRef<str> for ChunkId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A window of a document's content with everything needed to filter, rank and cite it.
///
/// Offsets are in characters (Unicode scalar values) of the document content, end exclusive.
/// Invariants, checked by [`Chunk::new`]: the content has exactly `end - start` characters, its
/// sha256 is `sha256`, and `chunk_id` is derived from `doc_id`, `start` and `sha256`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ChunkRecord", into = "ChunkRecord")]
pub struct Chunk {
    chunk_id: ChunkId,
    doc_id: DocId,
    content: String,
    sha256: String,
    start: usize,
    end: usize,
    heading_path: Vec<String>,
    section: SectionId,
    ordinal: u32,
    pages: Option<PageSpan>,
    table_header: Option<String>,
    boxes: Vec<LineBox>,
    doc: Arc<DocAttributes>,
}

/// The pages a chunk lies on: `first..=last`, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "(u32, u32)", into = "(u32, u32)")]
pub struct PageSpan {
    first: u32,
    last: u32,
}

impl PageSpan {
    /// A span of pages; `first` is at least 1 and `last` not before it.
    pub fn new(first: u32, last: u32) -> Result<Self, InvalidValue> {
        if first == 0 || last < first {
            return Err(InvalidValue::new(
                "page span",
                &format!("{first}-{last}"),
                "pages count from 1 and the last is not before the first",
            ));
        }
        Ok(Self { first, last })
    }
    /// The first page.
    pub fn first(self) -> u32 {
        self.first
    }
    /// The last page (equal to `first` for a chunk on one page).
    pub fn last(self) -> u32 {
        self.last
    }
}

impl fmt::Display for PageSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "p. {}", self.first)
        } else {
            write!(f, "pp. {}-{}", self.first, self.last)
        }
    }
}

impl TryFrom<(u32, u32)> for PageSpan {
    type Error = InvalidValue;
    fn try_from((first, last): (u32, u32)) -> Result<Self, Self::Error> {
        Self::new(first, last)
    }
}

impl From<PageSpan> for (u32, u32) {
    fn from(p: PageSpan) -> Self {
        (p.first, p.last)
    }
}

/// The serialised form of a [`Chunk`]; converting it back validates every invariant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// See [`Chunk::chunk_id`].
    pub chunk_id: ChunkId,
    /// See [`Chunk::doc_id`].
    pub doc_id: DocId,
    /// See [`Chunk::content`].
    pub content: String,
    /// See [`Chunk::sha256`].
    pub sha256: String,
    /// See [`Chunk::start`].
    pub start: usize,
    /// See [`Chunk::end`].
    pub end: usize,
    /// See [`Chunk::heading_path`].
    pub heading_path: Vec<String>,
    /// See [`Chunk::section`]; a record written before sections had IDs lacks it, and it is
    /// derived from the heading path on reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<SectionId>,
    /// See [`Chunk::ordinal`].
    pub ordinal: u32,
    /// See [`Chunk::pages`]; absent for a document without pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageSpan>,
    /// See [`Chunk::table_header`]; absent for a chunk that continues no table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_header: Option<String>,
    /// See [`Chunk::boxes`]; absent for a chunk of a document read without positions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<LineBox>,
    /// See [`Chunk::doc`].
    #[serde(flatten)]
    pub doc: DocAttributes,
}

impl Chunk {
    /// Builds a chunk from its parts, deriving the hash and ID from the content.
    pub fn new(
        doc_id: DocId,
        start: usize,
        content: String,
        heading_path: Vec<String>,
        ordinal: u32,
        doc: Arc<DocAttributes>,
    ) -> Self {
        let sha256 = sha256_hex(&content);
        let end = start + content.chars().count();
        let chunk_id = ChunkId::derive(&doc_id, start, &sha256);
        let section = SectionId::derive(&doc_id, &heading_path);
        Self {
            chunk_id,
            doc_id,
            content,
            sha256,
            start,
            end,
            heading_path,
            section,
            ordinal,
            pages: None,
            table_header: None,
            boxes: Vec::new(),
            doc,
        }
    }

    /// Returns this chunk with the boxes of its lines on their pages: those of `boxes` that
    /// share a character with it (same content, same ID).
    pub fn with_boxes(mut self, boxes: &[LineBox]) -> Self {
        self.boxes = boxes
            .iter()
            .filter(|b| b.overlaps(self.start, self.end) && b.is_valid())
            .copied()
            .collect();
        self
    }

    /// Returns this chunk as continuing a table whose header rows (above the chunk, not in its
    /// content) are `header`: the header is indexed, embedded and shown with the chunk, so
    /// the chunk's hash and ID cover it (see [`Chunk::sha256`]). An empty header is none.
    pub fn with_table_header(mut self, header: String) -> Self {
        let header = header.trim_end().to_string();
        if header.is_empty() {
            return self;
        }
        self.table_header = Some(header);
        self.sha256 = sha256_hex(self.indexed_text().as_bytes());
        self.chunk_id = ChunkId::derive(&self.doc_id, self.start, &self.sha256);
        self
    }

    /// Returns this chunk as lying on `pages` of its document (same content, same ID).
    pub fn with_pages(mut self, pages: PageSpan) -> Self {
        self.pages = Some(pages);
        self
    }

    /// Rebuilds a chunk from stored parts, checking every invariant.
    pub fn from_record(record: ChunkRecord) -> Result<Self, InvalidValue> {
        // A stored start so large that its end cannot be counted is refused, not overflowed.
        if record
            .start
            .checked_add(record.content.chars().count())
            .is_none()
        {
            return Err(InvalidValue::new(
                "chunk",
                record.chunk_id.as_str(),
                "start + content length overflows",
            ));
        }
        let chunk = Self::new(
            record.doc_id,
            record.start,
            record.content,
            record.heading_path,
            record.ordinal,
            Arc::new(record.doc),
        );
        let chunk = match record.pages {
            Some(pages) => chunk.with_pages(pages),
            None => chunk,
        };
        let chunk = match record.table_header {
            Some(header) => chunk.with_table_header(header),
            None => chunk,
        };
        let chunk = chunk.with_boxes(&record.boxes);
        if chunk.sha256 != record.sha256 {
            return Err(InvalidValue::new(
                "chunk",
                record.chunk_id.as_str(),
                "sha256 does not match the content",
            ));
        }
        if chunk.end != record.end {
            return Err(InvalidValue::new(
                "chunk",
                record.chunk_id.as_str(),
                "end - start does not match the content length",
            ));
        }
        if chunk.chunk_id != record.chunk_id {
            return Err(InvalidValue::new(
                "chunk",
                record.chunk_id.as_str(),
                "chunk id does not match doc id, start and content hash",
            ));
        }
        if record.section.is_some_and(|s| s != chunk.section) {
            return Err(InvalidValue::new(
                "chunk",
                record.chunk_id.as_str(),
                "section id does not match doc id and heading path",
            ));
        }
        Ok(chunk)
    }

    /// The serialisable record of this chunk.
    pub fn to_record(&self) -> ChunkRecord {
        ChunkRecord {
            chunk_id: self.chunk_id.clone(),
            doc_id: self.doc_id.clone(),
            content: self.content.clone(),
            sha256: self.sha256.clone(),
            start: self.start,
            end: self.end,
            heading_path: self.heading_path.clone(),
            section: Some(self.section.clone()),
            ordinal: self.ordinal,
            pages: self.pages,
            table_header: self.table_header.clone(),
            boxes: self.boxes.clone(),
            doc: (*self.doc).clone(),
        }
    }

    /// Returns this chunk carrying `doc` as its document attributes (same content, same ID).
    pub fn with_attributes(mut self, doc: Arc<DocAttributes>) -> Self {
        self.doc = doc;
        self
    }

    /// The chunk's ID.
    pub fn chunk_id(&self) -> &ChunkId {
        &self.chunk_id
    }
    /// The document it belongs to.
    pub fn doc_id(&self) -> &DocId {
        &self.doc_id
    }
    /// The text of the window.
    pub fn content(&self) -> &str {
        &self.content
    }
    /// The header rows of the table this chunk continues, when its content starts inside a
    /// table's body below them (a Markdown pipe table: the header row and its delimiter row).
    pub fn table_header(&self) -> Option<&str> {
        self.table_header.as_deref()
    }
    /// What is indexed, embedded, reranked and read as this chunk: its
    /// [table header](Self::table_header) when it has one, a line break, then its content.
    /// Without a header, the content itself.
    pub fn indexed_text(&self) -> std::borrow::Cow<'_, str> {
        match &self.table_header {
            Some(header) => format!("{header}\n{}", self.content).into(),
            None => self.content.as_str().into(),
        }
    }
    /// Full sha256 (hex) of the [indexed text](Self::indexed_text): the content's, unless the
    /// chunk carries a table header.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
    /// First character (inclusive) in the document content.
    pub fn start(&self) -> usize {
        self.start
    }
    /// Last character (exclusive) in the document content.
    pub fn end(&self) -> usize {
        self.end
    }
    /// Number of characters.
    pub fn char_len(&self) -> usize {
        self.end - self.start
    }
    /// The Markdown headings above the chunk, outermost first.
    pub fn heading_path(&self) -> &[String] {
        &self.heading_path
    }
    /// The section the chunk sits in: the ID of its document and heading path (the same for
    /// every chunk under those headings; the empty path's section is the whole document).
    pub fn section(&self) -> &SectionId {
        &self.section
    }
    /// Position among the document's chunks, from 0.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }
    /// The pages of its document the chunk's text lies on, for a document with pages (a PDF);
    /// a chunk that runs over a page break says so with `first < last`.
    pub fn pages(&self) -> Option<PageSpan> {
        self.pages
    }
    /// Where the chunk's lines stand on their pages (a PDF's or a picture's), ordered by where
    /// they start in the document; empty when its document was read without positions.
    pub fn boxes(&self) -> &[LineBox] {
        &self.boxes
    }
    /// The boxes of the lines holding characters `start..end` of the chunk's content
    /// (counted in characters from the chunk's start).
    pub fn boxes_of(&self, start: usize, end: usize) -> Vec<PageBox> {
        let (start, end) = (self.start + start, self.start + end);
        self.boxes
            .iter()
            .filter(|b| b.overlaps(start, end))
            .map(|b| b.at)
            .collect()
    }
    /// The document attributes (revision, scope, locale, title, source, metadata).
    pub fn doc(&self) -> &Arc<DocAttributes> {
        &self.doc
    }
}

impl TryFrom<ChunkRecord> for Chunk {
    type Error = InvalidValue;
    fn try_from(record: ChunkRecord) -> Result<Self, Self::Error> {
        Self::from_record(record)
    }
}

impl From<Chunk> for ChunkRecord {
    fn from(chunk: Chunk) -> Self {
        chunk.to_record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Document, Source};

    #[test]
    fn chunk_id_round_trips_and_validates() {
        let doc = DocId::new("guides/a:b.md").unwrap();
        let id = ChunkId::derive(&doc, 42, &sha256_hex("x"));
        assert_eq!(id.as_str(), "guides/a:b.md:42:2d711642b726b044");
        assert_eq!(ChunkId::parse(id.as_str()).unwrap(), id);
        assert_eq!(id.doc_part(), "guides/a:b.md");
        assert_eq!(id.start(), 42);
        assert!(ChunkId::parse("doc:1:XYZ").is_err());
        assert!(ChunkId::parse("doc:x:2d711642b726b044").is_err());
        assert!(ChunkId::parse(":1:2d711642b726b044").is_err());
    }

    #[test]
    fn a_chunk_of_a_document_with_pages_round_trips_with_its_pages() {
        let d = Document::builder(
            DocId::new("a.pdf").unwrap(),
            Source::new("a.pdf").unwrap(),
            "one\n\n\u{c}\n\ntwo",
        )
        .page_count(2)
        .build();
        let chunk = Chunk::new(
            d.id().clone(),
            0,
            "one".into(),
            vec![],
            0,
            d.attributes().clone(),
        )
        .with_pages(PageSpan::new(1, 2).unwrap());
        let json = serde_json::to_string(&chunk).unwrap();
        let back: Chunk = serde_json::from_str(&json).unwrap();
        assert_eq!(back, chunk);
        assert_eq!(back.pages(), Some(PageSpan::new(1, 2).unwrap()));
        assert_eq!(back.doc().page_count, Some(2));
        assert!(PageSpan::new(0, 1).is_err() && PageSpan::new(3, 2).is_err());
        assert!(serde_json::from_str::<PageSpan>("[2, 1]").is_err());
    }

    #[test]
    fn records_are_validated() {
        let d = Document::builder(
            DocId::new("d").unwrap(),
            Source::new("d").unwrap(),
            "hello world",
        )
        .build();
        let chunk = Chunk::new(
            d.id().clone(),
            0,
            "hello".into(),
            vec![],
            0,
            d.attributes().clone(),
        );
        let json = serde_json::to_string(&chunk).unwrap();
        let back: Chunk = serde_json::from_str(&json).unwrap();
        assert_eq!(back, chunk);
        let tampered = json.replace("\"content\":\"hello\"", "\"content\":\"hellO\"");
        assert!(serde_json::from_str::<Chunk>(&tampered).is_err());
        // A start whose end cannot be counted is refused, never overflowed.
        let far = json.replace("\"start\":0", &format!("\"start\":{}", usize::MAX - 2));
        assert_ne!(far, json);
        let err = serde_json::from_str::<Chunk>(&far).unwrap_err().to_string();
        assert!(err.contains("overflows"), "{err}");
    }

    #[test]
    fn a_record_without_a_section_reads_with_the_section_of_its_heading_path() {
        let d = Document::builder(
            DocId::new("d").unwrap(),
            Source::new("d").unwrap(),
            "# A\n\nx",
        )
        .build();
        let chunk = Chunk::new(
            d.id().clone(),
            0,
            "# A\n\nx".into(),
            vec!["A".into()],
            0,
            d.attributes().clone(),
        );
        let mut value = serde_json::to_value(&chunk).unwrap();
        assert_eq!(value["section"], chunk.section().as_str());
        // A store written before section IDs: the field is absent.
        value.as_object_mut().unwrap().remove("section");
        let old: Chunk = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(old.section(), chunk.section());
        assert_eq!(old.chunk_id(), chunk.chunk_id());
        // A section that does not belong to the heading path is refused.
        value["section"] = SectionId::derive(d.id(), &["B"]).as_str().into();
        assert!(serde_json::from_value::<Chunk>(value).is_err());
    }
}
