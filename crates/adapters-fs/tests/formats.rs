//! The format extractors on real files made by real tools (`tests/fixtures/formats`, made by
//! `scripts/make-format-fixtures.sh`): the extracted text against the text each file was made
//! from, pages, heading paths, titles and languages; and bad files reported by path and reason
//! while the rest of the folder loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use zhiku_adapters_fs::loader::{LoaderConfig, load_folder};
use zhiku_domain::{Chunk, ChunkingPolicy, Document, chunker::chunk_document};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats")
}

fn expectations() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if let Some(file) = name.strip_suffix(".expect.json") {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            out.push((file.to_string(), v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The fixtures folder as the loader sees it (the expectation files are not documents).
fn loaded() -> (BTreeMap<String, Document>, BTreeMap<String, String>) {
    let config = LoaderConfig {
        racy_window: std::time::Duration::ZERO,
        ..LoaderConfig::default()
    };
    let loaded = load_folder(&fixtures(), &config).unwrap();
    let docs = loaded
        .documents
        .into_iter()
        .map(|d| (d.attributes().source.to_string(), d))
        .collect();
    let skipped = loaded
        .skipped
        .into_iter()
        .map(|s| (s.path, s.reason))
        .collect();
    (docs, skipped)
}

/// The text with the structure zhiku adds (heading marks, table bars, escapes, list bullets,
/// note labels and footnote markers) and all whitespace removed, for comparing with the
/// source text.
fn squash(text: &str) -> Vec<char> {
    // Markup is not text: heading and list marks, a pipe table's bars and delimiter rows.
    let delimiter = |l: &str| {
        let l = l.trim();
        l.starts_with('|') && l.contains('-') && l.chars().all(|c| "|-: ".contains(c))
    };
    text.lines()
        .filter(|l| !delimiter(l))
        .map(|l| {
            let l = l.trim_start();
            let l = l.trim_start_matches('#');
            let l = l.strip_prefix("- ").unwrap_or(l);
            let l = l
                .strip_prefix("备注：")
                .or_else(|| l.strip_prefix("Notes: "))
                .unwrap_or(l);
            footnote_markers(l)
        })
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '|' | '\\' | '\u{c}'))
        .collect()
}

/// `text` without `[^n]` footnote markers.
fn footnote_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("[^") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(']') {
            rest = &after[digits + 1..];
        } else {
            out.push_str("[^");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// 1 - normalised Levenshtein distance.
fn similarity(a: &[char], b: &[char]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    1.0 - prev[b.len()] as f64 / a.len().max(b.len()) as f64
}

/// The chunk whose text holds `needle` (whitespace and zhiku's structure aside).
fn chunk_holding<'a>(chunks: &'a [Chunk], needle: &str, file: &str) -> &'a Chunk {
    let needle: String = squash(needle).into_iter().collect();
    chunks
        .iter()
        .find(|c| {
            squash(c.content())
                .into_iter()
                .collect::<String>()
                .contains(&needle)
        })
        .unwrap_or_else(|| panic!("{file}: no chunk holds {needle:?}"))
}

fn heading_paths(text: &str) -> Vec<Vec<String>> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let level = line.chars().take_while(|&c| c == '#').count();
        if level == 0 || !line[level..].starts_with(' ') {
            continue;
        }
        while stack.last().is_some_and(|(l, _)| *l >= level) {
            stack.pop();
        }
        stack.push((level, line[level..].trim().to_string()));
        out.push(stack.iter().map(|(_, h)| h.clone()).collect());
    }
    out
}

fn text_formats() -> Vec<(String, Value)> {
    expectations()
        .into_iter()
        .filter(|(_, e)| {
            !e["format"]
                .as_str()
                .is_some_and(|f| f == "xlsx" || f == "csv")
        })
        .filter(|(_, e)| {
            e.get("encrypted")
                .is_none_or(|v| !v.as_bool().unwrap_or(false))
        })
        .collect()
}

#[test]
fn every_text_layer_format_is_extracted_close_to_its_source_text() {
    let (docs, skipped) = loaded();
    let mut report = Vec::new();
    for (file, e) in text_formats() {
        let doc = docs
            .get(&file)
            .unwrap_or_else(|| panic!("{file} not loaded: {:?}", skipped.get(&file)));
        let sim = similarity(&squash(doc.content()), &squash(e["text"].as_str().unwrap()));
        report.push(format!("{file}: {sim:.4}"));
        assert!(
            sim >= 0.98,
            "{file}: similarity {sim:.4}\n{}",
            doc.content()
        );
        for absent in e["absent"].as_array().into_iter().flatten() {
            let absent = absent.as_str().unwrap();
            let squashed: String = squash(absent).into_iter().collect();
            let content: String = squash(doc.content()).into_iter().collect();
            assert!(
                !content.contains(&squashed),
                "{file}: {absent:?} should be left out"
            );
        }
    }
    eprintln!("similarity to the source text: {}", report.join(", "));
}

