//! A judge's reading of the claims the support rules let through: the one loop that asks the
//! [`Judge`] port, used by the answerer and by evaluation's grader alike.

use crate::ports::{Judge, JudgeError};
use crate::rules::support::{ClaimCheck, ClaimVerdict};

/// Lets `judge` decide the claims of `checks` that cite something and pass the hard rules
/// (every number written in a cited block, every cited block sharing a term with the claim):
/// each is read against the text of the blocks it cites, and the judge's verdict replaces
/// the term share's. Claims the hard rules fail stay failed, uncited ones stay uncited.
///
/// All or nothing: when the judge fails on any claim, `checks` is left as the lexical check
/// made it and the error is returned. Returns how many claims the judge read.
pub fn apply_judge(
    checks: &mut [ClaimCheck],
    blocks: &[(u32, &str)],
    judge: &dyn Judge,
) -> Result<usize, JudgeError> {
    let mut verdicts = Vec::new();
    for (i, c) in checks.iter().enumerate() {
        let decidable = matches!(
            c.verdict,
            ClaimVerdict::Supported | ClaimVerdict::NotSupported
        ) && !c.cited.is_empty()
            && c.missing_numbers.is_empty()
            && c.unrelated.is_empty();
        if !decidable {
            continue;
        }
        let evidence: Vec<&str> = blocks
            .iter()
            .filter(|(m, _)| c.cited.contains(m))
            .map(|(_, t)| *t)
            .collect();
        verdicts.push((i, judge.supports(&c.sentence, &evidence.join("\n\n"))?));
    }
    for &(i, v) in &verdicts {
        checks[i].judged = Some(v);
        checks[i].verdict = if v {
            ClaimVerdict::Supported
        } else {
            ClaimVerdict::NotSupported
        };
    }
    Ok(verdicts.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::support::check;

    const SHANGHAI: &str = "上海是中国的直辖市，2020 年常住人口约 2487 万。";
    const BEIJING: &str = "北京是中国的首都，2020 年常住人口约 2189 万。";

    /// A judge that reads a claim as supported when the evidence holds its every
    /// comma-separated phrase: meaning-blind, but a real rule with real refusals.
    struct PhraseJudge {
        fail: bool,
    }

    impl Judge for PhraseJudge {
        fn identity(&self) -> String {
            "phrase-judge".into()
        }
        fn supports(&self, claim: &str, evidence: &str) -> Result<bool, JudgeError> {
            if self.fail {
                return Err(JudgeError::Unavailable("down".into()));
            }
            Ok(claim
                .trim_end_matches('。')
                .split('，')
                .all(|p| evidence.contains(p.trim())))
        }
        fn relevant(&self, _: &str, _: &str) -> Result<bool, JudgeError> {
            Ok(true)
        }
        fn states_knowledge(&self, _: &str) -> Result<bool, JudgeError> {
            Ok(true)
        }
    }

    #[test]
    fn a_judge_decides_what_the_hard_rules_let_through() {
        let blocks = [(1, SHANGHAI), (2, BEIJING)];
        // Lexically supported (most terms are in [2]) but it says something [2] does not.
        let answer = "北京是中国的直辖市[2]。北京的常住人口约 2189 万[1]。上海天气很好。";
        let mut checks = check(answer, "北京", &blocks);
        assert_eq!(checks[0].verdict, ClaimVerdict::Supported);
        // The numbers rule failed the second claim; no judge makes it pass.
        assert_eq!(checks[1].verdict, ClaimVerdict::NotSupported);
        assert_eq!(checks[2].verdict, ClaimVerdict::Uncited);
        let read = apply_judge(&mut checks, &blocks, &PhraseJudge { fail: false }).unwrap();
        assert_eq!(read, 1);
        assert_eq!(checks[0].verdict, ClaimVerdict::NotSupported);
        assert_eq!(checks[0].judged, Some(false));
        assert_eq!(checks[1].judged, None);
        assert_eq!(checks[2].verdict, ClaimVerdict::Uncited);
        // What the judge finds stated passes.
        let mut checks = check("北京，中国的首都[2]。", "首都", &blocks);
        apply_judge(&mut checks, &blocks, &PhraseJudge { fail: false }).unwrap();
        assert_eq!(checks[0].judged, Some(true));
        assert_eq!(checks[0].verdict, ClaimVerdict::Supported);
        // A judge that fails leaves the lexical verdicts as they were.
        let mut checks = check(answer, "北京", &blocks);
        let before = checks.clone();
        assert!(apply_judge(&mut checks, &blocks, &PhraseJudge { fail: true }).is_err());
        assert_eq!(checks, before);
    }
}
