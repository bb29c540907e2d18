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

/// One citation written in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CitationRef {
    /// A `[n]` marker, naming the n-th source block of the prompt.
    Marker(u32),
    /// A chunk ID written out in brackets, `[doc:start:hash]`.
    Chunk(ChunkId),
}

/// Every citation in `text`, in order of appearance: `[1]`, `[2][3]`, `[1, 2]`, `[1，2]` and
/// bracketed chunk IDs. Brackets holding anything else are prose, not citations.
pub fn references(text: &str) -> Vec<CitationRef> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['[', '【']) {
        let open_len = rest[open..].chars().next().map_or(1, char::len_utf8);
        rest = &rest[open + open_len..];
        let Some(close) = rest.find([']', '】']) else {
            break;
        };
        let inside = rest[..close].trim();
        let parts: Vec<&str> = inside
            .split([',', '，', ';', '；'])
            .map(str::trim)
            .collect();
        let numbers: Option<Vec<u32>> = parts.iter().map(|p| p.parse::<u32>().ok()).collect();
        let chunks: Option<Vec<ChunkId>> = parts.iter().map(|p| ChunkId::parse(p).ok()).collect();
        let found = match (numbers, chunks) {
            _ if inside.is_empty() => false,
            (Some(numbers), _) => {
                out.extend(numbers.into_iter().map(CitationRef::Marker));
                true
            }
            (None, Some(chunks)) => {
                out.extend(chunks.into_iter().map(CitationRef::Chunk));
                true
            }
            (None, None) => false,
        };
        if found {
            let close_len = rest[close..].chars().next().map_or(1, char::len_utf8);
            rest = &rest[close + close_len..];
        }
    }
    out
}

/// The `[n]` markers in `text`, in order of appearance (`[1]`, `[2][3]`, `[1, 2]`).
pub fn markers(text: &str) -> Vec<u32> {
    references(text)
        .into_iter()
        .filter_map(|r| match r {
            CitationRef::Marker(n) => Some(n),
            CitationRef::Chunk(_) => None,
        })
        .collect()
}

/// Citations resolved against this round's numbered sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Distinct cited chunks with the marker that cited them, in order of first citation.
    pub cited: Vec<(u32, ChunkId)>,
    /// Markers and IDs that name nothing of this round, as written (`[7]`, `[doc:0:…]`).
    pub unknown: Vec<String>,
    /// Total citations written, valid or not.
    pub written: usize,
}

impl Resolved {
    /// Applies the citation rules: at least one citation, and every citation names a chunk
    /// retrieved in this round.
    pub fn check(&self) -> Result<(), CitationViolation> {
        if self.written == 0 {
            return Err(CitationViolation::AnswerHasNoCitation);
        }
        if self.unknown.is_empty() {
            Ok(())
        } else {
            let mut ids = self.unknown.clone();
            ids.sort();
            ids.dedup();
            Err(CitationViolation::CitationNotInThisRound { ids })
        }
    }
}

/// Maps the citations of `answer` onto `sources` (marker n is `sources[n - 1]`). A chunk ID
/// written out counts only when it is one of `sources`; anything else is unknown.
pub fn resolve(answer: &str, sources: &[ChunkId]) -> Resolved {
    let mut resolved = Resolved::default();
    for reference in references(answer) {
        resolved.written += 1;
        let hit = match &reference {
            CitationRef::Marker(n) => (*n as usize)
                .checked_sub(1)
                .and_then(|i| sources.get(i))
                .map(|id| (*n, id.clone())),
            CitationRef::Chunk(id) => sources
                .iter()
                .position(|s| s == id)
                .map(|i| (i as u32 + 1, id.clone())),
        };
        match hit {
            Some((marker, id)) => {
                if !resolved.cited.iter().any(|(_, c)| *c == id) {
                    resolved.cited.push((marker, id));
                }
            }
            None => resolved.unknown.push(match reference {
                CitationRef::Marker(n) => format!("[{n}]"),
                CitationRef::Chunk(id) => format!("[{id}]"),
            }),
        }
    }
    resolved
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
        assert_eq!(markers("中文【1】和[2；3]"), vec![1, 2, 3]);
    }

    #[test]
    fn citations_resolve_against_this_round_only() {
        let round = [id("a"), id("b")];
        let r = resolve("A [1]. B [2][1].", &round);
        assert_eq!(r.cited, vec![(1, id("a")), (2, id("b"))]);
        assert!(r.check().is_ok());

        let text = format!("A [3]. B [0]. C [{}]. D [{}].", id("z"), id("b"));
        let r = resolve(&text, &round);
        assert_eq!(r.cited, vec![(2, id("b"))]);
        assert_eq!(r.written, 4);
        let CitationViolation::CitationNotInThisRound { ids } = r.check().unwrap_err() else {
            panic!("wrong variant")
        };
        assert_eq!(
            ids,
            vec!["[0]".to_string(), "[3]".into(), format!("[{}]", id("z"))]
        );

        let r = resolve("uncited [see above]", &round);
        assert_eq!(r.check().unwrap_err().code(), "answer_has_no_citation");
    }
}
