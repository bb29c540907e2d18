//! Which plan a run follows: the planner's, or the fallback planner's when the planner fails or
//! returns a plan that breaks the planner contract; and what the plan says to retrieve.

use crate::ports::{Intent, Plan, Planner, Turn};
use crate::rules::plan;
use crate::rules::vocabulary::Synonyms;

/// The plan a run follows, with the planner that made it and, when the fallback stood in, why.
pub(super) struct Planned {
    pub(super) plan: Plan,
    /// The identity of the planner that made the plan.
    pub(super) method: String,
    pub(super) notice: Option<String>,
}

/// The plan for `question` after `history`, every query of it within `limit` characters:
/// `planner`'s, or `fallback`'s when it fails or returns a plan that breaks the planner
/// contract (then with a notice).
pub(super) fn choose(
    planner: &dyn Planner,
    fallback: &dyn Planner,
    history: &[Turn],
    question: &str,
    limit: usize,
) -> Planned {
    let history = plan::carried_history(history, question, limit);
    let rules = || crate::usecases::plan_within(fallback, history, question, limit);
    let (plan, method, notice) = match planner.plan(history, question) {
        Ok(p) if plan_is_sound(&p, question) && plan::plan_fits(&p, limit) => {
            (p, planner.identity(), None)
        }
        // The fallback's own plan over the bound: the fallback again, within it.
        Ok(_) if planner.identity() == fallback.identity() => (rules(), fallback.identity(), None),
        Ok(_) => (
            rules(),
            fallback.identity(),
            Some(format!(
                "{} returned an unusable plan; {} planned instead",
                planner.identity(),
                planned_by(fallback)
            )),
        ),
        Err(e) => (
            rules(),
            fallback.identity(),
            Some(format!("{e}; {} planned instead", planned_by(fallback))),
        ),
    };
    Planned {
        plan,
        method,
        notice,
    }
}

/// `plan` with the other words of every synonym group its questions name put beside them
/// (small talk left alone), each within `limit` characters or left as it was.
pub(super) fn with_synonyms(plan: &mut Plan, synonyms: &Synonyms, limit: usize) {
    if plan.intent == Intent::SmallTalk {
        return;
    }
    let mut expanded = false;
    let mut expand = |q: &mut String| {
        if let Some(e) = synonyms.expand_within(q, limit) {
            *q = e;
            expanded = true;
        }
    };
    expand(&mut plan.standalone);
    for part in &mut plan.parts {
        expand(part);
    }
    if expanded && plan.rewrite.is_none() {
        plan.rewrite = Some("synonyms".to_string());
    }
}

/// The questions `plan` retrieves and answers in turn: its parts when it has several, else its
/// standalone question.
pub(super) fn questions(plan: &Plan) -> Vec<String> {
    if plan.intent.has_parts() {
        plan.parts.clone()
    } else {
        vec![plan.standalone.clone()]
    }
}

/// A plan the answerer can follow: a standalone question of sensible length, two to
/// [`plan::MAX_PARTS`] parts exactly when it has several, a reply exactly for small talk.
fn plan_is_sound(p: &Plan, question: &str) -> bool {
    let limit = question.chars().count() * 4 + 400;
    let fits = |s: &str| !s.trim().is_empty() && s.chars().count() <= limit;
    let routed = p.confidence.is_none_or(|c| (0.0..=1.0).contains(&c))
        && p.reason
            .as_deref()
            .is_none_or(|r| r.chars().count() <= MAX_REASON_CHARS);
    routed
        && fits(&p.standalone)
        && match p.intent {
            Intent::MultiPart | Intent::Comparison => {
                (2..=plan::MAX_PARTS).contains(&p.parts.len()) && p.parts.iter().all(|s| fits(s))
            }
            Intent::Knowledge => p.parts.is_empty(),
            Intent::SmallTalk => {
                p.parts.is_empty() && p.reply.as_deref().is_some_and(|r| !r.trim().is_empty())
            }
        }
}

/// The longest `reason` a plan may give (a model's explanation, kept in the trace).
const MAX_REASON_CHARS: usize = 400;

/// How a notice names the planner that stood in: "the rules" for the offline rules planner
/// (`rules-…`), its identity otherwise.
fn planned_by(planner: &dyn Planner) -> String {
    let identity = planner.identity();
    if identity.starts_with("rules") {
        "the rules".to_string()
    } else {
        identity
    }
}
