//! From positioned glyphs to the chunker's text: lines, columns, reading order, repeated
//! headers and footers, headings, paragraphs and line joins. [`lay_out`] runs steps 2–4 on
//! the pages of a text-layer PDF and on pages read by OCR alike ([`crate::scan`]).
//!
//! The input is what a PDF's text layer says: each glyph's Unicode text, box and font size, in
//! the order the content stream draws them, page by page. The steps, each a function below:
//!
//! 1. [`lines`]: glyphs on one baseline, close enough to be one run of text, make a line; a
//!    gap wider than a fraction of the font size is a space (unless the text already has one).
//! 2. [`drop_repeated_edges`]: a line in the top or bottom band of the page whose text (digits
//!    ignored, so "第 3 页" matches "第 4 页") comes back on most pages is a running header or
//!    footer, and is dropped.
//! 3. [`reading_order`]: a vertical gutter that splits the narrow lines of a page into columns
//!    orders them column by column, within bands cut by lines that span the columns.
//! 4. [`blocks`]: consecutive lines of one column and size make a paragraph unless the gap
//!    between them, an indent, or a short closing line says a new one starts; a line in a larger
//!    size than the body text, or matching an outline entry of its page, is a heading. Before
//!    that, [`tables`] finds the tables of the page: three or more consecutive rows (lines
//!    sharing a baseline) of two or more short cells whose cells fall in the same columns
//!    (column bands: the union of the cells' spans over the rows, no row with two cells in
//!    one band). A table is one block of rows, its first row the header, written as a
//!    Markdown pipe table where its first line stood.
//! 5. [`join`]: a paragraph's lines are joined with a space between Latin words, with nothing
//!    between CJK characters (a Chinese line break is no word break), and a word hyphenated at
//!    a line end is rejoined.

use anyhow::Result;
use unicode_normalization::UnicodeNormalization;

use crate::extracted::LineBox;
use crate::limits::Limits;
use crate::text_builder::{TextBuilder, pipe_table};

/// One glyph of a page: its text and box in PDF user space (y grows upwards).
#[derive(Debug, Clone, PartialEq)]
pub struct Glyph {
    /// The text (usually one character; a ligature may give several).
    pub text: String,
    /// Left edge.
    pub x0: f32,
    /// Right edge.
    pub x1: f32,
    /// The baseline.
    pub y: f32,
    /// Font size in user-space units (points).
    pub size: f32,
}

/// The glyphs of one page.
#[derive(Debug, Clone, Default)]
pub struct PageText {
    /// Page height, for the header and footer bands.
    pub height: f32,
    /// Glyphs in drawing order.
    pub glyphs: Vec<Glyph>,
}

/// An outline (bookmark) entry: its title, depth (1 = top) and the page it points to (from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct OutlineEntry {
    /// The title shown in the reader's bookmarks.
    pub title: String,
    /// Nesting depth, from 1.
    pub level: usize,
    /// The page the entry opens, when it resolves to one.
    pub page: Option<usize>,
}

/// A line of text on a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The text, spaces between words included.
    pub text: String,
    /// Left edge.
    pub x0: f32,
    /// Right edge.
    pub x1: f32,
    /// Baseline.
    pub y: f32,
    /// The font size most of its characters have.
    pub size: f32,
    /// No other line shares its baseline (set by [`drop_repeated_edges`]).
    pub alone: bool,
    /// OCR's confidence in the line's text, 0 to 1; `None` for a text layer's line.
    pub confidence: Option<f32>,
}

/// A block of the output.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading and its level (1 = top).
    Heading(usize, String),
    /// A paragraph, its lines already joined.
    Paragraph(String),
    /// A table: its rows of cells, the first row its header.
    Table(Vec<Vec<String>>),
}

/// Step 1: the lines of a page, in drawing order.
pub fn lines(page: &PageText) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut current: Option<(Line, Vec<(f32, usize)>)> = None;
    for g in &page.glyphs {
        let text = normalise(&g.text);
        let finite = g.size.is_finite() && g.x0.is_finite() && g.x1.is_finite() && g.y.is_finite();
        if text.is_empty() || !finite || g.size <= 0.0 {
            continue;
        }
        let size = g.size;
        if let Some((line, sizes)) = current.as_mut() {
            let same_baseline = (g.y - line.y).abs() <= 0.35 * size.max(line.size);
            let gap = g.x0 - line.x1;
            let em = size.max(line.size);
            // Forward, or a small step back (kerning, overprinting), and not across a gutter.
            if same_baseline && gap > -0.6 * em && gap < 1.2 * em {
                let is_space = text.chars().all(char::is_whitespace);
                if gap > 0.22 * em
                    && !is_space
                    && !line.text.ends_with(char::is_whitespace)
                    && (!ends_cjk(&line.text) || !starts_cjk(&text))
                {
                    line.text.push(' ');
                }
                if is_space {
                    if !line.text.ends_with(' ') {
                        line.text.push(' ');
                    }
                } else {
                    line.text.push_str(&text);
                    line.x1 = line.x1.max(g.x1);
                    count_size(sizes, size, text.chars().count());
                }
                continue;
            }
        }
        if let Some((line, sizes)) = current.take() {
            push_line(&mut out, line, &sizes);
        }
        if text.chars().all(char::is_whitespace) {
            continue;
        }
        let mut sizes = Vec::new();
        count_size(&mut sizes, size, text.chars().count());
        current = Some((
            Line {
                text,
                x0: g.x0,
                x1: g.x1,
                y: g.y,
                size,
                alone: false,
                confidence: None,
            },
            sizes,
        ));
    }
    if let Some((line, sizes)) = current.take() {
        push_line(&mut out, line, &sizes);
    }
    merge_runs(out)
}

