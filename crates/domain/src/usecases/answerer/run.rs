//! The recording state of one answer run: where its trace goes, its clock laps, and what its
//! steps leave for the frame.

use std::time::Duration;

use crate::ports::{Clock, PhaseTime, ServedUsage, Stage, TraceEvent, TraceSink, elapsed_ms};

use super::frame::{SupportSummary, TokenUsage};

/// One answer run as it is recorded.
pub(super) struct Run<'r> {
    /// Generation attempts made so far (numbered across the parts of a question).
    pub(super) attempts: u32,
    /// How the shown answer's sentences fared in the support check.
    pub(super) support: Option<SupportSummary>,
    /// The generator that wrote the last answer (a fallback chain's delegate).
    pub(super) answered_by: Option<String>,
    /// The support check that passed the last accepted answer (a judge's identity, or the
    /// lexical check's).
    pub(super) support_method: Option<String>,
    /// Whether the judge already failed in this run (it is not asked again).
    pub(super) judge_failed: bool,
    pub(super) trace_id: &'r str,
    sink: &'r dyn TraceSink,
    clock: &'r dyn Clock,
    started: Duration,
    lap: Duration,
    pub(super) stages: Vec<PhaseTime>,
    pub(super) notices: Vec<String>,
    /// The run in tokens, when the answerer counts them.
    pub(super) tokens: Option<TokenUsage>,
    /// The generator server's counts for the last attempt, when it gave them.
    pub(super) served: Option<ServedUsage>,
}

impl<'r> Run<'r> {
    /// A run recorded under `trace_id` to `sink`, timed by `clock` from now.
    pub(super) fn start(trace_id: &'r str, sink: &'r dyn TraceSink, clock: &'r dyn Clock) -> Self {
        let now = clock.now();
        Self {
            attempts: 0,
            support: None,
            answered_by: None,
            support_method: None,
            judge_failed: false,
            trace_id,
            sink,
            clock,
            started: now,
            lap: now,
            stages: Vec::new(),
            notices: Vec::new(),
            tokens: None,
            served: None,
        }
    }

    pub(super) fn emit(&self, stage: Stage) {
        self.sink.record(TraceEvent::new(self.trace_id, stage));
    }

    /// Milliseconds since the last lap, recorded under `stage`.
    pub(super) fn lap(&mut self, stage: &str) -> f64 {
        let now = self.clock.now();
        let ms = elapsed_ms(self.lap, now);
        self.lap = now;
        self.stages.push(PhaseTime {
            ms,
            stage: stage.to_string(),
        });
        ms
    }

    pub(super) fn total_ms(&self) -> f64 {
        elapsed_ms(self.started, self.clock.now())
    }
}
