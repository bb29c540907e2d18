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
