//! HTML: the main content of a saved page (or an EPUB chapter), as headings and paragraphs.
//!
//! A page is parsed with html5ever (through `scraper`), copied into a flat pre-order arena (a
//! node's subtree is the index range `i..end`, so every walk below is a loop, never a
//! recursion: 100 000 nested `<div>`s cost no stack), and rendered in three steps:
//!
//! 1. **Boilerplate** is marked. *Hard* junk is never read: `script`, `style`, `noscript`,
//!    `template`, `svg`, `iframe`, form controls, `nav`, `aside`, elements that are `hidden`,
//!    `aria-hidden="true"` or `display:none`, and ARIA landmarks of navigation, banner,
//!    contentinfo, complementary, search, menus and toolbars. *Soft* junk is an element whose
//!    `id` or a `class` token names boilerplate (`nav`, `navbar`, `menu`, `sidebar`, `footer`,
//!    `breadcrumb`, `toc`, `cookie`, `banner`, `share`, `related`, `comments`, `pagination`,
//!    `edit`, MediaWiki's `mw-navigation`, `catlinks`, `printfooter`, …), matched at word
//!    boundaries of the token (`site-footer` and `mainNav` match, `content-header` and `editor`
//!    do not). Soft junk is spared when it also names content (`content`, `article`, `main`,
//!    `post`, …), contains the page's `<main>`/`<h1>`, or holds half of the page's text (a
//!    layout wrapper such as `<div class="has-sidebar">`), and never applies inside `pre`/`code`
//!    (highlighters' `class="token comment"`).
//! 2. **The main content** is the best of: `<main>`/`[role=main]`, `<article>` (the largest),
//!    well-known content containers (`#content`, `#mw-content-text`, `.markdown-body`,
//!    `.post-content`, `.rst-content`, …), as long as it holds a quarter of the page's
//!    non-link text; otherwise the walk descends from `<body>` into the child container that
//!    holds 70 % of the non-link text while there is one (a density rule: link text, menus and
//!    link lists, counts for nothing). `header`/`footer` outside it are left out with it.
//! 3. **Blocks** are written: `h1`–`h6` as headings of their level (an `h1` outside the main
//!    content, when it has none, opens it as level 1), paragraphs (`p`, `div` text,
//!    `blockquote` as plain paragraphs, `figcaption`, `dt`/`dd`), lists as one paragraph with one
//!    line per item (`- ` or `1. `, two spaces of indentation per nesting level), `pre` verbatim
//!    with its line breaks, a data table as one paragraph with one line per row and cells joined
//!    by ` | ` (a layout table — one with headings or nested tables — is read as blocks), `br`
//!    as a line break. Links keep their text, images and their `alt` are dropped, ruby
//!    annotations (`rt`/`rp`) are dropped. Whitespace collapses as HTML renders it, except that
//!    a source line break between two CJK characters disappears (CSS Text's segment-break
//!    rule: `向量\n检索` reads `向量检索`, `vector\nsearch` reads `vector search`).
//!
//! Bounds: a page larger than 8× `max_text_bytes` is refused before parsing, and so is a page
//! of more than one element per 8 bytes of `max_text_bytes`, or with a tag
//! of more than [`MAX_ATTRIBUTES`] attributes (or attributes enough in all that the tokenizer's
//! duplicate check, quadratic per tag, would outlast the deadline); elements nested
//! more than [`MAX_DEPTH`] deep are flattened before parsing (html5ever's scope checks are
//! linear in the depth, so 100 000 nested `<div>`s would otherwise take quadratic time) — the
//! depth is followed with the tokenizer's own rules and a model of the tree builder's stack, so
//! that comments, raw text, SVG/MathML content, implied end tags and reopened formatting
//! elements cannot hide it; a page that would make the parser reopen formatting elements
//! without end (`<p><b id=1>x<p><b id=2>x…`) is refused; the deadline is checked every 1024
//! nodes; the rendered text is bounded by `max_text_bytes`.

use std::borrow::Cow;
use std::collections::HashMap;

use anyhow::{Result, bail};
use scraper::Html;

use super::{Extracted, Limits, TextBuilder, one_line};

/// Deepest element nesting handed to the parser; deeper start and end tags are dropped (their
/// text is kept). Real pages nest a few dozen levels.
pub const MAX_DEPTH: usize = 512;

/// A page may be this many times `max_text_bytes` (markup is most of a saved page).
const INPUT_FACTOR: usize = 8;

/// Bytes of `max_text_bytes` per element a page may have (a page of 10 MiB of text may have
/// 1.3 million elements; real pages have a few hundred thousand at most).
const TEXT_BYTES_PER_ELEMENT: usize = 8;

/// Most attributes of one tag (real tags have a handful; the tokenizer's duplicate check
/// costs the square of the count: 200,000 attributes took 35 s).
pub const MAX_ATTRIBUTES: usize = 1024;

/// Most of the sum, over all tags, of the square of their attribute counts (a real page sums
/// to a few million; this much is a fraction of a second of the tokenizer's checks).
const MAX_ATTRIBUTE_WORK: usize = 1 << 27;

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

/// Extracts a web page (already decoded text).
pub fn extract(text: &str, limits: &Limits) -> Result<Extracted> {
    let page = parse(text, Mode::Page, limits)?;
    let mut out = TextBuilder::new(limits);
    write_blocks(&page.blocks, &mut out)?;
    let title = choose_title(page.title.clone(), page.h1.clone());
    Ok(Extracted {
        text: out.finish(),
        title,
        locale: page.locale,
        pages: None,
        synthetic_headings: false,
    })
}

/// Writes blocks through the builder.
pub fn write_blocks(blocks: &[Block], out: &mut TextBuilder) -> Result<()> {
    for block in blocks {
        match block {
            Block::Heading(level, text) => out.heading(*level, text)?,
            Block::Paragraph(text) => out.paragraph(text)?,
        }
    }
    Ok(())
}

/// Parses and renders a document.
pub fn parse(text: &str, mode: Mode, limits: &Limits) -> Result<Page> {
    let doc = Doc::parse(text, mode, limits)?;
    let arena = doc.arena(limits)?;
    arena.page(mode, limits)
}

/// The table of contents of an EPUB 3 navigation document: `(href, label)` of every link in
/// its `<nav epub:type="toc">` (or its first `<nav>`), in order.
pub fn toc_links(text: &str, limits: &Limits) -> Result<Vec<(String, String)>> {
    let doc = Doc::parse(text, Mode::Chapter, limits)?;
    let a = doc.arena(limits)?;
    let navs: Vec<usize> = (0..a.nodes.len()).filter(|&i| a.is(i, "nav")).collect();
    let toc = navs
        .iter()
        .copied()
        .find(|&i| {
            a.attr(i, "epub:type")
                .is_some_and(|t| t.split_ascii_whitespace().any(|t| t == "toc"))
        })
        .or_else(|| navs.first().copied());
    let Some(toc) = toc else {
        return Ok(Vec::new());
    };
    let mut links = Vec::new();
    for i in toc..a.nodes[toc].end {
        if a.is(i, "a")
            && let Some(href) = a.attr(i, "href")
        {
            let label = one_line(&a.text_of(i));
            if !label.is_empty() {
                links.push((href.to_string(), label));
            }
        }
    }
    Ok(links)
}

/// The page's title: `<title>` without a site suffix (or prefix) when what remains is the
/// `<h1>`, else the whole `<title>`; the `<h1>` when there is no `<title>`.
pub fn choose_title(title: Option<String>, h1: Option<String>) -> Option<String> {
    const SEPARATORS: &[&str] = &["-", "|", "—", "–", "·", "::", "»", "«", "_", "｜", "·", ":"];
    match (title, h1) {
        (Some(t), Some(h)) => {
            if t != h {
                if let Some(rest) = t.strip_prefix(h.as_str()) {
                    let rest = rest.trim_start();
                    if SEPARATORS.iter().any(|s| rest.starts_with(s)) {
                        return Some(h);
                    }
                }
                if let Some(rest) = t.strip_suffix(h.as_str()) {
                    let rest = rest.trim_end();
                    if SEPARATORS.iter().any(|s| rest.ends_with(s)) {
                        return Some(h);
                    }
                }
            }
            Some(t)
        }
        (Some(t), None) => Some(t),
        (None, h) => h,
    }
}

/// A BCP 47 tag in its usual case (`zh_cn` → `zh-CN`, `zh-hans-cn` → `zh-Hans-CN`), `None`
/// when the value is not a language tag.
pub fn normalise_locale(value: &str) -> Option<String> {
    let value = value.trim().replace('_', "-");
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    let mut out = Vec::new();
    for (i, part) in value.split('-').enumerate() {
        if part.is_empty() || part.len() > 8 || !part.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let part = if i == 0 {
            if !part.chars().all(|c| c.is_ascii_alphabetic()) {
                return None;
            }
            part.to_ascii_lowercase()
        } else if part.len() == 2 && part.chars().all(|c| c.is_ascii_alphabetic()) {
            part.to_ascii_uppercase()
        } else if part.len() == 4 && part.chars().all(|c| c.is_ascii_alphabetic()) {
            let lower = part.to_ascii_lowercase();
            lower[..1].to_ascii_uppercase() + &lower[1..]
        } else {
            part.to_ascii_lowercase()
        };
        out.push(part);
    }
    if out[0] == "und" {
        return None;
    }
    Some(out.join("-"))
}

// ---------------------------------------------------------------------------------------------
// Parsing

struct Doc {
    html: Html,
}

impl Doc {
    fn parse(text: &str, mode: Mode, limits: &Limits) -> Result<Self> {
        let most = limits.max_text_bytes.saturating_mul(INPUT_FACTOR);
        if text.len() > most {
            bail!(
                "HTML of {} bytes is larger than {} bytes (8 × loader.max_file_bytes): refused",
                text.len(),
                most
            );
        }
        limits.check_time()?;
        // XHTML (a chapter, or a page with an XML prolog) honours self-closing tags.
        let xhtml = mode == Mode::Chapter
            || text
                .trim_start_matches('\u{feff}')
                .trim_start()
                .starts_with("<?xml");
        let max_elements = (limits.max_text_bytes / TEXT_BYTES_PER_ELEMENT).max(1 << 16);
        let prepared = prepare_bounded(text, xhtml, max_elements)?;
        limits.check_time()?;
        let html = std::panic::catch_unwind(|| Html::parse_document(&prepared))
            .map_err(|_| anyhow::anyhow!("damaged HTML: the parser failed on it"))?;
        limits.check_time()?;
        Ok(Self { html })
    }

    /// Copies the tree into a pre-order arena, without recursion.
    fn arena(&self, limits: &Limits) -> Result<Arena<'_>> {
        let mut nodes: Vec<ANode<'_>> = Vec::new();
        let mut stack = vec![(self.html.tree.root(), usize::MAX)];
        while let Some((node, parent)) = stack.pop() {
            if nodes.len() % 1024 == 1023 {
                limits.check_time()?;
            }
            let kind = match node.value() {
                scraper::Node::Element(e) => Kind::Element(e),
                scraper::Node::Text(t) => Kind::Text(t),
                scraper::Node::Document | scraper::Node::Fragment => Kind::Other,
                _ => continue,
            };
            let index = nodes.len();
            nodes.push(ANode {
                kind,
                parent,
                end: index + 1,
            });
            for child in node.children().rev() {
                stack.push((child, index));
            }
        }
        for i in (0..nodes.len()).rev() {
            let (parent, end) = (nodes[i].parent, nodes[i].end);
            if parent != usize::MAX && nodes[parent].end < end {
                nodes[parent].end = end;
            }
        }
        Ok(Arena { nodes })
    }
}

#[derive(Clone, Copy)]
enum Kind<'a> {
    Element(&'a scraper::node::Element),
    Text(&'a str),
    Other,
}

struct ANode<'a> {
    kind: Kind<'a>,
    parent: usize,
    /// One past the last node of this node's subtree.
    end: usize,
}

struct Arena<'a> {
    nodes: Vec<ANode<'a>>,
}

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

