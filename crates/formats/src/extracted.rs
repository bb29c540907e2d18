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
}
