//! zhiku's lexical analyzer, one copy for every lexical index (tantivy's BM25 in the embedded
//! store, Qdrant's sparse vectors in a cluster), so that both produce the same terms under one
//! [`ANALYZER_IDENTITY`]: Traditional Chinese folded into Simplified, then jieba segmentation
//! for CJK, lower-cased words for Latin text, punctuation and whitespace dropped, a small
//! stop-word list for Chinese function words; and beside the words, in a field of their own
//! ([`pairs`]), every Han character and every two adjacent ones of the title and content read
//! together ([`titled`]) — dictionary-free terms that still match what jieba's Simplified
//! dictionary splits (names, Taiwan vocabulary, a trade's terms), weighed [`PAIRS_WEIGHT`] in a
//! query. A field of its own, not more terms in the words' field: there they would lengthen
//! every chunk and change the words' own scores.
//!
//! jieba's dictionary is Simplified: on Traditional text it falls back to short pieces and the
//! BM25 terms of a Traditional question and a Simplified passage never meet. So every text is
//! first converted with OpenCC's Traditional→Simplified tables (`zhiku_text::to_simplified`), at
//! index and at query time alike, and segmented in its Simplified form.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use jieba_rs::Jieba;

/// The analyzer's identity, recorded with every index. Change it whenever tokens can change
/// for the same text: tokenizer, segmentation mode, dictionary, stop words or normalisation.
pub const ANALYZER_IDENTITY: &str = "zhiku-jieba/3 (Traditional folded to Simplified: OpenCC t2s, ferrous-opencc 0.4; jieba-rs 0.11 default dictionary, search mode, no HMM; lower-case; stop-words zh-v1; beside it a field of Han unigrams and bigrams of title and content, query weight 0.6)";

/// The weight of the Han-pairs field ([`pairs`]) in a query, against the words' 1. Chosen on
/// half of each dev set, the other half reported (docs/measurements.md): the weight with the
/// best hit@1 on DRCD's even passages (native Traditional) among those that keep CMRC's even
/// questions at or above the words alone and the sample knowledge base's golden set above its
/// floor; 0.6 and 0.65 tied, the lower taken.
pub const PAIRS_WEIGHT: f32 = 0.6;

/// A chunk's title and text as its pairs field reads them: one text, the title first, as a
/// passage is read with its heading. A field of title pairs on its own scored every passage of
/// an article alike by its title and outweighed their content (DRCD's even passages: hit@1
/// 0.9325 with a title-pairs field, 0.9427 read together, at the same weight).
pub fn titled(title: &str, text: &str) -> String {
    if title.is_empty() {
        text.to_string()
    } else {
        format!("{title}\n{text}")
    }
}

/// Chinese function words and question words that carry no topic. Kept short on purpose:
/// BM25's idf already discounts frequent words; these are the ones that still add noise.
pub const STOP_WORDS_ZH: &[&str] = &[
    "的",
    "了",
    "是",
    "在",
    "和",
    "与",
    "及",
    "或",
    "也",
    "都",
    "而",
    "被",
    "把",
    "对",
    "从",
    "向",
    "这",
    "那",
    "之",
    "其",
    "于",
    "以",
    "为",
    "由",
    "将",
    "就",
    "并",
    "等",
    "着",
    "过",
    "个",
    "中",
    "吗",
    "呢",
    "吧",
    "啊",
    "哪",
    "哪些",
    "哪个",
    "什么",
    "怎么",
    "怎样",
    "如何",
    "为什么",
    "多少",
    "几",
    "谁",
    "是否",
    "有没有",
    "一个",
    "这个",
    "那个",
    "这些",
    "那些",
    "我们",
    "你们",
    "他们",
];

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS_ZH.iter().copied().collect())
}

/// The shared jieba instance (loading the dictionary takes a few hundred milliseconds).
pub fn jieba() -> Arc<Jieba> {
    static JIEBA: OnceLock<Arc<Jieba>> = OnceLock::new();
    JIEBA.get_or_init(|| Arc::new(Jieba::new())).clone()
}

/// A team's own words that jieba must keep whole (product names, project code names, a
/// trade's terms), in jieba's dictionary format: one entry per line, `word [frequency] [tag]`,
/// `#` starting a comment. A word without a frequency gets the one that keeps it whole
/// (jieba's `suggest_freq`). Words are kept in their Simplified form, as text is segmented.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDictionary {
    /// Entries by word: frequency and tag as given.
    entries: std::collections::BTreeMap<String, (Option<usize>, Option<String>)>,
}

