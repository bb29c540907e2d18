//! Tests of reading HTML, and the fixture checks the other formats' tests share.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use scraper::Html;

use super::boilerplate::{has_word, words};
use super::prepare::{MAX_DEPTH, prepare};
use super::*;
use crate::extracted::Extracted;
use crate::limits::Limits;

/// How alike two texts are once whitespace and heading markers are stripped: twice their
/// longest common subsequence of characters over their total length.
pub(crate) fn similarity(got: &str, expected: &str) -> f64 {
    // Markup is not text: heading marks, and a pipe table's bars and delimiter rows.
    let strip = |s: &str| -> Vec<char> {
        s.lines()
            .map(|l| l.trim_start_matches('#'))
            .filter(|l| !l.trim().starts_with("| ---"))
            .flat_map(|l| l.chars())
            .filter(|c| !c.is_whitespace() && *c != '|')
            .collect()
    };
    let (a, b) = (strip(got), strip(expected));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut prev = vec![0u32; b.len() + 1];
    let mut cur = vec![0u32; b.len() + 1];
    for &x in &a {
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    2.0 * f64::from(prev[b.len()]) / (a.len() + b.len()) as f64
}

/// The heading path of every ATX heading of a text, outermost first.
pub(crate) fn heading_paths(text: &str) -> Vec<Vec<String>> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut paths = Vec::new();
    for line in text.lines() {
        let level = line.chars().take_while(|&c| c == '#').count();
        if level == 0 || !line[level..].starts_with(' ') {
            continue;
        }
        stack.retain(|(l, _)| *l < level);
        stack.push((level, line[level + 1..].to_string()));
        paths.push(stack.iter().map(|(_, t)| t.clone()).collect());
    }
    paths
}

/// Checks an extraction against a fixture's `.expect.json`: locale, absent strings, text
/// similarity of at least 0.98, heading paths in order.
pub(crate) fn check_fixture(got: &Extracted, expect: &str) {
    let e: serde_json::Value = serde_json::from_str(expect).unwrap();
    assert_eq!(got.locale.as_deref(), e["locale"].as_str(), "locale");
    for absent in e["absent"].as_array().unwrap() {
        let absent = absent.as_str().unwrap();
        assert!(!got.text.contains(absent), "{absent:?} in\n{}", got.text);
    }
    let ratio = similarity(&got.text, e["text"].as_str().unwrap());
    assert!(ratio >= 0.98, "similarity {ratio:.4}:\n{}", got.text);
    let paths = heading_paths(&got.text);
    let mut found = paths.iter();
    for want in e["headings"].as_array().unwrap() {
        let want: Vec<String> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert!(
            found.any(|p| *p == want),
            "heading path {want:?} not found in order in {paths:?}"
        );
    }
}

#[test]
fn the_wiki_fixture_reads_as_its_article() {
    let html = include_str!("../../../../tests/fixtures/formats/wiki-article.html");
    let expect = include_str!("../../../../tests/fixtures/formats/wiki-article.html.expect.json");
    let t = Instant::now();
    let got = extract(html, &limits()).unwrap();
    eprintln!("wiki-article.html: {:?}", t.elapsed());
    // The site suffix is stripped: what remains is the h1.
    assert_eq!(got.title.as_deref(), Some("向量检索"));
    check_fixture(&got, expect);
}

#[test]
fn the_docs_fixture_reads_as_its_article() {
    let html = include_str!("../../../../tests/fixtures/formats/docs-site.html");
    let expect = include_str!("../../../../tests/fixtures/formats/docs-site.html.expect.json");
    let got = extract(html, &limits()).unwrap();
    assert_eq!(got.title.as_deref(), Some("Configuring Profiles"));
    check_fixture(&got, expect);
}

