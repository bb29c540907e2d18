//! The chunker: deterministic, structure-aware windows over a document's content.
//!
//! The algorithm (chunker version [`CHUNKER_VERSION`](crate::CHUNKER_VERSION)):
//!
//! 1. **Sections.** The text is cut before every ATX Markdown heading (`#` to `######`, up to
//!    three spaces of indentation, outside fenced code blocks). Each section knows the headings
//!    above it (its `heading_path`). Text before the first heading is a section with an empty
//!    path. A section with nothing but its heading (or a whitespace-only preamble) joins the
//!    section after it, so a title never forms a chunk of its own.
//! 2. **Units.** A section is cut into paragraphs: a heading line is a unit of its own, and a
//!    paragraph ends after its run of blank lines (blank lines inside a fenced code block do not
//!    end it). Units tile the section.
//! 3. **Pieces.** A unit longer than `max_chars` is cut into sentences: after a run of Chinese
//!    terminators (`。！？；…`), Latin `!?;`, a `.` followed by whitespace, or a line break, plus any
//!    closing quotes and the whitespace that follows. A sentence still longer than `max_chars` is
//!    cut hard: at the last whitespace in the second half of the window when there is one,
//!    otherwise at the last grapheme-cluster boundary. Cuts never split a grapheme cluster
//!    (so never a `\r\n` pair or an emoji sequence).
//!    **Tables** (Markdown pipe tables: a row, a delimiter row such as `| --- | :-: |` with as
//!    many cells, then the rows up to a blank or bar-less line; every extractor writes its
//!    tables this way) are cut by rows instead: the header row with its delimiter row is one
//!    piece, each body row another, and only a row longer than `max_chars` is cut hard.
//! 4. **Windows.** Consecutive pieces of one section are merged greedily while the window,
//!    including the overlap, stays within `max_chars`. Each window after the first of a section
//!    starts with up to `overlap_chars` characters of the previous window (moved forward to a
//!    grapheme boundary and never before the previous window's start). A window that starts
//!    inside a table's rows below its header carries the header rows
//!    ([`Chunk::table_header`]): indexed and shown with it, never part of its content.
//!
//! Invariants (property-tested): `content == text[start..end]` in characters; the chunks cover
//! every character; no chunk exceeds `max_chars`, except a single grapheme cluster longer than
//! `max_chars`, which is kept whole; a chunk that starts inside a table below its header
//! carries that header, and no other chunk carries one; windows inside a table start and end
//! at row boundaries unless a row is longer than `max_chars`; the output is a pure function of the text and the policy;
//! decisions only look ahead a bounded distance, so an edit leaves the IDs of chunks that end
//! more than `2 * max_chars` characters before it unchanged.

use std::sync::Arc;

use unicode_segmentation::UnicodeSegmentation;

use crate::contracts::{Chunk, ChunkingPolicy, Document, LineBox, PageSpan};

/// A window of text produced by [`split`], in character offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// First character (inclusive).
    pub start: usize,
    /// Last character (exclusive).
    pub end: usize,
    /// Headings above the window, outermost first.
    pub heading_path: Vec<String>,
    /// The header rows (header and delimiter row) of the table the window continues, as a
    /// character range of the text, when the window starts inside a table below its header.
    pub table_header: Option<(usize, usize)>,
}

