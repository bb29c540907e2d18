//! Reading order of the lines of a page.
//!
//! A recursive XY-cut: a region is split at a vertical gutter (an x-interval no line covers,
//! at least one median line height wide) into columns read left to right; otherwise at
//! horizontal gaps into bands read top to bottom, and a band without a gutter is one row,
//! read left to right. Consecutive bands that share a gutter are regrouped first, so a
//! two-column body below a full-width title is read column by column even when the two
//! columns' rows line up; a title or footer across the gutter starts a new group.
//!
//! Rows: lines whose tops are within [`SAME_ROW`] pixels of the previous are one row.

/// Lines whose tops are this close (pixels) are one row.
const SAME_ROW: f32 = 10.0;

/// A line's axis-aligned box: left, top, right, bottom.
pub(crate) type Bounds = [f32; 4];

#[derive(Debug, Clone, Copy)]
struct BBox {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
}

/// The permutation of `lines` (their boxes on the upright page) in reading order.
pub(crate) fn reading_order(lines: &[Bounds]) -> Vec<usize> {
    let boxes: Vec<BBox> = lines
        .iter()
        .map(|&[x0, y0, x1, y1]| BBox { x0, y0, x1, y1 })
        .collect();
    let all: Vec<usize> = (0..lines.len()).collect();
    let mut heights: Vec<f32> = boxes.iter().map(|b| b.y1 - b.y0).collect();
    heights.sort_by(f32::total_cmp);
    let min_gutter = heights
        .get(heights.len() / 2)
        .copied()
        .unwrap_or(0.0)
        .max(4.0);
    let mut out = Vec::with_capacity(lines.len());
    xy_cut(&boxes, all, min_gutter, &mut out);
    out
}

/// Row order on the top-left corner of each box.
fn rows(boxes: &[BBox], mut ids: Vec<usize>) -> Vec<usize> {
    ids.sort_by(|&a, &b| boxes[a].y0.total_cmp(&boxes[b].y0).then(a.cmp(&b)));
    let mut row = 0;
    let mut keyed: Vec<(usize, f32, usize)> = Vec::with_capacity(ids.len());
    for (k, &i) in ids.iter().enumerate() {
        if k > 0 && boxes[i].y0 - boxes[ids[k - 1]].y0 >= SAME_ROW {
            row += 1;
        }
        keyed.push((row, boxes[i].x0, i));
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    keyed.into_iter().map(|k| k.2).collect()
}

/// Free intervals along one axis: the gaps between the merged spans of `ids`, at least
/// `min_gap` long. `span` gives a box's extent on that axis.
fn gaps(
    boxes: &[BBox],
    ids: &[usize],
    span: impl Fn(&BBox) -> (f32, f32),
    min_gap: f32,
) -> Vec<(f32, f32)> {
    let mut spans: Vec<(f32, f32)> = ids.iter().map(|&i| span(&boxes[i])).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut reach = f32::MIN;
    for (lo, hi) in spans {
        if reach != f32::MIN && lo - reach >= min_gap {
            out.push((reach, lo));
        }
        reach = reach.max(hi);
    }
    out
}

fn xy_cut(boxes: &[BBox], ids: Vec<usize>, min_gutter: f32, out: &mut Vec<usize>) {
    if ids.len() <= 1 {
        out.extend(ids);
        return;
    }
    // Columns first: split at every vertical gutter.
    let cols = gaps(boxes, &ids, |b| (b.x0, b.x1), min_gutter);
    if !cols.is_empty() {
        for part in split(boxes, &ids, &cols, |b| b.x0) {
            xy_cut(boxes, part, min_gutter, out);
        }
        return;
    }
    // Then bands: split at horizontal gaps (any gap between lines counts).
    let bands_gaps = gaps(boxes, &ids, |b| (b.y0, b.y1), 0.0);
    if bands_gaps.is_empty() {
        out.extend(rows(boxes, ids));
        return;
    }
    let bands = split(boxes, &ids, &bands_gaps, |b| b.y0);
    // Regroup consecutive bands that together still have a vertical gutter (a column layout
    // whose rows line up); each group is then cut into columns by the recursion.
    let mut group: Vec<usize> = Vec::new();
    for band in bands {
        // Merge only into a group that already has columns, and only if part of the group's
        // widest gutter stays open with the band added: a title or footer across the gutter
        // starts a new group.
        let col_gaps = |ids: &[usize]| gaps(boxes, ids, |b| (b.x0, b.x1), min_gutter);
        let widest = col_gaps(&group)
            .into_iter()
            .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)));
        let joined: Vec<usize> = group.iter().chain(&band).copied().collect();
        let keeps =
            widest.is_some_and(|(g0, g1)| col_gaps(&joined).iter().any(|&(a, b)| a < g1 && b > g0));
        if keeps {
            group.extend(band);
        } else {
            if !group.is_empty() {
                flush(boxes, std::mem::take(&mut group), min_gutter, out);
            }
            group = band;
        }
    }
    flush(boxes, group, min_gutter, out);
}

