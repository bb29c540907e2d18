//! `zhiku mcp`: the Model Context Protocol on stdin/stdout, as the local caller.

use anyhow::Result;

use super::args::Refresh;
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::open_service;
use super::serve::runtime;

/// Opens the service and serves MCP on stdin/stdout until the client closes it.
pub(crate) fn run(ctx: &Ctx, refresh: Refresh) -> Result<Exit> {
    let service = open_service(ctx, refresh)?;
    let caller = service.local_caller();
    runtime()?.block_on(zhiku_mcp::serve_stdio(service, caller))?;
    Ok(Exit::Success)
}
