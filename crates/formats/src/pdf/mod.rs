//! PDF: the text layer, laid out for reading.
//!
//! [`pdf_oxide`] parses the file (cross-reference repair, encryption with an empty user
//! password, fonts: embedded and predefined CID CMaps such as `UniGB-UCS2-H`, `ToUnicode`
//! maps, simple encodings) and gives every glyph of a page with its box and size. zhiku's own
//! [`layout`](crate::layout) turns those glyphs into lines, columns, paragraphs and headings; headings come
//! from the outline (bookmarks) when the file has one, from font size otherwise. Each page is
//! one page of the output, so every chunk knows its pages. A page without a text layer is read
//! by OCR when the caller gives an engine ([`crate::scan`]): its largest picture, checked
//! against the pixel bound before it is decoded; the text pages of a mixed PDF stay as they
//! are.
//!
//! Refused, with the reason: a password-protected file, more pages than
//! [`Limits::max_pages`], a file with no text layer at all (a scan: "no text layer"), a file
//! the parser cannot read (damaged, truncated beyond repair), and a file whose objects or page
//! content nest deeper than the parser's stack allows, wherever they hide (object streams, page
//! content, forms: the `check` module). A page that fails alone is kept as an empty page, so
//! page numbers stay true.

mod check;
mod render;

pub use render::{DRAW_SIDE, draw_page, use_pdfium};

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use anyhow::{Result, anyhow, bail};
use pdf_oxide::object::Object;
use pdf_oxide::{PdfDocument, PdfFilter};

use crate::extracted::Extracted;
use crate::layout::{self, Glyph, OutlineEntry, PageText};
use crate::limits::Limits;
use crate::scan::{PageImage, PageReader};
use crate::text_builder::one_line;

/// Outline entries read at most (a larger outline is not read, and headings come from sizes).
const MAX_OUTLINE: usize = 5_000;

/// Glyphs read from one page at most (a real page has a few thousand).
const MAX_GLYPHS_PER_PAGE: usize = 200_000;

/// Stack of the thread the parser runs on: it parses nested objects recursively, as deep as the
/// nesting check lets a file go (about 6 MiB of stack at that bound); small enough to leave an
/// extraction worker's address space to the file.
const PARSER_STACK: usize = 32 << 20;

/// Extracts a PDF; pages without a text layer are read by `ocr` when given.
pub fn extract(bytes: &[u8], limits: &Limits, ocr: Option<&dyn PageReader>) -> Result<Extracted> {
    guarded(bytes, limits, |checker| {
        extract_inner(bytes, limits, checker, ocr)
    })
}

/// The picture of page `page` (from 1): for a page without a text layer its largest picture
/// (a scan is one picture per page) within the pixel bound, or the page as PDFium draws it when
/// that picture cannot be decoded; for a text page, the page as PDFium draws it. `None` for a
/// page without a picture, or a text page when PDFium is not configured ([`use_pdfium`]).
pub fn page_picture(bytes: &[u8], page: u32, limits: &Limits) -> Result<Option<PageImage>> {
    guarded(bytes, limits, |checker| {
        let doc = open(bytes, checker)?;
        let count = page_count(&doc)?;
        let index = usize::try_from(page).unwrap_or(usize::MAX).wrapping_sub(1);
        if index >= count {
            bail!("the PDF has {count} pages, no page {page}");
        }
        checker.page(&doc, index)?;
        if !doc.extract_chars(index).unwrap_or_default().is_empty() {
            // A text page is drawn whole (when PDFium is there): its boxes are on the page.
            return render::draw_page(bytes, index);
        }
        scan_picture(&doc, bytes, index, limits)
    })
}

/// Runs `f` on a checker of `bytes` in a thread of its own with a large stack, a panic of the
/// parser being this file's failure.
fn guarded<T: Send>(
    bytes: &[u8],
    limits: &Limits,
    f: impl FnOnce(&mut check::Checker<'_>) -> Result<T> + Send,
) -> Result<T> {
    // The parser recurses into nested objects: refuse what would overflow a stack (an
    // overflow aborts the process, which no unwinding catches), checked before the parser
    // reads anything (see the `check` module), and give it a large one.
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("zhiku-pdf".into())
            .stack_size(PARSER_STACK)
            .spawn_scoped(scope, || {
                // The parser is a large body of code run on untrusted bytes: a panic in it is
                // this file's failure, not the load's.
                catch_unwind(AssertUnwindSafe(|| {
                    let mut checker = check::Checker::before_parsing(bytes, limits)?;
                    f(&mut checker)
                }))
            })
            .map_err(|e| anyhow!("cannot start the PDF reader: {e}"))?;
        match worker.join() {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) | Err(panic) => {
                let what = crate::panic::panic_message(panic.as_ref());
                bail!("damaged or unsupported PDF (the parser failed: {what})")
            }
        }
    })
}

