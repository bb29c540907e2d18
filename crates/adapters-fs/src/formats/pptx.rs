//! pptx (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a pptx file.
pub fn extract(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("pptx: not yet supported")
}
