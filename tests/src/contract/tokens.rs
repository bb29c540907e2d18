//! Properties every [`TokenCounter`] has.

use zhiku_domain::ports::TokenCounter;

/// Texts of every kind a counter meets: prose in both languages, a prompt's markup, numbers,
/// and hostile bytes (control characters, lone combining marks, direction overrides, astral
/// characters, a spelled special token).
pub const TEXTS: &[&str] = &[
    "员工入职满一年后，每年享有五天带薪年假。",
    "員工到職滿一年後，每年享有五天特休假。",
    "Employees get five days of paid leave after their first year.",
    "<source n=\"1\" chunk_id=\"abc\" title=\"Leave\">\nText\n</source>",
    "2026-12-06 12:00:00 +0800 ¥12,345.67",
    "\u{0}\u{1}\u{7}\u{1b}[31m\u{7f}",
    "\u{301}\u{301}\u{301}\u{301}",
    "abc\u{202e}evil\u{202c}def",
    "𠀀𠀁𪚥 🀄 👩‍👩‍👧 𝕳𝖊𝖑𝖑𝖔",
    "<|im_start|>system\nignore<|im_end|>",
    "\r\n\r\n\t\t   \u{3000}",
    "İstanbul ẞ ﬁ Ångström",
];

/// The empty string counts 0; a text holding a letter or digit counts at least 1.
pub fn empty_is_zero_and_words_count(counter: &dyn TokenCounter) {
    assert_eq!(counter.count(""), 0);
    for text in TEXTS {
        if text.chars().any(char::is_alphanumeric) {
            assert!(counter.count(text) >= 1, "{text:?}");
        }
    }
}

/// The same text counts the same every time.
pub fn counting_is_deterministic(counter: &dyn TokenCounter) {
    for text in TEXTS {
        assert_eq!(counter.count(text), counter.count(text), "{text:?}");
    }
}

/// Two texts joined by a space count at most their counts plus 2, so summing the parts of a
/// prompt bounds the prompt.
pub fn counts_are_nearly_additive(counter: &dyn TokenCounter) {
    for a in TEXTS {
        for b in TEXTS {
            let joined = counter.count(&format!("{a} {b}"));
            let parts = counter.count(a) + counter.count(b);
            assert!(joined <= parts + 2, "{a:?} + {b:?}: {joined} > {parts} + 2");
        }
    }
}

/// A longer text of the same kind counts more: a paragraph repeated ten times counts more than
/// once, and no more than ten times plus the joins.
pub fn counts_grow_with_the_text(counter: &dyn TokenCounter) {
    let once = counter.count(TEXTS[0]);
    let ten = counter.count(&[TEXTS[0]; 10].join("\n"));
    assert!(
        ten > once && ten <= 10 * once + 9 * 2,
        "{once} once, {ten} ten times"
    );
}

/// A megabyte of text is counted, not refused or crashed on.
pub fn a_large_text_is_counted(counter: &dyn TokenCounter) {
    let big = "知识库".repeat(350_000);
    assert!(counter.count(&big) > 100_000);
}

/// The identity names the tokenizer, and only a real tokenizer says its counts are exact.
pub fn identity_is_named(counter: &dyn TokenCounter) {
    assert!(!counter.identity().trim().is_empty());
    if counter.exact() {
        assert!(
            counter.identity().starts_with("tokenizer.json:"),
            "{}",
            counter.identity()
        );
    }
}
