//! What extracting a file gives: its text in the chunker's shape and what the file declares.

/// A file rendered for the chunker (sent from an extraction worker as JSON).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Extracted {
    /// Headings, paragraphs and page breaks, as described in the [crate docs](crate).
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
    /// The OCR engine that read some of its pages (pictures, PDF pages without a text
    /// layer), when one did.
    #[serde(default)]
    pub ocr: Option<String>,
    /// Where the text's lines stand on their pages, for a paginated format laid out from
    /// positions (PDF pages, text layer or OCR, and pictures): each line's characters in
    /// `text` and its box. Lines the text does not hold verbatim are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<LineBox>,
}

/// A line of the extracted text on its page: characters `start..end` of the text (counted in
/// characters) and the line's box as fractions of the page's width and height, measured from
/// its top-left corner (`x0 < x1`, `y0 < y1`, all within 0–1).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LineBox {
    /// First character (inclusive).
    pub start: usize,
    /// Last character (exclusive).
    pub end: usize,
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
    /// The clockwise quarter turns that make the page's picture upright (OCR found it on its
    /// side or upside down); the box is on the upright page.
    #[serde(default)]
    pub turn: u16,
    /// OCR's confidence in the line's text, 0 to 1; `None` for a text layer's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}
