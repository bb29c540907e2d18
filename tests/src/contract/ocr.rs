//! Properties of the [`Ocr`] port, on pages this suite draws itself: lines of known text in
//! a CJK font (found on the machine, see [`font`]), black on white, at the size of body text
//! scanned at about 200 dpi. What an engine reads is compared with what was drawn by
//! character error rate ([`cer`]), so the suite holds any engine to one bar without asking
//! for exact output.

use std::sync::OnceLock;

use zhiku_domain::ports::{Ocr, OcrImage, OcrPage, PixelBox, turn_clockwise};

/// Highest character error rate a clean page may be read with.
pub const MAX_CER_CLEAN: f64 = 0.10;
/// Highest character error rate of a page turned a quarter or half turn.
pub const MAX_CER_TURNED: f64 = 0.15;

/// Simplified Chinese lines, with digits and punctuation.
pub const SIMPLIFIED: [&str; 3] = [
    "合同的保修期为三年，自交付之日起计算。",
    "甲方应于每月十五日前支付服务费用。",
    "如有争议，双方应友好协商解决。",
];
/// Traditional Chinese lines.
pub const TRADITIONAL: [&str; 3] = [
    "本公司員工每年享有十五天帶薪假期。",
    "報銷申請須於出差結束後三十日內提交。",
    "會議紀錄由秘書處負責整理與歸檔。",
];
/// Latin lines.
pub const LATIN: [&str; 2] = [
    "Invoice No. 2024-0815, total 12,480.50 CNY.",
    "The warranty period is three years.",
];

/// The font pages are drawn with: `ZHIKU_TEST_FONT` (a .ttf, .otf or .ttc file holding CJK
/// glyphs), else the first of the usual Debian CJK fonts present (`fonts-noto-cjk`,
/// `fonts-wqy-microhei`, `fonts-droid-fallback`); `None` when there is none.
pub fn font() -> Option<&'static ab_glyph::FontVec> {
    static FONT: OnceLock<Option<ab_glyph::FontVec>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<String> = std::env::var("ZHIKU_TEST_FONT")
            .ok()
            .into_iter()
            .chain(
                [
                    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
                    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
                ]
                .map(String::from),
            )
            .collect();
        candidates.iter().find_map(|path| {
            let bytes = std::fs::read(path).ok()?;
            ab_glyph::FontVec::try_from_vec_and_index(bytes, 0).ok()
        })
    })
    .as_ref()
}

/// A page the suite drew, with where each line is.
#[derive(Debug, Clone)]
pub struct Drawn {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// RGB bytes.
    pub rgb: Vec<u8>,
    /// The lines drawn, top to bottom, with the box each covers.
    pub lines: Vec<(String, PixelBox)>,
}

impl Drawn {
    /// The page as an image.
    pub fn image(&self) -> OcrImage<'_> {
        OcrImage::new(self.width, self.height, &self.rgb).expect("a drawn page is well-formed")
    }

    /// The page turned clockwise by `rotation` degrees (the line boxes are left as drawn).
    pub fn turned(&self, rotation: u16) -> Drawn {
        let (width, height, rgb) = turn_clockwise(&self.image(), rotation);
        Drawn {
            width,
            height,
            rgb,
            lines: self.lines.clone(),
        }
    }

    /// The text drawn, lines joined.
    pub fn text(&self) -> String {
        self.lines
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Draws `lines` black on a white page, `px` pixels per em, with margins and line spacing of
/// a printed page.
pub fn draw(font: &ab_glyph::FontVec, lines: &[&str], px: f32) -> Drawn {
    use ab_glyph::{Font, ScaleFont, point};
    let scaled = font.as_scaled(px);
    let margin = (2.0 * px).ceil();
    let advance = |line: &str| -> f32 {
        line.chars()
            .map(|c| scaled.h_advance(scaled.glyph_id(c)))
            .sum()
    };
    let widest = lines.iter().map(|l| advance(l)).fold(0.0f32, f32::max);
    let pitch = (1.8 * px).ceil();
    let width = (widest + 2.0 * margin).ceil() as u32;
    let height = (lines.len() as f32 * pitch + 2.0 * margin).ceil() as u32;
    let mut gray = vec![255u8; (width * height) as usize];
    let mut boxes = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let baseline = margin + i as f32 * pitch + scaled.ascent();
        let mut x = margin;
        for c in line.chars() {
            let id = scaled.glyph_id(c);
            let glyph = id.with_scale_and_position(px, point(x, baseline));
            x += scaled.h_advance(id);
            if let Some(outlined) = font.outline_glyph(glyph) {
                let bounds = outlined.px_bounds();
                outlined.draw(|gx, gy, coverage| {
                    let (px_x, px_y) = (
                        bounds.min.x as i64 + gx as i64,
                        bounds.min.y as i64 + gy as i64,
                    );
                    if px_x >= 0 && px_y >= 0 && (px_x as u32) < width && (px_y as u32) < height {
                        let at = (px_y as u32 * width + px_x as u32) as usize;
                        let ink = (coverage.clamp(0.0, 1.0) * 255.0) as u8;
                        gray[at] = gray[at].saturating_sub(ink);
                    }
                });
            }
        }
        boxes.push((
            line.to_string(),
            PixelBox {
                left: margin,
                top: baseline - scaled.ascent(),
                right: x,
                bottom: baseline - scaled.descent(),
            },
        ));
    }
    let rgb = gray.iter().flat_map(|&g| [g, g, g]).collect();
    Drawn {
        width,
        height,
        rgb,
        lines: boxes,
    }
}

