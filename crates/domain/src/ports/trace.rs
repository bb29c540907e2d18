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

/// A trace sink whose runs can be read back (the trace endpoint, `zhiku ask --trace`).
///
/// # Contract
///
/// - [`read`](Self::read) returns a finished run's events in the order they were recorded, and
///   an empty list for an unknown or malformed trace ID.
/// - [`finish`](Self::finish) makes a run that ended without its final event readable.
pub trait TraceStore: TraceSink {
    /// Makes what was recorded of `trace_id` readable.
    fn finish(&self, trace_id: &str);

    /// The recorded events of `trace_id`, as stored.
    fn read(&self, trace_id: &str) -> Result<Vec<serde_json::Value>, super::BoxError>;
}
