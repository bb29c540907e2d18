//! Decoding text content: UTF-8 (with or without a BOM), UTF-16 with a BOM, and — for the
//! files a folder holds as text (plain text, Markdown, CSV, HTML) — GB18030 (which GBK and
//! GB2312 are subsets of) and Big5, told from the bytes.
//!
//! A text file is read as:
//!
//! 1. UTF-16 (little or big endian) when it starts with that byte order mark;
//! 2. UTF-8 when it is valid UTF-8 (a UTF-8 BOM is dropped) — which a legacy text of a
//!    character or two may happen to be (GBK `使`, `CA B9`, is UTF-8 `ʹ`), but hardly ever
//!    a longer one;
//! 3. otherwise, when it holds no NUL byte, the encoding [`chardetng`] (Firefox's detector
//!    for unlabelled legacy pages) guesses from its first [`DETECT_BYTES`] bytes: a guess of
//!    GBK is decoded as GB18030, a guess of Big5 as Big5, each strictly (a byte sequence that
//!    encoding does not map is an error, never a replacement character), and kept only when it
//!    [reads as Chinese text](plausible): few control characters, and at least half of its
//!    characters beyond ASCII common Han characters (GB2312's level-1 set for GB18030, Big5's
//!    frequently used set for Big5; real text has 80–100 %, random bytes decoded as either
//!    about 27 %) or punctuation. A text of fewer than [`SURE_CHARS`] characters beyond ASCII
//!    is decoded only when the other of the two cannot read it, and one of fewer than 3 never:
//!    a few characters are too few to tell GB18030 from Big5 (`據華` in Big5 is `沮地` in
//!    GB18030).
//!
//! Anything else — another legacy encoding (Latin-1/windows-1252, Shift_JIS, …), binary
//! content — is an error that says so. GB18030 alone cannot tell: almost any pair of bytes
//! above 0x80 is a valid GB18030 character, so a Big5 or a Latin-1 file would decode as
//! GB18030 without a single error, into nonsense. chardetng scores the candidate encodings
//! by the characters they decode to and rules out those with an error.

use anyhow::{Result, anyhow, bail};
use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{BIG5, DecoderResult, Encoding, GB18030, GBK};

/// Most bytes of a file the encoding detector reads (and the plausibility check looks at, in
/// characters): its cost is linear in them, and 64 KiB of text tells any encoding apart.
pub const DETECT_BYTES: usize = 64 << 10;

/// What a file that is in none of the encodings read is told.
const NOT_READ: &str = "not UTF-8, UTF-16, GB18030 (GBK) or Big5 text";