impl<'a> Arena<'a> {
    fn name(&self, i: usize) -> &'a str {
        match self.nodes[i].kind {
            Kind::Element(e) if &*e.name.ns == HTML_NS => e.name(),
            // Foreign elements (SVG, MathML) are told apart by a name no HTML element has.
            Kind::Element(e) if e.name() == "svg" || e.name() == "math" => e.name(),
            Kind::Element(_) => "#foreign",
            _ => "",
        }
    }

    fn is(&self, i: usize, name: &str) -> bool {
        self.name(i) == name
    }

    fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        match self.nodes[i].kind {
            Kind::Element(e) => e.attrs().find(|(k, _)| *k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    fn text_of(&self, i: usize) -> String {
        let mut s = String::new();
        for node in &self.nodes[i..self.nodes[i].end] {
            if let Kind::Text(t) = node.kind {
                s.push_str(t);
            }
        }
        s
    }

    fn first(&self, name: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.is(i, name))
    }

    fn page(&self, mode: Mode, limits: &Limits) -> Result<Page> {
        let n = self.nodes.len();
        let html_el = self.first("html");
        let body = self.first("body").or(html_el).unwrap_or(0);
        let locale = html_el
            .into_iter()
            .chain(std::iter::once(body))
            .flat_map(|i| [self.attr(i, "lang"), self.attr(i, "xml:lang")])
            .flatten()
            .find_map(normalise_locale);
        let title = (0..n)
            .find(|&i| self.is(i, "title") && !self.inside(i, "svg"))
            .map(|i| one_line(&self.text_of(i)))
            .filter(|t| !t.is_empty());

        // Marks, inherited top-down (pre-order: a parent comes before its children).
        let mut hard = vec![false; n];
        let mut in_hard = vec![false; n];
        let mut in_link = vec![false; n];
        let mut in_code = vec![false; n];
        let mut in_hf = vec![false; n];
        for i in 0..n {
            let p = self.nodes[i].parent;
            let (ph, pl, pc, pf) = if p == usize::MAX {
                (false, false, false, false)
            } else {
                (in_hard[p], in_link[p], in_code[p], in_hf[p])
            };
            in_hf[i] = pf || (i > body && matches!(self.name(i), "header" | "footer"));
            hard[i] = self.is_hard(i, mode);
            in_hard[i] = ph || hard[i];
            in_link[i] = pl || self.is(i, "a");
            in_code[i] = pc || matches!(self.name(i), "pre" | "code" | "kbd" | "samp");
        }

        if mode == Mode::Chapter {
            let skip = |i: usize| hard[i];
            let h1 = self.first_h1(body, &skip);
            let blocks = Renderer::new(self, limits).run(body, &skip)?;
            return Ok(Page {
                title,
                h1,
                locale,
                blocks,
            });
        }

        // Non-link text per subtree, hard junk left out (bottom-up).
        let mut raw = vec![0usize; n];
        self.sum_text(&mut raw, |i| in_hard[i], &in_link);
        let total = raw[body].max(1);
        let has_marker = self.marker_counts();
        let mut soft = vec![false; n];
        for i in 0..n {
            soft[i] = !in_hard[i]
                && !in_code[i]
                && i != body
                && !self.is(i, "html")
                && !self.is(i, "body")
                && has_marker[i] == 0
                && raw[i] * 2 < total
                && self.is_soft(i);
        }
        let mut in_soft = vec![false; n];
        for i in 0..n {
            let p = self.nodes[i].parent;
            in_soft[i] = soft[i] || (p != usize::MAX && in_soft[p]);
        }
        // Text that counts for choosing the main content: no junk, no header/footer.
        let mut score = vec![0usize; n];
        self.sum_text(
            &mut score,
            |i| in_hard[i] || in_soft[i] || in_hf[i],
            &in_link,
        );

        let main = self.choose_main(body, &score, |i| in_hard[i] || in_soft[i]);
        let skip = |i: usize| {
            i != main && (hard[i] || soft[i] || matches!(self.name(i), "rt" | "rp"))
                || (self.is(i, "sup") && self.has_class(i, "reference"))
        };
        let inner_h1 = self.first_h1(main, &skip);
        let outer_h1 = if inner_h1.is_none() {
            let not_outer = |i: usize| in_hard[i] || in_soft[i] || in_hf[i];
            (body..self.nodes[body].end)
                .find(|&i| self.is(i, "h1") && !not_outer(i))
                .map(|i| one_line(&self.text_of(i)))
                .filter(|t| !t.is_empty())
        } else {
            None
        };
        let mut blocks = Vec::new();
        if let Some(h) = &outer_h1 {
            blocks.push(Block::Heading(1, h.clone()));
        }
        blocks.extend(Renderer::new(self, limits).run(main, &skip)?);
        let h1 = inner_h1.or(outer_h1).or_else(|| {
            (0..n)
                .find(|&i| self.is(i, "h1") && !in_hard[i])
                .map(|i| one_line(&self.text_of(i)))
                .filter(|t| !t.is_empty())
        });
        Ok(Page {
            title,
            h1,
            locale,
            blocks,
        })
    }

    fn first_h1(&self, root: usize, skip: &dyn Fn(usize) -> bool) -> Option<String> {
        let mut i = root;
        while i < self.nodes[root].end {
            if skip(i) {
                i = self.nodes[i].end;
                continue;
            }
            if self.is(i, "h1") {
                let t = one_line(&self.text_of(i));
                if !t.is_empty() {
                    return Some(t);
                }
            }
            i += 1;
        }
        None
    }

    fn inside(&self, mut i: usize, name: &str) -> bool {
        while i != usize::MAX {
            if self.is(i, name) {
                return true;
            }
            i = self.nodes[i].parent;
        }
        false
    }

    /// Adds each text node's non-space, non-link characters to all its ancestors.
    fn sum_text(&self, sums: &mut [usize], left_out: impl Fn(usize) -> bool, in_link: &[bool]) {
        for i in (0..self.nodes.len()).rev() {
            if let Kind::Text(t) = self.nodes[i].kind
                && !in_link[i]
                && !left_out(i)
            {
                sums[i] += t.chars().filter(|c| !c.is_whitespace()).count();
            }
            let p = self.nodes[i].parent;
            if p != usize::MAX {
                sums[p] += sums[i];
            }
        }
    }

    /// For each node, how many `main`, `[role=main]` and `h1` elements its subtree holds.
    fn marker_counts(&self) -> Vec<u32> {
        let n = self.nodes.len();
        let mut counts = vec![0u32; n];
        for i in (0..n).rev() {
            if matches!(self.name(i), "main" | "h1") || self.attr(i, "role") == Some("main") {
                counts[i] += 1;
            }
            let p = self.nodes[i].parent;
            if p != usize::MAX {
                counts[p] += counts[i];
            }
        }
        counts
    }

    fn has_class(&self, i: usize, class: &str) -> bool {
        self.attr(i, "class")
            .is_some_and(|c| c.split_ascii_whitespace().any(|t| t == class))
    }

    fn is_hard(&self, i: usize, mode: Mode) -> bool {
        let name = self.name(i);
        if name.is_empty() {
            return false;
        }
        const ALWAYS: &[&str] = &[
            "head", "script", "style", "noscript", "template", "svg", "math", "#foreign", "iframe",
            "object", "embed", "canvas", "video", "audio", "button", "input", "select", "textarea",
            "option", "datalist", "map", "link", "meta", "title", "base",
        ];
        if ALWAYS.contains(&name) {
            return true;
        }
        if mode == Mode::Chapter {
            return matches!(name, "rt" | "rp");
        }
        if matches!(name, "nav" | "aside" | "dialog" | "menu") {
            return true;
        }
        if self.attr(i, "hidden").is_some() || self.attr(i, "aria-hidden") == Some("true") {
            return true;
        }
        if let Some(style) = self.attr(i, "style") {
            let s: String = style
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase();
            if s.contains("display:none") || s.contains("visibility:hidden") {
                return true;
            }
        }
        if let Some(role) = self.attr(i, "role") {
            let role = role.trim().to_ascii_lowercase();
            if matches!(
                role.as_str(),
                "navigation"
                    | "banner"
                    | "contentinfo"
                    | "complementary"
                    | "search"
                    | "menu"
                    | "menubar"
                    | "toolbar"
                    | "dialog"
                    | "alertdialog"
            ) {
                return true;
            }
        }
        false
    }

    fn is_soft(&self, i: usize) -> bool {
        if self.is(i, "form") {
            return true;
        }
        let mut junk = false;
        let mut content = false;
        let tokens = self.attr(i, "id").into_iter().chain(
            self.attr(i, "class")
                .into_iter()
                .flat_map(|c| c.split_ascii_whitespace()),
        );
        for token in tokens {
            let words = words(token);
            let raw = token.to_ascii_lowercase();
            if BOILERPLATE.iter().any(|p| has_word(&words, p) || raw == *p) {
                junk = true;
            }
            if CONTENT.iter().any(|p| has_word(&words, p)) {
                content = true;
            }
        }
        junk && !content
    }

    fn choose_main(&self, body: usize, score: &[usize], junk: impl Fn(usize) -> bool) -> usize {
        let total = score[body];
        if total == 0 {
            return body;
        }
        let range = body..self.nodes[body].end;
        let best = |pick: &dyn Fn(usize) -> bool| {
            range
                .clone()
                .filter(|&i| pick(i) && !junk(i))
                .max_by_key(|&i| (score[i], usize::MAX - i))
                .filter(|&i| score[i] * 4 >= total)
        };
        let main = |i: usize| self.is(i, "main") || self.attr(i, "role") == Some("main");
        let article = |i: usize| self.is(i, "article");
        let known = |i: usize| {
            let id = self.attr(i, "id").map(str::to_ascii_lowercase);
            id.as_deref().is_some_and(|id| KNOWN_IDS.contains(&id))
                || self.attr(i, "class").is_some_and(|c| {
                    c.split_ascii_whitespace()
                        .any(|t| KNOWN_CLASSES.contains(&t.to_ascii_lowercase().as_str()))
                })
        };
        if let Some(m) = best(&main)
            .or_else(|| best(&article))
            .or_else(|| best(&known))
        {
            return m;
        }
        // Density: descend while one child container holds most of the text.
        let mut node = body;
        loop {
            let mut best_child = None;
            let mut j = node + 1;
            while j < self.nodes[node].end {
                if best_child.is_none_or(|b: usize| score[j] > score[b]) {
                    best_child = Some(j);
                }
                j = self.nodes[j].end;
            }
            match best_child {
                Some(c) if score[c] * 10 >= score[node] * 7 && self.descendable(c) => node = c,
                _ => return node,
            }
        }
    }

    /// Whether the density walk may descend into `c`: a container, not a data table's part.
    fn descendable(&self, c: usize) -> bool {
        match self.name(c) {
            "div" | "section" | "article" | "main" | "form" | "center" | "font" => true,
            "table" => self.is_layout_table(c),
            "tbody" | "tr" | "td" => self.inside_layout_table(c),
            _ => false,
        }
    }

    fn inside_layout_table(&self, mut i: usize) -> bool {
        while i != usize::MAX {
            if self.is(i, "table") {
                return self.is_layout_table(i);
            }
            i = self.nodes[i].parent;
        }
        false
    }

    /// Whether table `t` lays out a page rather than holding data: it holds headings or tables.
    fn is_layout_table(&self, t: usize) -> bool {
        (t + 1..self.nodes[t].end).any(|i| {
            matches!(
                self.name(i),
                "table" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "article" | "section"
            )
        })
    }
}

