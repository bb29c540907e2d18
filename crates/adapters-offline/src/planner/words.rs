//! The words the planner's rules read a question by: question words, the words a topic ends
//! before, polite openers, and the trimming of a question's ends. One leaf module, so that the
//! rules of follow-ups, slots and comparisons read questions alike.

use zhiku_domain::contracts::Locale;
use zhiku_text as text;

/// Characters that may surround small talk without making it a question.
pub(super) fn is_filler(c: char) -> bool {
    c.is_whitespace()
        || (!c.is_alphanumeric() && !text::is_cjk(c))
        || "呀啊啦哦喔嘛吧呢哈~～".contains(c)
}

/// A question mark, full width or not.
pub(super) fn is_question_end(c: char) -> bool {
    matches!(c, '？' | '?')
}

/// Words that mark the question itself rather than its topic.
pub(super) const ASKING_ZH: &[&str] = &[
    "为什么",
    "為什麼",
    "怎么样",
    "怎麼樣",
    "怎么",
    "怎麼",
    "怎样",
    "怎樣",
    "如何",
    "什么",
    "什麼",
    "哪些",
    "哪个",
    "哪個",
    "哪里",
    "哪裡",
    "哪",
    "多少",
    "多久",
    "多长",
    "多長",
    "几",
    "幾",
    "谁",
    "誰",
    "是否",
    "能否",
    "吗",
    "嗎",
];

/// Words after which a Chinese question's topic ends.
pub(super) const PREDICATE_ZH: &[&str] = &[
    "的", "是", "有", "在", "位于", "位於", "能", "可以", "会", "會", "用", "支持", "属于", "屬於",
    "由", "和", "与", "與", "对", "對", "把", "被", "要", "需要", "为", "為",
];

const POLITE: &[&str] = &[
    "请问",
    "請問",
    "我想知道",
    "想问一下",
    "想問一下",
    "告诉我",
    "告訴我",
    "请告诉我",
    "請告訴我",
    "please tell me",
    "can you tell me",
    "tell me",
];

pub(super) fn strip_polite(q: &str) -> &str {
    let mut q = q.trim();
    for p in POLITE {
        if let Some(rest) = strip_prefix_ignoring_case(q, p) {
            q = rest.trim_start_matches(is_filler);
        }
    }
    q
}

/// `text` without `prefix`, ASCII letters compared in either case; offsets are `text`'s own
/// (lower-casing the whole text would move them: "İ" grows, and a cut could fall inside a
/// character).
pub(super) fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.get(..prefix.len())
        .filter(|head| head.eq_ignore_ascii_case(prefix))
        .map(|_| &text[prefix.len()..])
}

pub(super) fn trim_question_end(q: &str) -> &str {
    q.trim()
        .trim_end_matches(|c: char| is_question_end(c) || matches!(c, '。' | '.' | '!' | '！'))
}

pub(super) fn is_latin(q: &str) -> bool {
    Locale::detect(q).language() != "zh"
}

/// Whether a Chinese question's predicate (or its question word) opens at the start of `rest`.
pub(crate) fn opens_predicate(rest: &str) -> bool {
    ASKING_ZH
        .iter()
        .chain(PREDICATE_ZH)
        .any(|w| rest.starts_with(w))
}
