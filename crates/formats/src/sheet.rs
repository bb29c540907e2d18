//! CSV and Excel 2007+ (`.xlsx`, `.xlsm`): tables cut into row groups a chunk can hold.
//!
//! A table's first non-empty row is its header. The other rows are written in groups, each a
//! section: a heading `Rows a–b` (`Row a` for one row; `a`, `b` are the row numbers of the
//! file, 1-based, so a chunk says where it comes from), then one paragraph holding the header
//! line and the group's rows, one line per row, cells joined by ` | ` (a cell's line breaks and
//! runs of spaces collapsed; trailing empty cells dropped). A group holds as many rows as keep
//! header and rows within [`GROUP_CHARS`] characters (at least one row), so that one group fits
//! one default chunk and every chunk carries the header. Empty rows are skipped.
//!
//! CSV: rows are numbered by record (a quoted field's line breaks do not count, blank lines
//! are skipped). UTF-8 (with or without a BOM), UTF-16 with a BOM, GB18030 (GBK) or Big5 told from
//! the bytes ([`decode_text_file`]); the delimiter is the one of `,`
//! `;` tab `|` that splits the first lines most consistently; quoted fields and ragged rows are
//! read; the row groups are level-1 sections.
//!
//! Excel: each worksheet with a value is a level-1 section named after the sheet, its row
//! groups level-2 sections whose headings name the sheet too (`华南 · Rows 2–11`), so that a
//! chunk's own text says which sheet it is of. Cells show their cached values: text as is, whole numbers without
//! `.0`, other numbers rounded to 15 significant digits (as Excel shows them), booleans as
//! `TRUE`/`FALSE`, dates as `YYYY-MM-DD` (with ` HH:MM` or ` HH:MM:SS` when there is a time
//! part), durations as `H:MM:SS`, errors as Excel writes them (`#DIV/0!`, `#N/A`, …). Dropped:
//! formulas (their values are kept), charts and chart sheets, comments, formatting, images.
//! Title: `dc:title` of `docProps/core.xml`; locale: `dc:language`.

use std::collections::BTreeMap;
use std::io::Cursor;

use anyhow::{Result, anyhow, bail};
use calamine::{DataRef, ExcelDateTime, ExcelDateTimeType, Reader, SheetType, Xlsx};

use crate::decode::decode_text_file;
use crate::extracted::Extracted;
use crate::limits::Limits;
use crate::ooxml::core_properties;
use crate::package::Package;
use crate::text_builder::{TextBuilder, one_line};

/// Most characters of a row group's header and rows.
pub const GROUP_CHARS: usize = 400;

/// Extracts a CSV file.
pub fn extract_csv(bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    let text =
        decode_text_file(bytes).map_err(|e| anyhow!("{e} (in Excel: save as \"CSV UTF-8\")"))?;
    let delimiter = detect_delimiter(&text);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut out = TextBuilder::new(limits);
    let mut groups = RowGroups::new(1, None);
    for (i, record) in reader.records().enumerate() {
        if i % 1000 == 999 {
            limits.check_time()?;
        }
        let record = record.map_err(|e| anyhow!("malformed CSV (record {}): {e}", i + 1))?;
        let cells: Vec<String> = record.iter().map(one_line).collect();
        groups.push(&mut out, i as u64 + 1, &row_line(cells))?;
    }
    groups.finish(&mut out)?;
    Ok(Extracted {
        text: out.finish(),
        title: None,
        locale: None,
        pages: None,
        synthetic_headings: true,
        ocr: None,
        boxes: Vec::new(),
    })
}