/// The character error rate of `read` against `truth`: the edit distance between the two,
/// whitespace dropped and full-width forms folded (NFKC-like for ASCII punctuation), over the
/// length of the truth.
pub fn cer(truth: &str, read: &str) -> f64 {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| match c {
                '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
                _ => c,
            })
            .collect()
    };
    let (a, b) = (norm(truth), norm(read));
    if a.is_empty() {
        return if b.is_empty() { 0.0 } else { 1.0 };
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()] as f64 / a.len() as f64
}

/// The text of a page read, lines joined.
pub fn text_of(page: &OcrPage) -> String {
    page.lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks what the contract says of every page read from an image of `width` × `height`.
pub fn check_page(page: &OcrPage, width: u32, height: u32) {
    assert!(
        matches!(page.rotation, 0 | 90 | 180 | 270),
        "rotation {} is no quarter turn",
        page.rotation
    );
    let upright = if page.rotation.is_multiple_of(180) {
        (width, height)
    } else {
        (height, width)
    };
    assert_eq!(
        (page.width, page.height),
        upright,
        "the upright page's size, after a turn of {}",
        page.rotation
    );
    for line in &page.lines {
        assert!(!line.text.trim().is_empty(), "a blank line: {line:?}");
        assert!(
            !line.text.chars().any(char::is_control),
            "a control character in {line:?}"
        );
        let b = line.bbox;
        assert!(
            b.left < b.right && b.top < b.bottom,
            "an empty box: {line:?}"
        );
        assert!(
            b.left >= 0.0
                && b.top >= 0.0
                && b.right <= page.width as f32
                && b.bottom <= page.height as f32,
            "a box off the {} × {} page: {line:?}",
            page.width,
            page.height
        );
        assert!(
            line.confidence.is_finite() && (0.0..=1.0).contains(&line.confidence),
            "confidence out of 0..=1: {line:?}"
        );
    }
}

/// Draws `lines`, or says the property was skipped when the machine has no CJK font.
fn drawn(property: &str, lines: &[&str]) -> Option<Drawn> {
    match font() {
        Some(font) => Some(draw(font, lines, 36.0)),
        None => {
            super::skipped(
                "ocr",
                property,
                "no CJK font to draw test pages with: install fonts-noto-cjk (scripts/setup-ocr.sh) or set ZHIKU_TEST_FONT",
            );
            None
        }
    }
}

fn read(ocr: &dyn Ocr, page: &Drawn) -> OcrPage {
    let read = ocr
        .read(&page.image())
        .unwrap_or_else(|e| panic!("{} could not read a drawn page: {e}", ocr.name()));
    check_page(&read, page.width, page.height);
    read
}

fn assert_cer(ocr: &dyn Ocr, truth: &str, page: &OcrPage, max: f64) {
    let got = text_of(page);
    let rate = cer(truth, &got);
    assert!(
        rate <= max,
        "{}: CER {rate:.3} > {max}\n  drawn: {truth:?}\n  read:  {got:?}",
        ocr.name()
    );
}

/// Printed Simplified Chinese with Latin and digits is read within [`MAX_CER_CLEAN`].
pub fn reads_simplified_chinese_and_latin(ocr: &dyn Ocr) {
    let lines: Vec<&str> = SIMPLIFIED.iter().chain(LATIN.iter()).copied().collect();
    let Some(page) = drawn("reads_simplified_chinese_and_latin", &lines) else {
        return;
    };
    let read = read(ocr, &page);
    assert_eq!(read.rotation, 0, "an upright page needs no turn");
    assert_cer(ocr, &page.text(), &read, MAX_CER_CLEAN);
}

/// Printed Traditional Chinese is read within [`MAX_CER_CLEAN`].
pub fn reads_traditional_chinese(ocr: &dyn Ocr) {
    let Some(page) = drawn("reads_traditional_chinese", &TRADITIONAL) else {
        return;
    };
    let read = read(ocr, &page);
    assert_cer(ocr, &page.text(), &read, MAX_CER_CLEAN);
}

/// Each drawn line is found where it was drawn, and the lines come top to bottom.
pub fn lines_come_in_reading_order_where_they_are(ocr: &dyn Ocr) {
    let Some(page) = drawn("lines_come_in_reading_order_where_they_are", &SIMPLIFIED) else {
        return;
    };
    let read = read(ocr, &page);
    let mut last = -1i64;
    for (text, drawn_box) in &page.lines {
        // The read line that best matches this one's text.
        let (index, line) = read
            .lines
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| cer(text, &a.text).total_cmp(&cer(text, &b.text)))
            .unwrap_or_else(|| panic!("{}: no line read at all", ocr.name()));
        assert!(
            cer(text, &line.text) <= 0.3,
            "{}: {text:?} not read as a line of its own: {:?}",
            ocr.name(),
            read.lines
        );
        assert!(
            index as i64 > last,
            "{}: {text:?} out of reading order: {:?}",
            ocr.name(),
            read.lines
        );
        last = index as i64;
        let (cx, cy) = (
            (line.bbox.left + line.bbox.right) / 2.0,
            (line.bbox.top + line.bbox.bottom) / 2.0,
        );
        assert!(
            cx > drawn_box.left
                && cx < drawn_box.right
                && cy > drawn_box.top
                && cy < drawn_box.bottom,
            "{}: {text:?} drawn in {drawn_box:?}, read in {:?}",
            ocr.name(),
            line.bbox
        );
    }
}

