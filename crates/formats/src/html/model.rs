//! What reading HTML takes and gives: how a document is read ([`Mode`]) and what it renders
//! to ([`Page`] of [`Block`]s).

/// How a document is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A web page: boilerplate is removed and the main content chosen.
    Page,
    /// A book chapter (EPUB XHTML): the whole body is read, only scripts, styles and the like
    /// are dropped; self-closing XHTML tags (`<a id="x"/>`, `<title/>`) are honoured.
    Chapter,
}

/// A rendered block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A heading of level 1-6.
    Heading(usize, String),
    /// A paragraph; its lines are kept.
    Paragraph(String),
}

/// A parsed document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The `<title>`, whitespace collapsed.
    pub title: Option<String>,
    /// The first `<h1>` of the content (or of the page).
    pub h1: Option<String>,
    /// The `lang` (or `xml:lang`) of `<html>` (else `<body>`), normalised (`zh_CN` → `zh-CN`).
    pub locale: Option<String>,
    /// The content.
    pub blocks: Vec<Block>,
}
