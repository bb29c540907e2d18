//! Rendering the content: a walk over the arena that writes headings, paragraphs, lists,
//! preformatted text and tables as blocks, collapsing whitespace as HTML renders it.

use anyhow::{Result, bail};

use super::arena::{Arena, Kind};
use super::model::Block;
use super::table::Table;
use crate::limits::Limits;
use crate::text_builder::one_line;

/// Elements that start and end a block.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "caption"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "legend"
            | "li"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "tfoot"
            | "th"
            | "thead"
            | "tr"
            | "ul"
    )
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// Characters between which a source line break is no space (CSS Text's East Asian rule):
/// Han, kana, bopomofo, CJK punctuation and full-width forms (not Hangul, written with spaces).
fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF
        | 0x3000..=0x303F
        | 0x3040..=0x30FF
        | 0x3100..=0x312F
        | 0x31A0..=0x31BF
        | 0x31F0..=0x31FF
        | 0x3200..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x3FFFF)
}

/// Inline text being collected, whitespace collapsed.
#[derive(Default)]
struct Inline {
    buf: String,
    /// 0: no pending space; 1: a space; 2: whitespace with a line break.
    pending: u8,
}

impl Inline {
    fn push_text(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                ' ' | '\t' | '\r' | '\u{c}' | '\u{a0}' => self.pending = self.pending.max(1),
                '\n' => self.pending = 2,
                '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{feff}' | '\u{ad}' => {}
                c if c.is_control() => {}
                c => {
                    if self.pending > 0 && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                        let prev = self.buf.chars().next_back().unwrap_or(' ');
                        if !(self.pending == 2 && is_wide(prev) && is_wide(c)) {
                            self.buf.push(' ');
                        }
                    }
                    self.pending = 0;
                    self.buf.push(c);
                }
            }
        }
    }

    fn push_raw(&mut self, text: &str) {
        self.buf.push_str(text);
    }

    fn space(&mut self) {
        self.pending = self.pending.max(1);
    }

    fn line_break(&mut self) {
        if !self.buf.is_empty() {
            self.buf.push('\n');
        }
        self.pending = 0;
    }

    fn take(&mut self) -> String {
        self.pending = 0;
        std::mem::take(&mut self.buf)
    }
}

/// A list being written.
struct List {
    ordered: bool,
    next: u64,
    /// Indentation of this list's markers.
    base: usize,
    /// Indentation of the current item's continuation lines.
    cont: usize,
}

/// The walk over the arena that writes blocks: enters and exits each element in document
/// order, collecting inline text and the paragraph it belongs to.
pub(super) struct Renderer<'r, 'a> {
    arena: &'r Arena<'a>,
    limits: &'r Limits,
    blocks: Vec<Block>,
    bytes: usize,
    cur: Inline,
    /// The paragraph being assembled (lines joined by `\n`).
    para: String,
    lists: Vec<List>,
    /// The marker (with its indentation) of a list item whose first line is not written yet.
    marker: Option<String>,
    dl: usize,
    pre: usize,
    table: Option<Table>,
    table_depth: usize,
    heading: Option<usize>,
    /// Elements treated as plain blocks (layout tables and their parts).
    layout: Vec<bool>,
}

impl<'r, 'a> Renderer<'r, 'a> {
    /// A renderer bounded by `limits`.
    pub(super) fn new(arena: &'r Arena<'a>, limits: &'r Limits) -> Self {
        Self {
            arena,
            limits,
            blocks: Vec::new(),
            bytes: 0,
            cur: Inline::default(),
            para: String::new(),
            lists: Vec::new(),
            marker: None,
            dl: 0,
            pre: 0,
            table: None,
            table_depth: 0,
            heading: None,
            layout: Vec::new(),
        }
    }

    /// The blocks of the subtree of `root`, without the subtrees `skip` leaves out.
    pub(super) fn run(mut self, root: usize, skip: &dyn Fn(usize) -> bool) -> Result<Vec<Block>> {
        let a = self.arena;
        let end = a.nodes[root].end;
        let mut open: Vec<usize> = Vec::new();
        let mut i = root;
        let mut steps = 0usize;
        while i < end {
            steps += 1;
            if steps.is_multiple_of(1024) {
                self.limits.check_time()?;
            }
            while let Some(&top) = open.last() {
                if a.nodes[top].end <= i {
                    open.pop();
                    self.exit(top)?;
                } else {
                    break;
                }
            }
            if i != root && skip(i) {
                i = a.nodes[i].end;
                continue;
            }
            match a.nodes[i].kind {
                Kind::Text(t) => {
                    if self.pre > 0 {
                        self.cur.push_raw(t);
                    } else {
                        self.cur.push_text(t);
                    }
                }
                Kind::Element(_) => {
                    self.enter(i)?;
                    open.push(i);
                }
                Kind::Other => {}
            }
            i += 1;
        }
        while let Some(top) = open.pop() {
            self.exit(top)?;
        }
        self.boundary()?;
        self.flush_para()?;
        Ok(self.blocks)
    }

    fn inline_only(&self) -> bool {
        self.table.is_some() || self.heading.is_some()
    }

