//! Text detection: the DB (Differentiable Binarization) model and its post-processing.
//!
//! The model maps a page to a per-pixel text probability map of the same size. Lines are the
//! connected regions above [`THRESH`] (after a 2 × 2 dilation that joins characters split by
//! one pixel); each becomes its minimum-area rotated rectangle, kept when the mean probability
//! inside reaches [`BOX_THRESH`], then grown back out ("unclipped") because DB is trained to
//! predict shrunk text kernels. The sizes are PaddleOCR's and RapidOCR's defaults for the
//! PP-OCR mobile detectors.

use crate::geometry::{Pt, dist, in_convex_quad, min_area_rect, order_clockwise};
use crate::raster::Raster;
use crate::runtime::{Model, RuntimeError};

/// The detector input's short side is grown to this (px).
const LIMIT_SIDE: u32 = 736;
/// A page whose long side exceeds this is shrunk to it first (px).
const MAX_SIDE: u32 = 2000;
/// A page whose short side is under this is grown to it first (px).
const MIN_SIDE: u32 = 30;
/// The detector input's long side never exceeds this (px): a sliver of a page grown to
/// [`LIMIT_SIDE`] across would be enormous along.
const MAX_INPUT_SIDE: u32 = 4000;
/// A page at most this tall, or wider than [`WIDE`] times its height, is padded with black
/// above and below (a lone line detects badly without room around it).
const MIN_HEIGHT: u32 = 30;
const WIDE: f32 = 8.0;
/// Probability above which a pixel is text.
const THRESH: f32 = 0.3;
/// Minimum mean probability inside a box.
const BOX_THRESH: f32 = 0.5;
/// How far boxes are grown back out (DB's shrink ratio inverted).
const UNCLIP_RATIO: f32 = 1.6;
/// At most this many regions a page.
const MAX_CANDIDATES: usize = 1000;

/// Sides of the model input are multiples of 32 (five stride-2 stages): Python's `round`
/// (ties to even), as the reference pre-processing does.
fn round32(v: f64) -> u32 {
    ((v / 32.0).round_ties_even() as u32 * 32).max(32)
}

/// The steps between the page and the model input, kept to map boxes back.
#[derive(Debug, Clone, PartialEq)]
struct Geometry {
    /// The page's size.
    page: (u32, u32),
    /// Page size over bounded size, per axis.
    ratio: (f64, f64),
    /// Black rows added above (and below) a lone line.
    pad_top: u32,
    /// Size of the bounded and padded image (where boxes are first expressed).
    padded: (u32, u32),
}

/// The text lines of `page`: quads clockwise from their top-left, in the page's pixels.
pub(crate) fn detect(model: &mut Model, page: &Raster) -> Result<Vec<[Pt; 4]>, RuntimeError> {
    let (input, geometry) = preprocess(page);
    let (w, h) = (input.width as usize, input.height as usize);
    let mut data = vec![0f32; 3 * w * h];
    input.write_chw_bgr(&mut data, w);
    let (shape, probabilities) = model.run(&[1, 3, h, w], &data)?;
    // [1, 1, H, W], the input's size.
    let [_, _, mh, mw] = shape[..] else {
        return Err(RuntimeError::Run(format!(
            "unexpected detection output shape {shape:?}"
        )));
    };
    if probabilities.len() != mh * mw {
        return Err(RuntimeError::Run(format!(
            "detection output {shape:?} holds {} values",
            probabilities.len()
        )));
    }
    Ok(postprocess(&probabilities, mw, mh, &geometry))
}

