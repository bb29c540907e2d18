//! Pure text utilities, the one copy of each: what the domain's rules and the adapters both need
//! to read Chinese and English text the same way.
//!
//! - [`is_cjk`]: the CJK ideograph blocks and the kana/hangul syllabaries.
//! - [`to_simplified`]: Traditional Chinese folded into Simplified (OpenCC `t2s`), so that one
//!   analyzer, one overlap measure and one planner serve both scripts.
//! - [`sentences`]: the sentences of a piece of evidence (Chinese and Latin stops, Markdown
//!   lines as units, code fences skipped).
//! - [`terms`]: the terms two texts can share for overlap scoring (Latin words, CJK bigrams),
//!   minus the question words of its stop list.
//! - [`first_heading`]: the title a Markdown text gives itself when it declares none.
//!
//! No I/O, no allocation beyond the returned values, no state but the fold's lazily built
//! tables. Language analysis that needs a model or a dictionary segmenter (jieba) belongs to the
//! adapter that indexes with it, not here.

mod cjk;
mod fold;
mod terms;

pub use cjk::{is_cjk, is_cjk_str};
pub use fold::to_simplified;
pub use terms::{sentences, terms};

/// The first level-one Markdown heading of `body` (`# Title`), trimmed: the title a document
/// that declares none takes, wherever it is read or written.
pub fn first_heading(body: &str) -> Option<&str> {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod heading_tests {
    use super::first_heading;

    #[test]
    fn only_a_level_one_heading_names_a_text() {
        assert_eq!(
            first_heading("intro\n## 小节\n#  安装指南 \n"),
            Some("安装指南")
        );
        assert_eq!(first_heading("## only a section\n#not a heading"), None);
        assert_eq!(first_heading("# \n"), None);
    }
}