impl UserDictionary {
    /// The most entries a dictionary may hold.
    pub const MAX_ENTRIES: usize = 100_000;
    /// The longest word, in characters.
    pub const MAX_WORD_CHARS: usize = 32;

    /// Parses a dictionary text (see the type's documentation); the line and reason of the
    /// first bad entry on error.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            out.add(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        }
        Ok(out)
    }

    /// Adds one entry, `word [frequency] [tag]`.
    pub fn add(&mut self, entry: &str) -> Result<(), String> {
        let mut parts = entry.split_whitespace();
        let Some(word) = parts.next() else {
            return Err("an empty entry".into());
        };
        if word.chars().count() > Self::MAX_WORD_CHARS {
            return Err(format!(
                "\"{word}\" is longer than {} characters",
                Self::MAX_WORD_CHARS
            ));
        }
        if !word.chars().any(char::is_alphanumeric) || word.chars().any(char::is_control) {
            return Err(format!("\"{word}\" is no word"));
        }
        let (mut freq, mut tag) = (None, None);
        for part in parts {
            match part.parse::<usize>() {
                Ok(f) if freq.is_none() && tag.is_none() => freq = Some(f.clamp(1, 10_000_000)),
                _ if tag.is_none()
                    && part.len() <= 8
                    && part.chars().all(|c| c.is_ascii_alphabetic()) =>
                {
                    tag = Some(part.to_string());
                }
                _ => return Err(format!("\"{entry}\" is not `word [frequency] [tag]`")),
            }
        }
        if self.entries.len() >= Self::MAX_ENTRIES {
            return Err(format!("more than {} entries", Self::MAX_ENTRIES));
        }
        let word = zhiku_text::to_simplified(word).to_lowercase();
        self.entries.insert(word, (freq, tag));
        Ok(())
    }

    /// Adds `other`'s entries (its entry for a word both hold wins).
    pub fn merge(&mut self, other: Self) -> Result<(), String> {
        for (word, entry) in other.entries {
            if !self.entries.contains_key(&word) && self.entries.len() >= Self::MAX_ENTRIES {
                return Err(format!("more than {} entries", Self::MAX_ENTRIES));
            }
            self.entries.insert(word, entry);
        }
        Ok(())
    }

    /// True when it holds no word.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Its words, in their Simplified, lower-case form.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The dictionary as text, one entry per line in word order: what [`parse`](Self::parse)
    /// reads back into an equal dictionary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (word, (freq, tag)) in &self.entries {
            out.push_str(word);
            if let Some(f) = freq {
                out.push_str(&format!(" {f}"));
            }
            if let Some(t) = tag {
                out.push_str(&format!(" {t}"));
            }
            out.push('\n');
        }
        out
    }

    /// The first 12 hex digits of the SHA-256 of [`to_text`](Self::to_text).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.to_text().as_bytes());
        digest[..6].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The words one of `self` and `other` holds and the other does not, or holds with
    /// another frequency or tag: the words whose chunks segment differently.
    pub fn changed_words(&self, other: &Self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for (word, entry) in &self.entries {
            if other.entries.get(word) != Some(entry) {
                out.insert(word.clone());
            }
        }
        for word in other.entries.keys() {
            if !self.entries.contains_key(word) {
                out.insert(word.clone());
            }
        }
        out
    }
}

/// The analyzer a lexical index runs: jieba with the default dictionary, or with a team's
/// [`UserDictionary`] added. Cheap to clone. Its jieba is built at its first text, not when
/// the analyzer is made (opening an index for `status` builds no dictionary), and one jieba per
/// distinct dictionary is shared for the life of the process.
#[derive(Clone, Default)]
pub struct Analyzer {
    dictionary: Arc<UserDictionary>,
    jieba: Arc<OnceLock<Arc<Jieba>>>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.identity())
    }
}

impl PartialEq for Analyzer {
    fn eq(&self, other: &Self) -> bool {
        self.dictionary == other.dictionary
    }
}

