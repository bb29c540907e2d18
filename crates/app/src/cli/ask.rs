//! `zhiku ask`: answer a question with citations checked against this round's retrieval.

use anyhow::Result;
use zhiku_app::wiring::generator::generator_for;
use zhiku_service::{MonotonicClock, Tee, new_trace_id};

use super::chain::{Recorded, render_chain};
use zhiku_app::wiring::{self, source_for};
use zhiku_domain::usecases::{AnswerStatus, Answerer, DocumentReader, RetrievalMode};

use super::args::QueryArgs;
use super::ctx::{Ctx, build_filter};
use super::exit::Exit;
use super::open::open_for_query;
use super::render;

/// Refreshes the store (unless told not to), answers, prints the answer (and the trace).
pub(crate) fn run(ctx: &Ctx, question: &str, q: &QueryArgs, trace: bool) -> Result<Exit> {
    let mode = RetrievalMode::from(q.mode);
    let (store, skipped) = open_for_query(ctx, q.no_refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    let filter = build_filter(&store, &q.scopes, &q.filters, q.locale.as_deref())?;
    let documents = source_for(&store)?;
    let source = documents.source_store(store.source_paths());
    let clock = MonotonicClock::default();
    let retriever = store.retriever(source.as_ref()).with_clock(&clock);
    let generator = generator_for(&store.config, store.dense_embedder())?;
    let policy = store
        .settings
        .answer_policy(mode, q.k.unwrap_or(store.config.k));
    let file_sink = wiring::trace_log(&store);
    let memory = Recorded::default();
    let sink = Tee(vec![&file_sink, &memory]);
    let reader = DocumentReader::new(
        documents.as_ref(),
        store.source_paths(),
        store.settings.policy,
    );
    let answerer = Answerer::new(&retriever, generator.as_ref(), &sink, &clock, policy)
        .with_document_chunks(&reader);
    let trace_id = new_trace_id();
    let frame = answerer.ask(question, &filter, &trace_id)?;
    if trace {
        eprint!("{}", render_chain(&memory.events_of(&trace_id)));
    }
    if q.json {
        println!("{}", serde_json::to_string(&frame)?);
    } else {
        render::answer(&frame);
    }
    Ok(match frame.status {
        AnswerStatus::CannotRetrieve => Exit::CannotRetrieve,
        AnswerStatus::Blocked => Exit::Blocked,
        _ => Exit::unless_skipped(skipped),
    })
}
