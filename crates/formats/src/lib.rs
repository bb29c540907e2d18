//! Reading the document formats teams keep: one extractor per format behind [`extract`].
//!
//! A file's format is chosen by its content first ([`detect`]: magic bytes, the parts of a zip
//! package) and by its extension only where the content cannot tell (Markdown, text, CSV,
//! HTML). Every extractor renders the file into the one text shape the chunker reads
//! ([`Extracted::text`], written through [`TextBuilder`]):
//!
//! - a section starts with an ATX heading line (`# `, `## `, …), so chunks carry the heading
//!   path; a line of the source that would read as Markdown structure is escaped;
//! - paragraphs are separated by one blank line;
//! - in a paginated format (PDF), pages are separated by a line holding only a form feed
//!   (`\f`); page `n` is the text after the `n-1`-th form feed, and [`Extracted::pages`] is the
//!   page count, so every chunk can say which pages it covers.
//!
//! Extraction is bounded per file ([`Limits`]): bytes unpacked from a zip package, pages,
//! extracted text, and a deadline checked between pages, parts and elements. A file that
//! breaks a bound, is damaged, encrypted, of a legacy binary format, or has no text is an
//! error whose message is the reason shown beside its path; the rest of the folder loads.

use std::io::Read;
use std::time::Instant;

use anyhow::{Result, bail};

pub mod docx;
pub mod epub;
pub mod html;
pub mod pdf;
pub mod pptx;
pub mod sheet;

/// A document format zhiku reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Format {
    /// Markdown, with optional YAML front matter.
    Markdown,
    /// Plain text.
    Text,
    /// PDF with a text layer.
    Pdf,
    /// Word 2007+ (`.docx`).
    Docx,
    /// HTML (`.html`, `.htm`, `.xhtml`).
    Html,
    /// EPUB 2/3.
    Epub,
    /// PowerPoint 2007+ (`.pptx`).
    Pptx,
    /// Comma-separated values.
    Csv,
    /// Excel 2007+ (`.xlsx`, `.xlsm`).
    Xlsx,
}

impl Format {
    /// The format a file name's extension announces, for the files a folder walk picks up.
    /// Legacy binary Office extensions (`.doc`, `.ppt`, `.xls`) are picked up too, so that
    /// [`detect`] can report them as unsupported instead of passing over them in silence.
    pub fn announced(extension: &str) -> Option<Announced> {
        use Announced::*;
        use Format::*;
        Some(match extension.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Known(Markdown),
            "txt" => Known(Text),
            "pdf" => Known(Pdf),
            "docx" => Known(Docx),
            "html" | "htm" | "xhtml" => Known(Html),
            "epub" => Known(Epub),
            "pptx" => Known(Pptx),
            "csv" => Known(Csv),
            "xlsx" | "xlsm" => Known(Xlsx),
            "doc" | "ppt" | "xls" => Legacy,
            _ => return None,
        })
    }

    /// True for formats read as UTF-8 text (front matter and `load_text` apply).
    pub fn is_text(self) -> bool {
        matches!(self, Format::Markdown | Format::Text)
    }

    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "Markdown",
            Format::Text => "text",
            Format::Pdf => "PDF",
            Format::Docx => "Word (.docx)",
            Format::Html => "HTML",
            Format::Epub => "EPUB",
            Format::Pptx => "PowerPoint (.pptx)",
            Format::Csv => "CSV",
            Format::Xlsx => "Excel (.xlsx)",
        }
    }
}

/// What a file's extension announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Announced {
    /// A format zhiku reads.
    Known(Format),
    /// A legacy binary Office format, reported as unsupported.
    Legacy,
}