/// Counts `n` characters of `size` (sizes within 0.1 are one). A list holds at most
/// [`MAX_SIZES`] sizes: a hostile file with a size per glyph costs no more than that.
fn count_size(sizes: &mut Vec<(f32, usize)>, size: f32, n: usize) {
    if let Some((_, c)) = sizes.iter_mut().find(|(s, _)| (*s - size).abs() < 0.1) {
        *c += n;
    } else if sizes.len() < MAX_SIZES {
        sizes.push((size, n));
    }
}

/// The most distinct font sizes counted per line or document.
const MAX_SIZES: usize = 64;

fn push_line(out: &mut Vec<Line>, mut line: Line, sizes: &[(f32, usize)]) {
    line.text = line.text.trim().to_string();
    if line.text.is_empty() {
        return;
    }
    if let Some((s, _)) = sizes.iter().max_by_key(|(_, c)| *c) {
        line.size = *s;
    }
    out.push(line);
}

/// Runs drawn apart (a line written in several pieces, not in order) that sit on one baseline
/// and touch are one line.
fn merge_runs(lines: Vec<Line>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::with_capacity(lines.len());
    for line in lines {
        if let Some(prev) = out.last_mut() {
            let em = prev.size.max(line.size);
            let gap = line.x0 - prev.x1;
            if (line.y - prev.y).abs() <= 0.2 * em && gap >= -0.6 * em && gap < 0.5 * em {
                if gap > 0.22 * em && !(ends_cjk(&prev.text) && starts_cjk(&line.text)) {
                    prev.text.push(' ');
                }
                prev.text.push_str(&line.text);
                prev.x1 = prev.x1.max(line.x1);
                continue;
            }
        }
        out.push(line);
    }
    out
}

/// Step 2: drops running headers and footers: lines in the top or bottom 10% of the page whose
/// digit-blind text recurs on at least half of the pages (and on at least two pages).
pub fn drop_repeated_edges(pages: &mut [(f32, Vec<Line>)]) {
    // Only a line alone on its baseline can be a running header or footer: a table's header
    // row repeated on every page, or a cell of a table at the foot of a page, has neighbours.
    for (_, lines) in pages.iter_mut() {
        mark_alone(lines);
    }
    // Digit-blind: each run of digits is one `#`, so "第 9 页 共 29 页" and "第 10 页 共 29 页"
    // are one footer.
    let key = |l: &Line| -> String {
        let mut k = String::new();
        for c in l.text.chars().filter(|c| !c.is_whitespace()) {
            if c.is_ascii_digit() {
                if !k.ends_with('#') {
                    k.push('#');
                }
            } else {
                k.push(c);
            }
        }
        k
    };
    let in_band =
        |height: f32, l: &Line| height > 0.0 && (l.y > height * 0.90 || l.y < height * 0.10);
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (height, lines) in pages.iter() {
        let mut seen = std::collections::HashSet::new();
        for l in lines.iter().filter(|l| in_band(*height, l)) {
            let k = key(l);
            if seen.insert(k.clone()) {
                *counts.entry(k).or_default() += 1;
            }
        }
    }
    let needed = (pages.len() / 2).max(2);
    let repeated = pages.len() >= 2;
    for (height, lines) in pages.iter_mut() {
        let h = *height;
        lines.retain(|l| {
            let edge = in_band(h, l) && l.alone;
            // A bare page number is a footer even on a page of its own.
            !(edge
                && ((repeated && counts.get(&key(l)).is_some_and(|&c| c >= needed))
                    || is_page_number(&l.text)))
        });
    }
}

/// Marks the lines that share their baseline with no other line.
fn mark_alone(lines: &mut [Line]) {
    let mut by_y: Vec<(f32, f32, usize)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.y, l.size, i))
        .collect();
    by_y.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (k, &(y, size, i)) in by_y.iter().enumerate() {
        let near = |j: usize| (by_y[j].0 - y).abs() <= 0.5 * size.max(by_y[j].1);
        let before = k > 0 && near(k - 1);
        let after = k + 1 < by_y.len() && near(k + 1);
        lines[i].alone = !(before || after);
    }
}

/// A line that is only a page number: "12", "- 12 -", "第 12 页", "第 12 页 共 30 页", "12 / 30",
/// "Page 12", "Page 12 of 30", "p. 12".
fn is_page_number(text: &str) -> bool {
    let lower = text.to_lowercase();
    // The total goes first: "… of 30" (a word of its own), "… 共 30 页", "… / 30".
    let mut t = lower.trim();
    if let Some((head, total)) = t.rsplit_once(" of ") {
        if !is_number(total.trim()) {
            return false;
        }
        t = head.trim();
    } else if let Some((head, total)) = t.split_once('共') {
        if !is_number(total.trim().trim_end_matches('页').trim()) {
            return false;
        }
        t = head.trim();
    } else if let Some((head, total)) = t.split_once(['/', '|']) {
        if !is_number(total.trim()) {
            return false;
        }
        t = head.trim();
    }
    let core = t
        .trim_start_matches(['第', '-', '—', '–', '(', '（', '[', '·', ' '])
        .trim_end_matches(['页', '-', '—', '–', ')', '）', ']', '·', ',', '，', ' ']);
    let core = ["page", "pg.", "p."]
        .iter()
        .find_map(|p| core.strip_prefix(p))
        .unwrap_or(core)
        .trim();
    is_number(core)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.chars().all(|c| c.is_ascii_digit())
}