/// Boilerplate names, matched against the words of an `id` or `class` token.
const BOILERPLATE: &[&str] = &[
    "nav",
    "navbar",
    "navbox",
    "navigation",
    "menu",
    "menubar",
    "sidebar",
    "side-bar",
    "sidenav",
    "topbar",
    "footer",
    "breadcrumb",
    "breadcrumbs",
    "toc",
    "table-of-contents",
    "on-this-page",
    "cookie",
    "cookies",
    "consent",
    "banner",
    "advert",
    "advertisement",
    "ads",
    "adsbygoogle",
    "sponsor",
    "share",
    "sharing",
    "social",
    "related",
    "comment",
    "comments",
    "pagination",
    "pager",
    "edit",
    "editsection",
    "skip-link",
    "skip-to-content",
    "skiplink",
    "jump-to",
    "jump-link",
    "mw-navigation",
    "mw-panel",
    "mw-head",
    "catlinks",
    "printfooter",
    "sitesub",
    "contentsub",
    "newsletter",
    "subscribe",
    "popup",
    "headerlink",
    "hash-link",
    "header-anchor",
    "anchorjs-link",
    "sr-only",
    "visually-hidden",
    "screen-reader-text",
];

/// Names that say an element is content, which sparing it from [`BOILERPLATE`].
const CONTENT: &[&str] = &[
    "content", "article", "main", "post", "entry", "body", "story",
];

const KNOWN_IDS: &[&str] = &[
    "content",
    "main-content",
    "maincontent",
    "main",
    "mw-content-text",
    "bodycontent",
    "article",
    "article-content",
    "post",
    "primary",
];

const KNOWN_CLASSES: &[&str] = &[
    "markdown-body",
    "post-content",
    "entry-content",
    "article-content",
    "article-body",
    "post-body",
    "rst-content",
    "md-content",
    "theme-doc-markdown",
    "markdown",
    "prose",
    "document",
    "page-content",
    "main-content",
    "content",
];

