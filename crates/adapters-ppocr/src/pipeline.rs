//! One page's reading: detection, the page's orientation, line direction, recognition, the
//! lines' boxes on the upright page and their reading order.
//!
//! Orientation, among the four quarter turns:
//!
//! - **on its side**: when the detected lines, weighed by their length, mostly stand on end
//!   (taller than wide by half again), the page is turned a quarter clockwise and detected
//!   again; the direction classifier then tells a page that needed that quarter (90) from one
//!   that needed three (270). Lines standing on end can also be vertical writing on an upright
//!   page: when the turned reading is unsure, the page is also read as it is (tall lines laid
//!   down one by one) and the surer reading kept.
//! - **upside down**: the direction classifier's vote, each line's probability of being
//!   upside down weighed by its length: above one half, the page is upside down and every line
//!   is turned; otherwise only the lines it is sure of (above [`CLS_THRESH`]) are, and those
//!   are read both ways, the surer reading kept. When the vote is close (within
//!   [`UNSURE_VOTE`] of one half), the page is recognised both ways and the surer reading
//!   kept.

use std::path::Path;

use crate::det::detect;
use crate::geometry::{Pt, bounds, dist};
use crate::onnx_meta::metadata_props;
use crate::order::{Bounds, reading_order};
use crate::raster::Raster;
use crate::rec::{CLS_THRESH, Charset, recognize, upside_down};
use crate::runtime::{Model, RuntimeError};

/// A line read, on the upright page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub(crate) text: String,
    pub(crate) bounds: Bounds,
    pub(crate) confidence: f32,
}

/// What was read of a page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    /// Clockwise quarter turn, in degrees, that makes the page upright.
    pub(crate) rotation: u16,
    /// The upright page's size.
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// In reading order.
    pub(crate) lines: Vec<Line>,
}

/// The model files.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Files<'a> {
    pub(crate) runtime: &'a Path,
    pub(crate) det: &'a Path,
    pub(crate) cls: &'a Path,
    pub(crate) rec: &'a Path,
}

/// The three models and the recogniser's dictionary.
#[derive(Debug)]
pub(crate) struct Pipeline {
    det: Model,
    cls: Model,
    rec: Model,
    charset: Charset,
    min_confidence: f32,
}

/// Mean confidence of a turned reading under which the page is also read as it is.
const SURE_TURNED: f32 = 0.8;
/// How far from even (0.5) the classifier's vote on a page must be to be believed alone.
const UNSURE_VOTE: f32 = 0.25;

impl Pipeline {
    /// Loads the models of `files`, each run by `threads` threads; lines read with less than
    /// `min_confidence` are dropped.
    pub(crate) fn load(
        files: Files<'_>,
        threads: usize,
        min_confidence: f32,
    ) -> Result<Self, RuntimeError> {
        let charset = charset_of(files.rec)?;
        Ok(Self {
            det: Model::load(files.runtime, files.det, threads)?,
            cls: Model::load(files.runtime, files.cls, threads)?,
            rec: Model::load(files.runtime, files.rec, threads)?,
            charset,
            min_confidence,
        })
    }

    /// Reads `page`.
    pub(crate) fn read(&mut self, page: &Raster) -> Result<Reading, RuntimeError> {
        let quads = detect(&mut self.det, page)?;
        if quads.is_empty() {
            return Ok(Reading {
                rotation: 0,
                width: page.width,
                height: page.height,
                lines: Vec::new(),
            });
        }
        if !standing_on_end(&quads) {
            return self.read_lines(page, &quads, 0);
        }
        let turned = page.turned(90);
        let turned_quads = detect(&mut self.det, &turned)?;
        let sideways = self.read_lines(&turned, &turned_quads, 90)?;
        if mean_confidence(&sideways) >= SURE_TURNED {
            return Ok(sideways);
        }
        let as_is = self.read_lines(page, &quads, 0)?;
        Ok(if score(&as_is) > 1.5 * score(&sideways) {
            as_is
        } else {
            sideways
        })
    }