/// Step 3: the lines of a page (of `height`) in reading order.
pub fn reading_order(lines: Vec<Line>, height: f32) -> Vec<Line> {
    if lines.len() < 6 {
        return lines;
    }
    let left = lines.iter().map(|l| l.x0).fold(f32::MAX, f32::min);
    let right = lines.iter().map(|l| l.x1).fold(f32::MIN, f32::max);
    let width = right - left;
    if width <= 0.0 {
        return lines;
    }
    let em = median(lines.iter().map(|l| l.size).collect()).max(1.0);
    // Narrow lines are the candidates for columns; the gutters are where none of them reaches.
    // Lines in the top and bottom bands (a running header or footer that step 2 kept, centred
    // across the gutter) do not decide the columns.
    let in_band = |l: &Line| height > 0.0 && (l.y > height * 0.90 || l.y < height * 0.10);
    let narrow: Vec<&Line> = lines
        .iter()
        .filter(|l| l.x1 - l.x0 < width * 0.6 && !in_band(l))
        .collect();
    let gutters = gutters(&narrow, left, right, em);
    if gutters.is_empty() {
        return lines;
    }
    let column_of = |l: &Line| -> Option<usize> {
        let mut lo = left - 1.0;
        for (i, &(g0, g1)) in gutters.iter().enumerate() {
            if l.x0 >= lo && l.x1 <= g1 {
                return (l.x1 <= g0 + 0.5 * em).then_some(i);
            }
            lo = g0;
        }
        (l.x0 >= lo).then_some(gutters.len())
    };
    // Enough lines on both sides of every gutter, or it is no column layout.
    let mut per_column = vec![0usize; gutters.len() + 1];
    for l in &lines {
        if let Some(c) = column_of(l) {
            per_column[c] += 1;
        }
    }
    // And columns of prose: each holds lines that are wide for a column. A table's cells are
    // narrow, and a table read column by column would lose its rows.
    let mut wide = vec![0usize; gutters.len() + 1];
    for l in &lines {
        if let Some(c) = column_of(l)
            && l.x1 - l.x0 >= width * 0.25
        {
            wide[c] += 1;
        }
    }
    if per_column.iter().any(|&n| n < 3) || wide.iter().any(|&n| n < 3) {
        return lines;
    }
    let mut sorted = lines;
    sorted.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x0.total_cmp(&b.x0)));
    let mut out = Vec::with_capacity(sorted.len());
    let mut band: Vec<Vec<Line>> = vec![Vec::new(); gutters.len() + 1];
    for line in sorted {
        match column_of(&line) {
            Some(c) => band[c].push(line),
            None => {
                for col in band.iter_mut() {
                    out.append(col);
                }
                out.push(line);
            }
        }
    }
    for col in band.iter_mut() {
        out.append(col);
    }
    out
}

/// Vertical strips at least one em wide, strictly inside the text, that no narrow line covers.
fn gutters(narrow: &[&Line], left: f32, right: f32, em: f32) -> Vec<(f32, f32)> {
    if narrow.len() < 6 {
        return Vec::new();
    }
    let mut spans: Vec<(f32, f32)> = narrow.iter().map(|l| (l.x0, l.x1)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut reach = spans[0].1;
    for &(x0, x1) in &spans[1..] {
        if x0 - reach >= em.max(6.0) && reach > left && x0 < right {
            out.push((reach, x0));
        }
        reach = reach.max(x1);
        // No page has that many columns: this is no column layout (and no quadratic walk).
        if out.len() > MAX_GUTTERS {
            return Vec::new();
        }
    }
    out
}

/// The most column gutters a page may have.
const MAX_GUTTERS: usize = 8;

fn median(mut v: Vec<f32>) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Step 4: the blocks of the document, page by page (`pages[i]` in reading order), with the
/// body size of the whole document and its outline.
pub fn blocks(pages: &[Vec<Line>], outline: &[OutlineEntry]) -> Vec<Vec<Block>> {
    let body = body_size(pages);
    let heading_sizes = heading_sizes(pages, body);
    let outlined = outline.iter().any(|e| e.page.is_some());
    pages
        .iter()
        .enumerate()
        .map(|(i, lines)| {
            let page_outline: Vec<&OutlineEntry> =
                outline.iter().filter(|e| e.page == Some(i + 1)).collect();
            let found = tables(lines);
            if found.is_empty() {
                return page_blocks(lines, body, &heading_sizes, outlined, &page_outline);
            }
            // The lines between tables make blocks as ever; each table stands where its first
            // line stood in reading order.
            let mut table_of = vec![None; lines.len()];
            for (t, table) in found.iter().enumerate() {
                for &m in &table.members {
                    table_of[m] = Some(t);
                }
            }
            let mut rows: Vec<Option<Vec<Vec<String>>>> =
                found.into_iter().map(|t| Some(t.rows)).collect();
            let mut out = Vec::new();
            let mut between: Vec<Line> = Vec::new();
            for (line, table) in lines.iter().zip(&table_of) {
                match table {
                    None => between.push(line.clone()),
                    Some(t) => {
                        // Written once, where its first line stands.
                        let Some(rows) = rows[*t].take() else {
                            continue;
                        };
                        let before = std::mem::take(&mut between);
                        out.extend(page_blocks(
                            &before,
                            body,
                            &heading_sizes,
                            outlined,
                            &page_outline,
                        ));
                        out.push(Block::Table(rows));
                    }
                }
            }
            out.extend(page_blocks(
                &between,
                body,
                &heading_sizes,
                outlined,
                &page_outline,
            ));
            out
        })
        .collect()
}

/// A table found on a page: the indices of its lines and its rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundTable {
    /// The lines it is made of (indices into the page's lines).
    pub members: Vec<usize>,
    /// Its rows, top first, each with one cell per column (empty where the row has none).
    pub rows: Vec<Vec<String>>,
}