/// The document of `bytes`, checked whole, not encrypted.
fn open(bytes: &[u8], checker: &mut check::Checker<'_>) -> Result<PdfDocument> {
    // A PDF ends with `%%EOF` (give or take trailing bytes some writers add). Without it the
    // file was cut short: the parser could rebuild part of it, but indexing part of a document
    // as if it were whole would lose the rest silently.
    let tail = &bytes[bytes.len().saturating_sub(2048)..];
    if !tail.windows(5).any(|w| w == b"%%EOF") {
        bail!("truncated PDF (no %%EOF marker at its end): the file is incomplete");
    }
    let doc = PdfDocument::from_bytes(bytes.to_vec())
        .map_err(|e| anyhow!("damaged PDF: {}", short(&e.to_string())))?;
    if doc.is_encrypted() && !doc.is_authenticated() && !doc.authenticate(b"").unwrap_or(false) {
        bail!("encrypted PDF (password-protected): cannot be read");
    }
    checker.opened(&doc);
    Ok(doc)
}

/// How many pages `doc` has, or why that cannot be read.
fn page_count(doc: &PdfDocument) -> Result<usize> {
    doc.page_count().map_err(|e| match e {
        pdf_oxide::error::Error::EncryptedPdf => {
            anyhow!("encrypted PDF (password-protected): cannot be read")
        }
        e => anyhow!(
            "damaged PDF: cannot read its pages: {}",
            short(&e.to_string())
        ),
    })
}

fn extract_inner(
    bytes: &[u8],
    limits: &Limits,
    checker: &mut check::Checker<'_>,
    ocr: Option<&dyn PageReader>,
) -> Result<Extracted> {
    let doc = open(bytes, checker)?;
    let count = page_count(&doc)?;
    if count > limits.max_pages {
        bail!(
            "PDF of {count} pages, more than the {} page limit (loader.max_pages)",
            limits.max_pages
        );
    }
    let mut pages: Vec<(f32, Vec<layout::Line>)> = Vec::with_capacity(count);
    let mut frames: Vec<(f32, u16)> = Vec::with_capacity(count);
    let mut glyphs_seen = 0usize;
    let mut scanned = 0usize;
    for index in 0..count {
        limits.check_time()?;
        let (width, height) = doc
            .get_page_media_box(index)
            .map(|(x0, y0, x1, y1)| ((x1 - x0).abs(), (y1 - y0).abs()))
            .unwrap_or((0.0, 0.0));
        frames.push((width, 0));
        // The page's content (and the forms it draws) is checked before the parser reads it.
        checker.page(&doc, index)?;
        let chars = doc.extract_chars(index).unwrap_or_default();
        if chars.len() > MAX_GLYPHS_PER_PAGE {
            bail!(
                "page {} holds {} glyphs, more than the {MAX_GLYPHS_PER_PAGE} a page may have",
                index + 1,
                chars.len()
            );
        }
        let glyphs: Vec<Glyph> = chars
            .into_iter()
            .map(|c| Glyph {
                text: c.char.to_string(),
                x0: c.bbox.x,
                x1: c.bbox.x + c.bbox.width,
                y: c.origin_y,
                size: c.font_size,
            })
            .collect();
        glyphs_seen += glyphs.len();
        if glyphs.is_empty()
            && let Some(reader) = ocr
            && let Some((read, turn)) =
                read_scanned_page(&doc, bytes, index, height, limits, reader)?
        {
            scanned += 1;
            pages.push(read);
            if let Some(frame) = frames.last_mut() {
                frame.1 = turn;
            }
            continue;
        }
        let page = PageText { height, glyphs };
        pages.push((height, layout::lines(&page)));
    }
    if glyphs_seen == 0 && scanned == 0 {
        match ocr {
            None => bail!(
                "no text layer (a scanned PDF?): nothing to index without OCR (ocr = \"off\")"
            ),
            Some(_) => bail!("no text layer, and no page picture OCR could read"),
        }
    }
    limits.check_time()?;
    let outline = outline(&doc, count);
    let laid = layout::lay_out(pages, &frames, &outline, limits)?;
    let (title, locale) = info(&doc);
    Ok(Extracted {
        text: laid.text,
        title,
        locale,
        pages: Some(laid.pages),
        synthetic_headings: false,
        ocr: ocr.filter(|_| scanned > 0).map(|r| r.name()),
        boxes: laid.boxes,
    })
}