impl Analyzer {
    /// The analyzer with `dictionary`'s words added to jieba's default dictionary.
    pub fn with_dictionary(dictionary: UserDictionary) -> Self {
        Self {
            dictionary: Arc::new(dictionary),
            jieba: Arc::default(),
        }
    }

    /// The user dictionary (empty for the default analyzer).
    pub fn dictionary(&self) -> &UserDictionary {
        &self.dictionary
    }

    /// [`ANALYZER_IDENTITY`], and the user dictionary's fingerprint and size when there is one.
    pub fn identity(&self) -> String {
        if self.dictionary.is_empty() {
            ANALYZER_IDENTITY.to_string()
        } else {
            format!(
                "{ANALYZER_IDENTITY}{DICTIONARY_MARK}{} ({} words)",
                self.dictionary.fingerprint(),
                self.dictionary.entries.len()
            )
        }
    }

    /// The index terms of `text` with their byte ranges (see [`analyze`]).
    pub fn analyze(&self, text: &str) -> Vec<(String, usize, usize)> {
        analyze(self.jieba(), text)
    }

    /// The index terms of `text`.
    pub fn terms(&self, text: &str) -> Vec<String> {
        self.analyze(text).into_iter().map(|(t, _, _)| t).collect()
    }

    /// The jieba this analyzer segments with, built on first use.
    pub fn jieba(&self) -> &Jieba {
        self.jieba.get_or_init(|| {
            if self.dictionary.is_empty() {
                return jieba();
            }
            static BUILT: OnceLock<Mutex<HashMap<String, Arc<Jieba>>>> = OnceLock::new();
            let mut built = BUILT
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            built
                .entry(self.dictionary.fingerprint())
                .or_insert_with(|| {
                    let mut jieba = Jieba::new();
                    for (word, (freq, tag)) in &self.dictionary.entries {
                        jieba.add_word(word, *freq, Some(tag.as_deref().unwrap_or("nz")));
                    }
                    Arc::new(jieba)
                })
                .clone()
        })
    }
}

/// What an analyzer identity with a user dictionary has after [`ANALYZER_IDENTITY`].
const DICTIONARY_MARK: &str = "; user dictionary ";

/// The analyzer part of a recorded identity, without its user dictionary's fingerprint.
pub fn base_identity(identity: &str) -> &str {
    identity
        .split_once(DICTIONARY_MARK)
        .map_or(identity, |(base, _)| base)
}

/// Analyses `text` into index terms with their byte offsets in `text`.
///
/// The text is segmented in its Simplified form ([`zhiku_text::to_simplified`]); a
/// converted text of as many characters maps back character by character, so the offsets are
/// exact. Where a phrase conversion changed the length (rare: t2s converts character for
/// character except for a few phrases), a token's offsets are those of the same character
/// positions in `text`, clamped to its end: still within the text and in order, which is all
/// the index needs (it records no offsets or positions).
pub fn analyze(jieba: &Jieba, text: &str) -> Vec<(String, usize, usize)> {
    let simplified = zhiku_text::to_simplified(text);
    let back = match &simplified {
        Cow::Borrowed(_) => None,
        Cow::Owned(converted) => Some(OffsetMap::new(text, converted)),
    };
    let mut out = Vec::new();
    for token in jieba.cut_for_search(&simplified, false) {
        let word = token.word;
        if !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        let term = word.to_lowercase();
        if stop_words().contains(term.as_str()) {
            continue;
        }
        let (from, to) = (token.byte_start, token.byte_start + word.len());
        out.push(match &back {
            None => (term, from, to),
            Some(map) => (term, map.original(from), map.original(to)),
        });
    }
    out
}

/// Han characters: what [`pairs`] are made of.
fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