#[test]
fn the_similarity_helper_measures_characters() {
    assert_eq!(similarity("# a b\nc", "abc"), 1.0);
    assert!((similarity("abcd", "abxd") - 0.75).abs() < 1e-9);
    assert_eq!(
        heading_paths("# A\n\n## B\n\ntext\n### C\n## D\n#E"),
        vec![
            vec!["A".to_string()],
            vec!["A".into(), "B".into()],
            vec!["A".into(), "B".into(), "C".into()],
            vec!["A".into(), "D".into()],
        ]
    );
}

fn limits() -> Limits {
    Limits {
        max_unpacked_bytes: 1 << 30,
        max_text_bytes: 10 << 20,
        max_pages: 1000,
        max_image_pixels: 1_000_000,
        deadline: Instant::now() + Duration::from_secs(60),
    }
}

fn text(html: &str) -> String {
    extract(html, &limits()).unwrap().text
}

const PAGE: &str = r##"<!DOCTYPE html>
<html lang="zh_CN">
<head>
  <meta charset="utf-8">
  <title>向量检索 - 内部知识库</title>
  <style>.x { color: red }</style>
  <script>var tracking = "SCRIPT-TEXT";</script>
</head>
<body class="has-sidebar skin-vector">
  <a class="skip-link" href="#main">跳到正文</a>
  <header class="site-header">
    <div class="logo">内部知识库</div>
    <nav><ul><li><a href="/">首页</a></li><li><a href="/docs">文档</a></li></ul></nav>
  </header>
  <div id="cookie-banner">我们使用 Cookie 改善体验。<button>同意</button></div>
  <div class="layout">
    <div class="sidebar">
      <h3>目录</h3>
      <ul><li><a href="#a">概述</a></li><li><a href="#b">原理</a></li></ul>
      <p>侧栏说明文字，不属于正文。</p>
    </div>
    <main id="main">
      <article>
        <header class="content-header"><h1>向量检索</h1></header>
        <p>向量检索把文本映射为向量，
        再按相似度召回最相关的段落。It works with
        dense embeddings.</p>
        <div class="share-buttons"><a href="#">分享到微博</a></div>
        <h2 id="b">原理 <a class="headerlink" href="#b">¶</a></h2>
        <p>先<a href="/wiki/embedding">编码</a>，再<strong>建索引</strong>。</p>
        <div class="editor-note">编辑器提示也是正文。</div>
        <footer class="article-meta">最后更新：2024 年 5 月</footer>
      </article>
      <section class="comments"><h2>评论</h2><p>第一条评论内容。</p></section>
    </main>
  </div>
  <footer id="footer"><p>© 2024 内部知识库 版权所有</p></footer>
  <script>document.write("MORE-SCRIPT")</script>
</body>
</html>"##;

#[test]
fn a_page_keeps_its_article_and_drops_the_chrome() {
    let got = extract(PAGE, &limits()).unwrap();
    assert_eq!(got.title.as_deref(), Some("向量检索"));
    assert_eq!(got.locale.as_deref(), Some("zh-CN"));
    assert_eq!(got.pages, None);
    assert_eq!(
        got.text,
        "# 向量检索\n\n\
             向量检索把文本映射为向量，再按相似度召回最相关的段落。It works with dense embeddings.\n\n\
             ## 原理\n\n\
             先编码，再建索引。\n\n\
             编辑器提示也是正文。\n\n\
             最后更新：2024 年 5 月\n"
    );
    for absent in [
        "SCRIPT", "首页", "Cookie", "同意", "侧栏", "目录", "分享", "评论", "版权", "跳到", "¶",
        "color",
    ] {
        assert!(!got.text.contains(absent), "{absent} in {}", got.text);
    }
}

#[test]
fn cjk_line_breaks_join_and_latin_ones_become_spaces() {
    let got =
        text("<p>向量\n  检索，\n召回。 中 文\nvector\nsearch 向量\nRAG <b>粗</b>\n<i>体</i></p>");
    assert_eq!(got, "向量检索，召回。 中 文 vector search 向量 RAG 粗体\n");
}