/// A page's height and the lines OCR read on it.
type ScannedPage = (f32, Vec<layout::Line>);

/// The lines OCR reads on page `index` (of `height` points), which has no text layer: the
/// page's largest picture (a scan is one picture per page), checked against the pixel bound
/// before it is decoded; with the quarter turns that made it upright. `None` when the page
/// holds no picture (a blank page).
fn read_scanned_page(
    doc: &PdfDocument,
    bytes: &[u8],
    index: usize,
    height: f32,
    limits: &Limits,
    reader: &dyn PageReader,
) -> Result<Option<(ScannedPage, u16)>> {
    let page_no = index + 1;
    let Some(page) = scan_picture(doc, bytes, index, limits)? else {
        return Ok(None);
    };
    limits.check_time()?;
    let read = crate::scan::read_page(reader, &page)
        .map_err(|e| anyhow!("page {page_no}: OCR failed: {e:#}"))?;
    // Pixels to points: the upright picture spans the page's height.
    let scale = if read.height > 0 && height > 0.0 {
        height / read.height as f32
    } else {
        1.0
    };
    let (_, lines) = crate::scan::page_lines(&read, scale);
    Ok(Some(((height, lines), read.rotation / 90)))
}

/// What the largest picture of a page gave.
enum Largest {
    /// Decoded.
    Picture(PageImage),
    /// The page holds no picture (or only a speck).
    Nothing,
    /// A picture no decoder here reads (JBIG2, JPX, a damaged stream): why.
    Unreadable(String),
}

/// The picture of page `index` (which has no text layer) to read or to show: its largest
/// picture (a scan is one picture a page), checked against the pixel bound before it is
/// decoded; when no decoder here reads that picture (JBIG2, JPX) or the parser lists none, the
/// page as PDFium draws it. `None` when there is neither picture nor PDFium.
fn scan_picture(
    doc: &PdfDocument,
    bytes: &[u8],
    index: usize,
    limits: &Limits,
) -> Result<Option<PageImage>> {
    let page_no = index + 1;
    match largest_picture(doc, index, limits)? {
        Largest::Picture(picture) => Ok(Some(picture)),
        // No picture the parser lists, yet no text layer: text drawn as outlines, or a
        // picture in a form the parser does not list. PDFium draws what is there (a blank
        // page then reads as blank).
        Largest::Nothing => render::draw_page(bytes, index),
        Largest::Unreadable(reason) => match render::draw_page(bytes, index) {
            Ok(Some(drawn)) => Ok(Some(drawn)),
            Ok(None) => bail!(
                "page {page_no}: its picture cannot be decoded: {reason} (PDFium would draw it: setting `pdfium`)"
            ),
            Err(e) => bail!("page {page_no}: its picture cannot be decoded: {reason}; {e:#}"),
        },
    }
}

/// The largest picture of page `index`, checked against the pixel bound before it is
/// decoded (a picture over it is an error, never drawn instead).
fn largest_picture(doc: &PdfDocument, index: usize, limits: &Limits) -> Result<Largest> {
    let page_no = index + 1;
    let handles = doc.page_image_handles(index).unwrap_or_default();
    let Some(largest) = handles
        .iter()
        .max_by_key(|h| u64::from(h.width) * u64::from(h.height))
    else {
        return Ok(Largest::Nothing);
    };
    let pixels = u64::from(largest.width) * u64::from(largest.height);
    if pixels > limits.max_image_pixels {
        bail!(
            "page {page_no} is a picture of {} × {} pixels, more than the {} a page may have (loader.max_image_pixels)",
            largest.width,
            largest.height,
            limits.max_image_pixels
        );
    }
    if largest.width < 16 || largest.height < 16 {
        return Ok(Largest::Nothing);
    }
    let image = largest
        .decode()
        .and_then(|i| i.to_dynamic_image())
        .map_err(|e| short(&e.to_string()));
    match image {
        Ok(image) => Ok(Largest::Picture(crate::scan::rgb_page(image))),
        // A JPEG stored as it is: its bytes are a JPEG file. Some writers give it the
        // `/DecodeParms` of a Flate stream (`/Predictor 15`), which the PDF library then applies
        // to the decoded pixels and fails; the JPEG itself is sound.
        Err(reason) if matches!(largest.filter_chain.as_slice(), [PdfFilter::DCTDecode]) => {
            let jpeg = largest
                .raw_compressed_bytes()
                .map_err(|e| anyhow!("page {page_no}: its picture cannot be read: {e}"))?;
            Ok(match crate::scan::decode_image(&jpeg, limits) {
                Ok(pages) => pages
                    .into_iter()
                    .next()
                    .map_or(Largest::Nothing, Largest::Picture),
                Err(e) => Largest::Unreadable(format!("{reason}; as JPEG: {e:#}")),
            })
        }
        Err(reason) => Ok(Largest::Unreadable(reason)),
    }
}

