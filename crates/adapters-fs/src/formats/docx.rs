//! docx (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a docx file.
pub fn extract(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("docx: not yet supported")
}
