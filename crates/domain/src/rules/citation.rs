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

/// One citation as written: the byte ranges of its two brackets and what it names.
struct Written {
    open: std::ops::Range<usize>,
    close: std::ops::Range<usize>,
    refs: Vec<CitationRef>,
}

/// Scans `text` for citations: `[1]`, `[2][3]`, `[1, 2]`, `[1，2]`, `[1、2]`, `【1】` and
/// bracketed chunk IDs. Brackets holding anything else are prose, not citations.
fn scan(text: &str) -> Vec<Written> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(['[', '【']) {
        let open = at + found;
        let open_end = open + text[open..].chars().next().map_or(1, char::len_utf8);
        at = open_end;
        let Some(found) = text[at..].find([']', '】']) else {
            break;
        };
        let close = at + found;
        let inside = text[at..close].trim();
        let parts: Vec<&str> = inside
            .split([',', '，', ';', '；', '、'])
            .map(str::trim)
            .collect();
        let numbers: Option<Vec<u32>> = parts.iter().map(|p| p.parse::<u32>().ok()).collect();
        let chunks: Option<Vec<ChunkId>> = parts.iter().map(|p| ChunkId::parse(p).ok()).collect();
        let refs: Vec<CitationRef> = match (numbers, chunks) {
            _ if inside.is_empty() => continue,
            (Some(numbers), _) => numbers.into_iter().map(CitationRef::Marker).collect(),
            (None, Some(chunks)) => chunks.into_iter().map(CitationRef::Chunk).collect(),
            (None, None) => continue,
        };
        let close_end = close + text[close..].chars().next().map_or(1, char::len_utf8);
        out.push(Written {
            open: open..open_end,
            close: close..close_end,
            refs,
        });
        at = close_end;
    }
    out
}

/// Every citation in `text`, in order of appearance: `[1]`, `[2][3]`, `[1, 2]`, `[1，2]` and
/// bracketed chunk IDs. Brackets holding anything else are prose, not citations.
pub fn references(text: &str) -> Vec<CitationRef> {
    scan(text).into_iter().flat_map(|w| w.refs).collect()
}

/// What a citation's brackets become in evidence text: 〔 〕 read as brackets, but no citation
/// parser of this crate takes them for one.
pub const NEUTRAL_BRACKETS: (char, char) = ('〔', '〕');

/// Makes citation-shaped text in evidence inert: every bracket pair that [`references`] would
/// read as a citation (`[12]`, `【2】`, `[1, 3]`, `[doc:0:…]`) gets [`NEUTRAL_BRACKETS`]
/// instead, the rest of the text unchanged. Evidence goes through this before any generator
/// sees it, so a document cannot make an answer cite (or seem to cite) a source by containing
/// a marker: only markers the generator writes itself are citations.
///
/// `references(&neutralise(t))` is empty for every `t`.
pub fn neutralise(text: &str) -> std::borrow::Cow<'_, str> {
    let mut text = std::borrow::Cow::Borrowed(text);
    // Replacing brackets never creates a new pair, but a pair the scan skipped because an
    // earlier bracket swallowed it can surface; a few rounds reach the fixed point.
    loop {
        let written = scan(&text);
        if written.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len() + 4 * written.len());
        let mut at = 0;
        for w in &written {
            out.push_str(&text[at..w.open.start]);
            out.push(NEUTRAL_BRACKETS.0);
            out.push_str(&text[w.open.end..w.close.start]);
            out.push(NEUTRAL_BRACKETS.1);
            at = w.close.end;
        }
        out.push_str(&text[at..]);
        text = std::borrow::Cow::Owned(out);
    }
}

/// `text` without its citations (the brackets and what they hold), trimmed; everything else,
/// bracketed prose included, unchanged.
pub fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for w in scan(text) {
        out.push_str(&text[at..w.open.start]);
        at = w.close.end;
    }
    out.push_str(&text[at..]);
    out.trim().to_string()
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
    use proptest::prelude::Strategy;

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
        assert_eq!(markers("见[1、2]"), vec![1, 2]);
    }

    #[test]
    fn stripping_takes_off_exactly_what_the_parser_reads_as_citations() {
        let chunk = id("a");
        let text = format!(" A [1]. B [2][3]、C【4】[1, 2] [{chunk}] a[i] [注] [x1] ");
        assert_eq!(strip(&text), "A . B 、C  a[i] [注] [x1]");
        assert!(references(&strip(&text)).is_empty());
        assert_eq!(strip("没有引用"), "没有引用");
    }

    #[test]
    fn citation_shaped_evidence_is_neutralised() {
        let chunk = id("a");
        let text = format!("见第[12]条、【2】款、[1, 3]和[{chunk}]；数组 a[i] 与 [注] 不变。");
        let out = neutralise(&text);
        assert_eq!(
            out,
            format!("见第〔12〕条、〔2〕款、〔1, 3〕和〔{chunk}〕；数组 a[i] 与 [注] 不变。")
        );
        assert!(references(&out).is_empty());
        // Text without citations is borrowed, not copied.
        assert!(matches!(
            neutralise("plain [text]"),
            std::borrow::Cow::Borrowed(_)
        ));
        // Nested and unbalanced brackets.
        assert!(references(&neutralise("[1 [2] ] [[3]] 【4] [5】 [[ ]]")).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn neutralised_text_holds_no_citation(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[0-9 ,，;；]{0,4}").unwrap(),
                    proptest::sample::select(vec![
                        "[", "]", "【", "】", "〔", "〕", "[1]", "【2】", "doc:0:0123456789abcdef",
                        "a", "文", " ", ",",
                    ]).prop_map(str::to_string),
                ],
                0..24,
            )
        ) {
            let text: String = parts.concat();
            let out = neutralise(&text);
            proptest::prop_assert!(references(&out).is_empty(), "{text:?} -> {out:?}");
            // Only brackets change.
            let strip = |s: &str| s.chars()
                .filter(|c| !matches!(c, '[' | ']' | '【' | '】' | '〔' | '〕'))
                .collect::<String>();
            proptest::prop_assert_eq!(strip(&text), strip(&out));
        }
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
