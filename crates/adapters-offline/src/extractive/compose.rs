//! Composing the cited answer: the text a candidate is quoted with (an introducing sentence
//! with its items), the picked candidates joined in the evidence's order, and every sentence
//! cited with its block's marker.

use std::collections::BTreeSet;

use zhiku_text::is_cjk;

use super::block::{Kind, Unit, has_cjk};
use super::candidate::Candidate;
use super::config::ExtractiveConfig;

/// The text a candidate is quoted with: an introducing sentence with its items.
pub(super) fn quoted(config: &ExtractiveConfig, blocks: &[Vec<Unit>], c: &Candidate) -> String {
    let unit = &blocks[c.block][c.index];
    if !matches!(unit.kind, Kind::Intro | Kind::List) {
        return unit.text.clone();
    }
    let items: Vec<&str> = unit
        .items
        .iter()
        .map(|&i| blocks[c.block][i].text.as_str())
        .collect();
    let whole = join_items(&unit.text, &unit.label, &items, usize::MAX);
    if whole.chars().count() <= config.max_chars {
        return whole;
    }
    // Too long to quote whole: each item by its first clause, so that the answer still
    // names every item of the list.
    let mut seen = BTreeSet::new();
    let heads: Vec<&str> = unit
        .items
        .iter()
        .map(|&i| &blocks[c.block][i])
        .filter(|u| seen.insert(u.line))
        .map(|u| first_clause(&u.text))
        .collect();
    join_items(&unit.text, &unit.label, &heads, config.max_chars)
}

/// The answer: the `picked` candidates quoted in order, each with its block's marker (an
/// item quoted with its introducing sentence is not quoted again).
pub(super) fn render(
    config: &ExtractiveConfig,
    blocks: &[Vec<Unit>],
    candidates: &[Candidate],
    picked: &[usize],
) -> String {
    // Items quoted with their introducing sentence are not quoted again.
    let mut skip: BTreeSet<(usize, usize)> = BTreeSet::new();
    for &p in picked {
        let c = &candidates[p];
        let unit = &blocks[c.block][c.index];
        if matches!(unit.kind, Kind::Intro | Kind::List) {
            skip.extend(unit.items.iter().map(|&i| (c.block, i)));
        }
    }
    let mut answer = String::new();
    let mut k = 0;
    while k < picked.len() {
        let c = &candidates[picked[k]];
        if skip.contains(&(c.block, c.index)) {
            k += 1;
            continue;
        }
        // Consecutive sentences of one line are one quotation with one marker.
        let mut text = quoted(config, blocks, c);
        let mut last = c;
        while k + 1 < picked.len() {
            let n = &candidates[picked[k + 1]];
            if n.block == last.block
                && n.index == last.index + 1
                && n.line == last.line
                && !matches!(n.kind, Kind::Intro | Kind::List)
            {
                if !has_cjk(&text) {
                    text.push(' ');
                }
                text.push_str(&n.text);
                last = n;
                k += 1;
            } else {
                break;
            }
        }
        if !answer.is_empty() && !ends_cjk(&answer) {
            answer.push(' ');
        }
        answer.push_str(&cite(&text, c.marker));
        k += 1;
    }
    answer
}

/// An introducing sentence (empty for a list under a heading) with its items, "；"- or
/// "; "-separated, as many items as fit in `max_chars`.
fn join_items(intro: &str, label: &str, items: &[&str], max_chars: usize) -> String {
    let mut text = intro.to_string();
    let chinese = has_cjk(intro) || has_cjk(label);
    let mut first = true;
    for item in items {
        let t = item.trim_end_matches(['。', '.', '；', ';', '，', ',']);
        let sep = if first {
            if chinese || text.is_empty() { "" } else { " " }
        } else if chinese {
            "；"
        } else {
            "; "
        };
        if text.chars().count() + sep.chars().count() + t.chars().count() > max_chars {
            break;
        }
        text.push_str(sep);
        text.push_str(t);
        first = false;
    }
    text
}

/// A sentence up to its first clause separator (`：`, `，`, `;`, …), when what comes before
/// it is long enough to say something; else the whole sentence.
fn first_clause(sentence: &str) -> &str {
    sentence
        .char_indices()
        .filter(|(_, c)| matches!(c, '：' | ':' | '，' | ',' | '；' | ';' | '（' | '('))
        .map(|(i, _)| sentence[..i].trim_end())
        .find(|head| !too_short(head))
        .unwrap_or(sentence)
}

/// Too short to stand alone as an answer: under six characters of Chinese, or under three
/// Latin words.
pub(super) fn too_short(text: &str) -> bool {
    let core = text.trim_end_matches(|c: char| !c.is_alphanumeric());
    if has_cjk(core) {
        core.chars().filter(|c| c.is_alphanumeric()).count() < 6
    } else {
        core.split_whitespace().count() < 3
    }
}

/// `text` with marker `n`, ending with one full stop after the marker.
fn cite(text: &str, n: u32) -> String {
    // Every sentence of a quoted unit carries the marker: an uncited sentence is rejected.
    let text = mark_inner_sentences(text.trim(), n);
    let text = text.as_str();
    let chinese = has_cjk(text);
    let stop = if chinese { '。' } else { '.' };
    let trimmed = text.trim_end_matches(['。', '.', '；', ';', '！', '!', '，', ',', '、']);
    // A sentence ending in a closing quote or bracket after its stop keeps it: "…。”[1]".
    if trimmed.len() == text.len()
        && text.ends_with(['”', '」', '』', '"', '）', ')', '’'])
        && text
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| matches!(c, '。' | '.' | '！' | '!' | '？' | '?'))
    {
        return format!("{text}[{n}]");
    }
    format!("{trimmed}[{n}]{stop}")
}

/// `text` with `[n]` before each sentence stop but the last (`。`, `！`, `？`, and `.`, `!`,
/// `?` before white space).
fn mark_inner_sentences(text: &str, n: u32) -> String {
    let chars: Vec<char> = text.chars().collect();
    let last_stop = chars.iter().rposition(|c| {
        !matches!(c, '”' | '」' | '』' | '"' | '）' | ')' | '’') && !c.is_whitespace()
    });
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let stop = matches!(c, '。' | '！' | '？')
            || (matches!(c, '.' | '!' | '?')
                && chars.get(i + 1).is_some_and(|x| x.is_whitespace()));
        if stop && Some(i) != last_stop && i + 1 < chars.len() {
            out.push_str(&format!("[{n}]"));
        }
        out.push(c);
    }
    out
}

fn ends_cjk(text: &str) -> bool {
    text.ends_with('。') || text.chars().last().is_some_and(is_cjk)
}