/// The dictionary-free terms of `text` with their byte ranges in `text`: in its Simplified
/// form (the same fold as [`analyze`]), each Han character but the one-character stop words,
/// and each two adjacent Han characters; nothing across anything else (space, a digit,
/// punctuation, Latin). Bigrams alone were measured too (docs/measurements.md): 40 % of the
/// query time, but below the unigram + bigram peer on DRCD and short of `examples/kb`'s
/// several-part floor.
pub fn pairs(text: &str) -> Vec<(String, usize, usize)> {
    let simplified = zhiku_text::to_simplified(text);
    let back = match &simplified {
        Cow::Borrowed(_) => None,
        Cow::Owned(converted) => Some(OffsetMap::new(text, converted)),
    };
    let place = |from: usize, to: usize| match &back {
        None => (from, to),
        Some(map) => (map.original(from), map.original(to)),
    };
    let mut out = Vec::new();
    let mut prev: Option<(usize, char)> = None;
    for (at, c) in simplified.char_indices() {
        if !is_han(c) {
            prev = None;
            continue;
        }
        let end = at + c.len_utf8();
        let (from, to) = place(at, end);
        let single = c.to_string();
        // A function word alone is no topic (as in the words' field); in a pair it still is.
        if !stop_words().contains(single.as_str()) {
            out.push((single, from, to));
        }
        if let Some((start, p)) = prev {
            let (from, to) = place(start, end);
            out.push((format!("{p}{c}"), from, to));
        }
        prev = Some((at, c));
    }
    out
}

/// A word of a text with its part of speech, as jieba tags it (`n` noun, `ns` place name,
/// `nr` person, `nt` organisation, `nz` other proper noun, `eng` Latin word, `v` verb, `t` time,
/// `m` numeral, `x` unknown, …), and its byte range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    /// The word as the text writes it (Traditional stays Traditional).
    pub word: String,
    /// jieba's part-of-speech tag.
    pub tag: String,
    /// Byte range of the word in the text.
    pub start: usize,
    /// End of the byte range.
    pub end: usize,
}

/// The words of `text` with their parts of speech, in order, whitespace left out: segmented
/// and tagged in the Simplified form, mapped back to `text` as [`analyze`] maps its terms.
///
/// Without `guess_unknown` (as the index segments), an unknown word falls apart into the
/// dictionary's pieces ("能报" stays "能" and "报"); with it, jieba's HMM joins unknown
/// characters into new words, which finds a name the dictionary lacks ("邵伯温") and also
/// invents words that are none ("能报").
pub fn tag(text: &str, guess_unknown: bool) -> Vec<Tagged> {
    let jieba = jieba();
    let simplified = zhiku_text::to_simplified(text);
    let back = match &simplified {
        Cow::Borrowed(_) => None,
        Cow::Owned(converted) => Some(OffsetMap::new(text, converted)),
    };
    let mut out: Vec<Tagged> = Vec::new();
    for t in jieba.tag(&simplified, guess_unknown) {
        if t.word.trim().is_empty() {
            continue;
        }
        let (start, end) = match &back {
            None => (t.byte_start, t.byte_end),
            Some(map) => (map.original(t.byte_start), map.original(t.byte_end)),
        };
        if start >= end {
            continue;
        }
        out.push(Tagged {
            word: text[start..end].to_string(),
            tag: t.tag.to_string(),
            start,
            end,
        });
    }
    out
}

/// Byte offsets of a converted text mapped back to the original, by character position.
struct OffsetMap {
    /// Byte offset in the converted text of each character, ascending.
    converted: Vec<usize>,
    /// Byte offset in the original text of each character, and its length at the end.
    original: Vec<usize>,
}

impl OffsetMap {
    fn new(original: &str, converted: &str) -> Self {
        let mut starts: Vec<usize> = original.char_indices().map(|(i, _)| i).collect();
        starts.push(original.len());
        Self {
            converted: converted.char_indices().map(|(i, _)| i).collect(),
            original: starts,
        }
    }

    /// The original byte offset of the character that starts at converted byte `at` (or of
    /// the end, for the end).
    fn original(&self, at: usize) -> usize {
        let position = self.converted.partition_point(|&b| b < at);
        self.original[position.min(self.original.len() - 1)]
    }
}

