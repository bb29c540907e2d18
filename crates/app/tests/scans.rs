//! `zhiku index` over scans, through the binary and its extraction workers: a picture of a
//! page (PNG, and a two-page TIFF), a PDF whose pages are pictures, and a mixed PDF (a text
//! page, then a scanned one) are read by OCR and found by a search on the page they are on;
//! a decompression bomb and, with OCR off, a picture are reported by path and reason while the
//! rest is indexed; pictures inside Word and PowerPoint files are read where they stand. The pages are drawn by the OCR contract suite's renderer; the engine is
//! Debian's Tesseract (`scripts/setup-ocr.sh`): without it each test says SKIPPED, unless
//! `ZHIKU_REQUIRE_OCR=1`.

use std::io::Cursor;
use std::path::{Path, PathBuf};

mod support;

use assert_cmd::Command;
use serde_json::Value;
use support::zhiku;
use zhiku_tests::contract::ocr::{Drawn, draw, font};

fn json_of(cmd: &mut Command) -> (Option<i32>, Value) {
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

/// The PP-OCR engine's folder (models and ONNX Runtime: `ZHIKU_TEST_PPOCR_DIR`, else
/// `~/.cache/zhiku/models/ppocr`), when it and a CJK font are here; says SKIPPED (or fails
/// under `ZHIKU_REQUIRE_OCR=1`) otherwise.
fn ocr_here(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("ZHIKU_TEST_PPOCR_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/zhiku/models/ppocr"))
        })
        .filter(|d| d.join(zhiku_adapters_ppocr::RUNTIME_LIBRARY).is_file());
    let ready = dir.filter(|_| font().is_some());
    if ready.is_none() {
        let why = "the PP-OCR models and ONNX Runtime (ZHIKU_TEST_PPOCR_DIR, from scripts/fetch-ocr-models.sh) and a CJK font are needed: run scripts/setup-ocr.sh";
        if std::env::var("ZHIKU_REQUIRE_OCR").is_ok_and(|v| v == "1") {
            panic!("ZHIKU_REQUIRE_OCR=1 but {why}");
        }
        zhiku_tests::contract::notice(&format!("SKIPPED scans::{test}: {why}"));
    }
    ready
}

/// `zhiku --kb KB` reading scans with the default engine from `models`, keeping what it
/// reads in a cache of the tests' own (a search re-checks a hit at its source, which for a
/// scan is the cached reading, not OCR again).
fn with_ocr(kb: &Path, models: &Path) -> Command {
    let mut cmd = zhiku(kb);
    cmd.env("ZHIKU_OCR_MODELS", models)
        .env("ORT_DISABLE_TELEMETRY", "1")
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("zhiku-scans-test-cache"),
        );
    cmd
}

fn page(lines: &[&str]) -> Drawn {
    draw(font().expect("checked by ocr_here"), lines, 36.0)
}

fn png_of(page: &Drawn) -> Vec<u8> {
    let img = image::RgbImage::from_raw(page.width, page.height, page.rgb.clone()).unwrap();
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn tiff_of(pages: &[&Drawn]) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    let mut encoder = tiff::encoder::TiffEncoder::new(&mut out).unwrap();
    for p in pages {
        encoder
            .write_image::<tiff::encoder::colortype::RGB8>(p.width, p.height, &p.rgb)
            .unwrap();
    }
    out.into_inner()
}