#[test]
fn lists_are_lines_of_one_paragraph_indented_by_nesting() {
    let got = text(
        "<body><p>前言</p><ul><li>one<ul><li>one.a</li><li>one.b<ol start=3><li>x</li><li>y</li></ol></li></ul></li>\
             <li><p>two</p><p>more of two</p></li></ul><ol><li>first</li><li>second</li></ol><p>after</p></body>",
    );
    assert_eq!(
        got,
        "前言\n\n- one\n  - one.a\n  - one.b\n    3. x\n    4. y\n- two\n  more of two\n\n1. first\n2. second\n\nafter\n"
    );
}

#[test]
fn a_data_table_is_a_pipe_table() {
    let got = text(
        "<body><p>参数如下：</p><table><caption>参数表</caption><thead><tr><th>名称</th><th>说明</th></tr></thead>\
             <tbody><tr><td>top_k</td><td><p>返回条数</p><p>默认 10</p></td></tr><tr><td>lang</td><td>语言<br>可选</td></tr>\
             <tr><td></td><td></td></tr></tbody></table><p>end</p></body>",
    );
    assert_eq!(
        got,
        "参数如下：\n\n参数表\n| 名称 | 说明 |\n| --- | --- |\n| top_k | 返回条数 默认 10 |\n| lang | 语言 可选 |\n\nend\n"
    );
}

#[test]
fn a_layout_table_is_read_as_blocks() {
    let got = text(
        "<body><table><tr><td><h1>Title</h1><p>Para one.</p></td></tr><tr><td><p>Para two.</p></td></tr></table></body>",
    );
    assert_eq!(got, "# Title\n\nPara one.\n\nPara two.\n");
}

#[test]
fn pre_keeps_its_lines_and_escapes_what_reads_as_markdown() {
    let got = text(
        "<body><p>例子：</p><pre><code class=\"language-rust\"><span class=\"token comment\">// comment</span>\nfn main() {\n    let x = 1;\n\n    println!(\"{x}\");\n}\n# not a heading\n```\n</code></pre><p>after</p></body>",
    );
    assert_eq!(
        got,
        "例子：\n\n// comment\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\\# not a heading\n\\```\n\nafter\n"
    );
}

#[test]
fn block_quotes_definitions_and_figures_are_paragraphs() {
    let got = text(
        "<body><blockquote><p>引文一</p><p>引文二</p></blockquote><dl><dt>RAG</dt><dd>检索增强生成</dd></dl>\
             <figure><img src=x.png alt=\"图\"><figcaption>图 1：架构</figcaption></figure><hr><p>a<br>b</p></body>",
    );
    assert_eq!(
        got,
        "引文一\n\n引文二\n\nRAG\n检索增强生成\n\n图 1：架构\n\na\nb\n"
    );
}

#[test]
fn headings_keep_their_levels() {
    let got = text(
        "<body><h1>T</h1><p>a</p><h3>Deep <code>x</code></h3><p>b</p><h2></h2><h2>Two</h2><p>c</p></body>",
    );
    assert_eq!(got, "# T\n\na\n\n### Deep x\n\nb\n\n## Two\n\nc\n");
}

#[test]
fn an_h1_outside_the_main_content_opens_it() {
    let page = "<html><head><title>Guide | Docs</title></head><body><div class=\"page-title\"><h1>Guide</h1></div>\
                    <div class=\"sidebar\"><a href=\"/\">Home</a></div>\
                    <main><p>Some long enough paragraph of the guide.</p><h2>Setup</h2><p>Install it.</p></main></body></html>";
    let got = extract(page, &limits()).unwrap();
    assert_eq!(got.title.as_deref(), Some("Guide"));
    assert_eq!(
        got.text,
        "# Guide\n\nSome long enough paragraph of the guide.\n\n## Setup\n\nInstall it.\n"
    );
}

