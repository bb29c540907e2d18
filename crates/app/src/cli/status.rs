//! `zhiku status`: what the store holds and which adapters were picked.

use std::process::ExitCode;

use anyhow::Result;

use super::ctx::Ctx;
use super::render;

/// Opens the last committed state read-only and prints it.
pub(crate) fn run(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_read_only(kb.as_deref())?;
    render::status(ctx, &store, json);
    Ok(ExitCode::SUCCESS)
}