/// One page of a PDF: text drawn in Helvetica (a text layer), or a picture filling the page
/// (a scan: no text layer).
enum PdfPage<'a> {
    Text(&'a str),
    Scan(&'a Drawn),
    /// A scan of this size stored as JPEG 2000 (these bytes), which no decoder of zhiku's reads.
    Jpx(&'a Drawn, &'a [u8]),
}

/// A PDF of `pages`, written object by object (pictures stored uncompressed, RGB).
fn pdf_of(pages: &[PdfPage<'_>]) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    // 1: catalog, 2: page tree, 3: font; then per page: page, content, (picture).
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    objects.push(Vec::new()); // the page tree, once the kids are known
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    let mut kids = Vec::new();
    for page in pages {
        let page_id = objects.len() + 1;
        kids.push(format!("{page_id} 0 R"));
        let (w, h, content, picture) = match page {
            PdfPage::Text(text) => (
                595.0,
                842.0,
                format!("BT /F1 14 Tf 72 760 Td ({text}) Tj ET"),
                None,
            ),
            PdfPage::Scan(d) | PdfPage::Jpx(d, _) => {
                // 200 dpi: pixels to points.
                let (w, h) = (d.width as f32 * 0.36, d.height as f32 * 0.36);
                (w, h, format!("q {w} 0 0 {h} 0 0 cm /Im1 Do Q"), Some(*d))
            }
        };
        let content_id = page_id + 1;
        let resources = match picture {
            Some(_) => format!("<< /XObject << /Im1 {} 0 R >> >>", content_id + 1),
            None => "<< /Font << /F1 3 0 R >> >>".to_string(),
        };
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Resources {resources} /Contents {content_id} 0 R >>"
            )
            .into_bytes(),
        );
        let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
        stream.extend_from_slice(content.as_bytes());
        stream.extend_from_slice(b"\nendstream");
        objects.push(stream);
        if let PdfPage::Jpx(d, jpx) = page {
            let mut image = format!(
                "<< /Type /XObject /Subtype /Image /Width {} /Height {} /Filter /JPXDecode /Length {} >>\nstream\n",
                d.width,
                d.height,
                jpx.len()
            )
            .into_bytes();
            image.extend_from_slice(jpx);
            image.extend_from_slice(b"\nendstream");
            objects.push(image);
            continue;
        }
        if let Some(d) = picture {
            let mut image = format!(
                "<< /Type /XObject /Subtype /Image /Width {} /Height {} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Length {} >>\nstream\n",
                d.width,
                d.height,
                d.rgb.len()
            )
            .into_bytes();
            image.extend_from_slice(&d.rgb);
            image.extend_from_slice(b"\nendstream");
            objects.push(image);
        }
    }
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        kids.len()
    )
    .into_bytes();
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// The evidence a search for `query` finds in `doc`.
fn hit_in(mut cmd: Command, query: &str, doc: &str) -> Option<Value> {
    let (_, found) = json_of(cmd.args(["search", "--json", "-k", "10", query]));
    found["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["doc_id"] == doc)
        .cloned()
}

/// True when the hit's page range covers page `n`.
fn covers(hit: &Value, n: u64) -> bool {
    let pages = &hit["pages"];
    pages[0].as_u64().is_some_and(|a| a <= n) && pages[1].as_u64().is_some_and(|b| n <= b)
}

#[test]
fn scans_and_pictures_are_read_found_and_placed_on_their_page() {
    let Some(models) = ocr_here("scans_and_pictures_are_read_found_and_placed_on_their_page")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let contract = page(&[
        "合同的保修期为三年，自交付之日起计算。",
        "甲方应于每月十五日前支付服务费用。",
    ]);
    let notice = page(&[
        "本公司員工每年享有十五天帶薪假期。",
        "報銷申請須於出差結束後三十日內提交。",
    ]);
    let minutes = page(&[
        "会议纪要：第三季度预算调整为八十万元。",
        "下次会议定于十月九日召开。",
    ]);
    let invoice = page(&["发票号码为二零二四零八一五。", "开票金额合计一万二千元整。"]);
    std::fs::write(kb.join("contract.png"), png_of(&contract)).unwrap();
    std::fs::write(kb.join("faxes.tiff"), tiff_of(&[&notice, &minutes])).unwrap();
    std::fs::write(
        kb.join("mixed.pdf"),
        pdf_of(&[
            PdfPage::Text("Quarterly report: the text layer page."),
            PdfPage::Scan(&invoice),
        ]),
    )
    .unwrap();
    // A picture upside down is read upright.
    std::fs::write(kb.join("upside-down.png"), png_of(&minutes.turned(180))).unwrap();

    let (code, report) = json_of(with_ocr(kb, &models).args(["index", "--json"]));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["docs_added"], 4, "{report}");

    let hit =
        hit_in(with_ocr(kb, &models), "保修期", "contract.png").expect("the PNG's text is found");
    assert!(hit["content"].as_str().unwrap().contains("保修期"), "{hit}");
    // The TIFF's second page holds the minutes: found there.
    // (Short pages share a chunk: the hit's page range covers the page the text is on.)
    let hit = hit_in(with_ocr(kb, &models), "第三季度预算", "faxes.tiff")
        .expect("the TIFF's second page is read");
    assert!(covers(&hit, 2), "{hit}");
    let hit = hit_in(with_ocr(kb, &models), "帶薪假期", "faxes.tiff")
        .expect("the Traditional page is read");
    assert!(covers(&hit, 1), "{hit}");
    // The mixed PDF keeps its text page, and its scanned page is page 2.
    let hit = hit_in(with_ocr(kb, &models), "发票号码", "mixed.pdf")
        .expect("the PDF's scanned page is read");
    assert!(covers(&hit, 2), "{hit}");
    let text = hit["content"].as_str().unwrap();
    let (before, after) = text.split_once('\u{c}').expect("a page break in the chunk");
    assert!(
        before.contains("Quarterly") && after.contains("票"),
        "{hit}"
    );
    assert!(hit_in(with_ocr(kb, &models), "Quarterly report", "mixed.pdf").is_some());
    // An answer from the scanned page cites it with the quote's own page, not the chunk's
    // first.
    let (_, answer) = json_of(with_ocr(kb, &models).args(["ask", "--json", "开票金额合计多少？"]));
    let citation = answer["citations"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .find(|c| c["doc_id"] == "mixed.pdf")
        .unwrap_or_else(|| panic!("no citation of the scanned page: {answer}"));
    assert_eq!(citation["page"], 2, "{citation}");
    assert_eq!(citation["ocr"], true, "{citation}");
    // And with the boxes of the quote's lines on that page (fractions of the page).
    let boxes = citation["boxes"]
        .as_array()
        .unwrap_or_else(|| panic!("{citation}"));
    assert!(!boxes.is_empty(), "{citation}");
    for b in boxes {
        assert_eq!(b["page"], 2, "{citation}");
        let (x0, x1) = (b["x0"].as_f64().unwrap(), b["x1"].as_f64().unwrap());
        let (y0, y1) = (b["y0"].as_f64().unwrap(), b["y1"].as_f64().unwrap());
        assert!(
            0.0 <= x0 && x0 < x1 && x1 <= 1.0 && 0.0 <= y0 && y0 < y1 && y1 <= 1.0,
            "{b}"
        );
    }
    assert!(hit_in(with_ocr(kb, &models), "会议纪要", "upside-down.png").is_some());
}

#[test]
fn a_bomb_and_pictures_without_ocr_are_reported_and_the_rest_indexed() {
    let Some(models) =
        ocr_here("a_bomb_and_pictures_without_ocr_are_reported_and_the_rest_indexed")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let contract = page(&["合同的保修期为三年。"]);
    std::fs::write(kb.join("contract.png"), png_of(&contract)).unwrap();
    std::fs::write(kb.join("notes.md"), "# 笔记\n\n报销须在三十日内提交。\n").unwrap();
    // A PNG whose header claims 50,000 × 50,000 pixels, in a few hundred bytes.
    let mut bomb = png_of(&page(&["x"]));
    bomb[16..20].copy_from_slice(&50_000u32.to_be_bytes());
    bomb[20..24].copy_from_slice(&50_000u32.to_be_bytes());
    std::fs::write(kb.join("bomb.png"), &bomb).unwrap();

    let (code, report) = json_of(with_ocr(kb, &models).args(["index", "--json"]));
    assert_eq!(code, Some(3), "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert_eq!(skipped[0]["path"], "bomb.png");
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("max_image_pixels") || reason.contains("damaged"),
        "{reason}"
    );
    assert_eq!(report["docs_added"], 2, "{report}");

    // With OCR off, a picture is reported with the reason, and the rest stays.
    let off = tempfile::tempdir().unwrap();
    std::fs::write(off.path().join("contract.png"), png_of(&contract)).unwrap();
    std::fs::write(
        off.path().join("notes.md"),
        "# 笔记\n\n报销须在三十日内提交。\n",
    )
    .unwrap();
    let (code, report) = json_of(
        zhiku(off.path())
            .env("ZHIKU_OCR", "off")
            .args(["index", "--json"]),
    );
    assert_eq!(code, Some(3), "{report}");
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped[0]["path"], "contract.png", "{report}");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("OCR is off"),
        "{report}"
    );
    assert_eq!(report["docs_added"], 1, "{report}");
}

