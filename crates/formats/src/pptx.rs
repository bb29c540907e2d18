//! PowerPoint 2007+ (`.pptx`): one section per slide, in presentation order.
//!
//! Each slide opens with a level-1 heading: the text of its title placeholder (`title` or
//! `ctrTitle`), or `Slide N` (`幻灯片 N` when the deck's text is mostly Chinese/Japanese) when
//! it has none. Then come its other shapes in reading order (top to bottom, then left to right,
//! by their `a:off`; placeholders without one take their layout's; when a shape's position is
//! still unknown the slide's document order is kept), one paragraph block per shape; bullets
//! (`- `, or `1. ` … for auto-numbered paragraphs) indented two spaces per `a:pPr lvl`; tables
//! as Markdown pipe tables (merged cells left empty); grouped shapes recursed. The slide's speaker notes (the
//! body placeholder of its notes slide) close the section as a paragraph starting `Notes: `
//! (`备注：` for a mostly Chinese/Japanese deck). Slides with no text at all are passed over.
//!
//! Pictures: with an OCR engine, the text of each picture on a slide (a screenshot, a
//! photographed notice) closes the slide's shapes, one paragraph block per picture
//! (`pictures`); a slide whose only text is in a picture is kept.
//!
//! Dropped: pictures without an OCR engine, charts, SmartArt, the slide master and layout text (footers, slide
//! numbers, dates), comments, the notes' slide image and number placeholders, the fallback
//! content of `mc:AlternateContent`.
//!
//! Title: `dc:title` of `docProps/core.xml`, else the first slide's title. Locale:
//! `dc:language`. More slides than [`Limits::max_pages`] is an error.

use std::collections::HashMap;

use anyhow::{Result, anyhow, bail};

use crate::extracted::Extracted;
use crate::limits::Limits;
use crate::ooxml::{Node, Relationship, core_properties, mostly_cjk, read_xml, relationships};
use crate::package::Package;
use crate::pictures::Pictures;
use crate::scan::PageReader;
use crate::text_builder::{TextBuilder, one_line, pipe_table};

/// Extracts a pptx file; text in its slides' pictures is read by `ocr`, when given (see
/// `pictures`).
pub fn extract(bytes: &[u8], limits: &Limits, ocr: Option<&dyn PageReader>) -> Result<Extracted> {
    let mut pkg = Package::open(bytes, limits)?;
    let presentation = read_xml(&mut pkg, "ppt/presentation.xml", &[], limits)?
        .ok_or_else(|| anyhow!("damaged PowerPoint file: ppt/presentation.xml is missing"))?;
    let rels = relationships(&mut pkg, "ppt/presentation.xml", limits)?;
    let ids: Vec<&str> = presentation
        .child("sldIdLst")
        .map(|l| l.children_named("sldId").filter_map(rel_id).collect())
        .unwrap_or_default();
    if ids.len() > limits.max_pages {
        bail!(
            "has {} slides, more than the limit of {} (loader.max_pages)",
            ids.len(),
            limits.max_pages
        );
    }
    let (core_title, locale) = core_properties(&mut pkg, limits)?;

    let mut layouts: HashMap<String, Vec<Placeholder>> = HashMap::new();
    let mut slides = Vec::new();
    let mut pictures = Pictures::new(ocr);
    for (i, id) in ids.iter().enumerate() {
        limits.check_time()?;
        let number = i + 1;
        let part = rels
            .iter()
            .find(|r| r.id == *id)
            .map(|r| r.target.clone())
            .ok_or_else(|| anyhow!("damaged PowerPoint file: slide {number} ({id}) has no part"))?;
        let slide = read_xml(&mut pkg, &part, SKIP, limits)?.ok_or_else(|| {
            anyhow!("damaged PowerPoint file: slide {number} ({part}) is missing")
        })?;
        let slide_rels = relationships(&mut pkg, &part, limits)?;
        let layout = match find_rel(&slide_rels, "/slideLayout") {
            Some(target) => {
                if !layouts.contains_key(target) {
                    let placeholders = match read_xml(&mut pkg, target, SKIP, limits)? {
                        Some(root) => layout_placeholders(&root),
                        None => Vec::new(),
                    };
                    layouts.insert(target.to_string(), placeholders);
                }
                layouts.get(target).map(Vec::as_slice).unwrap_or(&[])
            }
            None => &[],
        };
        let mut content = SlideContent::default();
        if let Some(tree) = sp_tree(&slide) {
            let shapes = shapes(tree, layout);
            collect(&shapes, &mut content);
            // The slide's pictures after its text (their place among the shapes is not kept).
            let texts = pictures.text_in(&mut pkg, tree, &slide_rels, limits);
            content.blocks.extend(texts);
        }
        if let Some(target) = find_rel(&slide_rels, "/notesSlide")
            && let Some(notes) = read_xml(&mut pkg, target, SKIP, limits)?
        {
            content.notes = notes_text(&notes);
        }
        slides.push(content);
    }

    let all: String = slides
        .iter()
        .flat_map(|s| s.title.iter().chain(&s.blocks).chain(&s.notes))
        .map(|s| format!("{s}\n"))
        .collect();
    let cjk = mostly_cjk(&all);
    let (slide_label, notes_label) = if cjk {
        ("幻灯片", "备注：")
    } else {
        ("Slide", "Notes: ")
    };

    let mut out = TextBuilder::new(limits);
    for (i, slide) in slides.iter().enumerate() {
        if slide.title.is_none() && slide.blocks.is_empty() && slide.notes.is_none() {
            continue;
        }
        let heading = match &slide.title {
            Some(title) => title.clone(),
            None => format!("{slide_label} {}", i + 1),
        };
        out.heading(1, &heading)?;
        for block in &slide.blocks {
            out.paragraph(block)?;
        }
        if let Some(notes) = &slide.notes {
            out.paragraph(&format!("{notes_label}{notes}"))?;
        }
    }
    let title = core_title.or_else(|| slides.first().and_then(|s| s.title.clone()));
    Ok(Extracted {
        text: out.finish(),
        title,
        locale,
        pages: None,
        synthetic_headings: false,
        ocr: pictures.engine,
        boxes: Vec::new(),
    })
}