    /// Reads the lines `quads` of `page`, which is the given image turned clockwise by
    /// `turn`; the classifier may add a half turn. When it is unsure of the page (its
    /// length-weighted vote within [`UNSURE_VOTE`] of even), the page is read both ways and
    /// the surer reading kept.
    fn read_lines(
        &mut self,
        page: &Raster,
        quads: &[[Pt; 4]],
        turn: u16,
    ) -> Result<Reading, RuntimeError> {
        let cuts: Vec<Raster> = quads.iter().map(|q| page.crop_quad(q)).collect();
        let down = upside_down(&mut self.cls, &cuts)?;
        let vote = upside_down_vote(&cuts, &down);
        let first = self.recognize_page(page, quads, &cuts, &down, turn, vote > 0.5)?;
        if (vote - 0.5).abs() >= UNSURE_VOTE {
            return Ok(first);
        }
        let second = self.recognize_page(page, quads, &cuts, &down, turn, vote <= 0.5)?;
        Ok(if score(&second) > score(&first) {
            second
        } else {
            first
        })
    }

    /// Recognises the cuts of `quads`, all turned a half turn when `page_down`, else those the
    /// classifier is sure of; the lines on the upright page, in reading order.
    fn recognize_page(
        &mut self,
        page: &Raster,
        quads: &[[Pt; 4]],
        cuts: &[Raster],
        down: &[f32],
        turn: u16,
        page_down: bool,
    ) -> Result<Reading, RuntimeError> {
        let cuts: Vec<Raster> = cuts
            .iter()
            .zip(down)
            .map(|(cut, p)| {
                if page_down || *p > CLS_THRESH {
                    cut.turned(180)
                } else {
                    cut.clone()
                }
            })
            .collect();
        let mut texts = recognize(&mut self.rec, &cuts, &self.charset)?;
        // A line the classifier turned against the page's way is read the page's way too, and
        // the surer reading kept: the classifier sees a long line squeezed to 192 pixels, and
        // now and then turns an upright one.
        let against: Vec<usize> = (0..cuts.len())
            .filter(|&i| !page_down && down[i] > CLS_THRESH)
            .collect();
        if !against.is_empty() {
            let upright: Vec<Raster> = against.iter().map(|&i| cuts[i].turned(180)).collect();
            let again = recognize(&mut self.rec, &upright, &self.charset)?;
            for (&i, reading) in against.iter().zip(again) {
                if reading.1 > texts[i].1 {
                    texts[i] = reading;
                }
            }
        }
        let (w, h) = (page.width as f32, page.height as f32);
        let lines: Vec<Line> = quads
            .iter()
            .zip(texts)
            .filter_map(|(quad, (text, confidence))| {
                let quad = if page_down {
                    quad.map(|(x, y)| (w - x, h - y))
                } else {
                    *quad
                };
                line(text, confidence, &quad, w, h, self.min_confidence)
            })
            .collect();
        let order = reading_order(&lines.iter().map(|l| l.bounds).collect::<Vec<_>>());
        let mut slots: Vec<Option<Line>> = lines.into_iter().map(Some).collect();
        Ok(Reading {
            rotation: (turn + if page_down { 180 } else { 0 }) % 360,
            width: page.width,
            height: page.height,
            lines: order.into_iter().filter_map(|i| slots[i].take()).collect(),
        })
    }
}

/// The recogniser's dictionary, from its ONNX metadata `character`.
fn charset_of(rec: &Path) -> Result<Charset, RuntimeError> {
    let bytes = std::fs::read(rec)
        .map_err(|e| RuntimeError::Unavailable(format!("cannot read {}: {e}", rec.display())))?;
    let meta = metadata_props(&bytes).ok_or_else(|| {
        RuntimeError::Unavailable(format!("{} is not an ONNX model", rec.display()))
    })?;
    let characters = meta.get("character").ok_or_else(|| {
        RuntimeError::Unavailable(format!(
            "{} carries no dictionary (metadata `character`)",
            rec.display()
        ))
    })?;
    Ok(Charset::from_lines(characters.lines()))
}

/// A line of the upright page from what was read of `quad` (already on the upright page):
/// the text without control characters and outer blanks, the quad's bounds clamped to the
/// page; `None` when no text is left, the confidence is under `min_confidence`, or the box is
/// empty.
fn line(
    text: String,
    confidence: f32,
    quad: &[Pt; 4],
    width: f32,
    height: f32,
    min_confidence: f32,
) -> Option<Line> {
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    let text = text.trim();
    let confidence = if confidence.is_finite() {
        confidence.clamp(0.0, 1.0)
    } else {
        0.0
    };
    if text.is_empty() || confidence < min_confidence {
        return None;
    }
    let [l, t, r, b] = bounds(quad);
    let (left, top) = (l.clamp(0.0, width), t.clamp(0.0, height));
    let (right, bottom) = (r.clamp(0.0, width), b.clamp(0.0, height));
    (left < right && top < bottom).then(|| Line {
        text: text.to_string(),
        bounds: [left, top, right, bottom],
        confidence,
    })
}