#[test]
fn an_unchanged_scan_is_read_once_even_after_a_rebuild() {
    let Some(models) = ocr_here("an_unchanged_scan_is_read_once_even_after_a_rebuild") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&kb).unwrap();
    // The engine's files, linked into a folder of the test's own: removing the links makes the
    // engine unavailable under the same settings (the cache is keyed by them).
    let engine = dir.path().join("engine");
    std::fs::create_dir_all(&engine).unwrap();
    for entry in std::fs::read_dir(&models).unwrap() {
        let path = entry.unwrap().path();
        std::os::unix::fs::symlink(&path, engine.join(path.file_name().unwrap())).unwrap();
    }
    let contract = page(&["合同的保修期为三年，自交付之日起计算。"]);
    std::fs::write(kb.join("contract.png"), png_of(&contract)).unwrap();
    let (code, report) = json_of(
        with_ocr(&kb, &engine)
            .env("XDG_CACHE_HOME", &cache)
            .args(["index", "--json"]),
    );
    assert_eq!(code, Some(0), "{report}");
    assert!(cache.join("zhiku/ocr").is_dir(), "no OCR cache written");
    for entry in std::fs::read_dir(&engine).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    // With the engine gone, a rebuild still indexes the scan: its text comes from the cache,
    // not from OCR.
    let (code, report) = json_of(with_ocr(&kb, &engine).env("XDG_CACHE_HOME", &cache).args([
        "index",
        "--rebuild",
        "--json",
    ]));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["docs_added"], 1, "{report}");
    let mut search = with_ocr(&kb, &engine);
    search.env("XDG_CACHE_HOME", &cache);
    assert!(hit_in(search, "保修期", "contract.png").is_some());
    // Without the cache, the same rebuild reports the scan: the engine cannot run.
    let (code, report) = json_of(
        with_ocr(&kb, &engine)
            .env("XDG_CACHE_HOME", dir.path().join("empty-cache"))
            .args(["index", "--rebuild", "--json"]),
    );
    assert_eq!(code, Some(3), "{report}");
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("fetch-ocr-models"), "{reason}");
}

