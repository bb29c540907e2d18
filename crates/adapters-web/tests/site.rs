//! The source contract over a web site served over real HTTP on 127.0.0.1: a small site server
//! written here (files from a folder, strong `ETag`s and `Last-Modified` with 304s, 404 and
//! 410, robots.txt, a sitemap of every page), and what only a crawl has: links followed inside
//! the prefix, linked PDFs fetched, robots.txt and the rate limit obeyed, a 304 per unchanged
//! page.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use sha2::Digest;
use zhiku_adapters_web::{SiteSettings, SiteSource};
use zhiku_domain::ports::DocumentSource;
use zhiku_tests::contract::source::{SourceUnderTest, page, scan};

#[derive(Default)]
struct Site {
    files: BTreeMap<String, Vec<u8>>,
    gone: BTreeSet<String>,
    broken: BTreeSet<String>,
    /// Serve no validators (a server that knows no ETag or Last-Modified).
    plain: bool,
    /// Serve only a `Last-Modified` that equals the reply's `Date` (a page changed in the
    /// second it was fetched), answering `If-Modified-Since` by it.
    racy: bool,
    log: Vec<(String, Instant, StatusCode)>,
}

type Shared = Arc<Mutex<Site>>;

fn content_type(path: &str) -> &'static str {
    if path.ends_with(".html") || !path.rsplit('/').next().unwrap_or("").contains('.') {
        "text/html; charset=utf-8"
    } else if path.ends_with(".pdf") {
        "application/pdf"
    } else if path.ends_with(".xml") {
        "application/xml"
    } else {
        "application/octet-stream"
    }
}

async fn serve(State(site): State<Shared>, uri: Uri, headers: HeaderMap) -> Response {
    let mut s = site.lock().unwrap();
    let path = uri.path().trim_start_matches('/').to_string();
    let path = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path
    };
    let path = zhiku_adapters_web::naming::percent_decode(&path).unwrap_or(path);
    let reply = if s.broken.contains(&path) {
        StatusCode::INTERNAL_SERVER_ERROR.into_response()
    } else if s.gone.contains(&path) {
        StatusCode::GONE.into_response()
    } else if path == "sitemap.xml" {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1")
            .to_string();
        let mut xml = String::from(
            "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
        );
        for p in s.files.keys().filter(|p| p.ends_with(".html")) {
            xml.push_str(&format!("<url><loc>http://{host}/{p}</loc></url>"));
        }
        xml.push_str("</urlset>");
        ([(header::CONTENT_TYPE, "application/xml")], xml).into_response()
    } else if let Some(bytes) = s.files.get(&path).cloned() {
        let etag = format!("\"{}\"", &hex(&sha2::Sha256::digest(&bytes))[..16]);
        let modified = "Sun, 06 Dec 2026 06:00:00 GMT";
        if s.racy {
            let same = headers
                .get(header::IF_MODIFIED_SINCE)
                .is_some_and(|v| v.to_str().ok() == Some(modified));
            if same {
                StatusCode::NOT_MODIFIED.into_response()
            } else {
                (
                    [
                        (header::CONTENT_TYPE, content_type(&path).to_string()),
                        (header::LAST_MODIFIED, modified.to_string()),
                        (header::DATE, modified.to_string()),
                    ],
                    Bytes::from(bytes),
                )
                    .into_response()
            }
        } else if !s.plain
            && headers
                .get(header::IF_NONE_MATCH)
                .is_some_and(|v| v.to_str().ok() == Some(etag.as_str()))
        {
            StatusCode::NOT_MODIFIED.into_response()
        } else if s.plain {
            (
                [(header::CONTENT_TYPE, content_type(&path))],
                Bytes::from(bytes),
            )
                .into_response()
        } else {
            (
                [
                    (header::CONTENT_TYPE, content_type(&path).to_string()),
                    (header::ETAG, etag),
                    (header::LAST_MODIFIED, modified.to_string()),
                ],
                Bytes::from(bytes),
            )
                .into_response()
        }
    } else {
        StatusCode::NOT_FOUND.into_response()
    };
    let status = reply.status();
    s.log.push((uri.path().to_string(), Instant::now(), status));
    reply
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The site server, on a free port, in its own runtime.
struct Server {
    site: Shared,
    url: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    fn start() -> Self {
        let site: Shared = Arc::default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let app = axum::Router::new().fallback(serve).with_state(site.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            site,
            url,
            runtime: Some(runtime),
        }
    }