/// Decodes text content: UTF-8 (with or without a BOM), or UTF-16 with a BOM. For the parts
/// of a package (XML, XHTML), whose encoding is declared, not guessed.
pub fn decode_text(bytes: &[u8]) -> Result<String> {
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        anyhow!(
            "not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Decodes a text file (plain text, Markdown, CSV, HTML): UTF-16 with a BOM, UTF-8 (with or
/// without a BOM), else GB18030 or Big5 as chardetng tells from the first [`DETECT_BYTES`],
/// decoded strictly and kept only when it reads as Chinese text (mostly common Han characters
/// and punctuation beyond ASCII; a text of a few such characters only when the other of the
/// two cannot read it). The error says which encodings are read, and what the file seems to
/// be instead.
///
/// The work is linear in `bytes`, which the caller has bounded (`max_file_bytes`); the
/// detector and the plausibility check read at most [`DETECT_BYTES`] of it.
pub fn decode_text_file(bytes: &[u8]) -> Result<String> {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return decode_text(bytes);
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let bad = match std::str::from_utf8(body) {
        Ok(text) => return Ok(text.to_string()),
        Err(e) => e.valid_up_to(),
    };
    if bytes.contains(&0) {
        bail!("binary file (contains NUL bytes)");
    }
    let encoding = guess(bytes);
    if encoding != GBK && encoding != BIG5 {
        bail!(
            "{NOT_READ} (first byte that is not UTF-8 at offset {bad}{}); save it as UTF-8",
            seems(bytes, encoding)
        );
    }
    // GBK's decoder is GB18030's (the Encoding Standard's one decoder for both), named here as
    // the superset it is.
    let decoder = if encoding == GBK { GB18030 } else { BIG5 };
    let name = decoder.name();
    let Some(text) = decoder.decode_without_bom_handling_and_without_replacement(bytes) else {
        let at = valid_up_to(decoder, bytes);
        bail!(
            "{NOT_READ}: it reads as {name} up to byte offset {at}, where a byte sequence is \
             not {name}; save it as UTF-8"
        );
    };
    if !plausible(&text, decoder) {
        bail!("{NOT_READ}: its bytes decode as {name} only into unlikely characters (binary?)");
    }
    let beyond_ascii = text
        .chars()
        .filter(|c| !c.is_ascii())
        .take(SURE_CHARS)
        .count();
    if beyond_ascii < SURE_CHARS && (beyond_ascii < 3 || other_reads(bytes, decoder)) {
        bail!(
            "{NOT_READ}: too few characters beyond ASCII ({beyond_ascii}) to tell GB18030 from \
             Big5; save it as UTF-8"
        );
    }
    Ok(text.into_owned())
}

/// Characters beyond ASCII from which the guess between GB18030 and Big5 is sure: with fewer,
/// a text is decoded only when the other encoding cannot read it (as Chinese text), and with
/// fewer than 3 never. Measured on 3,000 slices of a classical and a modern text for each
/// length: from 3 to 7 characters 0.1–0.3 % were misread without this rule, none with it
/// (about half of the GBK slices are then reported instead); from 8 on none either way.
const SURE_CHARS: usize = 8;

/// True when `bytes`, read as GB18030 or Big5 (the one that is not `decoder`), read as
/// Chinese text too.
fn other_reads(bytes: &[u8], decoder: &'static Encoding) -> bool {
    let other = if decoder == GB18030 { BIG5 } else { GB18030 };
    other
        .decode_without_bom_handling_and_without_replacement(bytes)
        .is_some_and(|text| plausible(&text, other))
}

/// The legacy encoding chardetng guesses from the first [`DETECT_BYTES`] of `bytes` (not
/// UTF-8, which the caller has ruled out; ISO-2022-JP is no candidate).
fn guess(bytes: &[u8]) -> &'static Encoding {
    let head = &bytes[..bytes.len().min(DETECT_BYTES)];
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(head, head.len() == bytes.len());
    // No top-level domain: a `.cn` hint makes chardetng prefer GBK over Big5 and Latin-1 when
    // the bytes happen to be valid GBK, which Big5 text and much Latin-1 text are.
    detector.guess(None, Utf8Detection::Deny)
}

/// A hint for the error: the encoding the bytes seem to be in, when they read as text in it
/// (few control characters), or that they seem to be binary.
fn seems(bytes: &[u8], encoding: &'static Encoding) -> String {
    let head = &bytes[..bytes.len().min(DETECT_BYTES)];
    let (text, _) = encoding.decode_without_bom_handling(head);
    if few_controls(&text) {
        let latin1 = if encoding == encoding_rs::WINDOWS_1252 {
            " (Latin-1)"
        } else {
            ""
        };
        format!("; it looks like {}{latin1} text", encoding.name())
    } else {
        "; it looks like binary content".to_string()
    }
}

/// Where the strict decode of `bytes` as `encoding` first fails: the byte offset of the
/// sequence it does not map (decoded a piece at a time, in a small buffer).
fn valid_up_to(encoding: &'static Encoding, bytes: &[u8]) -> usize {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut out = String::with_capacity(16 << 10);
    let mut at = 0;
    loop {
        out.clear();
        let (result, read) =
            decoder.decode_to_string_without_replacement(&bytes[at..], &mut out, true);
        at += read;
        match result {
            DecoderResult::Malformed(bad, after) => {
                return at.saturating_sub(usize::from(bad) + usize::from(after));
            }
            DecoderResult::InputEmpty => return at,
            DecoderResult::OutputFull => {}
        }
    }
}

/// True when at most one character in a hundred is a control character other than the
/// white space of text (tab, line feed, carriage return, form feed).
fn few_controls(text: &str) -> bool {
    let (mut chars, mut controls) = (0usize, 0usize);
    for c in text.chars().take(DETECT_BYTES) {
        chars += 1;
        if c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c') {
            controls += 1;
        }
    }
    controls * 100 <= chars
}

/// True when `text`, decoded from `encoding` (GB18030 or Big5), reads as Chinese text: few
/// control characters, and, of its first [`DETECT_BYTES`] characters, at least half of those
/// beyond ASCII either common Han characters of that encoding — GB2312 level 1 (lead bytes
/// 0xB0–0xD7: the 3,755 most frequent characters) or Big5's frequently used set (lead bytes
/// 0xA4–0xC6: 5,401 characters) — or punctuation (general, CJK, full-width forms). Real
/// text has 80–100 % common Han characters (a classical text, the Zuozhuan, in any
/// 64-character window); random bytes decoded as either about 27 %, and a Big5 byte pair
/// misread may be a kana or a symbol, which count against.
fn plausible(text: &str, encoding: &'static Encoding) -> bool {
    if !few_controls(text) {
        return false;
    }
    let (mut beyond_ascii, mut likely) = (0usize, 0usize);
    let mut encoder = encoding.new_encoder();
    let mut buf = [0u8; 8];
    for c in text.chars().take(DETECT_BYTES) {
        if c.is_ascii() {
            continue;
        }
        beyond_ascii += 1;
        if matches!(c, '\u{2000}'..='\u{206F}' | '\u{3000}'..='\u{303F}' | '\u{FF00}'..='\u{FFEF}')
        {
            likely += 1;
            continue;
        }
        if !matches!(c, '\u{4E00}'..='\u{9FFF}') {
            continue;
        }
        let mut utf8 = [0u8; 4];
        let (_, _, written) =
            encoder.encode_from_utf8_without_replacement(c.encode_utf8(&mut utf8), &mut buf, false);
        let lead = buf[0];
        let common = written == 2
            && if encoding == BIG5 {
                (0xA4..=0xC6).contains(&lead)
            } else {
                (0xB0..=0xD7).contains(&lead) && buf[1] >= 0xA1
            };
        likely += usize::from(common);
    }
    likely * 2 >= beyond_ascii
}