/// A scan and a text file saying the same: the answer cites the text (no misread characters),
/// a search shows the text, and the scan is left out as its twin; a scan saying something
/// else is cited and marked as read by OCR.
#[test]
fn a_text_layer_is_preferred_over_a_scan_of_the_same_text() {
    let Some(models) = ocr_here("a_text_layer_is_preferred_over_a_scan_of_the_same_text") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let said = "合同的保修期为三年，自交付之日起计算。";
    std::fs::write(kb.join("contract-scan.png"), png_of(&page(&[said]))).unwrap();
    std::fs::write(kb.join("contract.md"), format!("# 合同\n\n{said}\n")).unwrap();
    std::fs::write(
        kb.join("minutes.png"),
        png_of(&page(&["会议纪要：第三季度预算调整为八十万元。"])),
    )
    .unwrap();
    let (code, report) = json_of(with_ocr(kb, &models).args(["index", "--json"]));
    assert_eq!(code, Some(0), "{report}");

    let (_, answer) =
        json_of(with_ocr(kb, &models).args(["ask", "--json", "合同的保修期是多久？"]));
    let cited: Vec<&str> = answer["citations"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|c| c["doc_id"].as_str().unwrap())
        .collect();
    assert_eq!(cited, ["contract.md"], "{answer}");
    assert!(hit_in(with_ocr(kb, &models), "保修期", "contract-scan.png").is_none());
    assert!(hit_in(with_ocr(kb, &models), "保修期", "contract.md").is_some());

    let (_, answer) =
        json_of(with_ocr(kb, &models).args(["ask", "--json", "第三季度预算调整为多少？"]));
    let citation = &answer["citations"][0];
    assert_eq!(citation["doc_id"], "minutes.png", "{answer}");
    assert_eq!(citation["ocr"], true, "{citation}");
}