    fn stop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }

    fn requests(&self) -> Vec<(String, Instant, StatusCode)> {
        self.site.lock().unwrap().log.clone()
    }
}

fn settings(url: &str) -> SiteSettings {
    SiteSettings {
        start: vec![format!("{url}/")],
        sitemaps: vec![format!("{url}/sitemap.xml")],
        prefix: None,
        max_pages: 1_000,
        min_interval: Duration::ZERO,
        timeout: Duration::from_secs(10),
        user_agent: "zhiku/test".into(),
        wanted: Arc::new(|p: &str| p.ends_with(".pdf") || p.ends_with(".html")),
    }
}

/// The contract's site: every page listed by the sitemap; the start page is the site's
/// `index.html`, which the test never writes, so the start URL answers 404 and the pages come
/// from the sitemap.
struct SiteUnderTest {
    server: Mutex<Server>,
    source: SiteSource,
    pending: Mutex<Vec<(String, Option<Vec<u8>>)>>,
}

impl SourceUnderTest for SiteUnderTest {
    fn source(&self) -> &dyn DocumentSource {
        &self.source
    }
    fn put(&self, path: &str, bytes: &[u8]) {
        self.pending
            .lock()
            .unwrap()
            .push((path.into(), Some(bytes.to_vec())));
    }
    fn delete(&self, path: &str) {
        self.pending.lock().unwrap().push((path.into(), None));
    }
    fn publish(&self) {
        let server = self.server.lock().unwrap();
        let mut site = server.site.lock().unwrap();
        for (path, bytes) in self.pending.lock().unwrap().drain(..) {
            match bytes {
                Some(b) => site.files.insert(path, b),
                None => site.files.remove(&path),
            };
        }
    }
    fn cut(&self) {
        self.server.lock().unwrap().stop();
    }
}

zhiku_tests::document_source_contract!(|()| -> Option<Box<dyn SourceUnderTest>> {
    let server = Server::start();
    let source = SiteSource::new(settings(&server.url));
    Some(Box::new(SiteUnderTest {
        server: Mutex::new(server),
        source,
        pending: Mutex::default(),
    }))
});

fn put(server: &Server, path: &str, bytes: &[u8]) {
    server
        .site
        .lock()
        .unwrap()
        .files
        .insert(path.into(), bytes.to_vec());
}

fn link_page(title: &str, links: &[&str]) -> Vec<u8> {
    let a: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">{l}</a> "))
        .collect();
    format!("<html><head><title>{title}</title></head><body><nav>{a}</nav><main><h1>{title}</h1><p>{title} 的正文。</p></main></body></html>").into_bytes()
}

#[test]
fn a_crawl_follows_links_inside_the_prefix_fetches_linked_pdfs_and_obeys_robots() {
    let server = Server::start();
    put(
        &server,
        "docs/index.html",
        &link_page(
            "首页",
            &[
                "guide",
                "b.html",
                "/private/x.html",
                "/files/手册.pdf",
                "/other/page.html",
                "?page=2",
            ],
        ),
    );
    put(
        &server,
        "docs/guide",
        &link_page("指南", &["index.html", "c.html"]),
    );
    put(&server, "docs/b.html", &link_page("B", &[]));
    put(&server, "docs/c.html", b"<html><head><meta name=\"robots\" content=\"noindex\"></head><body><a href=\"d.html\">d</a></body></html>");
    put(&server, "docs/d.html", &link_page("D", &[]));
    put(&server, "files/手册.pdf", b"%PDF-1.4 not really");
    put(&server, "other/page.html", &link_page("outside", &[]));
    put(
        &server,
        "robots.txt",
        b"User-agent: *\nDisallow: /docs/b.html\n",
    );
    let mut s = settings(&server.url);
    s.start = vec![format!("{}/docs/", server.url)];
    s.sitemaps.clear();
    let source = SiteSource::new(s);
    let r = scan(&source, &BTreeMap::new(), None, 1 << 20).unwrap();
    let got: BTreeSet<&str> = r.changed.keys().map(String::as_str).collect();
    assert_eq!(
        got,
        [
            "docs/index.html",
            "docs/guide.html",
            "docs/d.html",
            "files/手册.pdf"
        ]
        .into(),
        "robots-disallowed b.html, noindex c.html (its links still followed), the page outside the prefix and the query link are left"
    );
    let asked: Vec<String> = server.requests().into_iter().map(|(p, _, _)| p).collect();
    assert!(
        !asked
            .iter()
            .any(|p| p.contains("b.html") || p.contains("other")),
        "{asked:?}"
    );
}

