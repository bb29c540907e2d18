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
//! Bounds: a page larger than 8× `max_text_bytes` is refused before parsing; elements nested
//! more than [`MAX_DEPTH`] deep are flattened before parsing (html5ever's scope checks are
//! linear in the depth, so 100 000 nested `<div>`s would otherwise take quadratic time); the
//! deadline is checked every 1024 nodes; the rendered text is bounded by `max_text_bytes`.

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
        let prepared = prepare(text, xhtml);
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

/// Elements without content.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// Elements whose content the parser reads as text up to their end tag.
const RAW: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// Elements whose end tag may be left out (the parser closes them): not counted as depth.
const OPTIONAL_END: &[&str] = &[
    "html", "head", "body", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead",
    "tbody", "tfoot", "colgroup", "caption", "rb", "rt", "rtc", "rp",
];

/// Rewrites the source where the parser would go wrong: start and end tags nested deeper than
/// [`MAX_DEPTH`] are dropped (their text stays), and, for XHTML, a self-closing tag of an
/// element that has content (`<a id="x"/>`, `<title/>`) becomes a start and an end tag. The
/// scan follows the tokenizer closely enough for that: comments, doctype, processing
/// instructions, quoted attribute values and raw-text elements are skipped.
fn prepare(src: &str, xhtml: bool) -> Cow<'_, str> {
    let b = src.as_bytes();
    let mut out = String::new();
    let mut copied = 0usize;
    let mut edited = false;
    let mut edit = |out: &mut String, start: usize, end: usize, with: &str| {
        out.push_str(&src[copied..start]);
        out.push_str(with);
        copied = end;
        edited = true;
    };
    let mut stack: Vec<String> = Vec::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut i = 0usize;
    while let Some(off) = src[i..].find('<') {
        let p = i + off;
        let next = b.get(p + 1).copied().unwrap_or(0);
        if src[p..].starts_with("<!--") {
            i = src[p + 4..].find("-->").map_or(b.len(), |e| p + 4 + e + 3);
            continue;
        }
        if next == b'!' || next == b'?' {
            i = src[p..].find('>').map_or(b.len(), |e| p + e + 1);
            continue;
        }
        let closing = next == b'/';
        let name_start = if closing { p + 2 } else { p + 1 };
        if !b.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
            i = p + 1;
            continue;
        }
        let mut name_end = name_start;
        while name_end < b.len()
            && !matches!(
                b[name_end],
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/' | b'>'
            )
        {
            name_end += 1;
        }
        let name = src[name_start..name_end].to_ascii_lowercase();
        // The tag's end: the first `>` outside a quoted attribute value.
        let mut j = name_end;
        let mut quote = 0u8;
        let mut last = 0u8;
        while j < b.len() {
            let c = b[j];
            if quote != 0 {
                if c == quote {
                    quote = 0;
                }
            } else if (c == b'"' || c == b'\'') && last == b'=' {
                quote = c;
            } else if c == b'>' {
                break;
            }
            if !c.is_ascii_whitespace() {
                last = c;
            }
            j += 1;
        }
        if j >= b.len() {
            break;
        }
        let tag_end = j + 1;
        let self_closing = !closing && b[j - 1] == b'/';
        let local = name.rsplit(':').next().unwrap_or(&name).to_string();
        i = tag_end;
        if closing {
            if VOID.contains(&local.as_str()) || OPTIONAL_END.contains(&local.as_str()) {
                continue;
            }
            if let Some(n) = dropped.get_mut(&local)
                && *n > 0
            {
                *n -= 1;
                edit(&mut out, p, tag_end, "");
            } else if let Some(pos) = stack.iter().rposition(|n| *n == local) {
                stack.truncate(pos);
            }
            continue;
        }
        if local == "plaintext" {
            break;
        }
        if VOID.contains(&local.as_str()) {
            continue;
        }
        if self_closing && xhtml {
            let with = format!("></{name}>");
            edit(&mut out, j - 1, tag_end, &with);
            continue;
        }
        if RAW.contains(&local.as_str()) {
            // Skip to the element's end tag (the parser reads everything before it as text).
            let mut k = tag_end;
            loop {
                match src[k..].find("</") {
                    Some(off) => {
                        let at = k + off;
                        let tail = &b[at + 2..];
                        if tail.len() >= local.len()
                            && tail[..local.len()].eq_ignore_ascii_case(local.as_bytes())
                        {
                            i = at;
                            break;
                        }
                        k = at + 2;
                    }
                    None => {
                        i = b.len();
                        break;
                    }
                }
            }
            continue;
        }
        if self_closing || OPTIONAL_END.contains(&local.as_str()) {
            continue;
        }
        if stack.len() >= MAX_DEPTH {
            *dropped.entry(local).or_default() += 1;
            edit(&mut out, p, tag_end, "");
        } else {
            stack.push(local);
        }
    }
    if !edited {
        return Cow::Borrowed(src);
    }
    out.push_str(&src[copied..]);
    Cow::Owned(out)
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
        let html = include_str!("../../../../tests/fixtures/formats/wiki-article.html");
        let expect =
            include_str!("../../../../tests/fixtures/formats/wiki-article.html.expect.json");
        let t = Instant::now();
        let got = extract(html, &limits()).unwrap();
        eprintln!("wiki-article.html: {:?}", t.elapsed());
        // The site suffix is stripped: what remains is the h1.
        assert_eq!(got.title.as_deref(), Some("向量检索"));
        check_fixture(&got, expect);
    }

    #[test]
    fn the_docs_fixture_reads_as_its_article() {
        let html = include_str!("../../../../tests/fixtures/formats/docs-site.html");
        let expect = include_str!("../../../../tests/fixtures/formats/docs-site.html.expect.json");
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
    fn prepare_flattens_only_what_is_too_deep() {
        let src = "<div><p>a</div>";
        assert!(matches!(prepare(src, false), Cow::Borrowed(_)));
        let deep = format!(
            "{}x{}",
            "<div class=\"a>b\">".repeat(MAX_DEPTH + 2),
            "</div>".repeat(MAX_DEPTH + 2)
        );
        let flat = prepare(&deep, false);
        assert_eq!(flat.matches("<div").count(), MAX_DEPTH);
        assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
        let xhtml =
            "<head><title/></head><body><a id=\"p1\"/>text<br/><script src=\"x.js\"/></body>";
        assert_eq!(
            prepare(xhtml, true),
            "<head><title></title></head><body><a id=\"p1\"></a>text<br/><script src=\"x.js\"></script></body>"
        );
        let script = "<script>if (a < b) { x = '<div>'; }</script><div>";
        assert!(matches!(prepare(script, false), Cow::Borrowed(_)));
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
        #[test]
        fn arbitrary_markup_does_not_panic(s in "(<[/!]?(p|div|li|ul|table|td|tr|pre|h1|a|b|script|nav|br)( class=\"(nav|toc|x)\")?/?>|[a-z向量 \n]{0,8}){0,60}") {
            let _ = extract(&s, &limits());
            let _ = parse(&s, Mode::Chapter, &limits());
        }
    }
}
