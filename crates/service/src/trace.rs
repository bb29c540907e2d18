//! Trace sinks the service composes: a fan-out, and the request ID of a transport.

use zhiku_domain::ports::{Stage, TraceEvent, TraceSink};

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
        if let Stage::Query(query) = &mut event.stage {
            query.request_id = Some(self.request_id.to_string());
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
        let query = zhiku_domain::ports::QueryStep {
            doc_ids: None,
            k: 1,
            locale: None,
            metadata: Vec::new(),
            mode: "hybrid".into(),
            question: "q".into(),
            readers: None,
            request_id: None,
            scopes: Vec::new(),
        };
        let answer = zhiku_domain::ports::AnswerStep::Failed {
            error: "e".into(),
            latency_ms: 0.0,
            status: "error".into(),
        };
        for stage in [Stage::Query(query), Stage::Answer(answer)] {
            sink.record(TraceEvent::new("t", stage));
        }
        let events: Vec<serde_json::Value> = kept
            .0
            .into_inner()
            .unwrap()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        assert_eq!(events[0]["data"]["request_id"], "req-1");
        assert_eq!(events[0]["data"]["k"], 1);
        assert!(events[1]["data"].get("request_id").is_none());
    }
}