/// The tables among a page's lines (see the module docs, step 4).
pub fn tables(lines: &[Line]) -> Vec<FoundTable> {
    if lines.len() < 6 {
        return Vec::new();
    }
    let em = median(lines.iter().map(|l| l.size).collect()).max(1.0);
    // Rows: lines on one baseline, top first, cells left to right.
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by(|&a, &b| {
        lines[b]
            .y
            .total_cmp(&lines[a].y)
            .then(lines[a].x0.total_cmp(&lines[b].x0))
    });
    let mut rows: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match rows.last_mut() {
            Some(row) if (lines[row[0]].y - lines[i].y).abs() <= 0.4 * em => row.push(i),
            _ => rows.push(vec![i]),
        }
    }
    for row in &mut rows {
        row.sort_by(|&a, &b| lines[a].x0.total_cmp(&lines[b].x0));
    }
    let mut out = Vec::new();
    let mut r = 0;
    while r < rows.len() {
        // The longest run of rows of several cells, each close below the one before.
        let mut end = r;
        while end < rows.len()
            && rows[end].len() >= 2
            && (end == r || lines[rows[end - 1][0]].y - lines[rows[end][0]].y <= 3.0 * em)
        {
            end += 1;
        }
        if end - r >= 3
            && let Some(table) = table_of(lines, &rows[r..end])
        {
            out.push(table);
            r = end;
        } else {
            r = end.max(r + 1);
        }
    }
    out
}