#[test]
fn the_title_loses_a_site_part_only_when_the_rest_is_the_h1() {
    let t = |t: &str, h: Option<&str>| choose_title(Some(t.into()), h.map(String::from));
    assert_eq!(
        t("向量检索 - 内部知识库", Some("向量检索")).as_deref(),
        Some("向量检索")
    );
    assert_eq!(
        t("Install | Docs", Some("Install")).as_deref(),
        Some("Install")
    );
    assert_eq!(
        t("Docs | Install", Some("Install")).as_deref(),
        Some("Install")
    );
    assert_eq!(t("标题_百度百科", Some("标题")).as_deref(), Some("标题"));
    assert_eq!(t("A - B", Some("C")).as_deref(), Some("A - B"));
    assert_eq!(
        t("Install guide", Some("Install")).as_deref(),
        Some("Install guide")
    );
    assert_eq!(choose_title(None, Some("H".into())).as_deref(), Some("H"));
    assert_eq!(choose_title(None, None), None);
}

#[test]
fn locales_are_normalised() {
    assert_eq!(normalise_locale("zh_CN").as_deref(), Some("zh-CN"));
    assert_eq!(
        normalise_locale(" ZH-hans-cn ").as_deref(),
        Some("zh-Hans-CN")
    );
    assert_eq!(normalise_locale("en").as_deref(), Some("en"));
    assert_eq!(normalise_locale("").as_deref(), None);
    assert_eq!(normalise_locale("en US").as_deref(), None);
    assert_eq!(normalise_locale("und").as_deref(), None);
    let got = extract(
        "<html lang=''><body lang=en-gb><p>x</p></body></html>",
        &limits(),
    )
    .unwrap();
    assert_eq!(got.locale.as_deref(), Some("en-GB"));
}

#[test]
fn class_words_match_at_boundaries() {
    let w = |s: &str| words(s);
    assert!(has_word(&w("site-footer"), "footer"));
    assert!(has_word(&w("mainNav"), "nav"));
    assert!(has_word(&w("a_skip-link"), "skip-link"));
    assert!(!has_word(&w("content-header"), "footer"));
    assert!(!has_word(&w("editor"), "edit"));
    assert!(!has_word(&w("navigator"), "nav"));
    assert!(has_word(&w("mw-editsection"), "editsection"));
    let got = text(
        "<body><div id=content><p>Main text that is long enough to be the content of the page.</p>\
             <span class=\"mw-editsection\">[edit]</span><div class=\"editor\">kept</div><div class=\"catlinks\">Categories</div></div></body>",
    );
    assert_eq!(
        got,
        "Main text that is long enough to be the content of the page.\n\nkept\n"
    );
}

#[test]
fn hidden_elements_and_landmarks_are_dropped() {
    let got = text(
        "<body><div role=main><p>shown</p><p hidden>h1</p><p aria-hidden=\"true\">h2</p><p style=\"display: none\">h3</p>\
             <div role=search>h4</div><div role=navigation>h5</div><p>also <span style=\"DISPLAY:NONE\">h6</span>shown</p></div></body>",
    );
    assert_eq!(got, "shown\n\nalso shown\n");
}

#[test]
fn without_markers_the_densest_container_is_the_content() {
    let links: String = (0..40)
        .map(|i| format!("<li><a href=/{i}>Link number {i}</a></li>"))
        .collect();
    let paras: String = (0..5)
        .map(|i| {
            format!("<p>Paragraph {i} of the story, with enough words to count as prose here.</p>")
        })
        .collect();
    let page = format!(
        "<body><div class=wrap><div class=left><ul>{links}</ul></div><div class=story>{paras}</div>\
             <div class=legal>Small print.</div></div></body>"
    );
    let got = text(&page);
    assert!(got.starts_with("Paragraph 0 of the story"), "{got}");
    assert!(got.contains("Paragraph 4"), "{got}");
    assert!(!got.contains("Link number"), "{got}");
    assert!(!got.contains("Small print"), "{got}");
}

