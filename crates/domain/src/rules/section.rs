//! Reading order: a document, a section of it (with its subsections), or a chunk.
//!
//! A section is the part of a document under one heading path; its subtree is every chunk whose
//! heading path starts with that path, so the section of `# A` holds `## B` under it. The empty
//! path is the whole document. Chunks of one document come in order and a section's first chunk
//! starts at its heading (overlap never crosses a section), so a subtree's text is the
//! document's own text from its first chunk's start to its last chunk's end.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::chunker::char_to_byte_table;
use crate::contracts::{Chunk, DocId, Document, Revision, SectionId};

/// Why a read gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The document has no section of that ID (now: a renamed heading has a new ID).
    #[error("document {doc:?} has no section {section}")]
    NoSuchSection {
        /// The document.
        doc: String,
        /// The section asked for.
        section: String,
    },
    /// What was asked is larger than a read may return.
    #[error(
        "{what} has {chars} characters; a read returns at most {limit}: read one of its sections instead"
    )]
    TooLarge {
        /// The document, or the section of it.
        what: String,
        /// Its size in characters.
        chars: usize,
        /// The limit in characters.
        limit: usize,
    },
}

/// One section of a document's outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionEntry {
    /// Its ID.
    pub section: SectionId,
    /// Its headings, outermost first.
    pub heading_path: Vec<String>,
    /// Characters of its own chunks and its subsections' together.
    pub chars: usize,
}

/// A document or a section subtree, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The document.
    pub doc_id: DocId,
    /// The revision the text was read at.
    pub revision: Revision,
    /// The section read (the whole document's is the empty path's).
    pub section: SectionId,
    /// Its headings, outermost first (empty for the whole document).
    pub heading_path: Vec<String>,
    /// The text: the document's own characters from the subtree's first chunk to its last
    /// (two runs of one ID, far apart, are joined by a blank line).
    pub text: String,
    /// The subtree's chunks, in document order.
    pub chunks: Vec<Chunk>,
    /// The sections within it (itself first), in document order.
    pub outline: Vec<SectionEntry>,
}

/// The heading path of `section` among `chunks` (one document's), if a chunk sits in it or in a
/// subsection of it.
pub fn section_path(chunks: &[Chunk], section: &SectionId) -> Option<Vec<String>> {
    let doc = chunks.first()?.doc_id();
    let mut seen: BTreeMap<&[String], ()> = BTreeMap::new();
    for chunk in chunks {
        if chunk.section() == section {
            return Some(chunk.heading_path().to_vec());
        }
        let path = chunk.heading_path();
        for n in 0..path.len() {
            let prefix = &path[..n];
            if seen.insert(prefix, ()).is_none() && &SectionId::derive(doc, prefix) == section {
                return Some(prefix.to_vec());
            }
        }
    }
    None
}

/// The chunks of the subtree under `path` among `chunks`, in order.
pub fn subtree<'c>(chunks: &'c [Chunk], path: &[String]) -> Vec<&'c Chunk> {
    chunks
        .iter()
        .filter(|c| c.heading_path().starts_with(path))
        .collect()
}

/// Reads `doc` whole (`section: None`) or the subtree of `section`, from `chunks` (the document's
/// chunks in order, as indexed at its revision), refusing more than `max_chars` characters.
pub fn read(
    doc: &Document,
    chunks: &[Chunk],
    section: Option<&SectionId>,
    max_chars: usize,
) -> Result<Reading, ReadError> {
    let (path, what) = match section {
        None => (Vec::new(), format!("document {:?}", doc.id().as_str())),
        Some(s) => {
            let path = section_path(chunks, s).ok_or_else(|| ReadError::NoSuchSection {
                doc: doc.id().to_string(),
                section: s.to_string(),
            })?;
            let what = format!(
                "section {s} ({}) of document {:?}",
                shown_path(&path),
                doc.id().as_str()
            );
            (path, what)
        }
    };
    let picked = subtree(chunks, &path);
    let text = if path.is_empty() {
        doc.content().to_string()
    } else {
        runs_text(doc.content(), &picked)
    };
    let size = text.chars().count();
    if size > max_chars {
        return Err(ReadError::TooLarge {
            what,
            chars: size,
            limit: max_chars,
        });
    }
    Ok(Reading {
        doc_id: doc.id().clone(),
        revision: doc.revision().clone(),
        section: SectionId::derive(doc.id(), &path),
        outline: outline(&picked, path.len()),
        heading_path: path,
        text,
        chunks: picked.into_iter().cloned().collect(),
    })
}

fn shown_path(path: &[String]) -> String {
    if path.is_empty() {
        "the whole document".to_string()
    } else {
        path.join(" > ")
    }
}

