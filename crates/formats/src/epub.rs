//! EPUB 2/3: the book's chapters in reading order, each a level-1 section.
//!
//! `META-INF/container.xml` names the package document (OPF); its metadata gives the title
//! (`dc:title`) and language (`dc:language`), its manifest the parts and its spine the reading
//! order. Spine items marked `linear="no"` (notes, answers, pop-ups) follow the linear ones;
//! the navigation document itself, and parts that are not (X)HTML, are skipped. Every part is
//! read through [`Package`], within the unpacking budget.
//!
//! Each chapter is read as XHTML without boilerplate removal (only scripts, styles, forms and
//! the like are dropped, see [`html::Mode::Chapter`]). A chapter that opens with a heading keeps
//! its headings, shifted so that the first is level 1; a chapter with text before its first
//! heading (or none) opens with a level-1 heading of its table-of-contents label (EPUB 3 nav
//! document, else the EPUB 2 NCX), or `Chapter N`, and its own headings go below it. A chapter
//! without text (a cover image) is skipped.
//!
//! Bounds: at most `max_pages` spine items, the deadline checked per chapter (and inside each),
//! the text bounded by `max_text_bytes`. An EPUB whose `META-INF/encryption.xml` encrypts
//! anything but fonts (font obfuscation is not DRM) is refused.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow, bail};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::extracted::Extracted;
use crate::html::{self, Block};
use crate::limits::Limits;
use crate::package::Package;
use crate::text_builder::{TextBuilder, one_line};

/// Font obfuscation algorithms (IDPF, Adobe): not DRM.
const FONT_OBFUSCATION: &[&str] = &[
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
];

/// Extracts an EPUB file.
pub fn extract(bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    let mut pkg = Package::open(bytes, limits)?;
    if let Some(enc) = read_bytes(&mut pkg, "META-INF/encryption.xml", limits)?
        && is_drm(&String::from_utf8_lossy(&enc))
    {
        bail!("encrypted (DRM) EPUB: unsupported");
    }
    let container = read_part(&mut pkg, "META-INF/container.xml", limits)?
        .ok_or_else(|| anyhow!("not an EPUB: META-INF/container.xml is missing"))?;
    let opf_path = rootfile(&container)?;
    let opf_text = read_part(&mut pkg, &opf_path, limits)?.ok_or_else(|| {
        anyhow!("damaged EPUB: the package document {opf_path} named by META-INF/container.xml is missing")
    })?;
    let opf = Opf::parse(&opf_text)
        .with_context(|| format!("damaged EPUB: package document {opf_path}"))?;
    let base = parent_dir(&opf_path);
    if opf.spine.len() > limits.max_pages {
        bail!(
            "EPUB has {} spine items (chapters), more than the {} limit (loader.max_pages)",
            opf.spine.len(),
            limits.max_pages
        );
    }

    let labels = toc_labels(&mut pkg, &opf, &base, limits)?;
    let nav = opf
        .manifest
        .values()
        .find(|i| i.properties.split_ascii_whitespace().any(|p| p == "nav"))
        .map(|i| resolve(&base, &i.href));

    let mut order: Vec<&SpineRef> = opf.spine.iter().filter(|s| s.linear).collect();
    order.extend(opf.spine.iter().filter(|s| !s.linear));
    let mut out = TextBuilder::new(limits);
    let mut chapters = 0usize;
    let mut first_locale = None;
    for spine in order {
        limits.check_time()?;
        let Some(item) = opf.manifest.get(&spine.idref) else {
            continue;
        };
        let path = resolve(&base, &item.href);
        if nav.as_deref() == Some(path.as_str()) || !is_html(item) {
            continue;
        }
        let Some(text) = read_part(&mut pkg, &path, limits)? else {
            continue;
        };
        let page = html::parse(&text, html::Mode::Chapter, limits)
            .with_context(|| format!("EPUB chapter {path}"))?;
        if first_locale.is_none() {
            first_locale = page.locale.clone();
        }
        if page.blocks.is_empty() {
            continue;
        }
        chapters += 1;
        let first_heading = page.blocks.iter().find_map(|b| match b {
            Block::Heading(level, _) => Some(*level),
            Block::Paragraph(_) => None,
        });
        let opens_with_heading = matches!(page.blocks.first(), Some(Block::Heading(..)));
        // New level = level - shift, clamped to [top, 6].
        let (shift, top) = if opens_with_heading {
            (first_heading.unwrap_or(1) as isize - 1, 1)
        } else {
            let label = labels
                .get(&path)
                .cloned()
                .unwrap_or_else(|| format!("Chapter {chapters}"));
            out.heading(1, &label)?;
            (first_heading.unwrap_or(2) as isize - 2, 2)
        };
        for block in &page.blocks {
            match block {
                Block::Heading(level, text) => {
                    let level = (*level as isize - shift).clamp(top, 6) as usize;
                    out.heading(level, text)?;
                }
                Block::Paragraph(text) => out.paragraph(text)?,
            }
        }
    }
    let locale = opf
        .language
        .as_deref()
        .and_then(html::normalise_locale)
        .or(first_locale);
    Ok(Extracted {
        text: out.finish(),
        title: opf.title,
        locale,
        pages: None,
        synthetic_headings: false,
        ocr: None,
        boxes: Vec::new(),
    })
}

