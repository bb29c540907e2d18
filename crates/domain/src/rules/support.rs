//! Claims bound to what supports them. A citation that names this round's evidence is valid;
//! it is *right* only when the cited block says what the citing sentence says. These rules
//! split an answer into claims (its sentences, each with the markers written after it), check
//! every (claim, cited block) pair, and name the claims that state something without citing
//! anything.
//!
//! The offline check is lexical: the share of a claim's terms (CJK bigrams, Latin words, see
//! [`text::terms`]) found in the cited blocks, plus one hard rule — every number the claim
//! states must be written in a cited block. It catches the failures that matter most (a fact
//! cited to the wrong block, a number that no block gives, an uncited sentence); a paraphrase
//! far from the source's words can fail it, and the feedback then asks for the source's own
//! wording. An LLM judge may replace it where one is configured.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::citation;
use super::context;
use zhiku_text as text;

/// Share of a claim's terms its cited blocks must contain (chosen; `evals/README.md` says what
/// it has and has not been measured against).
pub const SUPPORT_FLOOR: f64 = 0.4;

/// The identity of the offline check, as a trace names it.
pub const LEXICAL_CHECK: &str = "lexical-v1";

/// One claim of an answer: a sentence and the markers written in it or right after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The sentence as written, markers included.
    pub text: String,
    /// Its markers, in order, without repeats.
    pub markers: Vec<u32>,
}

/// What the check found for one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimVerdict {
    /// The cited blocks say it.
    Supported,
    /// It cites blocks that do not say it (too few of its terms, or a number none of them
    /// gives, or a cited block that shares nothing with it).
    NotSupported,
    /// It states something and cites nothing.
    Uncited,
    /// Not a claim: a connective, a lead-in, a question, the no-material sentence, or a
    /// sentence that only restates the question.
    NotAClaim,
}

impl ClaimVerdict {
    /// True when the claim passes.
    pub fn passes(self) -> bool {
        matches!(self, Self::Supported | Self::NotAClaim)
    }
}

/// The check of one claim against the blocks it cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimCheck {
    /// The block that supports the claim best among all of this round's (a hint for a retry
    /// when it is not one the claim cites).
    pub best: Option<u32>,
    /// The markers the claim cites.
    pub cited: Vec<u32>,
    /// Numbers the claim states that no cited block gives.
    pub missing_numbers: Vec<String>,
    /// The sentence, markers removed.
    pub sentence: String,
    /// Share of the claim's terms found in the cited blocks together (0 when uncited).
    pub support: f64,
    /// Cited markers that share no term with the claim.
    pub unrelated: Vec<u32>,
    /// The outcome.
    pub verdict: ClaimVerdict,
    /// The judge's verdict, when a judge read the claim (see
    /// [`apply_judge`](crate::usecases::apply_judge)): it decides
    /// over the term share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<bool>,
}

/// The claims of `answer`, in order. A piece holding only markers (`。[1]` written after the
/// full stop) belongs to the sentence before it.
///
/// A sentence is a claim of its own only when it ends like one: pieces that end in a clause
/// separator (`；`, `，`, `：`) or in no punctuation at all (list items, a lead-in) belong to
/// the cited piece they lead up to, and are checked with it — so a list quoted whole with its
/// marker after the last item is one claim.
pub fn claims(answer: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut pending: Vec<Claim> = Vec::new();
    for claim in sentence_claims(answer) {
        let bare = strip_markers(&claim.text);
        let open = !bare
            .trim_end_matches(['”', '」', '"', '）', ')'])
            .ends_with(['。', '！', '？', '.', '!', '?']);
        if claim.markers.is_empty() && open {
            pending.push(claim);
        } else if claim.markers.is_empty() {
            out.append(&mut pending);
            out.push(claim);
        } else {
            let mut text: String = pending.drain(..).map(|c| c.text + "\n").collect();
            text.push_str(&claim.text);
            out.push(Claim {
                text,
                markers: claim.markers,
            });
        }
    }
    out.append(&mut pending);
    out
}