    fn enter(&mut self, i: usize) -> Result<()> {
        let name = self.arena.name(i);
        if name == "br" {
            if self.inline_only() {
                self.cur.space();
            } else if self.pre > 0 {
                self.cur.push_raw("\n");
            } else {
                self.cur.line_break();
            }
            return Ok(());
        }
        if self.pre > 0 {
            return Ok(());
        }
        if name == "table" && self.table.is_none() {
            let layout = self.arena.is_layout_table(i);
            self.layout.push(layout);
            if !layout && self.heading.is_none() {
                self.boundary()?;
                self.table = Some(Table::default());
                self.table_depth = self.layout.len();
                return Ok(());
            }
        } else if name == "table" {
            self.layout.push(false);
        }
        if self.inline_only() {
            if is_block(name) {
                self.cur.space();
            }
            return Ok(());
        }
        if let Some(level) = heading_level(name)
            && self.lists.is_empty()
            && self.dl == 0
        {
            self.boundary()?;
            self.flush_para()?;
            self.heading = Some(level);
            return Ok(());
        }
        match name {
            "ul" | "ol" | "menu" | "dir" => {
                self.boundary()?;
                let ordered = name == "ol";
                let next = if ordered {
                    self.arena
                        .attr(i, "start")
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(1)
                } else {
                    1
                };
                let base = self.lists.last().map_or(0, |l| l.cont);
                self.lists.push(List {
                    ordered,
                    next,
                    base,
                    cont: base,
                });
            }
            "li" => {
                self.boundary()?;
                let (ordered, n, indent) = match self.lists.last_mut() {
                    Some(l) => {
                        let n = l.next;
                        l.next += 1;
                        (l.ordered, n, l.base)
                    }
                    None => (false, 0, 0),
                };
                let marker = if ordered {
                    format!("{}{n}. ", " ".repeat(indent))
                } else {
                    format!("{}- ", " ".repeat(indent))
                };
                if let Some(l) = self.lists.last_mut() {
                    l.cont = marker.chars().count();
                }
                self.marker = Some(marker);
            }
            "dl" => {
                self.boundary()?;
                self.dl += 1;
            }
            "pre" => {
                self.boundary()?;
                self.pre += 1;
            }
            _ if is_block(name) => self.boundary()?,
            _ => {}
        }
        Ok(())
    }

    fn exit(&mut self, i: usize) -> Result<()> {
        let name = self.arena.name(i);
        if name == "br" {
            return Ok(());
        }
        if name == "pre" && self.pre > 0 {
            self.pre -= 1;
            if self.pre == 0 {
                let raw = self.cur.take();
                if self.inline_only() {
                    self.cur.push_text(&raw);
                } else {
                    self.add_lines(raw.trim_matches('\n'), true);
                    self.boundary()?;
                }
            }
            return Ok(());
        }
        if self.pre > 0 {
            return Ok(());
        }
        if name == "table" {
            let depth = self.layout.len();
            self.layout.pop();
            if self.table.is_some() && depth == self.table_depth {
                self.end_row();
                if let Some(t) = self.table.take() {
                    self.cur = Inline::default();
                    let rows = t.into_lines();
                    self.add_lines(&rows, false);
                    self.boundary()?;
                }
                return Ok(());
            }
        }
        if let Some(table) = &mut self.table {
            match name {
                "td" | "th" => table.push_cell(one_line(&self.cur.take())),
                "tr" => self.end_row(),
                "caption" => table.push_caption(one_line(&self.cur.take())),
                _ if is_block(name) => self.cur.space(),
                _ => {}
            }
            return Ok(());
        }
        if let Some(level) = self.heading {
            if heading_level(name).is_some() {
                self.heading = None;
                let text = one_line(&self.cur.take());
                if !text.is_empty() {
                    self.push_block(Block::Heading(level, text))?;
                }
            } else if is_block(name) {
                self.cur.space();
            }
            return Ok(());
        }
        match name {
            "ul" | "ol" | "menu" | "dir" => {
                self.boundary()?;
                self.lists.pop();
                self.marker = None;
                self.flush_if_free()?;
            }
            "dl" => {
                self.boundary()?;
                self.dl = self.dl.saturating_sub(1);
                self.flush_if_free()?;
            }
            _ if is_block(name) => self.boundary()?,
            _ => {}
        }
        Ok(())
    }

    fn end_row(&mut self) {
        let leftover = one_line(&self.cur.take());
        if let Some(table) = &mut self.table {
            table.end_row(leftover);
        }
    }

    /// Ends the current line; outside lists and definition lists, ends the paragraph too.
    fn boundary(&mut self) -> Result<()> {
        let text = self.cur.take();
        self.add_lines(&text, false);
        self.flush_if_free()
    }

    fn flush_if_free(&mut self) -> Result<()> {
        if self.lists.is_empty() && self.dl == 0 && self.table.is_none() {
            self.flush_para()?;
        }
        Ok(())
    }

    /// Appends lines to the paragraph, each under the current list item's marker or
    /// indentation. Verbatim lines keep their leading spaces.
    fn add_lines(&mut self, text: &str, verbatim: bool) {
        if text.trim().is_empty() {
            return;
        }
        let cont = self.lists.last().map_or(0, |l| l.cont);
        for line in text.split('\n') {
            let line = if verbatim {
                line.trim_end()
            } else {
                line.trim()
            };
            if line.is_empty() {
                continue;
            }
            if !self.para.is_empty() {
                self.para.push('\n');
            }
            match self.marker.take() {
                Some(m) => self.para.push_str(&m),
                None => self.para.extend(std::iter::repeat_n(' ', cont)),
            }
            self.para.push_str(line);
        }
    }

    fn flush_para(&mut self) -> Result<()> {
        if !self.para.is_empty() {
            let p = std::mem::take(&mut self.para);
            self.push_block(Block::Paragraph(p))?;
        }
        Ok(())
    }

    fn push_block(&mut self, block: Block) -> Result<()> {
        self.bytes += match &block {
            Block::Heading(_, t) | Block::Paragraph(t) => t.len() + 2,
        };
        if self.bytes > self.limits.max_text_bytes {
            bail!(
                "extracted text exceeds {} bytes (loader.max_text_bytes)",
                self.limits.max_text_bytes
            );
        }
        self.blocks.push(block);
        Ok(())
    }
}