fn is_html(item: &Item) -> bool {
    let media = item.media_type.to_ascii_lowercase();
    if !media.is_empty() {
        return media.contains("html");
    }
    let href = item.href.to_ascii_lowercase();
    [".xhtml", ".html", ".htm", ".xht"]
        .iter()
        .any(|e| href.ends_with(e))
}

/// A part may be this many times `max_text_bytes` (the bound of a web page: a chapter is one),
/// and at least [`PART_FLOOR`] bytes.
const PART_FACTOR: usize = 8;
const PART_FLOOR: usize = 16 << 20;

/// Reads a part as text (UTF-8, or UTF-16 with a BOM): see [`read_bytes`].
fn read_part(pkg: &mut Package<'_>, path: &str, limits: &Limits) -> Result<Option<String>> {
    let Some(mut bytes) = read_bytes(pkg, path, limits)? else {
        return Ok(None);
    };
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return crate::decode::decode_text(&bytes)
            .map(Some)
            .with_context(|| format!("EPUB part {path}"));
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    // Decoded in place: the part is in memory once.
    String::from_utf8(bytes).map(Some).map_err(|e| {
        anyhow!(
            "EPUB part {path}: not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads a part, unpacking no more than [`PART_FACTOR`] × `max_text_bytes` of it (or
/// [`PART_FLOOR`]): a larger part is refused before it is all in memory.
fn read_bytes(pkg: &mut Package<'_>, path: &str, limits: &Limits) -> Result<Option<Vec<u8>>> {
    let most = limits
        .max_text_bytes
        .saturating_mul(PART_FACTOR)
        .max(PART_FLOOR) as u64;
    let Some(part) = pkg.read_stream(path)? else {
        return Ok(None);
    };
    let hint = part.declared_size().min(most + 1);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    std::io::Read::read_to_end(&mut std::io::Read::take(part, most + 1), &mut bytes)
        .map_err(|e| anyhow!("{e}"))?;
    if bytes.len() as u64 > most {
        bail!(
            "EPUB part {path} is larger than {most} bytes: refused \
             ({PART_FACTOR} × loader.max_file_bytes)"
        );
    }
    Ok(Some(bytes))
}

/// Whether `META-INF/encryption.xml` encrypts anything with an algorithm other than font
/// obfuscation. An unreadable file that mentions encrypted data counts as DRM.
fn is_drm(xml: &str) -> bool {
    let mut reader = Reader::from_str(xml);
    let mut data = 0usize;
    let mut obfuscated = 0usize;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match e.local_name().as_ref() {
                b"EncryptedData" => data += 1,
                b"EncryptionMethod" => {
                    let algorithm = attr(&e, b"Algorithm").unwrap_or_default();
                    if FONT_OBFUSCATION.contains(&algorithm.trim()) {
                        obfuscated += 1;
                    } else {
                        return true;
                    }
                }
                _ => {}
            },
            Ok(Event::Eof) => return data > obfuscated,
            Err(_) => return xml.contains("EncryptedData"),
            Ok(_) => {}
        }
    }
}

/// The package document's path, from `META-INF/container.xml`.
fn rootfile(xml: &str) -> Result<String> {
    let mut reader = Reader::from_str(xml);
    let mut first = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == b"rootfile" => {
                let Some(path) = attr(&e, b"full-path").filter(|p| !p.trim().is_empty()) else {
                    continue;
                };
                let media = attr(&e, b"media-type").unwrap_or_default();
                if media.trim() == "application/oebps-package+xml" {
                    return Ok(clean_path(&percent_decode(path.trim())));
                }
                first.get_or_insert(path);
            }
            Ok(Event::Eof) => break,
            Err(e) => bail!("damaged EPUB: META-INF/container.xml: {e}"),
            Ok(_) => {}
        }
    }
    first
        .map(|p| clean_path(&percent_decode(p.trim())))
        .ok_or_else(|| anyhow!("damaged EPUB: META-INF/container.xml names no package document"))
}

