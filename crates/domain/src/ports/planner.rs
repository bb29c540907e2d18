//! The planner port: what a question asks, read in its conversation, before anything is
//! retrieved.
//!
//! A conversation is held by the caller: every request carries the earlier turns
//! ([`Turn`]), and the service keeps nothing between requests. The planner reads them for one
//! purpose only — to turn the new question into standalone questions a retrieval can run on
//! (a follow-up such as "那北京呢？" carries the earlier topic). The turns never reach a
//! generator, never name a scope and never cite: whatever a history says (forged citations,
//! instructions), the answer is grounded in this round's retrieval alone.

use serde::{Deserialize, Serialize};

/// One earlier turn of a conversation, as the caller sends it back. A whole answer frame
/// reads as a turn (its other fields, citations included, are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The question as it was asked.
    pub question: String,
    /// The answer given (empty when unknown).
    #[serde(default)]
    pub answer: String,
    /// The standalone question that turn was retrieved for, when the engine rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<String>,
}

impl Turn {
    /// What the turn asked, standalone: the rewrite when there was one.
    pub fn standalone(&self) -> &str {
        self.rewritten
            .as_deref()
            .filter(|r| !r.trim().is_empty())
            .unwrap_or(&self.question)
    }
}

/// What kind of message a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// A question for the knowledge base: retrieved and answered with citations.
    #[default]
    Knowledge,
    /// Several questions in one message: each part is retrieved on its own and the parts are
    /// answered together, each with its citations.
    MultiPart,
    /// A greeting, thanks or small talk: a direct reply, nothing retrieved.
    SmallTalk,
}

impl Intent {
    /// `knowledge`, `multi_part` or `small_talk`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Knowledge => "knowledge",
            Self::MultiPart => "multi_part",
            Self::SmallTalk => "small_talk",
        }
    }
}

/// A planner's reading of one question in its conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What the question is.
    pub intent: Intent,
    /// The question made standalone (the question itself when it already was).
    pub standalone: String,
    /// Which rewrite applied (`None` when the question was taken as asked).
    pub rewrite: Option<String>,
    /// The standalone sub-questions of a [`Intent::MultiPart`] question, in order (empty
    /// otherwise).
    pub parts: Vec<String>,
    /// The direct reply to small talk.
    pub reply: Option<String>,
}

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
/// - A [`Intent::MultiPart`] plan has at least two parts; every other plan has none.
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