#[test]
fn an_unchanged_site_costs_one_304_per_page_and_a_site_without_validators_is_compared_by_hash() {
    let mut server = Server::start();
    for i in 0..20 {
        put(&server, &format!("p{i}.html"), &page(i, 0));
    }
    let source = SiteSource::new(settings(&server.url));
    let first = scan(&source, &BTreeMap::new(), None, 1 << 20).unwrap();
    assert_eq!(first.changed.len(), 20);
    let known: BTreeMap<String, String> = first.known();
    let before = server.requests().len();
    let again = scan(&source, &known, None, 1 << 20).unwrap();
    let log = server.requests();
    let pages: Vec<_> = log[before..]
        .iter()
        .filter(|(p, _, _)| p.ends_with(".html") && p != "/")
        .collect();
    assert_eq!(pages.len(), 20, "one request per page");
    assert!(pages.iter().all(|(_, _, s)| *s == StatusCode::NOT_MODIFIED));
    assert_eq!((again.unchanged.len(), again.scanned.bytes), (20, 0));
    // robots.txt, the sitemap and the start page are the whole overhead.
    assert_eq!(again.scanned.requests, 23);

    server.site.lock().unwrap().plain = true;
    let plain = scan(&source, &known, None, 1 << 20).unwrap();
    assert_eq!(plain.unchanged.len(), 20, "unchanged by their hash");
    server.stop();
}

#[test]
fn pages_that_answer_404_or_410_are_gone_and_the_rate_limit_spaces_requests() {
    let server = Server::start();
    for i in 0..4 {
        put(&server, &format!("p{i}.html"), &page(i, 0));
    }
    let mut s = settings(&server.url);
    s.min_interval = Duration::from_millis(60);
    let source = SiteSource::new(s);
    let first = scan(&source, &BTreeMap::new(), None, 1 << 20).unwrap();
    let known: BTreeMap<String, String> = first.known();
    let before = server.requests().len();
    {
        let mut site = server.site.lock().unwrap();
        site.files.remove("p0.html");
        site.files.remove("p1.html");
        site.gone.insert("p1.html".into());
    }
    let after = scan(&source, &known, None, 1 << 20).unwrap();
    assert_eq!(after.gone, ["p0.html".to_string(), "p1.html".into()].into());
    let times: Vec<Instant> = server.requests()[before..]
        .iter()
        .map(|(_, t, _)| *t)
        .collect();
    assert!(times.len() >= 6, "{} requests", times.len());
    for w in times.windows(2) {
        assert!(
            w[1].duration_since(w[0]) >= Duration::from_millis(55),
            "requests {:?} apart",
            w[1].duration_since(w[0])
        );
    }
}

#[test]
fn a_server_error_on_robots_txt_fails_the_scan_and_a_missing_one_allows_all() {
    let server = Server::start();
    put(&server, "p.html", &page(1, 0));
    let source = SiteSource::new(settings(&server.url));
    server.site.lock().unwrap().gone.insert("robots.txt".into());
    let r = scan(&source, &BTreeMap::new(), None, 1 << 20).unwrap();
    assert!(r.changed.contains_key("p.html"));
    let known: BTreeMap<String, String> = r.known();
    server
        .site
        .lock()
        .unwrap()
        .broken
        .insert("robots.txt".into());
    let err = scan(&source, &known, None, 1 << 20).unwrap_err();
    assert!(err.is_temporary(), "{err}");
}

#[test]
fn a_page_modified_in_the_second_it_was_fetched_is_never_trusted_to_a_304() {
    let server = Server::start();
    put(&server, "p.html", &page(1, 0));
    server.site.lock().unwrap().racy = true;
    let source = SiteSource::new(settings(&server.url));
    let first = scan(&source, &BTreeMap::new(), None, 1 << 20).unwrap();
    let known: BTreeMap<String, String> = first.known();
    // Changed within the same second: the server's Last-Modified does not move.
    put(&server, "p.html", &page(1, 1));
    let after = scan(&source, &known, None, 1 << 20).unwrap();
    assert_eq!(after.changed["p.html"].0, page(1, 1));
}
