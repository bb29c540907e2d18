//! Following html5ever's tokenizer over the source: tag names and attributes, comments, raw
//! text and script data, and the doctypes that put the parser in quirks mode.

/// Public identifiers of doctypes that put the parser in quirks mode (prefixes, lowercase).
const QUIRKY_PUBLIC_PREFIXES: &[&str] = &[
    "-//advasoft ltd//dtd html 3.0 aswedit + extensions//",
    "-//as//dtd html 3.0 aswedit + extensions//",
    "-//ietf//dtd html 2.0 level 1//",
    "-//ietf//dtd html 2.0 level 2//",
    "-//ietf//dtd html 2.0 strict level 1//",
    "-//ietf//dtd html 2.0 strict level 2//",
    "-//ietf//dtd html 2.0 strict//",
    "-//ietf//dtd html 2.0//",
    "-//ietf//dtd html 2.1e//",
    "-//ietf//dtd html 3.0//",
    "-//ietf//dtd html 3.2 final//",
    "-//ietf//dtd html 3.2//",
    "-//ietf//dtd html 3//",
    "-//ietf//dtd html level 0//",
    "-//ietf//dtd html level 1//",
    "-//ietf//dtd html level 2//",
    "-//ietf//dtd html level 3//",
    "-//ietf//dtd html strict level 0//",
    "-//ietf//dtd html strict level 1//",
    "-//ietf//dtd html strict level 2//",
    "-//ietf//dtd html strict level 3//",
    "-//ietf//dtd html strict//",
    "-//ietf//dtd html//",
    "-//metrius//dtd metrius presentational//",
    "-//microsoft//dtd internet explorer 2.0 html strict//",
    "-//microsoft//dtd internet explorer 2.0 html//",
    "-//microsoft//dtd internet explorer 2.0 tables//",
    "-//microsoft//dtd internet explorer 3.0 html strict//",
    "-//microsoft//dtd internet explorer 3.0 html//",
    "-//microsoft//dtd internet explorer 3.0 tables//",
    "-//netscape comm. corp.//dtd html//",
    "-//netscape comm. corp.//dtd strict html//",
    "-//o'reilly and associates//dtd html 2.0//",
    "-//o'reilly and associates//dtd html extended 1.0//",
    "-//o'reilly and associates//dtd html extended relaxed 1.0//",
    "-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//",
    "-//softquad//dtd hotmetal pro 4.0::19971010::extensions to html 4.0//",
    "-//spyglass//dtd html 2.0 extended//",
    "-//sq//dtd html 2.0 hotmetal + extensions//",
    "-//sun microsystems corp.//dtd hotjava html//",
    "-//sun microsystems corp.//dtd hotjava strict html//",
    "-//w3c//dtd html 3 1995-03-24//",
    "-//w3c//dtd html 3.2 draft//",
    "-//w3c//dtd html 3.2 final//",
    "-//w3c//dtd html 3.2//",
    "-//w3c//dtd html 3.2s draft//",
    "-//w3c//dtd html 4.0 frameset//",
    "-//w3c//dtd html 4.0 transitional//",
    "-//w3c//dtd html experimental 19960712//",
    "-//w3c//dtd html experimental 970421//",
    "-//w3c//dtd w3 html//",
    "-//w3o//dtd w3 html 3.0//",
    "-//webtechs//dtd mozilla html 2.0//",
    "-//webtechs//dtd mozilla html//",
];

/// White space as the tokenizer reads it.
pub(super) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// True when `b[at..]` starts with `word` (ASCII, any case) followed by a tag-name delimiter.
fn tag_name_at(b: &[u8], at: usize, word: &str) -> bool {
    let end = at + word.len();
    end < b.len()
        && b[at..end].eq_ignore_ascii_case(word.as_bytes())
        && (is_space(b[end]) || b[end] == b'/' || b[end] == b'>')
}

/// Where a comment whose text starts at `from` (just after `<!--`) ends, as the tokenizer
/// ends it: at once on `>` or `->`, else after the first `-->` or `--!>`, else at the end.
pub(super) fn comment_end(src: &str, from: usize) -> usize {
    let rest = &src[from..];
    if rest.starts_with('>') {
        return from + 1;
    }
    if rest.starts_with("->") {
        return from + 2;
    }
    let close = rest.find("-->").map(|e| from + e + 3);
    let bang = rest.find("--!>").map(|e| from + e + 4);
    match (close, bang) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(src.len()),
    }
}

/// After the first `>` from `from` (a bogus comment, a doctype), or the end.
pub(super) fn after_gt(src: &str, from: usize) -> usize {
    src[from..].find('>').map_or(src.len(), |e| from + e + 1)
}

/// Where the RCDATA/RAWTEXT content of element `name` starting at `from` ends: the `<` of its
/// end tag, or the end of the source.
pub(super) fn raw_end(src: &str, from: usize, name: &str) -> usize {
    let b = src.as_bytes();
    let mut k = from;
    while let Some(off) = src[k..].find("</") {
        let at = k + off;
        if tag_name_at(b, at + 2, name) {
            return at;
        }
        k = at + 2;
    }
    b.len()
}

