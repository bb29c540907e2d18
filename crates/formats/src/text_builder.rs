//! Writing the chunker's text shape: headings, paragraphs and page breaks, within the text
//! bound.

use anyhow::{Result, bail};

use crate::limits::Limits;

/// Writes the chunker's text shape (see the [crate docs](crate)), keeping within
/// [`Limits::max_text_bytes`].
#[derive(Debug)]
pub struct TextBuilder {
    text: String,
    max: usize,
    pages: u32,
    /// The byte where each page's text starts.
    page_starts: Vec<usize>,
}

impl TextBuilder {
    /// An empty text bounded by `limits`.
    pub fn new(limits: &Limits) -> Self {
        Self {
            text: String::new(),
            max: limits.max_text_bytes,
            pages: 0,
            page_starts: Vec::new(),
        }
    }

    /// A heading of `level` (1-6; clamped).
    pub fn heading(&mut self, level: usize, text: &str) -> Result<()> {
        let text = one_line(text);
        if text.is_empty() {
            return Ok(());
        }
        let hashes = "#".repeat(level.clamp(1, 6));
        self.block(&format!("{hashes} {text}"))
    }

    /// A paragraph: its lines are kept, each escaped so it cannot read as Markdown structure;
    /// empty lines inside it are dropped.
    pub fn paragraph(&mut self, text: &str) -> Result<()> {
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.trim_end())
            .filter(|l| !l.trim().is_empty())
            .map(escape_line)
            .collect();
        if lines.is_empty() {
            return Ok(());
        }
        self.block(&lines.join("\n"))
    }

    /// Starts the next page (the first call starts page 1 and writes nothing).
    pub fn page(&mut self) -> Result<()> {
        self.pages += 1;
        if self.pages > 1 {
            // The form feed stands on a line of its own between blank lines: a paragraph
            // boundary for the chunker.
            self.blank_line()?;
            self.push("\u{c}\n\n")?;
        }
        self.page_starts.push(self.text.len());
        Ok(())
    }

    /// The byte where each page started so far (the first page's at 0).
    pub fn page_starts(&self) -> &[usize] {
        &self.page_starts
    }

    /// The text so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Pages started so far.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// The finished text.
    pub fn finish(self) -> String {
        let mut text = self.text;
        let trimmed = text.trim_end_matches(['\n', ' ']).len();
        text.truncate(trimmed);
        text.push('\n');
        text
    }

    /// Ends the text so far with a blank line (nothing at the very start).
    fn blank_line(&mut self) -> Result<()> {
        if self.text.is_empty() || self.text.ends_with("\n\n") {
            return Ok(());
        }
        self.push(if self.text.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        })
    }

    fn block(&mut self, block: &str) -> Result<()> {
        self.blank_line()?;
        self.push(block)?;
        self.push("\n")
    }

    fn push(&mut self, s: &str) -> Result<()> {
        if self.text.len() + s.len() > self.max {
            bail!(
                "extracted text exceeds {} bytes (loader.max_text_bytes)",
                self.max
            );
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// Collapses whitespace (line breaks included) into single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table as a Markdown pipe table, the shape the chunker cuts by rows and whose header it
/// repeats with every chunk that continues the table: the first row with a cell of text is the
/// header, then a delimiter row, then the other rows; every row has as many cells as the
/// widest (empty cells added at its end); a cell's whitespace is collapsed and its bars are
/// escaped (`\\|`). Rows with no text are dropped; `None` when none is left.
pub(crate) fn pipe_table(rows: &[Vec<String>]) -> Option<String> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| one_line(&cell.replace('\u{c}', " ")).replace('|', "\\|"))
                .collect::<Vec<_>>()
        })
        .filter(|row| row.iter().any(|c| !c.is_empty()))
        .collect();
    let width = rows.iter().map(Vec::len).max()?;
    let line = |row: &[String]| {
        let mut cells: Vec<&str> = row.iter().map(String::as_str).collect();
        cells.resize(width, "");
        let mut out = String::from("|");
        for cell in cells {
            out.push(' ');
            out.push_str(cell);
            if !cell.is_empty() {
                out.push(' ');
            }
            out.push('|');
        }
        out
    };
    let mut lines = vec![line(&rows[0]), line(&vec!["---".to_string(); width])];
    lines.extend(rows[1..].iter().map(|r| line(r)));
    Some(lines.join("\n"))
}

/// Escapes a line of source text that Markdown would read as a heading or a code fence, and
/// replaces a form feed (the page separator) with a space.
fn escape_line(line: &str) -> String {
    let line = line.replace('\u{c}', " ");
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    if indent <= 3 && (body.starts_with('#') || body.starts_with("```") || body.starts_with("~~~"))
    {
        format!("{}\\{}", &line[..indent], body)
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::for_tests()
    }

    #[test]
    fn tables_are_pipe_tables_with_their_first_row_as_header() {
        let rows = |rows: &[&[&str]]| -> Vec<Vec<String>> {
            rows.iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect()
        };
        assert_eq!(
            pipe_table(&rows(&[
                &["", ""],
                &["姓名", "部门"],
                &["张三", "研发 | 二组", "x"]
            ]))
            .unwrap(),
            "| 姓名 | 部门 | |\n| --- | --- | --- |\n| 张三 | 研发 \\| 二组 | x |"
        );
        assert_eq!(pipe_table(&rows(&[&["", " "]])), None);
    }

    #[test]
    fn the_builder_writes_headings_paragraphs_and_page_breaks() {
        let mut b = TextBuilder::new(&limits());
        b.page().unwrap();
        b.heading(1, "  第一章\n总则 ").unwrap();
        b.paragraph("第一行\n\n# 不是标题\n```").unwrap();
        b.page().unwrap();
        b.paragraph("second page").unwrap();
        assert_eq!(b.pages(), 2);
        assert_eq!(
            b.finish(),
            "# 第一章 总则\n\n第一行\n\\# 不是标题\n\\```\n\n\u{c}\n\nsecond page\n"
        );
    }

    #[test]
    fn the_builder_refuses_text_past_its_bound() {
        let mut l = limits();
        l.max_text_bytes = 10;
        let mut b = TextBuilder::new(&l);
        assert!(b.paragraph("0123456789abc").is_err());
    }
}
