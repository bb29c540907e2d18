//! Which format a file is: its content first (magic bytes, the parts of a zip package), the
//! extension only where the content cannot tell.

use anyhow::{Result, bail};

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
    /// A picture of pages: PNG, JPEG, TIFF (every page), WebP, BMP; read by OCR.
    Image,
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
            "png" | "jpg" | "jpeg" | "tif" | "tiff" | "webp" | "bmp" => Known(Image),
            "doc" | "ppt" | "xls" => Legacy,
            _ => return None,
        })
    }

    /// True for formats read as text (front matter and `load_text` apply), decoded by
    /// [`decode_text_file`](crate::decode_text_file).
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
            Format::Image => "image",
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
    if crate::scan::ImageKind::sniff(bytes).is_some() && (!announced_text || binaryish) {
        return Ok(Format::Image);
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
        Format::Image => bail!("not an image: its content is no PNG, JPEG, TIFF, WebP or BMP"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_decides_over_the_extension() {
        let md = Announced::Known(Format::Markdown);
        assert_eq!(detect(md, b"%PDF-1.7\n...").unwrap(), Format::Pdf);
        assert_eq!(detect(md, b"<!DOCTYPE html><html>").unwrap(), Format::Html);
        assert_eq!(detect(md, b"# title").unwrap(), Format::Markdown);
        let pdf = Announced::Known(Format::Pdf);
        // A picture named .pdf is a picture (read by OCR); one named .md too, being binary.
        assert_eq!(
            detect(pdf, b"\x89PNG\r\n\x1a\nxxxx").unwrap(),
            Format::Image
        );
        assert_eq!(
            detect(md, b"\xFF\xD8\xFF\xE0\0\x10JFIF\0").unwrap(),
            Format::Image
        );
        let gif = detect(pdf, b"GIF89a....").unwrap_err().to_string();
        assert!(gif.contains("GIF"), "{gif}");
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