/// The sentences of `answer` as claims, each with the markers written in or right after it.
fn sentence_claims(answer: &str) -> Vec<Claim> {
    let mut out: Vec<Claim> = Vec::new();
    for sentence in text::sentences(answer) {
        // Markers opening a sentence were written after the previous one's full stop.
        let (lead, sentence) = split_leading_markers(&sentence);
        if !lead.is_empty()
            && let Some(last) = out.last_mut()
        {
            last.text.push_str(lead);
            for m in citation::markers(lead) {
                if !last.markers.contains(&m) {
                    last.markers.push(m);
                }
            }
        }
        let sentence = if out.is_empty() {
            format!("{lead}{sentence}")
        } else {
            sentence.to_string()
        };
        if sentence.trim().is_empty() {
            continue;
        }
        let markers = citation::markers(&sentence);
        let bare = strip_markers(&sentence);
        if !bare.chars().any(char::is_alphanumeric)
            && let Some(last) = out.last_mut()
        {
            last.text.push_str(&sentence);
            for m in markers {
                if !last.markers.contains(&m) {
                    last.markers.push(m);
                }
            }
            continue;
        }
        let mut unique = Vec::new();
        for m in markers {
            if !unique.contains(&m) {
                unique.push(m);
            }
        }
        out.push(Claim {
            text: sentence,
            markers: unique,
        });
    }
    out
}

/// The marker groups (`[1]`, `【2】`, `[1, 2]`) that open `sentence`, and the rest.
fn split_leading_markers(sentence: &str) -> (&str, &str) {
    let mut at = 0;
    loop {
        let rest = &sentence[at..];
        let trimmed = rest.trim_start();
        let skipped = rest.len() - trimmed.len();
        let close = match trimmed.chars().next() {
            Some('[') => ']',
            Some('【') => '】',
            _ => break,
        };
        let Some(end) = trimmed.find(close) else {
            break;
        };
        let group = &trimmed[..end + close.len_utf8()];
        if citation::markers(group).is_empty() {
            break;
        }
        at += skipped + group.len();
    }
    (&sentence[..at], &sentence[at..])
}

/// `text` without its citation markers and their brackets ([`citation::strip`]: what the
/// citation parser reads as a citation, and nothing else).
pub fn strip_markers(text: &str) -> String {
    citation::strip(text)
}

/// Terms for support matching: [`text::terms`], with a plural `s` of a longer Latin word
/// dropped so "chunks" matches "chunk".
fn support_terms(text: &str) -> BTreeSet<String> {
    text::terms(text)
        .into_iter()
        .map(|t| {
            if t.len() > 3 && t.is_ascii() && t.ends_with('s') && !t.ends_with("ss") {
                t[..t.len() - 1].to_string()
            } else {
                t
            }
        })
        .collect()
}