fn preprocess(page: &Raster) -> (Raster, Geometry) {
    let (w0, h0) = (page.width, page.height);
    // 1. Bound the page: shrink when its long side exceeds MAX_SIDE, grow when its short side
    //    is under MIN_SIDE (both to multiples of 32).
    let (mut w, mut h) = (w0, h0);
    if w.max(h) > MAX_SIDE {
        let r = f64::from(MAX_SIDE) / f64::from(w.max(h));
        (w, h) = (
            round32((f64::from(w) * r).floor()),
            round32((f64::from(h) * r).floor()),
        );
    }
    if w.min(h) < MIN_SIDE {
        let r = f64::from(MIN_SIDE) / f64::from(w.min(h));
        (w, h) = (
            round32((f64::from(w) * r).floor()),
            round32((f64::from(h) * r).floor()),
        );
    }
    let mut current = page.resized(w, h);
    let ratio = (f64::from(w0) / f64::from(w), f64::from(h0) / f64::from(h));

    // 2. A lone line (very wide, or very short) gets black rows above and below.
    let mut pad_top = 0;
    if h <= MIN_HEIGHT || w as f32 / h as f32 > WIDE {
        let new_h = ((w as f32 / WIDE) as u32).max(MIN_HEIGHT) * 2;
        pad_top = new_h.saturating_sub(h) / 2;
        current = current.padded_vertically(pad_top);
    }
    let padded = (current.width, current.height);

    // 3. The model input: short side grown to LIMIT_SIDE, long side at most MAX_INPUT_SIDE.
    let (pw, ph) = (f64::from(padded.0), f64::from(padded.1));
    let mut r = if pw.min(ph) < f64::from(LIMIT_SIDE) {
        f64::from(LIMIT_SIDE) / pw.min(ph)
    } else {
        1.0
    };
    r = r.min(f64::from(MAX_INPUT_SIDE) / pw.max(ph));
    let input = current.resized(round32((pw * r).floor()), round32((ph * r).floor()));
    (
        input,
        Geometry {
            page: (w0, h0),
            ratio,
            pad_top,
            padded,
        },
    )
}

fn postprocess(prob: &[f32], mw: usize, mh: usize, geometry: &Geometry) -> Vec<[Pt; 4]> {
    let on = |x: usize, y: usize| prob[y * mw + x] > THRESH;
    // Binarise and dilate with a 2 × 2 kernel.
    let mut bitmap = vec![false; mw * mh];
    for y in 0..mh {
        for x in 0..mw {
            bitmap[y * mw + x] = on(x, y)
                || (x > 0 && on(x - 1, y))
                || (y > 0 && on(x, y - 1))
                || (x > 0 && y > 0 && on(x - 1, y - 1));
        }
    }
    let (dw, dh) = (geometry.padded.0 as f32, geometry.padded.1 as f32);
    let (sx, sy) = (dw / mw as f32, dh / mh as f32);
    let (pw, ph) = (geometry.page.0 as f32, geometry.page.1 as f32);
    let mut quads = Vec::new();
    for points in regions(&bitmap, mw, mh).into_iter().take(MAX_CANDIDATES) {
        let Some(rect) = min_area_rect(&points) else {
            continue;
        };
        if rect.short_side() < 3.0 {
            continue;
        }
        if mean_in_quad(prob, mw, mh, &rect.corners()) < BOX_THRESH {
            continue;
        }
        // Unclip: offset = area × ratio / perimeter (the DB paper's shrink, inverted).
        let grown = rect.expand(rect.area() * UNCLIP_RATIO / rect.perimeter());
        if grown.short_side() < 5.0 {
            continue;
        }
        // To the bounded and padded image, rounded and clamped to its pixels.
        let q = order_clockwise(grown.corners().map(|(x, y)| {
            (
                (x * sx).round().clamp(0.0, dw - 1.0),
                (y * sy).round().clamp(0.0, dh - 1.0),
            )
        }));
        if dist(q[0], q[1]) <= 3.0 || dist(q[0], q[3]) <= 3.0 {
            continue;
        }
        // Back to the page: padding removed, bounding resize undone.
        quads.push(q.map(|(x, y)| {
            let x = (f64::from(x) * geometry.ratio.0) as f32;
            let y = (f64::from(y - geometry.pad_top as f32) * geometry.ratio.1) as f32;
            (x.clamp(0.0, pw), y.clamp(0.0, ph))
        }));
    }
    quads
}