fn short(message: &str) -> String {
    message.chars().take(200).collect()
}

/// The outline as flat entries, when it is a tree of reasonable size (a cyclic or huge outline
/// is passed over: headings then come from font sizes).
fn outline(doc: &PdfDocument, pages: usize) -> Vec<OutlineEntry> {
    if !outline_is_sound(doc) {
        return Vec::new();
    }
    let Ok(Some(items)) = doc.get_outline() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack: Vec<(&pdf_oxide::outline::OutlineItem, usize)> =
        items.iter().rev().map(|i| (i, 1)).collect();
    while let Some((item, level)) = stack.pop() {
        let page = match &item.dest {
            Some(pdf_oxide::outline::Destination::PageIndex(i)) if *i < pages => Some(i + 1),
            Some(pdf_oxide::outline::Destination::Named(name)) => doc
                .resolve_named_destination(name)
                .ok()
                .flatten()
                .filter(|i| *i < pages)
                .map(|i| i + 1),
            _ => None,
        };
        out.push(OutlineEntry {
            title: one_line(&item.title),
            level: level.min(6),
            page,
        });
        for child in item.children.iter().rev() {
            stack.push((child, level + 1));
        }
    }
    out
}

/// True when the outline's `First`/`Next` links form a tree of at most [`MAX_OUTLINE`] items.
fn outline_is_sound(doc: &PdfDocument) -> bool {
    let Ok(catalog) = doc.catalog() else {
        return false;
    };
    let Some(Object::Reference(root)) = catalog.as_dict().and_then(|d| d.get("Outlines")) else {
        return false;
    };
    let mut seen = HashSet::new();
    let mut todo = vec![*root];
    while let Some(r) = todo.pop() {
        if !seen.insert(r) || seen.len() > MAX_OUTLINE {
            return false;
        }
        let Ok(obj) = doc.load_object(r) else {
            continue;
        };
        let Some(dict) = obj.as_dict() else { continue };
        for key in ["First", "Next"] {
            if let Some(Object::Reference(next)) = dict.get(key) {
                todo.push(*next);
            }
        }
    }
    true
}