/// Cuts `doc` into chunks according to `policy`.
///
/// In a document with [pages](crate::DocAttributes::page_count) every chunk also learns the pages
/// its text lies on: the page of its first and of its last non-blank character, counting the
/// form feeds before them. Pages do not move a cut, so a chunk that runs over a page break
/// says so (`first < last`) rather than being cut there.
pub fn chunk_document(doc: &Document, policy: &ChunkingPolicy) -> Vec<Chunk> {
    let text = doc.content();
    let spans = split(text, policy);
    let byte_at = char_to_byte_table(text);
    let breaks: Option<Vec<usize>> = doc
        .attributes()
        .page_count
        .map(|_| text.match_indices('\u{c}').map(|(at, _)| at).collect());
    spans
        .into_iter()
        .enumerate()
        .map(|(ordinal, span)| {
            let (from, to) = (byte_at[span.start], byte_at[span.end]);
            let content = text[from..to].to_string();
            let pages = breaks.as_deref().and_then(|b| page_span(&content, from, b));
            let header = span
                .table_header
                .map(|(s, e)| text[byte_at[s]..byte_at[e]].to_string());
            let chunk = Chunk::new(
                doc.id().clone(),
                span.start,
                content,
                span.heading_path,
                u32::try_from(ordinal).unwrap_or(u32::MAX),
                Arc::clone(doc.attributes()),
            );
            let chunk = match header {
                Some(header) => chunk.with_table_header(header),
                None => chunk,
            };
            let chunk = chunk.with_boxes(boxes_from(doc.line_boxes(), span.start, span.end));
            match pages {
                Some(pages) => chunk.with_pages(pages),
                None => chunk,
            }
        })
        .collect()
}

/// The pages of the non-blank text of `content`, which starts at byte `from` of a text whose
/// page breaks (form feeds) are at the byte offsets `breaks`.
fn page_span(content: &str, from: usize, breaks: &[usize]) -> Option<PageSpan> {
    let first = content.find(|c: char| !c.is_whitespace())?;
    let last = content.rfind(|c: char| !c.is_whitespace())?;
    let page_at = |byte: usize| u32::try_from(breaks.partition_point(|&b| b < byte) + 1).ok();
    PageSpan::new(page_at(from + first)?, page_at(from + last)?).ok()
}

/// Cuts `text` into windows according to `policy` (see the module documentation).
pub fn split(text: &str, policy: &ChunkingPolicy) -> Vec<Span> {
    if text.is_empty() {
        return Vec::new();
    }
    let t = Text::new(text);
    let max = policy.max_chars();
    let overlap = policy.overlap_chars();
    let mut out = Vec::new();
    for section in sections(&t) {
        let tables = tables(&t, &section);
        let pieces = pieces(&t, &section, &tables, max);
        pack(&t, &section, &tables, &pieces, max, overlap, &mut out);
    }
    out
}

/// The text as characters, with grapheme-cluster boundaries.
struct Text {
    chars: Vec<char>,
    /// `boundary[i]` is true when a cut before character `i` keeps grapheme clusters whole.
    boundary: Vec<bool>,
}

impl Text {
    fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let mut boundary = vec![false; chars.len() + 1];
        let mut char_index = 0;
        for grapheme in text.graphemes(true) {
            boundary[char_index] = true;
            char_index += grapheme.chars().count();
        }
        boundary[chars.len()] = true;
        Self { chars, boundary }
    }

    fn len(&self) -> usize {
        self.chars.len()
    }

    /// The lines as `(start, end)` with `end` after the line break.
    fn lines(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        let mut lines = Vec::new();
        let mut line_start = start;
        for i in start..end {
            if self.chars[i] == '\n' {
                lines.push((line_start, i + 1));
                line_start = i + 1;
            }
        }
        if line_start < end {
            lines.push((line_start, end));
        }
        lines
    }

    fn line_text(&self, (start, end): (usize, usize)) -> String {
        self.chars[start..end]
            .iter()
            .collect::<String>()
            .trim_end_matches(['\n', '\r'])
            .to_string()
    }
}

struct Section {
    start: usize,
    end: usize,
    heading_path: Vec<String>,
}

/// A Markdown pipe table, in characters: the header row starts at `start`, the rows below the
/// delimiter row at `body`, and the table ends at `end` (after its last row's line break);
/// `rows` are the body rows' `(start, end)`.
struct Table {
    start: usize,
    body: usize,
    end: usize,
    rows: Vec<(usize, usize)>,
}