/// The table `rows` make, when their cells are short and fall in columns.
fn table_of(lines: &[Line], rows: &[Vec<usize>]) -> Option<FoundTable> {
    let cells: Vec<usize> = rows.iter().flatten().copied().collect();
    // Cells are short: prose set in columns has long lines.
    let mut lengths: Vec<usize> = cells
        .iter()
        .map(|&c| lines[c].text.chars().count())
        .collect();
    lengths.sort_unstable();
    let median_chars = lengths[lengths.len() / 2];
    // Column bands: the union of overlapping cell spans.
    let mut spans: Vec<(f32, f32)> = cells.iter().map(|&c| (lines[c].x0, lines[c].x1)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut bands: Vec<(f32, f32)> = Vec::new();
    for (x0, x1) in spans {
        match bands.last_mut() {
            Some(band) if x0 < band.1 => band.1 = band.1.max(x1),
            _ => bands.push((x0, x1)),
        }
    }
    let short_enough = if bands.len() == 2 { 10 } else { 16 };
    if bands.len() < 2 || median_chars > short_enough {
        return None;
    }
    let band_of = |c: usize| {
        bands
            .iter()
            .position(|b| lines[c].x0 >= b.0 && lines[c].x1 <= b.1)
    };
    let mut out_rows = Vec::with_capacity(rows.len());
    for row in rows {
        let mut cells = vec![String::new(); bands.len()];
        for &c in row {
            let slot = band_of(c)?;
            if !cells[slot].is_empty() {
                return None;
            }
            cells[slot] = lines[c].text.trim().to_string();
        }
        out_rows.push(cells);
    }
    // Every column holds a cell in at least half the rows: a stray line is no column.
    for col in 0..bands.len() {
        let filled = out_rows.iter().filter(|r| !r[col].is_empty()).count();
        if filled * 2 < out_rows.len() {
            return None;
        }
    }
    Some(FoundTable {
        members: cells,
        rows: out_rows,
    })
}

fn body_size(pages: &[Vec<Line>]) -> f32 {
    let mut weights: Vec<(f32, usize)> = Vec::new();
    for l in pages.iter().flatten() {
        count_size(&mut weights, l.size, l.text.chars().count());
    }
    weights
        .iter()
        .max_by_key(|(_, c)| *c)
        .map(|(s, _)| *s)
        .unwrap_or(10.0)
}

/// The sizes larger than the body's that short lines use, largest first: level 1, 2, ….
fn heading_sizes(pages: &[Vec<Line>], body: f32) -> Vec<f32> {
    let mut sizes: Vec<f32> = Vec::new();
    for l in pages.iter().flatten() {
        if l.size >= body * 1.15
            && l.text.chars().count() <= 80
            && !sizes.iter().any(|s| (s - l.size).abs() < 0.5)
        {
            sizes.push(l.size);
        }
    }
    sizes.sort_by(|a, b| b.total_cmp(a));
    sizes.truncate(6);
    sizes
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn page_blocks(
    lines: &[Line],
    body: f32,
    heading_sizes: &[f32],
    outlined: bool,
    outline: &[&OutlineEntry],
) -> Vec<Block> {
    let mut out = Vec::new();
    let mut para: Vec<&Line> = Vec::new();
    // How far lines starting at one left edge reach: a line that far is full, and its
    // paragraph goes on in the next column when it does not close a sentence.
    // Left edges in 2-unit buckets (a hash map: a page of a line per left edge stays linear).
    let bucket = |x: f32| (x / 2.0).round() as i64;
    let mut reach: std::collections::HashMap<i64, f32> = std::collections::HashMap::new();
    for l in lines {
        let r = reach.entry(bucket(l.x0)).or_insert(l.x1);
        *r = r.max(l.x1);
    }
    let full = |l: &Line| {
        reach
            .get(&bucket(l.x0))
            .is_some_and(|x1| l.x1 >= x1 - l.size * 1.5)
    };
    let titles: Vec<(String, &OutlineEntry)> = outline
        .iter()
        .map(|e| (squash(&e.title), *e))
        .filter(|(t, _)| !t.is_empty())
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        // A heading: an outline entry of this page, written on one or two lines.
        let mut heading: Option<(usize, String, usize)> = None;
        if outlined {
            let one = squash(&line.text);
            let two = lines
                .get(i + 1)
                .map(|n| format!("{one}{}", squash(&n.text)));
            for (t, e) in &titles {
                let t = t.as_str();
                if t == one {
                    heading = Some((e.level, e.title.clone(), 1));
                    break;
                }
                if two.as_deref() == Some(t) {
                    heading = Some((e.level, e.title.clone(), 2));
                    break;
                }
            }
        } else if line.size >= body * 1.15
            && let Some(level) = heading_sizes
                .iter()
                .position(|s| (s - line.size).abs() < 0.5)
        {
            // Consecutive lines of the same heading size are one wrapped heading.
            let mut n = 1;
            let mut text = line.text.clone();
            while let Some(next) = lines.get(i + n) {
                let close = (line.y - next.y).abs() < line.size * 2.0;
                if (next.size - line.size).abs() < 0.5 && close && n < 3 {
                    text = join_two(&text, &next.text);
                    n += 1;
                } else {
                    break;
                }
            }
            heading = Some((level + 1, text, n));
        }
        if let Some((level, text, n)) = heading {
            flush(&mut out, &mut para);
            out.push(Block::Heading(level, text.trim().to_string()));
            i += n;
            continue;
        }
        if let Some(prev) = para.last()
            && starts_paragraph(prev, line, body)
            && !goes_on_in_next_column(prev, line, full(prev))
        {
            flush(&mut out, &mut para);
        }
        para.push(line);
        i += 1;
    }
    flush(&mut out, &mut para);
    out
}

/// True when `line` tops another column and `prev`, a full line that closes no sentence,
/// ended the column before: one paragraph running over the column break.
fn goes_on_in_next_column(prev: &Line, line: &Line, prev_full: bool) -> bool {
    prev_full
        && line.y > prev.y
        && line.x0 > prev.x1
        && (prev.size - line.size).abs() < 0.5
        && !closes_sentence(&prev.text)
}

fn closes_sentence(text: &str) -> bool {
    text.trim_end()
        .ends_with(['。', '！', '？', '：', '.', '!', '?', ':', '；', '”', '」'])
}

/// True when `line` begins a new paragraph after `prev`.
fn starts_paragraph(prev: &Line, line: &Line, body: f32) -> bool {
    let em = prev.size.max(line.size).max(1.0);
    let pitch = prev.y - line.y;
    // Not the next line down: another column, a jump, or a line above.
    if !(0.0..=em * 1.9).contains(&pitch) {
        return true;
    }
    if (prev.size - line.size).abs() > 0.5 {
        return true;
    }
    // A first-line indent.
    if line.x0 > prev.x0 + em * 1.2 && line.x0 - prev.x0 < em * 6.0 {
        return true;
    }
    // A short line that closes a sentence ends its paragraph.
    let _ = body;
    closes_sentence(&prev.text) && prev.x1 < line.x1 - em * 2.0
}

fn flush(out: &mut Vec<Block>, para: &mut Vec<&Line>) {
    if para.is_empty() {
        return;
    }
    // Chinese text wraps anywhere, inside a Latin word or a number too: in a paragraph mostly
    // of CJK characters, no line break is a space.
    let (cjk, all) = para
        .iter()
        .flat_map(|l| l.text.chars())
        .filter(|c| !c.is_whitespace())
        .fold((0usize, 0usize), |(k, n), c| {
            (k + usize::from(is_cjk(c)), n + 1)
        });
    let wraps_anywhere = cjk * 2 > all;
    let mut text = String::new();
    for l in para.drain(..) {
        text = if text.is_empty() {
            l.text.clone()
        } else if wraps_anywhere {
            // Except between two Latin words or numbers: Chinese typesetting breaks those at
            // their space ("Microsoft" / "Office").
            let (a, b) = (text.trim_end(), l.text.trim_start());
            let ascii_end = a.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
            let ascii_start = b.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
            if ascii_end && ascii_start {
                format!("{a} {b}")
            } else {
                format!("{a}{b}")
            }
        } else {
            join_two(&text, &l.text)
        };
    }
    out.push(Block::Paragraph(text));
}

/// Step 5: two consecutive lines of one paragraph as one text.
pub fn join(lines: &[&str]) -> String {
    lines.iter().fold(String::new(), |acc, l| {
        if acc.is_empty() {
            l.to_string()
        } else {
            join_two(&acc, l)
        }
    })
}

fn join_two(a: &str, b: &str) -> String {
    let a = a.trim_end();
    let b = b.trim_start();
    let mut out = String::with_capacity(a.len() + b.len() + 1);
    // "configu-" + "ration": a word hyphenated at the line end.
    if let Some(stem) = a.strip_suffix(['-', '\u{ad}', '\u{2010}'])
        && stem
            .chars()
            .last()
            .is_some_and(|c| c.is_alphabetic() && !is_cjk(c))
        && b.chars().next().is_some_and(|c| c.is_lowercase())
    {
        out.push_str(stem);
        out.push_str(b);
        return out;
    }
    out.push_str(a);
    if !(ends_cjk(a) || starts_cjk(b)) {
        out.push(' ');
    }
    out.push_str(b);
    out
}

fn ends_cjk(text: &str) -> bool {
    text.chars().last().is_some_and(is_cjk)
}

fn starts_cjk(text: &str) -> bool {
    text.chars().next().is_some_and(is_cjk)
}

/// CJK ideographs, kana, hangul, and the full-width and CJK punctuation between them.
fn is_cjk(c: char) -> bool {
    zhiku_text::is_cjk(c)
        || matches!(c as u32,
            0x3000..=0x303F   // CJK symbols and punctuation
            | 0xFF00..=0xFFEF // full-width forms
            | 0x2018..=0x201F // curly quotes, set full-width in CJK text
            | 0x2026          // …
            | 0x2014          // —
            | 0x00B7) // ·
}

/// Normalises one glyph's text: compatibility forms that fonts map glyphs to (Kangxi radicals
/// for ideographs, CJK compatibility ideographs, Latin ligatures) become the ordinary
/// characters; full-width punctuation stays as it is. Control characters are dropped.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let code = c as u32;
        if matches!(code, 0x2F00..=0x2FDF | 0xF900..=0xFAFF | 0xFB00..=0xFB06 | 0x2E80..=0x2EFF) {
            out.extend(c.to_string().nfkc());
        } else if c == '\u{a0}' {
            out.push(' ');
        } else if !c.is_control() || c == '\t' {
            out.push(if c == '\t' { ' ' } else { c });
        }
    }
    out
}

