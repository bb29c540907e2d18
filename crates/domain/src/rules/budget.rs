//! The retrieval budget: how much evidence reaches the context.

use serde::{Deserialize, Serialize};

use crate::contracts::InvalidValue;

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

#[cfg(test)]
mod tests {
    use super::*;

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