/// The cells of a table row: the line split at bars that are not escaped (`\|`), without the
/// empty cells outside a leading and a trailing bar; `None` for a line without such a bar.
fn row_cells(line: &str) -> Option<Vec<&str>> {
    let trimmed = strip_indent(line)?.trim();
    let mut cells = Vec::new();
    let (mut from, mut escaped, mut bars) = (0, false, 0);
    for (i, c) in trimmed.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '|' => {
                cells.push(&trimmed[from..i]);
                from = i + 1;
                bars += 1;
            }
            _ => {}
        }
    }
    if bars == 0 {
        return None;
    }
    // A trailing bar leaves an empty cell after it, a leading one an empty cell before it.
    if from < trimmed.len() {
        cells.push(&trimmed[from..]);
    }
    if trimmed.starts_with('|') {
        cells.remove(0);
    }
    Some(cells)
}

/// True when `line` is a delimiter row of `cells` cells: each `---`, `:--`, `--:` or `:-:`.
fn is_delimiter_row(line: &str, cells: usize) -> bool {
    row_cells(line).is_some_and(|row| {
        row.len() == cells
            && row.iter().all(|cell| {
                let cell = cell.trim();
                let dashes = cell.trim_start_matches(':').trim_end_matches(':');
                !dashes.is_empty()
                    && dashes.chars().all(|c| c == '-')
                    && cell.len() - dashes.len() <= 2
            })
    })
}