#[test]
fn a_form_wrapping_the_page_is_not_boilerplate() {
    let got = text(
        "<body><form id=aspnetForm action=x><div id=content><h1>Title</h1><p>The whole page sits in a form.</p></div>\
             <input type=hidden value=STATE></form></body>",
    );
    assert_eq!(got, "# Title\n\nThe whole page sits in a form.\n");
}

#[test]
fn deep_nesting_neither_overflows_nor_stalls() {
    let n = 100_000;
    let mut page = String::from("<html><body><p>top</p>");
    page.push_str(&"<div>".repeat(n));
    page.push_str("deep text");
    page.push_str(&"</div>".repeat(n));
    page.push_str("<p>bottom</p></body></html>");
    let t = Instant::now();
    let got = text(&page);
    assert_eq!(got, "top\n\ndeep text\n\nbottom\n");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    // Unclosed too, and inline.
    let page = format!(
        "<body>{}x{}</body>",
        "<span><b>".repeat(n),
        "<p>y".repeat(1000)
    );
    let got = text(&page);
    assert!(got.starts_with("x\n\ny\n\ny"), "{}", &got[..20]);
}

#[test]
fn a_tag_of_too_many_attributes_is_refused_before_parsing() {
    let tag = |count: usize, close: &str| {
        let attrs: Vec<String> = (0..count).map(|i| format!("a{i}=\"\"")).collect();
        format!("<!DOCTYPE html><html><body><p {}{close}", attrs.join(" "))
    };
    // 200,000 attributes in one tag took the tokenizer 35 s: refused at once now, whether
    // the tag closes or the source ends inside it.
    for close in [">text</p></body></html>", ""] {
        let err = extract(&tag(200_000, close), &limits())
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 1024 attributes"), "{err}");
    }
    // A tag of many (but not absurdly many) attributes reads.
    let page = tag(1000, ">kept text</p></body></html>");
    assert!(
        extract(&page, &limits())
            .unwrap()
            .text
            .contains("kept text")
    );
    // Many tags of 1,000 attributes add up to the same quadratic work: refused too.
    let attrs: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
    let many = format!("<p {}>x</p>", attrs.join(" ")).repeat(200);
    let err = extract(&many, &limits()).unwrap_err().to_string();
    assert!(err.contains("attributes"), "{err}");
}

#[test]
fn a_page_of_too_many_elements_is_refused_before_parsing() {
    let mut l = limits();
    l.max_text_bytes = 64 << 10;
    // At least 65,536 elements are always allowed; one per 8 bytes of text beyond.
    let page = |n: usize| format!("<html><body>{}text</body></html>", "<br>".repeat(n));
    assert!(extract(&page(60_000), &l).is_ok());
    let err = extract(&page(70_000), &l).unwrap_err().to_string();
    assert!(err.contains("more than 65536 elements"), "{err}");
    // End tags and text are no elements.
    let ends = format!("<html><body>{}text</body></html>", "</b>".repeat(100_000));
    let got = extract(&ends, &l);
    assert!(got.is_ok(), "{got:?}");
}

#[test]
fn prepare_flattens_only_what_is_too_deep() {
    let src = "<div><p>a</div>";
    assert!(matches!(prepare(src, false).unwrap(), Cow::Borrowed(_)));
    let deep = format!(
        "{}x{}",
        "<div class=\"a>b\">".repeat(MAX_DEPTH + 2),
        "</div>".repeat(MAX_DEPTH + 2)
    );
    let flat = prepare(&deep, false).unwrap();
    assert_eq!(flat.matches("<div").count(), MAX_DEPTH);
    assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
    let xhtml = "<head><title/></head><body><a id=\"p1\"/>text<br/><script src=\"x.js\"/></body>";
    assert_eq!(
        prepare(xhtml, true).unwrap(),
        "<head><title></title></head><body><a id=\"p1\"></a>text<br/><script src=\"x.js\"></script></body>"
    );
    let script = "<script>if (a < b) { x = '<div>'; }</script><div>";
    assert!(matches!(prepare(script, false).unwrap(), Cow::Borrowed(_)));
}