/// Elements of slide parts the extractor never reads.
const SKIP: &[&str] = &[
    "rPr",
    "endParaRPr",
    "defRPr",
    "lstStyle",
    "bodyPr",
    "style",
    "extLst",
    "bg",
    "prstGeom",
    "custGeom",
    "ln",
    "solidFill",
    "gradFill",
    "tblPr",
    "tblGrid",
    "tcPr",
];

fn rel_id(node: &Node) -> Option<&str> {
    node.prefixed_attr("id")
}

fn find_rel<'a>(rels: &'a [Relationship], kind_suffix: &str) -> Option<&'a str> {
    rels.iter()
        .find(|r| r.kind.ends_with(kind_suffix))
        .map(|r| r.target.as_str())
}

fn sp_tree(root: &Node) -> Option<&Node> {
    root.child("cSld").and_then(|c| c.child("spTree"))
}

#[derive(Debug, Default)]
struct SlideContent {
    title: Option<String>,
    blocks: Vec<String>,
    notes: Option<String>,
}

/// A placeholder of a layout: its type, index and position.
#[derive(Debug)]
struct Placeholder {
    kind: String,
    idx: Option<String>,
    pos: Option<(i64, i64)>,
}

fn layout_placeholders(root: &Node) -> Vec<Placeholder> {
    let mut out = Vec::new();
    if let Some(tree) = sp_tree(root) {
        for sp in tree.children_named("sp") {
            if let Some(ph) = placeholder(sp) {
                out.push(Placeholder {
                    kind: ph.attr("type").unwrap_or("obj").to_string(),
                    idx: ph.attr("idx").map(String::from),
                    pos: offset(sp.child("spPr")),
                });
            }
        }
    }
    out
}

/// The `p:ph` element of a shape.
fn placeholder(sp: &Node) -> Option<&Node> {
    sp.elements()
        .find(|n| n.name.starts_with("nv"))
        .and_then(|nv| nv.child("nvPr"))
        .and_then(|nv| nv.child("ph"))
}

/// The offset `(y, x)` of the transform under `props` (a shape's `spPr`, a group's
/// `grpSpPr`, or a graphic frame itself).
fn offset(props: Option<&Node>) -> Option<(i64, i64)> {
    let off = props?.child("xfrm")?.child("off")?;
    Some((off.attr("y")?.parse().ok()?, off.attr("x")?.parse().ok()?))
}

