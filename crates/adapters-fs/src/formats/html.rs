//! html (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a html file.
pub fn extract(_text: &str, _limits: &Limits) -> Result<Extracted> {
    bail!("html: not yet supported")
}
