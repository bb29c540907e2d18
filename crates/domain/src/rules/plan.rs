//! The bounds every plan is held to, and the one planner the domain holds: [`AsAsked`].
//!
//! Reading a conversation (small talk, several parts, follow-ups) is language work and lives
//! in adapters: the offline rules planner, a chat model's. What stays here is what makes any
//! plan safe to retrieve with — at most [`MAX_PARTS`] parts, no retrieval query past the bound
//! ([`carried_history`], [`plan_fits`], [`plan_within`]) — and the trivial plan that takes a
//! question as asked, which the answerer uses when no planner is configured.

use crate::ports::{Intent, Plan, PlanError, Planner, Turn};

/// The most sub-questions one message is split into.
pub const MAX_PARTS: usize = 4;

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

fn as_asked(question: &str) -> Plan {
    Plan {
        intent: Intent::Knowledge,
        standalone: question.trim().to_string(),
        rewrite: None,
        parts: Vec::new(),
        reply: None,
    }
}

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

/// `planner`'s plan for `question` after `history` (the question as asked, should it fail) in
/// which no retrieval query (the standalone question, each part) is longer than `max_chars`
/// characters, or than the question itself when that is longer (the question as asked is its
/// caller's to bound).
///
/// The question is read after the [`carried_history`]; should a rewrite still run over (parts
/// rewritten one against the other), it is read alone, without the conversation, and as a last
/// resort each query is cut at `max_chars` characters (on a character boundary).
pub fn plan_within(
    planner: &dyn Planner,
    history: &[Turn],
    question: &str,
    max_chars: usize,
) -> Plan {
    let max_chars = max_chars.max(question.chars().count());
    let read = |history: &[Turn]| {
        planner
            .plan(history, question)
            .unwrap_or_else(|_| as_asked(question))
    };
    let p = read(carried_history(history, question, max_chars));
    if plan_fits(&p, max_chars) {
        return p;
    }
    let mut p = read(&[]);
    if !plan_fits(&p, max_chars) {
        let cut = |q: &str| q.chars().take(max_chars).collect::<String>();
        p.standalone = cut(&p.standalone);
        for part in &mut p.parts {
            *part = cut(part);
        }
    }
    p
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

    #[test]
    fn a_plan_within_the_bound_is_cut_as_a_last_resort() {
        struct Long;
        impl Planner for Long {
            fn identity(&self) -> String {
                "long".into()
            }
            fn plan(&self, _: &[Turn], question: &str) -> Result<Plan, PlanError> {
                Ok(Plan {
                    standalone: format!("{question}{}", "很长".repeat(50)),
                    ..as_asked(question)
                })
            }
            fn reformulate(&self, _: &str) -> Option<String> {
                None
            }
        }
        let p = plan_within(&Long, &[], "问题？", 10);
        assert!(plan_fits(&p, 10), "{p:?}");
        assert_eq!(p.standalone.chars().count(), 10);
    }
}
