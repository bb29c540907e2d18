//! What a crawl reads of a page: its links, its `<base>`, and whether its robots meta lets it
//! be indexed and followed.

use scraper::{Html, Selector};
use url::Url;

/// What a page says for a crawler.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PageLinks {
    /// Absolute links, fragments dropped, in document order, each once.
    pub links: Vec<Url>,
    /// `<meta name="robots" content="noindex">`: not to be indexed.
    pub noindex: bool,
    /// `nofollow`: its links are not to be followed.
    pub nofollow: bool,
}

/// Reads `html` fetched from `url` (bounded by the caller).
pub(crate) fn read_page(html: &str, url: &Url) -> PageLinks {
    let doc = Html::parse_document(html);
    let select = |s: &str| Selector::parse(s).ok();
    let mut out = PageLinks::default();
    if let Some(meta) = select("meta[name]") {
        for m in doc.select(&meta) {
            let name = m.value().attr("name").unwrap_or_default();
            if name.eq_ignore_ascii_case("robots") || name.eq_ignore_ascii_case("zhiku") {
                let content = m
                    .value()
                    .attr("content")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                out.noindex |= content.contains("noindex") || content.contains("none");
                out.nofollow |= content.contains("nofollow") || content.contains("none");
            }
        }
    }
    let base = select("base[href]")
        .and_then(|s| doc.select(&s).next())
        .and_then(|b| b.value().attr("href"))
        .and_then(|h| url.join(h).ok())
        .unwrap_or_else(|| url.clone());
    if let Some(a) = select("a[href], area[href]") {
        let mut seen = std::collections::HashSet::new();
        for e in doc.select(&a) {
            let rel = e
                .value()
                .attr("rel")
                .unwrap_or_default()
                .to_ascii_lowercase();
            if rel.split_ascii_whitespace().any(|r| r == "nofollow") {
                continue;
            }
            let Some(href) = e.value().attr("href") else {
                continue;
            };
            let Ok(mut link) = base.join(href.trim()) else {
                continue;
            };
            link.set_fragment(None);
            if matches!(link.scheme(), "http" | "https") && seen.insert(link.clone()) {
                out.links.push(link);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_against_the_base_and_robots_meta_is_read() {
        let url = Url::parse("https://wiki.example/docs/a/page.html").unwrap();
        let page = r#"<html><head><base href="/docs/"><meta name="ROBOTS" content="NoIndex"></head>
            <body><a href="b.html#top">b</a><a href="b.html">again</a><a href="mailto:x@y">m</a>
            <a rel="nofollow" href="/private">p</a><a href="https://other.example/x">o</a></body></html>"#;
        let read = read_page(page, &url);
        assert!(read.noindex && !read.nofollow);
        let links: Vec<&str> = read.links.iter().map(Url::as_str).collect();
        assert_eq!(
            links,
            [
                "https://wiki.example/docs/b.html",
                "https://other.example/x"
            ]
        );
    }
}
