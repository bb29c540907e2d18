//! The main content of a page: the marks inherited down the tree, the text each subtree
//! holds, and the choice of the element that holds the page's content.

use anyhow::Result;

use super::arena::{Arena, Kind};
use super::meta::normalise_locale;
use super::model::{Block, Mode, Page};
use super::render::Renderer;
use crate::limits::Limits;
use crate::text_builder::one_line;

/// Marks every node inherits from its ancestors (pre-order: a parent comes before its
/// children), by node index.
struct Marks {
    /// The node itself is hard junk.
    hard: Vec<bool>,
    /// The node is, or lies inside, hard junk.
    in_hard: Vec<bool>,
    /// The node lies inside a link.
    in_link: Vec<bool>,
    /// The node lies inside code (`pre`, `code`, `kbd`, `samp`).
    in_code: Vec<bool>,
    /// The node lies inside a `header` or `footer` under the body.
    in_header_footer: Vec<bool>,
}

/// Soft junk (only in a page): the element itself, and every node inside one.
struct Soft {
    soft: Vec<bool>,
    in_soft: Vec<bool>,
}

impl Arena<'_> {
    /// Renders the document read as `mode`: a chapter whole, a page's main content.
    pub(super) fn page(&self, mode: Mode, limits: &Limits) -> Result<Page> {
        let html_el = self.first("html");
        let body = self.first("body").or(html_el).unwrap_or(0);
        let locale = self.declared_locale(html_el, body);
        let title = self.declared_title();
        let marks = self.marks(body, mode);
        let (h1, blocks) = match mode {
            Mode::Chapter => {
                let skip = |i: usize| marks.hard[i];
                let h1 = self.first_h1(body, &skip);
                (h1, Renderer::new(self, limits).run(body, &skip)?)
            }
            Mode::Page => self.main_content(body, &marks, limits)?,
        };
        Ok(Page {
            title,
            h1,
            locale,
            blocks,
        })
    }

    /// The `lang` (or `xml:lang`) of `<html>`, else of the body, normalised.
    fn declared_locale(&self, html_el: Option<usize>, body: usize) -> Option<String> {
        html_el
            .into_iter()
            .chain(std::iter::once(body))
            .flat_map(|i| [self.attr(i, "lang"), self.attr(i, "xml:lang")])
            .flatten()
            .find_map(normalise_locale)
    }

    /// The first `<title>` outside SVG, whitespace collapsed.
    fn declared_title(&self) -> Option<String> {
        (0..self.nodes.len())
            .find(|&i| self.is(i, "title") && !self.inside(i, "svg"))
            .map(|i| one_line(&self.text_of(i)))
            .filter(|t| !t.is_empty())
    }

    /// The marks of every node, inherited top-down.
    fn marks(&self, body: usize, mode: Mode) -> Marks {
        let n = self.nodes.len();
        let mut m = Marks {
            hard: vec![false; n],
            in_hard: vec![false; n],
            in_link: vec![false; n],
            in_code: vec![false; n],
            in_header_footer: vec![false; n],
        };
        for i in 0..n {
            let p = self.nodes[i].parent;
            let (ph, pl, pc, pf) = if p == usize::MAX {
                (false, false, false, false)
            } else {
                (
                    m.in_hard[p],
                    m.in_link[p],
                    m.in_code[p],
                    m.in_header_footer[p],
                )
            };
            m.in_header_footer[i] = pf || (i > body && matches!(self.name(i), "header" | "footer"));
            m.hard[i] = self.is_hard(i, mode);
            m.in_hard[i] = ph || m.hard[i];
            m.in_link[i] = pl || self.is(i, "a");
            m.in_code[i] = pc || matches!(self.name(i), "pre" | "code" | "kbd" | "samp");
        }
        m
    }

    /// The soft junk of a page: elements named as boilerplate that hold less than half of the
    /// page's text, no `main` or `h1`, and lie outside code and hard junk.
    fn soft_junk(&self, body: usize, marks: &Marks) -> Soft {
        let n = self.nodes.len();
        // Non-link text per subtree, hard junk left out (bottom-up).
        let mut raw = vec![0usize; n];
        self.sum_text(&mut raw, |i| marks.in_hard[i], &marks.in_link);
        let total = raw[body].max(1);
        let has_marker = self.marker_counts();
        let mut soft = vec![false; n];
        for i in 0..n {
            soft[i] = !marks.in_hard[i]
                && !marks.in_code[i]
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
        Soft { soft, in_soft }
    }

    /// A page's `h1` (the main content's, else the first outside junk) and the blocks of its
    /// main content, opened by an `h1` outside it when it has none of its own.
    fn main_content(
        &self,
        body: usize,
        marks: &Marks,
        limits: &Limits,
    ) -> Result<(Option<String>, Vec<Block>)> {
        let Soft { soft, in_soft } = self.soft_junk(body, marks);
        let not_outer = |i: usize| marks.in_hard[i] || in_soft[i] || marks.in_header_footer[i];
        // Text that counts for choosing the main content: no junk, no header/footer.
        let mut score = vec![0usize; self.nodes.len()];
        self.sum_text(&mut score, not_outer, &marks.in_link);

        let main = self.choose_main(body, &score, |i| marks.in_hard[i] || in_soft[i]);
        let skip = |i: usize| {
            i != main && (marks.hard[i] || soft[i] || matches!(self.name(i), "rt" | "rp"))
                || (self.is(i, "sup") && self.has_class(i, "reference"))
        };
        let inner_h1 = self.first_h1(main, &skip);
        let outer_h1 = if inner_h1.is_none() {
            self.first_h1_text(body..self.nodes[body].end, not_outer)
        } else {
            None
        };
        let mut blocks = Vec::new();
        if let Some(h) = &outer_h1 {
            blocks.push(Block::Heading(1, h.clone()));
        }
        blocks.extend(Renderer::new(self, limits).run(main, &skip)?);
        let h1 = inner_h1
            .or(outer_h1)
            .or_else(|| self.first_h1_text(0..self.nodes.len(), |i| marks.in_hard[i]));
        Ok((h1, blocks))
    }

    /// The text of the first `h1` in `range` that `left_out` keeps, when it is not empty.
    fn first_h1_text(
        &self,
        mut range: std::ops::Range<usize>,
        left_out: impl Fn(usize) -> bool,
    ) -> Option<String> {
        range
            .find(|&i| self.is(i, "h1") && !left_out(i))
            .map(|i| one_line(&self.text_of(i)))
            .filter(|t| !t.is_empty())
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

    /// The element holding the page's content: the best `main`, `article` or well-known
    /// container holding a quarter of the text, else the container the density walk ends in.
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
}

/// The `id`s of well-known content containers (lower case).
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

/// The classes of well-known content containers (lower case).
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
