//! Sentences of a piece of evidence, and the terms two texts can share: what answer
//! composition, support checks, rerankers and planners measure overlap with.

use std::collections::BTreeSet;

use crate::cjk::{is_cjk, is_cjk_str};

fn ends_sentence(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '!' | '?' | '；' | ';')
}

fn strip_markup(line: &str) -> &str {
    let t = line.trim();
    let t = t.trim_start_matches('#').trim_start();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("> "))
        .unwrap_or(t);
    // "1. item"
    match t.split_once(". ") {
        Some((n, rest))
            if !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            rest
        }
        _ => t,
    }
}

/// The sentences of `text`, trimmed, in order. Lines are units of their own (Markdown lists,
/// headings), code fences are skipped, and a Latin full stop ends a sentence only before
/// white space.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || trimmed.is_empty() || trimmed.starts_with('|') {
            continue;
        }
        let line = strip_markup(trimmed);
        let mut current = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            let latin_stop = c == '.' && chars.peek().is_none_or(|n| n.is_whitespace());
            if ends_sentence(c) || latin_stop {
                while let Some(&n) = chars.peek() {
                    if matches!(n, '”' | '」' | '"' | '）' | ')') {
                        current.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                push_sentence(&mut out, &mut current);
            }
        }
        push_sentence(&mut out, &mut current);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    let s = current.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s.to_string());
    }
    current.clear();
}

/// Chinese function characters: they break a run of CJK characters, so bigrams such as
/// "是怎" or "成的" never become terms.
const FUNCTION_CHARS: &str = "的是了么吗呢吧啊在和与及或哪什怎如何为这那些个们把被对从到之其而并则该此它我你他她也都还就有会能要可将";

/// Latin words and CJK bigrams that carry little meaning in a question.
const STOP: &[&str] = &[
    "什么",
    "怎么",
    "怎样",
    "如何",
    "哪些",
    "哪个",
    "是否",
    "为什么",
    "为何",
    "有没",
    "没有",
    "有哪",
    "么样",
    "可以",
    "吗",
    "呢",
    "的",
    "了",
    "是",
    "在",
    "和",
    "与",
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "do",
    "does",
    "did",
    "what",
    "which",
    "who",
    "how",
    "why",
    "when",
    "where",
    "of",
    "to",
    "in",
    "on",
    "for",
    "and",
    "or",
    "with",
    "by",
    "it",
    "its",
    "this",
    "that",
    "can",
    "i",
    "my",
    "me",
    "you",
    "your",
    "there",
    "any",
    "as",
    "at",
    "from",
    "if",
];

/// The terms of `text` for overlap scoring: lower-cased Latin words and digits runs, and CJK
/// character bigrams (a lone CJK character counts as itself) within runs broken at function
/// characters, minus question words.
pub fn terms(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush_run = |run: &mut Vec<char>, out: &mut BTreeSet<String>| {
        if run.len() == 1 {
            out.insert(run[0].to_string());
        }
        for w in run.windows(2) {
            out.insert(w.iter().collect());
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) && !FUNCTION_CHARS.contains(c) {
            if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
            run.push(c);
        } else {
            flush_run(&mut run, &mut out);
            if is_cjk(c) {
                if !word.is_empty() {
                    out.insert(std::mem::take(&mut word));
                }
            } else if c.is_alphanumeric() || c == '_' {
                word.extend(c.to_lowercase());
            } else if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
        }
    }
    flush_run(&mut run, &mut out);
    if !word.is_empty() {
        out.insert(word);
    }
    // A lone Latin letter or digit says nothing; a lone Chinese character may.
    out.retain(|t| !STOP.contains(&t.as_str()) && (t.chars().count() != 1 || is_cjk_str(t)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_chinese_and_latin_stops() {
        let text = "# 标题\n知库切分文档。每个块有 ID！\n- It works. Version 1.5 is out\n```\ncode.\n```\n| a | b |";
        assert_eq!(
            sentences(text),
            vec![
                "标题",
                "知库切分文档。",
                "每个块有 ID！",
                "It works.",
                "Version 1.5 is out"
            ]
        );
    }

    #[test]
    fn terms_are_bigrams_and_words() {
        let t = terms("知库的 BM25 索引是什么？");
        assert!(t.contains("知库"));
        assert!(t.contains("索引"));
        assert!(t.contains("bm25"));
        assert!(!t.contains("什么"));
        assert_eq!(
            terms("块的 ID 是怎么组成的？")
                .into_iter()
                .collect::<Vec<_>>(),
            vec!["id", "块", "组成"]
        );
        assert!(terms("What is the chunk ID?").contains("chunk"));
        assert!(!terms("What is the chunk ID?").contains("the"));
    }
}
