//! A web site as a document source: crawled from start URLs and sitemaps, inside a URL prefix.
//!
//! Every scan asks robots.txt first (a server error there fails the scan, as RFC 9309 asks: a
//! site that cannot say what it allows is not crawled), then every page it knows, every start
//! URL and every sitemap entry, and every link inside the prefix of the pages that changed
//! (an unchanged page's links are pages it already knows). A page it knows is asked with its
//! `ETag` and `Last-Modified`: a 304 is the whole cost of an unchanged page; a server without
//! either sends the page, which is compared by its hash and not copied again. Documents linked
//! from a page (a PDF, a Word file) on the same site are fetched too, inside the prefix or
//! not, and never crawled further.
//!
//! A page answering 404 or 410, redirecting off the site, marked `noindex`, or disallowed by
//! robots.txt now is gone; the sync's grace period decides when it leaves. Nothing is reported
//! gone when the scan could not reach the site, or when most of its requests failed.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::time::Duration;

use url::Url;
use zhiku_domain::ports::{DocumentSource, ScanError, ScanEvent, ScanRequest, Scanned, SourceItem};

use crate::Wanted;
use crate::http::{Client, Reply};
use crate::links::read_page;
use crate::naming::item_path;

/// Most bytes of robots.txt and of a sitemap.
const MAX_ROBOTS_BYTES: u64 = 512 * 1024;
const MAX_SITEMAP_BYTES: u64 = 50 * 1024 * 1024;
/// Most sitemaps read through sitemap indexes.
const MAX_SITEMAPS: usize = 100;
/// Most bytes of a page whose links are read (a larger page is still copied, its links past
/// this are not followed): html5ever's tree of a page is built in this process.
const MAX_LINK_BYTES: usize = 4 * 1024 * 1024;
/// Most redirects followed for one URL.
const MAX_REDIRECTS: usize = 5;

/// How a web site is crawled.
#[derive(Clone)]
pub struct SiteSettings {
    /// Where the crawl starts.
    pub start: Vec<String>,
    /// Sitemaps (`sitemap.xml`, or a sitemap index) listing pages.
    pub sitemaps: Vec<String>,
    /// Only pages whose URL starts with this are crawled; `None`: the folder of the first
    /// start URL (or sitemap).
    pub prefix: Option<String>,
    /// Most pages and documents one scan asks for.
    pub max_pages: usize,
    /// Least time between two requests (robots.txt's `Crawl-delay` when longer).
    pub min_interval: Duration,
    /// One request's deadline.
    pub timeout: Duration,
    /// The `User-Agent` sent, whose first word robots.txt groups are matched against.
    pub user_agent: String,
    /// Which non-HTML item paths (linked documents) are taken.
    pub wanted: Wanted,
}

impl std::fmt::Debug for SiteSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiteSettings")
            .field("start", &self.start)
            .field("sitemaps", &self.sitemaps)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// What a page's stamp records: where it was, its validators and a hash of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct PageStamp {
    u: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<String>,
    h: String,
    /// The page was modified in the second its reply was made (`Last-Modified` equals
    /// `Date`): a later change within that second would keep the same `Last-Modified`, so it is
    /// never asked with `If-Modified-Since` (git's racily clean entries, for HTTP).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    racy: bool,
}

impl PageStamp {
    fn read(stamp: &str) -> Option<Self> {
        serde_json::from_str(stamp).ok()
    }
}

/// A web site, crawled.
#[derive(Debug)]
pub struct SiteSource {
    settings: SiteSettings,
}

/// How a fetch ended.
enum Fetch {
    /// The final URL and its reply (2xx, 304, 4xx, 5xx).
    Reply(Url, Box<Reply>),
    /// Redirected off the site or the prefix, to this URL.
    Away(String),
    /// No reply (connection, timeout).
    Transport(String),
}

impl SiteSource {
    /// A site over `settings` (checked when it is scanned).
    pub fn new(settings: SiteSettings) -> Self {
        Self { settings }
    }

