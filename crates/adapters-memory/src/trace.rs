//! An in-memory trace sink whose runs can be read back.

use std::sync::Mutex;

use zhiku_domain::ports::{BoxError, StoredTraceEvent, TraceEvent, TraceSink, TraceStore};

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

impl TraceStore for MemoryTraceSink {
    fn finish(&self, _trace_id: &str) {}

    fn read(&self, trace_id: &str) -> Result<Vec<StoredTraceEvent>, BoxError> {
        Ok(self
            .events_for(trace_id)
            .into_iter()
            .map(|event| StoredTraceEvent { at_ms: None, event })
            .collect())
    }
}
