//! `zhiku token`: a new random bearer token and the `zhiku.toml` lines that admit it.

use anyhow::{Context, Result};
use zhiku_domain::Scope;
use zhiku_http::settings::token_digest;

use super::exit::Exit;

/// Checks the scopes, draws 32 random bytes, prints the token and its configuration entry.
pub(crate) fn run(name: &str, scopes: &[String], write: bool) -> Result<Exit> {
    for s in scopes {
        Scope::new(s)?;
    }
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("cannot read /dev/urandom")?,
        &mut bytes,
    )?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    println!("token (give it to the caller; it is not stored anywhere):\n  {token}\n");
    println!("add to zhiku.toml:\n");
    println!("[[serve.tokens]]");
    println!("name = {name:?}");
    println!("sha256 = {:?}", token_digest(&token));
    println!("scopes = {scopes:?}");
    if write {
        println!("write = true");
    }
    Ok(Exit::Success)
}
