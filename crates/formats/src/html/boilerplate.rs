//! Boilerplate: the *hard* junk never read (scripts, forms, navigation landmarks, hidden
//! elements) and the *soft* junk whose `id` or `class` names boilerplate.

use super::arena::Arena;
use super::model::Mode;

impl Arena<'_> {
    /// Whether `i` is hard junk: never read, whatever it holds.
    pub(super) fn is_hard(&self, i: usize, mode: Mode) -> bool {
        let name = self.name(i);
        if name.is_empty() {
            return false;
        }
        const ALWAYS: &[&str] = &[
            "head", "script", "style", "noscript", "template", "svg", "math", "#foreign", "iframe",
            "object", "embed", "canvas", "video", "audio", "button", "input", "select", "textarea",
            "option", "datalist", "map", "link", "meta", "title", "base",
        ];
        if ALWAYS.contains(&name) {
            return true;
        }
        if mode == Mode::Chapter {
            return matches!(name, "rt" | "rp");
        }
        if matches!(name, "nav" | "aside" | "dialog" | "menu") {
            return true;
        }
        if self.attr(i, "hidden").is_some() || self.attr(i, "aria-hidden") == Some("true") {
            return true;
        }
        if let Some(style) = self.attr(i, "style") {
            let s: String = style
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase();
            if s.contains("display:none") || s.contains("visibility:hidden") {
                return true;
            }
        }
        if let Some(role) = self.attr(i, "role") {
            let role = role.trim().to_ascii_lowercase();
            if matches!(
                role.as_str(),
                "navigation"
                    | "banner"
                    | "contentinfo"
                    | "complementary"
                    | "search"
                    | "menu"
                    | "menubar"
                    | "toolbar"
                    | "dialog"
                    | "alertdialog"
            ) {
                return true;
            }
        }
        false
    }

    /// Whether `i` is soft junk by its name: a `form`, or an `id` or `class` naming
    /// [`BOILERPLATE`] and no [`CONTENT`]. (Where soft junk is spared is the main content's
    /// call.)
    pub(super) fn is_soft(&self, i: usize) -> bool {
        if self.is(i, "form") {
            return true;
        }
        let mut junk = false;
        let mut content = false;
        let tokens = self.attr(i, "id").into_iter().chain(
            self.attr(i, "class")
                .into_iter()
                .flat_map(|c| c.split_ascii_whitespace()),
        );
        for token in tokens {
            let words = words(token);
            let raw = token.to_ascii_lowercase();
            if BOILERPLATE.iter().any(|p| has_word(&words, p) || raw == *p) {
                junk = true;
            }
            if CONTENT.iter().any(|p| has_word(&words, p)) {
                content = true;
            }
        }
        junk && !content
    }
}

/// Boilerplate names, matched against the words of an `id` or `class` token.
const BOILERPLATE: &[&str] = &[
    "nav",
    "navbar",
    "navbox",
    "navigation",
    "menu",
    "menubar",
    "sidebar",
    "side-bar",
    "sidenav",
    "topbar",
    "footer",
    "breadcrumb",
    "breadcrumbs",
    "toc",
    "table-of-contents",
    "on-this-page",
    "cookie",
    "cookies",
    "consent",
    "banner",
    "advert",
    "advertisement",
    "ads",
    "adsbygoogle",
    "sponsor",
    "share",
    "sharing",
    "social",
    "related",
    "comment",
    "comments",
    "pagination",
    "pager",
    "edit",
    "editsection",
    "skip-link",
    "skip-to-content",
    "skiplink",
    "jump-to",
    "jump-link",
    "mw-navigation",
    "mw-panel",
    "mw-head",
    "catlinks",
    "printfooter",
    "sitesub",
    "contentsub",
    "newsletter",
    "subscribe",
    "popup",
    "headerlink",
    "hash-link",
    "header-anchor",
    "anchorjs-link",
    "sr-only",
    "visually-hidden",
    "screen-reader-text",
];

/// Names that say an element is content, which sparing it from [`BOILERPLATE`].
const CONTENT: &[&str] = &[
    "content", "article", "main", "post", "entry", "body", "story",
];

/// The words of an `id`/`class` token: lower-cased, split at `-`, `_`, `.`, `:` and camel case.
pub(super) fn words(token: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in token.chars() {
        if matches!(c, '-' | '_' | '.' | ':' | '/') {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether `pattern` (words joined by `-`) occurs as consecutive words.
pub(super) fn has_word(words: &[String], pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('-').collect();
    words
        .windows(parts.len())
        .any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
}
