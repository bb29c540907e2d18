//! Pages that are pictures: image files, and PDF pages without a text layer.
//!
//! The formats find and decode the pictures ([`decode_image`]: PNG, JPEG, TIFF with all its
//! pages, WebP, BMP), bounded before a pixel is decoded: a page larger than
//! [`Limits::max_image_pixels`] is refused from its header alone, so a decompression bomb (a
//! 50,000 × 50,000 PNG of a few KB) never allocates its pixels. A [`PageReader`] (an OCR
//! engine, supplied by the caller: the formats know none) reads each into positioned lines
//! ([`ScanPage`]), and [`page_lines`] hands those to the same layout as a text-layer PDF page,
//! so scans get the same columns, paragraphs, headings and dropped running headers.

use std::io::Cursor;

use anyhow::{Result, anyhow, bail};

use crate::layout::Line;
use crate::limits::Limits;

/// A decoded picture of a page: 8-bit RGB, row by row.
#[derive(Clone, PartialEq, Eq)]
pub struct PageImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `3 × width × height` bytes.
    pub rgb: Vec<u8>,
}

impl std::fmt::Debug for PageImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageImage")
            .field("width", &self.width)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

/// A line an engine read, with its box on the upright page (pixels, origin top left).
#[derive(Debug, Clone, PartialEq)]
pub struct ScanLine {
    /// The text.
    pub text: String,
    /// Left edge.
    pub left: f32,
    /// Top edge.
    pub top: f32,
    /// Right edge.
    pub right: f32,
    /// Bottom edge.
    pub bottom: f32,
    /// The engine's confidence, 0 to 1.
    pub confidence: f32,
}

/// What an engine read of one page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScanPage {
    /// The clockwise quarter turn that made the picture upright.
    pub rotation: u16,
    /// Width of the upright page in pixels.
    pub width: u32,
    /// Height of the upright page in pixels.
    pub height: u32,
    /// The lines in the engine's reading order.
    pub lines: Vec<ScanLine>,
}

/// Reads the text of a page picture: the caller's OCR engine.
pub trait PageReader: Sync {
    /// The engine's name (for messages and the trace).
    fn name(&self) -> String;

    /// Reads `page`; an error is this file's failure, with the engine's reason.
    fn read(&self, page: &PageImage) -> Result<ScanPage>;
}

/// The image formats read as pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// TIFF, every page.
    Tiff,
    /// WebP.
    WebP,
    /// BMP.
    Bmp,
}

impl ImageKind {
    /// The kind of image `bytes` start with, if any.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
            Some(Self::Tiff)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::WebP)
        } else if bytes.starts_with(b"BM") && bytes.len() >= 26 {
            Some(Self::Bmp)
        } else {
            None
        }
    }

    fn format(self) -> image::ImageFormat {
        match self {
            Self::Png => image::ImageFormat::Png,
            Self::Jpeg => image::ImageFormat::Jpeg,
            Self::Tiff => image::ImageFormat::Tiff,
            Self::WebP => image::ImageFormat::WebP,
            Self::Bmp => image::ImageFormat::Bmp,
        }
    }
}

/// The pages of an image file: one, or each page of a multi-page TIFF (at most
/// [`Limits::max_pages`]), each checked against [`Limits::max_image_pixels`] before it is
/// decoded.
pub fn decode_image(bytes: &[u8], limits: &Limits) -> Result<Vec<PageImage>> {
    let kind = ImageKind::sniff(bytes).ok_or_else(|| anyhow!("not an image zhiku reads"))?;
    if kind == ImageKind::Tiff {
        return decode_tiff(bytes, limits);
    }
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), kind.format());
    reader.limits(image_limits(limits));
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| anyhow!("damaged image: {e}"))?;
    check_pixels(width, height, limits, None)?;
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), kind.format());
    reader.limits(image_limits(limits));
    let decoded = reader.decode().map_err(|e| anyhow!("damaged image: {e}"))?;
    Ok(vec![rgb_page(decoded)])
}

/// The image decoder's own bounds: no side past the pixel budget, no allocation past what
/// the budget's RGBA pixels take (16-bit channels included).
fn image_limits(limits: &Limits) -> image::Limits {
    let mut l = image::Limits::default();
    let side = u32::try_from(limits.max_image_pixels.min(u64::from(u32::MAX))).unwrap_or(u32::MAX);
    l.max_image_width = Some(side);
    l.max_image_height = Some(side);
    l.max_alloc = Some(limits.max_image_pixels.saturating_mul(8).max(1 << 20));
    l
}