fn utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> Result<String> {
    let units = bytes.chunks_exact(2).map(|p| word([p[0], p[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map_err(|_| anyhow!("not valid UTF-16"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Some 500 of the most frequent Simplified characters, and their Traditional forms.
    const SIMPLIFIED: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞";
    const TRADITIONAL: &str = "的一是在不了有和人這中大為上個國我以要他時來用們生到作地於出就分對成會可主發年動同工也能下過子說產種面而方後多定行學法所民得經十三之進著等部度家電力裡如水化高自二理起小物現實加量都兩體制機當使點從業本去把性好應開它合還因由其些然前外天政四日那社義事平形相全表間樣與關各重新線內數正心反你明看原又麼利比或但質氣第向道命此變條只沒結解問意建月公無系軍很情者最立代想已通並提直題黨程展五果料象員革位入常文總次品式活設及管特件長求老頭基資邊流路級少圖山統接知較將組見計別她手角期根論運農指幾九區強放決西被幹做必戰先回則任取據處隊南給色光門即保治北造百規熱領七海口東導器壓志世金增爭濟階油思術極交受聯什認六共權收證改清己美再採轉更單風切打白教速花帶安場身車例真務具萬每目至達走積示議聲報鬥完類八離華名確才科張信馬節話米整空元況今集溫傳土許步群廣石記需段研界拉林律叫且究觀越織裝影算低持音眾書布復容兒須際商非驗連斷深難近礦千周委素技備半辦青省列習響約支般史感勞便團往酸歷市克何除消構府稱太準精值號率族維劃選標寫存候毛親快效斯院查江型眼王按格養易置派層片始卻專狀育廠京識適屬圓包火住調滿縣局照參紅細引聽該鐵價嚴龍飛";

    fn encode(encoding: &'static Encoding, text: &str) -> Vec<u8> {
        let (bytes, _, unmappable) = encoding.encode(text);
        assert!(!unmappable, "{text:?} is not all {}", encoding.name());
        bytes.into_owned()
    }

    /// Deterministic bytes (xorshift) in `lo..=hi`.
    fn noise(len: usize, lo: u8, hi: u8) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                lo + (x % (u64::from(hi - lo) + 1)) as u8
            })
            .collect()
    }

    #[test]
    fn utf8_and_utf16_with_a_bom_are_read() {
        let text = "标题\n\n正文 text\n";
        assert_eq!(decode_text_file(text.as_bytes()).unwrap(), text);
        let bom = [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat();
        assert_eq!(decode_text_file(&bom).unwrap(), text);
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode_text_file(&le).unwrap(), text);
        assert_eq!(decode_text_file(&be).unwrap(), text);
    }

    #[test]
    fn gb18030_text_with_four_byte_characters_is_read() {
        // 𠀀 (U+20000, CJK extension B), 𪚥 (U+2A6A5) and 㐀 (U+3400, extension A) take four
        // bytes in GB18030; the rest is GBK.
        let text = "古籍整理说明\n\n本文收录了几个罕见字：𠀀、𪚥和㐀，它们在GB18030中占四个字节。\
                    其余都是常用字，例如中华人民共和国。\n";
        let bytes = encode(GB18030, text);
        assert!(bytes.windows(4).any(|w| w == b"\x95\x32\x82\x36"), "𠀀");
        assert!(std::str::from_utf8(&bytes).is_err());
        assert_eq!(decode_text_file(&bytes).unwrap(), text);
    }

    #[test]
    fn big5_text_is_read_as_big5_not_as_gb18030() {
        let text =
            "繁體中文說明\n\n這是一份以大五碼儲存的文字檔，內容包含常用的繁體字與標點符號。\n";
        let bytes = encode(BIG5, text);
        // The hazard: the same bytes are valid GB18030 too, into nonsense.
        let as_gb = GB18030
            .decode_without_bom_handling_and_without_replacement(&bytes)
            .expect("Big5 bytes decode as GB18030 without an error");
        assert_ne!(as_gb, text);
        assert_eq!(decode_text_file(&bytes).unwrap(), text);
    }

    #[test]
    fn binary_and_other_encodings_are_reported() {
        // Random bytes, with NULs, without, and only bytes a GB18030 character is made of
        // (all valid GB18030): reported, never decoded.
        let err = decode_text_file(&noise(4096, 0, 255))
            .unwrap_err()
            .to_string();
        assert!(err.contains("NUL"), "{err}");
        let err = decode_text_file(&noise(4096, 1, 255))
            .unwrap_err()
            .to_string();
        assert!(err.contains(NOT_READ) && err.contains("binary"), "{err}");
        let high = noise(4096, 0x81, 0xFE);
        assert!(
            GB18030
                .decode_without_bom_handling_and_without_replacement(&high)
                .is_some()
        );
        let err = decode_text_file(&high).unwrap_err().to_string();
        assert!(err.contains(NOT_READ), "{err}");
        // Latin-1 is reported, naming it — even where its bytes happen to be valid GB18030
        // (`Größe` reads `Gr鲞e`).
        for latin in [
            "Größe,Straße\nMüller,Köln\n",
            "café, résumé, naïve façade\n",
        ] {
            let bytes = encode(encoding_rs::WINDOWS_1252, latin);
            let err = decode_text_file(&bytes).unwrap_err().to_string();
            assert!(
                err.contains(NOT_READ) && err.contains("windows-1252 (Latin-1)"),
                "{err}"
            );
        }
        // GB18030 up to a byte sequence that is not, past the detector's prefix: the offset.
        let mut bytes = encode(GB18030, &"中文文本，".repeat(DETECT_BYTES / 8));
        let at = bytes.len();
        bytes.extend_from_slice(b"\xFF\xFF");
        let err = decode_text_file(&bytes).unwrap_err().to_string();
        assert!(err.contains(&format!("offset {at}")), "{err}");
    }

    proptest::proptest! {
        /// Chinese text saved as GB18030 reads back as itself (of 48 pieces or more — a
        /// character, an ASCII word, a punctuation mark, a line break: shorter text may be
        /// reported instead, never misread; see the last property).
        #[test]
        fn gb18030_text_reads_back(
            picks in proptest::collection::vec((0usize..1000, 0u8..100), 48..400),
        ) {
            let text = pick_text(SIMPLIFIED, &picks);
            let bytes = encode(GB18030, &text);
            proptest::prop_assert_eq!(decode_text_file(&bytes).unwrap(), text);
        }

        /// Big5 text reads back as itself.
        #[test]
        fn big5_text_reads_back(
            picks in proptest::collection::vec((0usize..1000, 0u8..100), 48..400),
        ) {
            let text = pick_text(TRADITIONAL, &picks);
            let bytes = encode(BIG5, &text);
            proptest::prop_assert_eq!(decode_text_file(&bytes).unwrap(), text);
        }

        /// However short, GB18030 or Big5 text is read as itself or reported: never misread.
        #[test]
        fn short_text_is_read_as_itself_or_reported(
            picks in proptest::collection::vec((0usize..1000, 0u8..100), 1..48),
            big5: bool,
        ) {
            let (pool, encoding) = if big5 { (TRADITIONAL, BIG5) } else { (SIMPLIFIED, GB18030) };
            let text = pick_text(pool, &picks);
            let bytes = encode(encoding, &text);
            // Bytes that are valid UTF-8 are read as UTF-8, by rule: a character or two of
            // GBK may be (`使` is `CA B9`, UTF-8 for `ʹ`).
            if std::str::from_utf8(&bytes).is_err()
                && let Ok(got) = decode_text_file(&bytes)
            {
                proptest::prop_assert_eq!(got, text);
            }
        }
    }

    /// Text of the `pool`'s characters, with ASCII words and numbers, punctuation and line
    /// breaks among them (and, for a Simplified pool, now and then a character of CJK
    /// extension A or B, or a euro sign).
    fn pick_text(pool: &str, picks: &[(usize, u8)]) -> String {
        let chars: Vec<char> = pool.chars().collect();
        let simplified = pool == SIMPLIFIED;
        let mut text = String::new();
        for &(i, kind) in picks {
            match kind {
                0..=69 => text.push(chars[i % chars.len()]),
                70..=79 => {
                    text.push_str(["RAG", "2024", " API ", "v1.2", " vector search ", "10%"][i % 6])
                }
                80..=89 => text.push(['，', '。', '、', '：', '“', '”', ' ', ','][i % 8]),
                90..=95 => text.push('\n'),
                _ if simplified => text.push(['𠀀', '𪚥', '㐀', '€'][i % 4]),
                _ => text.push('。'),
            }
        }
        text
    }
}