/// The document's text over `chunks` (in order): each run of overlapping or touching chunks once,
/// runs joined by a blank line.
fn runs_text(content: &str, chunks: &[&Chunk]) -> String {
    let byte_at = char_to_byte_table(content);
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for c in chunks {
        match runs.last_mut() {
            Some(last) if c.start() <= last.1 => last.1 = last.1.max(c.end()),
            _ => runs.push((c.start(), c.end())),
        }
    }
    runs.iter()
        .filter_map(|&(s, e)| content.get(*byte_at.get(s)?..*byte_at.get(e)?))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Every section with a heading path at least `depth` long among `chunks`, in first-seen order,
/// with the characters of its subtree.
fn outline(chunks: &[&Chunk], depth: usize) -> Vec<SectionEntry> {
    let mut out: Vec<SectionEntry> = Vec::new();
    for chunk in chunks {
        let path = chunk.heading_path();
        for n in depth..=path.len() {
            let prefix = &path[..n];
            match out.iter_mut().find(|e| e.heading_path == prefix) {
                Some(entry) => entry.chars += chunk.char_len(),
                None => out.push(SectionEntry {
                    section: SectionId::derive(chunk.doc_id(), prefix),
                    heading_path: prefix.to_vec(),
                    chars: chunk.char_len(),
                }),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::chunk_document;
    use crate::{ChunkingPolicy, Source};

    fn doc(text: &str) -> Document {
        Document::builder(
            DocId::new("g.md").unwrap(),
            Source::new("g.md").unwrap(),
            text,
        )
        .build()
    }

    fn policy() -> ChunkingPolicy {
        ChunkingPolicy::with_sizes(60, 0).unwrap()
    }

    const TEXT: &str = "intro line\n\n# Install\n\nInstall it like this.\n\n## Linux\n\nUse the package manager on Linux.\n\n## Windows\n\nRun the installer on Windows.\n\n# Use\n\nRun zhiku index, then ask.\n";

    fn section_of(d: &Document, path: &[&str]) -> SectionId {
        SectionId::derive(d.id(), path)
    }

    #[test]
    fn a_section_id_survives_an_edit_elsewhere_and_a_rename_makes_a_new_one() {
        let before = doc(TEXT);
        let edited = doc(&TEXT.replace("Run zhiku index", "Run zhiku index --watch"));
        let renamed = doc(&TEXT.replace("## Linux", "## GNU/Linux"));
        let sections = |d: &Document| {
            chunk_document(d, &policy())
                .iter()
                .map(|c| (c.heading_path().join(">"), c.section().clone()))
                .collect::<BTreeMap<_, _>>()
        };
        let (a, b, c) = (sections(&before), sections(&edited), sections(&renamed));
        assert_eq!(a["Install>Linux"], b["Install>Linux"]);
        assert_eq!(a["Install>Windows"], c["Install>Windows"]);
        assert!(!c.contains_key("Install>Linux"));
        assert!(!a.values().any(|s| s == &c["Install>GNU/Linux"]));
        // The whole document's section is the empty path's, the preamble's too.
        assert_eq!(a[""], section_of(&before, &[]));
    }

    #[test]
    fn a_section_is_read_with_its_subsections_and_the_revision() {
        let d = doc(TEXT);
        let chunks = chunk_document(&d, &policy());
        let r = read(&d, &chunks, Some(&section_of(&d, &["Install"])), 10_000).unwrap();
        assert_eq!(r.heading_path, ["Install"]);
        assert_eq!(&r.revision, d.revision());
        assert!(r.text.starts_with("# Install\n"), "{:?}", r.text);
        assert!(r.text.contains("Linux.") && r.text.contains("Windows."));
        assert!(!r.text.contains("intro") && !r.text.contains("# Use"));
        assert!(TEXT.contains(&r.text));
        let shown: Vec<String> = r.outline.iter().map(|e| e.heading_path.join(">")).collect();
        assert_eq!(shown, ["Install", "Install>Linux", "Install>Windows"]);
        // A nested section alone.
        let r = read(
            &d,
            &chunks,
            Some(&section_of(&d, &["Install", "Linux"])),
            10_000,
        )
        .unwrap();
        assert_eq!(r.text, "## Linux\n\nUse the package manager on Linux.\n\n");
        // The whole document.
        let whole = read(&d, &chunks, None, 10_000).unwrap();
        assert_eq!(whole.text, TEXT);
        assert_eq!(whole.section, section_of(&d, &[]));
        assert_eq!(whole.chunks, chunks);
    }

    #[test]
    fn a_title_whose_text_joined_its_subsection_is_still_a_section() {
        let d = doc("# Guide\n\n## Start\n\nFirst steps.\n\n## Next\n\nMore steps.\n");
        let chunks = chunk_document(&d, &ChunkingPolicy::with_sizes(40, 0).unwrap());
        assert!(chunks.iter().all(|c| c.heading_path().len() == 2));
        let r = read(&d, &chunks, Some(&section_of(&d, &["Guide"])), 1000).unwrap();
        assert_eq!(r.text, d.content());
    }

    #[test]
    fn reads_are_bounded_and_unknown_sections_are_named() {
        let d = doc(TEXT);
        let chunks = chunk_document(&d, &policy());
        let e = read(&d, &chunks, None, 20).unwrap_err();
        assert_eq!(
            e,
            ReadError::TooLarge {
                what: "document \"g.md\"".into(),
                chars: TEXT.chars().count(),
                limit: 20
            }
        );
        assert!(e.to_string().contains("at most 20"), "{e}");
        let gone = section_of(&d, &["Install", "macOS"]);
        let e = read(&d, &chunks, Some(&gone), 10_000).unwrap_err();
        assert!(matches!(e, ReadError::NoSuchSection { .. }), "{e}");
    }
}
