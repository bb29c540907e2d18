//! Traditional → Simplified folding, so that one analyzer serves both scripts.
//!
//! OpenCC's `t2s` tables (Traditional characters, and the phrases whose conversion depends on
//! context: 頭髮 → 头发, 很乾 → 很干, but 乾隆 stays) through `ferrous-opencc`, a pure Rust port
//! with the dictionaries compiled in: no C library, no files at run time. Simplified text goes
//! through unchanged, so an index of Simplified text segments as before.
//!
//! Most text has no Traditional character at all, and the converter walks its dictionaries at
//! every position (about 11 MB/s). So the first use also lists every CJK character that the
//! converter changes on its own (about 4,100, ~20 ms once), and a text without any of them is
//! returned as it is. That gives the same result as converting it: a phrase entry changes only
//! text holding a character that the character table changes too (checked over every passage
//! and question of CMRC 2018 dev, in both scripts).

use std::borrow::Cow;
use std::sync::OnceLock;

use ferrous_opencc::OpenCC;
use ferrous_opencc::config::BuiltinConfig;

/// The code points looked at: the CJK Unified Ideographs with extension A, the compatibility
/// ideographs, and the supplementary ideographic planes.
const RANGES: [std::ops::RangeInclusive<u32>; 4] = [
    0x3400..=0x4DBF,
    0x4E00..=0x9FFF,
    0xF900..=0xFAFF,
    0x2_0000..=0x2_FFFF,
];
const END: usize = 0x3_0000;

struct Folder {
    t2s: OpenCC,
    /// One bit per code point below [`END`]: set when t2s changes the character alone.
    changes: Vec<u64>,
}

impl Folder {
    fn new() -> Self {
        // The built-in configs are compiled into the crate; failing to load one is a build
        // defect, not an input error.
        let t2s =
            OpenCC::from_config(BuiltinConfig::T2s).expect("the built-in OpenCC t2s config loads");
        let mut changes = vec![0u64; END / 64];
        let mut buf = [0u8; 4];
        for cp in RANGES.into_iter().flatten() {
            if let Some(c) = char::from_u32(cp) {
                let one = c.encode_utf8(&mut buf);
                if t2s.convert(one) != *one {
                    changes[cp as usize / 64] |= 1 << (cp % 64);
                }
            }
        }
        Self { t2s, changes }
    }

    fn changes(&self, c: char) -> bool {
        let cp = c as usize;
        cp < END && self.changes[cp / 64] & (1 << (cp % 64)) != 0
    }
}

fn folder() -> &'static Folder {
    static FOLDER: OnceLock<Folder> = OnceLock::new();
    FOLDER.get_or_init(Folder::new)
}

/// `text` with Traditional Chinese folded into Simplified; borrowed when nothing changes.
pub fn to_simplified(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let folder = folder();
    if !text.chars().any(|c| folder.changes(c)) {
        return Cow::Borrowed(text);
    }
    let converted = folder.t2s.convert(text);
    if converted == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(converted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_folds_and_simplified_stays() {
        assert_eq!(to_simplified("開發者們的資料"), "开发者们的资料");
        let hans = "开发者们的资料，乾隆年间";
        assert!(matches!(to_simplified(hans), Cow::Borrowed(_)));
        assert_eq!(to_simplified("頭髮乾燥"), "头发干燥");
    }

    #[test]
    fn the_quick_check_agrees_with_converting() {
        let folder = folder();
        for text in [
            "乾隆皇帝的頭髮很乾",
            "著名的臺灣",
            "开发者们的资料，乾隆年间",
            "香港國際機場和北京首都国际机场",
            "Tokio 1.54 東京",
        ] {
            assert_eq!(to_simplified(text), folder.t2s.convert(text), "{text}");
        }
    }
}
