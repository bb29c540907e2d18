//! A WebDAV share (Nextcloud, ownCloud, any RFC 4918 server) as a document source.
//!
//! A scan lists the share folder by folder (`PROPFIND` with `Depth: 1`, which every server
//! allows, where `infinity` is often refused), all of it before it reports anything, so a
//! listing that fails reports nothing gone. A file's stamp is its `getetag` (the
//! modification time and length where a server gives none): an unchanged file costs no request
//! of its own, a changed one a `GET`.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use base64::Engine;
use url::Url;
use zhiku_domain::ports::{
    DocumentSource, ScanError, ScanEvent, ScanRequest, Scanned, SourceItem, is_item_path,
};

use crate::Wanted;
use crate::http::Client;
use crate::naming::percent_decode;

/// Most bytes of one folder's listing.
const MAX_LISTING_BYTES: u64 = 64 * 1024 * 1024;

const PROPFIND: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/><d:getetag/><d:getcontentlength/><d:getlastmodified/></d:prop></d:propfind>"#;

/// How a share is reached.
#[derive(Clone)]
pub struct DavSettings {
    /// The shared folder's URL (`https://cloud.example/remote.php/dav/files/li/Handbook/`).
    pub url: String,
    /// The user, for Basic authentication.
    pub user: Option<String>,
    /// The password or app token.
    pub password: Option<String>,
    /// One request's deadline.
    pub timeout: Duration,
    /// Most files and folders listed.
    pub max_entries: usize,
    /// Which item paths are taken.
    pub wanted: Wanted,
}

impl std::fmt::Debug for DavSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DavSettings")
            .field("url", &self.url)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// A WebDAV share.
#[derive(Debug)]
pub struct DavSource {
    settings: DavSettings,
}

/// One entry of a listing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Entry {
    href: String,
    collection: bool,
    etag: Option<String>,
    length: Option<u64>,
    modified: Option<String>,
}

/// A file to report.
struct File {
    path: String,
    url: Url,
    stamp: String,
    length: Option<u64>,
}

impl DavSource {
    /// A share over `settings`.
    pub fn new(settings: DavSettings) -> Self {
        Self { settings }
    }

    fn base(&self) -> Result<Url, ScanError> {
        let mut url = self.settings.url.clone();
        if !url.ends_with('/') {
            url.push('/');
        }
        let u = Url::parse(&url).map_err(|e| self.refused(format!("{e}")))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(self.refused("not an http(s) URL"));
        }
        Ok(u)
    }

    fn refused(&self, message: impl Into<String>) -> ScanError {
        ScanError::Refused {
            kind: "webdav",
            location: self.location(),
            message: message.into(),
        }
    }

    fn unavailable(&self, message: impl Into<String>) -> ScanError {
        ScanError::Unavailable {
            kind: "webdav",
            location: self.location(),
            message: message.into(),
        }
    }

    fn authorization(&self) -> Option<String> {
        let user = self.settings.user.as_deref()?;
        let password = self.settings.password.as_deref().unwrap_or_default();
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        ))
    }

    /// Every file of the share, listed folder by folder.
    fn list(&self, client: &mut Client, base: &Url) -> Result<Vec<File>, ScanError> {
        let auth = self.authorization();
        let base_path = percent_decode(base.path()).unwrap_or_else(|| base.path().to_string());
        let mut folders = VecDeque::from([base.clone()]);
        let mut seen = std::collections::HashSet::new();
        let mut files = Vec::new();
        let mut entries = 0usize;
        while let Some(folder) = folders.pop_front() {
            if !seen.insert(folder.path().to_string()) {
                continue;
            }
            let mut headers = vec![
                ("Depth", "1"),
                ("Content-Type", "application/xml; charset=utf-8"),
            ];
            if let Some(a) = &auth {
                headers.push(("Authorization", a));
            }
            let reply = client
                .send(
                    "PROPFIND",
                    folder.as_str(),
                    &headers,
                    Some(PROPFIND.as_bytes()),
                    MAX_LISTING_BYTES,
                )
                .map_err(|e| self.unavailable(format!("{folder}: {e}")))?;
            match reply.status {
                207 => {}
                401 | 403 => {
                    return Err(self.refused(format!(
                        "{} listing {folder}: credentials refused",
                        reply.status
                    )));
                }
                404 if folder == *base => {
                    return Err(self.refused("the shared folder is not there (404)"));
                }
                s => {
                    return Err(self.unavailable(format!("listing {folder} answered {s}")));
                }
            }
            let body = reply
                .body
                .ok_or_else(|| self.unavailable(format!("the listing of {folder} is too large")))?;
            for entry in multistatus(&body) {
                entries += 1;
                if entries > self.settings.max_entries {
                    return Err(self.refused(format!(
                        "more than {} files and folders (max_entries)",
                        self.settings.max_entries
                    )));
                }
                let Ok(url) = folder.join(&entry.href) else {
                    continue;
                };
                if url.origin() != base.origin() || !url.path().starts_with(base.path()) {
                    continue;
                }
                if entry.collection {
                    if url.path().trim_end_matches('/') != folder.path().trim_end_matches('/') {
                        let mut sub = url.clone();
                        if !sub.path().ends_with('/') {
                            sub.set_path(&format!("{}/", sub.path()));
                        }
                        folders.push_back(sub);
                    }
                    continue;
                }
                let decoded = percent_decode(url.path()).unwrap_or_else(|| url.path().to_string());
                let Some(rel) = decoded.strip_prefix(&base_path) else {
                    continue;
                };
                let rel = rel.trim_start_matches('/').to_string();
                if !is_item_path(&rel) || !(self.settings.wanted)(&rel) {
                    continue;
                }
                let stamp = match (&entry.etag, &entry.modified) {
                    (Some(e), _) => format!("etag:{e}"),
                    (None, Some(m)) => format!("modified:{m};{}", entry.length.unwrap_or(0)),
                    // Nothing to tell a change by: always read again.
                    (None, None) => String::new(),
                };
                files.push(File {
                    path: rel,
                    url,
                    stamp,
                    length: entry.length,
                });
            }
        }
        Ok(files)
    }
}

