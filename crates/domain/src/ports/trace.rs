//! The trace port: every run's steps as events.

use serde::Serialize;

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    /// The run this event belongs to.
    pub trace_id: String,
    /// The step, e.g. `retrieval.route`, `fusion`, `revision_check`, `budget`.
    pub stage: String,
    /// Step details.
    pub data: serde_json::Value,
}

/// Receives trace events.
///
/// # Contract
///
/// - [`record`](Self::record) MUST NOT fail the run: a sink that cannot write reports the
///   problem through its own channel and drops the event.
/// - Events of one run arrive in the order the run produced them.
pub trait TraceSink: Send + Sync {
    /// Records one event.
    fn record(&self, event: TraceEvent);
}

/// A sink that discards events.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullTraceSink;

impl TraceSink for NullTraceSink {
    fn record(&self, _event: TraceEvent) {}
}
