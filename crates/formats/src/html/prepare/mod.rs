//! The bounded pre-scan: the source rewritten (or refused) before html5ever sees it.

use std::borrow::Cow;
use std::collections::HashMap;

use anyhow::{Result, bail};

use elements::{FORMATTING, SELF_CLOSING_RUNS, VOID};
use tokenizer::{after_gt, comment_end, doctype_quirks, is_space, raw_end, scan_tag, script_end};
use tree::{Ns, Start, Tree};

mod elements;
mod tokenizer;
mod tree;

/// Deepest element nesting handed to the parser; deeper start and end tags are dropped (their
/// text is kept). Real pages nest a few dozen levels.
pub const MAX_DEPTH: usize = 512;

/// Bytes of `max_text_bytes` per element a page may have (a page of 10 MiB of text may have
/// 1.3 million elements; real pages have a few hundred thousand at most).
pub(super) const TEXT_BYTES_PER_ELEMENT: usize = 8;

/// Most attributes of one tag (real tags have a handful; the tokenizer's duplicate check
/// costs the square of the count: 200,000 attributes took 35 s).
pub const MAX_ATTRIBUTES: usize = 1024;

/// Most of the sum, over all tags, of the square of their attribute counts (a real page sums
/// to a few million; this much is a fraction of a second of the tokenizer's checks).
const MAX_ATTRIBUTE_WORK: usize = 1 << 27;

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
/// `html::tests::repeated_markup_stays_shallow` checks the result against html5ever itself.
///
/// A source of more than `max_elements` start tags is refused (each becomes a node of some 200
/// bytes in the parser's tree: 2 million `<br>`, 8 MB, took 400 MB).
pub(super) fn prepare_bounded(src: &str, xhtml: bool, max_elements: usize) -> Result<Cow<'_, str>> {
    let mut scan = Scan::new(src, xhtml, max_elements);
    let mut i = 0usize;
    while let Some(off) = src[i..].find('<') {
        let p = i + off;
        scan.text(i, p)?;
        match scan.markup(p)? {
            Next::At(next) => i = next,
            Next::Stop => break,
        }
    }
    Ok(scan.finish())
}

/// [`prepare_bounded`] with no bound on the elements.
#[cfg(test)]
pub(super) fn prepare(src: &str, xhtml: bool) -> Result<Cow<'_, str>> {
    prepare_bounded(src, xhtml, usize::MAX)
}

/// Where the scan goes on after a piece of markup.
enum Next {
    /// At this offset.
    At(usize),
    /// Nowhere: the rest of the source is text (or inside an unfinished tag).
    Stop,
}

/// A tag of the source: where it starts (its `<`), where its name ends, where it ends (after
/// its `>`), its name in lower case, and whether it closes itself (`/>`).
struct Tag {
    at: usize,
    name: String,
    name_end: usize,
    end: usize,
    self_closing: bool,
}

/// One pre-scan: the source rewritten so far and the model of the parser following it.
struct Scan<'s> {
    src: &'s str,
    xhtml: bool,
    max_elements: usize,
    /// The rewritten source up to `copied` (when anything was edited).
    out: String,
    copied: usize,
    edited: bool,
    tree: Tree,
    /// Quirks mode is decided by the first token that is not a comment or white space.
    quirks_known: bool,
    /// Start tags dropped, by name: as many end tags of that name are dropped next.
    dropped: HashMap<String, usize>,
    /// The attribute names (ranges of the source) of the tag being read.
    names: Vec<(usize, usize)>,
    /// The sum of the squares of the attribute counts of the tags so far.
    attribute_work: usize,
    /// Start tags so far.
    elements: usize,
}

impl<'s> Scan<'s> {
    fn new(src: &'s str, xhtml: bool, max_elements: usize) -> Self {
        Self {
            src,
            xhtml,
            max_elements,
            out: String::new(),
            copied: 0,
            edited: false,
            tree: Tree::default(),
            quirks_known: false,
            dropped: HashMap::new(),
            names: Vec::new(),
            attribute_work: 0,
            elements: 0,
        }
    }