/// Markup that once made `prepare` lose track of the tokenizer (or of the tree builder)
/// and let nesting through to html5ever, which is quadratic in it: 30 000 levels took
/// seconds, 100 000 close to a minute.
#[test]
fn prepare_is_not_fooled_into_letting_deep_nesting_through() {
    let n = 30_000;
    let nested = |open: &str, close: &str| format!("{}x{}", open.repeat(n), close.repeat(n));
    let divs = nested("<div>", "</div>");
    let cases: Vec<(&str, String)> = vec![
        // Comments end at `<!-->`, `<!--->` and `--!>` too.
        ("<!-->", format!("<p>x</p><!-->{divs}")),
        ("<!--->", format!("<p>x</p><!--->{divs}")),
        ("--!>", format!("<p>x</p><!-- x --!>{divs}")),
        // `style` and `script` are no raw text in SVG or MathML (a `div` leaves them).
        ("svg style", format!("<svg><style>{divs}")),
        ("math script", format!("<math><script>{divs}")),
        // A CDATA section in SVG hides a `</div>` until `]]>`.
        (
            "cdata",
            nested("<div><svg><![CDATA[></div>]]></svg>", "</div>"),
        ),
        // `<div/>` is a start tag in HTML.
        ("div/", nested("<div/>", "")),
        // `=` before an attribute name does not start a quoted value.
        ("=\"", format!("<a =\">{divs}")),
        ("=\"=", format!("<a b=\"x\"=\">{divs}")),
        // A `<script>` inside a script's `<!--` escape hides the next `</script>`.
        (
            "script escape",
            nested(
                "<div><script><!--<script></script></div>--></script>",
                "</div>",
            ),
        ),
        // An end tag stops at a special element open above its own.
        ("span div", nested("<span><div></span>", "</div>")),
        // Ruby annotations nest outside `<ruby>`.
        ("rb", nested("<rb>", "</rb>")),
        // The parser reopens formatting elements that something else closed.
        ("a b", nested("<a><b>", "")),
        // `<select>` ignores `<style>`, so `</select>` ends the select.
        ("select style", format!("<select><style></select>{divs}")),
    ];
    for (what, page) in cases {
        // The depth of the tree html5ever builds from the prepared source.
        let html = Html::parse_document(&prepare(&page, false).unwrap());
        let deepest = html
            .tree
            .nodes()
            .map(|n| n.ancestors().count())
            .max()
            .unwrap_or(0);
        assert!(deepest <= MAX_DEPTH + 8, "{what}: {deepest} deep");
        let got = text(&page);
        assert!(got.contains('x'), "{what}: {got:?}");
    }
    // Reopening too many formatting elements is refused rather than parsed.
    let reopening: String = (0..100_000).map(|k| format!("<p><b id={k}>x")).collect();
    let err = extract(&reopening, &limits()).unwrap_err().to_string();
    assert!(err.contains("reopen formatting elements"), "{err}");
    let fine: String = (0..5000).map(|k| format!("<p><b id={}>x", k % 4)).collect();
    assert!(text(&fine).starts_with('x'));
    // The same comments and bogus comments still hide what is in them.
    let hidden = "<!-- <div> --><!--> <p>a</p><!x <div ><?x <div ?></ x <div ><p>b</p>";
    assert_eq!(text(hidden), "a\n\nb\n");
    assert!(matches!(prepare(hidden, false).unwrap(), Cow::Borrowed(_)));
}

/// 100,000 nested `<div>`s around `deep text`.
fn deep_divs() -> String {
    let n = 100_000;
    format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n))
}

/// Extracts `page` within a bound of time, checking that the source the flattener hands
/// html5ever builds a tree no deeper than [`MAX_DEPTH`] (and a little): the text.
fn bounded_text(page: &str) -> String {
    let t = Instant::now();
    let prepared = prepare(page, false).unwrap();
    let deepest = Html::parse_document(&prepared)
        .tree
        .nodes()
        .map(|n| n.ancestors().count())
        .max()
        .unwrap_or(0);
    assert!(deepest <= MAX_DEPTH + 8, "{deepest} deep");
    let got = text(page);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    got
}

