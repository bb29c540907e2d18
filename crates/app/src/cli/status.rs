//! `zhiku status`: what the store holds and which adapters were picked.

use anyhow::Result;

use super::args::Output;
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::done_with;
use super::render;

/// Opens the last committed state read-only and prints it.
pub(crate) fn run(ctx: &Ctx, output: Output) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_to_query(kb.as_deref())?;
    render::status(ctx, &store, output);
    done_with(store);
    Ok(Exit::Success)
}