/// The text of `pages` (each its height and lines; `frames[i]` the width of page `i`, in the
/// same units, and the quarter turns that made its picture upright, 0 for a text page): running headers and footers dropped, reading order across columns,
/// paragraphs, tables and headings (from `outline` when it has entries), one page of output
/// per page; with the box of every line the text holds ([`LineBox`]). Text-layer and OCR'd
/// pages alike.
pub(crate) fn lay_out(
    mut pages: Vec<(f32, Vec<Line>)>,
    frames: &[(f32, u16)],
    outline: &[OutlineEntry],
    limits: &Limits,
) -> Result<Laid> {
    drop_repeated_edges(&mut pages);
    let mut ordered: Vec<Vec<Line>> = Vec::with_capacity(pages.len());
    let mut heights = Vec::with_capacity(pages.len());
    for (height, lines) in pages {
        limits.check_time()?;
        heights.push(height);
        ordered.push(reading_order(lines, height));
    }
    limits.check_time()?;
    let blocks = blocks(&ordered, outline);
    let mut out = TextBuilder::new(limits);
    for page in &blocks {
        out.page()?;
        for block in page {
            match block {
                Block::Heading(level, text) => out.heading(*level, text)?,
                Block::Paragraph(text) => out.paragraph(text)?,
                Block::Table(rows) => {
                    if let Some(table) = pipe_table(rows) {
                        out.paragraph(&table)?;
                    }
                }
            }
        }
    }
    let page_count = out.pages();
    let starts = out.page_starts().to_vec();
    let text = out.finish();
    limits.check_time()?;
    let mut boxes = Vec::new();
    for (i, lines) in ordered.iter().enumerate() {
        let from = starts.get(i).copied().unwrap_or(text.len()).min(text.len());
        let to = starts
            .get(i + 1)
            .copied()
            .unwrap_or(text.len())
            .min(text.len());
        let (width, turn) = frames.get(i).copied().unwrap_or((0.0, 0));
        let page = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let found = line_boxes(&text, from..to, page, (width, heights[i]), lines);
        boxes.extend(found.into_iter().map(|b| LineBox { turn, ..b }));
    }
    Ok(Laid {
        text,
        pages: page_count,
        boxes,
    })
}

/// What [`lay_out`] gives.
#[derive(Debug)]
pub(crate) struct Laid {
    /// The text.
    pub text: String,
    /// Its pages.
    pub pages: u32,
    /// Where its lines stand.
    pub boxes: Vec<LineBox>,
}

