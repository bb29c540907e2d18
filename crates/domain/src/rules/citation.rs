//! Citation rules: every answer is traceable to evidence retrieved in the same round.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::contracts::ChunkId;

/// Why an answer's citations were rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum CitationViolation {
    /// The answer cites nothing.
    #[error("answer_has_no_citation: the answer cites no evidence")]
    AnswerHasNoCitation,
    /// The answer cites chunks that were not retrieved in this round.
    #[error("citation_not_in_this_round: {}", ids.join(", "))]
    CitationNotInThisRound {
        /// The offending IDs (or markers), sorted.
        ids: Vec<String>,
    },
}

impl CitationViolation {
    /// `answer_has_no_citation` or `citation_not_in_this_round`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::AnswerHasNoCitation => "answer_has_no_citation",
            Self::CitationNotInThisRound { .. } => "citation_not_in_this_round",
        }
    }
}

/// Validates cited chunk IDs against the IDs retrieved in this round. The allowed set is this
/// round's evidence only, never the whole index.
pub fn validate(
    cited: &[ChunkId],
    this_round: &BTreeSet<ChunkId>,
) -> Result<(), CitationViolation> {
    if cited.is_empty() {
        return Err(CitationViolation::AnswerHasNoCitation);
    }
    let bad: BTreeSet<String> = cited
        .iter()
        .filter(|id| !this_round.contains(*id))
        .map(|id| id.to_string())
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(CitationViolation::CitationNotInThisRound {
            ids: bad.into_iter().collect(),
        })
    }
}

/// The `[n]` markers in `text`, in order of appearance (`[1]`, `[2][3]`, `[1, 2]`).
pub fn markers(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        let numbers: Option<Vec<u32>> = inside
            .split([',', '，'])
            .map(|p| p.trim().parse::<u32>().ok())
            .collect();
        if let Some(numbers) = numbers
            && !inside.trim().is_empty()
        {
            out.extend(numbers);
            rest = &rest[close + 1..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> ChunkId {
        ChunkId::derive(&crate::DocId::new(s).unwrap(), 0, &crate::sha256_hex(s))
    }

    #[test]
    fn no_citation_is_rejected() {
        let err = validate(&[], &BTreeSet::from([id("a")])).unwrap_err();
        assert_eq!(err.code(), "answer_has_no_citation");
    }

    #[test]
    fn citations_outside_this_round_are_rejected_and_listed() {
        let round = BTreeSet::from([id("a")]);
        assert!(validate(&[id("a")], &round).is_ok());
        let err = validate(&[id("a"), id("z"), id("y")], &round).unwrap_err();
        assert_eq!(err.code(), "citation_not_in_this_round");
        let CitationViolation::CitationNotInThisRound { ids } = err else {
            panic!("wrong variant")
        };
        assert_eq!(ids, vec![id("y").to_string(), id("z").to_string()]);
    }

    #[test]
    fn markers_are_parsed() {
        assert_eq!(
            markers("a [1] b [2][3] c [4, 5] [x] [] [6"),
            vec![1, 2, 3, 4, 5]
        );
        assert_eq!(markers("没有引用"), Vec::<u32>::new());
    }
}
