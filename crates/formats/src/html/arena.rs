//! Parsing a page within its bounds (the source [prepared](super::prepare) first, then
//! html5ever) and copying the tree into a flat pre-order arena: a node's subtree is the index
//! range `i..end`, so every walk over it is a loop, never a recursion.

use anyhow::{Result, bail};
use scraper::Html;

use super::model::Mode;
use super::prepare::{TEXT_BYTES_PER_ELEMENT, prepare_bounded};
use crate::limits::Limits;
use crate::text_builder::one_line;

/// A page may be this many times `max_text_bytes` (markup is most of a saved page).
const INPUT_FACTOR: usize = 8;

/// A parsed page.
pub(super) struct Doc {
    html: Html,
}

impl Doc {
    /// Parses `text`: refused when larger than [`INPUT_FACTOR`] × `max_text_bytes`, prepared
    /// (flattened, bounded), then handed to html5ever.
    pub(super) fn parse(text: &str, mode: Mode, limits: &Limits) -> Result<Self> {
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
    pub(super) fn arena(&self, limits: &Limits) -> Result<Arena<'_>> {
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

/// What a node of the arena is.
#[derive(Clone, Copy)]
pub(super) enum Kind<'a> {
    Element(&'a scraper::node::Element),
    Text(&'a str),
    Other,
}

/// A node of the arena.
pub(super) struct ANode<'a> {
    pub(super) kind: Kind<'a>,
    /// The parent's index (`usize::MAX` for the root).
    pub(super) parent: usize,
    /// One past the last node of this node's subtree.
    pub(super) end: usize,
}

/// The tree in pre-order: a parent comes before its children.
pub(super) struct Arena<'a> {
    pub(super) nodes: Vec<ANode<'a>>,
}

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

impl<'a> Arena<'a> {
    /// The element's name (`#foreign` for an SVG or MathML element inside one; empty for a
    /// node that is no element).
    pub(super) fn name(&self, i: usize) -> &'a str {
        match self.nodes[i].kind {
            Kind::Element(e) if &*e.name.ns == HTML_NS => e.name(),
            // Foreign elements (SVG, MathML) are told apart by a name no HTML element has.
            Kind::Element(e) if e.name() == "svg" || e.name() == "math" => e.name(),
            Kind::Element(_) => "#foreign",
            _ => "",
        }
    }

    pub(super) fn is(&self, i: usize, name: &str) -> bool {
        self.name(i) == name
    }

    pub(super) fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        match self.nodes[i].kind {
            Kind::Element(e) => e.attrs().find(|(k, _)| *k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of the subtree of `i`, as written.
    pub(super) fn text_of(&self, i: usize) -> String {
        let mut s = String::new();
        for node in &self.nodes[i..self.nodes[i].end] {
            if let Kind::Text(t) = node.kind {
                s.push_str(t);
            }
        }
        s
    }

    /// The first element named `name`.
    pub(super) fn first(&self, name: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.is(i, name))
    }

    /// The text of the first non-empty `h1` under `root`, outside what `skip` leaves out.
    pub(super) fn first_h1(&self, root: usize, skip: &dyn Fn(usize) -> bool) -> Option<String> {
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

    /// Whether `i` is, or lies inside, an element named `name`.
    pub(super) fn inside(&self, mut i: usize, name: &str) -> bool {
        while i != usize::MAX {
            if self.is(i, name) {
                return true;
            }
            i = self.nodes[i].parent;
        }
        false
    }

    /// Whether `i` has `class` among its classes.
    pub(super) fn has_class(&self, i: usize, class: &str) -> bool {
        self.attr(i, "class")
            .is_some_and(|c| c.split_ascii_whitespace().any(|t| t == class))
    }
}
