//! `zhiku search`: retrieve the ranked evidence for a query, through the service's `search`
//! (the same call as `POST /v1/search` and the MCP `search` tool).

use anyhow::{Result, anyhow};
use zhiku_app::wiring;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_service::{Caller, SearchQuery};

use super::args::QueryArgs;
use super::ctx::{Ctx, build_filter, metadata_terms};
use super::exit::Exit;
use super::open::open_for_query;
use super::render;

/// Refreshes the store (unless told not to), retrieves, prints the evidence.
pub(crate) fn run(ctx: &Ctx, query: &str, q: &QueryArgs) -> Result<Exit> {
    let mode = RetrievalMode::from(q.mode);
    let (store, skipped) = open_for_query(ctx, q.refresh)?;
    if let Some(notice) = &store.dense_notice
        && !matches!(mode, RetrievalMode::Lexical)
    {
        ctx.note(&format!("notice: {notice}"));
    }
    // The filter is built here first so that a bad --scope or --filter is a usage error.
    let filter = build_filter(&store, &q.scopes, &q.filters, q.locale.as_deref())?;
    let (kb, _) = wiring::open_service(store, None)?;
    let caller = Caller {
        name: "local".into(),
        scopes: filter.scopes().iter().cloned().collect(),
        write: false,
        principal: None,
        operator: false,
    };
    let request = SearchQuery {
        query: query.to_string(),
        k: q.k,
        mode,
        metadata: metadata_terms(&q.filters)?,
        locale: q.locale.clone(),
        request_id: None,
    };
    let result = kb
        .search(&caller, &request)
        .map_err(|e| anyhow!(e.public_message()))?;
    render::search(ctx, &result, &filter, q.output);
    Ok(Exit::unless_skipped(skipped))
}