/// The words of an `id`/`class` token: lower-cased, split at `-`, `_`, `.`, `:` and camel case.
fn words(token: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in token.chars() {
        if matches!(c, '-' | '_' | '.' | ':' | '/') {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether `pattern` (words joined by `-`) occurs as consecutive words.
fn has_word(words: &[String], pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('-').collect();
    words
        .windows(parts.len())
        .any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
}

// ---------------------------------------------------------------------------------------------
// Rendering

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

struct List {
    ordered: bool,
    next: u64,
    /// Indentation of this list's markers.
    base: usize,
    /// Indentation of the current item's continuation lines.
    cont: usize,
}

#[derive(Default)]
struct Table {
    rows: Vec<String>,
    cells: Vec<String>,
}

struct Renderer<'r, 'a> {
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
    fn new(arena: &'r Arena<'a>, limits: &'r Limits) -> Self {
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

    fn run(mut self, root: usize, skip: &dyn Fn(usize) -> bool) -> Result<Vec<Block>> {
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
                    let rows = t.rows.join("\n");
                    self.add_lines(&rows, false);
                    self.boundary()?;
                }
                return Ok(());
            }
        }
        if let Some(table) = &mut self.table {
            match name {
                "td" | "th" => {
                    let cell = one_line(&self.cur.take());
                    table.cells.push(cell);
                }
                "tr" => self.end_row(),
                "caption" => {
                    let caption = one_line(&self.cur.take());
                    if !caption.is_empty() {
                        table.rows.push(caption);
                    }
                }
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
            if !leftover.is_empty() {
                table.cells.push(leftover);
            }
            if table.cells.iter().any(|c| !c.is_empty()) {
                table.rows.push(table.cells.join(" | "));
            }
            table.cells.clear();
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

// ---------------------------------------------------------------------------------------------
// Preparing the source

/// HTML elements without content (in SVG and MathML any element may have content).
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// HTML elements whose content the tokenizer reads as text up to their end tag (`script` has
/// its own rules). In SVG and MathML they are ordinary elements.
const RAW: &[&str] = &[
    "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Table parts: tracked (they bound scopes) but not counted as depth — a table nests only
/// through a `<table>`, which is counted.
const TABLE_PARTS: &[&str] = &["caption", "tbody", "thead", "tfoot", "tr", "td", "th"];

/// Start tags that close an open `p` first.
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "menu",
    "pre",
    "listing",
    "form",
    "hr",
    "xmp",
    "plaintext",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
];

/// End tags that close their element only when it is in (default) scope.
const SCOPED_END: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "button",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "listing",
    "main",
    "menu",
    "nav",
    "ol",
    "pre",
    "search",
    "section",
    "summary",
    "ul",
    "applet",
    "marquee",
    "object",
    "dd",
    "dt",
];

/// The parser's special elements (html5ever's list): an end tag of another element stops at
/// them.
const SPECIAL: &[&str] = &[
    "address",
    "applet",
    "area",
    "article",
    "aside",
    "base",
    "basefont",
    "bgsound",
    "blockquote",
    "body",
    "br",
    "button",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dir",
    "div",
    "dl",
    "dt",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "iframe",
    "img",
    "input",
    "isindex",
    "li",
    "link",
    "listing",
    "main",
    "marquee",
    "menu",
    "meta",
    "nav",
    "noembed",
    "noframes",
    "noscript",
    "object",
    "ol",
    "p",
    "param",
    "plaintext",
    "pre",
    "script",
    "section",
    "select",
    "source",
    "style",
    "summary",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
    "wbr",
    "xmp",
];

/// Start tags that leave SVG or MathML content (`font` too, with `color`, `face` or `size`).
const BREAKOUT: &[&str] = &[
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
];

/// Elements whose start tag closes an open element of their kind (or that the parser closes
/// when the next one starts).
const SELF_CLOSING_RUNS: &[&str] = &[
    "p", "li", "dd", "dt", "option", "optgroup", "rb", "rt", "rtc", "rp", "h1", "h2", "h3", "h4",
    "h5", "h6",
];

const HEADINGS: &[&str] = &["h1", "h2", "h3", "h4", "h5", "h6"];

/// Public identifiers of doctypes that put the parser in quirks mode (prefixes, lowercase).
const QUIRKY_PUBLIC_PREFIXES: &[&str] = &[
    "-//advasoft ltd//dtd html 3.0 aswedit + extensions//",
    "-//as//dtd html 3.0 aswedit + extensions//",
    "-//ietf//dtd html 2.0 level 1//",
    "-//ietf//dtd html 2.0 level 2//",
    "-//ietf//dtd html 2.0 strict level 1//",
    "-//ietf//dtd html 2.0 strict level 2//",
    "-//ietf//dtd html 2.0 strict//",
    "-//ietf//dtd html 2.0//",
    "-//ietf//dtd html 2.1e//",
    "-//ietf//dtd html 3.0//",
    "-//ietf//dtd html 3.2 final//",
    "-//ietf//dtd html 3.2//",
    "-//ietf//dtd html 3//",
    "-//ietf//dtd html level 0//",
    "-//ietf//dtd html level 1//",
    "-//ietf//dtd html level 2//",
    "-//ietf//dtd html level 3//",
    "-//ietf//dtd html strict level 0//",
    "-//ietf//dtd html strict level 1//",
    "-//ietf//dtd html strict level 2//",
    "-//ietf//dtd html strict level 3//",
    "-//ietf//dtd html strict//",
    "-//ietf//dtd html//",
    "-//metrius//dtd metrius presentational//",
    "-//microsoft//dtd internet explorer 2.0 html strict//",
    "-//microsoft//dtd internet explorer 2.0 html//",
    "-//microsoft//dtd internet explorer 2.0 tables//",
    "-//microsoft//dtd internet explorer 3.0 html strict//",
    "-//microsoft//dtd internet explorer 3.0 html//",
    "-//microsoft//dtd internet explorer 3.0 tables//",
    "-//netscape comm. corp.//dtd html//",
    "-//netscape comm. corp.//dtd strict html//",
    "-//o'reilly and associates//dtd html 2.0//",
    "-//o'reilly and associates//dtd html extended 1.0//",
    "-//o'reilly and associates//dtd html extended relaxed 1.0//",
    "-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//",
    "-//softquad//dtd hotmetal pro 4.0::19971010::extensions to html 4.0//",
    "-//spyglass//dtd html 2.0 extended//",
    "-//sq//dtd html 2.0 hotmetal + extensions//",
    "-//sun microsystems corp.//dtd hotjava html//",
    "-//sun microsystems corp.//dtd hotjava strict html//",
    "-//w3c//dtd html 3 1995-03-24//",
    "-//w3c//dtd html 3.2 draft//",
    "-//w3c//dtd html 3.2 final//",
    "-//w3c//dtd html 3.2//",
    "-//w3c//dtd html 3.2s draft//",
    "-//w3c//dtd html 4.0 frameset//",
    "-//w3c//dtd html 4.0 transitional//",
    "-//w3c//dtd html experimental 19960712//",
    "-//w3c//dtd html experimental 970421//",
    "-//w3c//dtd w3 html//",
    "-//w3o//dtd w3 html 3.0//",
    "-//webtechs//dtd mozilla html 2.0//",
    "-//webtechs//dtd mozilla html//",
];

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// True when `b[at..]` starts with `word` (ASCII, any case) followed by a tag-name delimiter.
fn tag_name_at(b: &[u8], at: usize, word: &str) -> bool {
    let end = at + word.len();
    end < b.len()
        && b[at..end].eq_ignore_ascii_case(word.as_bytes())
        && (is_space(b[end]) || b[end] == b'/' || b[end] == b'>')
}

/// Where a comment whose text starts at `from` (just after `<!--`) ends, as the tokenizer
/// ends it: at once on `>` or `->`, else after the first `-->` or `--!>`, else at the end.
fn comment_end(src: &str, from: usize) -> usize {
    let rest = &src[from..];
    if rest.starts_with('>') {
        return from + 1;
    }
    if rest.starts_with("->") {
        return from + 2;
    }
    let close = rest.find("-->").map(|e| from + e + 3);
    let bang = rest.find("--!>").map(|e| from + e + 4);
    match (close, bang) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(src.len()),
    }
}

/// After the first `>` from `from` (a bogus comment, a doctype), or the end.
fn after_gt(src: &str, from: usize) -> usize {
    src[from..].find('>').map_or(src.len(), |e| from + e + 1)
}

/// Where the RCDATA/RAWTEXT content of element `name` starting at `from` ends: the `<` of its
/// end tag, or the end of the source.
fn raw_end(src: &str, from: usize, name: &str) -> usize {
    let b = src.as_bytes();
    let mut k = from;
    while let Some(off) = src[k..].find("</") {
        let at = k + off;
        if tag_name_at(b, at + 2, name) {
            return at;
        }
        k = at + 2;
    }
    b.len()
}

/// Where the content of a `<script>` starting at `from` ends: the `<` of its end tag, or the
/// end of the source, following the tokenizer's script-data states (`<!--` escapes, and a
/// `<script>` inside an escape hides the next `</script>`).
fn script_end(src: &str, from: usize) -> usize {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Data,
        Esc,
        EscDash,
        EscDashDash,
        Double,
        DoubleDash,
        DoubleDashDash,
    }
    let b = src.as_bytes();
    let mut s = S::Data;
    let mut k = from;
    while k < b.len() {
        if s == S::Data {
            let Some(off) = src[k..].find('<') else {
                return b.len();
            };
            let at = k + off;
            if b.get(at + 1) == Some(&b'/') && tag_name_at(b, at + 2, "script") {
                return at;
            }
            if src[at + 1..].starts_with("!--") {
                s = S::EscDashDash;
                k = at + 4;
            } else {
                k = at + 1;
            }
            continue;
        }
        let c = b[k];
        k += 1;
        s = match (s, c) {
            (S::Esc | S::EscDash | S::EscDashDash, b'<') => {
                if b.get(k) == Some(&b'/') && tag_name_at(b, k + 1, "script") {
                    return k - 1;
                }
                if tag_name_at(b, k, "script") {
                    k += 7;
                    S::Double
                } else {
                    S::Esc
                }
            }
            (S::Double | S::DoubleDash | S::DoubleDashDash, b'<') => {
                if b.get(k) == Some(&b'/') && tag_name_at(b, k + 1, "script") {
                    k += 8;
                    S::Esc
                } else {
                    S::Double
                }
            }
            (S::Esc, b'-') => S::EscDash,
            (S::EscDash | S::EscDashDash, b'-') => S::EscDashDash,
            (S::EscDashDash | S::DoubleDashDash, b'>') => S::Data,
            (S::Esc | S::EscDash | S::EscDashDash, _) => S::Esc,
            (S::Double, b'-') => S::DoubleDash,
            (S::DoubleDash | S::DoubleDashDash, b'-') => S::DoubleDashDash,
            _ => S::Double,
        };
    }
    b.len()
}

/// Scans a tag's attributes from `j` (just after its name) as the tokenizer does; the end of
/// the tag and whether it is self-closing, or `None` when the source ends inside it. The
/// ranges of the attribute names are left in `names`.
fn scan_tag(b: &[u8], mut j: usize, names: &mut Vec<(usize, usize)>) -> Option<(usize, bool)> {
    #[derive(Clone, Copy)]
    enum S {
        BeforeName,
        Name(usize),
        AfterName,
        BeforeValue,
        Quoted(u8),
        Unquoted,
        AfterQuoted,
        SelfClosing,
    }
    names.clear();
    let mut s = S::BeforeName;
    while j < b.len() {
        let c = b[j];
        j += 1;
        s = match s {
            S::BeforeName | S::AfterName if is_space(c) => s,
            S::BeforeName | S::AfterName | S::AfterQuoted if c == b'/' => S::SelfClosing,
            S::BeforeName
            | S::AfterName
            | S::BeforeValue
            | S::Unquoted
            | S::AfterQuoted
            | S::SelfClosing
                if c == b'>' =>
            {
                return Some((j, matches!(s, S::SelfClosing)));
            }
            S::AfterName if c == b'=' => S::BeforeValue,
            S::BeforeName | S::AfterName => S::Name(j - 1),
            S::Name(start) if is_space(c) || c == b'/' || c == b'>' || c == b'=' => {
                names.push((start, j - 1));
                j -= 1;
                if c == b'=' {
                    j += 1;
                    S::BeforeValue
                } else {
                    S::AfterName
                }
            }
            S::Name(_) => s,
            S::BeforeValue if is_space(c) => s,
            S::BeforeValue if c == b'"' || c == b'\'' => S::Quoted(c),
            S::BeforeValue => S::Unquoted,
            S::Quoted(q) if c == q => S::AfterQuoted,
            S::Quoted(_) => s,
            S::Unquoted | S::AfterQuoted if is_space(c) => S::BeforeName,
            S::Unquoted => s,
            S::AfterQuoted | S::SelfClosing => {
                j -= 1;
                S::BeforeName
            }
        };
    }
    None
}

/// Whether a doctype (its text after `<!doctype`) puts the parser in quirks mode.
fn doctype_quirks(text: &str) -> bool {
    let text = text.trim_end_matches('>');
    let mut rest = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let name_len = rest
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..name_len].to_ascii_lowercase();
    rest = rest[name_len..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    if name != "html" {
        return true;
    }
    // A quoted identifier after a keyword; `None` when it is missing or unterminated.
    fn quoted(s: &str) -> Option<(String, &str)> {
        let s = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
        let q = s.chars().next().filter(|&c| c == '"' || c == '\'')?;
        let end = s[1..].find(q)?;
        Some((s[1..1 + end].to_ascii_lowercase(), &s[2 + end..]))
    }
    let keyword = |s: &str, k: &str| s.len() >= k.len() && s[..k.len()].eq_ignore_ascii_case(k);
    let (public, system) = if rest.is_empty() {
        (None, None)
    } else if keyword(rest, "public") {
        let Some((public, after)) = quoted(&rest[6..]) else {
            return true;
        };
        let after = after.trim_start_matches(|c: char| c.is_ascii_whitespace());
        if after.is_empty() {
            (Some(public), None)
        } else {
            let Some((system, _)) = quoted(after) else {
                return true;
            };
            (Some(public), Some(system))
        }
    } else if keyword(rest, "system") {
        let Some((system, _)) = quoted(&rest[6..]) else {
            return true;
        };
        (None, Some(system))
    } else {
        return true;
    };
    if system.as_deref() == Some("http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd") {
        return true;
    }
    let Some(p) = public else { return false };
    matches!(
        p.as_str(),
        "-//w3o//dtd w3 html strict 3.0//en//" | "-/w3c/dtd html 4.0 transitional/en" | "html"
    ) || QUIRKY_PUBLIC_PREFIXES.iter().any(|x| p.starts_with(x))
        || (system.is_none()
            && (p.starts_with("-//w3c//dtd html 4.01 frameset//")
                || p.starts_with("-//w3c//dtd html 4.01 transitional//")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Html,
    Svg,
    Math,
}

/// An element open in the model of the parser's stack.
struct Open {
    name: String,
    ns: Ns,
    /// Counted as depth (table parts are not).
    counted: bool,
    /// [`SPECIAL_FLAG`] and the scopes it bounds, worked out once.
    flags: u8,
    /// Which element this is (the list of active formatting elements refers to it).
    id: u64,
}

/// An entry of the list of active formatting elements: the element's name, its attributes
/// (as written; the parser compares them parsed, so this tells more entries apart, never
/// fewer) and the element it stands for.
struct Formatting {
    name: String,
    attrs: String,
    id: u64,
}

/// Formatting elements: the parser remembers them and reopens them ("reconstructs" them)
/// when the elements that closed them are done, whatever the source says.
const FORMATTING: &[&str] = &[
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// Start tags (in a body) that do not reopen closed formatting elements; all others do, and
/// so does text. Reopening where the parser does not would be no safer: the model would keep
/// open what the parser closes and reopens again and again.
const KEEP_CLOSED: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "menu",
    "pre",
    "listing",
    "form",
    "hr",
    "plaintext",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "dd",
    "dt",
    "table",
    "textarea",
    "rb",
    "rt",
    "rtc",
    "rp",
    "param",
    "source",
    "track",
    "template",
    "script",
    "style",
    "title",
    "noscript",
    "noframes",
    "noembed",
    "iframe",
    "html",
    "head",
    "body",
    "colgroup",
    "col",
    "frameset",
    "frame",
    "base",
    "basefont",
    "bgsound",
    "link",
    "meta",
];

/// Elements whose opening puts a marker in the list of formatting elements.
const MARKERS: &[&str] = &[
    "applet", "object", "marquee", "template", "td", "th", "caption",
];

/// Most entries of the list of formatting elements; a formatting start tag past it is dropped
/// like a too deep one (every entry may be reopened at each piece of text).
const MAX_FORMATTING: usize = 32;

/// How many formatting elements the parser may reopen, for a source of `len` bytes: past it
/// the page is refused (before html5ever sees it). Each reopening is an element the parser
/// creates that the source does not have: `<p><b id=1>x<p><b id=2>x…` makes it reopen every
/// earlier `b` in every paragraph (6.4 million elements and 16 s for 100 000 paragraphs with
/// the list bounded at 64). Real pages reopen a few elements per paragraph at most; a
/// million, and one per 8 bytes beyond, is about as many elements as plain markup makes.
fn max_reopened(len: usize) -> usize {
    (1 << 20) + len / 8
}

const SPECIAL_FLAG: u8 = 1;
const DEFAULT_FLAG: u8 = 2;
const LIST_ITEM_FLAG: u8 = 4;
const BUTTON_FLAG: u8 = 8;
const TABLE_FLAG: u8 = 16;

impl Open {
    fn html(&self, name: &str) -> bool {
        self.ns == Ns::Html && self.name == name
    }

    fn html_in(&self, names: &[&str]) -> bool {
        self.ns == Ns::Html && names.contains(&self.name.as_str())
    }

    /// A MathML text integration point or an SVG HTML integration point.
    fn integration_point(&self) -> bool {
        match self.ns {
            Ns::Html => false,
            Ns::Math => matches!(self.name.as_str(), "mi" | "mo" | "mn" | "ms" | "mtext"),
            Ns::Svg => matches!(self.name.as_str(), "foreignobject" | "desc" | "title"),
        }
    }
}

#[derive(Clone, Copy)]
enum Scope {
    Default,
    ListItem,
    Button,
    Table,
}

/// What a start tag does to the source scan.
enum Start {
    /// Opens an element of this namespace.
    Push(Ns),
    /// Opens a table part (tracked, not counted).
    Part,
    /// Its content is text up to its end tag (`true`: script data).
    Raw(bool),
    /// The rest of the source is text.
    Plaintext,
    /// Nothing is opened.
    None,
}

/// A model of html5ever's stack of open elements, as far as its depth goes. It errs towards
/// keeping elements open (more depth, so more flattening), never towards closing more than
/// the parser does.
#[derive(Default)]
struct Tree {
    stack: Vec<Open>,
    /// The list of active formatting elements (`None`: a marker).
    formatting: Vec<Option<Formatting>>,
    open_ids: std::collections::HashSet<u64>,
    next_id: u64,
    /// How many formatting elements were reopened.
    reopened: usize,
    /// How many HTML elements of each name are open.
    open: HashMap<String, usize>,
    depth: usize,
    quirks: bool,
    form: bool,
}

impl Tree {
    fn top(&self) -> Option<&Open> {
        self.stack.last()
    }

    fn truncate(&mut self, len: usize) {
        let gone: Vec<Open> = self.stack.drain(len.min(self.stack.len())..).collect();
        for o in gone.iter().rev() {
            self.forget(o);
        }
    }

    fn pop(&mut self) {
        self.truncate(self.stack.len().saturating_sub(1));
    }

    fn push(&mut self, name: &str, ns: Ns, counted: bool) {
        self.depth += usize::from(counted);
        self.next_id += 1;
        let mut o = Open {
            name: name.to_string(),
            ns,
            counted,
            flags: 0,
            id: self.next_id,
        };
        self.open_ids.insert(o.id);
        if o.html_in(MARKERS) {
            self.formatting.push(None);
        }
        let default = o.integration_point()
            || o.html_in(&[
                "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
            ]);
        for (set, flag) in [
            (o.html_in(SPECIAL), SPECIAL_FLAG),
            (default, DEFAULT_FLAG | LIST_ITEM_FLAG | BUTTON_FLAG),
            (o.html_in(&["ol", "ul"]), LIST_ITEM_FLAG),
            (o.html("button"), BUTTON_FLAG),
            (o.html_in(&["html", "table", "template"]), TABLE_FLAG),
        ] {
            if set {
                o.flags |= flag;
            }
        }
        if ns == Ns::Html {
            *self.open.entry(o.name.clone()).or_default() += 1;
        }
        self.stack.push(o);
    }

    /// Adds the formatting element just opened to the list (at most three alike after the
    /// last marker: the earliest goes).
    fn remember(&mut self, attrs: &str) {
        let Some(o) = self.stack.last() else { return };
        let (name, id) = (o.name.clone(), o.id);
        let start = self
            .formatting
            .iter()
            .rposition(Option::is_none)
            .map_or(0, |m| m + 1);
        let alike: Vec<usize> = (start..self.formatting.len())
            .filter(|&k| {
                self.formatting[k]
                    .as_ref()
                    .is_some_and(|f| f.name == name && f.attrs == attrs)
            })
            .collect();
        if alike.len() >= 3 {
            self.formatting.remove(alike[0]);
        }
        self.formatting.push(Some(Formatting {
            name,
            attrs: attrs.to_string(),
            id,
        }));
    }

    /// Reopens the formatting elements of the list (after its last marker) that are closed.
    fn reconstruct(&mut self) {
        let n = self.formatting.len();
        match self.formatting.last() {
            Some(Some(f)) if !self.open_ids.contains(&f.id) => {}
            _ => return,
        }
        let mut k = n - 1;
        while k > 0 {
            match &self.formatting[k - 1] {
                Some(f) if !self.open_ids.contains(&f.id) => k -= 1,
                _ => break,
            }
        }
        for j in k..n {
            let Some(name) = self.formatting[j].as_ref().map(|f| f.name.clone()) else {
                continue;
            };
            self.push(&name, Ns::Html, true);
            self.reopened += 1;
            let id = self.next_id;
            if let Some(f) = self.formatting[j].as_mut() {
                f.id = id;
            }
        }
    }

    /// The adoption agency for the end tag (or, for `a` and `nobr`, a new start tag) of
    /// formatting element `name`, as far as depth goes: with nothing special open above it,
    /// the element closes (and leaves the list); otherwise the parser moves elements about
    /// and the depth stays.
    fn adopt(&mut self, name: &str) {
        if let Some(top) = self.top()
            && top.html(name)
            && !self.formatting.iter().flatten().any(|f| f.id == top.id)
        {
            self.pop();
            return;
        }
        let Some(k) = self
            .formatting
            .iter()
            .rposition(|f| f.as_ref().is_none_or(|f| f.name == name))
        else {
            return self.close_generic(name);
        };
        let Some(id) = self.formatting[k].as_ref().map(|f| f.id) else {
            return self.close_generic(name);
        };
        let Some(at) = self.stack.iter().rposition(|o| o.id == id) else {
            self.formatting.remove(k);
            return;
        };
        if !self.stack[at + 1..]
            .iter()
            .any(|o| o.flags & SPECIAL_FLAG != 0)
        {
            self.truncate(at);
            self.formatting
                .retain(|f| f.as_ref().is_none_or(|f| f.id != id));
        }
    }

    /// Whether an HTML element named in `names` is open at all (most scans are then spared).
    fn any_open(&self, names: &[&str]) -> bool {
        names
            .iter()
            .any(|n| self.open.get(*n).is_some_and(|&c| c > 0))
    }

    fn forget(&mut self, o: &Open) {
        self.depth -= usize::from(o.counted);
        self.open_ids.remove(&o.id);
        if o.html_in(MARKERS) {
            // Closing a cell, caption, object, … clears the list up to its marker.
            while let Some(Some(_)) = self.formatting.pop() {}
        }
        if o.ns == Ns::Html
            && let Some(c) = self.open.get_mut(&o.name)
        {
            *c -= 1;
        }
    }

    fn boundary(o: &Open, scope: Scope) -> bool {
        let flag = match scope {
            Scope::Default => DEFAULT_FLAG,
            Scope::ListItem => LIST_ITEM_FLAG,
            Scope::Button => BUTTON_FLAG,
            Scope::Table => TABLE_FLAG,
        };
        o.flags & flag != 0
    }

    /// The index of the nearest HTML element named in `names`, when it is in `scope`.
    fn in_scope(&self, names: &[&str], scope: Scope) -> Option<usize> {
        if !self.any_open(names) {
            return None;
        }
        for (i, o) in self.stack.iter().enumerate().rev() {
            if o.html_in(names) {
                return Some(i);
            }
            if Self::boundary(o, scope) {
                return None;
            }
        }
        None
    }

    fn close_in_scope(&mut self, names: &[&str], scope: Scope) {
        if let Some(i) = self.in_scope(names, scope) {
            self.truncate(i);
        }
    }

    /// An end tag of an ordinary element: closes the nearest one unless a special element is
    /// open above it.
    fn close_generic(&mut self, name: &str) {
        if !self.any_open(&[name]) {
            return;
        }
        for (i, o) in self.stack.iter().enumerate().rev() {
            if o.html(name) {
                self.truncate(i);
                return;
            }
            if o.flags & SPECIAL_FLAG != 0 {
                return;
            }
        }
    }

    fn in_select(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|o| !o.html_in(&["option", "optgroup"]))
            .is_some_and(|o| o.html("select"))
    }

    /// Whether a table is open below the nearest `select`.
    fn select_in_table(&self) -> bool {
        self.stack
            .iter()
            .rposition(|o| o.html("select"))
            .is_some_and(|s| self.stack[..s].iter().any(|o| o.html("table")))
    }

    fn pop_until(&mut self, name: &str) {
        if let Some(i) = self.stack.iter().rposition(|o| o.html(name)) {
            self.truncate(i);
        }
    }

    /// Pops to the nearest open table (kept), when one is in table scope.
    fn pop_to_table(&mut self) {
        if let Some(i) = self.in_scope(&["table"], Scope::Table) {
            self.truncate(i + 1);
        }
    }

    /// Whether the parser is in a table insertion mode (the nearest table element open is
    /// a table, a row group or a row, not a cell or a caption).
    fn table_mode(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|o| o.html_in(TABLE_PARTS) || o.html("table"))
            .is_some_and(|o| !o.html_in(&["td", "th", "caption"]))
    }

    fn start(&mut self, name: &str, self_closing: bool, font_attr: bool) -> Start {
        loop {
            if let Some(top) = self.top()
                && top.ns != Ns::Html
            {
                let html_rules = match top.ns {
                    Ns::Math if top.name == "annotation-xml" => name == "svg",
                    Ns::Math => top.integration_point() && name != "mglyph" && name != "malignmark",
                    _ => top.integration_point(),
                };
                if !html_rules {
                    if BREAKOUT.contains(&name) || (name == "font" && font_attr) {
                        while self
                            .top()
                            .is_some_and(|o| o.ns != Ns::Html && !o.integration_point())
                        {
                            self.pop();
                        }
                    } else {
                        let ns = top.ns;
                        return if self_closing {
                            Start::None
                        } else {
                            Start::Push(ns)
                        };
                    }
                }
            }
            if self.in_select() {
                match name {
                    "option" | "optgroup" | "hr" => {
                        if self.top().is_some_and(|o| o.html("option")) {
                            self.pop();
                        }
                        if name != "option" && self.top().is_some_and(|o| o.html("optgroup")) {
                            self.pop();
                        }
                        return if name == "hr" {
                            Start::None
                        } else {
                            Start::Push(Ns::Html)
                        };
                    }
                    "select" => {
                        self.pop_until("select");
                        return Start::None;
                    }
                    "input" | "keygen" | "textarea" => {
                        self.pop_until("select");
                        continue;
                    }
                    "caption" | "table" | "tbody" | "tfoot" | "thead" | "tr" | "td" | "th"
                        if self.select_in_table() =>
                    {
                        self.pop_until("select");
                        continue;
                    }
                    "script" => return Start::Raw(true),
                    "template" => return Start::Push(Ns::Html),
                    _ => return Start::None,
                }
            }
            let started = match name {
                "svg" | "math" => {
                    if self_closing {
                        Start::None
                    } else if name == "svg" {
                        Start::Push(Ns::Svg)
                    } else {
                        Start::Push(Ns::Math)
                    }
                }
                "html" | "head" | "body" | "colgroup" => Start::None,
                "script" => Start::Raw(true),
                "plaintext" => {
                    self.close_in_scope(&["p"], Scope::Button);
                    Start::Plaintext
                }
                _ if RAW.contains(&name) => {
                    if name == "xmp" {
                        self.close_in_scope(&["p"], Scope::Button);
                    }
                    Start::Raw(false)
                }
                _ if VOID.contains(&name) => {
                    if name == "hr" {
                        self.close_in_scope(&["p"], Scope::Button);
                    }
                    Start::None
                }
                "table" => {
                    if self.table_mode() && self.in_scope(&["table"], Scope::Table).is_some() {
                        // A table directly in a table closes it.
                        self.pop_until("table");
                    } else if !self.quirks {
                        self.close_in_scope(&["p"], Scope::Button);
                    }
                    Start::Push(Ns::Html)
                }
                _ if TABLE_PARTS.contains(&name) => {
                    if self.in_scope(&["table"], Scope::Table).is_none() {
                        return Start::None;
                    }
                    match name {
                        "td" | "th" => {
                            if let Some(i) = self.in_scope(&["td", "th"], Scope::Table) {
                                self.truncate(i);
                            }
                            match self.in_scope(&["tr"], Scope::Table) {
                                Some(i) => self.truncate(i + 1),
                                None => {
                                    self.pop_to_table();
                                    self.push("tr", Ns::Html, false);
                                }
                            }
                        }
                        "tr" => match self.in_scope(&["tbody", "thead", "tfoot"], Scope::Table) {
                            Some(i) => self.truncate(i + 1),
                            None => {
                                self.pop_to_table();
                            }
                        },
                        _ => {
                            self.pop_to_table();
                        }
                    }
                    Start::Part
                }
                "form" => {
                    if self.form && !self.stack.iter().any(|o| o.html("template")) {
                        Start::None
                    } else {
                        self.close_in_scope(&["p"], Scope::Button);
                        Start::Push(Ns::Html)
                    }
                }
                "li" | "dd" | "dt" => {
                    let closes: &[&str] = if name == "li" { &["li"] } else { &["dd", "dt"] };
                    // The nearest `li` (or `dd`/`dt`) closes, unless a special element other
                    // than `address`, `div` and `p` is open above it.
                    let stop = |o: &Open| {
                        o.flags & SPECIAL_FLAG != 0 && !o.html_in(&["address", "div", "p"])
                    };
                    if self.any_open(closes)
                        && let Some(i) = self
                            .stack
                            .iter()
                            .rposition(|o| o.html_in(closes) || stop(o))
                        && self.stack[i].html_in(closes)
                    {
                        self.truncate(i);
                    }
                    self.close_in_scope(&["p"], Scope::Button);
                    Start::Push(Ns::Html)
                }
                _ if HEADINGS.contains(&name) => {
                    self.close_in_scope(&["p"], Scope::Button);
                    if self.top().is_some_and(|o| o.html_in(HEADINGS)) {
                        self.pop();
                    }
                    Start::Push(Ns::Html)
                }
                _ if CLOSES_P.contains(&name) => {
                    self.close_in_scope(&["p"], Scope::Button);
                    Start::Push(Ns::Html)
                }
                "button" => {
                    self.close_in_scope(&["button"], Scope::Default);
                    Start::Push(Ns::Html)
                }
                "a" => {
                    let start = self
                        .formatting
                        .iter()
                        .rposition(Option::is_none)
                        .map_or(0, |m| m + 1);
                    if self.formatting[start..]
                        .iter()
                        .flatten()
                        .any(|f| f.name == "a")
                    {
                        self.adopt("a");
                        // Whatever the adoption did, that `a` leaves the list.
                        if let Some(k) = self.formatting[start.min(self.formatting.len())..]
                            .iter()
                            .rposition(|f| f.as_ref().is_some_and(|f| f.name == "a"))
                        {
                            self.formatting.remove(start + k);
                        }
                    }
                    Start::Push(Ns::Html)
                }
                "nobr" => {
                    if self.in_scope(&["nobr"], Scope::Default).is_some() {
                        self.adopt("nobr");
                    }
                    Start::Push(Ns::Html)
                }
                "option" | "optgroup" => {
                    if self.top().is_some_and(|o| o.html("option")) {
                        self.pop();
                    }
                    Start::Push(Ns::Html)
                }
                "rb" | "rtc" | "rt" | "rp" => {
                    if self.in_scope(&["ruby"], Scope::Default).is_some() {
                        let implied: &[&str] = if matches!(name, "rb" | "rtc") {
                            &[
                                "dd", "dt", "li", "option", "optgroup", "p", "rb", "rp", "rt",
                                "rtc",
                            ]
                        } else {
                            &[
                                "dd", "dt", "li", "option", "optgroup", "p", "rb", "rp", "rt",
                            ]
                        };
                        while self.top().is_some_and(|o| o.html_in(implied)) {
                            self.pop();
                        }
                    }
                    Start::Push(Ns::Html)
                }
                _ => Start::Push(Ns::Html),
            };
            if !matches!(started, Start::Part) && !KEEP_CLOSED.contains(&name) {
                // Other start tags reopen the closed formatting elements first.
                self.reconstruct();
            }
            return started;
        }
    }

    fn end(&mut self, name: &str) {
        if self.top().is_some_and(|o| o.ns != Ns::Html) {
            if name == "br" || name == "p" {
                while self
                    .top()
                    .is_some_and(|o| o.ns != Ns::Html && !o.integration_point())
                {
                    self.pop();
                }
            } else {
                for i in (0..self.stack.len()).rev() {
                    let o = &self.stack[i];
                    if i + 1 < self.stack.len() && o.ns == Ns::Html {
                        break;
                    }
                    if o.name == name {
                        self.truncate(i);
                        return;
                    }
                }
            }
        }
        if self.in_select() {
            match name {
                "option" if self.top().is_some_and(|o| o.html("option")) => self.pop(),
                "optgroup" => {
                    let n = self.stack.len();
                    if n >= 2 && self.stack[n - 1].html("option") && self.stack[n - 2].html(name) {
                        self.pop();
                    }
                    if self.top().is_some_and(|o| o.html(name)) {
                        self.pop();
                    }
                }
                "select" | "template" => self.pop_until(name),
                "caption" | "table" | "tbody" | "tfoot" | "thead" | "tr" | "td" | "th"
                    if self.select_in_table() =>
                {
                    self.pop_until("select");
                    self.end(name);
                }
                _ => {}
            }
            return;
        }
        match name {
            "html" | "head" | "body" | "br" | "colgroup" => {}
            "p" => self.close_in_scope(&["p"], Scope::Button),
            "li" => self.close_in_scope(&["li"], Scope::ListItem),
            "table" | "caption" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th" => {
                self.close_in_scope(&[name], Scope::Table);
            }
            "form" => {
                self.form = false;
                if let Some(i) = self.in_scope(&["form"], Scope::Default) {
                    let o = self.stack.remove(i);
                    self.forget(&o);
                }
            }
            "template" => self.pop_until("template"),
            // Only a frameset the parser honoured can be the current node (the frameset
            // modes, where all but framesets is ignored, are read as a body: that keeps more
            // open; nested framesets cost the parser linear time anyway).
            "frameset" => {
                if self.top().is_some_and(|o| o.html("frameset")) {
                    self.pop();
                }
            }
            _ if HEADINGS.contains(&name) => self.close_in_scope(HEADINGS, Scope::Default),
            _ if SCOPED_END.contains(&name) => self.close_in_scope(&[name], Scope::Default),
            _ if VOID.contains(&name) => {}
            _ if FORMATTING.contains(&name) => self.adopt(name),
            _ => self.close_generic(name),
        }
    }
}

/// Rewrites the source where the parser would go wrong: start and end tags nested deeper than
/// [`MAX_DEPTH`] are dropped (their text stays), and, for XHTML, a self-closing tag of an
/// element that has content (`<a id="x"/>`, `<title/>`) becomes a start and an end tag.
///
/// The scan follows html5ever's tokenizer exactly (comments end at `-->`, `--!>`, or at once
/// after `<!-->` / `<!--->`; bogus comments, doctypes and `<?…>` at the first `>`; CDATA
/// sections only in SVG/MathML; attribute values quoted only after `=`; raw text, RCDATA and
/// script data with its escapes, for HTML elements only), and a model of its tree builder
/// follows the depth of the stack of open elements: implied end tags, scopes, special
/// elements, tables, `select`, SVG/MathML content with its integration points and breakout
/// tags, and the list of active formatting elements (which the parser reopens). Where the
/// model is unsure it keeps elements open, so it may flatten a little early. A source whose
/// formatting elements would be reopened more than [`max_reopened`] times is refused, and a
/// formatting start tag past [`MAX_FORMATTING`] list entries is dropped like a too deep one.
/// `tests::repeated_markup_stays_shallow` checks the result against html5ever itself.
#[cfg(test)]
fn prepare(src: &str, xhtml: bool) -> Result<Cow<'_, str>> {
    prepare_bounded(src, xhtml, usize::MAX)
}