/// A page turned upside down is found upside down and read as well as upright.
pub fn a_page_upside_down_is_turned_back(ocr: &dyn Ocr) {
    let Some(page) = drawn("a_page_upside_down_is_turned_back", &SIMPLIFIED) else {
        return;
    };
    let turned = page.turned(180);
    let read = read(ocr, &turned);
    assert_eq!(read.rotation, 180, "{}: {read:?}", ocr.name());
    assert_cer(ocr, &page.text(), &read, MAX_CER_TURNED);
}

/// A page turned a quarter turn is found so, and read.
pub fn a_page_on_its_side_is_turned_back(ocr: &dyn Ocr) {
    let Some(page) = drawn("a_page_on_its_side_is_turned_back", &SIMPLIFIED) else {
        return;
    };
    // Turned a quarter clockwise, it takes three more quarters to stand upright.
    let turned = page.turned(90);
    let read = read(ocr, &turned);
    assert_eq!(read.rotation, 270, "{}: {read:?}", ocr.name());
    assert_cer(ocr, &page.text(), &read, MAX_CER_TURNED);
}

/// A page with nothing written on it gives no lines, whatever its size.
pub fn a_blank_page_gives_no_lines(ocr: &dyn Ocr) {
    for (w, h) in [(800u32, 600u32), (1, 1), (3, 500)] {
        let rgb = vec![255u8; (3 * w * h) as usize];
        let image = OcrImage::new(w, h, &rgb).unwrap();
        let read = ocr
            .read(&image)
            .unwrap_or_else(|e| panic!("{}: a blank {w} × {h} page: {e}", ocr.name()));
        check_page(&read, w, h);
        assert!(
            read.lines.is_empty(),
            "{}: lines on a blank {w} × {h} page: {:?}",
            ocr.name(),
            read.lines
        );
    }
}

/// The same image is read the same way twice.
pub fn reading_is_deterministic(ocr: &dyn Ocr) {
    let lines: Vec<&str> = SIMPLIFIED.iter().chain(LATIN.iter()).copied().collect();
    let Some(page) = drawn("reading_is_deterministic", &lines) else {
        return;
    };
    let first = read(ocr, &page);
    let second = read(ocr, &page);
    assert_eq!(first, second, "{}", ocr.name());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cer_counts_edits_over_the_truth() {
        assert_eq!(cer("合同期限", "合同期限"), 0.0);
        assert_eq!(cer("合同期限", "合同限"), 0.25);
        assert_eq!(cer("ab", "a b"), 0.0);
        assert_eq!(cer("A,1", "Ａ，１"), 0.0);
        assert_eq!(cer("", "x"), 1.0);
    }
}