/// The boxes of `lines` (of a page of `size`, width and height) found in `text[bytes]`, the
/// page's text: each line is looked for, ignoring whitespace (and a hyphen at its end, which a
/// rejoined word lost), after the line found before it, else from the page's start.
fn line_boxes(
    text: &str,
    bytes: std::ops::Range<usize>,
    page: u32,
    (width, height): (f32, f32),
    lines: &[Line],
) -> Vec<LineBox> {
    if width <= 0.0 || height <= 0.0 || !text.is_char_boundary(bytes.start) {
        return Vec::new();
    }
    let first_char = text[..bytes.start].chars().count();
    // The page's text without whitespace, and the character of the text each byte of it is.
    let mut squashed = String::new();
    let mut char_at: Vec<usize> = Vec::new();
    for (n, c) in text[bytes].chars().enumerate() {
        if !c.is_whitespace() {
            squashed.push(c);
            char_at.extend(std::iter::repeat_n(first_char + n, c.len_utf8()));
        }
    }
    let mut out = Vec::new();
    let mut cursor = 0;
    for line in lines {
        let wanted: String = line.text.chars().filter(|c| !c.is_whitespace()).collect();
        let wanted = wanted.trim_end_matches(['-', '\u{ad}', '\u{2010}']);
        if wanted.chars().count() < 2 {
            continue;
        }
        let found = squashed[cursor..]
            .find(wanted)
            .map(|at| at + cursor)
            .or_else(|| squashed.find(wanted));
        let Some(at) = found else { continue };
        let last = at + wanted.len() - 1;
        cursor = at + wanted.len();
        // Four decimals: a tenth of a pixel on a 1,000-pixel page, and short records.
        let frac = |v: f32, of: f32| ((v / of).clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
        let (top, bottom) = (line.y + line.size, line.y - 0.25 * line.size);
        let b = LineBox {
            start: char_at[at],
            end: char_at[last] + 1,
            page,
            x0: frac(line.x0, width),
            y0: 1.0 - frac(top, height),
            x1: frac(line.x1, width),
            y1: 1.0 - frac(bottom, height),
            turn: 0,
            confidence: line
                .confidence
                .map(|c| (c.clamp(0.0, 1.0) * 1000.0).round() / 1000.0),
        };
        if b.x0 < b.x1 && b.y0 < b.y1 {
            out.push(b);
        }
    }
    out.sort_by_key(|b| b.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyphs(text: &str, x: f32, y: f32, size: f32) -> Vec<Glyph> {
        let mut out = Vec::new();
        let mut x = x;
        for c in text.chars() {
            let w = if is_cjk(c) { size } else { size * 0.5 };
            out.push(Glyph {
                text: c.to_string(),
                x0: x,
                x1: x + w,
                y,
                size,
            });
            x += w;
        }
        out
    }

    #[test]
    fn chinese_lines_join_without_spaces_and_hyphens_rejoin() {
        assert_eq!(
            join(&["向量检索把", "文本变成向量。"]),
            "向量检索把文本变成向量。"
        );
        assert_eq!(
            join(&["the configu-", "ration file"]),
            "the configuration file"
        );
        assert_eq!(join(&["a well-", "Known"]), "a well- Known");
        assert_eq!(join(&["plain", "words"]), "plain words");
        assert_eq!(join(&["使用 VPN", "登录。"]), "使用 VPN登录。");
    }

    #[test]
    fn gaps_become_spaces_between_words_only() {
        let mut g = glyphs("hello", 0.0, 700.0, 10.0);
        g.extend(glyphs("world", 28.0, 700.0, 10.0));
        g.extend(glyphs("中文", 60.0, 700.0, 10.0));
        g.extend(glyphs("文字", 83.0, 700.0, 10.0));
        let page = PageText {
            height: 800.0,
            glyphs: g,
        };
        let l = lines(&page);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].text, "hello world 中文文字");
    }

    #[test]
    fn two_columns_are_read_one_after_the_other() {
        let mut g = glyphs(
            "标题横跨两栏的一行文字很长很长很长很长很长",
            50.0,
            760.0,
            10.0,
        );
        for i in 0..8 {
            let y = 740.0 - i as f32 * 14.0;
            g.extend(glyphs(&format!("左栏第{i}行文字"), 50.0, y, 10.0));
            g.extend(glyphs(&format!("右栏第{i}行文字"), 200.0, y, 10.0));
        }
        let page = PageText {
            height: 800.0,
            glyphs: g,
        };
        let ordered = reading_order(lines(&page), 800.0);
        let texts: Vec<&str> = ordered.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[0], "标题横跨两栏的一行文字很长很长很长很长很长");
        assert_eq!(texts[1], "左栏第0行文字");
        assert_eq!(texts[8], "左栏第7行文字");
        assert_eq!(texts[9], "右栏第0行文字");
    }

    #[test]
    fn running_headers_and_page_numbers_are_dropped() {
        let page = |n: usize| {
            let mut g = glyphs("员工手册 · 内部资料", 50.0, 780.0, 9.0);
            g.extend(glyphs(&format!("正文第{n}页的内容"), 50.0, 400.0, 10.0));
            g.extend(glyphs(&format!("第 {n} 页"), 280.0, 30.0, 9.0));
            (
                800.0,
                lines(&PageText {
                    height: 800.0,
                    glyphs: g,
                }),
            )
        };
        let mut pages = vec![page(1), page(2), page(3)];
        drop_repeated_edges(&mut pages);
        for (i, (_, lines)) in pages.iter().enumerate() {
            let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            assert_eq!(texts, [format!("正文第{}页的内容", i + 1)]);
        }
    }

    #[test]
    fn page_number_footers_of_every_common_form_are_recognised() {
        for footer in [
            "12",
            "- 12 -",
            "第 12 页",
            "第 9 页 共 29 页",
            "12 / 30",
            "Page 12",
            "Page 12 of 30",
            "p. 3",
            "— 4 —",
        ] {
            assert!(is_page_number(footer), "{footer}");
        }
        for text in ["第 12 条", "共 30 人", "12 apples", "Page one", "Profile 3"] {
            assert!(!is_page_number(text), "{text}");
        }
        // One- and two-digit page numbers are one running footer.
        let page = |n: usize| {
            let mut g = glyphs("正文", 50.0, 400.0, 10.0);
            g.extend(glyphs(&format!("文档 {n} 共 20 份"), 280.0, 30.0, 9.0));
            (
                800.0,
                lines(&PageText {
                    height: 800.0,
                    glyphs: g,
                }),
            )
        };
        let mut pages: Vec<_> = (8..=13).map(page).collect();
        drop_repeated_edges(&mut pages);
        assert!(pages.iter().all(|(_, l)| l.len() == 1), "{pages:?}");
    }

    #[test]
    fn a_footer_across_the_gutter_does_not_hide_the_columns() {
        let mut g = Vec::new();
        for i in 0..8 {
            let y = 740.0 - i as f32 * 14.0;
            g.extend(glyphs(&format!("左栏第{i}行文字"), 50.0, y, 10.0));
            g.extend(glyphs(&format!("右栏第{i}行文字"), 200.0, y, 10.0));
        }
        g.extend(glyphs(
            "本文件仅供内部使用请勿外传谢谢合作",
            100.0,
            30.0,
            9.0,
        ));
        let ordered = reading_order(
            lines(&PageText {
                height: 800.0,
                glyphs: g,
            }),
            800.0,
        );
        let texts: Vec<&str> = ordered.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[7], "左栏第7行文字", "{texts:?}");
        assert_eq!(texts[8], "右栏第0行文字", "{texts:?}");
    }

    #[test]
    fn a_table_is_read_by_rows_not_as_columns() {
        let mut g = Vec::new();
        for (i, row) in [
            ["Region", "Sales", "Growth"],
            ["North", "120", "5%"],
            ["South", "98", "3%"],
            ["East", "143", "7%"],
        ]
        .iter()
        .enumerate()
        {
            let y = 700.0 - i as f32 * 14.0;
            for (j, cell) in row.iter().enumerate() {
                g.extend(glyphs(cell, 60.0 + j as f32 * 120.0, y, 10.0));
            }
        }
        let ordered = reading_order(
            lines(&PageText {
                height: 800.0,
                glyphs: g,
            }),
            800.0,
        );
        let texts: Vec<&str> = ordered.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(&texts[..3], ["Region", "Sales", "Growth"], "{texts:?}");
    }

    /// A page with a sentence, a table of four rows and a closing sentence: the table is one
    /// block of rows in its place, its header first, written as a pipe table.
    #[test]
    fn a_table_becomes_a_block_of_rows_with_its_header_first() {
        let mut g = glyphs("下表列出各类设备的保修期。", 60.0, 740.0, 10.0);
        for (i, row) in [
            ["设备类别", "保修期", "响应"],
            ["服务器", "三年", "4 小时"],
            ["交换机", "一年", "次日"],
            ["打印机", "六个月", "次日"],
        ]
        .iter()
        .enumerate()
        {
            let y = 710.0 - i as f32 * 16.0;
            for (j, cell) in row.iter().enumerate() {
                g.extend(glyphs(cell, 60.0 + j as f32 * 110.0, y, 10.0));
            }
        }
        g.extend(glyphs("人为损坏不在保修范围内。", 60.0, 630.0, 10.0));
        let page = lines(&PageText {
            height: 800.0,
            glyphs: g,
        });
        let found = tables(&page);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rows[0], ["设备类别", "保修期", "响应"]);
        assert_eq!(found[0].rows[3], ["打印机", "六个月", "次日"]);
        let laid = lay_out(
            vec![(800.0, page)],
            &[(600.0, 0)],
            &[],
            &Limits::for_tests(),
        )
        .unwrap();
        let text = laid.text;
        assert_eq!(
            text,
            "下表列出各类设备的保修期。\n\n| 设备类别 | 保修期 | 响应 |\n| --- | --- | --- |\n\
             | 服务器 | 三年 | 4 小时 |\n| 交换机 | 一年 | 次日 |\n| 打印机 | 六个月 | 次日 |\n\n\
             人为损坏不在保修范围内。\n"
        );
        // Every line has its box: the closing sentence's characters, and where it stands.
        let chars: Vec<char> = text.chars().collect();
        let span = |b: &LineBox| chars[b.start..b.end].iter().collect::<String>();
        assert_eq!(laid.boxes.len(), 2 + 12, "{:?}", laid.boxes);
        let last = laid.boxes.last().unwrap();
        assert_eq!(span(last), "人为损坏不在保修范围内。");
        assert_eq!((last.page, last.x0), (1, 0.1));
        assert!(
            (last.y0 - 0.2).abs() < 1e-4 && last.y1 > last.y0 && last.y1 < 0.22,
            "{last:?}"
        );
        let cell = laid.boxes.iter().find(|b| span(b) == "六个月").unwrap();
        assert!((cell.x0 - 170.0 / 600.0).abs() < 1e-4, "{cell:?}");
    }

    /// Prose set in two columns is no table, nor are rows whose cells do not line up.
    #[test]
    fn prose_in_two_columns_and_ragged_rows_are_no_table() {
        let mut g = Vec::new();
        for i in 0..8 {
            let y = 700.0 - i as f32 * 14.0;
            g.extend(glyphs("检索增强生成把检索到的段落交给模型", 50.0, y, 10.0));
            g.extend(glyphs("向量检索按语义相似度查找最近的记录", 320.0, y, 10.0));
        }
        let page = lines(&PageText {
            height: 800.0,
            glyphs: g,
        });
        assert_eq!(tables(&page), Vec::new());
        let mut g = Vec::new();
        for i in 0..6 {
            let y = 700.0 - i as f32 * 14.0;
            g.extend(glyphs("甲", 50.0 + i as f32 * 37.0, y, 10.0));
            g.extend(glyphs("乙", 300.0 - i as f32 * 41.0, y, 10.0));
        }
        let page = lines(&PageText {
            height: 800.0,
            glyphs: g,
        });
        assert_eq!(tables(&page), Vec::new());
    }

    #[test]
    fn content_in_the_edge_bands_stays_unless_it_is_a_lone_running_line() {
        let page = |n: usize| {
            let mut g = glyphs("Item", 50.0, 60.0, 10.0);
            g.extend(glyphs("19", 200.0, 60.0, 10.0)); // a table cell at the foot of the page
            let last = [
                "10 of the 12 respondents agreed",
                "so the survey closed early",
            ][n - 1];
            g.extend(glyphs(last, 50.0, 40.0, 10.0));
            g.extend(glyphs(&format!("{n}"), 280.0, 20.0, 9.0)); // the page number
            (
                800.0,
                lines(&PageText {
                    height: 800.0,
                    glyphs: g,
                }),
            )
        };
        let mut pages = vec![page(1), page(2)];
        drop_repeated_edges(&mut pages);
        let texts: Vec<&str> = pages[0].1.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["Item", "19", "10 of the 12 respondents agreed"]);
    }

    #[test]
    fn latin_words_keep_their_space_across_a_chinese_line_break() {
        let mut g = glyphs("请先安装微软的办公软件 Microsoft", 50.0, 700.0, 10.0);
        g.extend(glyphs("Office 再打开这份文件阅读。", 50.0, 686.0, 10.0));
        let l = lines(&PageText {
            height: 800.0,
            glyphs: g,
        });
        let b = blocks(std::slice::from_ref(&l), &[]);
        assert_eq!(
            b[0],
            [Block::Paragraph(
                "请先安装微软的办公软件 Microsoft Office 再打开这份文件阅读。".into()
            )]
        );
    }

    #[test]
    fn larger_lines_are_headings_and_outline_entries_win() {
        let mut g = glyphs("第一章 总则", 50.0, 700.0, 18.0);
        g.extend(glyphs("正文一行。", 50.0, 670.0, 10.0));
        g.extend(glyphs("1.1 适用范围", 50.0, 640.0, 14.0));
        g.extend(glyphs("正文两行", 50.0, 610.0, 10.0));
        g.extend(glyphs("接着写。", 50.0, 596.0, 10.0));
        let l = lines(&PageText {
            height: 800.0,
            glyphs: g,
        });
        let b = blocks(std::slice::from_ref(&l), &[]);
        assert_eq!(
            b[0],
            [
                Block::Heading(1, "第一章 总则".into()),
                Block::Paragraph("正文一行。".into()),
                Block::Heading(2, "1.1 适用范围".into()),
                Block::Paragraph("正文两行接着写。".into()),
            ]
        );
        let outline = [OutlineEntry {
            title: "1.1 适用范围".into(),
            level: 1,
            page: Some(1),
        }];
        let b = blocks(&[l], &outline);
        assert_eq!(b[0][2], Block::Heading(1, "1.1 适用范围".into()));
    }

    #[test]
    fn compatibility_forms_become_ordinary_characters() {
        assert_eq!(normalise("⼈⺠"), "人⺠");
        assert_eq!(normalise("ﬁle，。"), "file，。");
    }
}