/// The entries of a `207 Multi-Status` reply (namespace prefixes ignored).
fn multistatus(xml: &[u8]) -> Vec<Entry> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut current: Option<Entry> = None;
    // The element whose text is being read, and its text so far.
    let mut field: Option<(Vec<u8>, String)> = None;
    let mut in_resourcetype = false;
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(Event::Eof) | Err(_) => break,
            Ok(e) => e,
        };
        match &event {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.local_name().as_ref().to_vec();
                match name.as_slice() {
                    b"response" if matches!(event, Event::Start(_)) => {
                        current = Some(Entry::default());
                    }
                    b"resourcetype" => in_resourcetype = matches!(event, Event::Start(_)),
                    b"collection" if in_resourcetype => {
                        if let Some(c) = current.as_mut() {
                            c.collection = true;
                        }
                    }
                    _ => {}
                }
                if matches!(event, Event::Start(_)) {
                    field = Some((name, String::new()));
                }
            }
            Event::End(e) => {
                if let (Some(c), Some((name, text))) = (current.as_mut(), field.take()) {
                    let text = text.trim().to_string();
                    if !text.is_empty() {
                        match name.as_slice() {
                            b"href" => c.href = text,
                            b"getetag" => c.etag = Some(text),
                            b"getcontentlength" => c.length = text.parse().ok(),
                            b"getlastmodified" => c.modified = Some(text),
                            _ => {}
                        }
                    }
                }
                match e.local_name().as_ref() {
                    b"response" => out.extend(current.take().filter(|c| !c.href.is_empty())),
                    b"resourcetype" => in_resourcetype = false,
                    _ => {}
                }
            }
            other => {
                if let (Some((_, text)), Some(add)) = (field.as_mut(), crate::xml::text_of(other)) {
                    text.push_str(&add);
                }
            }
        }
        buf.clear();
    }
    out
}

