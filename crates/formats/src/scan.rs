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

/// Reads `image` with `ocr`, red seals cleared first ([`without_seals`]): every picture a
/// format hands to OCR goes through here.
pub(crate) fn read_page(ocr: &dyn PageReader, image: &PageImage) -> Result<ScanPage> {
    match without_seals(image) {
        Some(cleared) => ocr.read(&cleared),
        None => ocr.read(image),
    }
}

/// Side of the cells a page is looked at in for seals, in pixels.
const SEAL_CELL: u32 = 8;

/// `image` with its red seals (the round or square company chops stamped over a Chinese
/// document's text) turned to paper, or `None` when it has none. A seal is a red region whose
/// extent is about as high as wide (4:5 to 5:4) and at least a twentieth of the page's width,
/// and which is mostly empty inside (a ring, a star and a few characters: at most half of its
/// cells red); only its red pixels are cleared, so black text stamped over stays for OCR to read
/// whole. Red text in lines (the red header of an official notice, a red remark) is wider than
/// high and is kept.
pub fn without_seals(image: &PageImage) -> Option<PageImage> {
    let (w, h) = (image.width, image.height);
    if w < 4 * SEAL_CELL || h < 4 * SEAL_CELL || image.rgb.len() < 3 * (w as usize) * (h as usize) {
        return None;
    }
    let (cw, ch) = (
        w.div_ceil(SEAL_CELL) as usize,
        h.div_ceil(SEAL_CELL) as usize,
    );
    // A cell is red when a tenth of its pixels are seal ink.
    let mut red_in_cell = vec![0u32; cw * ch];
    for y in 0..h as usize {
        let row = &image.rgb[3 * y * w as usize..3 * (y + 1) * w as usize];
        for (x, px) in row.chunks_exact(3).enumerate() {
            if is_seal_ink(px) {
                red_in_cell[(y / SEAL_CELL as usize) * cw + x / SEAL_CELL as usize] += 1;
            }
        }
    }
    let least = SEAL_CELL * SEAL_CELL / 10;
    let red: Vec<bool> = red_in_cell.iter().map(|&n| n >= least.max(1)).collect();
    // Regions of red cells (8-connected), each its extent and number of cells.
    let mut seen = vec![false; cw * ch];
    let mut seals = Vec::new();
    let least_side = (w / 20).div_ceil(SEAL_CELL) as usize;
    for start in 0..red.len() {
        if !red[start] || seen[start] {
            continue;
        }
        let (mut x0, mut y0, mut x1, mut y1, mut cells) = (usize::MAX, usize::MAX, 0, 0, 0usize);
        let mut stack = vec![start];
        seen[start] = true;
        while let Some(i) = stack.pop() {
            let (x, y) = (i % cw, i / cw);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            cells += 1;
            for dy in [-1i64, 0, 1] {
                for dx in [-1i64, 0, 1] {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= cw as i64 || ny >= ch as i64 {
                        continue;
                    }
                    let n = ny as usize * cw + nx as usize;
                    if red[n] && !seen[n] {
                        seen[n] = true;
                        stack.push(n);
                    }
                }
            }
        }
        let (bw, bh) = (x1 - x0 + 1, y1 - y0 + 1);
        let squarish = 4 * bw <= 5 * bh && 4 * bh <= 5 * bw;
        if squarish
            && bw.min(bh) >= least_side
            && 2 * cells <= bw * bh
            && ring_around(&red, cw, (x0, y0, x1, y1))
        {
            seals.push((x0, y0, x1, y1));
        }
    }
    if seals.is_empty() {
        return None;
    }
    let mut out = image.clone();
    for (x0, y0, x1, y1) in seals {
        let (px0, py0) = (x0 as u32 * SEAL_CELL, y0 as u32 * SEAL_CELL);
        let (px1, py1) = (
            ((x1 + 1) as u32 * SEAL_CELL).min(w),
            ((y1 + 1) as u32 * SEAL_CELL).min(h),
        );
        for y in py0..py1 {
            for x in px0..px1 {
                let at = 3 * (y as usize * w as usize + x as usize);
                if is_seal_ink(&out.rgb[at..at + 3]) {
                    out.rgb[at..at + 3].copy_from_slice(&[255, 255, 255]);
                }
            }
        }
    }
    Some(out)
}

