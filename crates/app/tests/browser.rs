//! The page at `/` in headless Chromium (Debian's, driven by playwright-core) against a real
//! `zhiku serve`: ask, see the cited answer, open a citation, see the run-chain cards. The
//! screenshot is kept in the target directory as a test artifact.
//!
//! Needs `bash scripts/setup-browser.sh` (scripts/check runs it and sets
//! ZHIKU_REQUIRE_BROWSER=1, so in CI a missing browser fails instead of skipping).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{Server, two_scope_kb};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// True when the browser test `test` can run here; otherwise says SKIPPED (or fails under
/// `ZHIKU_REQUIRE_BROWSER`, as in CI).
fn browser(test: &str) -> bool {
    let Some(why) = missing() else {
        return true;
    };
    if std::env::var_os("ZHIKU_REQUIRE_BROWSER").is_some() {
        panic!("browser test {test} required but {why}; run bash scripts/setup-browser.sh");
    }
    eprintln!("SKIPPED {test}: {why}; run bash scripts/setup-browser.sh");
    false
}

fn missing() -> Option<String> {
    let chromium = std::env::var("ZHIKU_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Some(format!("no Chromium at {chromium}"));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no node on PATH".into());
    }
    if !repo()
        .join("tests/browser/node_modules/playwright-core")
        .is_dir()
    {
        return Some("playwright-core is not installed in tests/browser".into());
    }
    None
}

/// Runs `tests/browser/ask.cjs`: asks `question` on the page at `base`, opens the first
/// citation, saves a screenshot to `shot`; returns what the page showed.
fn ask_on_the_page(base: &str, question: &str, shot: &Path) -> Value {
    converse_on_the_page(base, question, shot, None)
}

/// As [`ask_on_the_page`], then asks `follow_up` as the next turn of the conversation.
fn converse_on_the_page(base: &str, question: &str, shot: &Path, follow_up: Option<&str>) -> Value {
    let out = Command::new("node")
        .arg(repo().join("tests/browser/ask.cjs"))
        .arg(base)
        .arg(question)
        .arg(shot)
        .args(follow_up)
        .output()
        .expect("run node");
    support::assert_succeeded(&out);
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    eprintln!("browser: {r}");
    r
}

/// As [`ask_on_the_page`] for an answer cited on a page picture: the page also reports the
/// picture it showed and the boxes it highlighted (`page_image`).
fn ask_on_a_page_picture(base: &str, question: &str, shot: &Path) -> Value {
    let out = Command::new("node")
        .arg(repo().join("tests/browser/ask.cjs"))
        .arg(base)
        .arg(question)
        .arg(shot)
        .env("ZHIKU_EXPECT_PAGE", "1")
        .output()
        .expect("run node");
    support::assert_succeeded(&out);
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    eprintln!("browser: {r}");
    r
}