/// The numbers written in `text` (ASCII and full-width digits, decimals kept whole), as ASCII.
pub fn numbers(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut current = String::new();
    let chars: Vec<char> = text
        .chars()
        .map(|c| match c {
            '０'..='９' => char::from_u32(c as u32 - '０' as u32 + '0' as u32).unwrap_or(c),
            '．' => '.',
            _ => c,
        })
        .collect();
    for (i, &c) in chars.iter().enumerate() {
        let decimal_point =
            c == '.' && !current.is_empty() && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || decimal_point {
            current.push(c);
        } else if c == ','
            && !current.is_empty()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit)
        {
            // A thousands separator: 1,000 is 1000.
        } else if !current.is_empty() {
            out.insert(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.insert(current);
    }
    out
}

/// Share of `claim`'s terms found in `evidence` (1.0 for a claim without terms).
pub fn support(claim: &str, evidence: &str) -> f64 {
    overlap(&support_terms(claim), &support_terms(evidence))
}

fn overlap(claim: &BTreeSet<String>, evidence: &BTreeSet<String>) -> f64 {
    if claim.is_empty() {
        return 1.0;
    }
    claim.intersection(evidence).count() as f64 / claim.len() as f64
}

/// Openings of sentences that join or introduce rather than state.
const CONNECTIVES: &[&str] = &[
    "综上",
    "总之",
    "总的来说",
    "简而言之",
    "简单来说",
    "概括来说",
    "以下",
    "如下",
    "具体如下",
    "根据资料",
    "根据上述",
    "根據資料",
    "綜上",
    "總之",
    "in summary",
    "in short",
    "to sum up",
    "overall",
    "the following",
    "here is",
    "here are",
    "according to the sources",
];

/// True when `sentence` (markers removed) states nothing that needs a source: a question, a
/// lead-in ending in a colon, a short connective, the no-material sentence, or a sentence whose
/// terms all come from the question.
pub fn is_not_a_claim(sentence: &str, question: &str) -> bool {
    let s = sentence.trim();
    if s.is_empty() || context::is_no_material(s) {
        return true;
    }
    if s.ends_with('？') || s.ends_with('?') || s.ends_with('：') || s.ends_with(':') {
        return true;
    }
    let terms = support_terms(s);
    if terms.len() <= 1 {
        return true;
    }
    let lower = s.to_lowercase();
    if terms.len() <= 4 && CONNECTIVES.iter().any(|c| lower.starts_with(c)) {
        return true;
    }
    numbers(s).is_empty() && terms.is_subset(&support_terms(question))
}

/// Checks every claim of `answer` against `blocks` (each source's marker and text): cited
/// claims against the blocks they cite, uncited ones for whether they state anything.
pub fn check(answer: &str, question: &str, blocks: &[(u32, &str)]) -> Vec<ClaimCheck> {
    let block_terms: Vec<(u32, BTreeSet<String>, BTreeSet<String>)> = blocks
        .iter()
        .map(|(m, t)| (*m, support_terms(t), numbers(t)))
        .collect();
    claims(answer)
        .into_iter()
        .map(|claim| {
            let sentence = strip_markers(&claim.text);
            let terms = support_terms(&sentence);
            let best = block_terms
                .iter()
                .map(|(m, t, _)| (*m, overlap(&terms, t)))
                .filter(|(_, s)| *s > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(m, _)| m);
            let cited: Vec<&(u32, BTreeSet<String>, BTreeSet<String>)> = block_terms
                .iter()
                .filter(|(m, _, _)| claim.markers.contains(m))
                .collect();
            if claim.markers.is_empty() || cited.is_empty() {
                let verdict = if is_not_a_claim(&sentence, question) {
                    ClaimVerdict::NotAClaim
                } else {
                    ClaimVerdict::Uncited
                };
                return ClaimCheck {
                    best,
                    cited: claim.markers,
                    missing_numbers: Vec::new(),
                    sentence,
                    support: 0.0,
                    unrelated: Vec::new(),
                    verdict,
                    judged: None,
                };
            }
            let together: BTreeSet<String> = cited
                .iter()
                .flat_map(|(_, t, _)| t.iter().cloned())
                .collect();
            let given: BTreeSet<&String> = cited.iter().flat_map(|(_, _, n)| n.iter()).collect();
            let missing_numbers: Vec<String> = numbers(&sentence)
                .into_iter()
                .filter(|n| !given.contains(n))
                .collect();
            let unrelated: Vec<u32> = if terms.is_empty() {
                Vec::new()
            } else {
                cited
                    .iter()
                    .filter(|(_, t, _)| t.is_disjoint(&terms))
                    .map(|(m, _, _)| *m)
                    .collect()
            };
            let support = overlap(&terms, &together);
            let verdict = if terms.is_empty() && missing_numbers.is_empty() {
                // Markers with nothing to support ("[1] [2]"): no claim at all.
                ClaimVerdict::NotAClaim
            } else if support >= SUPPORT_FLOOR && missing_numbers.is_empty() && unrelated.is_empty()
            {
                ClaimVerdict::Supported
            } else if is_not_a_claim(&sentence, question) && missing_numbers.is_empty() {
                ClaimVerdict::NotAClaim
            } else {
                ClaimVerdict::NotSupported
            };
            ClaimCheck {
                best,
                cited: claim.markers,
                missing_numbers,
                sentence,
                support,
                unrelated,
                verdict,
                judged: None,
            }
        })
        .collect()
}

/// The feedback for a retry after `checks` failed: each failing claim, why, and where the
/// material says it when another block does.
pub fn feedback(checks: &[ClaimCheck]) -> String {
    let mut lines = Vec::new();
    for c in checks.iter().filter(|c| !c.verdict.passes()) {
        let excerpt: String = c.sentence.chars().take(60).collect();
        let hint = match c.best {
            Some(b) if !c.cited.contains(&b) => format!(" Source [{b}] may say it."),
            _ => String::new(),
        };
        let line = match c.verdict {
            ClaimVerdict::Uncited => format!(
                "The sentence \"{excerpt}\" cites no source: cite the source that states it, or \
                 remove it.{hint}"
            ),
            _ => {
                let cited: Vec<String> = c.cited.iter().map(|m| format!("[{m}]")).collect();
                let why = if c.missing_numbers.is_empty() {
                    "does not say it".to_string()
                } else {
                    format!("does not give {}", c.missing_numbers.join(", "))
                };
                format!(
                    "The sentence \"{excerpt}\" cites {} but that source {why}: use the wording \
                     of the source that states it and cite that source, or remove the \
                     sentence.{hint}",
                    cited.join("")
                )
            }
        };
        lines.push(line);
    }
    lines.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHANGHAI: &str = "上海是中国的直辖市，2020 年常住人口约 2487 万。";
    const BEIJING: &str = "北京是中国的首都，2020 年常住人口约 2189 万。";

    #[test]
    fn markers_after_the_full_stop_belong_to_the_sentence() {
        let c = claims("上海人口约 2487 万。[1] 北京人口约 2189 万[2]。");
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].markers, vec![1]);
        assert_eq!(c[1].markers, vec![2]);
        assert_eq!(
            strip_markers("北京人口约 2189 万[2][3]。"),
            "北京人口约 2189 万。"
        );
        assert_eq!(strip_markers("see [1, 2] here"), "see  here");
    }

    #[test]
    fn a_fact_cited_to_the_wrong_block_is_not_supported() {
        let blocks = [(1, SHANGHAI), (2, BEIJING)];
        let right = check("北京的常住人口约 2189 万[2]。", "北京有多少人？", &blocks);
        assert_eq!(right[0].verdict, ClaimVerdict::Supported, "{right:?}");
        let wrong = check("北京的常住人口约 2189 万[1]。", "北京有多少人？", &blocks);
        assert_eq!(wrong[0].verdict, ClaimVerdict::NotSupported, "{wrong:?}");
        assert_eq!(wrong[0].missing_numbers, vec!["2189"]);
        assert_eq!(wrong[0].best, Some(2));
        let f = feedback(&wrong);
        assert!(
            f.contains("[1]") && f.contains("2189") && f.contains("[2] may say it"),
            "{f}"
        );
    }

    #[test]
    fn an_uncited_fact_beside_a_cited_one_fails_and_connectives_pass() {
        let blocks = [(1, SHANGHAI), (2, BEIJING)];
        let checks = check(
            "具体如下：\n上海常住人口约 2487 万[1]。北京是中国的首都。",
            "上海和北京",
            &blocks,
        );
        let verdicts: Vec<ClaimVerdict> = checks.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            // The lead-in belongs to the claim it introduces.
            vec![ClaimVerdict::Supported, ClaimVerdict::Uncited],
            "{checks:?}"
        );
        assert!(feedback(&checks).contains("cites no source"));
    }

    #[test]
    fn a_list_quoted_whole_with_one_marker_is_one_claim() {
        let block = "知库的环节：文档被切分成片段；嵌入模型把片段转换成向量；生成答案。";
        let checks = check(
            "文档被切分成片段；\n嵌入模型把片段转换成向量；\n生成答案。[1]",
            "知库有哪些环节？",
            &[(1, block)],
        );
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].verdict, ClaimVerdict::Supported);
        // A full sentence before a cited one is still a claim of its own.
        let checks = check("文档被切分成片段。生成答案[1]。", "环节", &[(1, block)]);
        assert_eq!(checks[0].verdict, ClaimVerdict::Uncited);
    }

    #[test]
    fn an_unrelated_second_citation_fails_the_claim() {
        let blocks = [(1, SHANGHAI), (2, "知库把文档切成块。")];
        let checks = check("上海常住人口约 2487 万[1][2]。", "上海", &blocks);
        assert_eq!(checks[0].verdict, ClaimVerdict::NotSupported);
        assert_eq!(checks[0].unrelated, vec![2]);
    }

    #[test]
    fn english_claims_match_across_plurals() {
        let blocks = [(
            1,
            "Each chunk ID is derived from the document ID and a content hash.",
        )];
        let checks = check(
            "Chunk IDs are derived from the document ID and a content hash [1].",
            "How are chunk IDs made?",
            &blocks,
        );
        assert_eq!(checks[0].verdict, ClaimVerdict::Supported, "{checks:?}");
    }

    #[test]
    fn numbers_are_read_whole() {
        let n: Vec<String> = numbers("约 2,487 万，增长 1.5% 于２０２０年")
            .into_iter()
            .collect();
        assert_eq!(n, vec!["1.5", "2020", "2487"]);
    }
}