/// Extracts an Excel file.
pub fn extract_xlsx(bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    // calamine reads the zip package itself: every part is first read once through `Package`,
    // so that a zip bomb is refused before calamine unpacks anything.
    let mut pkg = Package::open(bytes, limits)?;
    let (title, locale) = core_properties(&mut pkg, limits)?;
    let names = pkg.names();
    let mut seen = std::collections::HashSet::new();
    for name in &names {
        if !seen.insert(name.to_ascii_lowercase()) {
            bail!("damaged zip package: part {name} appears twice");
        }
        if name.eq_ignore_ascii_case("docProps/core.xml") {
            continue;
        }
        limits.check_time()?;
        // Unpacked to count it against the budget, not kept.
        if let Some(mut part) = pkg.read_stream(name)? {
            std::io::copy(&mut part, &mut std::io::sink()).map_err(|e| anyhow!("{e}"))?;
        }
    }
    drop(pkg);

    let mut workbook: Xlsx<_> = calamine::open_workbook_from_rs(Cursor::new(bytes))
        .map_err(|e| anyhow!("damaged Excel workbook: {e}"))?;
    let sheets: Vec<String> = workbook
        .sheets_metadata()
        .iter()
        .filter(|s| s.typ == SheetType::WorkSheet)
        .map(|s| s.name.clone())
        .collect();
    let mut out = TextBuilder::new(limits);
    for sheet in sheets {
        limits.check_time()?;
        let rows = sheet_rows(&mut workbook, &sheet, limits)?;
        let Some(first_col) = rows.values().flat_map(|r| r.iter().map(|c| c.0)).min() else {
            continue;
        };
        out.heading(1, &sheet)?;
        let mut groups = RowGroups::new(2, Some(sheet.clone()));
        for (i, (row, cells)) in rows.iter().enumerate() {
            if i % 1000 == 999 {
                limits.check_time()?;
            }
            let mut line = Vec::new();
            for (col, value) in cells {
                let at = (col - first_col) as usize;
                if line.len() < at {
                    line.resize(at, String::new());
                }
                line.push(value.clone());
            }
            groups.push(&mut out, u64::from(*row) + 1, &row_line(line))?;
        }
        groups.finish(&mut out)?;
    }
    Ok(Extracted {
        text: out.finish(),
        title,
        locale,
        pages: None,
        synthetic_headings: true,
        ocr: None,
        boxes: Vec::new(),
    })
}

/// The non-empty cells of a sheet, by row and column (0-based), in order.
///
/// Cells are streamed rather than read into a dense range: a sheet with two cells far apart
/// would otherwise allocate every cell between them.
fn sheet_rows(
    workbook: &mut Xlsx<Cursor<&[u8]>>,
    sheet: &str,
    limits: &Limits,
) -> Result<BTreeMap<u32, Vec<(u32, String)>>> {
    let damaged = |e: calamine::XlsxError| anyhow!("damaged Excel workbook: sheet {sheet}: {e}");
    let mut cells = workbook.worksheet_cells_reader(sheet).map_err(damaged)?;
    let mut rows: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
    let mut count = 0usize;
    let mut bytes = 0usize;
    while let Some(cell) = cells.next_cell().map_err(damaged)? {
        count += 1;
        if count.is_multiple_of(1000) {
            limits.check_time()?;
        }
        let value = one_line(&display(cell.get_value()));
        if value.is_empty() {
            continue;
        }
        // The text will hold at least every value: past the bound, stop collecting.
        bytes += value.len();
        if bytes > limits.max_text_bytes {
            bail!(
                "extracted text exceeds {} bytes (loader.max_text_bytes)",
                limits.max_text_bytes
            );
        }
        let (row, col) = cell.get_position();
        rows.entry(row).or_default().push((col, value));
    }
    for cells in rows.values_mut() {
        cells.sort_by_key(|c| c.0);
        cells.dedup_by_key(|c| c.0);
    }
    Ok(rows)
}

/// A cell's value as Excel shows it (near enough).
fn display(value: &DataRef<'_>) -> String {
    match value {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => number(*f),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => s.to_string(),
        DataRef::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        DataRef::DateTime(dt) => datetime(dt),
        DataRef::Error(e) => e.to_string(),
        DataRef::Empty => String::new(),
    }
}

fn number(f: f64) -> String {
    if !f.is_finite() {
        return f.to_string();
    }
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return format!("{f:.0}");
    }
    // 15 significant digits, as Excel displays numbers, then the shortest form of that.
    let rounded: f64 = format!("{f:.14e}").parse().unwrap_or(f);
    rounded.to_string()
}

/// Seconds in a day.
const DAY: i64 = 86_400;