#[test]
fn the_page_shows_a_cited_answer_its_chunk_and_the_run_chain() {
    if !browser("the_page_shows_a_cited_answer_its_chunk_and_the_run_chain") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Anonymous access: without tokens the page works on loopback with the trusted scopes.
    let kb = two_scope_kb(dir.path(), "", "");
    let config = std::fs::read_to_string(kb.join("zhiku.toml")).unwrap();
    let open = config.split("[[serve.tokens]]").next().unwrap().to_string();
    std::fs::write(kb.join("zhiku.toml"), open).unwrap();
    // A document whose ID holds `/`, `#` and `?`: its citation must open it, not a cut URL.
    std::fs::write(
        kb.join("alpha/faq.md"),
        "---\nid: \"alpha/faq#2?v=1\"\nscope: alpha\n---\n# 常见问题\n\nalpha 会员的积分有效期是十八个月。\n",
    )
    .unwrap();
    std::fs::write(
        kb.join("alpha/warranty.md"),
        "---\nid: alpha-warranty\nscope: alpha\n---\n# 保修\n\nalpha 客户的保修期限是一年，凭发票保修。\n",
    )
    .unwrap();
    // A PDF: its citation shows the page and opens the file there.
    let pdf = repo().join("tests/fixtures/formats/zh-handbook-outline-2col.pdf");
    std::fs::copy(pdf, kb.join("alpha/员工手册.pdf")).unwrap();
    std::fs::write(kb.join("alpha/员工手册.metadata.yaml"), "scope: alpha\n").unwrap();
    let server = Server::start(&kb, &[]);

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("browser-ask.png");
    let _ = std::fs::remove_file(&shot);
    let r = converse_on_the_page(
        &server.base,
        "alpha 客户的退货期限是多少天？",
        &shot,
        Some("那保修期限呢？"),
    );

    assert_eq!(r["page_errors"], serde_json::json!([]));
    assert!(r["status_line"].as_str().unwrap().contains("documents"));
    assert_eq!(r["badge"], "answered");
    assert!(r["answer"].as_str().unwrap().contains("三十天"), "{r}");
    // One card per public step, ending with the summary.
    let cards: Vec<&str> = r["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for stage in support::ANSWER_STAGES {
        assert!(cards.contains(&stage), "no {stage} card in {cards:?}");
    }
    assert_eq!(cards.last(), Some(&"answer"));
    assert_eq!(r["route_open"], true);
    assert!(
        r["route_rows"].as_u64().unwrap() >= 2,
        "the route card lists its hits"
    );
    // The citation opens the cited chunk, from this round, with its source.
    assert_eq!(r["chunk_id"], r["cited_chunk"]);
    assert!(
        r["chunk_source"]
            .as_str()
            .unwrap()
            .contains("alpha/returns.md")
    );
    assert!(
        r["chunk_content"]
            .as_str()
            .unwrap()
            .contains("退货期限是三十天")
    );
    assert_eq!(r["marked"], r["chunk_content"]);
    // The trace the cards came from is the one the server stored.
    let trace = support::call(
        "GET",
        &server.url(&format!("/v1/traces/{}", r["trace_id"].as_str().unwrap())),
        None,
        None,
    );
    assert_eq!(trace.status, 200);
    assert_eq!(trace.body["events"].as_array().unwrap().len(), cards.len());

    // The second turn: the page sent the conversation back, the follow-up was rewritten, and
    // its run chain starts with the rewrite.
    let follow = &r["follow_up"];
    assert_eq!(follow["badge"], "answered", "{follow}");
    assert!(
        follow["answer"].as_str().unwrap().contains("一年"),
        "{follow}"
    );
    assert!(
        follow["rewritten"]
            .as_str()
            .unwrap()
            .contains("alpha 客户的保修期限是多少天？"),
        "{follow}"
    );
    assert_eq!(
        follow["turns"],
        serde_json::json!(["alpha 客户的退货期限是多少天？", "那保修期限呢？"])
    );
    let follow_cards: Vec<&str> = follow["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        &follow_cards[..3],
        ["query", "rewrite", "intent"],
        "{follow}"
    );
    assert!(
        follow["rewrite_line"]
            .as_str()
            .unwrap()
            .contains("replace_aspect")
    );

    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    eprintln!("screenshot: {}", shot.display());

    // The citation of a document whose ID needs escaping opens that document.
    let shot = artifacts.join("browser-ask-escaped-id.png");
    let r = ask_on_the_page(&server.base, "alpha 会员的积分有效期是多久？", &shot);
    assert_eq!(r["page_errors"], serde_json::json!([]));
    assert_eq!(r["chunk_id"], r["cited_chunk"], "{r}");
    assert!(
        r["chunk_source"].as_str().unwrap().contains("alpha/faq.md"),
        "{r}"
    );
    assert!(
        r["chunk_content"].as_str().unwrap().contains("十八个月"),
        "{r}"
    );

    // A cited PDF page: the citation names the page and section, and opens the file at it.
    let shot = artifacts.join("browser-ask-pdf-page.png");
    let r = ask_on_the_page(&server.base, "出境出差需要谁来审批？", &shot);
    assert_eq!(r["page_errors"], serde_json::json!([]));
    let line = r["citations"][0].as_str().unwrap();
    assert!(
        line.contains("员工手册.pdf · p. 2 · 第二章 工作时间与考勤 › 2.4 出差与外出"),
        "{r}"
    );
    // The source card of the cited document: its markers, file and page, what was used.
    let card = r["sources"][0].as_str().unwrap_or_default();
    assert!(
        card.starts_with("[1] 员工手册（2026 版） — alpha/员工手册.pdf · p")
            && card.contains("1 of ")
            && card.contains("2.4 出差与外出"),
        "{r}"
    );
    assert!(
        r["tokens"]
            .as_str()
            .unwrap_or_default()
            .contains("estimate-v1"),
        "{r}"
    );
    let opened = r["opened"].as_str().unwrap_or_default();
    assert!(
        opened.starts_with("blob:") && opened.ends_with("#page=2"),
        "{r}"
    );
}

