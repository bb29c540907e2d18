//! What the Office Open XML formats (Word, PowerPoint, Excel) share: a small XML tree
//! ([`Node`]) read from a package part as a bounded stream ([`read_xml`]: elements, text and
//! attribute bytes, token length and nesting depth all capped, UTF-8 or UTF-16), a part's
//! relationships, the core properties (`dc:title`, `dc:language`) and the mostly-CJK test that
//! picks a locale and a notes heading.

use std::io::BufRead;

use anyhow::{Result, anyhow, bail};
use quick_xml::events::Event;

use crate::limits::Limits;
use crate::package::Package;
use crate::text_builder::one_line;

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

    /// Appends all the text under this element to `out`.
    pub(super) fn text_into(&self, out: &mut String) {
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

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::docx::extract;
    use crate::docx::tests::{document, docx, p};
    use crate::extracted::Extracted;

    pub(crate) fn limits() -> Limits {
        Limits {
            max_unpacked_bytes: 8 << 20,
            max_text_bytes: 1 << 20,
            max_pages: 100,
            max_image_pixels: 1_000_000,
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
        let err = extract(&bytes, &small, None).unwrap_err().to_string();
        assert!(
            err.contains("word/document.xml has more than 100000 XML elements: refused"),
            "{err}"
        );
        // Under the cap it is read, and the deadline is checked while parsing.
        let fine = "<w:p/>".repeat(90_000);
        assert!(extract(&docx(&fine, &[]), &small, None).is_ok());
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
        let err = extract(&bomb, &small, None).unwrap_err().to_string();
        assert!(
            err.contains("word/document.xml holds more than 4194304 bytes of text"),
            "{err}"
        );
        // One token longer than max_text_bytes is refused before it is all in memory.
        let long = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "a".repeat(3 << 20));
        let err = extract(&docx(&long, &[]), &small, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an XML token"), "{err}");
        // So are attribute values past 16 × max_text_bytes.
        let attrs = format!(r#"<w:p w:rsidR="{}"/>"#, "0".repeat(900_000)).repeat(20);
        let err = extract(&docx(&attrs, &[]), &small, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("bytes of attribute values"), "{err}");
        // The unpacking budget is spent as the part is read.
        let mut tight = limits();
        tight.max_unpacked_bytes = 100_000;
        let err = extract(&bomb, &tight, None).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    #[test]
    fn parts_in_utf16_or_with_a_byte_order_mark_are_read() {
        let doc = document(&p("", "双字节 text 𝄞 and &amp; more"));
        let want = "双字节 text 𝄞 and & more\n";
        let bom8 = format!("\u{feff}{doc}");
        assert_eq!(
            extract(&docx_of(bom8.as_bytes()), &limits(), None)
                .unwrap()
                .text,
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
            let got = extract(&docx_of(&bytes), &limits(), None).unwrap();
            assert_eq!(got.text, want, "big endian: {big_endian}");
            // A lone surrogate is no UTF-16.
            bytes.extend(if big_endian {
                [0xD8, 0x00]
            } else {
                [0x00, 0xD8]
            });
            let err = extract(&docx_of(&bytes), &limits(), None)
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