/// True when red cells run round the ellipse inscribed in the extent `(x0, y0, x1, y1)` (a
/// round seal's ring) on at least 60 % of 72 rays from its centre: a large red character
/// fills a square too, but its strokes meet that ellipse only here and there.
fn ring_around(red: &[bool], cw: usize, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> bool {
    let (cx, cy) = ((x0 + x1) as f32 / 2.0, (y0 + y1) as f32 / 2.0);
    let (rx, ry) = ((x1 - x0) as f32 / 2.0, (y1 - y0) as f32 / 2.0);
    const RAYS: usize = 72;
    let hits = (0..RAYS)
        .filter(|&k| {
            let angle = k as f32 * std::f32::consts::TAU / RAYS as f32;
            let (dx, dy) = (angle.cos(), angle.sin());
            (0..=8).any(|step| {
                let f = 0.78 + 0.03 * step as f32;
                let (x, y) = ((cx + f * rx * dx).round(), (cy + f * ry * dy).round());
                x >= 0.0
                    && y >= 0.0
                    && red
                        .get(y as usize * cw + x as usize)
                        .copied()
                        .unwrap_or(false)
                    && (x as usize) < cw
            })
        })
        .count();
    hits * 10 >= RAYS * 6
}

/// Seal ink: clearly red (red well above green and blue), whether dark or faded.
fn is_seal_ink(px: &[u8]) -> bool {
    let (r, g, b) = (i32::from(px[0]), i32::from(px[1]), i32::from(px[2]));
    r >= 120 && r - g >= 50 && r - b >= 50
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
        let read = read_page(reader, &image).map_err(|e| {
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
    let read = read_page(ocr, image)?;
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

    /// A page of black lines of "text", a red round seal stamped over some of them, a large
    /// red character (田, as in a red-headed notice) and a red header line.
    fn sealed_page() -> PageImage {
        let (w, h) = (1200u32, 1600u32);
        let mut rgb = vec![255u8; 3 * (w * h) as usize];
        let mut paint = |x: u32, y: u32, c: [u8; 3]| {
            if x < w && y < h {
                let at = 3 * (y * w + x) as usize;
                rgb[at..at + 3].copy_from_slice(&c);
            }
        };
        // The header: a red band, wide and low.
        for y in 60..110 {
            for x in 150..1050 {
                paint(x, y, [200, 30, 30]);
            }
        }
        // A large red character: a square with a cross in it, 160 px.
        for y in 150..310 {
            for x in 500..660 {
                let stroke =
                    |v: u32, a: u32| v < a + 18 || v >= a + 142 || (v >= a + 71 && v < a + 89);
                if stroke(x, 500) || stroke(y, 150) {
                    paint(x, y, [210, 40, 40]);
                }
            }
        }
        // Lines of black text, 30 px high every 60 px.
        for line in 0..15 {
            for y in 400 + line * 60..430 + line * 60 {
                for x in 100..1100 {
                    if (x / 14) % 3 != 2 {
                        paint(x, y, [15, 15, 15]);
                    }
                }
            }
        }
        // The seal: a ring of radius 160 and width 12 centred at (700, 800), a star at the centre.
        for y in 600..1000u32 {
            for x in 500..900u32 {
                let d = ((x as f32 - 700.0).powi(2) + (y as f32 - 800.0).powi(2)).sqrt();
                if (148.0..160.0).contains(&d) || d < 30.0 {
                    paint(x, y, [220, 50, 60]);
                }
            }
        }
        PageImage {
            width: w,
            height: h,
            rgb,
        }
    }

    #[test]
    fn a_red_seal_is_cleared_and_the_text_under_it_and_red_text_kept() {
        let page = sealed_page();
        let at = |p: &PageImage, x: u32, y: u32| {
            let i = 3 * (y * p.width + x) as usize;
            [p.rgb[i], p.rgb[i + 1], p.rgb[i + 2]]
        };
        let cleared = without_seals(&page).expect("the seal is found");
        // The ring and the star are paper now.
        assert_eq!(at(&cleared, 700 + 154, 800), [255, 255, 255]);
        assert_eq!(at(&cleared, 700, 800), [255, 255, 255]);
        // Black text inside the seal stays black (the ring painted over what it crossed).
        assert_eq!(at(&page, 650, 705), [15, 15, 15]);
        assert_eq!(at(&cleared, 650, 705), [15, 15, 15]);
        assert_eq!(at(&cleared, 100, 415), [15, 15, 15]);
        // The red header line and the large red character are text: kept.
        assert_eq!(at(&cleared, 600, 80), [200, 30, 30]);
        assert_eq!(at(&cleared, 505, 200), [210, 40, 40]);
        assert_eq!(at(&cleared, 580, 160), [210, 40, 40]);
        // A page without a seal is left as it is (no copy).
        let mut plain = page.clone();
        for y in 600..1000u32 {
            for x in 500..900u32 {
                let i = 3 * (y * plain.width + x) as usize;
                if plain.rgb[i] > 150 && plain.rgb[i + 1] < 100 {
                    plain.rgb[i..i + 3].copy_from_slice(&[255, 255, 255]);
                }
            }
        }
        assert!(without_seals(&plain).is_none());
    }

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