/// The title (document info) and language (catalog `/Lang`) the file declares.
fn info(doc: &PdfDocument) -> (Option<String>, Option<String>) {
    let text = |obj: Option<&Object>| -> Option<String> {
        let obj = match obj? {
            Object::Reference(r) => doc.load_object(*r).ok()?,
            other => other.clone(),
        };
        let s = one_line(&pdf_oxide::optional_content::decode_pdf_text_string(
            obj.as_string()?,
        ));
        (!s.is_empty()).then_some(s)
    };
    let title = doc
        .trailer()
        .as_dict()
        .and_then(|t| match t.get("Info") {
            Some(Object::Reference(r)) => doc.load_object(*r).ok(),
            Some(other) => Some(other.clone()),
            None => None,
        })
        .and_then(|info| text(info.as_dict().and_then(|d| d.get("Title"))));
    let lang = doc
        .catalog()
        .ok()
        .and_then(|c| text(c.as_dict().and_then(|d| d.get("Lang"))))
        .map(|l| l.replace('_', "-"));
    (title, lang)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_nesting(bytes: &[u8]) -> Result<()> {
        check::check_depth(bytes, "", &limits())
    }

    #[test]
    fn nesting_past_the_bound_is_refused_before_parsing() {
        let deep = |n: usize| {
            let mut pdf = b"%PDF-1.7\n1 0 obj\n<< /Junk ".to_vec();
            pdf.extend(std::iter::repeat_n(b'[', n));
            pdf.extend(std::iter::repeat_n(b']', n));
            pdf.extend(b" >>\nendobj\n%%EOF\n");
            pdf
        };
        assert!(check_nesting(&deep(10)).is_ok());
        assert!(check_nesting(&deep(4000)).is_ok());
        let err = check_nesting(&deep(10_000)).unwrap_err().to_string();
        assert!(err.contains("nested deeper"), "{err}");
        // Brackets balanced inside strings, comments and streams pass, as do unbalanced ones
        // below the bound.
        let mut quiet = b"%PDF-1.7\n% [[[[[[\n1 0 obj\n<< /T (".to_vec();
        quiet.extend(b"[".repeat(1000));
        quiet.extend(b"]".repeat(1000));
        quiet.extend(b"\\) [[[ (a) ) /Length 3 >>\nstream\n");
        quiet.extend(b"<".repeat(3000));
        quiet.extend(b"\nendstream\nendobj\n%%EOF\n");
        assert!(check_nesting(&quiet).is_ok());
        // But nesting the parser can be sent to is nesting, wherever it hides: in a comment
        // (an offset points past the `%`), in a string (an offset points inside it), in a
        // stream's data, after a name that reads `/stream`.
        for (before, after) in [
            (&b"%"[..], &b"\n"[..]),
            (b"(", b")"),
            (b"<< /Length 9 >>\nstream\n", b"\nendstream"),
            (b"[ /stream ", b" /endstream ]"),
        ] {
            let mut hidden = b"%PDF-1.7\n1 0 obj\n".to_vec();
            hidden.extend(before);
            hidden.extend(b"1 0 obj [ ");
            hidden.extend(b"[".repeat(10_000));
            hidden.extend(b"]".repeat(10_000));
            hidden.extend(after);
            hidden.extend(b"\nendobj\n%%EOF\n");
            let err = check_nesting(&hidden).unwrap_err().to_string();
            assert!(err.contains("nested deeper"), "{err}");
        }
        // And a file that aborted the process before is one refused file now.
        assert!(extract(&deep(50_000), &limits(), None).is_err());
    }

    fn limits() -> Limits {
        Limits::for_tests()
    }

    /// A one-page PDF whose page is the JPEG `jpeg` (`w` × `h`), stored as it is, with the
    /// stream dictionary `extra` (objects at their byte offsets, as a writer makes them).
    fn jpeg_page_pdf(jpeg: &[u8], (w, h): (u32, u32), extra: &str) -> Vec<u8> {
        let content = format!("q {w} 0 0 {h} 0 0 cm /Im0 Do Q");
        let objects: Vec<Vec<u8>> = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] \
                 /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>"
            )
            .into_bytes(),
            format!(
                "<< /Length {} >>\nstream\n{content}\nendstream",
                content.len()
            )
            .into_bytes(),
            [
                format!(
                    "<< /Type /XObject /Subtype /Image /Width {w} /Height {h} \
                     /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode {extra} \
                     /Length {} >>\nstream\n",
                    jpeg.len()
                )
                .as_bytes(),
                jpeg,
                b"\nendstream",
            ]
            .concat(),
        ];
        let mut pdf = b"%PDF-1.7\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend(format!("{} 0 obj\n", i + 1).as_bytes());
            pdf.extend(body);
            pdf.extend(b"\nendobj\n");
        }
        let xref = pdf.len();
        pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
        for offset in offsets {
            pdf.extend(format!("{offset:010} 00000 n \n").as_bytes());
        }
        pdf.extend(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        pdf
    }

    #[test]
    fn a_jpeg_scan_given_a_flate_predictor_is_still_read() {
        let (w, h) = (240, 180);
        let picture = image::RgbImage::from_fn(w, h, |x, y| {
            if (x / 20 + y / 20) % 2 == 0 {
                image::Rgb([20, 20, 20])
            } else {
                image::Rgb([235, 235, 235])
            }
        });
        let mut jpeg = Vec::new();
        picture
            .write_to(
                &mut std::io::Cursor::new(&mut jpeg),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        // As some scanners' writers make it: a Flate predictor on a JPEG stream.
        let params = "/DecodeParms << /Predictor 15 /Colors 3 /Columns 240 /BitsPerComponent 8 >>";
        for extra in ["", params] {
            let pdf = jpeg_page_pdf(&jpeg, (w, h), extra);
            let page = page_picture(&pdf, 1, &limits())
                .unwrap_or_else(|e| panic!("{extra:?}: {e:#}"))
                .expect("the page is a picture");
            assert_eq!((page.width, page.height), (w, h), "{extra:?}");
            // The squares are where they were drawn (JPEG is lossy: dark stays dark).
            let at = |x: u32, y: u32| page.rgb[3 * (y * w + x) as usize];
            assert!(at(5, 5) < 80 && at(25, 5) > 180, "{extra:?}");
        }
    }
}
