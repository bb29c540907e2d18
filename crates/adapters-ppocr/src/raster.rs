//! The pixel operations the models' inputs need, written to match what PaddleOCR's models saw
//! in training (OpenCV's conventions): bilinear resize with half-pixel centres and no
//! anti-aliasing, BGR channel order, `(x / 255 - 0.5) / 0.5` normalisation, and a bicubic
//! perspective cut of each line with edge pixels replicated.

use zhiku_domain::ports::{OcrImage, turn_clockwise};

use crate::geometry::{Pt, dist, homography, project};

/// An 8-bit RGB image, row by row, no padding.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Raster {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) rgb: Vec<u8>,
}

impl std::fmt::Debug for Raster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Raster({} × {})", self.width, self.height)
    }
}

impl Raster {
    /// A black image.
    pub(crate) fn black(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            rgb: vec![0; 3 * width as usize * height as usize],
        }
    }

    pub(crate) fn of(image: &OcrImage<'_>) -> Self {
        Self {
            width: image.width(),
            height: image.height(),
            rgb: image.rgb().to_vec(),
        }
    }

    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Turned clockwise by `rotation` degrees (a quarter turn), as the domain turns pages.
    pub(crate) fn turned(&self, rotation: u16) -> Raster {
        match OcrImage::new(self.width, self.height, &self.rgb) {
            Ok(image) => {
                let (width, height, rgb) = turn_clockwise(&image, rotation);
                Raster { width, height, rgb }
            }
            // An empty raster has nothing to turn.
            Err(_) => self.clone(),
        }
    }

    /// Bilinear resize with OpenCV's `INTER_LINEAR` sampling: source coordinate
    /// `(dst + 0.5) × scale − 0.5`, clamped at the edges, no low-pass filter when shrinking
    /// (a widened kernel blurs text crops unlike what the recogniser was trained on).
    pub(crate) fn resized(&self, dst_w: u32, dst_h: u32) -> Raster {
        if (self.width, self.height) == (dst_w, dst_h) {
            return self.clone();
        }
        let sx = self.width as f32 / dst_w as f32;
        let sy = self.height as f32 / dst_h as f32;
        let xtaps: Vec<(u32, u32, f32)> = (0..dst_w).map(|x| taps(x, sx, self.width)).collect();
        let mut out = Raster::black(dst_w, dst_h);
        let mut o = 0;
        for y in 0..dst_h {
            let (y0, y1, fy) = taps(y, sy, self.height);
            for &(x0, x1, fx) in &xtaps {
                let (p00, p01, p10, p11) = (
                    self.at(x0, y0),
                    self.at(x1, y0),
                    self.at(x0, y1),
                    self.at(x1, y1),
                );
                for c in 0..3 {
                    let top = f32::from(p00[c]) * (1.0 - fx) + f32::from(p01[c]) * fx;
                    let bottom = f32::from(p10[c]) * (1.0 - fx) + f32::from(p11[c]) * fx;
                    out.rgb[o + c] =
                        (top * (1.0 - fy) + bottom * fy).round().clamp(0.0, 255.0) as u8;
                }
                o += 3;
            }
        }
        out
    }

    /// The image with `top` black rows above it and as many below.
    pub(crate) fn padded_vertically(&self, top: u32) -> Raster {
        let row = 3 * self.width as usize;
        let pad = vec![0u8; row * top as usize];
        let mut rgb = Vec::with_capacity(self.rgb.len() + 2 * pad.len());
        rgb.extend_from_slice(&pad);
        rgb.extend_from_slice(&self.rgb);
        rgb.extend_from_slice(&pad);
        Raster {
            width: self.width,
            height: self.height + 2 * top,
            rgb,
        }
    }

    /// Writes the image into a `[3, height, w_padded]` CHW slice in BGR order, normalised to
    /// [-1, 1]; columns past the image's width are left as they are (0, the models' padding).
    pub(crate) fn write_chw_bgr(&self, out: &mut [f32], w_padded: usize) {
        let (w, h) = (self.width as usize, self.height as usize);
        debug_assert!(w <= w_padded && out.len() == 3 * h * w_padded);
        let plane = h * w_padded;
        let norm = |v: u8| (f32::from(v) / 255.0 - 0.5) / 0.5;
        for y in 0..h {
            for x in 0..w {
                let s = 3 * (y * w + x);
                let i = y * w_padded + x;
                out[i] = norm(self.rgb[s + 2]);
                out[plane + i] = norm(self.rgb[s + 1]);
                out[2 * plane + i] = norm(self.rgb[s]);
            }
        }
    }

    /// The quadrilateral `quad` (clockwise from its top-left) cut out and warped to an upright
    /// rectangle as long as its longer opposite sides (bicubic, edge pixels replicated). A cut
    /// at least 1.5 times taller than wide is a line standing on end, and is turned a quarter
    /// counter-clockwise to lie as text reads.
    pub(crate) fn crop_quad(&self, quad: &[Pt; 4]) -> Raster {
        let w = dist(quad[0], quad[1]).max(dist(quad[2], quad[3])) as u32;
        let h = dist(quad[0], quad[3]).max(dist(quad[1], quad[2])) as u32;
        let (w, h) = (w.max(1), h.max(1));
        let target = [
            (0.0, 0.0),
            (w as f32, 0.0),
            (w as f32, h as f32),
            (0.0, h as f32),
        ];
        let mut out = Raster::black(w, h);
        // From the output's pixels back to the page's: a degenerate quad stays black.
        if let Some(back) = homography(target, *quad) {
            let mut o = 0;
            for y in 0..h {
                for x in 0..w {
                    let (sx, sy) = project(&back, (f64::from(x), f64::from(y)));
                    out.rgb[o..o + 3].copy_from_slice(&self.bicubic(sx as f32, sy as f32));
                    o += 3;
                }
            }
        }
        if h as f32 >= 1.5 * w as f32 {
            out.turned(270)
        } else {
            out
        }
    }

    /// The colour at `(x, y)` by OpenCV's bicubic kernel (a = −0.75), edges replicated.
    fn bicubic(&self, x: f32, y: f32) -> [u8; 3] {
        if !x.is_finite() || !y.is_finite() {
            return [0; 3];
        }
        let (x0, y0) = (x.floor(), y.floor());
        let (wx, wy) = (cubic_weights(x - x0), cubic_weights(y - y0));
        let clamp = |v: f32, len: u32| (v.max(0.0) as u32).min(len - 1);
        let mut acc = [0f32; 3];
        for (j, wy) in wy.iter().enumerate() {
            let sy = clamp(y0 - 1.0 + j as f32, self.height);
            for (i, wx) in wx.iter().enumerate() {
                let sx = clamp(x0 - 1.0 + i as f32, self.width);
                let p = self.at(sx, sy);
                for c in 0..3 {
                    acc[c] += wx * wy * f32::from(p[c]);
                }
            }
        }
        acc.map(|v| v.round().clamp(0.0, 255.0) as u8)
    }
}

