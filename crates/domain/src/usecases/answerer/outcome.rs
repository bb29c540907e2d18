//! How a run ends: each part's outcome, and the answer, status and citations they combine
//! into. Pure.

use crate::contracts::ChunkId;
use crate::rules::context;
use crate::rules::support;

use super::frame::{AnswerStatus, SupportSummary};

/// How answering one (part of a) question ended.
pub(super) enum Outcome {
    Answered {
        text: String,
        cited: Vec<(u32, ChunkId)>,
        /// Sentences that state something (each supported by what it cites).
        claims: usize,
        attempts: u32,
    },
    NoMaterial {
        attempts: u32,
    },
    Blocked {
        attempts: u32,
    },
}

impl Outcome {
    pub(super) fn attempts(&self) -> u32 {
        match self {
            Self::Answered { attempts, .. }
            | Self::NoMaterial { attempts }
            | Self::Blocked { attempts } => *attempts,
        }
    }
}

fn blocked_sentence(times: u32) -> String {
    format!("No answer is shown: the generator's citations failed validation {times} times.")
}

/// The answer of a run from its parts' outcomes: one part's answer as it is; several parts
/// each under its sub-question, answered when any part is.
pub(super) fn combine(
    question: &str,
    parts: &[String],
    outcomes: Vec<Outcome>,
    max_attempts: u32,
) -> Combined {
    if let [only] = outcomes.as_slice() {
        let (answer, status, cited) = match only {
            Outcome::Answered { text, cited, .. } => {
                (text.clone(), AnswerStatus::Answered, cited.clone())
            }
            Outcome::NoMaterial { .. } => (
                context::no_material_for(question).to_string(),
                AnswerStatus::NotFound,
                Vec::new(),
            ),
            Outcome::Blocked { .. } => (
                blocked_sentence(max_attempts),
                AnswerStatus::Blocked,
                Vec::new(),
            ),
        };
        return Combined {
            answer,
            status,
            cited,
        };
    }
    let mut sections = Vec::with_capacity(parts.len());
    let mut cited: Vec<(u32, ChunkId)> = Vec::new();
    let (mut answered, mut blocked) = (false, false);
    for (part, outcome) in parts.iter().zip(outcomes) {
        let body = match outcome {
            Outcome::Answered { text, cited: c, .. } => {
                answered = true;
                for pair in c {
                    if !cited.contains(&pair) {
                        cited.push(pair);
                    }
                }
                text
            }
            Outcome::NoMaterial { .. } => context::no_material_for(part).to_string(),
            Outcome::Blocked { .. } => {
                blocked = true;
                blocked_sentence(max_attempts)
            }
        };
        sections.push(format!("{}\n{body}", part.trim()));
    }
    let status = if answered {
        AnswerStatus::Answered
    } else if blocked {
        AnswerStatus::Blocked
    } else {
        AnswerStatus::NotFound
    };
    if status != AnswerStatus::Answered {
        cited.clear();
    }
    Combined {
        answer: sections.join("\n\n"),
        status,
        cited,
    }
}

/// The answer of a run, how it ended, and the chunks its answer cites (none unless answered).
pub(super) struct Combined {
    pub(super) answer: String,
    pub(super) status: AnswerStatus,
    pub(super) cited: Vec<(u32, ChunkId)>,
}

/// Sentences that state something in the answered parts.
pub(super) fn claims(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .map(|o| match o {
            Outcome::Answered { claims, .. } => *claims,
            _ => 0,
        })
        .sum()
}

/// The support check of the answer shown: every claim supported, by `method` (the lexical
/// check when none was recorded); none unless the run answered.
pub(super) fn support_summary(
    status: AnswerStatus,
    claims: usize,
    method: Option<String>,
) -> Option<SupportSummary> {
    (status == AnswerStatus::Answered).then(|| SupportSummary {
        claims,
        method: method.unwrap_or_else(|| support::LEXICAL_CHECK.to_string()),
        supported: claims,
    })
}