/// Chooses the format of a file from its first bytes (and, for a zip package, its part
/// names), falling back on what its extension announces. A file whose content contradicts its
/// extension is read as what its content is; content zhiku cannot read is an error naming it.
pub fn detect(announced: Announced, bytes: &[u8]) -> Result<Format> {
    let head = &bytes[..bytes.len().min(1024)];
    // Text that merely mentions "%PDF-" or starts with "MZ" is still text: a signature counts
    // at the very start, or, for a PDF's header (which writers may put a little way in), within
    // the first KiB of a file that is announced as a PDF or is not text at all.
    let binaryish = head.contains(&0) || !is_utf8_prefix(head);
    let announced_text = matches!(
        announced,
        Announced::Known(Format::Markdown | Format::Text | Format::Csv | Format::Html)
    );
    let pdf_at_start = bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .trim_ascii_start()
        .starts_with(b"%PDF-");
    if pdf_at_start
        || (find(head, b"%PDF-").is_some()
            && (announced == Announced::Known(Format::Pdf) || binaryish))
    {
        return Ok(Format::Pdf);
    }
    if bytes.starts_with(b"PK\x03\x04") {
        return zip_format(bytes);
    }
    if bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        bail!(
            "legacy binary Office file (.doc/.xls/.ppt, or an encrypted Office file): unsupported; save it as .docx, .xlsx or .pptx"
        );
    }
    if let Some(kind) = binary_signature(bytes).filter(|_| !announced_text || binaryish) {
        bail!("content is {kind}, not a document zhiku reads");
    }
    let format = match announced {
        Announced::Legacy => {
            bail!("legacy binary Office format: unsupported; save it as .docx, .xlsx or .pptx")
        }
        Announced::Known(f) => f,
    };
    Ok(match format {
        // Text that is really HTML is read as HTML, whatever the extension says.
        Format::Markdown | Format::Text | Format::Csv if looks_like_html(head) => Format::Html,
        Format::Markdown | Format::Text | Format::Csv | Format::Html => format,
        other => bail!(
            "not a {} file: its content is neither a PDF nor a zip package",
            other.name()
        ),
    })
}

fn zip_format(bytes: &[u8]) -> Result<Format> {
    let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| anyhow::anyhow!("damaged zip package: {e}"))?;
    let names: Vec<String> = archive
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .collect();
    let has = |n: &str| names.iter().any(|x| x.eq_ignore_ascii_case(n));
    if has("word/document.xml") {
        Ok(Format::Docx)
    } else if has("ppt/presentation.xml") {
        Ok(Format::Pptx)
    } else if has("xl/workbook.xml") {
        Ok(Format::Xlsx)
    } else if has("META-INF/container.xml") {
        Ok(Format::Epub)
    } else if has("EncryptedPackage") {
        bail!("encrypted Office file: unsupported")
    } else {
        bail!("a zip archive that is not a Word, PowerPoint, Excel or EPUB package")
    }
}

fn binary_signature(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xFF\xD8\xFF", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"\x1F\x8B", "gzip-compressed data"),
        (b"7z\xBC\xAF\x27\x1C", "a 7-Zip archive"),
        (b"Rar!", "a RAR archive"),
        (b"\x7FELF", "an executable (ELF)"),
        (b"MZ", "an executable (PE)"),
        (b"SQLite format 3\0", "an SQLite database"),
        (b"{\\rtf", "RTF (unsupported)"),
    ];
    SIGNATURES
        .iter()
        .find(|(sig, _)| bytes.starts_with(sig))
        .map(|(_, kind)| *kind)
}

