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
//!    with its line breaks, a data table as a Markdown pipe table (its caption a line above
//!    it; a layout table — one with headings or nested tables — is read as blocks), `br`
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
//!
//! The modules follow those steps: `prepare` is the bounded pre-scan (with the models of the
//! tokenizer and the tree builder it follows), `arena` the parse and the flat tree,
//! `boilerplate` and `content` the junk and the main content, `render` (with `table`)
//! the walk that writes blocks, `meta` the title and language a page declares, and `model`
//! what all of them share.

use anyhow::Result;

use crate::extracted::Extracted;
use crate::limits::Limits;
use crate::text_builder::{TextBuilder, one_line};
use arena::Doc;

pub use meta::{choose_title, normalise_locale};
pub use model::{Block, Mode, Page};
pub use prepare::{MAX_ATTRIBUTES, MAX_DEPTH};

mod arena;
mod boilerplate;
mod content;
mod meta;
mod model;
mod prepare;
mod render;
mod table;
#[cfg(test)]
pub(crate) mod tests;

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
        ocr: None,
        boxes: Vec::new(),
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
