//! What a page declares about itself: its title (without a site name) and its language.

/// The page's title: `<title>` without a site suffix (or prefix) when what remains is the
/// `<h1>`, else the whole `<title>`; the `<h1>` when there is no `<title>`.
pub fn choose_title(title: Option<String>, h1: Option<String>) -> Option<String> {
    const SEPARATORS: &[&str] = &["-", "|", "—", "–", "·", "::", "»", "«", "_", "｜", "·", ":"];
    match (title, h1) {
        (Some(t), Some(h)) => {
            if t != h {
                if let Some(rest) = t.strip_prefix(h.as_str()) {
                    let rest = rest.trim_start();
                    if SEPARATORS.iter().any(|s| rest.starts_with(s)) {
                        return Some(h);
                    }
                }
                if let Some(rest) = t.strip_suffix(h.as_str()) {
                    let rest = rest.trim_end();
                    if SEPARATORS.iter().any(|s| rest.ends_with(s)) {
                        return Some(h);
                    }
                }
            }
            Some(t)
        }
        (Some(t), None) => Some(t),
        (None, h) => h,
    }
}

/// A BCP 47 tag in its usual case (`zh_cn` → `zh-CN`, `zh-hans-cn` → `zh-Hans-CN`), `None`
/// when the value is not a language tag.
pub fn normalise_locale(value: &str) -> Option<String> {
    let value = value.trim().replace('_', "-");
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    let mut out = Vec::new();
    for (i, part) in value.split('-').enumerate() {
        if part.is_empty() || part.len() > 8 || !part.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let part = if i == 0 {
            if !part.chars().all(|c| c.is_ascii_alphabetic()) {
                return None;
            }
            part.to_ascii_lowercase()
        } else if part.len() == 2 && part.chars().all(|c| c.is_ascii_alphabetic()) {
            part.to_ascii_uppercase()
        } else if part.len() == 4 && part.chars().all(|c| c.is_ascii_alphabetic()) {
            let lower = part.to_ascii_lowercase();
            lower[..1].to_ascii_uppercase() + &lower[1..]
        } else {
            part.to_ascii_lowercase()
        };
        out.push(part);
    }
    if out[0] == "und" {
        return None;
    }
    Some(out.join("-"))
}
