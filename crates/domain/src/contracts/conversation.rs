//! A conversation as the caller holds it, and a planner's reading of its next question: the
//! data the planner port exchanges, defined here so that the rules bounding a plan need no port.

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
    /// A comparison of two or more sides ("A 和 B 有什么区别", "和广州比哪个高"): each side is
    /// a part, retrieved on its own, and the answer states and cites every side.
    Comparison,
    /// A greeting, thanks or small talk: a direct reply, nothing retrieved.
    SmallTalk,
}

impl Intent {
    /// Whether the plan retrieves and answers its parts in turn (several parts, a comparison).
    pub fn has_parts(self) -> bool {
        matches!(self, Self::MultiPart | Self::Comparison)
    }

    /// `knowledge`, `multi_part`, `comparison` or `small_talk`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Knowledge => "knowledge",
            Self::MultiPart => "multi_part",
            Self::Comparison => "comparison",
            Self::SmallTalk => "small_talk",
        }
    }
}

/// A planner's reading of one question in its conversation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// What the question is.
    pub intent: Intent,
    /// The question made standalone (the question itself when it already was).
    pub standalone: String,
    /// Which rewrite applied (`None` when the question was taken as asked).
    pub rewrite: Option<String>,
    /// The standalone sub-questions of a [`Intent::MultiPart`] question, or the sides of a
    /// [`Intent::Comparison`], in order (empty otherwise).
    pub parts: Vec<String>,
    /// The direct reply to small talk.
    pub reply: Option<String>,
    /// Why the planner read the question so, in its words (a model's; the rules leave it
    /// empty: their rule is `rewrite`).
    pub reason: Option<String>,
    /// How sure the planner is of its reading, from 0 to 1 (a model's own estimate; `None`
    /// for the rules).
    pub confidence: Option<f32>,
}