fn check_pixels(width: u32, height: u32, limits: &Limits, page: Option<usize>) -> Result<()> {
    let pixels = u64::from(width) * u64::from(height);
    if width == 0 || height == 0 {
        bail!("an image of {width} × {height} pixels holds nothing");
    }
    if pixels > limits.max_image_pixels {
        let which = page
            .map(|p| format!("page {p} is an"))
            .unwrap_or_else(|| "an".into());
        bail!(
            "{which} image of {width} × {height} pixels, more than the {} a page may have (loader.max_image_pixels)",
            limits.max_image_pixels
        );
    }
    Ok(())
}

/// A decoded picture as a page: RGB, transparent pixels on white.
pub(crate) fn rgb_page(image: image::DynamicImage) -> PageImage {
    let rgba = image.into_rgba8();
    let (width, height) = rgba.dimensions();
    let mut rgb = Vec::with_capacity(3 * rgba.len() / 4);
    for p in rgba.pixels() {
        let [r, g, b, a] = p.0;
        let over_white =
            |c: u8| ((u32::from(c) * u32::from(a) + 255 * (255 - u32::from(a))) / 255) as u8;
        rgb.extend_from_slice(&[over_white(r), over_white(g), over_white(b)]);
    }
    PageImage { width, height, rgb }
}

/// `page` as PNG, turned `turn` clockwise quarter turns (as OCR turned it upright) and
/// scaled down, keeping its shape, so that neither side exceeds `max_side` pixels.
pub fn page_png(page: &PageImage, turn: u16, max_side: u32) -> Result<Vec<u8>> {
    let rgb = image::RgbImage::from_raw(page.width, page.height, page.rgb.clone())
        .ok_or_else(|| anyhow!("a page picture of the wrong size"))?;
    let image = match turn % 4 {
        1 => image::imageops::rotate90(&rgb),
        2 => image::imageops::rotate180(&rgb),
        3 => image::imageops::rotate270(&rgb),
        _ => rgb,
    };
    let (w, h) = image.dimensions();
    let longest = w.max(h).max(1);
    let image = if longest > max_side {
        let scale = f64::from(max_side) / f64::from(longest);
        let size = |v: u32| ((f64::from(v) * scale).round() as u32).max(1);
        image::imageops::resize(
            &image,
            size(w),
            size(h),
            image::imageops::FilterType::Triangle,
        )
    } else {
        image
    };
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .map_err(|e| anyhow!("cannot encode the page as PNG: {e}"))?;
    Ok(out)
}

/// Every page of a TIFF (faxes and scanners write many pages to one file).
fn decode_tiff(bytes: &[u8], limits: &Limits) -> Result<Vec<PageImage>> {
    use tiff::decoder::{Decoder, DecodingResult};
    let damaged = |e: tiff::TiffError| anyhow!("damaged TIFF: {e}");
    let mut tiff_limits = tiff::decoder::Limits::default();
    let budget = usize::try_from(limits.max_image_pixels.saturating_mul(8)).unwrap_or(usize::MAX);
    tiff_limits.decoding_buffer_size = budget;
    tiff_limits.intermediate_buffer_size = budget;
    let mut decoder = Decoder::new(Cursor::new(bytes))
        .map_err(damaged)?
        .with_limits(tiff_limits);
    let mut pages = Vec::new();
    loop {
        limits.check_time()?;
        if pages.len() >= limits.max_pages {
            bail!(
                "a TIFF of more than {} pages (loader.max_pages)",
                limits.max_pages
            );
        }
        let (width, height) = decoder.dimensions().map_err(damaged)?;
        check_pixels(width, height, limits, Some(pages.len() + 1))?;
        let color = decoder.colortype().map_err(damaged)?;
        let data = decoder.read_image().map_err(damaged)?;
        let samples: Vec<u8> = match data {
            DecodingResult::U8(v) => v,
            DecodingResult::U16(v) => v.into_iter().map(|s| (s >> 8) as u8).collect(),
            _ => bail!("a TIFF page of {color:?} samples: unsupported"),
        };
        let image = tiff_page(width, height, color, &samples)
            .ok_or_else(|| anyhow!("a TIFF page of {color:?} pixels: unsupported"))?;
        pages.push(image);
        if !decoder.more_images() {
            break;
        }
        decoder.next_image().map_err(damaged)?;
    }
    Ok(pages)
}