#[test]
fn pdf_pages_are_kept_and_each_page_holds_its_own_text() {
    let (docs, _) = loaded();
    for (file, e) in text_formats() {
        let Some(pages) = e["pages"].as_array() else {
            continue;
        };
        let doc = &docs[&file];
        assert_eq!(
            doc.attributes().page_count,
            Some(pages.len() as u32),
            "{file}"
        );
        let got: Vec<&str> = doc.content().split('\u{c}').collect();
        assert_eq!(got.len(), pages.len(), "{file}");
        for (i, (got, want)) in got.iter().zip(pages).enumerate() {
            let sim = similarity(&squash(got), &squash(want.as_str().unwrap()));
            assert!(
                sim >= 0.98,
                "{file} page {}: similarity {sim:.4}\n{got}",
                i + 1
            );
        }
        // Every chunk says which pages it lies on, and its text is on them.
        let chunks = chunk_document(doc, &ChunkingPolicy::default());
        for c in &chunks {
            let p = c
                .pages()
                .unwrap_or_else(|| panic!("{file}: chunk without pages"));
            assert!(
                p.first() >= 1 && p.last() as usize <= pages.len(),
                "{file}: {p}"
            );
        }
        if let Some(page) = e["probe"]["page"].as_u64() {
            let needle = e["probe"]["expect_substring"].as_str().unwrap();
            let c = chunk_holding(&chunks, needle, &file);
            let p = c.pages().unwrap();
            assert!(
                (p.first() as u64..=p.last() as u64).contains(&page),
                "{file}: {needle:?} on {p}, expected page {page}"
            );
        }
    }
}

#[test]
fn headings_become_the_heading_paths_of_chunks() {
    let (docs, _) = loaded();
    for (file, e) in text_formats() {
        let want: Vec<Vec<String>> = serde_json::from_value(e["headings"].clone()).unwrap();
        let doc = &docs[&file];
        // The closing section zhiku gives a document's footnotes is not in the source's outline.
        let mut got = heading_paths(doc.content());
        got.retain(|p| p != &["脚注"] && p != &["Notes"]);
        assert_eq!(got, want, "{file}\n{}", doc.content());
        if let Some(heading) = e["probe"]["heading"].as_str() {
            let needle = e["probe"]["expect_substring"].as_str().unwrap();
            let chunks = chunk_document(doc, &ChunkingPolicy::default());
            let c = chunk_holding(&chunks, needle, &file);
            assert_eq!(
                c.heading_path().last().map(String::as_str),
                Some(heading),
                "{file}"
            );
        }
    }
}

#[test]
fn titles_and_languages_come_from_the_files_themselves() {
    let (docs, _) = loaded();
    for (file, e) in expectations() {
        let Some(doc) = docs.get(&file) else { continue };
        if let Some(title) = e["title"].as_str() {
            let got = doc.attributes().title.to_string();
            let h1 = e["h1"].as_str();
            assert!(
                got == title || Some(got.as_str()) == h1,
                "{file}: title {got:?}, expected {title:?}"
            );
        }
        if let Some(locale) = e["locale"].as_str() {
            assert_eq!(doc.attributes().locale.to_string(), locale, "{file}");
        }
    }
}

#[test]
fn every_cell_of_a_sheet_is_kept_with_its_header_in_each_chunk() {
    let (docs, _) = loaded();
    for (file, e) in expectations() {
        let rows: Vec<Vec<String>> = match e["format"].as_str() {
            Some("csv") => serde_json::from_value(e["rows"].clone()).unwrap(),
            Some("xlsx") => e["sheets"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|rows| serde_json::from_value::<Vec<Vec<String>>>(rows.clone()).unwrap())
                .collect(),
            _ => continue,
        };
        let doc = &docs[&file];
        for cell in rows.iter().flatten().filter(|c| !c.is_empty()) {
            let cell = cell.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                doc.content().contains(&cell),
                "{file}: cell {cell:?} missing"
            );
        }
        // A row group per chunk, each beginning with its header row.
        let header = rows[0]
            .iter()
            .filter(|c| !c.is_empty())
            .cloned()
            .collect::<Vec<_>>();
        for c in chunk_document(doc, &ChunkingPolicy::default()) {
            assert!(
                header.iter().all(|h| c.content().contains(h.as_str())),
                "{file}: a chunk without the header row:\n{}",
                c.content()
            );
        }
    }
}

#[test]
fn an_encrypted_pdf_is_reported_as_such() {
    let (docs, skipped) = loaded();
    assert!(!docs.contains_key("encrypted.pdf"));
    let reason = &skipped["encrypted.pdf"];
    assert!(reason.contains("encrypted"), "{reason}");
}

