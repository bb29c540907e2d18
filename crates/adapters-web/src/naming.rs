//! A URL's path as the path of an item (and of its copy in the mirror).

use zhiku_domain::ports::is_item_path;

/// Decodes `%XX` escapes; `None` when the result is not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The item path of a URL's `path` (from the origin's root, percent-decoded). A page
/// (`html`) at a folder (`…/`) is `…/index.html`, one without an HTML extension gets `.html`;
/// a segment a folder scan would hide (`.well-known`) gets a leading `_`. `None` when no
/// plain path can be made (a file at the root with no name).
pub fn item_path(path: &str, html: bool) -> Option<String> {
    let decoded = percent_decode(path).unwrap_or_else(|| path.to_string());
    let mut rel = decoded.trim_start_matches('/').to_string();
    if rel.is_empty() || rel.ends_with('/') {
        if !html {
            return None;
        }
        rel.push_str("index.html");
    }
    let mut segments: Vec<String> = rel
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s: String = s.chars().map(|c| if c == '\\' { '_' } else { c }).collect();
            if s.starts_with('.') {
                format!("_{s}")
            } else {
                s
            }
        })
        .collect();
    if html && let Some(last) = segments.last_mut() {
        let lower = last.to_ascii_lowercase();
        if !(lower.ends_with(".html") || lower.ends_with(".htm") || lower.ends_with(".xhtml")) {
            last.push_str(".html");
        }
    }
    let rel = segments.join("/");
    is_item_path(&rel).then_some(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_plain_file_paths() {
        assert_eq!(item_path("/", true).as_deref(), Some("index.html"));
        assert_eq!(
            item_path("/docs/", true).as_deref(),
            Some("docs/index.html")
        );
        assert_eq!(
            item_path("/docs/guide", true).as_deref(),
            Some("docs/guide.html")
        );
        assert_eq!(
            item_path("/docs/a.html", true).as_deref(),
            Some("docs/a.html")
        );
        assert_eq!(
            item_path("/%E6%89%8B%E5%86%8C/a%20b.pdf", false).as_deref(),
            Some("手册/a b.pdf")
        );
        assert_eq!(
            item_path("/.well-known/x", true).as_deref(),
            Some("_.well-known/x.html")
        );
        assert_eq!(item_path("/files/", false), None);
        assert_eq!(item_path("/a%ZZ.pdf", false).as_deref(), Some("a%ZZ.pdf"));
        assert_eq!(
            item_path("/bad%FF.pdf", false).as_deref(),
            Some("bad%FF.pdf")
        );
    }
}