/// One TIFF page's samples (8-bit, or bilevel packed eight to a byte) as RGB.
fn tiff_page(width: u32, height: u32, color: tiff::ColorType, samples: &[u8]) -> Option<PageImage> {
    use tiff::ColorType::*;
    let (w, h) = (width as usize, height as usize);
    let mut rgb = Vec::with_capacity(3 * w * h);
    match color {
        Gray(1) => {
            // Rows are padded to whole bytes; 0 is black unless the page says otherwise (the
            // decoder applies the photometric interpretation).
            let row = w.div_ceil(8);
            if samples.len() < row * h {
                return None;
            }
            for y in 0..h {
                for x in 0..w {
                    let bit = samples[y * row + x / 8] >> (7 - x % 8) & 1;
                    let v = if bit == 1 { 255 } else { 0 };
                    rgb.extend_from_slice(&[v, v, v]);
                }
            }
        }
        Gray(8) | Gray(16) => {
            for &v in samples.get(..w * h)? {
                rgb.extend_from_slice(&[v, v, v]);
            }
        }
        GrayA(8) | GrayA(16) => {
            for p in samples.get(..2 * w * h)?.chunks_exact(2) {
                rgb.extend_from_slice(&[p[0], p[0], p[0]]);
            }
        }
        RGB(8) | RGB(16) => rgb.extend_from_slice(samples.get(..3 * w * h)?),
        RGBA(8) | RGBA(16) => {
            for p in samples.get(..4 * w * h)?.chunks_exact(4) {
                rgb.extend_from_slice(&p[..3]);
            }
        }
        CMYK(8) => {
            for p in samples.get(..4 * w * h)?.chunks_exact(4) {
                let k = 255 - u32::from(p[3]);
                let c = |v: u8| ((255 - u32::from(v)) * k / 255) as u8;
                rgb.extend_from_slice(&[c(p[0]), c(p[1]), c(p[2])]);
            }
        }
        _ => return None,
    }
    Some(PageImage { width, height, rgb })
}

/// Points per pixel of a picture whose resolution is unknown: 200 dpi, a common scanning
/// resolution (only relative sizes matter to the layout).
const POINTS_PER_PIXEL: f32 = 72.0 / 200.0;

/// Extracts an image file: each page read by `ocr`, laid out as a PDF page is.
pub fn extract_image(
    bytes: &[u8],
    limits: &Limits,
    ocr: Option<&dyn PageReader>,
) -> Result<crate::Extracted> {
    let Some(reader) = ocr else {
        bail!("a picture, and OCR is off (ocr = \"off\"): nothing to index");
    };
    let images = decode_image(bytes, limits)?;
    let count = images.len();
    let mut pages = Vec::with_capacity(count);
    let mut widths = Vec::with_capacity(count);
    for (i, image) in images.into_iter().enumerate() {
        limits.check_time()?;
        let read = reader.read(&image).map_err(|e| {
            if count > 1 {
                anyhow!("page {}: OCR failed: {e:#}", i + 1)
            } else {
                anyhow!("OCR failed: {e:#}")
            }
        })?;
        widths.push((read.width as f32 * POINTS_PER_PIXEL, read.rotation / 90));
        pages.push(page_lines(&read, POINTS_PER_PIXEL));
    }
    let laid = crate::layout::lay_out(pages, &widths, &[], limits)?;
    Ok(crate::Extracted {
        text: laid.text,
        title: None,
        locale: None,
        pages: (count > 1).then_some(laid.pages),
        synthetic_headings: false,
        ocr: Some(reader.name()),
        boxes: laid.boxes,
    })
}

/// The text `ocr` reads in one picture inside another document (see `pictures`): laid out as a
/// scanned page, its headings written as paragraphs (a picture's large type is not a heading
/// of the document around it).
pub(crate) fn picture_text(
    ocr: &dyn PageReader,
    image: &PageImage,
    limits: &Limits,
) -> Result<String> {
    let read = ocr.read(image)?;
    if read.lines.is_empty() {
        return Ok(String::new());
    }
    let frame = (read.width as f32 * POINTS_PER_PIXEL, read.rotation / 90);
    let laid = crate::layout::lay_out(
        vec![page_lines(&read, POINTS_PER_PIXEL)],
        &[frame],
        &[],
        limits,
    )?;
    let lines: Vec<&str> = laid
        .text
        .lines()
        .map(|line| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            match line[hashes..].strip_prefix(' ') {
                Some(rest) if (1..=6).contains(&hashes) => rest,
                _ => line,
            }
        })
        .collect();
    Ok(lines.join("\n").trim().to_string())
}

