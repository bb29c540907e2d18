//! Reading the document formats teams keep: one extractor per format behind [`extract`].
//!
//! A file's format is chosen by its content first ([`detect`]: magic bytes, the parts of a zip
//! package) and by its extension only where the content cannot tell (Markdown, text, CSV,
//! HTML). Every extractor renders the file into the one text shape the chunker reads
//! ([`Extracted::text`], written through [`TextBuilder`]):
//!
//! - a section starts with an ATX heading line (`# `, `## `, …), so chunks carry the heading
//!   path; a line of the source that would read as Markdown structure is escaped;
//! - paragraphs are separated by one blank line;
//! - in a paginated format (PDF), pages are separated by a line holding only a form feed
//!   (`\f`); page `n` is the text after the `n-1`-th form feed, and [`Extracted::pages`] is the
//!   page count, so every chunk can say which pages it covers.
//!
//! Extraction is bounded per file ([`Limits`]): bytes unpacked from a zip package, pages,
//! extracted text, and a deadline checked between pages, parts and elements. A file that
//! breaks a bound, is damaged, encrypted, of a legacy binary format, or has no text is an
//! error whose message is the reason shown beside its path; the rest of the folder loads.

use anyhow::{Result, bail};

mod decode;
mod extracted;
mod format;
pub mod layout;
mod limits;
mod ooxml;
mod package;
mod panic;
mod pictures;
mod text_builder;

pub mod scan;

pub mod docx;
pub mod epub;
pub mod html;
pub mod pdf;
pub mod pptx;
pub mod sheet;

pub use decode::{DETECT_BYTES, decode_text, decode_text_file};

/// The version of what extraction gives for the same bytes and bounds: bump it whenever an
/// extractor's output changes (text, pages, boxes), so what was kept of an earlier version (the
/// OCR cache) is read again. 3: line boxes carry OCR's confidence; 2: tables rebuilt from line
/// boxes, boxes kept.
pub const EXTRACTION_VERSION: u32 = 3;
pub use extracted::{Extracted, LineBox};
pub use format::{Announced, Format, detect};
pub use limits::Limits;
pub use package::{Package, PartReader};
pub use panic::panic_message;
pub use text_builder::{TextBuilder, one_line};

/// Extracts a file of `format` from its `bytes`, with no OCR: an image, or a PDF without a
/// text layer, is an error.
pub fn extract(format: Format, bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    extract_with(format, bytes, limits, None)
}

/// The picture of page `page` (from 1) of a file of `format`: a picture file's page (each of a
/// TIFF's), a PDF page without a text layer (its scan), or a PDF page with one as PDFium draws
/// it ([`pdf::use_pdfium`]). `None` for a PDF page without a picture, or with a text layer
/// when PDFium is not configured; an error for another format or a page past the last.
pub fn page_picture(
    format: Format,
    bytes: &[u8],
    page: u32,
    limits: &Limits,
) -> Result<Option<scan::PageImage>> {
    match format {
        Format::Pdf => pdf::page_picture(bytes, page, limits),
        Format::Image => {
            let mut pages = scan::decode_image(bytes, limits)?;
            let count = pages.len();
            let index = usize::try_from(page).unwrap_or(usize::MAX).wrapping_sub(1);
            if index >= count {
                bail!("the picture has {count} pages, no page {page}");
            }
            Ok(Some(pages.swap_remove(index)))
        }
        other => bail!("a {} file has no page pictures", other.name()),
    }
}

/// Extracts a file of `format` from its `bytes`; pictures of pages (an image file, a PDF
/// page without a text layer) are read by `ocr` ([`scan`]).
pub fn extract_with(
    format: Format,
    bytes: &[u8],
    limits: &Limits,
    ocr: Option<&dyn scan::PageReader>,
) -> Result<Extracted> {
    let extracted = match format {
        Format::Pdf => pdf::extract(bytes, limits, ocr)?,
        Format::Image => scan::extract_image(bytes, limits, ocr)?,
        Format::Docx => docx::extract(bytes, limits, ocr)?,
        Format::Html => html::extract(&decode_text_file(bytes)?, limits)?,
        Format::Epub => epub::extract(bytes, limits)?,
        Format::Pptx => pptx::extract(bytes, limits, ocr)?,
        Format::Csv => sheet::extract_csv(bytes, limits)?,
        Format::Xlsx => sheet::extract_xlsx(bytes, limits)?,
        Format::Markdown | Format::Text => bail!("{} is read as text", format.name()),
    };
    if extracted.text.trim().is_empty() {
        bail!("no text found in this {} file", format.name());
    }
    Ok(extracted)
}
