//! What an answer's context holds under a context policy: asked over every answerable case of
//! a set, measured against the gold spans and expected documents.

use std::collections::HashSet;

use zhiku_domain::Filter;
use zhiku_domain::rules::expand::ContextPolicy;
use zhiku_domain::usecases::{AnswerFrame, AnswerStatus, Answerer, AskError};

use crate::beir::{EvalQuery, EvalSet};

/// Counts over the answerable cases of a set: what their contexts held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextFigures {
    /// Cases asked: answerable ones (with text and expected documents).
    pub cases: usize,
    /// Of those, cases with gold answer spans.
    pub with_spans: usize,
    /// Of those, cases whose context holds a gold span whole.
    pub spans_in: usize,
    /// Cases whose context holds an expected document.
    pub docs_in: usize,
    /// Cases answered.
    pub answered: usize,
    /// Characters of context, summed over the cases.
    pub chars: usize,
    /// Blocks of context, summed over the cases.
    pub blocks: usize,
}

/// True when `case` is asked for its context: it has text and expected documents.
fn is_answerable(case: &EvalQuery) -> bool {
    !case.no_answer && !case.text.trim().is_empty() && !case.relevant.is_empty()
}

/// True when every character of one of `case`'s gold spans lies in a block of its document.
fn holds_a_span(frame: &AnswerFrame, case: &EvalQuery) -> bool {
    case.spans.iter().any(|g| {
        (g.start..g.end).all(|at| {
            frame
                .evidence
                .iter()
                .any(|e| e.doc_id.as_str() == g.doc_id && e.start <= at && at < e.end)
        })
    })
}

impl ContextFigures {
    /// Adds what the context of `frame`, the answer to `case`, held.
    fn add(&mut self, case: &EvalQuery, frame: &AnswerFrame) {
        self.cases += 1;
        self.answered += usize::from(frame.status == AnswerStatus::Answered);
        self.chars += frame
            .evidence
            .iter()
            .map(|e| e.end - e.start)
            .sum::<usize>();
        self.blocks += frame.evidence.len();
        let docs: HashSet<&str> = frame.evidence.iter().map(|e| e.doc_id.as_str()).collect();
        self.docs_in += usize::from(case.relevant.iter().any(|d| docs.contains(d.as_str())));
        if !case.spans.is_empty() {
            self.with_spans += 1;
            self.spans_in += usize::from(holds_a_span(frame, case));
        }
    }

    /// The mean of `sum` over the cases (0 without any).
    pub fn mean(&self, sum: usize) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            sum as f64 / self.cases as f64
        }
    }

    /// The figures as one JSON object, the shares rounded to four places: `context`,
    /// `cases`, `span_coverage` (of the cases with spans; `null` without any), `doc_coverage`,
    /// `answered_rate`, `context_chars_mean` and `blocks_mean`.
    pub fn to_json(&self, context: ContextPolicy) -> serde_json::Value {
        let share = |a: usize, b: usize| {
            if b == 0 {
                serde_json::Value::Null
            } else {
                ((a as f64 / b as f64 * 10_000.0).round() / 10_000.0).into()
            }
        };
        serde_json::json!({
            "context": context.code(),
            "cases": self.cases,
            "span_coverage": share(self.spans_in, self.with_spans),
            "doc_coverage": share(self.docs_in, self.cases),
            "answered_rate": share(self.answered, self.cases),
            "context_chars_mean": (self.mean(self.chars) * 10.0).round() / 10.0,
            "blocks_mean": (self.mean(self.blocks) * 100.0).round() / 100.0,
        })
    }
}

/// Asks every answerable case of `set` (with text and expected documents, not `noAnswer`) and
/// measures the context `answerer`'s policy sent: whether a gold answer span lies wholly in it
/// (when the set has spans), whether it holds an expected document, whether the case was
/// answered, and its size.
pub fn context_figures(
    answerer: &Answerer<'_>,
    filter: &Filter,
    set: &EvalSet,
    new_trace_id: &dyn Fn() -> String,
) -> Result<ContextFigures, AskError> {
    let mut figures = ContextFigures::default();
    for case in set.queries.iter().filter(|c| is_answerable(c)) {
        let frame = answerer.ask(&case.text, filter, &new_trace_id())?;
        figures.add(case, &frame);
    }
    Ok(figures)
}
