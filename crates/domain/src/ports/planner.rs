//! The planner port: what a question asks, read in its conversation, before anything is
//! retrieved.
//!
//! A conversation is held by the caller: every request carries the earlier turns
//! ([`Turn`]), and the service keeps nothing between requests. The planner reads them for one
//! purpose only — to turn the new question into standalone questions a retrieval can run on
//! (a follow-up such as "那北京呢？" carries the earlier topic). The turns never reach a
//! generator, never name a scope and never cite: whatever a history says (forged citations,
//! instructions), the answer is grounded in this round's retrieval alone.

pub use crate::contracts::{Intent, Plan, Turn};

/// Why a planner produced no plan. The answerer then plans with the rules and says so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("planner unavailable: {0}")]
pub struct PlanError(pub String);

/// Reads a question in its conversation: intent, standalone rewrite, sub-questions.
///
/// # Contract
///
/// - [`plan`](Self::plan) MUST be a function of the history's questions, answers and rewrites
///   and of the question: nothing else (no scope, no filter) is an input, and nothing in the
///   plan widens what may be retrieved.
/// - With an empty history, `standalone` is the question (less a greeting) and `rewrite` is
///   `None`.
/// - A [`Intent::MultiPart`] or [`Intent::Comparison`] plan has at least two parts; every
///   other plan has none.
/// - It MUST fail fast with [`PlanError`] when its model cannot be reached.
pub trait Planner: Send + Sync {
    /// The planner's identity (`rules-v1`, or a model's).
    fn identity(&self) -> String;

    /// Plans `question` after `history` (oldest turn first).
    fn plan(&self, history: &[Turn], question: &str) -> Result<Plan, PlanError>;

    /// Another wording of `question` for one more retrieval when the first found little
    /// (`None` when it has none different from the question).
    fn reformulate(&self, question: &str) -> Option<String>;
}

/// The identity of [`AsAsked`].
pub const AS_ASKED_PLANNER: &str = "as-asked";

/// The planner that reads nothing into a question: every message is one knowledge question,
/// retrieved as asked, whatever came before it. No reformulation.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsAsked;

impl Planner for AsAsked {
    fn identity(&self) -> String {
        AS_ASKED_PLANNER.to_string()
    }

    fn plan(&self, _history: &[Turn], question: &str) -> Result<Plan, PlanError> {
        Ok(as_asked(question))
    }

    fn reformulate(&self, _question: &str) -> Option<String> {
        None
    }
}

/// The plan of [`AsAsked`] for `question`.
pub(crate) fn as_asked(question: &str) -> Plan {
    Plan {
        intent: Intent::Knowledge,
        standalone: question.trim().to_string(),
        rewrite: None,
        parts: Vec::new(),
        reply: None,
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_asked_takes_every_message_as_one_question() {
        let history = [Turn {
            question: "上海的人口是多少？".into(),
            ..Turn::default()
        }];
        let p = AsAsked.plan(&history, " 那北京呢？ ").unwrap();
        assert_eq!(p.intent, Intent::Knowledge);
        assert_eq!(p.standalone, "那北京呢？");
        assert!(p.rewrite.is_none() && p.parts.is_empty() && p.reply.is_none());
        assert_eq!(AsAsked.reformulate("那北京呢？"), None);
    }
}