impl DocumentSource for DavSource {
    fn kind(&self) -> &'static str {
        "webdav"
    }

    fn location(&self) -> String {
        // A URL's own user:password part never shows.
        match Url::parse(&self.settings.url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.to_string()
            }
            Err(_) => self.settings.url.clone(),
        }
    }

    fn scan(
        &self,
        request: &ScanRequest<'_>,
        sink: &mut dyn FnMut(ScanEvent) -> Result<(), ScanError>,
    ) -> Result<Scanned, ScanError> {
        let base = self.base()?;
        let mut client = Client::new(self.settings.timeout, "zhiku", Duration::ZERO);
        let files = self.list(&mut client, &base)?;
        let auth = self.authorization();
        // What is gone goes first (the listing is complete): a file that became a folder
        // leaves before what replaces it is written.
        let listed: std::collections::BTreeSet<&str> =
            files.iter().map(|f| f.path.as_str()).collect();
        for path in request.known.keys() {
            if !listed.contains(path.as_str()) {
                sink(ScanEvent::Gone {
                    path: path.clone(),
                    reason: "not in the share".into(),
                })?;
            }
        }
        let mut held: BTreeMap<String, ()> = BTreeMap::new();
        let mut bytes = 0u64;
        for file in files {
            if held.insert(file.path.clone(), ()).is_some() {
                continue;
            }
            if !file.stamp.is_empty() && request.known.get(&file.path) == Some(&file.stamp) {
                sink(ScanEvent::Unchanged { path: file.path })?;
                continue;
            }
            if file.length.is_some_and(|n| n > request.max_item_bytes) {
                sink(ScanEvent::Failed {
                    reason: format!(
                        "{} bytes, over the bound of {}",
                        file.length.unwrap_or(0),
                        request.max_item_bytes
                    ),
                    path: file.path,
                })?;
                continue;
            }
            let mut headers = Vec::new();
            if let Some(a) = &auth {
                headers.push(("Authorization", a.as_str()));
            }
            let failed = |reason: String| ScanEvent::Failed {
                path: file.path.clone(),
                reason,
            };
            match client.send(
                "GET",
                file.url.as_str(),
                &headers,
                None,
                request.max_item_bytes,
            ) {
                Err(e) => sink(failed(e))?,
                Ok(r) if r.status == 200 => match r.body {
                    None => sink(failed(format!(
                        "larger than the bound of {} bytes",
                        request.max_item_bytes
                    )))?,
                    Some(body) => {
                        // A file without validators is stamped by its bytes.
                        let stamp = if file.stamp.is_empty() {
                            format!("sha256:{}", zhiku_domain::sha256_hex(&body))
                        } else {
                            file.stamp.clone()
                        };
                        if request.known.get(&file.path) == Some(&stamp) {
                            sink(ScanEvent::Unchanged { path: file.path })?;
                            continue;
                        }
                        bytes += body.len() as u64;
                        let mut shown = file.url.clone();
                        let _ = shown.set_username("");
                        let _ = shown.set_password(None);
                        sink(ScanEvent::Changed {
                            item: SourceItem {
                                path: file.path,
                                stamp,
                                reference: shown.to_string(),
                                link: Some(shown.to_string()),
                            },
                            bytes: body,
                        })?;
                    }
                },
                Ok(r) => sink(failed(format!("GET answered {}", r.status)))?,
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
    fn a_multistatus_reply_is_read_whatever_its_prefixes() {
        let xml = br#"<?xml version="1.0" encoding="utf-8"?>
<D:multistatus xmlns:D="DAV:"><D:response><D:href>/dav/docs/</D:href><D:propstat><D:prop>
<D:resourcetype><D:collection/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
<D:response><D:href>/dav/docs/%E6%89%8B%E5%86%8C&amp;x.pdf</D:href><D:propstat><D:prop><D:resourcetype/>
<D:getetag>"abc-1"</D:getetag><D:getcontentlength>1234</D:getcontentlength>
<D:getlastmodified>Sun, 06 Dec 2026 06:00:00 GMT</D:getlastmodified></D:prop></D:propstat></D:response></D:multistatus>"#;
        let entries = multistatus(xml);
        assert_eq!(entries.len(), 2);
        assert!(entries[0].collection);
        assert_eq!(entries[1].href, "/dav/docs/%E6%89%8B%E5%86%8C&x.pdf");
        assert_eq!(entries[1].etag.as_deref(), Some("\"abc-1\""));
        assert_eq!(entries[1].length, Some(1234));
        assert!(!entries[1].collection);
    }
}