/// The pipe tables of a section, outside code fences.
fn tables(t: &Text, section: &Section) -> Vec<Table> {
    let lines = t.lines(section.start, section.end);
    let texts: Vec<String> = lines.iter().map(|&l| t.line_text(l)).collect();
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let text = &texts[i];
        if let Some(open) = fence {
            if fence_closes(text, open) {
                fence = None;
            }
            i += 1;
            continue;
        }
        if let Some(open) = fence_open(text) {
            fence = Some(open);
            i += 1;
            continue;
        }
        let header = row_cells(text).filter(|cells| !cells.is_empty());
        match header {
            Some(cells) if i + 1 < lines.len() && is_delimiter_row(&texts[i + 1], cells.len()) => {
                let body = lines[i + 1].1;
                let mut rows = Vec::new();
                let mut j = i + 2;
                while j < lines.len()
                    && !texts[j].trim().is_empty()
                    && row_cells(&texts[j]).is_some()
                {
                    rows.push(lines[j]);
                    j += 1;
                }
                let end = rows.last().map_or(body, |r| r.1);
                out.push(Table {
                    start: lines[i].0,
                    body,
                    end,
                    rows,
                });
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// An opening code fence: the fence character and its length.
fn fence_open(line: &str) -> Option<(char, usize)> {
    let trimmed = strip_indent(line)?;
    let first = trimmed.chars().next()?;
    if first != '`' && first != '~' {
        return None;
    }
    let count = trimmed.chars().take_while(|&c| c == first).count();
    (count >= 3).then_some((first, count))
}

fn fence_closes(line: &str, (fence, count): (char, usize)) -> bool {
    let Some(trimmed) = strip_indent(line) else {
        return false;
    };
    let run = trimmed.chars().take_while(|&c| c == fence).count();
    run >= count && trimmed.chars().skip(run).all(char::is_whitespace)
}

/// Removes up to three spaces of indentation; `None` when the line is indented more (code).
fn strip_indent(line: &str) -> Option<&str> {
    let spaces = line.chars().take_while(|&c| c == ' ').count();
    (spaces <= 3).then(|| &line[spaces..])
}

/// An ATX heading: its level and text.
fn atx_heading(line: &str) -> Option<(usize, String)> {
    let trimmed = strip_indent(line)?;
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    let text = text.trim_end_matches('#').trim_end();
    Some((level, text.to_string()))
}

fn sections(t: &Text) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut current = Section {
        start: 0,
        end: 0,
        heading_path: Vec::new(),
    };
    for line in t.lines(0, t.len()) {
        let text = t.line_text(line);
        if let Some(open) = fence {
            if fence_closes(&text, open) {
                fence = None;
            }
            continue;
        }
        if let Some(open) = fence_open(&text) {
            fence = Some(open);
            continue;
        }
        if let Some((level, heading)) = atx_heading(&text) {
            if line.0 > current.start {
                current.end = line.0;
                sections.push(current);
            }
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            stack.push((level, heading));
            current = Section {
                start: line.0,
                end: 0,
                heading_path: stack.iter().map(|(_, h)| h.clone()).collect(),
            };
        }
    }
    current.end = t.len();
    if current.end > current.start {
        sections.push(current);
    }
    // A whitespace-only preamble, or a section that holds nothing but its heading (a title
    // directly followed by a subheading), joins the section after it.
    let mut merged: Vec<Section> = Vec::with_capacity(sections.len());
    let mut carry: Option<usize> = None;
    let count = sections.len();
    for (i, mut section) in sections.into_iter().enumerate() {
        if let Some(start) = carry.take() {
            section.start = start;
        }
        if i + 1 < count && is_empty_section(t, &section) {
            carry = Some(section.start);
            continue;
        }
        merged.push(section);
    }
    merged
}

/// True when a section has no text besides its heading line and whitespace.
fn is_empty_section(t: &Text, section: &Section) -> bool {
    let lines = t.lines(section.start, section.end);
    lines.iter().all(|&line| {
        let text = t.line_text(line);
        text.trim().is_empty() || atx_heading(&text).is_some()
    })
}

/// Cuts a section into units (paragraphs and heading lines) and then into pieces of at most
/// `max` characters.
fn pieces(t: &Text, section: &Section, tables: &[Table], max: usize) -> Vec<(usize, usize)> {
    let mut units: Vec<(usize, usize)> = Vec::new();
    let mut unit_start = section.start;
    let mut previous_blank = false;
    let mut after_heading = false;
    let mut fence: Option<(char, usize)> = None;
    for line in t.lines(section.start, section.end) {
        let text = t.line_text(line);
        if let Some(open) = fence {
            // Code blocks are never cut at their blank lines.
            if fence_closes(&text, open) {
                fence = None;
            }
            previous_blank = false;
            continue;
        }
        if atx_heading(&text).is_some() {
            if line.0 > unit_start {
                units.push((unit_start, line.0));
                unit_start = line.0;
            }
            after_heading = true;
            previous_blank = false;
            continue;
        }
        let blank = text.trim().is_empty();
        if !blank && (after_heading || previous_blank) && line.0 > unit_start {
            units.push((unit_start, line.0));
            unit_start = line.0;
        }
        if !blank {
            after_heading = false;
        }
        fence = fence_open(&text);
        previous_blank = blank;
    }
    if section.end > unit_start {
        units.push((unit_start, section.end));
    }

    let mut out = Vec::new();
    for (start, end) in units {
        for (start, end, rows) in table_cuts(tables, start, end) {
            if end - start <= max {
                out.push((start, end));
            } else if rows {
                hard_cut(t, start, end, max, &mut out);
            } else {
                split_unit(t, start, end, max, &mut out);
            }
        }
    }
    out
}

/// `[start, end)` cut at the tables in it: before each table, after its header rows, between
/// its rows and after it. Each part says whether it is a table's header or row (cut only hard
/// when too long) or text around tables.
fn table_cuts(tables: &[Table], start: usize, end: usize) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    let mut at = start;
    for table in tables.iter().filter(|tb| tb.start < end && tb.end > start) {
        if table.start > at {
            out.push((at, table.start, false));
            at = table.start;
        }
        let header = (table.start, table.body);
        for (s, e) in std::iter::once(header).chain(table.rows.iter().copied()) {
            let (s, e) = (s.max(at), e.min(end));
            if e > s {
                out.push((s, e, true));
                at = e;
            }
        }
    }
    if end > at {
        out.push((at, end, false));
    }
    out
}

/// Cuts a unit into sentences, and sentences longer than `max` hard.
fn split_unit(t: &Text, start: usize, end: usize, max: usize, out: &mut Vec<(usize, usize)>) {
    for (s, e) in sentences(t, start, end) {
        if e - s <= max {
            out.push((s, e));
        } else {
            hard_cut(t, s, e, max, out);
        }
    }
}

fn is_terminator(c: char) -> bool {
    matches!(
        c,
        '。' | '！' | '？' | '；' | '…' | '!' | '?' | ';' | '\n' | '．' | '｡'
    )
}

fn is_soft_break(c: char) -> bool {
    c.is_whitespace()
        || is_terminator(c)
        || is_closer(c)
        || matches!(c, '，' | ',' | '、' | '：' | ':')
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '”' | '’' | '"' | '\'' | '」' | '』' | '）' | ')' | ']' | '】' | '》' | '〉'
    )
}

