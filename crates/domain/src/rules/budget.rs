//! The budgets: how much evidence reaches the context (chunks and characters), and the limits
//! in tokens on the context, the conversation read before a question and the answer.

use serde::{Deserialize, Serialize};

use crate::contracts::{InvalidValue, Turn};

/// Limits on the evidence passed to generation. Whole chunks only: a piece of evidence is
/// never cut in the middle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetrievalBudget {
    max_chunks: usize,
    max_chars: usize,
}

impl RetrievalBudget {
    /// Both limits must be at least 1.
    pub fn new(max_chunks: usize, max_chars: usize) -> Result<Self, InvalidValue> {
        if max_chunks == 0 || max_chars == 0 {
            return Err(InvalidValue::new(
                "retrieval budget",
                &format!("{max_chunks}/{max_chars}"),
                "max_chunks and max_chars must be at least 1",
            ));
        }
        Ok(Self {
            max_chunks,
            max_chars,
        })
    }

    /// Most chunks kept.
    pub fn max_chunks(&self) -> usize {
        self.max_chunks
    }

    /// Most characters kept, summed over chunks.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// Keeps items in order while they fit. An item that would overflow `max_chars` is dropped
    /// whole and later, smaller items may still fit; once `max_chunks` are kept the rest are
    /// dropped. `truncated` is true when anything was dropped.
    pub fn apply<T>(&self, items: Vec<T>, chars: impl Fn(&T) -> usize) -> Budgeted<T> {
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        let mut used = 0;
        for item in items {
            let len = chars(&item);
            if kept.len() < self.max_chunks && used + len <= self.max_chars {
                used += len;
                kept.push(item);
            } else {
                dropped.push(item);
            }
        }
        Budgeted {
            truncated: !dropped.is_empty(),
            kept,
            dropped,
            chars_used: used,
        }
    }
}

impl Default for RetrievalBudget {
    /// 8 chunks and 4 000 characters.
    fn default() -> Self {
        Self {
            max_chunks: 8,
            max_chars: 4000,
        }
    }
}

/// The outcome of [`RetrievalBudget::apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct Budgeted<T> {
    /// Items that fit, in their original order.
    pub kept: Vec<T>,
    /// Items left out, whole.
    pub dropped: Vec<T>,
    /// True when anything was left out.
    pub truncated: bool,
    /// Characters of the kept items.
    pub chars_used: usize,
}

/// Limits in tokens, counted with the generator's tokenizer (a
/// [`TokenCounter`](crate::ports::TokenCounter)); a limit left unset does not apply (the
/// character budget still does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBudget {
    /// Most tokens of the source blocks in the prompt, each counted as rendered.
    pub context: Option<usize>,
    /// Most tokens of the earlier turns the planner reads (each turn's question, rewrite and
    /// answer).
    pub history: Option<usize>,
    /// Most tokens the answer may take (a caller asking for fewer gets fewer).
    pub answer: Option<u32>,
}

/// The tokens of one turn as a planner reads it, `count` counting a text's tokens: its
/// question, its standalone rewrite when there was one, and its answer.
pub fn turn_tokens(turn: &Turn, count: &dyn Fn(&str) -> usize) -> usize {
    let rewrite = match turn.rewritten.as_deref() {
        Some(r) if r != turn.question => count(r),
        _ => 0,
    };
    count(&turn.question) + rewrite + count(&turn.answer)
}

/// How many of the most recent turns of `history` fit in `max` tokens, and their tokens.
/// Turns are kept whole, newest first; the first turn that does not fit ends the history (an
/// older turn is never read past a newer one left out).
pub fn recent_turns_within(
    history: &[Turn],
    count: &dyn Fn(&str) -> usize,
    max: Option<usize>,
) -> (usize, usize) {
    let mut used = 0;
    let mut kept = 0;
    for turn in history.iter().rev() {
        let t = turn_tokens(turn, count);
        if max.is_some_and(|max| used + t > max) {
            break;
        }
        used += t;
        kept += 1;
    }
    (kept, used)
}

/// Keeps `items` in order while their tokens fit `max` (every item when `max` is unset): an
/// item that would overflow is left out whole and later, smaller ones may still fit. Returns
/// the kept items with their tokens summed, and the ones left out.
pub fn within_tokens<T>(
    items: Vec<T>,
    tokens: impl Fn(&T) -> usize,
    max: Option<usize>,
) -> (Vec<T>, usize, Vec<T>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut used = 0;
    for item in items {
        let t = tokens(&item);
        if max.is_none_or(|max| used + t <= max) {
            used += t;
            kept.push(item);
        } else {
            dropped.push(item);
        }
    }
    (kept, used, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character that is not white space.
    fn per_char(text: &str) -> usize {
        text.chars().filter(|c| !c.is_whitespace()).count()
    }

    fn turn(q: &str, a: &str) -> Turn {
        Turn {
            question: q.into(),
            answer: a.into(),
            rewritten: None,
        }
    }

    #[test]
    fn history_keeps_the_newest_whole_turns_that_fit() {
        let h = vec![turn("aaaa", "bbbb"), turn("cc", "dd"), turn("e", "f")];
        assert_eq!(recent_turns_within(&h, &per_char, Some(6)), (2, 6));
        assert_eq!(recent_turns_within(&h, &per_char, Some(5)), (1, 2));
        assert_eq!(recent_turns_within(&h, &per_char, None), (3, 14));
        // An older short turn is not read past a newer one left out.
        let h = vec![turn("a", ""), turn("bbbbbbbb", ""), turn("c", "")];
        assert_eq!(recent_turns_within(&h, &per_char, Some(3)), (1, 1));
        let mut rewritten = turn("它呢", "x");
        rewritten.rewritten = Some("北京呢".into());
        assert_eq!(turn_tokens(&rewritten, &per_char), 2 + 3 + 1);
    }

    #[test]
    fn tokens_keep_whole_items_in_order() {
        let (kept, used, dropped) =
            within_tokens(vec!["aaaa", "bbbbbbb", "cc", "d"], |s| s.len(), Some(7));
        assert_eq!(
            (kept, used, dropped),
            (vec!["aaaa", "cc", "d"], 7, vec!["bbbbbbb"])
        );
        let (kept, used, dropped) = within_tokens(vec!["aaaa"], |s| s.len(), None);
        assert_eq!((kept.len(), used, dropped.len()), (1, 4, 0));
    }

    #[test]
    fn keeps_whole_items_only() {
        let b = RetrievalBudget::new(3, 10).unwrap();
        let out = b.apply(vec!["aaaa", "bbbbbbb", "cc", "dd", "e"], |s| s.len());
        assert_eq!(out.kept, vec!["aaaa", "cc", "dd"]);
        assert_eq!(out.dropped, vec!["bbbbbbb", "e"]);
        assert!(out.truncated);
        assert_eq!(out.chars_used, 8);
    }

    #[test]
    fn nothing_dropped_means_not_truncated() {
        let b = RetrievalBudget::new(5, 100).unwrap();
        let out = b.apply(vec!["a", "b"], |s| s.len());
        assert!(!out.truncated);
        assert!(RetrievalBudget::new(0, 1).is_err());
        let out = b.apply(Vec::<&str>::new(), |s| s.len());
        assert!(out.kept.is_empty() && !out.truncated);
    }
}
