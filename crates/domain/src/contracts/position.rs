//! Where text stands on a page: the boxes of a paginated document's lines, kept with its chunks
//! and carried by citations, so a reader can be shown the cited spot on the page.

use serde::{Deserialize, Serialize};

/// A box on a page, as fractions of the page's width and height measured from its top-left
/// corner: `0 <= x0 < x1 <= 1`, `0 <= y0 < y1 <= 1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PageBox {
    /// The page, from 1.
    pub page: u32,
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
    /// The clockwise quarter turns (0–3) that make the page's picture upright: OCR read the
    /// page on its side or upside down, and the box is on the upright page (pass it to
    /// `GET /v1/originals/{id}/pages/{n}?turn=`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn: u16,
    /// OCR's confidence in the line's text, 0 to 1 (a line below [`LOW_CONFIDENCE`] is kept
    /// and marked); absent for a text layer's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

/// OCR's confidence under which a line's reading is doubtful: it is indexed and cited like any
/// other, and a citation of it says `low_confidence`.
pub const LOW_CONFIDENCE: f32 = 0.8;

impl PageBox {
    /// True when OCR read the line (it has a confidence).
    pub fn is_ocr(&self) -> bool {
        self.confidence.is_some()
    }

    /// True when OCR read the line with a confidence under [`LOW_CONFIDENCE`].
    pub fn is_doubtful(&self) -> bool {
        self.confidence.is_some_and(|c| c < LOW_CONFIDENCE)
    }
}

fn is_zero(turn: &u16) -> bool {
    *turn == 0
}

impl PageBox {
    /// True when the box lies on a page (from 1) and within it, and is not empty.
    pub fn is_valid(&self) -> bool {
        let unit = |v: f32| (0.0..=1.0).contains(&v);
        self.page >= 1
            && self.turn < 4
            && self.confidence.is_none_or(|c| (0.0..=1.0).contains(&c))
            && [self.x0, self.y0, self.x1, self.y1].into_iter().all(unit)
            && self.x0 < self.x1
            && self.y0 < self.y1
    }
}

/// A line of a document's text on its page: characters `start..end` of the document's
/// content (in characters) and the line's box.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LineBox {
    /// First character (inclusive).
    pub start: usize,
    /// Last character (exclusive).
    pub end: usize,
    /// Where the line stands.
    #[serde(flatten)]
    pub at: PageBox,
}

impl LineBox {
    /// True when the line covers characters and its box is valid.
    pub fn is_valid(&self) -> bool {
        self.start < self.end && self.at.is_valid()
    }

    /// True when the line shares a character with `start..end`.
    pub fn overlaps(&self, start: usize, end: usize) -> bool {
        self.start < end && start < self.end
    }
}
