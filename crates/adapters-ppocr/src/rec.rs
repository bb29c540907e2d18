//! The line models: direction classification (0° or 180°) and recognition (SVTR with CTC).
//!
//! Both take batches of line cuts resized to a fixed height, keeping the aspect ratio, left
//! aligned and zero-padded on the right to the batch's width. Lines are batched by aspect
//! ratio, so that the lines of a batch need about the same width.

use crate::raster::Raster;
use crate::runtime::{Model, RuntimeError};

/// Lines per batch.
pub(crate) const BATCH: usize = 6;
/// Probability above which the classifier's "upside down" is believed.
pub(crate) const CLS_THRESH: f32 = 0.9;

/// One `[n, 3, height, width]` batch of `cuts`.
fn line_batch(cuts: &[&Raster], height: u32, width: u32) -> (Vec<usize>, Vec<f32>) {
    let per = 3 * (height * width) as usize;
    let mut data = vec![0f32; per * cuts.len()];
    for (i, cut) in cuts.iter().enumerate() {
        let ratio = cut.width as f32 / cut.height as f32;
        let w = ((height as f32 * ratio).ceil() as u32).clamp(1, width);
        cut.resized(w, height)
            .write_chw_bgr(&mut data[i * per..(i + 1) * per], width as usize);
    }
    (vec![cuts.len(), 3, height as usize, width as usize], data)
}

/// Indices of `cuts` by aspect ratio (width over height), narrowest first.
fn by_ratio(cuts: &[Raster]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cuts.len()).collect();
    let ratio = |i: usize| cuts[i].width as f32 / cuts[i].height as f32;
    order.sort_by(|&a, &b| ratio(a).total_cmp(&ratio(b)).then(a.cmp(&b)));
    order
}

/// The classifier's probability that each cut is upside down.
pub(crate) fn upside_down(model: &mut Model, cuts: &[Raster]) -> Result<Vec<f32>, RuntimeError> {
    // The PP-OCR mobile v2.0 classifier: 3 × 48 × 192 input, [n, 2] softmax output.
    const H: u32 = 48;
    const W: u32 = 192;
    let mut out = vec![0.0; cuts.len()];
    for chunk in by_ratio(cuts).chunks(BATCH) {
        let refs: Vec<&Raster> = chunk.iter().map(|&i| &cuts[i]).collect();
        let (shape, data) = line_batch(&refs, H, W);
        let (out_shape, probabilities) = model.run(&shape, &data)?;
        let classes = out_shape.last().copied().unwrap_or(0);
        if classes < 2 || probabilities.len() != classes * chunk.len() {
            return Err(RuntimeError::Run(format!(
                "unexpected classifier output shape {out_shape:?}"
            )));
        }
        for (row, &i) in probabilities.chunks(classes).zip(chunk) {
            out[i] = row[1] / (row[0] + row[1]).max(f32::MIN_POSITIVE);
        }
    }
    Ok(out)
}

/// The recogniser's classes: 0 is the CTC blank, 1..=n the dictionary's characters in order,
/// n + 1 a space (PaddleOCR appends one to every dictionary, `use_space_char`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Charset {
    classes: Vec<String>,
}

impl Charset {
    /// From the dictionary's lines, one character a line (the recogniser's ONNX metadata
    /// `character`, or a PaddleOCR `*_dict.txt`).
    pub(crate) fn from_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Self {
        let mut classes = vec![String::new()];
        classes.extend(lines.map(|l| l.trim_end_matches('\r').to_string()));
        classes.push(" ".to_string());
        Self { classes }
    }

    pub(crate) fn len(&self) -> usize {
        self.classes.len()
    }
}

