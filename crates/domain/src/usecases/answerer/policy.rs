//! How an answer run is shaped: routes, evidence, context and attempts.

use serde::Serialize;

use crate::rules::budget::{RetrievalBudget, TokenBudget};
use crate::rules::expand::ContextPolicy;

use super::super::retriever::RetrievalMode;

/// How an answer run is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AnswerPolicy {
    /// Routes to use.
    pub mode: RetrievalMode,
    /// Evidence retrieved before the budget.
    pub k: usize,
    /// What of the evidence reaches the context (whole chunks only).
    pub budget: RetrievalBudget,
    /// Whether the context is the evidence chunks alone, the section they concentrate in, or
    /// the chunks with their neighbours (always as whole chunks within `budget`; without a
    /// [`DocumentChunks`](crate::ports::DocumentChunks) port, the chunks alone).
    pub context: ContextPolicy,
    /// Generation attempts before the run ends `blocked` (at least 1).
    pub max_attempts: u32,
    /// Limits in tokens on the context, the history read and the answer, counted with the
    /// answerer's [`TokenCounter`](crate::ports::TokenCounter) (none without one).
    pub tokens: TokenBudget,
}

impl Default for AnswerPolicy {
    fn default() -> Self {
        Self {
            mode: RetrievalMode::Hybrid,
            k: 8,
            budget: RetrievalBudget::new(6, 4000).expect("valid default budget"),
            context: ContextPolicy::Chunks,
            max_attempts: 3,
            tokens: TokenBudget::default(),
        }
    }
}
