//! `zhiku` over a folder holding every document format it reads (the committed fixtures of
//! `tests/fixtures/formats`, made by real tools): each is indexed with its structure, a search
//! finds a passage of each, an answer cites a PDF page, and an edited PDF re-embeds only the
//! chunks whose text changed.

use std::path::{Path, PathBuf};

mod support;

use assert_cmd::Command;
use serde_json::Value;
use support::zhiku;

fn fixtures(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
}

fn json_of(cmd: &mut Command) -> (Option<i32>, Value) {
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

/// A knowledge base holding a copy of every fixture document (not the expectations).
fn kb_of_fixtures(kb: &Path) -> Vec<(String, Value)> {
    let mut expectations = Vec::new();
    for entry in std::fs::read_dir(fixtures("formats")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if let Some(file) = name.strip_suffix(".expect.json") {
            let e: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            std::fs::copy(fixtures("formats").join(file), kb.join(file)).unwrap();
            expectations.push((file.to_string(), e));
        }
    }
    expectations.sort_by(|a, b| a.0.cmp(&b.0));
    expectations
}

#[test]
fn every_format_is_indexed_found_and_cited_with_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let expectations = kb_of_fixtures(kb);
    let (code, report) = json_of(zhiku(kb).args(["index", "--json"]));
    // The encrypted PDF is reported (exit 3: something was skipped); everything else indexed.
    assert_eq!(code, Some(3), "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert_eq!(skipped[0]["path"], "encrypted.pdf");
    assert!(skipped[0]["reason"].as_str().unwrap().contains("encrypted"));
    assert_eq!(
        report["docs_added"].as_u64().unwrap() as usize,
        expectations.len() - 1
    );

    for (file, e) in &expectations {
        let Some(query) = e["probe"]["query"].as_str() else {
            continue;
        };
        if file == "encrypted.pdf" {
            continue;
        }
        let needle = e["probe"]["expect_substring"].as_str().unwrap();
        let (_, found) = json_of(zhiku(kb).args(["search", "--json", "-k", "8", query]));
        let hits = found["evidence"].as_array().unwrap();
        let hit = hits
            .iter()
            .find(|h| h["doc_id"] == *file && h["content"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("{file}: {query:?} does not find {needle:?}: {found}"));
        if let Some(page) = e["probe"]["page"].as_u64() {
            let pages = &hit["pages"];
            assert!(
                pages[0].as_u64().unwrap() <= page && page <= pages[1].as_u64().unwrap(),
                "{file}: expected page {page}, hit on {pages}"
            );
        }
        if let Some(heading) = e["probe"]["heading"].as_str() {
            // The section the passage is in (a sheet's rows: the sheet, above its row group).
            let path = hit["heading_path"].as_array().unwrap();
            assert!(path.iter().any(|h| h == heading), "{file}: {hit}");
        }
    }

    // An answer about a PDF cites the page its evidence lies on, and the section.
    // (`ask` refreshes the index first, and the encrypted PDF is still reported: exit 3.)
    let (code, frame) = json_of(zhiku(kb).args(["ask", "--json", "出境出差需要谁来审批？"]));
    assert_eq!(code, Some(3), "{frame}");
    assert_eq!(frame["status"], "answered", "{frame}");
    let citation = frame["citations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["doc_id"] == "zh-handbook-outline-2col.pdf")
        .unwrap_or_else(|| panic!("no citation of the handbook: {frame}"));
    assert_eq!(citation["pages"], serde_json::json!([2, 2]), "{citation}");
    assert_eq!(citation["heading_path"][1], "2.4 出差与外出", "{citation}");
    zhiku(kb).arg("verify").assert().success();
}

#[test]
fn an_edited_pdf_re_embeds_only_the_chunks_whose_text_changed() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let name = "zh-cid-reportlab.pdf";
    std::fs::copy(fixtures("formats").join(name), kb.join(name)).unwrap();
    let (_, first) = json_of(zhiku(kb).args(["index", "--json"]));
    let chunks = first["chunks_embedded"].as_u64().unwrap();
    assert!(chunks >= 4, "{first}");
    // The same PDF made again with one sentence on its second page changed.
    std::fs::copy(fixtures("formats-edited").join(name), kb.join(name)).unwrap();
    let (_, edit) = json_of(zhiku(kb).args(["index", "--json"]));
    assert_eq!(edit["docs_changed"], 1, "{edit}");
    let embedded = edit["chunks_embedded"].as_u64().unwrap();
    assert!(
        (1..=2).contains(&embedded),
        "only the edited paragraph's chunks: {edit}"
    );
    assert_eq!(
        edit["chunks_reused"].as_u64().unwrap() + embedded,
        chunks,
        "{edit}"
    );
    let (_, found) = json_of(zhiku(kb).args(["search", "--json", "信用卡退款需要几个工作天入帐"]));
    let top = &found["evidence"][0];
    assert!(
        top["content"].as_str().unwrap().contains("五至七個工作天"),
        "{found}"
    );
    assert_eq!(top["pages"], serde_json::json!([2, 2]), "{found}");
}