/// A zip package of `parts` (name, bytes), as Office writes them.
fn package(parts: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in parts {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/// A picture in DrawingML, as Word and PowerPoint write it, its bytes at relationship `id`.
fn drawing(id: &str) -> String {
    format!(
        r#"<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="{id}"/></pic:blipFill></pic:pic></a:graphicData></a:graphic>"#
    )
}

/// A Word document: a paragraph, a paragraph holding the picture `rId1`, a closing paragraph
/// holding the picture `rId2` twice (a logo).
fn docx_with(scan: &[u8], logo: &[u8]) -> Vec<u8> {
    let p = |text: &str| format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>");
    let pic = |id: &str| {
        format!(
            "<w:r><w:drawing><wp:inline>{}</wp:inline></w:drawing></w:r>",
            drawing(id)
        )
    };
    let body = format!(
        "{}<w:p>{}</w:p>{}<w:p>{}{}</w:p>",
        p("以下是扫描件的内容。"),
        pic("rId1"),
        p("以上为合同扫描页。"),
        pic("rId2"),
        pic("rId2"),
    );
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="{REL}" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><w:body>{body}</w:body></w:document>"#
    );
    let rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/image" Target="media/image1.png"/><Relationship Id="rId2" Type="{REL}/image" Target="media/image2.png"/></Relationships>"#
    );
    package(&[
        ("[Content_Types].xml", br#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#),
        ("word/document.xml", document.as_bytes()),
        ("word/_rels/document.xml.rels", rels.as_bytes()),
        ("word/media/image1.png", scan),
        ("word/media/image2.png", logo),
    ])
}

/// A deck of one slide whose only content is a picture.
fn pptx_with(picture: &[u8]) -> Vec<u8> {
    let presentation = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="{REL}"><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst></p:presentation>"#
    );
    let presentation_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId2" Type="{REL}/slide" Target="slides/slide1.xml"/></Relationships>"#
    );
    let slide = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="{REL}"><p:cSld><p:spTree><p:pic><p:nvPicPr><p:cNvPr id="2" name="Picture 1"/></p:nvPicPr><p:blipFill><a:blip r:embed="rId1"/></p:blipFill></p:pic></p:spTree></p:cSld></p:sld>"#
    );
    let slide_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/image" Target="../media/image1.png"/></Relationships>"#
    );
    package(&[
        ("[Content_Types].xml", br#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="png" ContentType="image/png"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>"#),
        ("ppt/presentation.xml", presentation.as_bytes()),
        ("ppt/_rels/presentation.xml.rels", presentation_rels.as_bytes()),
        ("ppt/slides/slide1.xml", slide.as_bytes()),
        ("ppt/slides/_rels/slide1.xml.rels", slide_rels.as_bytes()),
        ("ppt/media/image1.png", picture),
    ])
}

#[test]
fn pictures_in_word_and_powerpoint_files_are_read_where_they_stand() {
    let Some(models) = ocr_here("pictures_in_word_and_powerpoint_files_are_read_where_they_stand")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let scan = png_of(&page(&[
        "合同的保修期为三年，自交付之日起计算。",
        "乙方负责免费维修。",
    ]));
    let logo = png_of(&page(&["华东仪器有限公司"]));
    let notice = png_of(&page(&["会议纪要：第三季度预算调整为八十万元。"]));
    std::fs::write(kb.join("contract.docx"), docx_with(&scan, &logo)).unwrap();
    std::fs::write(kb.join("review.pptx"), pptx_with(&notice)).unwrap();

    let (code, report) = json_of(with_ocr(kb, &models).args(["index", "--json"]));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["docs_added"], 2, "{report}");

    // The Word document's picture is read, and its text stands where the picture does: after
    // the paragraph before it, before the one after it; the logo shown twice is written once.
    let hit = hit_in(with_ocr(kb, &models), "保修期", "contract.docx")
        .expect("the text of the Word document's picture is found");
    let content = hit["content"].as_str().unwrap();
    let at = |needle: &str| {
        content
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {content:?}"))
    };
    assert!(at("扫描件的内容") < at("保修期"), "{content}");
    assert!(at("保修期") < at("以上为合同扫描页"), "{content}");
    assert!(at("以上为合同扫描页") < at("仪器有限"), "{content}");
    assert_eq!(content.matches("仪器有限").count(), 1, "{content}");
    // The slide whose only content is a picture is kept, under its slide heading.
    let hit = hit_in(with_ocr(kb, &models), "第三季度预算", "review.pptx")
        .expect("the slide's picture is read");
    assert!(
        hit["content"].as_str().unwrap().contains("会议纪要"),
        "{hit}"
    );

    // Without OCR the Word document is its own text; the deck has none and is reported.
    let off = tempfile::tempdir().unwrap();
    std::fs::write(off.path().join("contract.docx"), docx_with(&scan, &logo)).unwrap();
    std::fs::write(off.path().join("review.pptx"), pptx_with(&notice)).unwrap();
    let (code, report) = json_of(
        zhiku(off.path())
            .env("ZHIKU_OCR", "off")
            .args(["index", "--json"]),
    );
    assert_eq!(code, Some(3), "{report}");
    assert_eq!(report["docs_added"], 1, "{report}");
    assert_eq!(report["skipped"][0]["path"], "review.pptx", "{report}");
    let (_, found) =
        json_of(
            zhiku(off.path())
                .env("ZHIKU_OCR", "off")
                .args(["search", "--json", "保修期"]),
        );
    assert!(
        found["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["content"].as_str().unwrap_or("").contains("保修期")),
        "{found}"
    );
}