    /// Replaces `start..end` of the source with `with`.
    fn edit(&mut self, start: usize, end: usize, with: &str) {
        self.out.push_str(&self.src[self.copied..start]);
        self.out.push_str(with);
        self.copied = end;
        self.edited = true;
    }

    /// The source, rewritten where it was edited.
    fn finish(mut self) -> Cow<'s, str> {
        if !self.edited {
            return Cow::Borrowed(self.src);
        }
        self.out.push_str(&self.src[self.copied..]);
        Cow::Owned(self.out)
    }

    /// Decides quirks mode on the first token, unless it is known already.
    fn first_token(&mut self) {
        if !self.quirks_known {
            self.quirks_known = true;
            self.tree.quirks = true;
        }
    }

    /// The text `i..p` before the next `<`: text that is not white space decides quirks mode
    /// and reopens the closed formatting elements (white space in a table does not). Refuses
    /// a source once it has made the parser reopen too many.
    fn text(&mut self, i: usize, p: usize) -> Result<()> {
        let blank = self.src[i..p].trim_ascii().is_empty();
        if !blank {
            self.first_token();
        }
        if p > i
            && self.tree.top().is_none_or(|o| o.ns == Ns::Html)
            && !self.tree.in_select()
            && !(blank && self.tree.table_mode())
        {
            self.tree.reconstruct();
        }
        let most = max_reopened(self.src.len());
        if self.tree.reopened > most {
            bail!(
                "HTML makes the parser reopen formatting elements more than {most} times: refused"
            );
        }
        Ok(())
    }

    /// The markup at `p` (a `<`): a comment, a declaration, a processing instruction, a tag,
    /// or a `<` that is text.
    fn markup(&mut self, p: usize) -> Result<Next> {
        let (src, b) = (self.src, self.src.as_bytes());
        let next = b.get(p + 1).copied().unwrap_or(0);
        if src[p..].starts_with("<!--") {
            return Ok(Next::At(comment_end(src, p + 4)));
        }
        if next == b'!' {
            return Ok(Next::At(self.declaration(p)));
        }
        if next == b'?' {
            return Ok(Next::At(after_gt(src, p + 1)));
        }
        let closing = next == b'/';
        let name_start = if closing { p + 2 } else { p + 1 };
        let Some(&first) = b.get(name_start) else {
            return Ok(Next::Stop);
        };
        if !first.is_ascii_alphabetic() {
            return Ok(Next::At(if !closing {
                p + 1
            } else if first == b'>' {
                p + 3
            } else {
                after_gt(src, p + 2)
            }));
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
        let scanned = scan_tag(b, name_end, &mut self.names);
        self.count_attributes(&name)?;
        let Some((end, self_closing)) = scanned else {
            return Ok(Next::Stop);
        };
        if !closing {
            self.count_element()?;
        }
        self.first_token();
        let tag = Tag {
            at: p,
            name,
            name_end,
            end,
            self_closing,
        };
        if closing {
            self.end_tag(&tag);
            return Ok(Next::At(tag.end));
        }
        Ok(self.start_tag(tag))
    }

    /// `<!…` at `p` (no comment): a CDATA section in SVG/MathML, else a doctype (which may
    /// decide quirks mode) or a bogus comment, up to the first `>`. Where the scan goes on.
    fn declaration(&mut self, p: usize) -> usize {
        let (src, b) = (self.src, self.src.as_bytes());
        let foreign = self.tree.top().is_some_and(|o| o.ns != Ns::Html);
        if foreign && src[p + 2..].starts_with("[CDATA[") {
            return src[p + 9..].find("]]>").map_or(b.len(), |e| p + 9 + e + 3);
        }
        let end = after_gt(src, p + 2);
        let doctype = b.len() >= p + 9 && b[p + 2..p + 9].eq_ignore_ascii_case(b"doctype");
        if doctype && !self.quirks_known {
            self.quirks_known = true;
            self.tree.quirks = doctype_quirks(&src[p + 9..end]);
        }
        end
    }

    /// Bounds the tokenizer's duplicate-attribute checks, quadratic per tag, for the tag just
    /// scanned and in all (a tag the source ends inside is tokenized too).
    fn count_attributes(&mut self, name: &str) -> Result<()> {
        let count = self.names.len();
        if count > MAX_ATTRIBUTES {
            bail!(
                "HTML with a tag of more than {MAX_ATTRIBUTES} attributes (<{name} …> has {count}): refused"
            );
        }
        self.attribute_work += count * count;
        if self.attribute_work > MAX_ATTRIBUTE_WORK {
            bail!("HTML with more attributes per tag than the parser reads in time: refused");
        }
        Ok(())
    }

    /// Counts a start tag against `max_elements`.
    fn count_element(&mut self) -> Result<()> {
        self.elements += 1;
        let most = self.max_elements;
        if self.elements > most {
            bail!(
                "HTML of more than {most} elements: refused \
                 (one per {TEXT_BYTES_PER_ELEMENT} bytes of loader.max_file_bytes)"
            );
        }
        Ok(())
    }

    /// An end tag: dropped when a start tag of its name was, else followed in the model.
    fn end_tag(&mut self, tag: &Tag) {
        if let Some(n) = self.dropped.get_mut(&tag.name)
            && *n > 0
        {
            *n -= 1;
            self.edit(tag.at, tag.end, "");
        } else {
            self.tree.end(&tag.name);
        }
    }

    /// A start tag: opened in the model, dropped when too deep, made a start and an end tag
    /// when it closes itself in XHTML; where the scan goes on (after raw text, if it starts
    /// some).
    fn start_tag(&mut self, tag: Tag) -> Next {
        let name = tag.name.as_str();
        let b = self.src.as_bytes();
        let font_attr = name == "font"
            && self.names.iter().any(|&(s, e)| {
                ["color", "face", "size"]
                    .iter()
                    .any(|a| b[s..e].eq_ignore_ascii_case(a.as_bytes()))
            });
        let html_content = self.tree.top().is_none_or(|o| o.ns == Ns::Html);
        if tag.self_closing && self.xhtml && !(html_content && VOID.contains(&name)) {
            // `<x/>` becomes `<x></x>`: the element opens and closes at once.
            let with = format!("></{name}>");
            self.edit(tag.end - 2, tag.end, &with);
            match self.tree.start(name, false, font_attr) {
                Start::Part => {
                    self.tree.push(name, Ns::Html, false);
                    self.tree.end(name);
                }
                Start::Plaintext => return Next::Stop,
                _ => {}
            }
            return Next::At(tag.end);
        }
        match self.tree.start(name, tag.self_closing, font_attr) {
            Start::Push(ns) => self.open(&tag, ns),
            Start::Part => self.tree.push(name, Ns::Html, false),
            Start::Raw(script) => {
                return Next::At(if script {
                    script_end(self.src, tag.end)
                } else {
                    raw_end(self.src, tag.end, name)
                });
            }
            Start::Plaintext => return Next::Stop,
            Start::None => {}
        }
        Next::At(tag.end)
    }

    /// Opens the element of a start tag in the model, or drops the tag when it is too deep
    /// (or the list of formatting elements is full).
    fn open(&mut self, tag: &Tag, ns: Ns) {
        let name = tag.name.as_str();
        // An element that closes the previous one of its kind (`<p>`, `<li>`, …) may open one
        // level deeper: a run of them stays at that level.
        let slack = usize::from(ns == Ns::Html && SELF_CLOSING_RUNS.contains(&name));
        let formatting = ns == Ns::Html && FORMATTING.contains(&name);
        if self.tree.depth >= MAX_DEPTH + slack
            || (formatting && self.tree.formatting.len() >= MAX_FORMATTING)
        {
            *self.dropped.entry(tag.name.clone()).or_default() += 1;
            self.edit(tag.at, tag.end, "");
            return;
        }
        if ns == Ns::Html && name == "form" {
            self.tree.form = true;
        }
        self.tree.push(name, ns, true);
        if formatting {
            let attrs = self.src[tag.name_end..tag.end - 1]
                .trim_end_matches('/')
                .trim();
            self.tree.remember(attrs);
        }
    }
}