#[derive(Debug)]
struct Shape<'a> {
    pos: Option<(i64, i64)>,
    kind: ShapeKind<'a>,
}

#[derive(Debug)]
enum ShapeKind<'a> {
    Text { node: &'a Node, ph: Option<String> },
    Table(&'a Node),
    Group(Vec<Shape<'a>>),
}

/// The shapes of a shape tree (or group), in reading order.
fn shapes<'a>(tree: &'a Node, layout: &[Placeholder]) -> Vec<Shape<'a>> {
    let mut out = Vec::new();
    push_shapes(tree, layout, &mut out);
    if out.iter().all(|s| s.pos.is_some()) {
        out.sort_by_key(|s| s.pos);
    }
    out
}

fn push_shapes<'a>(tree: &'a Node, layout: &[Placeholder], out: &mut Vec<Shape<'a>>) {
    for node in tree.elements() {
        match node.name.as_str() {
            "sp" => {
                let ph = placeholder(node);
                let kind = ph.map(|p| p.attr("type").unwrap_or("obj").to_string());
                let pos = offset(node.child("spPr")).or_else(|| {
                    let ph = ph?;
                    let idx = ph.attr("idx");
                    let kind = kind.as_deref().unwrap_or("obj");
                    layout
                        .iter()
                        .find(|l| idx.is_some() && l.idx.as_deref() == idx)
                        .or_else(|| layout.iter().find(|l| l.kind == kind))
                        .and_then(|l| l.pos)
                });
                out.push(Shape {
                    pos,
                    kind: ShapeKind::Text { node, ph: kind },
                });
            }
            "grpSp" => out.push(Shape {
                pos: offset(node.child("grpSpPr")),
                kind: ShapeKind::Group(shapes(node, layout)),
            }),
            "graphicFrame" => {
                if let Some(tbl) = node.find("tbl") {
                    out.push(Shape {
                        pos: offset(Some(node)),
                        kind: ShapeKind::Table(tbl),
                    });
                }
            }
            "AlternateContent" => {
                if let Some(choice) = node.child("Choice") {
                    push_shapes(choice, layout, out);
                }
            }
            _ => {}
        }
    }
}

