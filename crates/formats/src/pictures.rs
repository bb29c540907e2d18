//! Text in the pictures of an Office file: a scanned page pasted into a Word document, a
//! screenshot or a photographed notice on a slide. Each picture a part refers to (`a:blip`
//! of DrawingML, `v:imagedata` of VML) is read by the caller's OCR engine and its text laid
//! out as a scanned page's is (reading order, paragraphs, tables), then written where the
//! picture stands, as paragraphs (a picture's large type is not a heading of the document).
//!
//! Bounded: a picture is decoded within [`Limits::max_image_pixels`] (from its header), at
//! most [`Limits::max_pages`] pictures are read per file, each at most once (a logo on every
//! page is read and written once), pictures too small to hold a line of text are passed over,
//! and no picture is begun once the file's deadline is less than [`TIME_LEFT`] away, so the
//! document's own text is always extracted. A picture that cannot be read (a vector format,
//! damaged bytes, an engine error) is passed over: the document's text does not depend on it.
//! Without an OCR engine pictures are passed over, as before.

use std::collections::HashSet;
use std::io::Read;
use std::time::{Duration, Instant};

use crate::limits::Limits;
use crate::ooxml::{Node, Relationship};
use crate::package::Package;
use crate::scan::{self, PageReader};

/// The time a file must have left for another picture to be begun.
pub(crate) const TIME_LEFT: Duration = Duration::from_secs(10);

/// Most bytes of one picture part read.
const MOST_BYTES: u64 = 64 << 20;

/// Pictures narrower or lower than this (pixels) hold no line of text worth reading.
const LEAST_SIDE: (u32, u32) = (32, 12);

/// The pictures of one file, read by an OCR engine as the extractor meets them.
pub(crate) struct Pictures<'r> {
    ocr: Option<&'r dyn PageReader>,
    /// Parts already read (or passed over).
    seen: HashSet<String>,
    /// Pictures given to the engine.
    read: usize,
    /// The engine's name once a picture gave text.
    pub(crate) engine: Option<String>,
}

impl<'r> Pictures<'r> {
    pub(crate) fn new(ocr: Option<&'r dyn PageReader>) -> Self {
        Self {
            ocr,
            seen: HashSet::new(),
            read: 0,
            engine: None,
        }
    }

    /// The text of each picture under `node` (its relationship IDs resolved by `rels`), in
    /// document order: one string per picture that held text.
    pub(crate) fn text_in(
        &mut self,
        pkg: &mut Package<'_>,
        node: &Node,
        rels: &[Relationship],
        limits: &Limits,
    ) -> Vec<String> {
        let Some(reader) = self.ocr else {
            return Vec::new();
        };
        let mut ids = Vec::new();
        picture_ids(node, &mut ids);
        let mut out = Vec::new();
        for id in ids {
            let Some(rel) = rels.iter().find(|r| r.id == id) else {
                continue;
            };
            if !self.seen.insert(rel.target.to_ascii_lowercase()) {
                continue;
            }
            if self.read >= limits.max_pages
                || limits.deadline.saturating_duration_since(Instant::now()) < TIME_LEFT
            {
                break;
            }
            let Some(image) = picture(pkg, &rel.target, limits) else {
                continue;
            };
            if image.width < LEAST_SIDE.0 || image.height < LEAST_SIDE.1 {
                continue;
            }
            self.read += 1;
            if let Ok(text) = scan::picture_text(reader, &image, limits)
                && !text.trim().is_empty()
            {
                self.engine = Some(reader.name());
                out.push(text);
            }
        }
        out
    }
}

/// The relationship IDs of the pictures under `node`, in document order.
fn picture_ids(node: &Node, out: &mut Vec<String>) {
    for child in node.elements() {
        // The fallback of `mc:AlternateContent` repeats its choice for older readers.
        if child.name == "Fallback" {
            continue;
        }
        let id = match child.name.as_str() {
            "blip" => child.prefixed_attr("embed"),
            "imagedata" => child.prefixed_attr("id"),
            _ => None,
        };
        match id {
            Some(id) => out.push(id.to_string()),
            None => picture_ids(child, out),
        }
    }
}

/// The first page of picture part `name`, decoded within the bounds; `None` when it is
/// missing, too large, or not a picture the formats decode.
fn picture(pkg: &mut Package<'_>, name: &str, limits: &Limits) -> Option<scan::PageImage> {
    let part = pkg.read_stream(name).ok()??;
    let mut bytes = Vec::new();
    part.take(MOST_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MOST_BYTES {
        return None;
    }
    scan::ImageKind::sniff(&bytes)?;
    scan::decode_image(&bytes, limits).ok()?.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ooxml::parse_xml;

    #[test]
    fn pictures_are_found_in_drawingml_and_vml_in_document_order() {
        let xml = r#"<w:p xmlns:w="w" xmlns:a="a" xmlns:r="r" xmlns:v="v">
            <w:r><w:drawing><a:graphic><a:graphicData><pic:pic><pic:blipFill>
              <a:blip r:embed="rId7"/></pic:blipFill></pic:pic></a:graphicData></a:graphic>
            </w:drawing></w:r>
            <w:r><w:pict><v:shape><v:imagedata r:id="rId9" o:title=""/></v:shape></w:pict></w:r>
            <w:r><w:t>after</w:t></w:r></w:p>"#;
        let node = parse_xml(xml, "test", &[], &Limits::for_tests()).unwrap();
        let mut ids = Vec::new();
        picture_ids(&node, &mut ids);
        assert_eq!(ids, ["rId7", "rId9"]);
    }

    #[test]
    fn without_an_engine_no_picture_is_read() {
        let node = parse_xml(
            r#"<p xmlns:r="r"><blip r:embed="rId1"/></p>"#,
            "test",
            &[],
            &Limits::for_tests(),
        )
        .unwrap();
        let bytes = crate::ooxml::tests::package(&[("x.xml", "<x/>")]);
        let mut pkg = Package::open(&bytes, &Limits::for_tests()).unwrap();
        let rels = [Relationship {
            id: "rId1".into(),
            kind: "image".into(),
            target: "word/media/image1.png".into(),
        }];
        let mut pictures = Pictures::new(None);
        assert!(
            pictures
                .text_in(&mut pkg, &node, &rels, &Limits::for_tests())
                .is_empty()
        );
        assert_eq!(pictures.engine, None);
    }
}
