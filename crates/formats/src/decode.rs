//! Decoding text content: UTF-8 (with or without a BOM), or UTF-16 with a BOM.

use anyhow::Result;

/// Decodes text content: UTF-8 (with or without a BOM), or UTF-16 with a BOM.
pub fn decode_text(bytes: &[u8]) -> Result<String> {
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        anyhow::anyhow!(
            "not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

fn utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> Result<String> {
    let units = bytes.chunks_exact(2).map(|p| word([p[0], p[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|_| anyhow::anyhow!("not valid UTF-16"))
}