/// Sentences tiling `[start, end)`.
fn sentences(t: &Text, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut sentence_start = start;
    let mut i = start;
    while i < end {
        let c = t.chars[i];
        let ends_here =
            is_terminator(c) || (c == '.' && (i + 1 == end || t.chars[i + 1].is_whitespace()));
        i += 1;
        if !ends_here {
            continue;
        }
        while i < end && (is_terminator(t.chars[i]) || is_closer(t.chars[i])) {
            i += 1;
        }
        while i < end && t.chars[i].is_whitespace() {
            i += 1;
        }
        if i < end && t.boundary[i] {
            out.push((sentence_start, i));
            sentence_start = i;
        }
    }
    if end > sentence_start {
        out.push((sentence_start, end));
    }
    out
}

/// Cuts `[start, end)` into pieces of at most `max` characters on grapheme boundaries,
/// preferring a cut after whitespace in the second half of each window.
fn hard_cut(t: &Text, start: usize, end: usize, max: usize, out: &mut Vec<(usize, usize)>) {
    let mut pos = start;
    while end - pos > max {
        let limit = pos + max;
        let mut cut = (pos + 1..=limit).rev().find(|&p| t.boundary[p]);
        if let Some(c) = cut {
            let floor = pos + max / 2;
            if let Some(ws) = (floor.max(pos + 1)..=c)
                .rev()
                .find(|&p| t.boundary[p] && t.chars[p - 1].is_whitespace())
            {
                cut = Some(ws);
            }
        }
        // A single grapheme cluster longer than `max` is kept whole (the documented exception).
        let cut = cut.unwrap_or_else(|| (limit + 1..=end).find(|&p| t.boundary[p]).unwrap_or(end));
        out.push((pos, cut));
        pos = cut;
    }
    if end > pos {
        out.push((pos, end));
    }
}

/// Merges pieces into windows with overlap.
fn pack(
    t: &Text,
    section: &Section,
    tables: &[Table],
    pieces: &[(usize, usize)],
    max: usize,
    overlap: usize,
    out: &mut Vec<Span>,
) {
    let mut pieces: Vec<(usize, usize)> = pieces.to_vec();
    let has_heading = !section.heading_path.is_empty();
    let mut i = 0;
    let mut previous_start: Option<usize> = None;
    while i < pieces.len() {
        let window_start = pieces[i].0;
        let wanted_overlap = match previous_start {
            Some(prev) => overlap.min(window_start - prev),
            None => 0,
        };
        let first_len = pieces[i].1 - pieces[i].0;
        let room_for_overlap = max.saturating_sub(first_len);
        let mut chunk_start = overlap_start(t, window_start, wanted_overlap.min(room_for_overlap));
        // An overlap that reaches back into a table carries whole rows, or none.
        if let Some(tb) = tables
            .iter()
            .find(|tb| tb.start < chunk_start && chunk_start < tb.end)
        {
            let row_starts = std::iter::once(tb.body).chain(tb.rows.iter().map(|r| r.0));
            chunk_start = row_starts
                .chain(std::iter::once(tb.end))
                .find(|&row| row >= chunk_start)
                .map_or(window_start, |row| row.min(window_start));
        }
        let mut window_end = pieces[i].1;
        i += 1;
        loop {
            if i >= pieces.len() {
                break;
            }
            if pieces[i].1 - chunk_start <= max {
                window_end = pieces[i].1;
                i += 1;
                continue;
            }
            // A heading alone would make a poor chunk: cut the paragraph after it into
            // sentences so that the first of them can join the heading.
            let heading_only = has_heading
                && chunk_start == section.start
                && i == 1
                && !tables
                    .iter()
                    .any(|tb| tb.start <= pieces[i].0 && pieces[i].0 < tb.end);
            if heading_only {
                let mut parts = Vec::new();
                split_unit(t, pieces[i].0, pieces[i].1, max, &mut parts);
                if parts.len() > 1 && parts[0].1 - chunk_start <= max {
                    pieces.splice(i..=i, parts);
                    continue;
                }
            }
            break;
        }
        // A window that starts below a table's first row, inside the table, continues it.
        let table_header = tables
            .iter()
            .find(|tb| tb.start < chunk_start && chunk_start < tb.end)
            .map(|tb| (tb.start, tb.body));
        out.push(Span {
            start: chunk_start,
            end: window_end,
            heading_path: section.heading_path.clone(),
            table_header,
        });
        previous_start = Some(window_start);
    }
}

