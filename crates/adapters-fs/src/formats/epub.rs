//! epub (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a epub file.
pub fn extract(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("epub: not yet supported")
}