fn collect(shapes: &[Shape<'_>], content: &mut SlideContent) {
    for shape in shapes {
        match &shape.kind {
            ShapeKind::Text { node, ph } => {
                let is_title = matches!(ph.as_deref(), Some("title" | "ctrTitle"));
                if is_title && content.title.is_none() {
                    let lines = text_lines(node, false);
                    let title = one_line(&lines.join(" "));
                    if !title.is_empty() {
                        content.title = Some(title);
                    }
                    continue;
                }
                let bulleted = matches!(ph.as_deref(), Some("body" | "obj"));
                let lines = text_lines(node, bulleted);
                if !lines.is_empty() {
                    content.blocks.push(lines.join("\n"));
                }
            }
            ShapeKind::Table(tbl) => {
                if let Some(table) = pipe_table(&table_rows(tbl)) {
                    content.blocks.push(table);
                }
            }
            ShapeKind::Group(children) => collect(children, content),
        }
    }
}

/// The paragraphs of a shape's text body as lines; `bulleted` for a body placeholder, whose
/// paragraphs are bullets unless they say otherwise.
fn text_lines(sp: &Node, bulleted: bool) -> Vec<String> {
    let Some(body) = sp.child("txBody") else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let mut counters = [0i64; 9];
    for p in body.children_named("p") {
        let ppr = p.child("pPr");
        let lvl: usize = ppr
            .and_then(|p| p.attr("lvl"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0usize)
            .min(8);
        let text = paragraph_text(p);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        for c in counters.iter_mut().skip(lvl + 1) {
            *c = 0;
        }
        let auto = ppr.and_then(|p| p.child("buAutoNum"));
        let prefix = if let Some(auto) = auto {
            let start = auto
                .attr("startAt")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1i64);
            counters[lvl] = if counters[lvl] == 0 {
                start
            } else {
                counters[lvl].saturating_add(1)
            };
            format!("{}. ", counters[lvl])
        } else {
            counters[lvl] = 0;
            let none = ppr.is_some_and(|p| p.child("buNone").is_some());
            let chr =
                ppr.is_some_and(|p| p.child("buChar").is_some() || p.child("buBlip").is_some());
            if chr || (bulleted && !none) {
                "- ".to_string()
            } else {
                String::new()
            }
        };
        let indent = if prefix.is_empty() {
            String::new()
        } else {
            "  ".repeat(lvl)
        };
        let pad = " ".repeat(indent.len() + prefix.len());
        let mut parts = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let mut line = format!("{indent}{prefix}{}", parts.next().unwrap_or(""));
        for part in parts {
            line.push('\n');
            line.push_str(&pad);
            line.push_str(part);
        }
        lines.push(line);
    }
    lines
}

/// The text of an `a:p`: runs, fields (their current text) and line breaks.
fn paragraph_text(p: &Node) -> String {
    let mut out = String::new();
    for n in p.elements() {
        match n.name.as_str() {
            "r" | "fld" => {
                if let Some(t) = n.child("t") {
                    out.push_str(&t.text());
                }
            }
            "br" => out.push('\n'),
            _ => {}
        }
    }
    out.replace('\u{b}', "\n")
}

fn table_rows(tbl: &Node) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for tr in tbl.children_named("tr") {
        let cells: Vec<String> = tr
            .children_named("tc")
            .map(|tc| {
                // A cell merged into the one before it or above it is empty: the columns stay.
                if matches!(tc.attr("hMerge"), Some("1" | "true"))
                    || matches!(tc.attr("vMerge"), Some("1" | "true"))
                {
                    return String::new();
                }
                let text = tc
                    .child("txBody")
                    .map(|b| {
                        b.children_named("p")
                            .map(paragraph_text)
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                one_line(&text)
            })
            .collect();
        rows.push(cells);
    }
    rows
}

/// The speaker notes: the body placeholders of a notes slide.
fn notes_text(root: &Node) -> Option<String> {
    let tree = sp_tree(root)?;
    let mut blocks = Vec::new();
    let mut stack = vec![tree];
    while let Some(node) = stack.pop() {
        for sp in node.elements() {
            match sp.name.as_str() {
                "sp" => {
                    let is_body = placeholder(sp)
                        .is_some_and(|ph| matches!(ph.attr("type"), Some("body") | None));
                    if is_body {
                        let lines = text_lines(sp, false);
                        if !lines.is_empty() {
                            blocks.push(lines.join("\n"));
                        }
                    }
                }
                "grpSp" => stack.push(sp),
                _ => {}
            }
        }
    }
    (!blocks.is_empty()).then(|| blocks.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ooxml::tests::{check_fixture, heading_paths, limits, package};

    const NS: &str = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main""#;
    const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

    fn rels(entries: &[(&str, &str, &str)]) -> String {
        let body: String = entries
            .iter()
            .map(|(id, kind, target)| {
                format!(r#"<Relationship Id="{id}" Type="{REL}/{kind}" Target="{target}"/>"#)
            })
            .collect();
        format!(
            r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{body}</Relationships>"#
        )
    }

    fn sp(ph: Option<&str>, pos: Option<(i64, i64)>, paragraphs: &str) -> String {
        let ph = match ph {
            Some(t) => format!(r#"<p:ph type="{t}"/>"#),
            None => String::new(),
        };
        let xfrm = match pos {
            Some((y, x)) => {
                format!(r#"<a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="10" cy="10"/></a:xfrm>"#)
            }
            None => String::new(),
        };
        format!(
            r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr>{xfrm}</p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</p:txBody></p:sp>"#
        )
    }

    fn para(lvl: u8, extra: &str, text: &str) -> String {
        format!(
            r#"<a:p><a:pPr lvl="{lvl}">{extra}</a:pPr><a:r><a:rPr lang="zh-CN"/><a:t>{text}</a:t></a:r></a:p>"#
        )
    }

    fn slide(shapes: &str) -> String {
        format!(
            r#"<p:sld {NS}><p:cSld><p:spTree><p:nvGrpSpPr/><p:grpSpPr/>{shapes}</p:spTree></p:cSld></p:sld>"#
        )
    }

    /// A deck whose slides are listed in `order` (slide part numbers).
    fn deck(slides: &[(&str, &str)], order: &[usize], extra: &[(&str, &str)]) -> Vec<u8> {
        let ids: String = order
            .iter()
            .enumerate()
            .map(|(i, n)| format!(r#"<p:sldId id="{}" r:id="rId{n}"/>"#, 256 + i))
            .collect();
        let presentation =
            format!(r#"<p:presentation {NS}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"#);
        let pres_rels: Vec<(String, &str, String)> = (1..=slides.len())
            .map(|n| (format!("rId{n}"), "slide", format!("slides/slide{n}.xml")))
            .collect();
        let pres_rels = rels(
            &pres_rels
                .iter()
                .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
                .collect::<Vec<_>>(),
        );
        let mut parts: Vec<(String, String)> = vec![
            ("ppt/presentation.xml".into(), presentation),
            ("ppt/_rels/presentation.xml.rels".into(), pres_rels),
        ];
        for (n, (xml, slide_rels)) in slides.iter().enumerate() {
            parts.push((format!("ppt/slides/slide{}.xml", n + 1), xml.to_string()));
            if !slide_rels.is_empty() {
                parts.push((
                    format!("ppt/slides/_rels/slide{}.xml.rels", n + 1),
                    slide_rels.to_string(),
                ));
            }
        }
        for (name, xml) in extra {
            parts.push((name.to_string(), xml.to_string()));
        }
        let refs: Vec<(&str, &str)> = parts
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        package(&refs)
    }

    #[test]
    fn pptx_slides_follow_presentation_order_with_titles_and_reading_order() {
        let first = slide(
            &[
                sp(None, Some((5000, 0)), &para(0, "", "bottom text")),
                sp(Some("ctrTitle"), Some((100, 0)), &para(0, "", "年度总结")),
                sp(None, Some((1000, 3000)), &para(0, "", "right")),
                sp(None, Some((1000, 100)), &para(0, "", "left")),
            ]
            .concat(),
        );
        let second = slide(
            &[
                sp(Some("title"), None, &para(0, "", "目标")),
                sp(
                    Some("body"),
                    None,
                    &[
                        para(0, "", "增长"),
                        para(1, "", "华东"),
                        para(0, "<a:buNone/>", "无项目符号"),
                        para(0, r#"<a:buAutoNum type="arabicPeriod"/>"#, "第一"),
                        para(0, r#"<a:buAutoNum type="arabicPeriod"/>"#, "第二"),
                    ]
                    .concat(),
                ),
            ]
            .concat(),
        );
        let third = slide(&sp(None, None, &para(0, "", "没有标题的幻灯片")));
        let empty = slide("");
        let bytes = deck(
            &[(&second, ""), (&first, ""), (&third, ""), (&empty, "")],
            &[2, 1, 4, 3],
            &[],
        );
        let out = extract(&bytes, &limits(), None).unwrap();
        assert_eq!(
            out.text,
            "# 年度总结\n\nleft\n\nright\n\nbottom text\n\n# 目标\n\n- 增长\n  - 华东\n无项目符号\n1. 第一\n2. 第二\n\n# 幻灯片 4\n\n没有标题的幻灯片\n"
        );
        assert_eq!(out.title.as_deref(), Some("年度总结"));
        assert_eq!(out.pages, None);
    }

    #[test]
    fn pptx_tables_groups_and_notes_are_read() {
        let table = r#"<p:graphicFrame><p:nvGraphicFramePr/><p:xfrm><a:off x="0" y="2000"/></p:xfrm><a:graphic><a:graphicData><a:tbl><a:tblGrid/><a:tr><a:tc><a:txBody><a:p><a:r><a:t>Region</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>Sales</a:t></a:r></a:p></a:txBody></a:tc></a:tr><a:tr><a:tc><a:txBody><a:p><a:r><a:t>East</a:t></a:r></a:p><a:p><a:r><a:t>coast</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>12</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>"#;
        let group = format!(
            r#"<p:grpSp><p:nvGrpSpPr/><p:grpSpPr><a:xfrm><a:off x="0" y="1000"/></a:xfrm></p:grpSpPr>{}{}</p:grpSp>"#,
            sp(None, Some((20, 0)), &para(0, "", "grouped second")),
            sp(None, Some((10, 0)), &para(0, "", "grouped first")),
        );
        let body = slide(
            &[
                sp(Some("title"), Some((0, 0)), &para(0, "", "Results")),
                table.to_string(),
                group,
                sp(
                    None,
                    Some((3000, 0)),
                    r#"<a:p><a:r><a:t>line one</a:t></a:r><a:br/><a:r><a:t>line two</a:t></a:r></a:p>"#,
                ),
            ]
            .concat(),
        );
        let notes = format!(
            r#"<p:notes {NS}><p:cSld><p:spTree>{}{}{}</p:spTree></p:cSld></p:notes>"#,
            sp(Some("sldImg"), None, ""),
            sp(Some("body"), None, &para(0, "", "Say the numbers slowly.")),
            sp(Some("sldNum"), None, &para(0, "", "1")),
        );
        let slide_rels = rels(&[
            ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"),
            ("rId2", "notesSlide", "../notesSlides/notesSlide1.xml"),
        ]);
        let core = r#"<cp:coreProperties xmlns:cp="cp" xmlns:dc="dc"><dc:title>Q3 review</dc:title><dc:language>en-US</dc:language></cp:coreProperties>"#;
        let bytes = deck(
            &[(&body, &slide_rels)],
            &[1],
            &[
                ("ppt/notesSlides/notesSlide1.xml", &notes),
                ("docProps/core.xml", core),
            ],
        );
        let out = extract(&bytes, &limits(), None).unwrap();
        assert_eq!(
            out.text,
            "# Results\n\ngrouped first\n\ngrouped second\n\n| Region | Sales |\n| --- | --- |\n| East coast | 12 |\n\nline one\nline two\n\nNotes: Say the numbers slowly.\n"
        );
        assert_eq!(out.title.as_deref(), Some("Q3 review"));
        assert_eq!(out.locale.as_deref(), Some("en-US"));
    }

    #[test]
    fn pptx_placeholders_take_their_layout_position() {
        let layout = format!(
            r#"<p:sldLayout {NS}><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:sldLayout>"#,
            sp(Some("title"), Some((0, 0)), ""),
            sp(Some("body"), Some((1000, 0)), ""),
        );
        let body = slide(
            &[
                sp(None, Some((500, 0)), &para(0, "<a:buNone/>", "between")),
                sp(Some("body"), None, &para(0, "<a:buNone/>", "body text")),
                sp(Some("title"), None, &para(0, "", "Layout title")),
            ]
            .concat(),
        );
        let slide_rels = rels(&[("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")]);
        let bytes = deck(
            &[(&body, &slide_rels)],
            &[1],
            &[("ppt/slideLayouts/slideLayout1.xml", &layout)],
        );
        let out = extract(&bytes, &limits(), None).unwrap();
        assert_eq!(out.text, "# Layout title\n\nbetween\n\nbody text\n");
    }

    #[test]
    fn pptx_fixture_zh_deck() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-deck.pptx");
        let expect = include_str!("../../../tests/fixtures/formats/zh-deck.pptx.expect.json");
        let out = extract(bytes, &limits(), None).unwrap();
        let expect = check_fixture(&out, expect);
        let paths: Vec<Vec<String>> = serde_json::from_value(expect["headings"].clone()).unwrap();
        assert_eq!(heading_paths(&out.text), paths);
        for note in expect["notes"].as_object().unwrap().values() {
            let line = format!("备注：{}", note.as_str().unwrap());
            assert!(out.text.contains(&line), "{line}");
        }
        // Each slide's text lies in its own section.
        let sections: Vec<&str> = out.text.split("\n# ").collect();
        let slides = expect["slides"].as_array().unwrap();
        assert_eq!(sections.len(), slides.len());
        for (section, slide) in sections.iter().zip(slides) {
            for line in slide.as_str().unwrap().lines() {
                let line = line.replace('\t', " | ");
                assert!(section.contains(&line), "{line:?} not in {section}");
            }
        }
    }

    #[test]
    fn pptx_bounds_and_damage_are_reported() {
        let s = slide(&sp(None, None, &para(0, "", "x")));
        let mut l = limits();
        l.max_pages = 1;
        let err = extract(&deck(&[(&s, ""), (&s, "")], &[1, 2], &[]), &l, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("loader.max_pages"), "{err}");
        let err = extract(&package(&[("ppt/other.xml", "<x/>")]), &limits(), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "damaged PowerPoint file: ppt/presentation.xml is missing"
        );
        let bytes = deck(&[(&s, "")], &[1, 2], &[]);
        let err = extract(&bytes, &limits(), None).unwrap_err().to_string();
        assert!(err.contains("slide 2"), "{err}");
    }
}