/// Whether the lines, weighed by their length, mostly stand on end.
fn standing_on_end(quads: &[[Pt; 4]]) -> bool {
    let (mut standing, mut lying) = (0f32, 0f32);
    for q in quads {
        let (w, h) = (dist(q[0], q[1]), dist(q[0], q[3]));
        if h > 1.5 * w {
            standing += h;
        } else if w > 1.5 * h {
            lying += w;
        }
    }
    standing > lying
}

/// The classifier's vote that the page is upside down: each line's probability of being so,
/// weighed by its length (aspect ratio); 0 for no lines.
fn upside_down_vote(cuts: &[Raster], down: &[f32]) -> f32 {
    let (mut votes, mut all) = (0f32, 0f32);
    for (cut, p) in cuts.iter().zip(down) {
        let weight = cut.width as f32 / cut.height.max(1) as f32;
        all += weight;
        votes += weight * p.clamp(0.0, 1.0);
    }
    if all > 0.0 { votes / all } else { 0.0 }
}

/// How much sure text a reading holds: characters weighed by their line's confidence.
fn score(reading: &Reading) -> f32 {
    reading
        .lines
        .iter()
        .map(|l| l.confidence * l.text.chars().filter(|c| !c.is_whitespace()).count() as f32)
        .sum()
}

/// The reading's confidence, a mean over its characters (0 for no text).
fn mean_confidence(reading: &Reading) -> f32 {
    let chars: usize = reading
        .lines
        .iter()
        .map(|l| l.text.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    if chars == 0 {
        0.0
    } else {
        score(reading) / chars as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quad(x0: f32, y0: f32, x1: f32, y1: f32) -> [Pt; 4] {
        [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    }

    #[test]
    fn a_line_keeps_clean_text_in_a_clamped_box() {
        let q = quad(-4.0, 10.0, 120.0, 30.0);
        let l = line(" 合同\u{7}期限 ".into(), 0.9, &q, 100.0, 50.0, 0.5).unwrap();
        assert_eq!(l.text, "合同期限");
        assert_eq!(l.bounds, [0.0, 10.0, 100.0, 30.0]);
        assert!(line(" \t".into(), 0.9, &q, 100.0, 50.0, 0.5).is_none());
        assert!(line("x".into(), 0.4, &q, 100.0, 50.0, 0.5).is_none());
        assert!(
            line("x".into(), f32::NAN, &q, 100.0, 50.0, 0.0).is_some_and(|l| l.confidence == 0.0)
        );
        // A box wholly off the page is empty once clamped.
        assert!(
            line(
                "x".into(),
                0.9,
                &quad(120.0, 0.0, 130.0, 9.0),
                100.0,
                50.0,
                0.5
            )
            .is_none()
        );
    }

    #[test]
    fn a_page_stands_on_end_when_its_long_lines_do() {
        let lying = [quad(0.0, 0.0, 400.0, 30.0), quad(0.0, 40.0, 300.0, 70.0)];
        assert!(!standing_on_end(&lying));
        let standing = [quad(0.0, 0.0, 30.0, 400.0), quad(40.0, 0.0, 70.0, 300.0)];
        assert!(standing_on_end(&standing));
        // Digits in a table column (short, a little taller than wide) do not tip a page over.
        let mut table: Vec<[Pt; 4]> = (0..10)
            .map(|i| quad(0.0, 40.0 * i as f32, 12.0, 40.0 * i as f32 + 20.0))
            .collect();
        table.push(quad(30.0, 0.0, 600.0, 20.0));
        assert!(!standing_on_end(&table));
    }

    #[test]
    fn the_vote_on_the_page_weighs_lines_by_length() {
        let cuts = [
            Raster::black(400, 20),
            Raster::black(40, 20),
            Raster::black(40, 20),
        ];
        assert!((upside_down_vote(&cuts, &[0.9, 0.0, 0.0]) - 0.75).abs() < 1e-6);
        assert!((upside_down_vote(&cuts, &[0.0, 1.0, 1.0]) - 1.0 / 6.0).abs() < 1e-6);
        assert_eq!(upside_down_vote(&[], &[]), 0.0);
    }
}