/// The lines of a page read by an engine, as the PDF layout takes them: `scale` converts
/// pixels to the page's units (PDF points for a PDF page), and y runs up from the bottom edge
/// as in PDF. A line's size is its box height, so headings stand out by size as in a text
/// layer.
pub fn page_lines(page: &ScanPage, scale: f32) -> (f32, Vec<Line>) {
    let height = page.height as f32 * scale;
    let lines = page
        .lines
        .iter()
        .filter(|l| !l.text.trim().is_empty())
        .map(|l| Line {
            text: crate::layout::normalise(l.text.trim()),
            x0: l.left * scale,
            x1: l.right * scale,
            // The baseline sits about a fifth of the box above its bottom edge.
            y: height - (l.bottom - 0.2 * (l.bottom - l.top)) * scale,
            size: 0.8 * (l.bottom - l.top) * scale,
            alone: false,
            confidence: Some(l.confidence),
        })
        .collect();
    (height, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_image_pixels: u64) -> Limits {
        Limits {
            max_image_pixels,
            ..Limits::for_tests()
        }
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let img = image::RgbImage::from_pixel(width, height, image::Rgb([200, 10, 10]));
        img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_png_decodes_to_rgb() {
        let pages = decode_image(&png(4, 3), &limits(1_000)).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!((pages[0].width, pages[0].height), (4, 3));
        assert_eq!(&pages[0].rgb[..3], &[200, 10, 10]);
    }

    #[test]
    fn a_page_past_the_pixel_bound_is_refused_from_its_header() {
        let err = decode_image(&png(40, 30), &limits(1_000)).unwrap_err();
        assert!(err.to_string().contains("loader.max_image_pixels"), "{err}");
    }

    /// A PNG header that claims 50,000 × 50,000 pixels in a file of a few bytes: refused
    /// before a pixel is allocated.
    #[test]
    fn a_decompression_bomb_is_refused_before_decoding() {
        let mut bomb = png(1, 1);
        // IHDR's width and height sit at bytes 16..24; the CRC after them is left wrong,
        // which a decoder that reads the header first never gets to.
        bomb[16..20].copy_from_slice(&50_000u32.to_be_bytes());
        bomb[20..24].copy_from_slice(&50_000u32.to_be_bytes());
        let err = decode_image(&bomb, &limits(40_000_000)).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("max_image_pixels") || message.contains("damaged"),
            "{message}"
        );
    }

    #[test]
    fn every_page_of_a_tiff_is_read() {
        let mut out = Cursor::new(Vec::new());
        {
            let mut encoder = tiff::encoder::TiffEncoder::new(&mut out).unwrap();
            for shade in [0u8, 128, 255] {
                let page = vec![shade; 6 * 4];
                encoder
                    .write_image::<tiff::encoder::colortype::Gray8>(6, 4, &page)
                    .unwrap();
            }
        }
        let pages = decode_image(out.get_ref(), &limits(1_000)).unwrap();
        assert_eq!(pages.len(), 3);
        assert_eq!(pages[1].rgb[..3], [128, 128, 128]);
        let mut few = limits(1_000);
        few.max_pages = 2;
        let err = decode_image(out.get_ref(), &few).unwrap_err();
        assert!(err.to_string().contains("loader.max_pages"), "{err}");
    }

    #[test]
    fn lines_are_laid_out_in_page_units_with_y_up() {
        let page = ScanPage {
            rotation: 0,
            width: 1000,
            height: 2000,
            lines: vec![ScanLine {
                text: " 合同 ".into(),
                left: 100.0,
                top: 100.0,
                right: 300.0,
                bottom: 150.0,
                confidence: 0.9,
            }],
        };
        let (height, lines) = page_lines(&page, 0.5);
        assert_eq!(height, 1000.0);
        assert_eq!(lines[0].text, "合同");
        assert_eq!((lines[0].x0, lines[0].x1), (50.0, 150.0));
        assert!(lines[0].y > 900.0 && lines[0].y < 950.0, "{}", lines[0].y);
    }
}