enum Kind {
    Start,
    Other,
}

#[derive(Debug, Default)]
struct Item {
    href: String,
    media_type: String,
    properties: String,
}

#[derive(Debug)]
struct SpineRef {
    idref: String,
    linear: bool,
}

#[derive(Debug, Default)]
struct Opf {
    title: Option<String>,
    language: Option<String>,
    manifest: HashMap<String, Item>,
    spine: Vec<SpineRef>,
    /// The NCX's manifest id (`<spine toc="…">`).
    toc: Option<String>,
}

impl Opf {
    fn parse(xml: &str) -> Result<Self> {
        let mut reader = Reader::from_str(xml);
        let mut opf = Opf::default();
        let mut in_metadata = false;
        // The metadata element whose text is being read, and that text.
        let mut reading: Option<&'static str> = None;
        let mut text = String::new();
        loop {
            let event = reader.read_event().map_err(|e| anyhow!("{e}"))?;
            let event_kind = match event {
                Event::Start(_) => Kind::Start,
                _ => Kind::Other,
            };
            match event {
                Event::Start(e) | Event::Empty(e) => {
                    let start = matches!(event_kind, Kind::Start);
                    match e.local_name().as_ref() {
                        b"metadata" => in_metadata = start,
                        b"title" if start && in_metadata && opf.title.is_none() => {
                            reading = Some("title");
                            text.clear();
                        }
                        b"language" if start && in_metadata && opf.language.is_none() => {
                            reading = Some("language");
                            text.clear();
                        }
                        b"item" => {
                            if let (Some(id), Some(href)) = (attr(&e, b"id"), attr(&e, b"href")) {
                                opf.manifest.insert(
                                    id,
                                    Item {
                                        href,
                                        media_type: attr(&e, b"media-type").unwrap_or_default(),
                                        properties: attr(&e, b"properties").unwrap_or_default(),
                                    },
                                );
                            }
                        }
                        b"spine" => opf.toc = attr(&e, b"toc"),
                        b"itemref" => {
                            if let Some(idref) = attr(&e, b"idref") {
                                let linear = attr(&e, b"linear").is_none_or(|l| l.trim() != "no");
                                opf.spine.push(SpineRef { idref, linear });
                            }
                        }
                        _ => {}
                    }
                }
                Event::Text(t) if reading.is_some() => {
                    text.push_str(&t.xml_content().unwrap_or_default());
                }
                Event::CData(t) if reading.is_some() => {
                    text.push_str(&String::from_utf8_lossy(&t));
                }
                Event::GeneralRef(r) if reading.is_some() => {
                    text.push_str(&resolve_ref(&r));
                }
                Event::End(e) => match e.local_name().as_ref() {
                    b"metadata" => in_metadata = false,
                    b"title" | b"language" => {
                        let value = one_line(&text);
                        match reading.take() {
                            Some("title") if !value.is_empty() => opf.title = Some(value),
                            Some("language") if !value.is_empty() => opf.language = Some(value),
                            _ => {}
                        }
                    }
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(opf)
    }
}

/// Table-of-contents labels by part path (the first label pointing into each part).
fn toc_labels(
    pkg: &mut Package<'_>,
    opf: &Opf,
    base: &str,
    limits: &Limits,
) -> Result<HashMap<String, String>> {
    let mut labels = HashMap::new();
    let nav = opf
        .manifest
        .values()
        .find(|i| i.properties.split_ascii_whitespace().any(|p| p == "nav"));
    if let Some(nav) = nav {
        let path = resolve(base, &nav.href);
        if let Some(text) = read_part(pkg, &path, limits)? {
            let dir = parent_dir(&path);
            for (href, label) in html::toc_links(&text, limits).unwrap_or_default() {
                labels.entry(resolve(&dir, &href)).or_insert(label);
            }
        }
    }
    if labels.is_empty() {
        let ncx = opf
            .toc
            .as_ref()
            .and_then(|id| opf.manifest.get(id))
            .or_else(|| {
                opf.manifest
                    .values()
                    .find(|i| i.media_type == "application/x-dtbncx+xml")
            });
        if let Some(ncx) = ncx {
            let path = resolve(base, &ncx.href);
            if let Some(text) = read_part(pkg, &path, limits)? {
                let dir = parent_dir(&path);
                for (src, label) in ncx_points(&text) {
                    labels.entry(resolve(&dir, &src)).or_insert(label);
                }
            }
        }
    }
    Ok(labels)
}

/// `(src, label)` of every navPoint of an NCX, in document order; an unreadable NCX gives what
/// was read before the damage.
fn ncx_points(xml: &str) -> Vec<(String, String)> {
    let mut reader = Reader::from_str(xml);
    let mut points = Vec::new();
    let mut in_label = false;
    let mut label = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match e.local_name().as_ref() {
                b"navLabel" => {
                    in_label = true;
                    label.clear();
                }
                b"content" => {
                    if let Some(src) = attr(&e, b"src") {
                        let l = one_line(&label);
                        if !l.is_empty() {
                            points.push((src, l));
                        }
                    }
                }
                _ => {}
            },
            Ok(Event::End(e)) if e.local_name().as_ref() == b"navLabel" => in_label = false,
            Ok(Event::Text(t)) if in_label => {
                label.push(' ');
                label.push_str(&t.xml_content().unwrap_or_default());
            }
            Ok(Event::GeneralRef(r)) if in_label => label.push_str(&resolve_ref(&r)),
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    points
}

fn resolve_ref(r: &quick_xml::events::BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    let name = String::from_utf8_lossy(r);
    match name.as_ref() {
        "amp" => "&".into(),
        "lt" => "<".into(),
        "gt" => ">".into(),
        "quot" => "\"".into(),
        "apos" => "'".into(),
        "nbsp" => " ".into(),
        other => format!("&{other};"),
    }
}

fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.decode_and_unescape_value(e.decoder())
                .ok()
                .map(|v| v.into_owned())
        })
}

