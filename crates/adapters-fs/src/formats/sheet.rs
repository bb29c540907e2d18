//! CSV and Excel (being written).

use anyhow::{Result, bail};

use super::{Extracted, Limits};

/// Extracts a CSV file.
pub fn extract_csv(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("csv: not yet supported")
}

/// Extracts an Excel file.
pub fn extract_xlsx(_bytes: &[u8], _limits: &Limits) -> Result<Extracted> {
    bail!("xlsx: not yet supported")
}