fn group_has_gutter(boxes: &[BBox], ids: &[usize], min_gutter: f32) -> bool {
    !gaps(boxes, ids, |b| (b.x0, b.x1), min_gutter).is_empty()
}

/// A group with a gutter is cut again (into columns); a plain band is one row of text.
fn flush(boxes: &[BBox], ids: Vec<usize>, min_gutter: f32, out: &mut Vec<usize>) {
    if group_has_gutter(boxes, &ids, min_gutter) {
        xy_cut(boxes, ids, min_gutter, out);
    } else {
        out.extend(rows(boxes, ids));
    }
}

/// Partitions `ids` at the given cut intervals by each box's start coordinate.
fn split(
    boxes: &[BBox],
    ids: &[usize],
    cuts: &[(f32, f32)],
    start: impl Fn(&BBox) -> f32,
) -> Vec<Vec<usize>> {
    let mut parts = vec![Vec::new(); cuts.len() + 1];
    for &i in ids {
        let s = start(&boxes[i]);
        let k = cuts.iter().take_while(|c| s >= c.1).count();
        parts[k].push(i);
    }
    parts.retain(|p| !p.is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(x0: f32, y0: f32, x1: f32, y1: f32) -> Bounds {
        [x0, y0, x1, y1]
    }

    #[test]
    fn two_columns_under_a_title_read_column_by_column() {
        let lines = vec![
            b(300.0, 100.0, 1300.0, 150.0), // 0 title, full width
            b(100.0, 300.0, 700.0, 330.0),  // 1 left row 1
            b(900.0, 300.0, 1500.0, 330.0), // 2 right row 1
            b(100.0, 360.0, 650.0, 390.0),  // 3 left row 2
            b(900.0, 360.0, 1400.0, 390.0), // 4 right row 2
            b(100.0, 420.0, 400.0, 450.0),  // 5 left row 3 (short)
            b(650.0, 900.0, 950.0, 930.0),  // 6 footer, centred across the gutter
        ];
        assert_eq!(reading_order(&lines), vec![0, 1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn short_headings_do_not_break_the_columns() {
        let lines = vec![
            b(100.0, 300.0, 250.0, 330.0),  // 0 left heading (short)
            b(900.0, 300.0, 1050.0, 330.0), // 1 right heading (short)
            b(100.0, 360.0, 700.0, 390.0),  // 2 left text
            b(900.0, 360.0, 1500.0, 390.0), // 3 right text
            b(680.0, 900.0, 920.0, 930.0),  // 4 footer across the gutter
        ];
        assert_eq!(reading_order(&lines), vec![0, 2, 1, 3, 4]);
    }

    #[test]
    fn pieces_of_one_line_stay_left_to_right_and_lines_top_to_bottom() {
        let lines = vec![b(400.0, 100.0, 600.0, 130.0), b(100.0, 102.0, 380.0, 131.0)];
        assert_eq!(reading_order(&lines), vec![1, 0]);
        let stacked = vec![
            b(10.0, 200.0, 500.0, 230.0),
            b(10.0, 100.0, 500.0, 130.0),
            b(10.0, 150.0, 480.0, 180.0),
        ];
        assert_eq!(reading_order(&stacked), vec![1, 2, 0]);
        assert!(reading_order(&[]).is_empty());
    }
}
