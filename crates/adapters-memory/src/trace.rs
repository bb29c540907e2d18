//! An in-memory trace sink.

use std::sync::Mutex;

use zhiku_domain::ports::{TraceEvent, TraceSink};

/// Keeps every event in memory, in arrival order.
#[derive(Debug, Default)]
pub struct MemoryTraceSink {
    events: Mutex<Vec<TraceEvent>>,
}

impl MemoryTraceSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// All events so far.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The events of one run.
    pub fn events_for(&self, trace_id: &str) -> Vec<TraceEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.trace_id == trace_id)
            .collect()
    }
}

impl TraceSink for MemoryTraceSink {
    fn record(&self, event: TraceEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }
}