/// A minimal PDF of `pages` pages that all share one content stream (`content`), written with
/// a correct cross-reference table. Pages hang off intermediate page-tree nodes of at most
/// 1,000 kids, as a real writer would lay out a huge document.
fn pdf_with(pages: usize, content: &str) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new();
    // 1: catalog, 2: root pages, 3: the page content, 4: the shared page, 5..: tree nodes.
    let nodes = pages.div_ceil(1000);
    let node_ids: Vec<usize> = (0..nodes).map(|i| 5 + i).collect();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = node_ids.iter().map(|i| format!("{i} 0 R")).collect();
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {pages} >>",
        kids.join(" ")
    ));
    objects.push(format!(
        "<< /Length {} >>\nstream\n{content}\nendstream",
        content.len()
    ));
    objects.push(
        "<< /Type /Page /Parent 5 0 R /MediaBox [0 0 595 842] /Contents 3 0 R /Resources << >> >>"
            .into(),
    );
    for (n, _) in node_ids.iter().enumerate() {
        let here = (pages - n * 1000).min(1000);
        let kids = vec!["4 0 R"; here].join(" ");
        objects.push(format!(
            "<< /Type /Pages /Parent 2 0 R /Kids [{kids}] /Count {here} >>"
        ));
    }
    let mut out = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn zip_with(parts: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in parts {
        w.start_file(*name, options).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn bad_files_are_reported_by_path_and_reason_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let fixture = |name: &str| std::fs::read(fixtures().join(name)).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(root.join(name), bytes).unwrap();
    write(
        "good.md",
        "# 好的文档\n\n这份文档应当照常载入。\n".as_bytes(),
    );
    write("encrypted.pdf", &fixture("encrypted.pdf"));
    let whole = fixture("zh-cid-reportlab.pdf");
    write("truncated.pdf", &whole[..whole.len() * 6 / 10]);
    // A scan: a page with a drawing and no text at all.
    write("scanned.pdf", &pdf_with(1, "0.5 g 72 72 451 698 re f"));
    write("million-pages.pdf", &pdf_with(1_000_000, ""));
    let zeros = vec![0u8; 50 << 20];
    write(
        "bomb.docx",
        &zip_with(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("word/document.xml", &zeros),
        ]),
    );
    drop(zeros);
    let mut html = b"<!DOCTYPE html><html><body>".to_vec();
    while html.len() < 50 << 20 {
        html.extend_from_slice(b"<p>\xE5\xA4\xA7\xE6\x96\x87\xE4\xBB\xB6 big page text</p>\n");
    }
    write("huge.html", &html);
    drop(html);
    // Extensions that lie: content decides.
    write("report.pdf", &fixture("zh-policy.docx")); // a Word document named .pdf
    write("notes.txt", &fixture("en-guide.pdf")); // a PDF named .txt
    write("photo.docx", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"); // an image named .docx: read as a picture (here without OCR)
    write("old.doc", b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\0\0\0\0");
    let body = br#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p/></w:body></w:document>"#;
    write("empty.docx", &zip_with(&[("word/document.xml", body)]));

    let config = LoaderConfig {
        racy_window: std::time::Duration::ZERO,
        max_unpacked_bytes: 8 << 20,
        ..LoaderConfig::default()
    };
    let loaded = load_folder(root, &config).unwrap();
    let docs: BTreeMap<String, &Document> = loaded
        .documents
        .iter()
        .map(|d| (d.attributes().source.to_string(), d))
        .collect();
    let skipped: BTreeMap<&str, &str> = loaded
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    let expect = [
        ("encrypted.pdf", "encrypted"),
        ("truncated.pdf", "truncated"),
        ("scanned.pdf", "no text layer"),
        ("million-pages.pdf", "page limit"),
        ("bomb.docx", "zip bomb"),
        ("huge.html", "byte limit"),
        ("photo.docx", "picture"),
        ("old.doc", "unsupported"),
        ("empty.docx", "no text"),
    ];
    for (path, why) in expect {
        let reason = skipped
            .get(path)
            .unwrap_or_else(|| panic!("{path} not reported: {skipped:?}"));
        assert!(reason.contains(why), "{path}: {reason}");
    }
    assert_eq!(
        docs.keys().map(String::as_str).collect::<Vec<_>>(),
        ["good.md", "notes.txt", "report.pdf"]
    );
    assert!(
        docs["report.pdf"].content().contains("信息安全"),
        "read as Word"
    );
    assert_eq!(
        docs["notes.txt"].attributes().page_count,
        Some(2),
        "read as a PDF"
    );
    assert_eq!(skipped.len(), expect.len(), "{skipped:?}");
}

#[test]
fn extraction_stops_at_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.pdf"), pdf_with(1_000_000, "")).unwrap();
    let config = LoaderConfig {
        racy_window: std::time::Duration::ZERO,
        max_pages: 2_000_000,
        max_extract_time: std::time::Duration::from_millis(500),
        ..LoaderConfig::default()
    };
    let loaded = load_folder(dir.path(), &config).unwrap();
    assert!(loaded.documents.is_empty());
    assert!(
        loaded.skipped[0].reason.contains("time limit"),
        "{}",
        loaded.skipped[0].reason
    );
}
