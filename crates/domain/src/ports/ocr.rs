//! The OCR port: the image of a page in, its lines of text with their positions out.
//!
//! Scans and photos reach the chunker through it: the document formats find the images (a
//! PDF page without a text layer, an image file, a picture in a slide), an [`Ocr`] engine
//! reads them, and the formats' own layout turns the lines into paragraphs, columns and tables
//! as it does for a text-layer PDF. The boxes travel with the text, so a citation can point at
//! the spot on the page.

use super::errors::OcrError;

/// An image to read: 8-bit RGB pixels, row by row, top row first, no padding.
#[derive(Clone, Copy)]
pub struct OcrImage<'a> {
    width: u32,
    height: u32,
    rgb: &'a [u8],
}

impl std::fmt::Debug for OcrImage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OcrImage")
            .field("width", &self.width)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

impl<'a> OcrImage<'a> {
    /// An image of `width` × `height` pixels whose RGB bytes are `rgb`; refused when either side
    /// is zero or the bytes are not exactly `3 × width × height`.
    pub fn new(width: u32, height: u32, rgb: &'a [u8]) -> Result<Self, OcrError> {
        let expected = 3u64 * u64::from(width) * u64::from(height);
        if width == 0 || height == 0 {
            return Err(OcrError::InvalidInput(format!(
                "an image of {width} × {height} pixels has nothing to read"
            )));
        }
        if rgb.len() as u64 != expected {
            return Err(OcrError::InvalidInput(format!(
                "an RGB image of {width} × {height} pixels has {expected} bytes, not {}",
                rgb.len()
            )));
        }
        Ok(Self { width, height, rgb })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixels: `3 × width × height` bytes, R, G, B.
    pub fn rgb(&self) -> &'a [u8] {
        self.rgb
    }

    /// Pixels in all.
    pub fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

/// A box on a page, in pixels of the upright page ([`OcrPage`]): `left < right`,
/// `top < bottom`, inside `0..=width` × `0..=height`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PixelBox {
    /// Distance of the left edge from the page's left edge.
    pub left: f32,
    /// Distance of the top edge from the page's top edge.
    pub top: f32,
    /// Distance of the right edge from the page's left edge.
    pub right: f32,
    /// Distance of the bottom edge from the page's top edge.
    pub bottom: f32,
}

impl PixelBox {
    /// Width of the box.
    pub fn width(&self) -> f32 {
        self.right - self.left
    }

    /// Height of the box.
    pub fn height(&self) -> f32 {
        self.bottom - self.top
    }
}

/// One line of text an engine found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OcrLine {
    /// The text, on one line: no line breaks, no control characters, not blank.
    pub text: String,
    /// Where the line is on the upright page.
    pub bbox: PixelBox,
    /// How sure the engine is of the text, from 0 to 1 (its mean per-character confidence).
    pub confidence: f32,
}

/// What an engine read of one image.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct OcrPage {
    /// Clockwise quarter turn, in degrees (0, 90, 180 or 270), that makes the image as given
    /// upright: the boxes are in pixels of the image turned by it.
    pub rotation: u16,
    /// Width of the upright page in pixels (the image's height after a 90 or 270 turn).
    pub width: u32,
    /// Height of the upright page in pixels.
    pub height: u32,
    /// The lines, in the engine's reading order on the upright page (top to bottom, and left
    /// to right within a column as far as the engine tells columns apart; the caller's layout
    /// may order columns again).
    pub lines: Vec<OcrLine>,
}