/// The 8-connected regions of `bitmap`, in the order of their first pixel (row by row), each
/// as the leftmost and rightmost pixel of each of its rows (enough for its convex hull).
fn regions(bitmap: &[bool], w: usize, h: usize) -> Vec<Vec<(i32, i32)>> {
    let mut seen = vec![false; bitmap.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..bitmap.len() {
        if !bitmap[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        // Per row of the region: (row, leftmost, rightmost).
        let mut rows: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            let e = rows.entry(y).or_insert((x, x));
            e.0 = e.0.min(x);
            e.1 = e.1.max(x);
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if bitmap[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(
            rows.into_iter()
                .flat_map(|(y, (l, r))| [(l as i32, y as i32), (r as i32, y as i32)])
                .collect(),
        );
    }
    out
}

/// Mean of the probability map over the pixels inside `quad` (the DB "fast" box score).
fn mean_in_quad(prob: &[f32], mw: usize, mh: usize, quad: &[Pt; 4]) -> f32 {
    let [x0, y0, x1, y1] = crate::geometry::bounds(quad);
    let clamp = |v: f32, hi: usize| (v.max(0.0) as usize).min(hi - 1);
    let (x0, x1) = (clamp(x0.floor(), mw), clamp(x1.ceil(), mw));
    let (y0, y1) = (clamp(y0.floor(), mh), clamp(y1.ceil(), mh));
    let (mut sum, mut n) = (0f64, 0u32);
    for y in y0..=y1 {
        for x in x0..=x1 {
            if in_convex_quad(quad, (x as f32, y as f32)) {
                sum += f64::from(prob[y * mw + x]);
                n += 1;
            }
        }
    }
    if n == 0 {
        0.0
    } else {
        (sum / f64::from(n)) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_bounded_and_its_input_sides_are_multiples_of_32() {
        let (input, g) = preprocess(&Raster::black(2480, 3508));
        assert_eq!((g.padded, g.pad_top), ((1408, 1984), 0));
        assert_eq!((input.width, input.height), (1408, 1984));
        // A sliver stays a bounded input.
        let (input, _) = preprocess(&Raster::black(3, 500));
        assert!(input.width % 32 == 0 && input.height % 32 == 0);
        assert!(input.width.max(input.height) <= MAX_INPUT_SIDE);
        // A lone wide line is padded above and below.
        let (input, g) = preprocess(&Raster::black(800, 40));
        assert_eq!((g.pad_top, g.padded), (80, (800, 200)));
        assert_eq!((input.width, input.height), (2944, LIMIT_SIDE));
    }

    #[test]
    fn regions_are_found_in_order_and_boxes_mapped_back() {
        // A 64 × 32 map with two bars of high probability.
        let (mw, mh) = (64, 32);
        let mut prob = vec![0.0f32; mw * mh];
        for y in 4..10 {
            for x in 4..40 {
                prob[y * mw + x] = 0.9;
            }
        }
        for y in 20..26 {
            for x in 10..60 {
                prob[y * mw + x] = 0.9;
            }
        }
        let g = Geometry {
            page: (128, 64),
            ratio: (2.0, 2.0),
            pad_top: 0,
            padded: (64, 32),
        };
        let quads = postprocess(&prob, mw, mh, &g);
        assert_eq!(quads.len(), 2);
        let [x0, y0, x1, y1] = crate::geometry::bounds(&quads[0]);
        // The bar (plus the dilation) grown back out, doubled to the page.
        assert!(x0 < 8.0 && y0 < 8.0 && x1 > 80.0 && y1 > 20.0, "{quads:?}");
        let [_, y0, _, _] = crate::geometry::bounds(&quads[1]);
        assert!(y0 > 30.0, "{quads:?}");
        // Nothing above the threshold: nothing found.
        assert!(postprocess(&vec![0.1; mw * mh], mw, mh, &g).is_empty());
    }
}
