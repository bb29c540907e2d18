//! What a document ID given over the API must look like.

use crate::KbError;
use crate::error::{Field, IdRule, Invalid};

/// An ID a writer gives a document over the API, checked: first as every document ID (at most
/// 512 characters, no control character; the error quotes at most 80 of them), then by
/// [`check_new_id`], so no error message ever carries a long or multi-line ID whole.
pub(crate) fn checked_new_id(id: &str) -> Result<zhiku_domain::DocId, KbError> {
    let checked =
        zhiku_domain::DocId::new(id).map_err(|e| KbError::invalid(Field::DocumentId, e))?;
    check_new_id(id)?;
    Ok(checked)
}

/// An ID a writer gives a document over the API reads as what it is: Unicode NFC (a decomposed
/// `é` is another ID that looks the same) and no invisible formatting character (zero-width
/// spaces and joiners, bidirectional overrides, the byte-order mark, soft hyphens, tags), so no
/// document can pass for another scope's by looking like its ID.
pub(crate) fn check_new_id(id: &str) -> Result<(), KbError> {
    if !unicode_normalization::is_nfc(id) {
        return Err(Invalid::DocumentId {
            id: id.to_string(),
            rule: IdRule::NotNfc,
        }
        .into());
    }
    if let Some(c) = id.chars().find(|c| is_format_char(*c)) {
        return Err(Invalid::DocumentId {
            id: id.to_string(),
            rule: IdRule::Invisible(c),
        }
        .into());
    }
    Ok(())
}

/// Unicode's format characters (general category Cf): they change how text is shown, not
/// what it says.
fn is_format_char(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}