/// The comments in a page as html5ever reads them.
fn comments(page: &str) -> Vec<String> {
    Html::parse_document(page)
        .tree
        .nodes()
        .filter_map(|n| n.value().as_comment().map(|c| c.to_string()))
        .collect()
}

/// `<!-->` (and `<!--->`) is a whole, empty comment (the tokenizer's abrupt closing of an
/// empty comment): what follows is markup, and its nesting is flattened like any other.
#[test]
fn an_abruptly_closed_empty_comment_hides_no_nesting() {
    for open in ["<!-->", "<!--->"] {
        // html5ever: an empty comment, then the paragraph.
        assert_eq!(comments(&format!("{open}<p>x</p>-->")), [""], "{open}");
        let page = format!(
            "<html><body><p>before</p>{open}{}<!-- <p>hidden</p> --><p>after</p></body></html>",
            deep_divs()
        );
        assert_eq!(
            bounded_text(&page),
            "before\n\ndeep text\n\nafter\n",
            "{open}"
        );
        // The scan saw the `<div>`s as tags: it dropped those too deep.
        let prepared = prepare(&page, false).unwrap();
        assert!(prepared.matches("<div>").count() <= MAX_DEPTH, "{open}");
    }
}

/// `--!>` ends a comment as `-->` does (the tokenizer's comment end bang state); `--!x>`
/// does not, so what follows it up to a `-->` is comment, nesting and all.
#[test]
fn a_comment_closed_by_bang_hides_no_nesting() {
    assert_eq!(
        comments("<!-- a --!><p>x</p><!-- b --!x> <p>y</p> -->"),
        [" a ", " b --!x> <p>y</p> "]
    );
    let page = format!(
        "<html><body><p>before</p><!-- hidden <div><div> --!>{}<p>after</p></body></html>",
        deep_divs()
    );
    assert_eq!(bounded_text(&page), "before\n\ndeep text\n\nafter\n");
    // Nesting inside a comment that `--!x>` does not close is comment text: nothing to
    // flatten, nothing shown.
    let page = format!(
        "<html><body><p>before</p><!-- hidden --!x> {} --><p>after</p></body></html>",
        deep_divs()
    );
    assert!(matches!(prepare(&page, false).unwrap(), Cow::Borrowed(_)));
    assert_eq!(bounded_text(&page), "before\n\nafter\n");
}

/// In SVG, `<style>` is an element like any other, not raw text: a `<div>` in it leaves the
/// SVG (a breakout tag) and nests in the page, and SVG elements in it nest in the SVG. Both
/// are flattened; the style's text is dropped with the SVG. In HTML, `<style>` is raw text:
/// its `<div>`s are text of the style, neither flattened nor shown.
#[test]
fn svg_style_hides_no_nesting_and_shows_no_style() {
    let style = ".hidden { color: red }";
    let page = format!(
        "<html><body><p>before</p><svg><style>{style}{}</style></svg><p>after</p></body></html>",
        deep_divs()
    );
    assert_eq!(bounded_text(&page), "before\n\ndeep text\n\nafter\n");
    let n = 100_000;
    let page = format!(
        "<html><body><p>before</p><svg><style>{style}{}svg text{}</style></svg><p>after</p></body></html>",
        "<g>".repeat(n),
        "</g>".repeat(n)
    );
    assert_eq!(bounded_text(&page), "before\n\nafter\n");
    let page = format!(
        "<html><body><p>before</p><style>{style}{}</style><p>after</p></body></html>",
        deep_divs()
    );
    assert!(matches!(prepare(&page, false).unwrap(), Cow::Borrowed(_)));
    assert_eq!(bounded_text(&page), "before\n\nafter\n");
}