/// The PP-OCR folder (`ZHIKU_TEST_PPOCR_DIR`, else `~/.cache/zhiku/models/ppocr`) when it and
/// a CJK font to draw a page with are here; says SKIPPED (or fails under
/// `ZHIKU_REQUIRE_OCR=1`) otherwise.
fn ocr_models(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("ZHIKU_TEST_PPOCR_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/zhiku/models/ppocr"))
        })
        .filter(|d| d.join(zhiku_adapters_ppocr::RUNTIME_LIBRARY).is_file())
        .filter(|_| zhiku_tests::contract::ocr::font().is_some());
    if dir.is_none() {
        let why = "the PP-OCR models and ONNX Runtime (ZHIKU_TEST_PPOCR_DIR, from scripts/fetch-ocr-models.sh) and a CJK font are needed: run scripts/setup-ocr.sh";
        if std::env::var("ZHIKU_REQUIRE_OCR").is_ok_and(|v| v == "1") {
            panic!("ZHIKU_REQUIRE_OCR=1 but {why}");
        }
        eprintln!("SKIPPED {test}: {why}");
    }
    dir
}

/// A question answered from a scanned page: the citation carries the quote's boxes, the page
/// serves the scan as a picture, and the web page shows it with the quoted line highlighted
/// where it was drawn.
#[test]
fn a_cited_scan_shows_its_page_with_the_quote_highlighted() {
    let test = "a_cited_scan_shows_its_page_with_the_quote_highlighted";
    if !browser(test) {
        return;
    }
    let Some(models) = ocr_models(test) else {
        return;
    };
    use zhiku_tests::contract::ocr::{draw, font};
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let lines = [
        "会议通知：请各部门按时参加季度例会。",
        "合同的保修期为三年，自交付之日起计算。",
        "甲方应于每月十五日前支付服务费用。",
    ];
    let drawn = draw(font().unwrap(), &lines, 36.0);
    let image = image::RgbImage::from_raw(drawn.width, drawn.height, drawn.rgb.clone()).unwrap();
    image.save(kb.join("contract.png")).unwrap();
    std::fs::write(kb.join("notes.md"), "# 笔记\n\n报销须在三十日内提交。\n").unwrap();
    std::fs::write(
        kb.join("zhiku.toml"),
        format!(
            "embedder = \"none\"\nocr_models = {:?}\n",
            models.to_str().unwrap()
        ),
    )
    .unwrap();
    let server = Server::start(kb, &[]);

    // The page endpoint: the scan's page as PNG; no page 2, and no picture of a text file.
    let png = support::call(
        "GET",
        &server.url("/v1/originals/contract.png/pages/1"),
        None,
        None,
    );
    assert_eq!(png.status, 200, "{}", png.text);
    assert_eq!(png.content_type.as_deref(), Some("image/png"));
    let none = support::call(
        "GET",
        &server.url("/v1/originals/contract.png/pages/2"),
        None,
        None,
    );
    assert_eq!(none.status, 404, "{}", none.text);
    let text = support::call(
        "GET",
        &server.url("/v1/originals/notes.md/pages/1"),
        None,
        None,
    );
    assert_eq!(text.status, 404, "{}", text.text);

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("browser-scan.png");
    let r = ask_on_a_page_picture(&server.base, "合同的保修期是多久？", &shot);
    assert_eq!(r["page_errors"], serde_json::json!([]));
    assert_eq!(r["badge"], "answered", "{r}");
    assert!(
        r["chunk_source"].as_str().unwrap().contains("contract.png"),
        "{r}"
    );
    let shown = &r["page_image"];
    assert_eq!(shown["natural_width"], drawn.width, "{r}");
    assert_eq!(shown["natural_height"], drawn.height, "{r}");
    // The highlight covers the quoted line where it was drawn (the second line).
    let (_, drawn_box) = &drawn.lines[1];
    let (top, bottom) = (
        f64::from(drawn_box.top) / f64::from(drawn.height),
        f64::from(drawn_box.bottom) / f64::from(drawn.height),
    );
    let boxes = shown["boxes"].as_array().unwrap();
    assert!(!boxes.is_empty(), "{r}");
    let centre = |b: &Value| (b["y0"].as_f64().unwrap() + b["y1"].as_f64().unwrap()) / 2.0;
    assert!(
        boxes
            .iter()
            .any(|b| top <= centre(b) && centre(b) <= bottom),
        "no highlight on the quoted line ({top:.3}–{bottom:.3}): {r}"
    );
    let left = f64::from(drawn_box.left) / f64::from(drawn.width);
    assert!(
        boxes
            .iter()
            .any(|b| (b["x0"].as_f64().unwrap() - left).abs() < 0.05),
        "{r}"
    );
}