fn datetime(dt: &ExcelDateTime) -> String {
    let serial = dt.as_f64();
    if !serial.is_finite() || !(0.0..=2_958_466.0).contains(&serial) {
        return number(serial);
    }
    let total = (serial * DAY as f64).round() as i64;
    if dt.is_duration() {
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
        return format!("{h}:{m:02}:{s:02}");
    }
    let is_1904 = *dt == ExcelDateTime::new(serial, ExcelDateTimeType::DateTime, true);
    let (mut days, secs) = (total / DAY, total % DAY);
    let time = if secs == 0 {
        String::new()
    } else if secs % 60 == 0 {
        format!("{:02}:{:02}", secs / 3600, secs / 60 % 60)
    } else {
        format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
    };
    if days == 0 && !is_1904 {
        // A time of day alone.
        return if time.is_empty() {
            "00:00".to_string()
        } else {
            time
        };
    }
    // Days from 1970-01-01 to the epoch: 1899-12-30 (serials from 61 on; Excel counts a
    // 1900-02-29 that never was, so earlier serials are a day later), or 1904-01-01.
    let epoch = if is_1904 {
        -24_107
    } else {
        if days < 61 {
            days += 1;
        }
        -25_569
    };
    let (y, m, d) = civil_from_days(epoch + days);
    let date = format!("{y:04}-{m:02}-{d:02}");
    if time.is_empty() {
        date
    } else {
        format!("{date} {time}")
    }
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A row as one line; empty when the row holds nothing.
fn row_line(mut cells: Vec<String>) -> String {
    while cells.last().is_some_and(|c| c.is_empty()) {
        cells.pop();
    }
    cells.join(" | ")
}

/// Cuts a table's rows into groups that each repeat the header.
#[derive(Debug)]
struct RowGroups {
    level: usize,
    /// The sheet the rows are of, named in each group's heading so that a chunk says it.
    sheet: Option<String>,
    header: Option<(u64, String)>,
    rows: Vec<String>,
    first: u64,
    last: u64,
    chars: usize,
}

impl RowGroups {
    fn new(level: usize, sheet: Option<String>) -> Self {
        Self {
            level,
            sheet,
            header: None,
            rows: Vec::new(),
            first: 0,
            last: 0,
            chars: 0,
        }
    }

    fn push(&mut self, out: &mut TextBuilder, number: u64, line: &str) -> Result<()> {
        if line.is_empty() {
            return Ok(());
        }
        let Some(header_chars) = self.header.as_ref().map(|(_, h)| h.chars().count()) else {
            self.header = Some((number, line.to_string()));
            return Ok(());
        };
        let len = line.chars().count();
        if !self.rows.is_empty() && self.chars + 1 + len > GROUP_CHARS {
            self.flush(out)?;
        }
        if self.rows.is_empty() {
            self.first = number;
            self.chars = header_chars;
        }
        self.rows.push(line.to_string());
        self.chars += 1 + len;
        self.last = number;
        Ok(())
    }

    fn flush(&mut self, out: &mut TextBuilder) -> Result<()> {
        let Some((_, header)) = &self.header else {
            return Ok(());
        };
        if self.rows.is_empty() {
            return Ok(());
        }
        let label = if self.first == self.last {
            format!("Row {}", self.first)
        } else {
            format!("Rows {}–{}", self.first, self.last)
        };
        out.heading(self.level, &self.labelled(&label))?;
        let mut block = header.clone();
        for row in self.rows.drain(..) {
            block.push('\n');
            block.push_str(&row);
        }
        out.paragraph(&block)
    }

    fn labelled(&self, label: &str) -> String {
        match &self.sheet {
            Some(sheet) => format!("{sheet} · {label}"),
            None => label.to_string(),
        }
    }

    fn finish(mut self, out: &mut TextBuilder) -> Result<()> {
        match &self.header {
            // A table of a header alone: the header is its content.
            Some((number, header)) if self.rows.is_empty() => {
                out.heading(self.level, &self.labelled(&format!("Row {number}")))?;
                out.paragraph(header)
            }
            _ => self.flush(out),
        }
    }
}

/// The delimiter among `,` `;` tab `|` that splits the first lines (outside quotes) into the
/// same number of fields most often, the most fields breaking ties; `,` when none splits.
fn detect_delimiter(text: &str) -> u8 {
    const CANDIDATES: [u8; 4] = [b',', b';', b'\t', b'|'];
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .collect();
    let mut best = (b',', 0usize, 0usize);
    for &d in &CANDIDATES {
        let counts: Vec<usize> = lines
            .iter()
            .map(|line| {
                let mut quoted = false;
                line.bytes()
                    .filter(|&b| {
                        if b == b'"' {
                            quoted = !quoted;
                        }
                        b == d && !quoted
                    })
                    .count()
            })
            .collect();
        // The most common non-zero count and how many lines have it.
        let mut freq: BTreeMap<usize, usize> = BTreeMap::new();
        for &c in counts.iter().filter(|&&c| c > 0) {
            *freq.entry(c).or_default() += 1;
        }
        let Some((&count, &lines_with)) = freq.iter().max_by_key(|(c, n)| (**n, **c)) else {
            continue;
        };
        if (lines_with, count) > (best.1, best.2) {
            best = (d, lines_with, count);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ooxml::tests::{check_fixture, heading_paths, limits, package};

    #[test]
    fn csv_rows_are_grouped_under_the_header() {
        let csv = "姓名,部门,电话\n张三,研发,\"138 0000\n0000\"\n\n李四,\"市场, 华东\",139\n";
        let out = extract_csv(csv.as_bytes(), &limits()).unwrap();
        assert_eq!(
            out.text,
            "# Rows 2–3\n\n姓名 | 部门 | 电话\n张三 | 研发 | 138 0000 0000\n李四 | 市场, 华东 | 139\n"
        );
        assert_eq!(out.title, None);
        assert_eq!(out.pages, None);
    }

    #[test]
    fn csv_delimiters_are_detected() {
        assert_eq!(detect_delimiter("a;b;c\n1;2,5;3\n"), b';');
        assert_eq!(detect_delimiter("a\tb\n1\t2\n"), b'\t');
        assert_eq!(detect_delimiter("a|b|c\n1|2|3\n"), b'|');
        assert_eq!(detect_delimiter("\"x;y\",b\n\"1;2\",3\n"), b',');
        assert_eq!(detect_delimiter("one column\nonly\n"), b',');
        let out = extract_csv("\u{feff}a;b\n1;2,5\n3\n".as_bytes(), &limits()).unwrap();
        assert_eq!(out.text, "# Rows 2–3\n\na | b\n1 | 2,5\n3\n");
    }

    #[test]
    fn csv_groups_stay_within_a_chunk_and_repeat_the_header() {
        let mut csv = String::from("id,text\n");
        for i in 0..40 {
            csv.push_str(&format!("{i},{}\n", "x".repeat(40)));
        }
        csv.push_str(&format!("99,{}\n", "y".repeat(500)));
        let out = extract_csv(csv.as_bytes(), &limits()).unwrap();
        let sections: Vec<&str> = out.text.split("# ").filter(|s| !s.is_empty()).collect();
        assert!(sections.len() > 4, "{}", out.text);
        for section in &sections {
            let (heading, body) = section.split_once("\n\n").unwrap();
            assert!(heading.starts_with("Row"), "{heading}");
            assert!(body.starts_with("id | text\n"), "{body}");
            let rows = body.trim_end().lines().count() - 1;
            assert!(rows >= 1);
            assert!(
                body.trim_end().chars().count() <= GROUP_CHARS || rows == 1,
                "{body}"
            );
        }
        assert!(out.text.contains("# Rows 2–"), "{}", out.text);
        assert!(
            out.text.contains("# Row 42\n\nid | text\n99 | yyy"),
            "{}",
            out.text
        );
    }

    #[test]
    fn csv_in_gbk_or_utf16_is_read_and_in_latin1_reported() {
        // "姓名,部门,城市\n张三,研发部,北京\n李四,市场部,上海\n" as Excel saves it in GBK.
        let gbk = b"\xd0\xd5\xc3\xfb,\xb2\xbf\xc3\xc5,\xb3\xc7\xca\xd0\r\n\xd5\xc5\xc8\xfd,\
            \xd1\xd0\xb7\xa2\xb2\xbf,\xb1\xb1\xbe\xa9\r\n\xc0\xee\xcb\xc4,\xca\xd0\xb3\xa1\xb2\xbf,\
            \xc9\xcf\xba\xa3\r\n";
        let out = extract_csv(gbk, &limits()).unwrap();
        assert_eq!(
            out.text,
            "# Rows 2\u{2013}3\n\n姓名 | 部门 | 城市\n张三 | 研发部 | 北京\n李四 | 市场部 | 上海\n"
        );
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("a,b\n1,2\n".encode_utf16().flat_map(|u| u.to_le_bytes()))
            .collect();
        let out = extract_csv(&utf16, &limits()).unwrap();
        assert_eq!(out.text, "# Row 2\n\na | b\n1 | 2\n");
        // Latin-1 (valid GB18030 too, into nonsense): reported, with how to save it.
        let latin1 = b"Name,Stra\xDFe\nM\xFCller,K\xF6ln\n";
        let err = extract_csv(latin1, &limits()).unwrap_err().to_string();
        assert!(
            err.contains("not UTF-8, UTF-16, GB18030") && err.contains("CSV UTF-8"),
            "{err}"
        );
    }

    #[test]
    fn csv_of_a_header_alone_keeps_it() {
        let out = extract_csv(b"only,a,header\n", &limits()).unwrap();
        assert_eq!(out.text, "# Row 1\n\nonly | a | header\n");
    }

    const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/worksheets/sheet2.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>"#;
    const ROOT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    const WORKBOOK: &str = r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="销售" sheetId="1" r:id="rId1"/><sheet name="Empty" sheetId="2" r:id="rId2"/></sheets></workbook>"#;
    const WORKBOOK_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet2.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rId4" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>"#;
    const SHARED: &str = r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="4" uniqueCount="4"><si><t>地区</t></si><si><t>金额</t></si><si><t>日期</t></si><si><t>华东</t></si></sst>"#;
    const STYLES: &str = r#"<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm"/></numFmts><cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/><xf numFmtId="164" applyNumberFormat="1"/></cellXfs></styleSheet>"#;
    const SHEET1: &str = r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
        <row r="2"><c r="B2" t="s"><v>0</v></c><c r="C2" t="s"><v>1</v></c><c r="D2" t="s"><v>2</v></c><c r="E2" t="inlineStr"><is><t>备注</t></is></c></row>
        <row r="3"><c r="B3" t="s"><v>3</v></c><c r="C3"><v>1200</v></c><c r="D3" s="1"><v>45292</v></c><c r="E3" t="b"><v>1</v></c></row>
        <row r="4"></row>
        <row r="5"><c r="B5" t="inlineStr"><is><t>华南</t></is></c><c r="C5"><v>0.30000000000000004</v></c><c r="D5" s="2"><v>45292.5</v></c><c r="E5" t="e"><v>#DIV/0!</v></c></row>
        <row r="6"><c r="C6"><v>7.5</v></c></row>
    </sheetData></worksheet>"#;
    const SHEET2: &str = r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData/></worksheet>"#;

    fn xlsx(extra: &[(&str, &str)]) -> Vec<u8> {
        let mut parts = vec![
            ("[Content_Types].xml", CONTENT_TYPES),
            ("_rels/.rels", ROOT_RELS),
            ("xl/workbook.xml", WORKBOOK),
            ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS),
            ("xl/sharedStrings.xml", SHARED),
            ("xl/styles.xml", STYLES),
            ("xl/worksheets/sheet1.xml", SHEET1),
            ("xl/worksheets/sheet2.xml", SHEET2),
        ];
        parts.extend_from_slice(extra);
        package(&parts)
    }

    #[test]
    fn xlsx_sheets_become_sections_of_row_groups() {
        let core = r#"<cp:coreProperties xmlns:cp="cp" xmlns:dc="dc"><dc:title>销售报表</dc:title></cp:coreProperties>"#;
        let out = extract_xlsx(&xlsx(&[("docProps/core.xml", core)]), &limits()).unwrap();
        assert_eq!(
            out.text,
            "# 销售\n\n## 销售 · Rows 3–6\n\n地区 | 金额 | 日期 | 备注\n华东 | 1200 | 2024-01-01 | TRUE\n华南 | 0.3 | 2024-01-01 12:00 | #DIV/0!\n | 7.5\n"
        );
        assert_eq!(out.title.as_deref(), Some("销售报表"));
        assert_eq!(out.pages, None);
    }

    #[test]
    fn xlsx_unpacking_is_bounded_before_calamine_reads() {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, xml) in [("xl/workbook.xml", WORKBOOK), ("_rels/.rels", ROOT_RELS)] {
            zip.start_file(name, options).unwrap();
            zip.write_all(xml.as_bytes()).unwrap();
        }
        zip.start_file("xl/worksheets/sheet1.xml", options).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..50 {
            zip.write_all(&zeros).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        let mut l = limits();
        l.max_unpacked_bytes = 4 << 20;
        let err = extract_xlsx(&bytes, &l).unwrap_err().to_string();
        assert!(err.contains("zip bomb"), "{err}");
    }

    #[test]
    fn xlsx_damage_is_reported() {
        let err = extract_xlsx(&package(&[("xl/other.xml", "<x/>")]), &limits())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("damaged Excel workbook"), "{err}");
    }

    /// Every row group of `text` repeats `header` and fits [`GROUP_CHARS`].
    fn assert_groups(text: &str, header: &str) {
        for section in text.split("# Row").skip(1) {
            let body = section.split_once("\n\n").unwrap().1;
            let body = body.split("\n\n").next().unwrap().trim_end();
            assert!(body.starts_with(&format!("{header}\n")), "{body}");
            assert!(
                body.chars().count() <= GROUP_CHARS || body.lines().count() == 2,
                "{body}"
            );
        }
    }

    #[test]
    fn csv_fixture_zh_contacts() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-contacts.csv");
        let expect = include_str!("../../../tests/fixtures/formats/zh-contacts.csv.expect.json");
        let out = extract_csv(bytes, &limits()).unwrap();
        let expect = check_fixture(&out, expect);
        let rows = expect["rows"].as_array().unwrap();
        let header = rows[0].as_array().unwrap();
        let header: Vec<&str> = header.iter().map(|c| c.as_str().unwrap()).collect();
        let header = header.join(" | ");
        assert_groups(&out.text, &header);
        let paths = heading_paths(&out.text);
        assert!(
            paths.len() > 3
                && paths
                    .iter()
                    .all(|p| p.len() == 1 && p[0].starts_with("Row"))
        );
        assert!(out.text.starts_with("# Rows 2–"), "{}", out.text);
    }

    #[test]
    fn xlsx_fixture_zh_sales() {
        let bytes = include_bytes!("../../../tests/fixtures/formats/zh-sales.xlsx");
        let expect = include_str!("../../../tests/fixtures/formats/zh-sales.xlsx.expect.json");
        let out = extract_xlsx(bytes, &limits()).unwrap();
        let expect = check_fixture(&out, expect);
        let sheets: Vec<Vec<String>> = serde_json::from_value(expect["headings"].clone()).unwrap();
        let paths = heading_paths(&out.text);
        let top: Vec<Vec<String>> = paths.iter().filter(|p| p.len() == 1).cloned().collect();
        assert_eq!(top, sheets);
        assert!(
            paths
                .iter()
                .all(|p| p.len() == 1 || p[1].starts_with(&format!("{} · Row", p[0])))
        );
        for sheet in out.text.split("\n# ") {
            assert_groups(sheet, "日期 | 客户 | 产品 | 数量 | 金额");
        }
    }

    #[test]
    fn excel_serials_become_dates_and_times() {
        let dt = |v: f64| datetime(&ExcelDateTime::new(v, ExcelDateTimeType::DateTime, false));
        assert_eq!(dt(45292.0), "2024-01-01");
        assert_eq!(dt(1.0), "1900-01-01");
        assert_eq!(dt(59.0), "1900-02-28");
        assert_eq!(dt(61.0), "1900-03-01");
        assert_eq!(dt(45292.75), "2024-01-01 18:00");
        assert_eq!(dt(0.5 + 1.0 / 86_400.0), "12:00:01");
        assert_eq!(dt(-1.0), "-1");
        assert_eq!(dt(f64::NAN), "NaN");
        let d1904 = ExcelDateTime::new(0.0, ExcelDateTimeType::DateTime, true);
        assert_eq!(datetime(&d1904), "1904-01-01");
        let dur = ExcelDateTime::new(1.5, ExcelDateTimeType::TimeDelta, false);
        assert_eq!(datetime(&dur), "36:00:00");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(1e20), "100000000000000000000");
        assert_eq!(number(-2.5), "-2.5");
    }
}
