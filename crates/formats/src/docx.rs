//! Word 2007+ (`.docx`): the body of `word/document.xml` in reading order.
//!
//! Kept: paragraphs; headings (paragraph styles named `heading 1`…`heading 9` or `Title`, styles
//! based on them, and `w:outlineLvl` in the paragraph's or a style's properties); list items
//! (`- ` for bullets, `1. ` `2. ` … for numbered levels, two spaces of indent per level); tables
//! (a row per line, cells joined by ` | `, a table as one paragraph block); text boxes; the
//! displayed result of fields; inserted text of tracked changes; footnotes and endnotes (a
//! `[^n]` marker where they are referenced, numbered in order of reference, and their text
//! under a closing heading `脚注` — or `Notes` when the body is not mostly Chinese/Japanese —
//! as paragraphs `[^n] text`).
//!
//! Dropped: headers and footers, comments, deleted text, field codes, symbols (`w:sym`),
//! images and charts, the alternative (fallback) content of `mc:AlternateContent`, the
//! automatic numbers of headings (`第一章` typed as text stays; a number Word generates for a
//! heading style does not), list formats beyond bullet/number (every numbered format — roman,
//! letters, `一、` — is written with arabic numbers).
//!
//! Title: `dc:title` of `docProps/core.xml`, else the first paragraph in the `Title` style.
//! Locale: `dc:language`, else the default `w:lang` of `word/styles.xml` (its `w:eastAsia`
//! value when the body is mostly Chinese/Japanese, its `w:val` otherwise).
//!
//! This module also holds the small XML tree and package helpers the PowerPoint and Excel
//! extractors share.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use anyhow::{Result, anyhow, bail};
use quick_xml::events::Event;

use crate::extracted::Extracted;
use crate::limits::Limits;
use crate::package::Package;
use crate::text_builder::{TextBuilder, one_line};

/// Extracts a docx file.
pub fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    let mut pkg = Package::open(bytes, limits)?;
    let document = read_xml(&mut pkg, "word/document.xml", DOCUMENT_SKIP, limits)?
        .ok_or_else(|| anyhow!("damaged Word document: word/document.xml is missing"))?;
    let styles = match read_xml(&mut pkg, "word/styles.xml", &[], limits)? {
        Some(node) => Styles::from_xml(&node),
        None => Styles::default(),
    };
    let numbering = match read_xml(&mut pkg, "word/numbering.xml", &[], limits)? {
        Some(node) => Numbering::from_xml(&node),
        None => Numbering::default(),
    };
    let mut notes = HashMap::new();
    for (kind, part) in [
        (NoteKind::Foot, "word/footnotes.xml"),
        (NoteKind::End, "word/endnotes.xml"),
    ] {
        if let Some(node) = read_xml(&mut pkg, part, DOCUMENT_SKIP, limits)? {
            collect_notes(&node, kind, &mut notes);
        }
    }
    let (core_title, core_language) = core_properties(&mut pkg, limits)?;
    limits.check_time()?;

    let body = document
        .child("body")
        .ok_or_else(|| anyhow!("damaged Word document: word/document.xml has no w:body"))?;
    let mut walker = Walker {
        limits,
        styles: &styles,
        numbering: &numbering,
        out: TextBuilder::new(limits),
        list: Vec::new(),
        counters: HashMap::new(),
        fields: Vec::new(),
        notes: &notes,
        note_order: Vec::new(),
        note_numbers: HashMap::new(),
        paragraphs: 0,
        title: None,
    };
    walker.blocks(body)?;
    walker.flush_list()?;
    walker.write_notes()?;

    let cjk = mostly_cjk(walker.out.as_str());
    let title = core_title.or(walker.title.take());
    let locale = core_language.or_else(|| {
        if cjk {
            styles.east_asia_lang.clone().or(styles.lang.clone())
        } else {
            styles.lang.clone()
        }
    });
    Ok(Extracted {
        text: walker.out.finish(),
        title,
        locale,
        pages: None,
        synthetic_headings: false,
    })
}

/// Elements of the document, footnote and endnote parts the extractor never reads: dropped
/// while parsing, which keeps the tree small (run properties are most of a document's XML).
const DOCUMENT_SKIP: &[&str] = &[
    "rPr",
    "sectPr",
    "tblPr",
    "tblGrid",
    "trPr",
    "tcPr",
    "bookmarkStart",
    "bookmarkEnd",
    "proofErr",
    "lastRenderedPageBreak",
    "del",
    "delText",
    "moveFrom",
    "instrText",
    "commentRangeStart",
    "commentRangeEnd",
    "commentReference",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NoteKind {
    Foot,
    End,
}

fn collect_notes(root: &Node, kind: NoteKind, notes: &mut HashMap<(NoteKind, String), Node>) {
    for item in &root.children {
        let Item::Node(note) = item else { continue };
        if !matches!(note.name.as_str(), "footnote" | "endnote") {
            continue;
        }
        if matches!(
            note.attr("type"),
            Some("separator" | "continuationSeparator" | "continuationNotice")
        ) {
            continue;
        }
        if let Some(id) = note.attr("id") {
            notes.insert((kind, id.to_string()), note.clone());
        }
    }
}

struct Walker<'a> {
    limits: &'a Limits,
    styles: &'a Styles,
    numbering: &'a Numbering,
    out: TextBuilder,
    /// Consecutive list items, written as one block.
    list: Vec<String>,
    /// List counters per numbering instance, one per level.
    counters: HashMap<String, [i64; 9]>,
    /// Open complex fields: `true` while in the field code (before `separate`).
    fields: Vec<bool>,
    notes: &'a HashMap<(NoteKind, String), Node>,
    note_order: Vec<(NoteKind, String)>,
    note_numbers: HashMap<(NoteKind, String), usize>,
    paragraphs: usize,
    title: Option<String>,
}