/// The text of each cut and its confidence (the mean of the characters' probabilities; 0 for
/// no text), in the cuts' order.
pub(crate) fn recognize(
    model: &mut Model,
    cuts: &[Raster],
    charset: &Charset,
) -> Result<Vec<(String, f32)>, RuntimeError> {
    // PP-OCRv4 to v6 recognisers: 3 × 48 × W input, W at least 320 and wide enough for the
    // widest line of the batch at height 48.
    const H: u32 = 48;
    const MIN_W: u32 = 320;
    let mut results = vec![(String::new(), 0.0); cuts.len()];
    for chunk in by_ratio(cuts).chunks(BATCH) {
        let refs: Vec<&Raster> = chunk.iter().map(|&i| &cuts[i]).collect();
        let widest = refs
            .iter()
            .map(|c| c.width as f32 / c.height as f32)
            .fold(MIN_W as f32 / H as f32, f32::max);
        let (shape, data) = line_batch(&refs, H, (H as f32 * widest) as u32);
        let (out_shape, probabilities) = model.run(&shape, &data)?;
        // [n, T, classes] of softmax probabilities.
        let [n, t, c] = out_shape[..] else {
            return Err(RuntimeError::Run(format!(
                "unexpected recogniser output shape {out_shape:?}"
            )));
        };
        if c != charset.len() || n != chunk.len() || probabilities.len() != n * t * c {
            return Err(RuntimeError::Unavailable(format!(
                "the recogniser gives {c} classes, its dictionary {} (blank, characters, space)",
                charset.len()
            )));
        }
        for (k, &i) in chunk.iter().enumerate() {
            results[i] = ctc_greedy(&probabilities[k * t * c..(k + 1) * t * c], c, charset);
        }
    }
    Ok(results)
}

/// Greedy CTC decoding: the best class at each time step, repeats merged, blanks dropped.
fn ctc_greedy(probabilities: &[f32], classes: usize, charset: &Charset) -> (String, f32) {
    let mut text = String::new();
    let (mut sum, mut kept) = (0f32, 0u32);
    let mut previous = usize::MAX;
    for step in probabilities.chunks(classes) {
        let (best, p) = step
            .iter()
            .copied()
            .enumerate()
            .fold(
                (0, f32::MIN),
                |acc, (i, p)| if p > acc.1 { (i, p) } else { acc },
            );
        if best != 0 && best != previous {
            text.push_str(&charset.classes[best]);
            sum += p;
            kept += 1;
        }
        previous = best;
    }
    let confidence = if kept == 0 { 0.0 } else { sum / kept as f32 };
    (text, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(classes: &[usize], width: usize, p: f32) -> Vec<f32> {
        classes
            .iter()
            .flat_map(|&i| {
                let mut v = vec![(1.0 - p) / (width - 1) as f32; width];
                v[i] = p;
                v
            })
            .collect()
    }

    #[test]
    fn ctc_merges_repeats_and_drops_blanks() {
        let charset = Charset::from_lines(["合", "同"].into_iter()); // blank 合 同 space
        // 合 合 blank 合 同 同 space -> "合合同 "
        let (text, confidence) = ctc_greedy(&steps(&[1, 1, 0, 1, 2, 2, 3], 4, 1.0), 4, &charset);
        assert_eq!(text, "合合同 ");
        assert_eq!(confidence, 1.0);
    }

    #[test]
    fn ctc_confidence_is_the_mean_over_kept_characters() {
        let charset = Charset::from_lines(["a", "b"].into_iter());
        let mut probabilities = steps(&[1, 0, 2], 4, 0.8);
        // The blank step's own probability does not count.
        probabilities[4..8].copy_from_slice(&[0.99, 0.0, 0.01, 0.0]);
        let (text, confidence) = ctc_greedy(&probabilities, 4, &charset);
        assert_eq!(text, "ab");
        assert!((confidence - 0.8).abs() < 1e-6);
        assert_eq!(
            ctc_greedy(&steps(&[0, 0], 4, 0.9), 4, &charset),
            (String::new(), 0.0)
        );
    }

    #[test]
    fn lines_are_batched_narrowest_first() {
        let cuts = [
            Raster::black(100, 10),
            Raster::black(20, 10),
            Raster::black(50, 10),
        ];
        assert_eq!(by_ratio(&cuts), vec![1, 2, 0]);
        let refs: Vec<&Raster> = cuts.iter().collect();
        let (shape, data) = line_batch(&refs, 48, 480);
        assert_eq!(shape, vec![3, 3, 48, 480]);
        // Black pixels are -1; the padding right of the 20 × 10 cut (96 px at height 48) is 0.
        let second = &data[3 * 48 * 480..];
        assert_eq!((second[95], second[96]), (-1.0, 0.0));
        assert_eq!(Charset::from_lines(["x"].into_iter()).len(), 3);
    }
}