/// The four weights of the bicubic kernel for a sample `t` (0..1) past the second tap.
fn cubic_weights(t: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let w0 = ((A * (t + 1.0) - 5.0 * A) * (t + 1.0) + 8.0 * A) * (t + 1.0) - 4.0 * A;
    let w1 = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
    let s = 1.0 - t;
    let w2 = ((A + 2.0) * s - (A + 3.0)) * s * s + 1.0;
    [w0, w1, w2, 1.0 - w0 - w1 - w2]
}

/// The two source indices and the weight of the second for destination index `d`.
fn taps(d: u32, scale: f32, len: u32) -> (u32, u32, f32) {
    let s = ((d as f32 + 0.5) * scale - 0.5).max(0.0);
    let i0 = (s.floor() as u32).min(len - 1);
    let i1 = (i0 + 1).min(len - 1);
    (i0, i1, s - i0 as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(w: u32, h: u32) -> Raster {
        let mut r = Raster::black(w, h);
        for y in 0..h {
            for x in 0..w {
                let i = 3 * (y * w + x) as usize;
                r.rgb[i] = (10 * x) as u8;
                r.rgb[i + 1] = (10 * y) as u8;
                r.rgb[i + 2] = 7;
            }
        }
        r
    }

    #[test]
    fn halving_averages_pixel_pairs_without_a_wider_kernel() {
        let r = gradient(4, 2).resized(2, 1);
        // Source x of output 0 is 0.5: the mean of columns 0 and 1 (0 and 10), of rows 0, 1.
        assert_eq!(r.at(0, 0), [5, 5, 7]);
        assert_eq!(r.at(1, 0), [25, 5, 7]);
    }

    #[test]
    fn pixels_are_written_as_normalised_bgr_planes() {
        let mut r = Raster::black(1, 1);
        r.rgb = vec![255, 0, 51];
        let mut out = vec![9.0; 3 * 2];
        out[1] = 0.0;
        out[3] = 0.0;
        out[5] = 0.0;
        r.write_chw_bgr(&mut out, 2);
        assert_eq!(out[0], (51.0 / 255.0 - 0.5) / 0.5);
        assert_eq!(out[2], -1.0);
        assert_eq!(out[4], 1.0);
        assert_eq!([out[1], out[3], out[5]], [0.0; 3]);
    }

    #[test]
    fn an_axis_aligned_quad_is_cut_as_is_and_a_tall_one_laid_down() {
        let page = gradient(10, 8);
        let crop = page.crop_quad(&[(2.0, 1.0), (6.0, 1.0), (6.0, 3.0), (2.0, 3.0)]);
        assert_eq!((crop.width, crop.height), (4, 2));
        assert_eq!(crop.at(0, 0), page.at(2, 1));
        assert_eq!(crop.at(3, 1), page.at(5, 2));
        let tall = page.crop_quad(&[(1.0, 0.0), (3.0, 0.0), (3.0, 6.0), (1.0, 6.0)]);
        assert_eq!((tall.width, tall.height), (6, 2));
        // Turned counter-clockwise: the cut's top-right pixel is now at the top left.
        assert_eq!(tall.at(0, 0), page.at(2, 0));
    }

    #[test]
    fn padding_adds_black_rows_both_sides() {
        let r = gradient(2, 1).padded_vertically(2);
        assert_eq!((r.width, r.height), (2, 5));
        assert_eq!(r.at(1, 0), [0, 0, 0]);
        assert_eq!(r.at(1, 2), [10, 0, 7]);
        assert_eq!(r.at(1, 4), [0, 0, 0]);
    }
}