/// True when `head` is UTF-8, allowing a character cut off at its end.
fn is_utf8_prefix(head: &[u8]) -> bool {
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

fn looks_like_html(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let start = text.trim_start_matches('\u{feff}').trim_start();
    let lower: String = start
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    lower.starts_with("<!doctype html") || lower.starts_with("<html")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Per-file extraction bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most bytes read out of a zip package (all parts together): a zip bomb stops here.
    pub max_unpacked_bytes: u64,
    /// Most bytes of extracted text.
    pub max_text_bytes: usize,
    /// Most pages of a PDF (or slides, sheets' rows in thousands are bounded by text).
    pub max_pages: usize,
    /// When extraction must have finished.
    pub deadline: Instant,
}

impl Limits {
    /// Bounds no test file comes near (a minute, 1 GiB unpacked, 10 MiB of text, 1,000 pages).
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        Self {
            max_unpacked_bytes: 1 << 30,
            max_text_bytes: 10 << 20,
            max_pages: 1000,
            deadline: Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    /// Fails once the deadline has passed.
    pub fn check_time(&self) -> Result<()> {
        if Instant::now() > self.deadline {
            bail!("extraction took longer than the time limit (loader.max_extract_seconds)");
        }
        Ok(())
    }
}

/// A file rendered for the chunker (sent from an extraction worker as JSON).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Extracted {
    /// Headings, paragraphs and page breaks, as described in the [module docs](self).
    pub text: String,
    /// The title the file declares (PDF info, docx core properties, HTML `<title>`, …).
    pub title: Option<String>,
    /// The language the file declares (BCP 47), when it does.
    pub locale: Option<String>,
    /// The page count, for a paginated format.
    pub pages: Option<u32>,
    /// True when the headings are labels zhiku made (row groups of a sheet), not the file's
    /// own: the first of them is then no title.
    pub synthetic_headings: bool,
}

/// Extracts a file of `format` from its `bytes`.
pub fn extract(format: Format, bytes: &[u8], limits: &Limits) -> Result<Extracted> {
    let extracted = match format {
        Format::Pdf => pdf::extract(bytes, limits)?,
        Format::Docx => docx::extract(bytes, limits)?,
        Format::Html => html::extract(&decode_text(bytes)?, limits)?,
        Format::Epub => epub::extract(bytes, limits)?,
        Format::Pptx => pptx::extract(bytes, limits)?,
        Format::Csv => sheet::extract_csv(bytes, limits)?,
        Format::Xlsx => sheet::extract_xlsx(bytes, limits)?,
        Format::Markdown | Format::Text => bail!("{} is read as text", format.name()),
    };
    if extracted.text.trim().is_empty() {
        bail!("no text found in this {} file", format.name());
    }
    Ok(extracted)
}

/// Decodes text content: UTF-8 (with or without a BOM), or UTF-16 with a BOM.
pub fn decode_text(bytes: &[u8]) -> Result<String> {
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        anyhow::anyhow!(
            "not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

fn utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> Result<String> {
    let units = bytes.chunks_exact(2).map(|p| word([p[0], p[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|_| anyhow::anyhow!("not valid UTF-16"))
}

/// A zip package read within [`Limits::max_unpacked_bytes`] for all its parts together.
#[derive(Debug)]
pub struct Package<'a> {
    archive: zip::ZipArchive<std::io::Cursor<&'a [u8]>>,
    budget: u64,
    limit: u64,
}

impl<'a> Package<'a> {
    /// Opens a package.
    pub fn open(bytes: &'a [u8], limits: &Limits) -> Result<Self> {
        let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| anyhow::anyhow!("damaged zip package: {e}"))?;
        Ok(Self {
            archive,
            budget: limits.max_unpacked_bytes,
            limit: limits.max_unpacked_bytes,
        })
    }

    /// The part names, in archive order.
    pub fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.into_owned()))
            .collect()
    }

    /// Part `name` (case-insensitive) as a stream, `None` when there is no such part: nothing
    /// of it is held in memory but what the reader keeps. Reading fails, with an error, once
    /// the package has given out its unpacking budget.
    pub fn read_stream(&mut self, name: &str) -> Result<Option<PartReader<'_, 'a>>> {
        let Some(part) = open_part(&mut self.archive, name)? else {
            return Ok(None);
        };
        Ok(Some(PartReader {
            part,
            budget: &mut self.budget,
            limit: self.limit,
            name: name.to_string(),
        }))
    }
}

/// A part of a [`Package`] read as a stream ([`Package::read_stream`]). Its read errors say
/// what went wrong (a damaged package, or the unpacking budget spent) in their message.
pub struct PartReader<'p, 'a> {
    part: zip::read::ZipFile<'p, std::io::Cursor<&'a [u8]>>,
    budget: &'p mut u64,
    limit: u64,
    name: String,
}

impl PartReader<'_, '_> {
    /// The size the package declares for the part once unpacked (a hint: it may lie).
    pub fn declared_size(&self) -> u64 {
        self.part.size()
    }
}

impl Read for PartReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.part.read(buf).map_err(|e| {
            std::io::Error::other(format!("damaged zip package: part {}: {e}", self.name))
        })?;
        if read as u64 > *self.budget {
            return Err(std::io::Error::other(format!(
                "unpacks to more than {} bytes (loader.max_unpacked_bytes): refused as a possible zip bomb",
                self.limit
            )));
        }
        *self.budget -= read as u64;
        Ok(read)
    }
}