    fn prefix(&self) -> Result<Url, ScanError> {
        let s = &self.settings;
        let given = s
            .prefix
            .clone()
            .or_else(|| {
                let first = s.start.first().or(s.sitemaps.first())?;
                let u = Url::parse(first).ok()?;
                let cut = u.path().rfind('/').map_or(1, |i| i + 1);
                Some(format!(
                    "{}{}",
                    u.origin().ascii_serialization(),
                    &u.path()[..cut]
                ))
            })
            .ok_or_else(|| self.refused("no start URL, sitemap or prefix is configured"))?;
        let url = Url::parse(&given).map_err(|e| self.refused(format!("prefix {given:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(self.refused(format!("prefix {given:?} is not an http(s) URL")));
        }
        Ok(url)
    }

    fn refused(&self, message: impl Into<String>) -> ScanError {
        ScanError::Refused {
            kind: "web",
            location: self.location(),
            message: message.into(),
        }
    }

    fn unavailable(&self, message: impl Into<String>) -> ScanError {
        ScanError::Unavailable {
            kind: "web",
            location: self.location(),
            message: message.into(),
        }
    }

    /// Fetches `url`, following redirects that stay on the site (`allowed`).
    fn fetch(
        client: &mut Client,
        url: &Url,
        headers: &[(&str, &str)],
        max_bytes: u64,
        allowed: &dyn Fn(&Url) -> bool,
    ) -> Fetch {
        let mut at = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let reply = match client.send("GET", at.as_str(), headers, None, max_bytes) {
                Ok(r) => r,
                Err(e) => return Fetch::Transport(e),
            };
            if !(300..400).contains(&reply.status) || reply.status == 304 {
                return Fetch::Reply(at, Box::new(reply));
            }
            let Some(next) = reply.location.as_deref().and_then(|l| at.join(l).ok()) else {
                return Fetch::Reply(at, Box::new(reply));
            };
            if !allowed(&next) {
                return Fetch::Away(next.to_string());
            }
            at = next;
        }
        Fetch::Away(format!("{at} (more than {MAX_REDIRECTS} redirects)"))
    }

    /// The page URLs of the configured sitemaps (and the sitemaps they index).
    fn sitemap_urls(&self, client: &mut Client, robots: &Robots) -> Result<Vec<Url>, ScanError> {
        let mut queue: VecDeque<String> = self.settings.sitemaps.iter().cloned().collect();
        let mut read = 0;
        let mut pages = Vec::new();
        while let Some(next) = queue.pop_front() {
            read += 1;
            if read > MAX_SITEMAPS {
                break;
            }
            let url =
                Url::parse(&next).map_err(|e| self.refused(format!("sitemap {next:?}: {e}")))?;
            let reply = match Self::fetch(client, &url, &[], MAX_SITEMAP_BYTES, &|u| {
                robots.same_origin(u)
            }) {
                Fetch::Reply(_, r) => r,
                Fetch::Away(to) => {
                    return Err(self.refused(format!("sitemap {url} redirects to {to}")));
                }
                Fetch::Transport(e) => return Err(self.unavailable(format!("sitemap {url}: {e}"))),
            };
            match reply.status {
                200..=299 => {}
                s if s >= 500 || s == 429 => {
                    return Err(self.unavailable(format!("sitemap {url} answered {s}")));
                }
                s => return Err(self.refused(format!("sitemap {url} answered {s}"))),
            }
            let Some(body) = reply.body else {
                return Err(self.refused(format!(
                    "sitemap {url} is larger than {MAX_SITEMAP_BYTES} bytes"
                )));
            };
            let (locs, index) = sitemap_locs(&body);
            for loc in locs {
                if index {
                    queue.push_back(loc);
                } else if let Ok(u) = Url::parse(&loc) {
                    pages.push(u);
                }
            }
        }
        Ok(pages)
    }
}

/// The `<loc>` entries of a sitemap, and whether it is a sitemap index.
fn sitemap_locs(xml: &[u8]) -> (Vec<String>, bool) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut locs = Vec::new();
    let mut index = false;
    let mut loc: Option<String> = None;
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(Event::Eof) | Err(_) => break,
            Ok(e) => e,
        };
        match &event {
            Event::Start(e) => {
                let name = e.local_name();
                index |= name.as_ref() == b"sitemapindex";
                if name.as_ref() == b"loc" {
                    loc = Some(String::new());
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"loc" => {
                if let Some(text) = loc.take() {
                    locs.push(text.trim().to_string());
                }
            }
            other => {
                if let (Some(text), Some(add)) = (loc.as_mut(), crate::xml::text_of(other)) {
                    text.push_str(&add);
                }
            }
        }
        buf.clear();
    }
    (locs, index)
}

/// What robots.txt allows, and the site's origin.
struct Robots {
    robot: Option<texting_robots::Robot>,
    origin: url::Origin,
}

impl Robots {
    fn allows(&self, url: &Url) -> bool {
        self.robot.as_ref().is_none_or(|r| r.allowed(url.as_str()))
    }
    fn same_origin(&self, url: &Url) -> bool {
        url.origin() == self.origin
    }
}

