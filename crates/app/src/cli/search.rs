//! `zhiku search`: retrieve the ranked evidence for a query.

use anyhow::Result;
use zhiku_app::wiring::source_for;
use zhiku_domain::usecases::{RetrievalMode, RetrievalRequest};

use super::args::QueryArgs;
use super::ctx::{Ctx, build_filter};
use super::exit::Exit;
use super::open::{done_with, open_for_query};
use super::render;

/// Refreshes the store (unless told not to), retrieves, prints the evidence.
pub(crate) fn run(ctx: &Ctx, query: &str, q: &QueryArgs) -> Result<Exit> {
    let (k, mode, json) = (q.k, RetrievalMode::from(q.mode), q.json);
    let (scopes, filters, no_refresh) = (&q.scopes, &q.filters, q.no_refresh);
    let (store, skipped) = open_for_query(ctx, no_refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    let filter = build_filter(&store, scopes, filters, q.locale.as_deref())?;
    let documents = source_for(&store)?;
    let source = documents.source_store(store.source_paths());
    let retriever = store.retriever(source.as_ref());
    let k = k.unwrap_or(store.config.k);
    let request = RetrievalRequest {
        query,
        filter: &filter,
        mode,
        k,
        budget: None,
    };
    let retrieval = retriever.retrieve(&request)?;
    render::search(
        ctx,
        query,
        mode,
        store.dense_notice.as_ref(),
        &filter,
        &retrieval,
        json,
    );
    // What borrows the store goes first, in the order it was built.
    drop(retriever);
    drop(source);
    drop(documents);
    done_with(store);
    Ok(Exit::unless_skipped(skipped))
}
