//! PDF pages drawn as pictures by PDFium: a text-layer page to show it with a quote
//! highlighted, and a scanned page whose picture no decoder here reads (JBIG2, JPX) to read it
//! by OCR.
//!
//! PDFium is a shared library (`libpdfium.so`, fetched by `scripts/fetch-pdfium.sh` from the
//! pypdfium2 wheel) bound at run time, once per process: [`use_pdfium`] names it (an extraction
//! worker calls it at start), and the first drawing binds it. Without it nothing is drawn and
//! callers say so. The file reaches PDFium only after the parser's checks of the same bytes
//! (nesting, page count, the page's content): PDFium reads hostile bytes in the extraction
//! worker, where a crash costs one request.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{Result, anyhow, bail};
use pdfium_render::prelude::{PdfPageIndex, PdfRenderConfig, Pdfium};

use crate::scan::PageImage;

/// Pixels of the longer side a page is drawn at: about 190 dpi for A4, enough for OCR and for
/// the page picture served (1,600 pixels).
pub const DRAW_SIDE: u32 = 2048;

static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
static BOUND: OnceLock<std::result::Result<Pdfium, String>> = OnceLock::new();

/// Names the PDFium library this process draws pages with; the first call wins (one PDFium per
/// process).
pub fn use_pdfium(library: PathBuf) {
    let _ = LIBRARY.set(library);
}

/// PDFium, bound on first use; `None` when no library was named.
fn pdfium() -> Option<Result<&'static Pdfium>> {
    let library = LIBRARY.get()?;
    let bound = BOUND.get_or_init(|| {
        if !library.is_file() {
            return Err(format!(
                "PDFium is not at {} (scripts/fetch-pdfium.sh fetches it; setting `pdfium`)",
                library.display()
            ));
        }
        Pdfium::bind_to_library(library)
            .map(Pdfium::new)
            .map_err(|e| format!("PDFium at {} cannot be loaded: {e}", library.display()))
    });
    Some(bound.as_ref().map_err(|e| anyhow!("{e}")))
}

/// Page `index` (from 0) of `bytes` drawn on white at [`DRAW_SIDE`] pixels on its longer side
/// (as displayed: the page's rotation applied), with its annotations and form fields. `None`
/// when no PDFium library was named.
pub fn draw_page(bytes: &[u8], index: usize) -> Result<Option<PageImage>> {
    let Some(pdfium) = pdfium() else {
        return Ok(None);
    };
    let pdfium = pdfium?;
    let doc = pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map_err(|e| anyhow!("PDFium cannot open the file: {e}"))?;
    let at = PdfPageIndex::try_from(index).map_err(|_| anyhow!("no page {}", index + 1))?;
    let page = doc
        .pages()
        .get(at)
        .map_err(|e| anyhow!("PDFium cannot read page {}: {e}", index + 1))?;
    let (width, height) = (page.width().value, page.height().value);
    let longer = width.max(height);
    if !(longer.is_finite() && longer > 0.0) {
        bail!("page {} has no size", index + 1);
    }
    let config = PdfRenderConfig::new()
        .scale_page_by_factor(DRAW_SIDE as f32 / longer)
        .render_annotations(true)
        .render_form_data(true);
    let bitmap = page
        .render_with_config(&config)
        .map_err(|e| anyhow!("PDFium cannot draw page {}: {e}", index + 1))?;
    let (w, h) = (bitmap.width(), bitmap.height());
    let (w, h) = (
        u32::try_from(w).map_err(|_| anyhow!("bad picture width"))?,
        u32::try_from(h).map_err(|_| anyhow!("bad picture height"))?,
    );
    let rgba = bitmap.as_rgba_bytes();
    if rgba.len() != w as usize * h as usize * 4 {
        bail!("PDFium drew page {} with an unexpected layout", index + 1);
    }
    let rgb: Vec<u8> = rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    Ok(Some(PageImage {
        width: w,
        height: h,
        rgb,
    }))
}
