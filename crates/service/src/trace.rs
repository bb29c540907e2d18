//! Trace sinks the service composes: a fan-out, and the request ID of a transport.

use serde_json::Value;
use zhiku_domain::ports::{TraceEvent, TraceSink};

/// Forwards each event to several sinks.
pub struct Tee<'a>(pub Vec<&'a dyn TraceSink>);

impl std::fmt::Debug for Tee<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tee({} sinks)", self.0.len())
    }
}

impl TraceSink for Tee<'_> {
    fn record(&self, event: TraceEvent) {
        for sink in &self.0 {
            sink.record(event.clone());
        }
    }
}

/// Adds the request ID to the `query` step of an answer's trace (the step that opens every
/// run), for the trace file and the stream alike.
pub struct WithRequestId<'a> {
    /// Where the events go.
    pub inner: &'a dyn TraceSink,
    /// The ID.
    pub request_id: &'a str,
}

impl std::fmt::Debug for WithRequestId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WithRequestId({})", self.request_id)
    }
}

impl TraceSink for WithRequestId<'_> {
    fn record(&self, mut event: TraceEvent) {
        if event.stage == "query"
            && let Value::Object(data) = &mut event.data
        {
            data.insert(
                "request_id".into(),
                Value::String(self.request_id.to_string()),
            );
        }
        self.inner.record(event);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Kept(Mutex<Vec<TraceEvent>>);

    impl TraceSink for Kept {
        fn record(&self, event: TraceEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    #[test]
    fn only_the_query_step_gets_the_request_id() {
        let kept = Kept::default();
        let sink = WithRequestId {
            inner: &kept,
            request_id: "req-1",
        };
        for stage in ["query", "answer"] {
            sink.record(TraceEvent {
                trace_id: "t".into(),
                stage: stage.into(),
                data: serde_json::json!({"k": 1}),
            });
        }
        let events = kept.0.into_inner().unwrap();
        assert_eq!(events[0].data["request_id"], "req-1");
        assert_eq!(events[0].data["k"], 1);
        assert!(events[1].data.get("request_id").is_none());
    }
}