/// The PDFium library, or `None` with the test SKIPPED (failing under `ZHIKU_REQUIRE_PDFIUM=1`).
fn pdfium(test: &str) -> Option<PathBuf> {
    let lib = std::env::var_os("ZHIKU_TEST_PDFIUM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/zhiku/pdfium/libpdfium.so"))
        })
        .filter(|p| p.is_file());
    if lib.is_none() {
        let why = "PDFium is needed (ZHIKU_TEST_PDFIUM, from scripts/fetch-pdfium.sh)";
        if std::env::var("ZHIKU_REQUIRE_PDFIUM").is_ok_and(|v| v == "1") {
            panic!("ZHIKU_REQUIRE_PDFIUM=1 but {why}");
        }
        eprintln!("SKIPPED {test}: {why}");
    }
    lib
}

/// Share of dark pixels of `png` inside the box `b` (fractions of the page).
fn ink_in(png: &image::RgbImage, b: &Value) -> f64 {
    let f = |k: &str| b[k].as_f64().unwrap();
    let (w, h) = (f64::from(png.width()), f64::from(png.height()));
    let (x0, x1) = (
        (f("x0") * w) as u32,
        ((f("x1") * w) as u32).min(png.width()),
    );
    let (y0, y1) = (
        (f("y0") * h) as u32,
        ((f("y1") * h) as u32).min(png.height()),
    );
    let (mut dark, mut all) = (0u64, 0u64);
    for y in y0..y1 {
        for x in x0..x1 {
            let p = png.get_pixel(x, y);
            all += 1;
            dark += u64::from(u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) < 3 * 128);
        }
    }
    dark as f64 / all.max(1) as f64
}