/// Reads the text of an image: a scanned page, a photo of one, a picture holding text.
///
/// # Contract
///
/// - [`name`](Self::name) identifies the engine, its models and settings (e.g.
///   `ppocr-v4:ch`, `tesseract-5.3:chi_sim+eng`): two engines of one name read an image the
///   same way, so a cache of results is keyed by it.
/// - [`read`](Self::read) MUST be deterministic: the same image gives the same page.
/// - It MUST find the page's orientation among the four quarter turns and report it in
///   [`OcrPage::rotation`], with the upright page's size; small skews (a few degrees) are the
///   engine's to handle, and boxes stay axis-aligned on the upright page.
/// - Every line MUST hold text (not blank, no line break or other control character), a box
///   with `left < right` and `top < bottom` inside the upright page, and a finite confidence in
///   `0..=1`. Lines come in reading order.
/// - An image with no text (blank, a photo of nothing written) gives an empty page, not an
///   error.
/// - An image larger than the engine reads well is scaled by the engine, never refused for its
///   size alone; the caller bounds pixels before it decodes an image (a decompression bomb
///   never reaches an engine).
/// - When the engine cannot run (model files or program missing, runtime library not found),
///   `read` MUST fail fast with [`OcrError::Unavailable`] saying what is missing and how to get
///   it, never hang and never return an empty page for it.
pub trait Ocr: Send + Sync {
    /// The engine's identity: adapter, models and settings.
    fn name(&self) -> &str;

    /// Reads the text lines of `image`.
    fn read(&self, image: &OcrImage<'_>) -> Result<OcrPage, OcrError>;
}

/// `image` turned clockwise by `rotation` degrees (0, 90, 180 or 270; any other value is
/// taken modulo 360 and rounded down to a quarter turn): the width, height and RGB bytes of
/// the turned image. How every engine makes a page upright the same way, so that
/// [`OcrPage::rotation`] means one thing.
pub fn turn_clockwise(image: &OcrImage<'_>, rotation: u16) -> (u32, u32, Vec<u8>) {
    let (w, h) = (image.width as usize, image.height as usize);
    let src = image.rgb;
    let quarter = (rotation % 360) / 90;
    if quarter == 0 {
        return (image.width, image.height, src.to_vec());
    }
    let mut out = vec![0u8; src.len()];
    let (ow, oh) = if quarter == 2 { (w, h) } else { (h, w) };
    for y in 0..h {
        for x in 0..w {
            let (nx, ny) = match quarter {
                1 => (h - 1 - y, x),
                2 => (w - 1 - x, h - 1 - y),
                _ => (y, w - 1 - x),
            };
            let from = 3 * (y * w + x);
            let to = 3 * (ny * ow + nx);
            out[to..to + 3].copy_from_slice(&src[from..from + 3]);
        }
    }
    (ow as u32, oh as u32, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 × 2 image whose pixel (x, y) is (x, y, 0).
    fn sample() -> Vec<u8> {
        let mut rgb = Vec::new();
        for y in 0..2u8 {
            for x in 0..3u8 {
                rgb.extend_from_slice(&[x, y, 0]);
            }
        }
        rgb
    }

    fn pixel(w: u32, rgb: &[u8], x: u32, y: u32) -> (u8, u8) {
        let i = 3 * (y * w + x) as usize;
        (rgb[i], rgb[i + 1])
    }

    #[test]
    fn quarter_turns_move_the_top_left_corner_clockwise() {
        let rgb = sample();
        let image = OcrImage::new(3, 2, &rgb).unwrap();
        let (w, h, t) = turn_clockwise(&image, 90);
        assert_eq!((w, h), (2, 3));
        // The top-left pixel goes to the top-right corner, the bottom-left to the top-left.
        assert_eq!(pixel(w, &t, 1, 0), (0, 0));
        assert_eq!(pixel(w, &t, 0, 0), (0, 1));
        let (w, h, t) = turn_clockwise(&image, 180);
        assert_eq!((w, h), (3, 2));
        assert_eq!(pixel(w, &t, 2, 1), (0, 0));
        let (w, h, t) = turn_clockwise(&image, 270);
        assert_eq!((w, h), (2, 3));
        assert_eq!(pixel(w, &t, 0, 2), (0, 0));
        // Four quarter turns are none.
        let (w1, h1, once) = turn_clockwise(&image, 90);
        let back = OcrImage::new(w1, h1, &once).unwrap();
        let (w2, h2, twice) = turn_clockwise(&back, 270);
        assert_eq!((w2, h2, twice), (3, 2, rgb));
    }

    #[test]
    fn an_image_of_the_wrong_size_is_refused() {
        assert!(OcrImage::new(2, 2, &[0; 11]).is_err());
        assert!(OcrImage::new(0, 2, &[]).is_err());
        assert!(OcrImage::new(1, 1, &[1, 2, 3]).is_ok());
    }
}