/// Where a window with `overlap` characters of carried-over text starts: the earliest natural
/// boundary (after whitespace or a sentence terminator) within the overlap, otherwise the
/// first grapheme boundary.
fn overlap_start(t: &Text, window_start: usize, overlap: usize) -> usize {
    let earliest = window_start - overlap;
    let natural =
        (earliest..window_start).find(|&p| p > 0 && t.boundary[p] && is_soft_break(t.chars[p - 1]));
    natural.unwrap_or_else(|| {
        let mut p = earliest;
        while !t.boundary[p] {
            p += 1;
        }
        p
    })
}

/// The boxes (ordered by start) that may share a character with `start..end`: those starting
/// inside it, and the ones just before it that reach into it (lines do not overlap in the
/// text, so looking back stops at the first that does not).
fn boxes_from(boxes: &[LineBox], start: usize, end: usize) -> &[LineBox] {
    let to = boxes.partition_point(|b| b.start < end);
    let mut from = boxes[..to].partition_point(|b| b.start < start);
    while from > 0 && boxes[from - 1].end > start {
        from -= 1;
    }
    &boxes[from..to]
}

/// `table[i]` is the byte offset of character `i`; `table[len]` is the text length.
pub fn char_to_byte_table(text: &str) -> Vec<usize> {
    let mut table: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
    table.push(text.len());
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DocId, Source};

    fn policy(max: usize, overlap: usize) -> ChunkingPolicy {
        ChunkingPolicy::with_sizes(max, overlap).unwrap()
    }

    fn slices(text: &str, p: &ChunkingPolicy) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        split(text, p)
            .iter()
            .map(|s| chars[s.start..s.end].iter().collect())
            .collect()
    }

    /// Each chunk keeps the boxes of the lines it shares a character with, and reads them
    /// back from its record; a quote's characters give the boxes of its lines.
    #[test]
    fn chunks_keep_the_boxes_of_their_lines() {
        use crate::contracts::{LineBox, PageBox};
        let line = |start, end, page, y0: f32| LineBox {
            start,
            end,
            at: PageBox {
                page,
                x0: 0.1,
                y0,
                x1: 0.9,
                y1: y0 + 0.02,
                turn: 0,
                confidence: None,
            },
        };
        let text = "第一行文字。\n第二行文字。\n\n\u{c}\n\n第三行文字。";
        let boxes = vec![
            line(0, 6, 1, 0.1),
            line(7, 13, 1, 0.2),
            line(17, 23, 2, 0.1),
        ];
        let d = Document::builder(
            crate::DocId::new("scan.pdf").unwrap(),
            crate::Source::new("scan.pdf").unwrap(),
            text,
        )
        .page_count(2)
        .line_boxes(boxes.clone())
        .build();
        let chunks = chunk_document(&d, &policy(16, 0));
        assert!(chunks.len() >= 2, "{chunks:?}");
        for c in &chunks {
            let expected: Vec<LineBox> = boxes
                .iter()
                .filter(|b| b.start < c.end() && c.start() < b.end)
                .copied()
                .collect();
            assert_eq!(c.boxes(), expected.as_slice(), "{c:?}");
            assert_eq!(&Chunk::from_record(c.to_record()).unwrap(), c);
        }
        let second = chunks
            .iter()
            .find(|c| c.start() <= 7 && 7 < c.end())
            .unwrap();
        let at = 7 - second.start();
        assert_eq!(second.boxes_of(at, at + 2), vec![boxes[1].at]);
    }

    #[test]
    fn chunks_of_a_document_with_pages_know_their_pages() {
        use crate::{DocId, Source};
        let text = "# 第一章\n\n第一页的文字。\n\n\u{c}\n\n第二页的文字。\n\n\u{c}\n\n第三页。\n";
        let doc = Document::builder(
            DocId::new("a.pdf").unwrap(),
            Source::new("a.pdf").unwrap(),
            text,
        )
        .page_count(3)
        .build();
        let pages = |max| {
            chunk_document(&doc, &policy(max, 0))
                .iter()
                .map(|c| c.pages().map(|p| (p.first(), p.last())))
                .collect::<Vec<_>>()
        };
        // Small windows: one per page. One large window: pages 1 to 3, said so.
        assert_eq!(
            pages(16),
            [Some((1, 1)), Some((1, 1)), Some((2, 2)), Some((3, 3))]
        );
        assert_eq!(pages(200), [Some((1, 3))]);
        let plain = Document::builder(
            DocId::new("a.md").unwrap(),
            Source::new("a.md").unwrap(),
            text,
        )
        .build();
        assert!(
            chunk_document(&plain, &policy(200, 0))
                .iter()
                .all(|c| c.pages().is_none())
        );
    }

    #[test]
    fn empty_text_gives_no_chunks() {
        assert!(split("", &policy(100, 10)).is_empty());
    }

    #[test]
    fn headings_start_sections_and_build_paths() {
        let text = "intro\n\n# A\n\ntext a\n\n## B\n\ntext b\n\n# C\ntext c\n";
        let spans = split(text, &policy(1000, 0));
        let paths: Vec<Vec<String>> = spans.iter().map(|s| s.heading_path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                vec![],
                vec!["A".to_string()],
                vec!["A".to_string(), "B".to_string()],
                vec!["C".to_string()]
            ]
        );
    }

    #[test]
    fn a_title_directly_followed_by_a_subheading_joins_it() {
        let text = "# Title\n\n## Sub\n\ntext\n\n## Next\n\nmore\n";
        let spans = split(text, &policy(1000, 0));
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].start, 0);
        assert_eq!(
            spans[0].heading_path,
            vec!["Title".to_string(), "Sub".to_string()]
        );
    }

    #[test]
    fn headings_inside_code_fences_are_ignored() {
        let text = "# A\n\n```\n# not a heading\n```\n\n# B\n";
        let spans = split(text, &policy(1000, 0));
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].heading_path, vec!["A".to_string()]);
    }

    #[test]
    fn long_paragraphs_split_at_chinese_sentences() {
        let text = "第一句话在这里。第二句话也在这里！第三句话呢？最后一句。";
        let got = slices(text, &policy(16, 0));
        // 8 + 9 characters overflow 16, 9 + 6 fit.
        assert_eq!(
            got,
            vec![
                "第一句话在这里。",
                "第二句话也在这里！第三句话呢？",
                "最后一句。"
            ]
        );
    }

    #[test]
    fn overlap_repeats_the_tail_of_the_previous_window() {
        let text = "aaaa aaaa. bbbb bbbb. cccc cccc. dddd dddd.";
        let got = slices(text, &policy(24, 6));
        assert_eq!(got[0], "aaaa aaaa. bbbb bbbb. ");
        assert!(got[1].starts_with("bbbb. "), "{got:?}");
        for s in &got {
            assert!(s.chars().count() <= 24);
        }
    }

    #[test]
    fn chunk_ids_follow_content_and_position() {
        let d = Document::builder(
            DocId::new("doc").unwrap(),
            Source::new("doc").unwrap(),
            "# T\n\nhello world\n",
        )
        .build();
        let chunks = chunk_document(&d, &policy(100, 0));
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].chunk_id().as_str().starts_with("doc:0:"));
        assert_eq!(chunks[0].content(), "# T\n\nhello world\n");
    }
}
