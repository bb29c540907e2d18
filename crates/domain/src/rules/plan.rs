//! The bounds every plan is held to: at most [`MAX_PARTS`] parts, no retrieval query past the
//! bound ([`carried_history`], [`plan_fits`]).
//!
//! Reading a conversation (small talk, several parts, follow-ups) is language work and lives
//! in adapters: the offline rules planner, a chat model's. The domain holds only the trivial
//! planner that takes a question as asked ([`AsAsked`](crate::ports::AsAsked), beside its port)
//! and the use of a planner within the bound
//! ([`plan_within`](crate::usecases::plan_within)).

use crate::contracts::{Plan, Turn};

/// The most sub-questions one message is split into.
pub const MAX_PARTS: usize = 4;

/// Characters a rewrite may add beyond the question and the earlier question it reads (a
/// joining space or `：`, an `'s`), with room to spare.
const REWRITE_SLACK: usize = 16;

/// The turns of `history` read before `question` when no retrieval query may be longer than
/// `max_chars` characters: those after the last turn whose standalone question
/// ([`Turn::standalone`]) is too long to carry — longer than `max_chars` less the question and
/// a few characters of joining text.
///
/// An over-long turn is ignored, not cut (a cut question would retrieve for words nobody
/// asked), and every turn before it with it: the question is read as if the conversation began
/// after that turn, never against an older topic it skipped over.
pub fn carried_history<'h>(history: &'h [Turn], question: &str, max_chars: usize) -> &'h [Turn] {
    let room = max_chars.saturating_sub(question.chars().count() + REWRITE_SLACK);
    let from = history
        .iter()
        .rposition(|t| t.standalone().chars().nth(room).is_some())
        .map_or(0, |i| i + 1);
    &history[from..]
}

/// Whether every retrieval query of `p` (its standalone question and each part) is at most
/// `max_chars` characters.
pub fn plan_fits(p: &Plan, max_chars: usize) -> bool {
    std::iter::once(&p.standalone)
        .chain(&p.parts)
        .all(|q| q.chars().nth(max_chars).is_none())
}