impl Walker<'_> {
    fn blocks(&mut self, node: &Node) -> Result<()> {
        for item in &node.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "p" => self.paragraph(child)?,
                "tbl" => {
                    self.flush_list()?;
                    let mut rows = Vec::new();
                    self.table_rows(child, &mut rows)?;
                    self.out.paragraph(&rows.join("\n"))?;
                }
                "sdt" | "sdtContent" | "customXml" | "ins" | "moveTo" | "smartTag" => {
                    self.blocks(child)?
                }
                "AlternateContent" => {
                    if let Some(choice) = child.child("Choice") {
                        self.blocks(choice)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn tick(&mut self) -> Result<()> {
        self.paragraphs += 1;
        if self.paragraphs.is_multiple_of(200) {
            self.limits.check_time()?;
        }
        Ok(())
    }

    fn paragraph(&mut self, p: &Node) -> Result<()> {
        self.tick()?;
        let info = self.styles.paragraph(p);
        let mut text = String::new();
        self.inline(p, &mut text, false);
        self.end_paragraph_fields();
        let text = text.trim_matches(|c: char| c == '\n' || c == ' ');
        if let Some(level) = info.heading {
            self.flush_list()?;
            let line = one_line(text);
            if info.is_title && self.title.is_none() && !line.is_empty() {
                self.title = Some(line.clone());
            }
            return self.out.heading(level, &line);
        }
        if let Some((num_id, ilvl)) = info.list {
            let prefix = self.list_prefix(&num_id, ilvl);
            if !text.trim().is_empty() {
                let indent = "  ".repeat(usize::from(ilvl));
                let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                let mut item = format!("{indent}{prefix}{}", lines.next().unwrap_or("").trim());
                let pad = " ".repeat(indent.len() + prefix.chars().count());
                for line in lines {
                    item.push('\n');
                    item.push_str(&pad);
                    item.push_str(line.trim());
                }
                self.list.push(item);
            }
            return Ok(());
        }
        self.flush_list()?;
        self.out.paragraph(text)
    }

    fn flush_list(&mut self) -> Result<()> {
        if self.list.is_empty() {
            return Ok(());
        }
        let block = std::mem::take(&mut self.list).join("\n");
        self.out.paragraph(&block)
    }

    /// The prefix of a list item, advancing the numbering instance's counters.
    fn list_prefix(&mut self, num_id: &str, ilvl: u8) -> String {
        let level = self.numbering.level(num_id, ilvl);
        let lvl = usize::from(ilvl.min(8));
        let counters = self.counters.entry(num_id.to_string()).or_insert([0; 9]);
        // Deeper levels restart when a shallower item appears.
        for c in counters.iter_mut().skip(lvl + 1) {
            *c = 0;
        }
        let start = level.as_ref().and_then(|l| l.start).unwrap_or(1);
        let count = if counters[lvl] == 0 {
            start
        } else {
            counters[lvl].saturating_add(1)
        };
        counters[lvl] = count;
        match level.as_ref().map(|l| l.format.as_str()) {
            None | Some("bullet") => "- ".to_string(),
            Some("none") => String::new(),
            Some(_) => format!("{count}. "),
        }
    }

    /// Appends the text of the runs under `node` to `out`.
    fn inline(&mut self, node: &Node, out: &mut String, in_note: bool) {
        for item in &node.children {
            let Item::Node(n) = item else { continue };
            match n.name.as_str() {
                "t" => {
                    if !self.fields.iter().any(|&code| code) {
                        n.text_into(out);
                    }
                }
                "tab" | "ptab" => out.push('\t'),
                "br" | "cr" => out.push('\n'),
                "noBreakHyphen" => out.push('-'),
                "pPr"
                | "sym"
                | "softHyphen"
                | "footnoteRef"
                | "endnoteRef"
                | "separator"
                | "continuationSeparator"
                | "sdtPr"
                | "sdtEndPr"
                | "fallback" => {}
                "fldChar" => match n.attr("fldCharType") {
                    Some("begin") => self.fields.push(true),
                    Some("separate") => {
                        if let Some(code) = self.fields.last_mut() {
                            *code = false;
                        }
                    }
                    Some("end") => {
                        self.fields.pop();
                    }
                    _ => {}
                },
                "footnoteReference" | "endnoteReference" => {
                    if in_note {
                        continue;
                    }
                    let kind = if n.name == "footnoteReference" {
                        NoteKind::Foot
                    } else {
                        NoteKind::End
                    };
                    let Some(id) = n.attr("id") else { continue };
                    let key = (kind, id.to_string());
                    if !self.notes.contains_key(&key) {
                        continue;
                    }
                    let next = self.note_order.len() + 1;
                    let number = *self.note_numbers.entry(key.clone()).or_insert_with(|| {
                        self.note_order.push(key);
                        next
                    });
                    out.push_str(&format!("[^{number}]"));
                }
                "AlternateContent" => {
                    if let Some(choice) = n.child("Choice") {
                        self.inline(choice, out, in_note);
                    }
                }
                "p" => {
                    // A paragraph inside a run: a text box's content.
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    self.inline(n, out, in_note);
                    out.push('\n');
                }
                "tc" => {
                    // A table inside a text box: cells on one line.
                    let mut cell = String::new();
                    self.inline(n, &mut cell, in_note);
                    out.push_str(&one_line(&cell));
                    out.push_str(" | ");
                }
                "tr" => {
                    self.inline(n, out, in_note);
                    if out.ends_with(" | ") {
                        out.truncate(out.len() - 3);
                    }
                    out.push('\n');
                }
                _ => self.inline(n, out, in_note),
            }
        }
    }

    /// A field whose code did not end within its paragraph is damaged: it must not hide the
    /// rest of the document.
    fn end_paragraph_fields(&mut self) {
        while self.fields.last() == Some(&true) {
            self.fields.pop();
        }
    }

    fn table_rows(&mut self, tbl: &Node, rows: &mut Vec<String>) -> Result<()> {
        for item in &tbl.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "tr" => {
                    let mut cells = Vec::new();
                    self.row_cells(child, &mut cells)?;
                    if cells.iter().any(|c| !c.is_empty()) {
                        rows.push(cells.join(" | "));
                    }
                }
                "sdt" | "sdtContent" | "customXml" | "ins" | "moveTo" => {
                    self.table_rows(child, rows)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn row_cells(&mut self, tr: &Node, cells: &mut Vec<String>) -> Result<()> {
        for item in &tr.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "tc" => {
                    let mut parts = Vec::new();
                    self.cell_text(child, &mut parts)?;
                    cells.push(one_line(&parts.join(" ")));
                }
                "sdt" | "sdtContent" | "customXml" | "ins" | "moveTo" => {
                    self.row_cells(child, cells)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The paragraphs of a cell (nested tables flattened into them).
    fn cell_text(&mut self, node: &Node, parts: &mut Vec<String>) -> Result<()> {
        for item in &node.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "p" => {
                    self.tick()?;
                    let info = self.styles.paragraph(child);
                    let mut text = String::new();
                    if let Some((num_id, ilvl)) = info.list {
                        text.push_str(&self.list_prefix(&num_id, ilvl));
                    }
                    let before = text.len();
                    self.inline(child, &mut text, false);
                    self.end_paragraph_fields();
                    if text.len() > before && !text[before..].trim().is_empty() {
                        parts.push(text);
                    }
                }
                "tbl" | "tr" | "tc" | "sdt" | "sdtContent" | "customXml" | "ins" | "moveTo" => {
                    self.cell_text(child, parts)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn write_notes(&mut self) -> Result<()> {
        if self.note_order.is_empty() {
            return Ok(());
        }
        let label = if mostly_cjk(self.out.as_str()) {
            "脚注"
        } else {
            "Notes"
        };
        self.out.heading(1, label)?;
        let order = std::mem::take(&mut self.note_order);
        let notes = self.notes;
        for (i, key) in order.iter().enumerate() {
            let Some(note) = notes.get(key) else { continue };
            let mut paragraphs = Vec::new();
            for item in &note.children {
                let Item::Node(p) = item else { continue };
                let mut text = String::new();
                self.inline(p, &mut text, true);
                self.end_paragraph_fields();
                let text = text.trim();
                if !text.is_empty() {
                    paragraphs.push(text.to_string());
                }
            }
            self.fields.clear();
            self.out
                .paragraph(&format!("[^{}] {}", i + 1, paragraphs.join("\n")))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Styles and numbering.

#[derive(Debug, Default)]
struct Styles {
    by_id: HashMap<String, Style>,
    default_paragraph: Option<String>,
    lang: Option<String>,
    east_asia_lang: Option<String>,
}

#[derive(Debug, Default)]
struct Style {
    /// Lower-cased name.
    name: String,
    based_on: Option<String>,
    outline: Option<u8>,
    num_id: Option<String>,
    ilvl: Option<u8>,
}

struct ParagraphInfo {
    heading: Option<usize>,
    is_title: bool,
    list: Option<(String, u8)>,
}

impl Styles {
    fn from_xml(root: &Node) -> Self {
        let mut styles = Styles::default();
        if let Some(lang) = root
            .child("docDefaults")
            .and_then(|d| d.child("rPrDefault"))
            .and_then(|d| d.child("rPr"))
            .and_then(|r| r.child("lang"))
        {
            styles.lang = lang.attr("val").filter(|v| !v.is_empty()).map(String::from);
            styles.east_asia_lang = lang
                .attr("eastAsia")
                .filter(|v| !v.is_empty())
                .map(String::from);
        }
        for style in root.children_named("style") {
            if style.attr("type").is_some_and(|t| t != "paragraph") {
                continue;
            }
            let Some(id) = style.attr("styleId") else {
                continue;
            };
            let ppr = style.child("pPr");
            let num = ppr.and_then(|p| p.child("numPr"));
            let entry = Style {
                name: style
                    .child("name")
                    .and_then(|n| n.attr("val"))
                    .unwrap_or("")
                    .to_lowercase(),
                based_on: style
                    .child("basedOn")
                    .and_then(|b| b.attr("val"))
                    .map(String::from),
                outline: ppr
                    .and_then(|p| p.child("outlineLvl"))
                    .and_then(|o| o.attr("val"))
                    .and_then(|v| v.parse().ok()),
                num_id: num
                    .and_then(|n| n.child("numId"))
                    .and_then(|n| n.attr("val"))
                    .map(String::from),
                ilvl: num
                    .and_then(|n| n.child("ilvl"))
                    .and_then(|n| n.attr("val"))
                    .and_then(|v| v.parse().ok()),
            };
            if matches!(style.attr("default"), Some("1" | "true" | "on")) {
                styles.default_paragraph = Some(id.to_string());
            }
            styles.by_id.insert(id.to_string(), entry);
        }
        styles
    }

    /// The chain of styles from `id` through `w:basedOn` (cycles and runaway chains cut).
    fn chain<'a>(&'a self, id: Option<&'a str>) -> Vec<(&'a str, Option<&'a Style>)> {
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut next = id.or(self.default_paragraph.as_deref());
        while let Some(id) = next {
            if !seen.insert(id) || chain.len() >= 16 {
                break;
            }
            let style = self.by_id.get(id);
            chain.push((id, style));
            next = style.and_then(|s| s.based_on.as_deref());
        }
        chain
    }

    fn paragraph(&self, p: &Node) -> ParagraphInfo {
        let ppr = p.child("pPr");
        let style_id = ppr
            .and_then(|p| p.child("pStyle"))
            .and_then(|s| s.attr("val"));
        let chain = self.chain(style_id);

        let mut heading = None;
        let mut is_title = false;
        let own_outline: Option<u8> = ppr
            .and_then(|p| p.child("outlineLvl"))
            .and_then(|o| o.attr("val"))
            .and_then(|v| v.parse().ok());
        if let Some(lvl) = own_outline {
            // Level 9 is body text.
            if lvl < 9 {
                heading = Some(usize::from(lvl) + 1);
            }
        } else {
            for (id, style) in &chain {
                let name = style.map(|s| s.name.as_str()).unwrap_or("");
                if let Some(level) = heading_name(name).or_else(|| {
                    if style.is_none() {
                        heading_name(&id.to_lowercase())
                    } else {
                        None
                    }
                }) {
                    is_title = level == 0;
                    heading = Some(level.max(1));
                    break;
                }
                if let Some(lvl) = style.and_then(|s| s.outline) {
                    if lvl < 9 {
                        heading = Some(usize::from(lvl) + 1);
                    }
                    break;
                }
            }
        }

        let num = ppr.and_then(|p| p.child("numPr"));
        let mut num_id = num
            .and_then(|n| n.child("numId"))
            .and_then(|n| n.attr("val"))
            .map(String::from);
        let mut ilvl: Option<u8> = num
            .and_then(|n| n.child("ilvl"))
            .and_then(|n| n.attr("val"))
            .and_then(|v| v.parse().ok());
        if num_id.is_none() {
            for (_, style) in &chain {
                if let Some(style) = style
                    && let Some(id) = &style.num_id
                {
                    num_id = Some(id.clone());
                    ilvl = ilvl.or(style.ilvl);
                    break;
                }
            }
        }
        let list = num_id
            .filter(|id| id != "0" && heading.is_none())
            .map(|id| (id, ilvl.unwrap_or(0).min(8)));
        ParagraphInfo {
            heading,
            is_title,
            list,
        }
    }
}

/// The heading level a style name announces; 0 for the title.
fn heading_name(name: &str) -> Option<usize> {
    let name = name.trim();
    if name == "title" || name == "标题" {
        return Some(0);
    }
    let rest = name
        .strip_prefix("heading")
        .or_else(|| name.strip_prefix("标题"))?;
    let level: usize = rest.trim().parse().ok()?;
    (1..=9).contains(&level).then_some(level)
}

#[derive(Debug, Default)]
struct Numbering {
    /// `w:num` id → abstract id and per-level overrides.
    nums: HashMap<String, (String, HashMap<u8, Level>)>,
    abstracts: HashMap<String, HashMap<u8, Level>>,
}

#[derive(Debug, Clone, Default)]
struct Level {
    format: String,
    start: Option<i64>,
}

impl Numbering {
    fn from_xml(root: &Node) -> Self {
        let mut numbering = Numbering::default();
        for abs in root.children_named("abstractNum") {
            let Some(id) = abs.attr("abstractNumId") else {
                continue;
            };
            numbering
                .abstracts
                .insert(id.to_string(), levels(abs.children_named("lvl")));
        }
        for num in root.children_named("num") {
            let Some(id) = num.attr("numId") else {
                continue;
            };
            let Some(abs) = num.child("abstractNumId").and_then(|a| a.attr("val")) else {
                continue;
            };
            let mut overrides = HashMap::new();
            for o in num.children_named("lvlOverride") {
                let Some(ilvl) = o.attr("ilvl").and_then(|v| v.parse().ok()) else {
                    continue;
                };
                let mut level = o.child("lvl").map(level).unwrap_or_else(|| Level {
                    format: String::new(),
                    start: None,
                });
                if let Some(start) = o
                    .child("startOverride")
                    .and_then(|s| s.attr("val"))
                    .and_then(|v| v.parse().ok())
                {
                    level.start = Some(start);
                }
                overrides.insert(ilvl, level);
            }
            numbering
                .nums
                .insert(id.to_string(), (abs.to_string(), overrides));
        }
        numbering
    }

    fn level(&self, num_id: &str, ilvl: u8) -> Option<Level> {
        let (abs, overrides) = self.nums.get(num_id)?;
        let base = self.abstracts.get(abs).and_then(|l| l.get(&ilvl)).cloned();
        match (overrides.get(&ilvl), base) {
            (Some(o), base) => {
                let mut level = base.unwrap_or_default();
                if !o.format.is_empty() {
                    level.format = o.format.clone();
                }
                if o.start.is_some() {
                    level.start = o.start;
                }
                Some(level)
            }
            (None, base) => base,
        }
    }
}

fn levels<'a>(lvls: impl Iterator<Item = &'a Node>) -> HashMap<u8, Level> {
    lvls.filter_map(|l| Some((l.attr("ilvl")?.parse().ok()?, level(l))))
        .collect()
}

fn level(lvl: &Node) -> Level {
    Level {
        format: lvl
            .child("numFmt")
            .and_then(|f| f.attr("val"))
            .unwrap_or("")
            .to_string(),
        start: lvl
            .child("start")
            .and_then(|s| s.attr("val"))
            .and_then(|v| v.parse().ok()),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers: a small XML tree, package relationships, core properties.

/// Deepest element nesting accepted (real Office parts stay far below it); it keeps the tree's
/// recursive walks within the stack.
const MAX_DEPTH: usize = 256;

/// A part may hold one XML element per this many bytes of `max_text_bytes` (2.6 million for the
/// default 10 MiB). A parsed element costs about 100 bytes of tree while `<w:p/>` is 6 bytes of
/// XML, so a part that deflates well (60 MB of `<w:p/>` zips to 88 KB, inside the unpacking
/// budget) would otherwise grow the tree past a gigabyte; real documents have far fewer
/// elements than bytes of text (a run of text is a handful of elements).
const TEXT_BYTES_PER_ELEMENT: usize = 4;

/// The deadline is checked every this many XML events.
const EVENTS_PER_TIME_CHECK: usize = 1 << 16;

/// The most elements [`parse_xml`] builds a tree of, for `limits`.
fn max_elements(limits: &Limits) -> usize {
    (limits.max_text_bytes / TEXT_BYTES_PER_ELEMENT).max(1 << 16)
}

/// An XML element: its local name, attributes (qualified name, value) and children.
#[derive(Debug, Clone, Default)]
pub(super) struct Node {
    pub(super) name: String,
    attrs: Vec<(String, String)>,
    pub(super) children: Vec<Item>,
}

/// A child of an element.
#[derive(Debug, Clone)]
pub(super) enum Item {
    Node(Node),
    Text(String),
}

impl Node {
    /// The bytes of its attributes' names and values.
    fn attribute_bytes(&self) -> usize {
        self.attrs.iter().map(|(k, v)| k.len() + v.len()).sum()
    }

    /// The value of the first attribute whose local name is `local`.
    pub(super) fn attr(&self, local: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| local_part(k) == local)
            .map(|(_, v)| v.as_str())
    }

    /// The value of the first namespace-prefixed attribute whose local name is `local` (such
    /// as `r:id`, beside a plain `id`).
    pub(super) fn prefixed_attr(&self, local: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k.contains(':') && local_part(k) == local)
            .map(|(_, v)| v.as_str())
    }

    /// The first child element named `local`.
    pub(super) fn child<'a>(&'a self, local: &'a str) -> Option<&'a Node> {
        self.children_named(local).next()
    }

    /// The child elements named `local`.
    pub(super) fn children_named<'a>(&'a self, local: &'a str) -> impl Iterator<Item = &'a Node> {
        self.elements().filter(move |n| n.name == local)
    }

    /// The child elements.
    pub(super) fn elements(&self) -> impl Iterator<Item = &Node> {
        self.children.iter().filter_map(|c| match c {
            Item::Node(n) => Some(n),
            Item::Text(_) => None,
        })
    }

    /// The first descendant element named `local` (depth first).
    pub(super) fn find(&self, local: &str) -> Option<&Node> {
        for child in self.elements() {
            if child.name == local {
                return Some(child);
            }
            if let Some(found) = child.find(local) {
                return Some(found);
            }
        }
        None
    }

    /// All the text under this element.
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        self.text_into(&mut out);
        out
    }

    fn text_into(&self, out: &mut String) {
        for child in &self.children {
            match child {
                Item::Text(t) => out.push_str(t),
                Item::Node(n) => n.text_into(out),
            }
        }
    }
}

fn local_part(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// Reads and parses part `name` of `pkg` as a stream (the part is never held in memory: only
/// the tree, whose text and attributes are bounded); `None` when the package has no such part.
pub(super) fn read_xml(
    pkg: &mut Package<'_>,
    name: &str,
    skip: &[&str],
    limits: &Limits,
) -> Result<Option<Node>> {
    let Some(part) = pkg.read_stream(name)? else {
        return Ok(None);
    };
    let mut input = std::io::BufReader::with_capacity(64 << 10, part);
    // The text encodings `decode_text` reads: UTF-8 with or without a BOM, UTF-16 with one.
    let head = input
        .fill_buf()
        .map_err(|e| anyhow!("{name}: {e}"))?
        .get(..3)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let big_endian = match head.get(..2) {
        Some(b"\xFF\xFE") => Some(false),
        Some(b"\xFE\xFF") => Some(true),
        _ => None,
    };
    if let Some(big_endian) = big_endian {
        input.consume(2);
        let utf8 = std::io::BufReader::with_capacity(64 << 10, Utf16::new(input, big_endian));
        return parse_stream(utf8, name, skip, limits).map(Some);
    }
    if head == b"\xEF\xBB\xBF" {
        input.consume(3);
    }
    parse_stream(input, name, skip, limits).map(Some)
}

/// Parses `text` (part `part` of a package, for messages): see [`parse_stream`].
pub(super) fn parse_xml(text: &str, part: &str, skip: &[&str], limits: &Limits) -> Result<Node> {
    parse_stream(text.as_bytes(), part, skip, limits)
}

/// A part may hold this many times `max_text_bytes` of text in its tree (text boxes are there
/// twice, as the choice and the fallback of `mc:AlternateContent`), and this many times more
/// of attribute values (which every run and paragraph has).
const TREE_TEXT_FACTOR: usize = 4;
const TREE_ATTRIBUTE_FACTOR: usize = 16;

/// Parses the UTF-8 XML read from `input` (part `part` of a package, for messages) into its
/// document element, dropping the elements whose local name is in `skip` with everything
/// under them. The part is read as a stream, one token at a time, and refused past any of
/// these bounds: [`max_elements`] elements (skipped ones included), [`TREE_TEXT_FACTOR`] ×
/// `max_text_bytes` of text kept in the tree, [`TREE_ATTRIBUTE_FACTOR`] × `max_text_bytes`
/// of attribute values, and tokens (a tag, a run of text) of more than `max_text_bytes`.
/// The deadline is checked every [`EVENTS_PER_TIME_CHECK`] events.
fn parse_stream<R: std::io::BufRead>(
    input: R,
    part: &str,
    skip: &[&str],
    limits: &Limits,
) -> Result<Node> {
    let max_token = limits.max_text_bytes.max(1 << 20) as u64;
    let mut reader = quick_xml::Reader::from_reader(Tokens::new(input, max_token));
    let mut buf = Vec::new();
    let mut tree = TreeBuilder::new(part, skip, limits);
    let mut events = 0usize;
    loop {
        events += 1;
        if events.is_multiple_of(EVENTS_PER_TIME_CHECK) {
            limits.check_time()?;
        }
        buf.clear();
        reader.get_mut().mark();
        let event = match reader.read_event_into(&mut buf) {
            Ok(Event::Eof) => break,
            Ok(event) => event,
            // A read error says what went wrong (a damaged package, a spent budget, a token
            // too long) in its message.
            Err(quick_xml::Error::Io(e)) => bail!("{e}"),
            Err(e) => bail!(
                "not well-formed XML in {part} at byte {}: {e}",
                reader.error_position()
            ),
        };
        let at = reader.buffer_position();
        let bad =
            |e: &dyn std::fmt::Display| anyhow!("not well-formed XML in {part} at byte {at}: {e}");
        tree.event(event, &bad)?;
    }
    tree.finish()
}

/// How [`parse_stream`] reports a token that is not well-formed, at the position it read.
type Bad<'b> = &'b dyn Fn(&dyn std::fmt::Display) -> anyhow::Error;

/// The tree [`parse_stream`] builds from a part's events, and the bounds it keeps within.
struct TreeBuilder<'p> {
    /// The part's name, for messages.
    part: &'p str,
    /// The local names of the elements dropped with everything under them.
    skip: &'p [&'p str],
    /// The elements open, the document (a nameless node) first.
    stack: Vec<Node>,
    /// How deep the reader is inside a dropped element (0: outside any).
    skipping: usize,
    /// Elements read (dropped ones included), bytes of text kept, bytes of attributes kept.
    elements: usize,
    text: usize,
    attributes: usize,
    most_elements: usize,
    most_text: usize,
    most_attributes: usize,
}

impl<'p> TreeBuilder<'p> {
    fn new(part: &'p str, skip: &'p [&'p str], limits: &Limits) -> Self {
        Self {
            part,
            skip,
            stack: vec![Node::default()],
            skipping: 0,
            elements: 0,
            text: 0,
            attributes: 0,
            most_elements: max_elements(limits),
            most_text: limits.max_text_bytes.saturating_mul(TREE_TEXT_FACTOR),
            most_attributes: limits.max_text_bytes.saturating_mul(TREE_ATTRIBUTE_FACTOR),
        }
    }

    /// Adds one event (no end of file) to the tree, within the bounds.
    fn event(&mut self, event: Event<'_>, bad: Bad<'_>) -> Result<()> {
        if matches!(event, Event::Start(_) | Event::Empty(_)) {
            self.count_element()?;
        }
        let kept = match event {
            Event::Start(e) => {
                self.open(&e, bad)?;
                0
            }
            Event::Empty(e) => {
                self.empty(&e, bad)?;
                0
            }
            Event::End(_) => {
                self.close(bad)?;
                0
            }
            Event::Text(_) | Event::CData(_) | Event::GeneralRef(_) if self.skipping > 0 => 0,
            Event::Text(t) => {
                let s = std::str::from_utf8(&t).map_err(|e| bad(&e))?;
                push_text(&mut self.stack, s)
            }
            Event::CData(t) => {
                let s = std::str::from_utf8(&t).map_err(|e| bad(&e))?;
                push_text(&mut self.stack, s)
            }
            Event::GeneralRef(r) => self.reference(&r, bad)?,
            _ => 0,
        };
        self.text += kept;
        self.check_kept()
    }

    /// Counts an element read against the bound.
    fn count_element(&mut self) -> Result<()> {
        self.elements += 1;
        if self.elements > self.most_elements {
            bail!(
                "{} has more than {} XML elements: refused \
                 (one per {TEXT_BYTES_PER_ELEMENT} bytes of loader.max_file_bytes)",
                self.part,
                self.most_elements
            );
        }
        Ok(())
    }

    /// A start tag: opens its element, or starts (or goes deeper into) a dropped one.
    fn open(&mut self, e: &quick_xml::events::BytesStart<'_>, bad: Bad<'_>) -> Result<()> {
        if self.skipping > 0 {
            self.skipping += 1;
            return Ok(());
        }
        let node = element(e, bad)?;
        if self.skip.contains(&node.name.as_str()) {
            self.skipping = 1;
            return Ok(());
        }
        if self.stack.len() > MAX_DEPTH {
            bail!(
                "{}: XML nested more than {MAX_DEPTH} levels deep: refused",
                self.part
            );
        }
        self.attributes += node.attribute_bytes();
        self.stack.push(node);
        Ok(())
    }

    /// An empty element: added to the open one, unless it is dropped.
    fn empty(&mut self, e: &quick_xml::events::BytesStart<'_>, bad: Bad<'_>) -> Result<()> {
        if self.skipping > 0 {
            return Ok(());
        }
        let node = element(e, bad)?;
        if self.skip.contains(&node.name.as_str()) {
            return Ok(());
        }
        self.attributes += node.attribute_bytes();
        if let Some(top) = self.stack.last_mut() {
            top.children.push(Item::Node(node));
        }
        Ok(())
    }

    /// An end tag: closes the open element (into its parent), or leaves a dropped one.
    fn close(&mut self, bad: Bad<'_>) -> Result<()> {
        if self.skipping > 0 {
            self.skipping -= 1;
            return Ok(());
        }
        if self.stack.len() < 2 {
            return Err(bad(&"closing tag without an opening tag"));
        }
        if let Some(node) = self.stack.pop()
            && let Some(top) = self.stack.last_mut()
        {
            top.children.push(Item::Node(node));
        }
        Ok(())
    }

    /// A character or entity reference: its text added; the bytes kept.
    fn reference(&mut self, r: &quick_xml::events::BytesRef<'_>, bad: Bad<'_>) -> Result<usize> {
        if let Some(c) = r.resolve_char_ref().map_err(|e| bad(&e))? {
            return Ok(push_text(&mut self.stack, c.encode_utf8(&mut [0; 4])));
        }
        let name = std::str::from_utf8(r).map_err(|e| bad(&e))?;
        Ok(match quick_xml::escape::resolve_predefined_entity(name) {
            Some(s) => push_text(&mut self.stack, s),
            None => 0,
        })
    }

    /// Refuses a tree past its bounds of text and attribute values.
    fn check_kept(&self) -> Result<()> {
        if self.text > self.most_text {
            bail!(
                "{} holds more than {} bytes of text: refused \
                 ({TREE_TEXT_FACTOR} × loader.max_file_bytes)",
                self.part,
                self.most_text
            );
        }
        if self.attributes > self.most_attributes {
            bail!(
                "{} holds more than {} bytes of attribute values: refused \
                 ({TREE_ATTRIBUTE_FACTOR} × loader.max_file_bytes)",
                self.part,
                self.most_attributes
            );
        }
        Ok(())
    }

    /// The document element, once the part has ended outside any element.
    fn finish(mut self) -> Result<Node> {
        let part = self.part;
        if self.stack.len() != 1 {
            bail!("not well-formed XML in {part}: it ends inside an element");
        }
        let root = self.stack.pop().unwrap_or_default();
        root.children
            .into_iter()
            .find_map(|c| match c {
                Item::Node(n) => Some(n),
                Item::Text(_) => None,
            })
            .ok_or_else(|| anyhow!("not well-formed XML in {part}: no element"))
    }
}

/// The input of [`parse_stream`]: refuses a token (what is read between two
/// [`Tokens::mark`]s, one XML event) longer than its bound, before it is all in memory.
struct Tokens<R> {
    inner: R,
    since_mark: u64,
    most: u64,
}

impl<R> Tokens<R> {
    fn new(inner: R, most: u64) -> Self {
        Self {
            inner,
            since_mark: 0,
            most,
        }
    }

    /// A new event starts.
    fn mark(&mut self) {
        self.since_mark = 0;
    }
}

impl<R: std::io::BufRead> std::io::Read for Tokens<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for Tokens<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.since_mark > self.most {
            return Err(std::io::Error::other(format!(
                "an XML token (a tag or a run of text) longer than {} bytes: refused",
                self.most
            )));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.since_mark += n as u64;
        self.inner.consume(n);
    }
}

/// UTF-16 (after its byte order mark) read as UTF-8.
struct Utf16<R> {
    inner: R,
    big_endian: bool,
    /// UTF-8 decoded and not yet read, from `at`.
    out: Vec<u8>,
    at: usize,
    /// A byte of an unfinished code unit; a high surrogate waiting for its low half.
    odd: Option<u8>,
    high: Option<u16>,
}

impl<R> Utf16<R> {
    fn new(inner: R, big_endian: bool) -> Self {
        Self {
            inner,
            big_endian,
            out: Vec::new(),
            at: 0,
            odd: None,
            high: None,
        }
    }
}

impl<R: std::io::Read> std::io::Read for Utf16<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let invalid = || std::io::Error::other("not valid UTF-16");
        while self.at == self.out.len() {
            self.out.clear();
            self.at = 0;
            let mut raw = [0u8; 8192];
            let n = self.inner.read(&mut raw)?;
            if n == 0 {
                if self.odd.is_some() || self.high.is_some() {
                    return Err(invalid());
                }
                return Ok(0);
            }
            let mut bytes = raw[..n].iter().copied();
            while let Some(b) = self.odd.take().or_else(|| bytes.next()) {
                let Some(c) = bytes.next() else {
                    self.odd = Some(b);
                    break;
                };
                let unit = if self.big_endian {
                    u16::from_be_bytes([b, c])
                } else {
                    u16::from_le_bytes([b, c])
                };
                let ch = match (self.high.take(), unit) {
                    (None, 0xD800..=0xDBFF) => {
                        self.high = Some(unit);
                        continue;
                    }
                    (Some(high), 0xDC00..=0xDFFF) => char::decode_utf16([high, unit])
                        .next()
                        .and_then(Result::ok)
                        .ok_or_else(invalid)?,
                    (None, _) => char::from_u32(u32::from(unit)).ok_or_else(invalid)?,
                    (Some(_), _) => return Err(invalid()),
                };
                self.out
                    .extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            }
        }
        let n = (self.out.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn element(
    e: &quick_xml::events::BytesStart<'_>,
    bad: &dyn Fn(&dyn std::fmt::Display) -> anyhow::Error,
) -> Result<Node> {
    let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|err| bad(&err))?;
        let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
        let raw = std::str::from_utf8(&a.value).map_err(|err| bad(&err))?;
        let value = quick_xml::escape::unescape(raw)
            .map_err(|err| bad(&err))?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Node {
        name,
        attrs,
        children: Vec::new(),
    })
}

/// Adds text to the element being read; the bytes kept.
fn push_text(stack: &mut [Node], s: &str) -> usize {
    let Some(top) = stack.last_mut() else {
        return 0;
    };
    if let Some(Item::Text(last)) = top.children.last_mut() {
        last.push_str(s);
        return s.len();
    }
    // Whitespace between elements is layout, except inside a text element.
    if s.trim().is_empty() && !matches!(top.name.as_str(), "t" | "title" | "language") {
        return 0;
    }
    top.children.push(Item::Text(s.to_string()));
    s.len()
}

/// A relationship of a package part.
#[derive(Debug, Clone)]
pub(super) struct Relationship {
    pub(super) id: String,
    pub(super) kind: String,
    /// The target part's name, resolved against the source part.
    pub(super) target: String,
}

/// The internal relationships of part `part` (empty when it has none).
pub(super) fn relationships(
    pkg: &mut Package<'_>,
    part: &str,
    limits: &Limits,
) -> Result<Vec<Relationship>> {
    let (dir, file) = match part.rfind('/') {
        Some(i) => (&part[..i], &part[i + 1..]),
        None => ("", part),
    };
    let rels_name = if dir.is_empty() {
        format!("_rels/{file}.rels")
    } else {
        format!("{dir}/_rels/{file}.rels")
    };
    let Some(root) = read_xml(pkg, &rels_name, &[], limits)? else {
        return Ok(Vec::new());
    };
    Ok(root
        .children_named("Relationship")
        .filter(|r| r.attr("TargetMode") != Some("External"))
        .filter_map(|r| {
            Some(Relationship {
                id: r.attr("Id")?.to_string(),
                kind: r.attr("Type").unwrap_or("").to_string(),
                target: resolve_target(dir, r.attr("Target")?),
            })
        })
        .collect())
}

fn resolve_target(dir: &str, target: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let target = match target.strip_prefix('/') {
        Some(absolute) => absolute,
        None => {
            parts.extend(dir.split('/').filter(|p| !p.is_empty()));
            target
        }
    };
    for piece in target.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// `dc:title` and `dc:language` of `docProps/core.xml`, when set. A damaged core part is
/// passed over (it is metadata); the unpacking budget still applies to it.
pub(super) fn core_properties(
    pkg: &mut Package<'_>,
    limits: &Limits,
) -> Result<(Option<String>, Option<String>)> {
    // Metadata: a core part past this size is passed over (read no further than that).
    const MOST: u64 = 1 << 20;
    let Some(part) = pkg.read_stream("docProps/core.xml")? else {
        return Ok((None, None));
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(part, MOST + 1), &mut bytes)
        .map_err(|e| anyhow!("{e}"))?;
    if bytes.len() as u64 > MOST {
        return Ok((None, None));
    }
    let Ok(text) = crate::decode::decode_text(&bytes) else {
        return Ok((None, None));
    };
    let Ok(root) = parse_xml(&text, "docProps/core.xml", &[], limits) else {
        return Ok((None, None));
    };
    let get = |name: &str| {
        root.child(name)
            .map(|n| one_line(&n.text()))
            .filter(|t| !t.is_empty())
    };
    Ok((get("title"), get("language")))
}

/// True when Chinese or Japanese characters make up at least 30% of the letters of `text`.
pub(super) fn mostly_cjk(text: &str) -> bool {
    let (mut letters, mut cjk) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if matches!(c as u32,
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F)
        {
            cjk += 1;
        }
    }
    cjk > 0 && cjk * 10 >= letters * 3
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::*;

    pub(crate) fn limits() -> Limits {
        Limits {
            max_unpacked_bytes: 8 << 20,
            max_text_bytes: 1 << 20,
            max_pages: 100,
            deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    /// A zip package holding `parts`.
    pub(crate) fn package(parts: &[(&str, &str)]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, content) in parts {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(content.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    fn document(body: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}<w:sectPr/></w:body></w:document>"#
        )
    }

    fn p(style: &str, text: &str) -> String {
        let ppr = if style.is_empty() {
            String::new()
        } else {
            format!(r#"<w:pPr><w:pStyle w:val="{style}"/></w:pPr>"#)
        };
        format!(
            r#"<w:p>{ppr}<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#
        )
    }

    const STYLES: &str = r#"<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
        <w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="en-US" w:eastAsia="zh-CN"/></w:rPr></w:rPrDefault></w:docDefaults>
        <w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
        <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
        <w:style w:type="paragraph" w:styleId="1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/></w:style>
        <w:style w:type="paragraph" w:styleId="2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/></w:style>
        <w:style w:type="paragraph" w:styleId="MyChapter"><w:name w:val="My Chapter"/><w:basedOn w:val="2"/></w:style>
        <w:style w:type="paragraph" w:styleId="Outline"><w:name w:val="Outline"/><w:pPr><w:outlineLvl w:val="2"/></w:pPr></w:style>
        <w:style w:type="paragraph" w:styleId="Loop1"><w:name w:val="loop a"/><w:basedOn w:val="Loop2"/></w:style>
        <w:style w:type="paragraph" w:styleId="Loop2"><w:name w:val="loop b"/><w:basedOn w:val="Loop1"/></w:style>
        <w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
    </w:styles>"#;

    const NUMBERING: &str = r#"<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
        <w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
        <w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>
        <w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>
        <w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>
    </w:numbering>"#;

    fn docx(body: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let doc = document(body);
        let mut parts = vec![
            ("word/document.xml", doc.as_str()),
            ("word/styles.xml", STYLES),
            ("word/numbering.xml", NUMBERING),
        ];
        parts.extend_from_slice(extra);
        package(&parts)
    }

    fn list_item(num: &str, ilvl: u8, text: &str) -> String {
        format!(
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num}"/></w:numPr></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"#
        )
    }

    #[test]
    fn docx_headings_come_from_styles_based_on_chains_and_outline_levels() {
        let body = [
            p("Title", "员工手册"),
            p("1", "第一章 总则"),
            p("", "为了规范管理，制定本手册。"),
            p("MyChapter", "第一节 适用范围"),
            p("Outline", "Outline three"),
            p("Loop1", "not a heading"),
            r#"<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Direct outline</w:t></w:r></w:p>"#.to_string(),
            p("Heading3", "unknown style id"),
        ]
        .concat();
        let out = extract(&docx(&body, &[]), &limits()).unwrap();
        assert_eq!(
            out.text,
            "# 员工手册\n\n# 第一章 总则\n\n为了规范管理，制定本手册。\n\n## 第一节 适用范围\n\n### Outline three\n\nnot a heading\n\n# Direct outline\n\n### unknown style id\n"
        );
        assert_eq!(out.title.as_deref(), Some("员工手册"));
        assert_eq!(out.locale.as_deref(), Some("zh-CN"));
        assert_eq!(out.pages, None);
    }

    #[test]
    fn docx_title_and_language_come_from_core_properties_first() {
        let core = r#"<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Handbook &amp; Rules</dc:title><dc:language>en-GB</dc:language></cp:coreProperties>"#;
        let body = [p("Title", "Other"), p("", "English text only.")].concat();
        let out = extract(&docx(&body, &[("docProps/core.xml", core)]), &limits()).unwrap();
        assert_eq!(out.title.as_deref(), Some("Handbook & Rules"));
        assert_eq!(out.locale.as_deref(), Some("en-GB"));
        let out = extract(&docx(&body, &[]), &limits()).unwrap();
        assert_eq!(out.locale.as_deref(), Some("en-US"));
    }

    #[test]
    fn docx_runs_keep_tabs_breaks_hyphens_and_inserted_text_but_not_deleted_text() {
        let body = r#"<w:p>
            <w:r><w:t>A</w:t><w:tab/><w:t>B</w:t><w:br/><w:t>C</w:t><w:noBreakHyphen/><w:t>D</w:t><w:sym w:font="Wingdings" w:char="F04A"/></w:r>
            <w:del w:id="1"><w:r><w:delText>gone</w:delText></w:r></w:del>
            <w:ins w:id="2"><w:r><w:t xml:space="preserve"> new</w:t></w:r></w:ins>
            <w:hyperlink r:id="rId9" xmlns:r="r"><w:r><w:t xml:space="preserve"> link</w:t></w:r></w:hyperlink>
        </w:p>
        <w:p><w:r><w:t xml:space="preserve">Page </w:t></w:r>
            <w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r>
            <w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>
            <w:fldSimple w:instr="NUMPAGES"><w:r><w:t xml:space="preserve"> of 9</w:t></w:r></w:fldSimple>
        </w:p>
        <w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:t>broken field code</w:t></w:r></w:p>
        <w:p><w:r><w:t>after the broken field</w:t></w:r></w:p>"#;
        let out = extract(&docx(body, &[]), &limits()).unwrap();
        assert_eq!(
            out.text,
            "A\tB\nC-D new link\n\nPage 7 of 9\n\nafter the broken field\n"
        );
    }

    #[test]
    fn docx_lists_are_bulleted_or_numbered_and_indented() {
        let body = [
            p("", "Intro"),
            list_item("2", 0, "first"),
            list_item("2", 1, "sub one"),
            list_item("2", 1, "sub two"),
            list_item("2", 0, "second"),
            list_item("2", 1, "sub again"),
            p("ListBullet", "bullet from style"),
            list_item("1", 1, "nested bullet"),
            p("", "Outro"),
        ]
        .concat();
        let out = extract(&docx(&body, &[]), &limits()).unwrap();
        assert_eq!(
            out.text,
            "Intro\n\n1. first\n  1. sub one\n  2. sub two\n2. second\n  1. sub again\n- bullet from style\n  - nested bullet\n\nOutro\n"
        );
    }

    #[test]
    fn docx_tables_are_rows_of_cells_joined_by_bars() {
        let cell = |t: &str| format!("<w:tc><w:tcPr/>{}</w:tc>", p("", t));
        let body = format!(
            "{}<w:tbl><w:tblPr/><w:tblGrid/><w:tr>{}{}</w:tr><w:tr>{}<w:tc>{}{}</w:tc></w:tr><w:tr>{}{}</w:tr></w:tbl>{}",
            p("", "Before"),
            cell("姓名"),
            cell("部门"),
            cell("张三"),
            p("", "研发"),
            p("", "二组"),
            cell(""),
            cell(""),
            p("", "After"),
        );
        let out = extract(&docx(&body, &[]), &limits()).unwrap();
        assert_eq!(
            out.text,
            "Before\n\n姓名 | 部门\n张三 | 研发 二组\n\nAfter\n"
        );
    }

    #[test]
    fn docx_footnotes_become_markers_and_a_closing_section() {
        let notes = format!(
            r#"<w:footnotes {W}>
            <w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
            <w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>
            <w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> 见附件一。</w:t></w:r></w:p></w:footnote>
            <w:footnote w:id="2"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>第二条注释</w:t></w:r></w:p></w:footnote>
            </w:footnotes>"#
        );
        let endnotes = format!(
            r#"<w:endnotes {W}><w:endnote w:id="1"><w:p><w:r><w:endnoteRef/></w:r><w:r><w:t>尾注内容</w:t></w:r></w:p></w:endnote></w:endnotes>"#
        );
        let body = r#"<w:p><w:r><w:t>报销规定</w:t></w:r><w:r><w:footnoteReference w:id="2"/></w:r><w:r><w:t>以及细则</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r><w:r><w:endnoteReference w:id="1"/></w:r><w:r><w:footnoteReference w:id="2"/></w:r></w:p>"#;
        let out = extract(
            &docx(
                body,
                &[
                    ("word/footnotes.xml", &notes),
                    ("word/endnotes.xml", &endnotes),
                ],
            ),
            &limits(),
        )
        .unwrap();
        assert_eq!(
            out.text,
            "报销规定[^1]以及细则[^2][^3][^1]\n\n# 脚注\n\n[^1] 第二条注释\n\n[^2] 见附件一。\n\n[^3] 尾注内容\n"
        );
    }

    #[test]
    fn docx_text_boxes_are_read_once_from_the_choice_content() {
        let body = r#"<w:p><w:r><w:t>Lead</w:t></w:r><w:r><mc:AlternateContent xmlns:mc="mc"><mc:Choice Requires="wps"><w:drawing><wps:txbx xmlns:wps="wps"><w:txbxContent><w:p><w:r><w:t>Boxed</w:t></w:r></w:p></w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>Boxed</w:t></w:r></w:p></w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"#;
        let out = extract(&docx(body, &[]), &limits()).unwrap();
        assert_eq!(out.text, "Lead\nBoxed\n");
    }

    #[test]
    fn docx_errors_name_the_damage() {
        let err = extract(&package(&[("word/other.xml", "<x/>")]), &limits())
            .unwrap_err()
            .to_string();
        assert_eq!(err, "damaged Word document: word/document.xml is missing");
        let err = extract(
            &package(&[("word/document.xml", "<w:document><w:body><w:p></w:body>")]),
            &limits(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("not well-formed XML in word/document.xml at byte"),
            "{err}"
        );
        let err = extract(b"PK\x03\x04 not really", &limits())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("damaged zip package"), "{err}");
        let deep = format!("<a>{}{}</a>", "<b>".repeat(1000), "</b>".repeat(1000));
        let err = extract(&package(&[("word/document.xml", &deep)]), &limits())
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested"), "{err}");
    }

    #[test]
    fn docx_refuses_a_zip_bomb() {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("word/document.xml", options).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..50 {
            zip.write_all(&zeros).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        assert!(bytes.len() < 1 << 20, "{}", bytes.len());
        let mut l = limits();
        l.max_unpacked_bytes = 1 << 20;
        let err = extract(&bytes, &l).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    /// The heading paths of extracted text, outermost first.
    pub(crate) fn heading_paths(text: &str) -> Vec<Vec<String>> {
        let mut stack: Vec<(usize, String)> = Vec::new();
        let mut paths = Vec::new();
        for line in text.lines() {
            let level = line.chars().take_while(|&c| c == '#').count();
            let Some(title) = line.get(level..).and_then(|r| r.strip_prefix(' ')) else {
                continue;
            };
            if level == 0 {
                continue;
            }
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            stack.push((level, title.to_string()));
            paths.push(stack.iter().map(|(_, t)| t.clone()).collect());
        }
        paths
    }

    /// Checks extracted output against a fixture's `.expect.json`: title, locale, and every
    /// line of its text (table cells, tab-separated there, are joined by ` | ` here).
    pub(crate) fn check_fixture(out: &Extracted, expect: &str) -> serde_json::Value {
        let expect: serde_json::Value = serde_json::from_str(expect).unwrap();
        assert_eq!(out.title.as_deref(), expect["title"].as_str(), "title");
        assert_eq!(out.locale.as_deref(), expect["locale"].as_str(), "locale");
        assert_eq!(out.pages, None);
        for line in expect["text"].as_str().unwrap().lines() {
            let line = line.replace('\t', " | ");
            assert!(
                out.text.contains(&line),
                "missing {line:?} in\n{}",
                out.text
            );
        }
        let probe = expect["probe"]["expect_substring"].as_str().unwrap();
        assert!(out.text.contains(probe), "{probe}");
        expect
    }

    fn expected_paths(expect: &serde_json::Value) -> Vec<Vec<String>> {
        serde_json::from_value(expect["headings"].clone()).unwrap()
    }

    #[test]
    fn docx_fixture_zh_policy() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-policy.docx");
        let expect = include_str!("../../../tests/fixtures/formats/zh-policy.docx.expect.json");
        let out = extract(bytes, &limits()).unwrap();
        let expect = check_fixture(&out, expect);
        let mut paths = expected_paths(&expect);
        paths.push(vec!["脚注".to_string()]);
        assert_eq!(heading_paths(&out.text), paths);
        for item in expect["list_items"]["bullet"].as_array().unwrap() {
            let line = format!("- {}", item.as_str().unwrap());
            assert!(out.text.contains(&line), "{line}");
        }
        for (i, item) in expect["list_items"]["number"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let line = format!("{}. {}", i + 1, item.as_str().unwrap());
            assert!(out.text.contains(&line), "{line}");
        }
        for (i, note) in expect["footnotes"].as_array().unwrap().iter().enumerate() {
            let line = format!("[^{}] {}", i + 1, note.as_str().unwrap());
            assert!(out.text.contains(&line), "{line}");
        }
        assert!(
            out.text.contains("应在2小时内报告信息技术部。[^2]"),
            "{}",
            out.text
        );
    }

    #[test]
    fn a_part_of_too_many_elements_is_refused() {
        // A memory bomb that passes the unpacking budget: tiny elements that deflate well.
        let mut small = limits();
        small.max_text_bytes = 400_000;
        let most = max_elements(&small);
        assert_eq!(most, 100_000);
        let body = "<w:p/>".repeat(300_000);
        let bytes = docx(&body, &[]);
        assert!(bytes.len() < 100_000, "{}", bytes.len());
        let err = extract(&bytes, &small).unwrap_err().to_string();
        assert!(
            err.contains("word/document.xml has more than 100000 XML elements: refused"),
            "{err}"
        );
        // Under the cap it is read, and the deadline is checked while parsing.
        let fine = "<w:p/>".repeat(90_000);
        assert!(extract(&docx(&fine, &[]), &small).is_ok());
        let mut late = small.clone();
        late.deadline = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let text = document(&fine);
        let err = parse_xml(&text, "word/document.xml", &[], &late)
            .unwrap_err()
            .to_string();
        assert!(err.contains("time limit"), "{err}");
    }

    #[test]
    fn a_part_is_read_as_a_stream_within_bounds_of_its_tree() {
        let mut small = limits();
        small.max_text_bytes = 1 << 20;
        small.max_unpacked_bytes = 1 << 30;
        // Text runs that deflate well (the docx of issue 35 inflated to 512 MiB of them): the
        // tree may hold 4 × max_text_bytes of text, and the part is refused there, long before
        // it is all read.
        let run = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "a".repeat(60_000));
        let bomb = docx(&run.repeat(200), &[]);
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let err = extract(&bomb, &small).unwrap_err().to_string();
        assert!(
            err.contains("word/document.xml holds more than 4194304 bytes of text"),
            "{err}"
        );
        // One token longer than max_text_bytes is refused before it is all in memory.
        let long = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "a".repeat(3 << 20));
        let err = extract(&docx(&long, &[]), &small).unwrap_err().to_string();
        assert!(err.contains("an XML token"), "{err}");
        // So are attribute values past 16 × max_text_bytes.
        let attrs = format!(r#"<w:p w:rsidR="{}"/>"#, "0".repeat(900_000)).repeat(20);
        let err = extract(&docx(&attrs, &[]), &small).unwrap_err().to_string();
        assert!(err.contains("bytes of attribute values"), "{err}");
        // The unpacking budget is spent as the part is read.
        let mut tight = limits();
        tight.max_unpacked_bytes = 100_000;
        let err = extract(&bomb, &tight).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    #[test]
    fn parts_in_utf16_or_with_a_byte_order_mark_are_read() {
        let doc = document(&p("", "双字节 text 𝄞 and &amp; more"));
        let want = "双字节 text 𝄞 and & more\n";
        let bom8 = format!("\u{feff}{doc}");
        assert_eq!(
            extract(&docx_of(bom8.as_bytes()), &limits()).unwrap().text,
            want
        );
        for big_endian in [false, true] {
            let mut bytes = if big_endian {
                vec![0xFE, 0xFF]
            } else {
                vec![0xFF, 0xFE]
            };
            for unit in doc.encode_utf16() {
                bytes.extend(if big_endian {
                    unit.to_be_bytes()
                } else {
                    unit.to_le_bytes()
                });
            }
            let got = extract(&docx_of(&bytes), &limits()).unwrap();
            assert_eq!(got.text, want, "big endian: {big_endian}");
            // A lone surrogate is no UTF-16.
            bytes.extend(if big_endian {
                [0xD8, 0x00]
            } else {
                [0x00, 0xD8]
            });
            let err = extract(&docx_of(&bytes), &limits())
                .unwrap_err()
                .to_string();
            assert!(err.contains("UTF-16"), "{err}");
        }
    }

    /// A docx of a `word/document.xml` of these bytes.
    fn docx_of(document: &[u8]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file(
            "word/document.xml",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(document).unwrap();
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn relationship_targets_resolve_against_their_part() {
        assert_eq!(
            resolve_target("ppt", "slides/slide1.xml"),
            "ppt/slides/slide1.xml"
        );
        assert_eq!(
            resolve_target("ppt/slides", "../notesSlides/n1.xml"),
            "ppt/notesSlides/n1.xml"
        );
        assert_eq!(resolve_target("ppt/slides", "/ppt/x.xml"), "ppt/x.xml");
        assert_eq!(resolve_target("", "../../x.xml"), "x.xml");
    }
}
