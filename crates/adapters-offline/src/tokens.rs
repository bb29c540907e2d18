//! A token estimate for when the generator's tokenizer is not at hand.
//!
//! Budgets in tokens need a count before the prompt is sent. With the model's `tokenizer.json`
//! the count is exact (the candle crate's `TokenizerFile`); without it, this estimate counts
//! the way the byte-level BPE vocabularies of current chat models (Qwen2.5, Llama 3, GPT-4's)
//! split text, leaning high so that a budget held in estimated tokens is rarely over in real
//! ones:
//!
//! - each Han character, kana and Hangul syllable: 1 token (Qwen2.5 takes about 0.7 per
//!   character of Chinese prose, BERT-style vocabularies 1);
//! - a run of ASCII letters: 1 token per 4 letters, rounded up (English prose is about 4
//!   characters per token); a run of other letters (Cyrillic, Greek, accented Latin): 1 per 2;
//! - each digit: 1 token (Qwen2.5 splits numbers into digits);
//! - each other visible character: 1 token for ASCII and CJK punctuation, 2 for another
//!   character of the Basic Multilingual Plane (a rare symbol, a zero-width or direction mark),
//!   3 beyond it (emoji, mathematical letters) — rare characters are spelled in UTF-8 bytes;
//! - white space: free before a word (it joins the word's token), 1 token for a run holding a
//!   line break or more than one space.
//!
//! The figures behind these rules, against Qwen2.5's own tokenizer, are in
//! `docs/answers.md` (token budgets).

use zhiku_domain::ports::TokenCounter;

/// The estimate's identity, recorded beside every count it makes.
pub const TOKEN_ESTIMATE: &str = "estimate-v1";

/// Counts tokens by the rules of the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimatedTokens;

/// What a character is to the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Ideograph,
    AsciiLetter,
    OtherLetter,
    Digit,
    Space,
    Break,
    Symbol,
}

fn class(c: char) -> Class {
    match c {
        '\n' | '\r' => Class::Break,
        c if c.is_whitespace() => Class::Space,
        c if c.is_ascii_alphabetic() => Class::AsciiLetter,
        c if c.is_ascii_digit() => Class::Digit,
        c if is_ideograph(c) => Class::Ideograph,
        c if (c as u32) > 0xFFFF => Class::Symbol,
        c if c.is_alphabetic() => Class::OtherLetter,
        c if c.is_numeric() => Class::Digit,
        _ => Class::Symbol,
    }
}

/// Han, kana and Hangul: one token each.
fn is_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility
        | 0x20000..=0x3FFFF) // CJK extensions B onwards
}

/// An ASCII or CJK punctuation mark: 1 token; another character of the Basic Multilingual
/// Plane (a rare symbol, a zero-width or direction mark): 2; beyond it (emoji, mathematical
/// letters): 3 — byte-level vocabularies spell rare characters in their UTF-8 bytes.
fn symbol_tokens(c: char) -> usize {
    match c as u32 {
        0..=0x7F | 0x3000..=0x303F | 0xFF00..=0xFFEF => 1,
        0x80..=0xFFFF => 2,
        _ => 3,
    }
}

impl TokenCounter for EstimatedTokens {
    fn identity(&self) -> String {
        TOKEN_ESTIMATE.to_string()
    }

    fn exact(&self) -> bool {
        false
    }

    fn count(&self, text: &str) -> usize {
        let mut tokens = 0;
        let mut run: Option<(Class, usize)> = None;
        let close = |run: Option<(Class, usize)>| match run {
            Some((Class::AsciiLetter, n)) => n.div_ceil(4),
            Some((Class::OtherLetter, n)) => n.div_ceil(2),
            Some((Class::Space, n)) if n > 1 => 1,
            Some((Class::Break, _)) => 1,
            _ => 0,
        };
        for c in text.chars() {
            let k = class(c);
            match k {
                Class::Ideograph | Class::Digit => tokens += 1,
                Class::Symbol => tokens += symbol_tokens(c),
                _ => {}
            }
            let joined = match (run, k) {
                (Some((r, n)), k) if r == k => Some((r, n + 1)),
                // A line break within a run of space (or space after one) is one run.
                (Some((Class::Space | Class::Break, n)), Class::Space | Class::Break) => {
                    Some((Class::Break, n + 1))
                }
                _ => None,
            };
            run = match joined {
                Some(r) => Some(r),
                None => {
                    tokens += close(run);
                    matches!(
                        k,
                        Class::AsciiLetter | Class::OtherLetter | Class::Space | Class::Break
                    )
                    .then_some((k, 1))
                }
            };
        }
        tokens + close(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> usize {
        EstimatedTokens.count(text)
    }

    #[test]
    fn counts_by_script() {
        assert_eq!(n(""), 0);
        assert_eq!(n("   "), 1);
        assert_eq!(n("年假有多少天？"), 7);
        assert_eq!(n("the cat"), 2);
        assert_eq!(n("internationalization"), 5);
        assert_eq!(n("2026"), 4);
        assert_eq!(n("a\n\nb"), 3);
        assert_eq!(n("Привет"), 3);
        assert_eq!(n("👍"), 3);
        assert_eq!(n("「引号」"), 4);
        assert_eq!(n("a\u{200b}b"), 4);
        assert_eq!(n("VPN 远程接入"), 1 + 4);
    }

    #[test]
    fn is_total_and_nearly_additive_on_hostile_text() {
        let texts = [
            "\u{0}\u{1}\u{7f}",
            "\u{301}\u{301}\u{301}",
            "ẞİ\u{202e}abc",
            "𠀀𠀁𪚥",
            "\r\n\r\n\t \u{a0}",
            "１２３ＡＢＣ",
        ];
        for a in texts {
            for b in texts {
                let joined = format!("{a} {b}");
                assert!(n(&joined) <= n(a) + n(b) + 2, "{a:?} {b:?}");
            }
            assert_eq!(n(a), n(a));
        }
        assert_eq!(n(&"字".repeat(1_000_000)), 1_000_000);
    }
}