/// The terms of `text`, as the index sees them.
pub fn terms(text: &str) -> Vec<String> {
    analyze(&jieba(), text)
        .into_iter()
        .map(|(t, _, _)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_han_characters_and_their_neighbours_mapped_back_to_the_text() {
        let text = "特休假 7 天，員工a";
        let got: Vec<(String, &str)> = pairs(text)
            .into_iter()
            .map(|(t, from, to)| (t, &text[from..to]))
            .collect();
        let terms: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        // Folded to Simplified; nothing across the space, the digit, the comma or a letter.
        assert_eq!(
            terms,
            ["特", "休", "特休", "假", "休假", "天", "员", "工", "员工"]
        );
        let spans: Vec<&str> = got.iter().map(|(_, s)| *s).collect();
        assert_eq!(spans[8], "員工");
        assert!(pairs("abc 123 ，。的").is_empty());
        assert_eq!(pairs("我的")[1].0, "我的");
    }

    #[test]
    fn mixed_chinese_english_and_digits() {
        let t = terms("bge-small-zh-v1.5 的维度");
        assert!(t.contains(&"bge".to_string()), "{t:?}");
        assert!(t.contains(&"small".to_string()), "{t:?}");
        assert!(t.contains(&"维度".to_string()), "{t:?}");
        assert!(!t.contains(&"的".to_string()));
        let t = terms("HTTP 404 错误");
        assert!(
            t.contains(&"http".to_string())
                && t.contains(&"404".to_string())
                && t.contains(&"错误".to_string()),
            "{t:?}"
        );
    }

    #[test]
    fn punctuation_and_whitespace_give_no_terms() {
        assert!(terms("，。！？ ... \r\n\t").is_empty());
    }

    #[test]
    fn traditional_and_simplified_forms_give_the_same_terms() {
        for (hant, hans) in [
            (
                "《戰國無雙3》是由光榮和ω-force開發的戰國無雙系列的正統第三續作。",
                "《战国无双3》是由光荣和ω-force开发的战国无双系列的正统第三续作。",
            ),
            (
                "這些資料庫的檢索結果會被重新排序嗎？",
                "这些资料库的检索结果会被重新排序吗？",
            ),
            ("乾隆皇帝發布了頭髮的規定", "乾隆皇帝发布了头发的规定"),
        ] {
            assert_eq!(terms(hant), terms(hans), "{hant} / {hans}");
        }
    }

    #[test]
    fn mixed_script_text_is_folded_to_one_form() {
        let t = terms("香港國際機場和北京首都国际机场");
        assert!(t.contains(&"国际".to_string()), "{t:?}");
        assert!(t.contains(&"机场".to_string()), "{t:?}");
        assert!(
            !t.iter().any(|w| w.contains('國') || w.contains('機')),
            "{t:?}"
        );
    }

    #[test]
    fn non_cjk_text_is_untouched() {
        let text = "Tokio 1.54 runs HTTP/2 on async Rust; naïve café 東京"; // kana-free
        let t = terms(text);
        for w in ["tokio", "54", "http", "async", "rust", "caf", "东京"] {
            assert!(t.contains(&w.to_string()), "{w}: {t:?}");
        }
        for latin in ["BM25 over chunk content, title weighted", "naïve café, Ærø"] {
            assert!(matches!(zhiku_text::to_simplified(latin), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn offsets_stay_within_the_original_text() {
        for text in [
            "記憶體與軟體的資訊",
            "計程車 taxi 出租車",
            "中华人民共和国",
            "a",
        ] {
            for (term, from, to) in analyze(&jieba(), text) {
                assert!(
                    from <= to && to <= text.len(),
                    "{term} {from}..{to} in {text}"
                );
                assert!(text.is_char_boundary(from) && text.is_char_boundary(to));
            }
        }
        // A character-for-character conversion maps back exactly.
        let text = "開發者們";
        let spans: Vec<&str> = analyze(&jieba(), text)
            .into_iter()
            .map(|(_, from, to)| &text[from..to])
            .collect();
        assert!(spans.contains(&"開發"), "{spans:?}");
    }

    #[test]
    fn tagging_names_places_and_keeps_the_text_s_script() {
        let tagged = tag("广州园区停车每小时多少钱？", false);
        let place = tagged.iter().find(|t| t.word == "广州").expect("广州");
        assert_eq!(place.tag, "ns", "{tagged:?}");
        let tagged = tag("廣州園區停車", false);
        assert_eq!(tagged[0].word, "廣州", "{tagged:?}");
        assert_eq!(tagged[0].tag, "ns", "{tagged:?}");
        for text in ["記憶體與軟體", "a b", "", "VPN 密码"] {
            for t in tag(text, true) {
                assert_eq!(&text[t.start..t.end], t.word);
            }
        }
    }

    #[test]
    fn search_mode_adds_sub_words() {
        let t = terms("中华人民共和国");
        assert!(
            t.contains(&"中华人民共和国".to_string()) || t.contains(&"共和国".to_string()),
            "{t:?}"
        );
    }
}
