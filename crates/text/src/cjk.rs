//! Which characters are CJK: the test every other text rule starts from.

/// True for characters of the CJK ideograph blocks and the kana/hangul syllabaries.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF |
        0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// True when every character of `t` is CJK ([`is_cjk`]); true for the empty string.
pub fn is_cjk_str(t: &str) -> bool {
    t.chars().all(is_cjk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideographs_kana_and_hangul_are_cjk_and_punctuation_is_not() {
        for c in ['知', '庫', 'か', 'カ', '한', '𠀀'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', '1', '。', '，', ' ', '—'] {
            assert!(!is_cjk(c), "{c}");
        }
        assert!(is_cjk_str("知库"));
        assert!(!is_cjk_str("知库1"));
    }
}
