//! Properties every [`TraceStore`] has: runs read back whole, in order, and apart from each
//! other; nothing reads back for an unknown or malformed trace ID.

use serde_json::json;
use zhiku_domain::ports::{AnswerStep, QueryStep, Stage, TraceEvent, TraceStore};
use zhiku_domain::{Reader, Scope};

fn query(question: &str) -> Stage {
    Stage::Query(QueryStep {
        doc_ids: None,
        k: 8,
        locale: None,
        metadata: Vec::new(),
        mode: "hybrid".into(),
        question: question.into(),
        // A person's run: the reader terms must read back.
        readers: Some(vec![
            Reader::everyone(),
            Reader::user("li.lei@corp").expect("reader"),
        ]),
        request_id: None,
        scopes: vec![Scope::new("alpha").expect("scope")],
    })
}

fn answer() -> Stage {
    Stage::Answer(AnswerStep::Failed {
        error: "generator unavailable".into(),
        latency_ms: 1.5,
        status: "error".into(),
    })
}

fn step(name: &str, n: u32) -> Stage {
    Stage::Other {
        stage: name.into(),
        data: json!({ "n": n }),
    }
}

fn names(store: &dyn TraceStore, trace_id: &str) -> Vec<String> {
    store
        .read(trace_id)
        .expect("read")
        .iter()
        .map(|e| {
            assert_eq!(e.event.trace_id, trace_id);
            e.event.stage.name().to_string()
        })
        .collect()
}

/// Two interleaved runs read back apart, each in the order its events were recorded, with
/// their typed steps intact.
pub fn interleaved_runs_read_back_apart_and_in_order(store: &dyn TraceStore) {
    store.record(TraceEvent::new("run-a", query("甲")));
    store.record(TraceEvent::new("run-b", query("乙")));
    store.record(TraceEvent::new("run-a", step("retrieval.extra", 1)));
    store.record(TraceEvent::new("run-b", step("retrieval.extra", 2)));
    store.record(TraceEvent::new("run-a", answer()));
    store.record(TraceEvent::new("run-b", answer()));
    assert_eq!(
        names(store, "run-a"),
        ["query", "retrieval.extra", "answer"]
    );
    assert_eq!(
        names(store, "run-b"),
        ["query", "retrieval.extra", "answer"]
    );
    let back = store.read("run-a").expect("read");
    assert_eq!(back[0].event.stage, query("甲"));
    assert_eq!(back[0].event.stage.scopes().map(<[Scope]>::len), Some(1));
    assert_eq!(back[2].event.stage, answer());
}

/// A run that ended without its `answer` event is readable once finished.
pub fn a_run_without_its_answer_is_readable_after_finish(store: &dyn TraceStore) {
    store.record(TraceEvent::new("cut-short", query("丙")));
    store.record(TraceEvent::new("cut-short", step("context", 1)));
    store.finish("cut-short");
    assert_eq!(names(store, "cut-short"), ["query", "context"]);
}

/// An unknown, empty or malformed trace ID reads back nothing (never another run's events).
pub fn unknown_and_malformed_ids_read_nothing(store: &dyn TraceStore) {
    store.record(TraceEvent::new("known", query("丁")));
    store.record(TraceEvent::new("known", answer()));
    for id in ["unknown", "", "known ", "kno"] {
        assert!(store.read(id).expect("read").is_empty(), "{id:?}");
    }
}