/// Where the content of a `<script>` starting at `from` ends: the `<` of its end tag, or the
/// end of the source, following the tokenizer's script-data states (`<!--` escapes, and a
/// `<script>` inside an escape hides the next `</script>`).
pub(super) fn script_end(src: &str, from: usize) -> usize {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Data,
        Esc,
        EscDash,
        EscDashDash,
        Double,
        DoubleDash,
        DoubleDashDash,
    }
    let b = src.as_bytes();
    let mut s = S::Data;
    let mut k = from;
    while k < b.len() {
        if s == S::Data {
            let Some(off) = src[k..].find('<') else {
                return b.len();
            };
            let at = k + off;
            if b.get(at + 1) == Some(&b'/') && tag_name_at(b, at + 2, "script") {
                return at;
            }
            if src[at + 1..].starts_with("!--") {
                s = S::EscDashDash;
                k = at + 4;
            } else {
                k = at + 1;
            }
            continue;
        }
        let c = b[k];
        k += 1;
        s = match (s, c) {
            (S::Esc | S::EscDash | S::EscDashDash, b'<') => {
                if b.get(k) == Some(&b'/') && tag_name_at(b, k + 1, "script") {
                    return k - 1;
                }
                if tag_name_at(b, k, "script") {
                    k += 7;
                    S::Double
                } else {
                    S::Esc
                }
            }
            (S::Double | S::DoubleDash | S::DoubleDashDash, b'<') => {
                if b.get(k) == Some(&b'/') && tag_name_at(b, k + 1, "script") {
                    k += 8;
                    S::Esc
                } else {
                    S::Double
                }
            }
            (S::Esc, b'-') => S::EscDash,
            (S::EscDash | S::EscDashDash, b'-') => S::EscDashDash,
            (S::EscDashDash | S::DoubleDashDash, b'>') => S::Data,
            (S::Esc | S::EscDash | S::EscDashDash, _) => S::Esc,
            (S::Double, b'-') => S::DoubleDash,
            (S::DoubleDash | S::DoubleDashDash, b'-') => S::DoubleDashDash,
            _ => S::Double,
        };
    }
    b.len()
}

/// Scans a tag's attributes from `j` (just after its name) as the tokenizer does; the end of
/// the tag and whether it is self-closing, or `None` when the source ends inside it. The
/// ranges of the attribute names are left in `names`.
pub(super) fn scan_tag(
    b: &[u8],
    mut j: usize,
    names: &mut Vec<(usize, usize)>,
) -> Option<(usize, bool)> {
    #[derive(Clone, Copy)]
    enum S {
        BeforeName,
        Name(usize),
        AfterName,
        BeforeValue,
        Quoted(u8),
        Unquoted,
        AfterQuoted,
        SelfClosing,
    }
    names.clear();
    let mut s = S::BeforeName;
    while j < b.len() {
        let c = b[j];
        j += 1;
        s = match s {
            S::BeforeName | S::AfterName if is_space(c) => s,
            S::BeforeName | S::AfterName | S::AfterQuoted if c == b'/' => S::SelfClosing,
            S::BeforeName
            | S::AfterName
            | S::BeforeValue
            | S::Unquoted
            | S::AfterQuoted
            | S::SelfClosing
                if c == b'>' =>
            {
                return Some((j, matches!(s, S::SelfClosing)));
            }
            S::AfterName if c == b'=' => S::BeforeValue,
            S::BeforeName | S::AfterName => S::Name(j - 1),
            S::Name(start) if is_space(c) || c == b'/' || c == b'>' || c == b'=' => {
                names.push((start, j - 1));
                j -= 1;
                if c == b'=' {
                    j += 1;
                    S::BeforeValue
                } else {
                    S::AfterName
                }
            }
            S::Name(_) => s,
            S::BeforeValue if is_space(c) => s,
            S::BeforeValue if c == b'"' || c == b'\'' => S::Quoted(c),
            S::BeforeValue => S::Unquoted,
            S::Quoted(q) if c == q => S::AfterQuoted,
            S::Quoted(_) => s,
            S::Unquoted | S::AfterQuoted if is_space(c) => S::BeforeName,
            S::Unquoted => s,
            S::AfterQuoted | S::SelfClosing => {
                j -= 1;
                S::BeforeName
            }
        };
    }
    None
}

/// Whether a doctype (its text after `<!doctype`) puts the parser in quirks mode.
pub(super) fn doctype_quirks(text: &str) -> bool {
    let text = text.trim_end_matches('>');
    let mut rest = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let name_len = rest
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..name_len].to_ascii_lowercase();
    rest = rest[name_len..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    if name != "html" {
        return true;
    }
    // A quoted identifier after a keyword; `None` when it is missing or unterminated.
    fn quoted(s: &str) -> Option<(String, &str)> {
        let s = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
        let q = s.chars().next().filter(|&c| c == '"' || c == '\'')?;
        let end = s[1..].find(q)?;
        Some((s[1..1 + end].to_ascii_lowercase(), &s[2 + end..]))
    }
    let keyword = |s: &str, k: &str| s.len() >= k.len() && s[..k.len()].eq_ignore_ascii_case(k);
    let (public, system) = if rest.is_empty() {
        (None, None)
    } else if keyword(rest, "public") {
        let Some((public, after)) = quoted(&rest[6..]) else {
            return true;
        };
        let after = after.trim_start_matches(|c: char| c.is_ascii_whitespace());
        if after.is_empty() {
            (Some(public), None)
        } else {
            let Some((system, _)) = quoted(after) else {
                return true;
            };
            (Some(public), Some(system))
        }
    } else if keyword(rest, "system") {
        let Some((system, _)) = quoted(&rest[6..]) else {
            return true;
        };
        (None, Some(system))
    } else {
        return true;
    };
    if system.as_deref() == Some("http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd") {
        return true;
    }
    let Some(p) = public else { return false };
    matches!(
        p.as_str(),
        "-//w3o//dtd w3 html strict 3.0//en//" | "-/w3c/dtd html 4.0 transitional/en" | "html"
    ) || QUIRKY_PUBLIC_PREFIXES.iter().any(|x| p.starts_with(x))
        || (system.is_none()
            && (p.starts_with("-//w3c//dtd html 4.01 frameset//")
                || p.starts_with("-//w3c//dtd html 4.01 transitional//")))
}