/// A scanned page stored as JPEG 2000, which no decoder of zhiku's reads, is drawn by PDFium
/// and read by OCR; without PDFium it is reported with why, never indexed blank.
#[test]
fn a_scan_no_decoder_here_reads_is_drawn_by_pdfium_and_read() {
    let test = "a_scan_no_decoder_here_reads_is_drawn_by_pdfium_and_read";
    let Some(models) = ocr_here(test) else {
        return;
    };
    let pdfium = std::env::var_os("ZHIKU_TEST_PDFIUM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/zhiku/pdfium/libpdfium.so"))
        })
        .filter(|p| p.is_file());
    let encoder = std::process::Command::new("opj_compress")
        .arg("-h")
        .output();
    let (Some(pdfium), Ok(_)) = (pdfium, encoder) else {
        let why = "PDFium (ZHIKU_TEST_PDFIUM, from scripts/fetch-pdfium.sh) and opj_compress (scripts/setup-ocr.sh) are needed";
        if std::env::var("ZHIKU_REQUIRE_PDFIUM").is_ok_and(|v| v == "1") {
            panic!("ZHIKU_REQUIRE_PDFIUM=1 but {why}");
        }
        zhiku_tests::contract::notice(&format!("SKIPPED scans::{test}: {why}"));
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    std::fs::create_dir(&kb).unwrap();
    let notice = page(&["档案室每周三下午开放借阅。", "借阅期限为十五个工作日。"]);
    // The page as PPM, then JPEG 2000 by OpenJPEG's encoder.
    let ppm = dir.path().join("page.ppm");
    let mut bytes = format!("P6\n{} {}\n255\n", notice.width, notice.height).into_bytes();
    bytes.extend_from_slice(&notice.rgb);
    std::fs::write(&ppm, bytes).unwrap();
    let jp2 = dir.path().join("page.jp2");
    let out = std::process::Command::new("opj_compress")
        .arg("-i")
        .arg(&ppm)
        .arg("-o")
        .arg(&jp2)
        .output()
        .unwrap();
    support::assert_succeeded(&out);
    let jpx = std::fs::read(&jp2).unwrap();
    std::fs::write(
        kb.join("archive.pdf"),
        pdf_of(&[PdfPage::Jpx(&notice, &jpx)]),
    )
    .unwrap();

    // A cache of this test's own: an earlier run's reading of the same bytes would be served.
    let cache = dir.path().join("cache");
    let mut without = with_ocr(&kb, &models);
    without
        .env("XDG_CACHE_HOME", &cache)
        .env("ZHIKU_PDFIUM", dir.path().join("no-such-libpdfium.so"));
    let (code, report) = json_of(without.args(["index", "--json"]));
    assert_eq!(code, Some(3), "a file skipped: {report}");
    assert_eq!(report["docs_added"], 0, "{report}");
    assert_eq!(report["skipped"][0]["path"], "archive.pdf", "{report}");
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("JPXDecode") && reason.contains("PDFium is not at"),
        "{report}"
    );

    let mut with = with_ocr(&kb, &models);
    with.env("XDG_CACHE_HOME", &cache)
        .env("ZHIKU_PDFIUM", &pdfium);
    let (code, report) = json_of(with.args(["index", "--json"]));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["docs_added"], 1, "{report}");
    let mut search = with_ocr(&kb, &models);
    search
        .env("XDG_CACHE_HOME", &cache)
        .env("ZHIKU_PDFIUM", &pdfium);
    let hit = hit_in(search, "借阅期限", "archive.pdf").expect("the drawn scan's text is found");
    assert!(
        hit["content"].as_str().unwrap().contains("十五个工作日"),
        "{hit}"
    );
}
