//! Web sites and WebDAV shares as document sources (`crates/adapters-web`): everything a sync
//! reaches over HTTP, through one client with one set of bounds.
//!
//! - [`site`] — a web site crawled from start URLs and sitemaps, inside a URL prefix, under
//!   robots.txt and a rate limit; every page it knows is asked again conditionally
//!   (`If-None-Match`, `If-Modified-Since`), so an unchanged page costs one 304.
//! - [`dav`] — a WebDAV share (Nextcloud, ownCloud, any RFC 4918 server): folders listed with
//!   `PROPFIND`, a file fetched only when its `getetag` changed.
//! - [`naming`] — a URL's path as an item path.
//!
//! Bytes from a server are hostile: every body is read within a bound (an item's
//! `max_item_bytes`, a listing's own), redirects are followed by hand and only within the
//! source's origin, and a page's links are read from bounded text by html5ever (`scraper`).

pub mod dav;
mod http;
mod links;
pub mod naming;
pub mod site;
mod xml;

use std::sync::Arc;

pub use dav::{DavSettings, DavSource};
pub use site::{SiteSettings, SiteSource};

/// Which item paths of a source are wanted (the formats the knowledge base reads).
pub type Wanted = Arc<dyn Fn(&str) -> bool + Send + Sync>;