impl std::fmt::Debug for PartReader<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartReader")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Part `name` (case-insensitive) of `archive`, opened for reading and not encrypted; `None`
/// when there is no such part.
fn open_part<'z, 'a>(
    archive: &'z mut zip::ZipArchive<std::io::Cursor<&'a [u8]>>,
    name: &str,
) -> Result<Option<zip::read::ZipFile<'z, std::io::Cursor<&'a [u8]>>>> {
    let Some(index) = (0..archive.len()).find(|&i| {
        archive
            .name_for_index(i)
            .is_some_and(|n| n.is_ok_and(|n| n.eq_ignore_ascii_case(name)))
    }) else {
        return Ok(None);
    };
    let part = archive
        .by_index(index)
        .map_err(|e| anyhow::anyhow!("damaged zip package: part {name}: {e}"))?;
    if part.encrypted() {
        bail!("encrypted zip package: part {name} cannot be read");
    }
    Ok(Some(part))
}

/// Writes the chunker's text shape (see the [module docs](self)), keeping within
/// [`Limits::max_text_bytes`].
#[derive(Debug)]
pub struct TextBuilder {
    text: String,
    max: usize,
    pages: u32,
}

impl TextBuilder {
    /// An empty text bounded by `limits`.
    pub fn new(limits: &Limits) -> Self {
        Self {
            text: String::new(),
            max: limits.max_text_bytes,
            pages: 0,
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
        Ok(())
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

/// What a caught panic said (its `&str` or `String` payload; empty for any other).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Collapses whitespace (line breaks included) into single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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

    #[test]
    fn content_decides_over_the_extension() {
        let md = Announced::Known(Format::Markdown);
        assert_eq!(detect(md, b"%PDF-1.7\n...").unwrap(), Format::Pdf);
        assert_eq!(detect(md, b"<!DOCTYPE html><html>").unwrap(), Format::Html);
        assert_eq!(detect(md, b"# title").unwrap(), Format::Markdown);
        let pdf = Announced::Known(Format::Pdf);
        let err = detect(pdf, b"\x89PNG\r\n\x1a\nxxxx")
            .unwrap_err()
            .to_string();
        assert!(err.contains("PNG"), "{err}");
        let err = detect(pdf, b"just text").unwrap_err().to_string();
        assert!(err.contains("not a PDF"), "{err}");
        // Text that mentions a signature is text.
        let note = b"# Notes\n\nA PDF starts with `%PDF-1.7`.\n";
        assert_eq!(detect(md, note).unwrap(), Format::Markdown);
        let csv = Announced::Known(Format::Csv);
        assert_eq!(detect(csv, b"MZ,Mozambique,Maputo\n").unwrap(), Format::Csv);
        assert_eq!(detect(pdf, b"junk\n%PDF-1.4\n").unwrap(), Format::Pdf);
        let err = detect(Announced::Legacy, b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unsupported"), "{err}");
    }
}