/// A question answered from a PDF with a text layer: the page is served as PDFium draws it,
/// the quote's line boxes fall on its ink, and the web page shows the page with the quote
/// highlighted.
#[test]
fn a_cited_text_pdf_shows_its_drawn_page_with_the_quote_highlighted() {
    let test = "a_cited_text_pdf_shows_its_drawn_page_with_the_quote_highlighted";
    if !browser(test) {
        return;
    }
    let Some(lib) = pdfium(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path();
    let name = "zh-cid-reportlab.pdf";
    std::fs::copy(
        repo().join("tests/fixtures/formats").join(name),
        kb.join(name),
    )
    .unwrap();
    std::fs::write(
        kb.join("zhiku.toml"),
        format!(
            "embedder = \"none\"\npdfium = {:?}\n",
            lib.to_str().unwrap()
        ),
    )
    .unwrap();
    let server = Server::start(kb, &[]);

    // Both pages are drawn (PNG, 1,600 pixels on the longer side); there is no page 3.
    let mut pages = Vec::new();
    for n in 1..=2 {
        let r = support::call(
            "GET",
            &server.url(&format!("/v1/originals/{name}/pages/{n}")),
            None,
            None,
        );
        assert_eq!(r.status, 200, "page {n}: {}", r.text);
        assert_eq!(r.content_type.as_deref(), Some("image/png"));
        let png = image::load_from_memory(&r.bytes).unwrap().to_rgb8();
        assert_eq!(png.width().max(png.height()), 1600);
        pages.push(png);
    }
    let past = support::call(
        "GET",
        &server.url(&format!("/v1/originals/{name}/pages/3")),
        None,
        None,
    );
    assert_eq!(past.status, 404, "{}", past.text);

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("browser-text-pdf.png");
    let r = ask_on_a_page_picture(&server.base, "信用卡退款需要几个工作天入帐？", &shot);
    assert_eq!(r["page_errors"], serde_json::json!([]));
    assert_eq!(r["badge"], "answered", "{r}");
    let shown = &r["page_image"];
    // The refund sentence is on page 2, drawn at 1,600 pixels on its longer side.
    assert!(shown["caption"].as_str().unwrap().contains('2'), "{r}");
    assert_eq!(
        shown["natural_width"]
            .as_u64()
            .unwrap()
            .max(shown["natural_height"].as_u64().unwrap()),
        1600,
        "{r}"
    );
    let boxes = shown["boxes"].as_array().unwrap();
    assert!(!boxes.is_empty(), "{r}");
    // Every highlighted line lies on text of the drawn page: the layout's boxes and PDFium's
    // drawing agree (a blank strip of page has no ink; a line of CJK text a good share).
    for b in boxes {
        let ink = ink_in(&pages[1], b);
        assert!(ink > 0.04, "a highlight on blank page ({ink:.3}): {b}");
    }
}

#[test]
fn a_person_signs_in_on_the_page_through_the_provider_and_reads_as_themselves() {
    if !browser("a_person_signs_in_on_the_page_through_the_provider_and_reads_as_themselves") {
        return;
    }
    let Some(provider) = zhiku_tests::oidc::OidcProvider::start("browser", "sign_in") else {
        return;
    };
    provider.set_groups("li.lei@corp", &["hr"]);
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    support::write(
        &kb,
        "hr/bonus.md",
        "---\nid: bonus\naccess: [group:hr]\n---\n# 年终奖\n\n经理的年终奖为三个月工资。\n",
    );
    support::write(
        &kb,
        "fin/bonus-pool.md",
        "---\nid: pool\naccess: [group:finance]\n---\n# 年终奖池\n\n年终奖的奖金池是八百万元，代号红杉。\n",
    );
    support::write(
        &kb,
        "zhiku.toml",
        &format!(
            "embedder = \"hashing\"\n[serve.oidc]\nissuer = \"{}\"\naudience = \"{}\"\nscopes = [\"default\"]\nuser_claim = \"email\"\nclient_id = \"{}\"\n",
            provider.issuer,
            zhiku_tests::oidc::AUDIENCE,
            zhiku_tests::oidc::CLIENT_ID
        ),
    );
    let server = Server::start(&kb, &[]);
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("sign-in.png");
    let out = Command::new("node")
        .arg(repo().join("tests/browser/sign_in.cjs"))
        .arg(server.url("").trim_end_matches('/'))
        .arg("li.lei@corp")
        .arg("年终奖是多少？")
        .arg(&shot)
        .output()
        .expect("run node");
    support::assert_succeeded(&out);
    let r: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    eprintln!("browser: {r}");
    assert_eq!(r["provider_url"], provider.issuer.as_str());
    assert_eq!(r["who"], "signed in as li.lei@corp");
    assert_eq!(r["token_kept"], true);
    assert_eq!(r["sign_in_hidden"], true);
    assert!(!r["url_after"].as_str().unwrap().contains("code="), "{r}");
    let answer = r["answer"].as_str().unwrap();
    assert!(answer.contains("三个月"), "{answer}");
    assert!(
        !answer.contains("红杉") && !answer.contains("八百万"),
        "{answer}"
    );
    assert!(r["after_sign_out"].is_null(), "{r}");
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
}