#[test]
fn a_large_page_is_quick_and_an_oversized_one_refused() {
    let para = "<p>检索增强生成把<a href=\"/wiki/x\">向量检索</a>和生成模型结合起来，\n先召回相关段落再回答。The quick brown fox jumps over the lazy dog.</p>\n";
    let mut page = String::from("<html><body><div id=content>");
    while page.len() < 5 << 20 {
        page.push_str(para);
    }
    page.push_str("</div></body></html>");
    let t = Instant::now();
    let got = extract(&page, &limits()).unwrap();
    let took = t.elapsed();
    assert!(got.text.len() > 2 << 20);
    assert!(took < Duration::from_secs(20), "{took:?}");
    let mut small = limits();
    small.max_text_bytes = page.len() / 10;
    let err = extract(&page, &small).unwrap_err().to_string();
    assert!(err.contains("larger than"), "{err}");
    let mut late = limits();
    late.deadline = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let err = extract(&page, &late).unwrap_err().to_string();
    assert!(err.contains("time limit"), "{err}");
    let mut tight = limits();
    tight.max_text_bytes = 1 << 20;
    let err = extract(&page, &tight).unwrap_err().to_string();
    assert!(err.contains("max_text_bytes"), "{err}");
}

#[test]
fn a_page_with_an_xml_prolog_honours_self_closing_tags() {
    let got = extract(
            "<?xml version=\"1.0\"?>\n<html><head><title/></head><body><p>kept<a id=\"x\"/></p><p>two</p></body></html>",
            &limits(),
        )
        .unwrap();
    assert_eq!(got.text, "kept\n\ntwo\n");
    assert_eq!(got.title, None);
}

#[test]
fn odd_input_does_not_panic() {
    for s in [
        "",
        "<",
        "</",
        "<!",
        "<!--",
        "<a",
        "<a href=\"",
        "<table><td>x",
        "<svg><title>t</title></svg>",
        "<template><p>x</template>",
        "<plaintext><p>x",
        "\u{0}\u{feff}<p>\u{200b}</p>",
        "<ol start=-5><li>x",
        "<html><head><title></title></head></html>",
        "<<<>>>",
        "<br/><br></br>",
        "<pre>",
        "<table><table>",
    ] {
        let _ = extract(s, &limits());
        let _ = parse(s, Mode::Chapter, &limits());
        let _ = toc_links(s, &limits());
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever a fragment of markup does to the parser, a page of it repeated gets no
    /// deeper than the flattening allows.
    #[test]
    fn repeated_markup_stays_shallow(fragment in "(<(/?)(div|span|b|i|a|font color=x|nobr|p|li|ul|dl|dd|h1|table|td|tr|caption|select|option|optgroup|svg|math|mi|desc|g|style|script|title|textarea|xmp|noscript|iframe|form|rb|rt|ruby|template|button|object|img)( x=\"[>/]\")?(/?)>|<!--|-->|--!>|<!-->|<!\\[CDATA\\[|\\]\\]>|<!x|<\\?|</ |>|x){1,12}") {
        let page = fragment.repeat(3000);
        let html = Html::parse_document(&prepare(&page, false).unwrap());
        // Elements only: scraper puts a template's content in a fragment node.
        let deepest = html
            .tree
            .nodes()
            .map(|n| n.ancestors().filter(|a| a.value().is_element()).count())
            .max()
            .unwrap_or(0);
        proptest::prop_assert!(deepest <= 2 * MAX_DEPTH, "{} deep", deepest);
    }
}

proptest::proptest! {
    #[test]
    fn arbitrary_markup_does_not_panic(s in "(<[/!]?(p|div|li|ul|table|td|tr|pre|h1|a|b|script|nav|br)( class=\"(nav|toc|x)\")?/?>|[a-z向量 \n]{0,8}){0,60}") {
        let _ = extract(&s, &limits());
        let _ = parse(&s, Mode::Chapter, &limits());
    }
}
