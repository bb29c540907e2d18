//! A planner's plan within the bound on retrieval queries: what the answerer falls back to
//! when the configured planner's plan runs over, with any planner.

use crate::contracts::{Plan, Turn};
use crate::ports::Planner;
use crate::ports::as_asked;
use crate::rules::plan::{carried_history, plan_fits};

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
    use crate::ports::PlanError;

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
