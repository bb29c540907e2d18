//! Word 2007+ (`.docx`): the body of `word/document.xml` in reading order.
//!
//! Kept: paragraphs; headings (paragraph styles named `heading 1`…`heading 9` or `Title`, styles
//! based on them, and `w:outlineLvl` in the paragraph's or a style's properties); list items
//! (`- ` for bullets, `1. ` `2. ` … for numbered levels, two spaces of indent per level); tables
//! (a Markdown pipe table whose first row is the header: see `pipe_table`); text boxes; the
//! displayed result of fields; inserted text of tracked changes; footnotes and endnotes (a
//! `[^n]` marker where they are referenced, numbered in order of reference, and their text
//! under a closing heading `脚注` — or `Notes` when the body is not mostly Chinese/Japanese —
//! as paragraphs `[^n] text`).
//!
//! Pictures: with an OCR engine, the text of each picture of the body (a pasted scan, a
//! screenshot) is written after the paragraph or table that holds it (`pictures`).
//!
//! Dropped: headers and footers, comments, deleted text, field codes, symbols (`w:sym`),
//! charts, pictures without an OCR engine, the alternative (fallback) content of `mc:AlternateContent`, the
//! automatic numbers of headings (`第一章` typed as text stays; a number Word generates for a
//! heading style does not), list formats beyond bullet/number (every numbered format — roman,
//! letters, `一、` — is written with arabic numbers).
//!
//! Title: `dc:title` of `docProps/core.xml`, else the first paragraph in the `Title` style.
//! Locale: `dc:language`, else the default `w:lang` of `word/styles.xml` (its `w:eastAsia`
//! value when the body is mostly Chinese/Japanese, its `w:val` otherwise).
//!
//! The XML tree and package helpers it reads with are the OOXML formats' own (`ooxml`).

use std::collections::{HashMap, HashSet};

use anyhow::{Result, anyhow};

use crate::extracted::Extracted;
use crate::limits::Limits;
use crate::ooxml::{
    Item, Node, Relationship, core_properties, mostly_cjk, read_xml, relationships,
};
use crate::package::Package;
use crate::pictures::Pictures;
use crate::scan::PageReader;
use crate::text_builder::{TextBuilder, one_line, pipe_table};

/// Extracts a docx file; text in its pictures is read by `ocr`, when given (see `pictures`).
pub fn extract(bytes: &[u8], limits: &Limits, ocr: Option<&dyn PageReader>) -> Result<Extracted> {
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
    let rels = match ocr {
        Some(_) => relationships(&mut pkg, "word/document.xml", limits)?,
        None => Vec::new(),
    };
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
        pictures: Pictures::new(ocr),
        rels: &rels,
        pkg: &mut pkg,
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
        ocr: walker.pictures.engine.take(),
        boxes: Vec::new(),
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

struct Walker<'a, 'p> {
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
    /// The pictures' text, written after the paragraph or table that holds them.
    pictures: Pictures<'a>,
    rels: &'a [Relationship],
    pkg: &'a mut Package<'p>,
}

impl Walker<'_, '_> {
    fn blocks(&mut self, node: &Node) -> Result<()> {
        for item in &node.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "p" => self.paragraph(child)?,
                "tbl" => {
                    self.flush_list()?;
                    let mut rows = Vec::new();
                    self.table_rows(child, &mut rows)?;
                    if let Some(table) = pipe_table(&rows) {
                        self.out.paragraph(&table)?;
                    }
                    self.picture_text(child)?;
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

    /// Writes the text of the pictures in `node`, each as a paragraph.
    fn picture_text(&mut self, node: &Node) -> Result<()> {
        let texts = self
            .pictures
            .text_in(self.pkg, node, self.rels, self.limits);
        if !texts.is_empty() {
            self.flush_list()?;
        }
        for text in texts {
            self.out.paragraph(&text)?;
        }
        Ok(())
    }

    fn paragraph(&mut self, p: &Node) -> Result<()> {
        self.tick()?;
        self.paragraph_text(p)?;
        self.picture_text(p)
    }

    fn paragraph_text(&mut self, p: &Node) -> Result<()> {
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

    fn table_rows(&mut self, tbl: &Node, rows: &mut Vec<Vec<String>>) -> Result<()> {
        for item in &tbl.children {
            let Item::Node(child) = item else { continue };
            match child.name.as_str() {
                "tr" => {
                    let mut cells = Vec::new();
                    self.row_cells(child, &mut cells)?;
                    rows.push(cells);
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

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;

    use super::*;
    use crate::ooxml::tests::{check_fixture, heading_paths, limits, package};

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    pub(crate) fn document(body: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}<w:sectPr/></w:body></w:document>"#
        )
    }

    pub(crate) fn p(style: &str, text: &str) -> String {
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

    pub(crate) fn docx(body: &str, extra: &[(&str, &str)]) -> Vec<u8> {
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
        let out = extract(&docx(&body, &[]), &limits(), None).unwrap();
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
        let out = extract(
            &docx(&body, &[("docProps/core.xml", core)]),
            &limits(),
            None,
        )
        .unwrap();
        assert_eq!(out.title.as_deref(), Some("Handbook & Rules"));
        assert_eq!(out.locale.as_deref(), Some("en-GB"));
        let out = extract(&docx(&body, &[]), &limits(), None).unwrap();
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
        let out = extract(&docx(body, &[]), &limits(), None).unwrap();
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
        let out = extract(&docx(&body, &[]), &limits(), None).unwrap();
        assert_eq!(
            out.text,
            "Intro\n\n1. first\n  1. sub one\n  2. sub two\n2. second\n  1. sub again\n- bullet from style\n  - nested bullet\n\nOutro\n"
        );
    }

    #[test]
    fn docx_tables_are_pipe_tables() {
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
        let out = extract(&docx(&body, &[]), &limits(), None).unwrap();
        assert_eq!(
            out.text,
            "Before\n\n| 姓名 | 部门 |\n| --- | --- |\n| 张三 | 研发 二组 |\n\nAfter\n"
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
            None,
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
        let out = extract(&docx(body, &[]), &limits(), None).unwrap();
        assert_eq!(out.text, "Lead\nBoxed\n");
    }

    #[test]
    fn docx_errors_name_the_damage() {
        let err = extract(&package(&[("word/other.xml", "<x/>")]), &limits(), None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "damaged Word document: word/document.xml is missing");
        let err = extract(
            &package(&[("word/document.xml", "<w:document><w:body><w:p></w:body>")]),
            &limits(),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("not well-formed XML in word/document.xml at byte"),
            "{err}"
        );
        let err = extract(b"PK\x03\x04 not really", &limits(), None)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("damaged zip package"), "{err}");
        let deep = format!("<a>{}{}</a>", "<b>".repeat(1000), "</b>".repeat(1000));
        let err = extract(&package(&[("word/document.xml", &deep)]), &limits(), None)
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
        let err = extract(&bytes, &l, None).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    fn expected_paths(expect: &serde_json::Value) -> Vec<Vec<String>> {
        serde_json::from_value(expect["headings"].clone()).unwrap()
    }

    #[test]
    fn docx_fixture_zh_policy() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-policy.docx");
        let expect = include_str!("../../../tests/fixtures/formats/zh-policy.docx.expect.json");
        let out = extract(bytes, &limits(), None).unwrap();
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
}