/// The folder of a part path (`OEBPS/content.opf` → `OEBPS`), empty at the root.
fn parent_dir(path: &str) -> String {
    path.rsplit_once('/')
        .map(|(dir, _)| dir.to_string())
        .unwrap_or_default()
}

/// A part path from an href relative to `dir`: fragment and query dropped, percent-decoded,
/// `.` and `..` resolved.
fn resolve(dir: &str, href: &str) -> String {
    let href = href.split(['#', '?']).next().unwrap_or_default();
    let href = percent_decode(href.trim());
    if let Some(abs) = href.strip_prefix('/') {
        return clean_path(abs);
    }
    if dir.is_empty() {
        clean_path(&href)
    } else {
        clean_path(&format!("{dir}/{href}"))
    }
}

fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use super::*;

    fn limits() -> Limits {
        Limits {
            max_unpacked_bytes: 1 << 30,
            max_text_bytes: 10 << 20,
            max_pages: 1000,
            max_image_pixels: 1_000_000,
            deadline: Instant::now() + Duration::from_secs(60),
        }
    }

    fn zip(parts: &[(&str, &str)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, content) in parts {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(content.as_bytes()).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    const CONTAINER: &str = r#"<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#;

    const OPF: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:title>运维 &amp; 手册</dc:title>
    <dc:language>zh_cn</dc:language>
  </metadata>
  <manifest>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="cover" href="Images/cover.jpg" media-type="image/jpeg"/>
    <item id="c1" href="Text/chap%201.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="Text/c2.xhtml" media-type="application/xhtml+xml"/>
    <item id="c3" href="Text/c3.xhtml" media-type="application/xhtml+xml"/>
    <item id="notes" href="Text/notes.xhtml" media-type="application/xhtml+xml"/>
    <item id="gone" href="Text/missing.xhtml" media-type="application/xhtml+xml"/>
    <item id="empty" href="Text/cover.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine toc="ncx">
    <itemref idref="empty"/>
    <itemref idref="notes" linear="no"/>
    <itemref idref="c1"/>
    <itemref idref="cover"/>
    <itemref idref="gone"/>
    <itemref idref="c2"/>
    <itemref idref="c3"/>
    <itemref idref="nowhere"/>
  </spine>
</package>"#;

    const NCX: &str = r#"<?xml version="1.0"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <navMap>
    <navPoint id="n1"><navLabel><text>第一章 总则</text></navLabel><content src="Text/chap%201.xhtml"/>
      <navPoint id="n11"><navLabel><text>第一节</text></navLabel><content src="Text/chap%201.xhtml#s1"/></navPoint>
    </navPoint>
    <navPoint id="n2"><navLabel><text>第二章 部署</text></navLabel><content src="Text/c2.xhtml"/></navPoint>
  </navMap>
</ncx>"#;

    fn chapter(body: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"zh\"><head><title/>\
             <script src=\"x.js\"/><style>p {{ color: red }}</style></head><body>{body}</body></html>"
        )
    }

    fn book() -> Vec<u8> {
        let c1 = chapter(
            "<p class=\"num\">第一章</p><a id=\"s1\"/><p>本章说明\n总体要求。</p><h2>1.1 范围</h2><p>适用于全部系统。</p>\
             <script>alert('x')</script>",
        );
        let c2 = chapter(
            "<h2>第二章 部署</h2><p>部署步骤&nbsp;如下。</p><h3>2.1 准备</h3><p>准备服务器。</p>",
        );
        let c3 =
            chapter("<div><p>没有标题的一章。</p><ul><li>要点一</li><li>要点二</li></ul></div>");
        let notes = chapter("<h1>注释</h1><p>注 1：见附录。</p>");
        let cover = chapter("<div><img src=\"../Images/cover.jpg\" alt=\"封面\"/></div>");
        zip(&[
            ("mimetype", "application/epub+zip"),
            ("META-INF/container.xml", CONTAINER),
            ("OEBPS/content.opf", OPF),
            ("OEBPS/toc.ncx", NCX),
            ("OEBPS/Text/chap 1.xhtml", &c1),
            ("OEBPS/Text/c2.xhtml", &c2),
            ("OEBPS/Text/c3.xhtml", &c3),
            ("OEBPS/Text/notes.xhtml", &notes),
            ("OEBPS/Text/cover.xhtml", &cover),
            ("OEBPS/Images/cover.jpg", "\u{ff}\u{d8}"),
        ])
    }

    #[test]
    fn a_book_reads_its_chapters_in_spine_order_as_sections() {
        let got = extract(&book(), &limits()).unwrap();
        assert_eq!(got.title.as_deref(), Some("运维 & 手册"));
        assert_eq!(got.locale.as_deref(), Some("zh-CN"));
        assert_eq!(got.pages, None);
        assert_eq!(
            got.text,
            "# 第一章 总则\n\n第一章\n\n本章说明总体要求。\n\n## 1.1 范围\n\n适用于全部系统。\n\n\
             # 第二章 部署\n\n部署步骤 如下。\n\n## 2.1 准备\n\n准备服务器。\n\n\
             # Chapter 3\n\n没有标题的一章。\n\n- 要点一\n- 要点二\n\n\
             # 注释\n\n注 1：见附录。\n"
        );
    }

    #[test]
    fn an_epub3_nav_document_gives_the_labels_and_is_not_a_chapter() {
        let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
            <dc:title>Book</dc:title><dc:language>en</dc:language></metadata>
            <manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
            <item id="a" href="text/a.xhtml" media-type="application/xhtml+xml"/></manifest>
            <spine><itemref idref="nav"/><itemref idref="a"/></spine></package>"#;
        let nav = r#"<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>
            <nav epub:type="landmarks"><ol><li><a href="text/a.xhtml">Landmark</a></li></ol></nav>
            <nav epub:type="toc"><ol><li><a href="text/a.xhtml#top">Opening <span>words</span></a></li></ol></nav></body></html>"#;
        let a = chapter("<p>Text before any heading.</p>");
        let container = CONTAINER.replace("OEBPS/content.opf", "book.opf");
        let bytes = zip(&[
            ("META-INF/container.xml", &container),
            ("book.opf", opf),
            ("nav.xhtml", nav),
            ("text/a.xhtml", &a),
        ]);
        let got = extract(&bytes, &limits()).unwrap();
        assert_eq!(got.text, "# Opening words\n\nText before any heading.\n");
        assert_eq!(got.locale.as_deref(), Some("en"));
    }

    #[test]
    fn drm_is_refused_but_font_obfuscation_is_not() {
        let drm = r#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
            <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
            <enc:CipherData><enc:CipherReference URI="OEBPS/Text/c2.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>"#;
        let fonts = r#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
            <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>
            <enc:CipherData><enc:CipherReference URI="OEBPS/Fonts/a.otf"/></enc:CipherData></enc:EncryptedData></encryption>"#;
        assert!(is_drm(drm));
        assert!(!is_drm(fonts));
        assert!(is_drm("<encryption><EncryptedData><oops"));
        let c = chapter("<h1>T</h1><p>x</p>");
        let opf = OPF.replace("<itemref idref=\"c2\"/>", "");
        let with = |enc: &str| {
            zip(&[
                ("META-INF/container.xml", CONTAINER),
                ("META-INF/encryption.xml", enc),
                ("OEBPS/content.opf", &opf),
                ("OEBPS/Text/c3.xhtml", &c),
            ])
        };
        let err = extract(&with(drm), &limits()).unwrap_err().to_string();
        assert_eq!(err, "encrypted (DRM) EPUB: unsupported");
        assert!(
            extract(&with(fonts), &limits())
                .unwrap()
                .text
                .contains("# T")
        );
    }

    #[test]
    fn damaged_and_oversized_books_are_clear_errors() {
        let err = |bytes: &[u8], l: &Limits| format!("{:#}", extract(bytes, l).unwrap_err());
        assert!(err(b"not a zip", &limits()).contains("damaged zip"));
        let no_container = zip(&[("mimetype", "application/epub+zip")]);
        assert!(err(&no_container, &limits()).contains("META-INF/container.xml is missing"));
        let no_opf = zip(&[("META-INF/container.xml", CONTAINER)]);
        assert!(err(&no_opf, &limits()).contains("OEBPS/content.opf"));
        let bad_opf = zip(&[
            ("META-INF/container.xml", CONTAINER),
            ("OEBPS/content.opf", "<package><metadata></package>"),
        ]);
        assert!(err(&bad_opf, &limits()).contains("damaged EPUB"));
        let mut few = limits();
        few.max_pages = 3;
        assert!(err(&book(), &few).contains("loader.max_pages"));
        let mut small = limits();
        small.max_unpacked_bytes = 2000;
        assert!(err(&book(), &small).contains("zip bomb"));
        let mut tight = limits();
        tight.max_text_bytes = 50;
        assert!(err(&book(), &tight).contains("max_text_bytes"));
        // A chapter past the part bound (8 × max_text_bytes, at least 16 MiB) is refused before
        // it is all unpacked.
        let mut one = limits();
        one.max_text_bytes = 1 << 20;
        let huge = chapter(&format!("<p>{}x</p>", " ".repeat(17 << 20)));
        let big = zip(&[
            ("META-INF/container.xml", CONTAINER),
            ("OEBPS/content.opf", OPF),
            ("OEBPS/Text/c2.xhtml", &huge),
        ]);
        assert!(big.len() < 1 << 20, "{}", big.len());
        let e = err(&big, &one);
        assert!(e.contains("larger than 16777216 bytes"), "{e}");
        let mut late = limits();
        late.deadline = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(err(&book(), &late).contains("time limit"));
    }

    #[test]
    fn paths_resolve_against_their_folder() {
        assert_eq!(
            resolve("OEBPS", "Text/chap%201.xhtml#x"),
            "OEBPS/Text/chap 1.xhtml"
        );
        assert_eq!(
            resolve("OEBPS/Text", "../Images/a.png"),
            "OEBPS/Images/a.png"
        );
        assert_eq!(resolve("", "./a%E4%B8%AD.xhtml"), "a中.xhtml");
        assert_eq!(resolve("a", "/b/c.xhtml"), "b/c.xhtml");
        assert_eq!(resolve("a", "../../../x"), "x");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(parent_dir("content.opf"), "");
    }

    #[test]
    fn the_manual_fixture_reads_as_its_chapters() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-manual.epub");
        let expect = include_str!("../../../tests/fixtures/formats/zh-manual.epub.expect.json");
        let got = extract(bytes, &limits()).unwrap();
        let e: serde_json::Value = serde_json::from_str(expect).unwrap();
        assert_eq!(got.title.as_deref(), e["title"].as_str());
        super::super::html::tests::check_fixture(&got, expect);
        let level1: Vec<&str> = got
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .collect();
        let chapters: Vec<&str> = e["chapters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(level1, chapters);
    }

    #[test]
    fn odd_packages_do_not_panic() {
        let opfs = [
            "",
            "<package/>",
            "<package><spine><itemref/></spine></package>",
            "<package><manifest><item id='a' href='../../a.xhtml' media-type='text/html'/></manifest><spine><itemref idref='a'/></spine></package>",
            "<package><metadata><dc:title/><dc:language/></metadata><manifest><item id='a' href='%'/></manifest><spine><itemref idref='a'/></spine></package>",
        ];
        for opf in opfs {
            let bytes = zip(&[
                ("META-INF/container.xml", CONTAINER),
                ("OEBPS/content.opf", opf),
                ("a.xhtml", "<p>x"),
            ]);
            let _ = extract(&bytes, &limits());
        }
        let _ = extract(
            &zip(&[("META-INF/container.xml", "<rootfile full-path=''/>")]),
            &limits(),
        );
        let _ = extract(&zip(&[("META-INF/container.xml", "<<<")]), &limits());
    }
}