/// [`prepare`], refusing a source of more than `max_elements` start tags (each becomes a node
/// of some 200 bytes in the parser's tree: 2 million `<br>`, 8 MB, took 400 MB).
fn prepare_bounded(src: &str, xhtml: bool, max_elements: usize) -> Result<Cow<'_, str>> {
    let b = src.as_bytes();
    let mut elements = 0usize;
    let mut out = String::new();
    let mut copied = 0usize;
    let mut edited = false;
    let mut edit = |out: &mut String, start: usize, end: usize, with: &str| {
        out.push_str(&src[copied..start]);
        out.push_str(with);
        copied = end;
        edited = true;
    };
    let mut tree = Tree::default();
    // Quirks mode is decided by the first token that is not a comment or white space.
    let mut quirks_known = false;
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut names = Vec::new();
    let mut attribute_work = 0usize;
    let mut i = 0usize;
    while let Some(off) = src[i..].find('<') {
        let p = i + off;
        if !quirks_known && !src[i..p].trim_ascii().is_empty() {
            quirks_known = true;
            tree.quirks = true;
        }
        if p > i
            && tree.top().is_none_or(|o| o.ns == Ns::Html)
            && !tree.in_select()
            && !(src[i..p].trim_ascii().is_empty() && tree.table_mode())
        {
            // Text reopens the closed formatting elements (white space in a table does not).
            tree.reconstruct();
        }
        if tree.reopened > max_reopened(src.len()) {
            bail!(
                "HTML makes the parser reopen formatting elements more than {} times: refused",
                max_reopened(src.len())
            );
        }
        let next = b.get(p + 1).copied().unwrap_or(0);
        if src[p..].starts_with("<!--") {
            i = comment_end(src, p + 4);
            continue;
        }
        if next == b'!' {
            let foreign = tree.top().is_some_and(|o| o.ns != Ns::Html);
            if foreign && src[p + 2..].starts_with("[CDATA[") {
                i = src[p + 9..].find("]]>").map_or(b.len(), |e| p + 9 + e + 3);
                continue;
            }
            i = after_gt(src, p + 2);
            let doctype = b.len() >= p + 9 && b[p + 2..p + 9].eq_ignore_ascii_case(b"doctype");
            if doctype && !quirks_known {
                quirks_known = true;
                tree.quirks = doctype_quirks(&src[p + 9..i]);
            }
            continue;
        }
        if next == b'?' {
            i = after_gt(src, p + 1);
            continue;
        }
        let closing = next == b'/';
        let name_start = if closing { p + 2 } else { p + 1 };
        let Some(&first) = b.get(name_start) else {
            break;
        };
        if !first.is_ascii_alphabetic() {
            i = if !closing {
                p + 1
            } else if first == b'>' {
                p + 3
            } else {
                after_gt(src, p + 2)
            };
            continue;
        }
        let mut name_end = name_start;
        while name_end < b.len()
            && !is_space(b[name_end])
            && b[name_end] != b'/'
            && b[name_end] != b'>'
        {
            name_end += 1;
        }
        let name = src[name_start..name_end].to_ascii_lowercase();
        let scanned = scan_tag(b, name_end, &mut names);
        // The tokenizer checks each attribute against the tag's earlier ones: bound that
        // quadratic work per tag and in all (a tag the source ends inside is tokenized too).
        if names.len() > MAX_ATTRIBUTES {
            bail!(
                "HTML with a tag of more than {MAX_ATTRIBUTES} attributes (<{name} …> has {}): refused",
                names.len()
            );
        }
        attribute_work += names.len() * names.len();
        if attribute_work > MAX_ATTRIBUTE_WORK {
            bail!("HTML with more attributes per tag than the parser reads in time: refused");
        }
        let Some((tag_end, self_closing)) = scanned else {
            break;
        };
        if !closing {
            elements += 1;
            if elements > max_elements {
                bail!(
                    "HTML of more than {max_elements} elements: refused \
                     (one per {TEXT_BYTES_PER_ELEMENT} bytes of loader.max_file_bytes)"
                );
            }
        }
        i = tag_end;
        if !quirks_known {
            quirks_known = true;
            tree.quirks = true;
        }
        if closing {
            if let Some(n) = dropped.get_mut(&name)
                && *n > 0
            {
                *n -= 1;
                edit(&mut out, p, tag_end, "");
            } else {
                tree.end(&name);
            }
            continue;
        }
        let font_attr = name == "font"
            && names.iter().any(|&(s, e)| {
                ["color", "face", "size"]
                    .iter()
                    .any(|a| b[s..e].eq_ignore_ascii_case(a.as_bytes()))
            });
        let html_content = tree.top().is_none_or(|o| o.ns == Ns::Html);
        if self_closing && xhtml && !(html_content && VOID.contains(&name.as_str())) {
            // `<x/>` becomes `<x></x>`: the element opens and closes at once.
            let with = format!("></{name}>");
            edit(&mut out, tag_end - 2, tag_end, &with);
            match tree.start(&name, false, font_attr) {
                Start::Part => {
                    tree.push(&name, Ns::Html, false);
                    tree.end(&name);
                }
                Start::Plaintext => break,
                _ => {}
            }
            continue;
        }
        match tree.start(&name, self_closing, font_attr) {
            Start::Push(ns) => {
                // An element that closes the previous one of its kind (`<p>`, `<li>`, …) may
                // open one level deeper: a run of them stays at that level.
                let slack =
                    usize::from(ns == Ns::Html && SELF_CLOSING_RUNS.contains(&name.as_str()));
                let formatting = ns == Ns::Html && FORMATTING.contains(&name.as_str());
                if tree.depth >= MAX_DEPTH + slack
                    || (formatting && tree.formatting.len() >= MAX_FORMATTING)
                {
                    *dropped.entry(name).or_default() += 1;
                    edit(&mut out, p, tag_end, "");
                } else {
                    if ns == Ns::Html && name == "form" {
                        tree.form = true;
                    }
                    tree.push(&name, ns, true);
                    if formatting {
                        let attrs = src[name_end..tag_end - 1].trim_end_matches('/').trim();
                        tree.remember(attrs);
                    }
                }
            }
            Start::Part => tree.push(&name, Ns::Html, false),
            Start::Raw(script) => {
                i = if script {
                    script_end(src, tag_end)
                } else {
                    raw_end(src, tag_end, &name)
                };
            }
            Start::Plaintext => break,
            Start::None => {}
        }
    }
    if !edited {
        return Ok(Cow::Borrowed(src));
    }
    out.push_str(&src[copied..]);
    Ok(Cow::Owned(out))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// How alike two texts are once whitespace and heading markers are stripped: twice their
    /// longest common subsequence of characters over their total length.
    pub(crate) fn similarity(got: &str, expected: &str) -> f64 {
        let strip = |s: &str| -> Vec<char> {
            s.lines()
                .map(|l| l.trim_start_matches('#'))
                .flat_map(|l| l.chars())
                .filter(|c| !c.is_whitespace())
                .collect()
        };
        let (a, b) = (strip(got), strip(expected));
        if a.is_empty() && b.is_empty() {
            return 1.0;
        }
        let mut prev = vec![0u32; b.len() + 1];
        let mut cur = vec![0u32; b.len() + 1];
        for &x in &a {
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    cur[j].max(prev[j + 1])
                };
            }
            std::mem::swap(&mut prev, &mut cur);
        }
        2.0 * f64::from(prev[b.len()]) / (a.len() + b.len()) as f64
    }

    /// The heading path of every ATX heading of a text, outermost first.
    pub(crate) fn heading_paths(text: &str) -> Vec<Vec<String>> {
        let mut stack: Vec<(usize, String)> = Vec::new();
        let mut paths = Vec::new();
        for line in text.lines() {
            let level = line.chars().take_while(|&c| c == '#').count();
            if level == 0 || !line[level..].starts_with(' ') {
                continue;
            }
            stack.retain(|(l, _)| *l < level);
            stack.push((level, line[level + 1..].to_string()));
            paths.push(stack.iter().map(|(_, t)| t.clone()).collect());
        }
        paths
    }

    /// Checks an extraction against a fixture's `.expect.json`: locale, absent strings, text
    /// similarity of at least 0.98, heading paths in order.
    pub(crate) fn check_fixture(got: &Extracted, expect: &str) {
        let e: serde_json::Value = serde_json::from_str(expect).unwrap();
        assert_eq!(got.locale.as_deref(), e["locale"].as_str(), "locale");
        for absent in e["absent"].as_array().unwrap() {
            let absent = absent.as_str().unwrap();
            assert!(!got.text.contains(absent), "{absent:?} in\n{}", got.text);
        }
        let ratio = similarity(&got.text, e["text"].as_str().unwrap());
        assert!(ratio >= 0.98, "similarity {ratio:.4}:\n{}", got.text);
        let paths = heading_paths(&got.text);
        let mut found = paths.iter();
        for want in e["headings"].as_array().unwrap() {
            let want: Vec<String> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            assert!(
                found.any(|p| *p == want),
                "heading path {want:?} not found in order in {paths:?}"
            );
        }
    }

    #[test]
    fn the_wiki_fixture_reads_as_its_article() {
        let html = include_str!("../../../tests/fixtures/formats/wiki-article.html");
        let expect = include_str!("../../../tests/fixtures/formats/wiki-article.html.expect.json");
        let t = Instant::now();
        let got = extract(html, &limits()).unwrap();
        eprintln!("wiki-article.html: {:?}", t.elapsed());
        // The site suffix is stripped: what remains is the h1.
        assert_eq!(got.title.as_deref(), Some("向量检索"));
        check_fixture(&got, expect);
    }

    #[test]
    fn the_docs_fixture_reads_as_its_article() {
        let html = include_str!("../../../tests/fixtures/formats/docs-site.html");
        let expect = include_str!("../../../tests/fixtures/formats/docs-site.html.expect.json");
        let got = extract(html, &limits()).unwrap();
        assert_eq!(got.title.as_deref(), Some("Configuring Profiles"));
        check_fixture(&got, expect);
    }

    #[test]
    fn the_similarity_helper_measures_characters() {
        assert_eq!(similarity("# a b\nc", "abc"), 1.0);
        assert!((similarity("abcd", "abxd") - 0.75).abs() < 1e-9);
        assert_eq!(
            heading_paths("# A\n\n## B\n\ntext\n### C\n## D\n#E"),
            vec![
                vec!["A".to_string()],
                vec!["A".into(), "B".into()],
                vec!["A".into(), "B".into(), "C".into()],
                vec!["A".into(), "D".into()],
            ]
        );
    }

    fn limits() -> Limits {
        Limits {
            max_unpacked_bytes: 1 << 30,
            max_text_bytes: 10 << 20,
            max_pages: 1000,
            deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    fn text(html: &str) -> String {
        extract(html, &limits()).unwrap().text
    }

    const PAGE: &str = r##"<!DOCTYPE html>
<html lang="zh_CN">
<head>
  <meta charset="utf-8">
  <title>向量检索 - 内部知识库</title>
  <style>.x { color: red }</style>
  <script>var tracking = "SCRIPT-TEXT";</script>
</head>
<body class="has-sidebar skin-vector">
  <a class="skip-link" href="#main">跳到正文</a>
  <header class="site-header">
    <div class="logo">内部知识库</div>
    <nav><ul><li><a href="/">首页</a></li><li><a href="/docs">文档</a></li></ul></nav>
  </header>
  <div id="cookie-banner">我们使用 Cookie 改善体验。<button>同意</button></div>
  <div class="layout">
    <div class="sidebar">
      <h3>目录</h3>
      <ul><li><a href="#a">概述</a></li><li><a href="#b">原理</a></li></ul>
      <p>侧栏说明文字，不属于正文。</p>
    </div>
    <main id="main">
      <article>
        <header class="content-header"><h1>向量检索</h1></header>
        <p>向量检索把文本映射为向量，
        再按相似度召回最相关的段落。It works with
        dense embeddings.</p>
        <div class="share-buttons"><a href="#">分享到微博</a></div>
        <h2 id="b">原理 <a class="headerlink" href="#b">¶</a></h2>
        <p>先<a href="/wiki/embedding">编码</a>，再<strong>建索引</strong>。</p>
        <div class="editor-note">编辑器提示也是正文。</div>
        <footer class="article-meta">最后更新：2024 年 5 月</footer>
      </article>
      <section class="comments"><h2>评论</h2><p>第一条评论内容。</p></section>
    </main>
  </div>
  <footer id="footer"><p>© 2024 内部知识库 版权所有</p></footer>
  <script>document.write("MORE-SCRIPT")</script>
</body>
</html>"##;

    #[test]
    fn a_page_keeps_its_article_and_drops_the_chrome() {
        let got = extract(PAGE, &limits()).unwrap();
        assert_eq!(got.title.as_deref(), Some("向量检索"));
        assert_eq!(got.locale.as_deref(), Some("zh-CN"));
        assert_eq!(got.pages, None);
        assert_eq!(
            got.text,
            "# 向量检索\n\n\
             向量检索把文本映射为向量，再按相似度召回最相关的段落。It works with dense embeddings.\n\n\
             ## 原理\n\n\
             先编码，再建索引。\n\n\
             编辑器提示也是正文。\n\n\
             最后更新：2024 年 5 月\n"
        );
        for absent in [
            "SCRIPT", "首页", "Cookie", "同意", "侧栏", "目录", "分享", "评论", "版权", "跳到",
            "¶", "color",
        ] {
            assert!(!got.text.contains(absent), "{absent} in {}", got.text);
        }
    }

    #[test]
    fn cjk_line_breaks_join_and_latin_ones_become_spaces() {
        let got = text(
            "<p>向量\n  检索，\n召回。 中 文\nvector\nsearch 向量\nRAG <b>粗</b>\n<i>体</i></p>",
        );
        assert_eq!(got, "向量检索，召回。 中 文 vector search 向量 RAG 粗体\n");
    }

    #[test]
    fn lists_are_lines_of_one_paragraph_indented_by_nesting() {
        let got = text(
            "<body><p>前言</p><ul><li>one<ul><li>one.a</li><li>one.b<ol start=3><li>x</li><li>y</li></ol></li></ul></li>\
             <li><p>two</p><p>more of two</p></li></ul><ol><li>first</li><li>second</li></ol><p>after</p></body>",
        );
        assert_eq!(
            got,
            "前言\n\n- one\n  - one.a\n  - one.b\n    3. x\n    4. y\n- two\n  more of two\n\n1. first\n2. second\n\nafter\n"
        );
    }

    #[test]
    fn a_data_table_is_one_row_per_line() {
        let got = text(
            "<body><p>参数如下：</p><table><caption>参数表</caption><thead><tr><th>名称</th><th>说明</th></tr></thead>\
             <tbody><tr><td>top_k</td><td><p>返回条数</p><p>默认 10</p></td></tr><tr><td>lang</td><td>语言<br>可选</td></tr>\
             <tr><td></td><td></td></tr></tbody></table><p>end</p></body>",
        );
        assert_eq!(
            got,
            "参数如下：\n\n参数表\n名称 | 说明\ntop_k | 返回条数 默认 10\nlang | 语言 可选\n\nend\n"
        );
    }

    #[test]
    fn a_layout_table_is_read_as_blocks() {
        let got = text(
            "<body><table><tr><td><h1>Title</h1><p>Para one.</p></td></tr><tr><td><p>Para two.</p></td></tr></table></body>",
        );
        assert_eq!(got, "# Title\n\nPara one.\n\nPara two.\n");
    }

    #[test]
    fn pre_keeps_its_lines_and_escapes_what_reads_as_markdown() {
        let got = text(
            "<body><p>例子：</p><pre><code class=\"language-rust\"><span class=\"token comment\">// comment</span>\nfn main() {\n    let x = 1;\n\n    println!(\"{x}\");\n}\n# not a heading\n```\n</code></pre><p>after</p></body>",
        );
        assert_eq!(
            got,
            "例子：\n\n// comment\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\\# not a heading\n\\```\n\nafter\n"
        );
    }

    #[test]
    fn block_quotes_definitions_and_figures_are_paragraphs() {
        let got = text(
            "<body><blockquote><p>引文一</p><p>引文二</p></blockquote><dl><dt>RAG</dt><dd>检索增强生成</dd></dl>\
             <figure><img src=x.png alt=\"图\"><figcaption>图 1：架构</figcaption></figure><hr><p>a<br>b</p></body>",
        );
        assert_eq!(
            got,
            "引文一\n\n引文二\n\nRAG\n检索增强生成\n\n图 1：架构\n\na\nb\n"
        );
    }

    #[test]
    fn headings_keep_their_levels() {
        let got = text(
            "<body><h1>T</h1><p>a</p><h3>Deep <code>x</code></h3><p>b</p><h2></h2><h2>Two</h2><p>c</p></body>",
        );
        assert_eq!(got, "# T\n\na\n\n### Deep x\n\nb\n\n## Two\n\nc\n");
    }

    #[test]
    fn an_h1_outside_the_main_content_opens_it() {
        let page = "<html><head><title>Guide | Docs</title></head><body><div class=\"page-title\"><h1>Guide</h1></div>\
                    <div class=\"sidebar\"><a href=\"/\">Home</a></div>\
                    <main><p>Some long enough paragraph of the guide.</p><h2>Setup</h2><p>Install it.</p></main></body></html>";
        let got = extract(page, &limits()).unwrap();
        assert_eq!(got.title.as_deref(), Some("Guide"));
        assert_eq!(
            got.text,
            "# Guide\n\nSome long enough paragraph of the guide.\n\n## Setup\n\nInstall it.\n"
        );
    }

    #[test]
    fn the_title_loses_a_site_part_only_when_the_rest_is_the_h1() {
        let t = |t: &str, h: Option<&str>| choose_title(Some(t.into()), h.map(String::from));
        assert_eq!(
            t("向量检索 - 内部知识库", Some("向量检索")).as_deref(),
            Some("向量检索")
        );
        assert_eq!(
            t("Install | Docs", Some("Install")).as_deref(),
            Some("Install")
        );
        assert_eq!(
            t("Docs | Install", Some("Install")).as_deref(),
            Some("Install")
        );
        assert_eq!(t("标题_百度百科", Some("标题")).as_deref(), Some("标题"));
        assert_eq!(t("A - B", Some("C")).as_deref(), Some("A - B"));
        assert_eq!(
            t("Install guide", Some("Install")).as_deref(),
            Some("Install guide")
        );
        assert_eq!(choose_title(None, Some("H".into())).as_deref(), Some("H"));
        assert_eq!(choose_title(None, None), None);
    }

    #[test]
    fn locales_are_normalised() {
        assert_eq!(normalise_locale("zh_CN").as_deref(), Some("zh-CN"));
        assert_eq!(
            normalise_locale(" ZH-hans-cn ").as_deref(),
            Some("zh-Hans-CN")
        );
        assert_eq!(normalise_locale("en").as_deref(), Some("en"));
        assert_eq!(normalise_locale("").as_deref(), None);
        assert_eq!(normalise_locale("en US").as_deref(), None);
        assert_eq!(normalise_locale("und").as_deref(), None);
        let got = extract(
            "<html lang=''><body lang=en-gb><p>x</p></body></html>",
            &limits(),
        )
        .unwrap();
        assert_eq!(got.locale.as_deref(), Some("en-GB"));
    }

    #[test]
    fn class_words_match_at_boundaries() {
        let w = |s: &str| words(s);
        assert!(has_word(&w("site-footer"), "footer"));
        assert!(has_word(&w("mainNav"), "nav"));
        assert!(has_word(&w("a_skip-link"), "skip-link"));
        assert!(!has_word(&w("content-header"), "footer"));
        assert!(!has_word(&w("editor"), "edit"));
        assert!(!has_word(&w("navigator"), "nav"));
        assert!(has_word(&w("mw-editsection"), "editsection"));
        let got = text(
            "<body><div id=content><p>Main text that is long enough to be the content of the page.</p>\
             <span class=\"mw-editsection\">[edit]</span><div class=\"editor\">kept</div><div class=\"catlinks\">Categories</div></div></body>",
        );
        assert_eq!(
            got,
            "Main text that is long enough to be the content of the page.\n\nkept\n"
        );
    }

    #[test]
    fn hidden_elements_and_landmarks_are_dropped() {
        let got = text(
            "<body><div role=main><p>shown</p><p hidden>h1</p><p aria-hidden=\"true\">h2</p><p style=\"display: none\">h3</p>\
             <div role=search>h4</div><div role=navigation>h5</div><p>also <span style=\"DISPLAY:NONE\">h6</span>shown</p></div></body>",
        );
        assert_eq!(got, "shown\n\nalso shown\n");
    }

    #[test]
    fn without_markers_the_densest_container_is_the_content() {
        let links: String = (0..40)
            .map(|i| format!("<li><a href=/{i}>Link number {i}</a></li>"))
            .collect();
        let paras: String = (0..5)
            .map(|i| {
                format!(
                    "<p>Paragraph {i} of the story, with enough words to count as prose here.</p>"
                )
            })
            .collect();
        let page = format!(
            "<body><div class=wrap><div class=left><ul>{links}</ul></div><div class=story>{paras}</div>\
             <div class=legal>Small print.</div></div></body>"
        );
        let got = text(&page);
        assert!(got.starts_with("Paragraph 0 of the story"), "{got}");
        assert!(got.contains("Paragraph 4"), "{got}");
        assert!(!got.contains("Link number"), "{got}");
        assert!(!got.contains("Small print"), "{got}");
    }

    #[test]
    fn a_form_wrapping_the_page_is_not_boilerplate() {
        let got = text(
            "<body><form id=aspnetForm action=x><div id=content><h1>Title</h1><p>The whole page sits in a form.</p></div>\
             <input type=hidden value=STATE></form></body>",
        );
        assert_eq!(got, "# Title\n\nThe whole page sits in a form.\n");
    }

    #[test]
    fn deep_nesting_neither_overflows_nor_stalls() {
        let n = 100_000;
        let mut page = String::from("<html><body><p>top</p>");
        page.push_str(&"<div>".repeat(n));
        page.push_str("deep text");
        page.push_str(&"</div>".repeat(n));
        page.push_str("<p>bottom</p></body></html>");
        let t = Instant::now();
        let got = text(&page);
        assert_eq!(got, "top\n\ndeep text\n\nbottom\n");
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        // Unclosed too, and inline.
        let page = format!(
            "<body>{}x{}</body>",
            "<span><b>".repeat(n),
            "<p>y".repeat(1000)
        );
        let got = text(&page);
        assert!(got.starts_with("x\n\ny\n\ny"), "{}", &got[..20]);
    }

    #[test]
    fn a_tag_of_too_many_attributes_is_refused_before_parsing() {
        let tag = |count: usize, close: &str| {
            let attrs: Vec<String> = (0..count).map(|i| format!("a{i}=\"\"")).collect();
            format!("<!DOCTYPE html><html><body><p {}{close}", attrs.join(" "))
        };
        // 200,000 attributes in one tag took the tokenizer 35 s: refused at once now, whether
        // the tag closes or the source ends inside it.
        for close in [">text</p></body></html>", ""] {
            let err = extract(&tag(200_000, close), &limits())
                .unwrap_err()
                .to_string();
            assert!(err.contains("more than 1024 attributes"), "{err}");
        }
        // A tag of many (but not absurdly many) attributes reads.
        let page = tag(1000, ">kept text</p></body></html>");
        assert!(
            extract(&page, &limits())
                .unwrap()
                .text
                .contains("kept text")
        );
        // Many tags of 1,000 attributes add up to the same quadratic work: refused too.
        let attrs: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
        let many = format!("<p {}>x</p>", attrs.join(" ")).repeat(200);
        let err = extract(&many, &limits()).unwrap_err().to_string();
        assert!(err.contains("attributes"), "{err}");
    }

    #[test]
    fn a_page_of_too_many_elements_is_refused_before_parsing() {
        let mut l = limits();
        l.max_text_bytes = 64 << 10;
        // At least 65,536 elements are always allowed; one per 8 bytes of text beyond.
        let page = |n: usize| format!("<html><body>{}text</body></html>", "<br>".repeat(n));
        assert!(extract(&page(60_000), &l).is_ok());
        let err = extract(&page(70_000), &l).unwrap_err().to_string();
        assert!(err.contains("more than 65536 elements"), "{err}");
        // End tags and text are no elements.
        let ends = format!("<html><body>{}text</body></html>", "</b>".repeat(100_000));
        let got = extract(&ends, &l);
        assert!(got.is_ok(), "{got:?}");
    }

    #[test]
    fn prepare_flattens_only_what_is_too_deep() {
        let src = "<div><p>a</div>";
        assert!(matches!(prepare(src, false).unwrap(), Cow::Borrowed(_)));
        let deep = format!(
            "{}x{}",
            "<div class=\"a>b\">".repeat(MAX_DEPTH + 2),
            "</div>".repeat(MAX_DEPTH + 2)
        );
        let flat = prepare(&deep, false).unwrap();
        assert_eq!(flat.matches("<div").count(), MAX_DEPTH);
        assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
        let xhtml =
            "<head><title/></head><body><a id=\"p1\"/>text<br/><script src=\"x.js\"/></body>";
        assert_eq!(
            prepare(xhtml, true).unwrap(),
            "<head><title></title></head><body><a id=\"p1\"></a>text<br/><script src=\"x.js\"></script></body>"
        );
        let script = "<script>if (a < b) { x = '<div>'; }</script><div>";
        assert!(matches!(prepare(script, false).unwrap(), Cow::Borrowed(_)));
    }

    /// Markup that once made `prepare` lose track of the tokenizer (or of the tree builder)
    /// and let nesting through to html5ever, which is quadratic in it: 30 000 levels took
    /// seconds, 100 000 close to a minute.
    #[test]
    fn prepare_is_not_fooled_into_letting_deep_nesting_through() {
        let n = 30_000;
        let nested = |open: &str, close: &str| format!("{}x{}", open.repeat(n), close.repeat(n));
        let divs = nested("<div>", "</div>");
        let cases: Vec<(&str, String)> = vec![
            // Comments end at `<!-->`, `<!--->` and `--!>` too.
            ("<!-->", format!("<p>x</p><!-->{divs}")),
            ("<!--->", format!("<p>x</p><!--->{divs}")),
            ("--!>", format!("<p>x</p><!-- x --!>{divs}")),
            // `style` and `script` are no raw text in SVG or MathML (a `div` leaves them).
            ("svg style", format!("<svg><style>{divs}")),
            ("math script", format!("<math><script>{divs}")),
            // A CDATA section in SVG hides a `</div>` until `]]>`.
            (
                "cdata",
                nested("<div><svg><![CDATA[></div>]]></svg>", "</div>"),
            ),
            // `<div/>` is a start tag in HTML.
            ("div/", nested("<div/>", "")),
            // `=` before an attribute name does not start a quoted value.
            ("=\"", format!("<a =\">{divs}")),
            ("=\"=", format!("<a b=\"x\"=\">{divs}")),
            // A `<script>` inside a script's `<!--` escape hides the next `</script>`.
            (
                "script escape",
                nested(
                    "<div><script><!--<script></script></div>--></script>",
                    "</div>",
                ),
            ),
            // An end tag stops at a special element open above its own.
            ("span div", nested("<span><div></span>", "</div>")),
            // Ruby annotations nest outside `<ruby>`.
            ("rb", nested("<rb>", "</rb>")),
            // The parser reopens formatting elements that something else closed.
            ("a b", nested("<a><b>", "")),
            // `<select>` ignores `<style>`, so `</select>` ends the select.
            ("select style", format!("<select><style></select>{divs}")),
        ];
        for (what, page) in cases {
            // The depth of the tree html5ever builds from the prepared source.
            let html = Html::parse_document(&prepare(&page, false).unwrap());
            let deepest = html
                .tree
                .nodes()
                .map(|n| n.ancestors().count())
                .max()
                .unwrap_or(0);
            assert!(deepest <= MAX_DEPTH + 8, "{what}: {deepest} deep");
            let got = text(&page);
            assert!(got.contains('x'), "{what}: {got:?}");
        }
        // Reopening too many formatting elements is refused rather than parsed.
        let reopening: String = (0..100_000).map(|k| format!("<p><b id={k}>x")).collect();
        let err = extract(&reopening, &limits()).unwrap_err().to_string();
        assert!(err.contains("reopen formatting elements"), "{err}");
        let fine: String = (0..5000).map(|k| format!("<p><b id={}>x", k % 4)).collect();
        assert!(text(&fine).starts_with('x'));
        // The same comments and bogus comments still hide what is in them.
        let hidden = "<!-- <div> --><!--> <p>a</p><!x <div ><?x <div ?></ x <div ><p>b</p>";
        assert_eq!(text(hidden), "a\n\nb\n");
        assert!(matches!(prepare(hidden, false).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn a_large_page_is_quick_and_an_oversized_one_refused() {
        let para = "<p>检索增强生成把<a href=\"/wiki/x\">向量检索</a>和生成模型结合起来，\n先召回相关段落再回答。The quick brown fox jumps over the lazy dog.</p>\n";
        let mut page = String::from("<html><body><div id=content>");
        while page.len() < 5 << 20 {
            page.push_str(para);
        }
        page.push_str("</div></body></html>");
        let t = Instant::now();
        let got = extract(&page, &limits()).unwrap();
        let took = t.elapsed();
        assert!(got.text.len() > 2 << 20);
        assert!(took < Duration::from_secs(20), "{took:?}");
        let mut small = limits();
        small.max_text_bytes = page.len() / 10;
        let err = extract(&page, &small).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
        let mut late = limits();
        late.deadline = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let err = extract(&page, &late).unwrap_err().to_string();
        assert!(err.contains("time limit"), "{err}");
        let mut tight = limits();
        tight.max_text_bytes = 1 << 20;
        let err = extract(&page, &tight).unwrap_err().to_string();
        assert!(err.contains("max_text_bytes"), "{err}");
    }

    #[test]
    fn a_page_with_an_xml_prolog_honours_self_closing_tags() {
        let got = extract(
            "<?xml version=\"1.0\"?>\n<html><head><title/></head><body><p>kept<a id=\"x\"/></p><p>two</p></body></html>",
            &limits(),
        )
        .unwrap();
        assert_eq!(got.text, "kept\n\ntwo\n");
        assert_eq!(got.title, None);
    }

    #[test]
    fn odd_input_does_not_panic() {
        for s in [
            "",
            "<",
            "</",
            "<!",
            "<!--",
            "<a",
            "<a href=\"",
            "<table><td>x",
            "<svg><title>t</title></svg>",
            "<template><p>x</template>",
            "<plaintext><p>x",
            "\u{0}\u{feff}<p>\u{200b}</p>",
            "<ol start=-5><li>x",
            "<html><head><title></title></head></html>",
            "<<<>>>",
            "<br/><br></br>",
            "<pre>",
            "<table><table>",
        ] {
            let _ = extract(s, &limits());
            let _ = parse(s, Mode::Chapter, &limits());
            let _ = toc_links(s, &limits());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever a fragment of markup does to the parser, a page of it repeated gets no
        /// deeper than the flattening allows.
        #[test]
        fn repeated_markup_stays_shallow(fragment in "(<(/?)(div|span|b|i|a|font color=x|nobr|p|li|ul|dl|dd|h1|table|td|tr|caption|select|option|optgroup|svg|math|mi|desc|g|style|script|title|textarea|xmp|noscript|iframe|form|rb|rt|ruby|template|button|object|img)( x=\"[>/]\")?(/?)>|<!--|-->|--!>|<!-->|<!\\[CDATA\\[|\\]\\]>|<!x|<\\?|</ |>|x){1,12}") {
            let page = fragment.repeat(3000);
            let html = Html::parse_document(&prepare(&page, false).unwrap());
            // Elements only: scraper puts a template's content in a fragment node.
            let deepest = html
                .tree
                .nodes()
                .map(|n| n.ancestors().filter(|a| a.value().is_element()).count())
                .max()
                .unwrap_or(0);
            proptest::prop_assert!(deepest <= 2 * MAX_DEPTH, "{} deep", deepest);
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_markup_does_not_panic(s in "(<[/!]?(p|div|li|ul|table|td|tr|pre|h1|a|b|script|nav|br)( class=\"(nav|toc|x)\")?/?>|[a-z向量 \n]{0,8}){0,60}") {
            let _ = extract(&s, &limits());
            let _ = parse(&s, Mode::Chapter, &limits());
        }
    }
}
