//! pdf (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a pdf file.
pub fn extract(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("pdf: not yet supported")
}