impl DocumentSource for SiteSource {
    fn kind(&self) -> &'static str {
        "web"
    }

    fn location(&self) -> String {
        let s = &self.settings;
        s.prefix
            .clone()
            .or_else(|| s.start.first().cloned())
            .or_else(|| s.sitemaps.first().cloned())
            .unwrap_or_default()
    }

    fn scan(
        &self,
        request: &ScanRequest<'_>,
        sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
    ) -> Result<Scanned, ScanError> {
        let s = &self.settings;
        let prefix = self.prefix()?;
        let mut client = Client::new(s.timeout, &s.user_agent, s.min_interval);
        let origin = prefix.origin();
        // robots.txt: absent (4xx) allows everything; a server error or no answer fails.
        let robots_url = prefix
            .join("/robots.txt")
            .map_err(|e| self.refused(e.to_string()))?;
        let robots = match Self::fetch(&mut client, &robots_url, &[], MAX_ROBOTS_BYTES, &|u| {
            u.origin() == origin
        }) {
            Fetch::Transport(e) => return Err(self.unavailable(e)),
            Fetch::Reply(_, r) if r.status >= 500 || r.status == 429 => {
                return Err(self.unavailable(format!("robots.txt answered {}", r.status)));
            }
            Fetch::Reply(_, r) if (200..300).contains(&r.status) => {
                let agent = s.user_agent.split(['/', ' ']).next().unwrap_or("zhiku");
                let robot = r
                    .body
                    .as_deref()
                    .and_then(|b| texting_robots::Robot::new(agent, b).ok());
                if let Some(delay) = robot.as_ref().and_then(|r| r.delay) {
                    client.slow_to(Duration::from_secs_f32(delay.clamp(0.0, 60.0)));
                }
                Robots {
                    robot,
                    origin: origin.clone(),
                }
            }
            _ => Robots {
                robot: None,
                origin: origin.clone(),
            },
        };
        let in_prefix = |u: &Url| u.origin() == origin && u.as_str().starts_with(prefix.as_str());
        let is_document = |u: &Url| {
            u.origin() == origin
                && item_path(u.path(), false).is_some_and(|p| {
                    let lower = p.to_ascii_lowercase();
                    !lower.ends_with(".html") && !lower.ends_with(".htm") && (s.wanted)(&p)
                })
        };
        // What is known, by URL.
        let mut known_at: BTreeMap<String, (String, PageStamp)> = BTreeMap::new();
        for (path, stamp) in request.known {
            if let Some(st) = PageStamp::read(stamp) {
                known_at.insert(st.u.clone(), (path.clone(), st));
            }
        }
        let mut queue: VecDeque<Url> = VecDeque::new();
        let mut queued: HashSet<String> = HashSet::new();
        let mut push = |queue: &mut VecDeque<Url>, u: Url| {
            if u.query().is_none() && queued.insert(u.to_string()) {
                queue.push_back(u);
            }
        };
        for start in &s.start {
            let u =
                Url::parse(start).map_err(|e| self.refused(format!("start URL {start:?}: {e}")))?;
            if !in_prefix(&u) {
                return Err(self.refused(format!("start URL {u} is outside the prefix {prefix}")));
            }
            push(&mut queue, u);
        }
        for u in self.sitemap_urls(&mut client, &robots)? {
            if in_prefix(&u) || is_document(&u) {
                push(&mut queue, u);
            }
        }
        for url in known_at.keys() {
            if let Ok(u) = Url::parse(url) {
                push(&mut queue, u);
            }
        }
        let mut reported: BTreeSet<String> = BTreeSet::new();
        let mut gone: BTreeMap<String, String> = BTreeMap::new();
        let mut bytes = 0u64;
        let mut asked = 0usize;
        let mut transport_failures = 0usize;
        let mut first_failure: Option<String> = None;
        let mut cut_short = false;
        while let Some(url) = queue.pop_front() {
            let known = known_at.get(url.as_str()).cloned();
            if !robots.allows(&url) {
                if let Some((path, _)) = known {
                    gone.insert(path, "robots.txt disallows it now".into());
                }
                continue;
            }
            if asked >= s.max_pages {
                cut_short = true;
                break;
            }
            asked += 1;
            let mut headers: Vec<(&str, &str)> = Vec::new();
            if let Some((_, st)) = &known {
                if let Some(e) = &st.e {
                    headers.push(("If-None-Match", e));
                }
                if let Some(m) = &st.m
                    && !st.racy
                {
                    headers.push(("If-Modified-Since", m));
                }
            }
            let leaf = !in_prefix(&url);
            let fetched = Self::fetch(&mut client, &url, &headers, request.max_item_bytes, &|u| {
                if leaf {
                    u.origin() == origin
                } else {
                    in_prefix(u)
                }
            });
            let (final_url, reply) = match fetched {
                Fetch::Transport(e) => {
                    transport_failures += 1;
                    first_failure.get_or_insert_with(|| format!("{url}: {e}"));
                    if let Some((path, _)) = known
                        && reported.insert(path.clone())
                    {
                        sink(ScanEvent::Failed { path, reason: e })?;
                    }
                    continue;
                }
                Fetch::Away(to) => {
                    if let Some((path, _)) = known {
                        gone.insert(path, format!("redirects off the site to {to}"));
                    }
                    continue;
                }
                Fetch::Reply(u, r) => (u, r),
            };
            if reply.status == 304 {
                if let Some((path, _)) = known
                    && reported.insert(path.clone())
                {
                    sink(ScanEvent::Unchanged { path })?;
                }
                continue;
            }
            if matches!(reply.status, 404 | 410) {
                if let Some((path, _)) = known {
                    gone.insert(path, format!("{} at {url}", reply.status));
                }
                continue;
            }
            if !(200..300).contains(&reply.status) {
                if let Some((path, _)) = known
                    && reported.insert(path.clone())
                {
                    sink(ScanEvent::Failed {
                        path,
                        reason: format!("{url} answered {}", reply.status),
                    })?;
                }
                continue;
            }
            let mime = reply
                .content_type
                .as_deref()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
            let Some(path) = item_path(final_url.path(), html) else {
                continue;
            };
            if !html && !(s.wanted)(&path) {
                continue;
            }
            if reported.contains(&path) {
                continue;
            }
            let Some(body) = reply.body else {
                reported.insert(path.clone());
                sink(ScanEvent::Failed {
                    path,
                    reason: format!("larger than the bound of {} bytes", request.max_item_bytes),
                })?;
                continue;
            };
            if html && !leaf {
                let head = &body[..body.len().min(MAX_LINK_BYTES)];
                let page = read_page(&String::from_utf8_lossy(head), &final_url);
                if !page.nofollow {
                    for link in page.links {
                        if in_prefix(&link) || is_document(&link) {
                            push(&mut queue, link);
                        }
                    }
                }
                if page.noindex {
                    if let Some((p, _)) = &known {
                        gone.insert(p.clone(), "marked noindex".into());
                    }
                    continue;
                }
            }
            reported.insert(path.clone());
            let hash = zhiku_domain::sha256_hex(&body)[..32].to_string();
            let known_here = request.known.get(&path).and_then(|s| PageStamp::read(s));
            if known_here.as_ref().is_some_and(|k| k.h == hash) {
                sink(ScanEvent::Unchanged { path })?;
                continue;
            }
            let racy = reply.last_modified.is_some() && reply.last_modified == reply.date;
            let stamp = PageStamp {
                u: final_url.to_string(),
                e: reply.etag,
                m: reply.last_modified,
                h: hash,
                racy,
            };
            bytes += body.len() as u64;
            sink(ScanEvent::Changed {
                item: SourceItem {
                    path,
                    stamp: serde_json::to_string(&stamp).unwrap_or_default(),
                    reference: final_url.to_string(),
                    link: Some(final_url.to_string()),
                },
                bytes: body,
            })?;
        }
        // Nothing is gone when the site could not be read.
        if asked > 0 && transport_failures * 2 > asked {
            return Err(self.unavailable(format!(
                "{transport_failures} of {asked} requests failed (first: {})",
                first_failure.unwrap_or_default()
            )));
        }
        for (path, _) in known_at.values() {
            if reported.contains(path) {
                continue;
            }
            match gone.remove(path) {
                Some(reason) => sink(ScanEvent::Gone {
                    path: path.clone(),
                    reason,
                })?,
                None if cut_short => sink(ScanEvent::Failed {
                    path: path.clone(),
                    reason: format!("not asked: the scan stopped at max_pages ({})", s.max_pages),
                })?,
                // Known, asked, and now another page's path (a redirect onto it): gone.
                None => sink(ScanEvent::Gone {
                    path: path.clone(),
                    reason: "no longer found at its URL".into(),
                })?,
            }
        }
        // A known path whose stamp could not be read (another source's): gone.
        for path in request.known.keys() {
            if !reported.contains(path) && !known_at.values().any(|(p, _)| p == path) {
                sink(ScanEvent::Gone {
                    path: path.clone(),
                    reason: "not a page of this site".into(),
                })?;
            }
        }
        Ok(Scanned {
            cursor: None,
            requests: client.requests,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sitemaps_and_their_indexes_are_read() {
        let (locs, index) = sitemap_locs(
            br#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <url><loc>https://a.example/x?y=1&amp;z=2</loc></url><url><loc> https://a.example/b </loc></url></urlset>"#,
        );
        assert!(!index);
        assert_eq!(locs, ["https://a.example/x?y=1&z=2", "https://a.example/b"]);
        let (locs, index) = sitemap_locs(
            b"<sitemapindex><sitemap><loc>https://a.example/s1.xml</loc></sitemap></sitemapindex>",
        );
        assert!(index);
        assert_eq!(locs, ["https://a.example/s1.xml"]);
    }
}
