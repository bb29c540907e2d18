//! The text analyzer: jieba segmentation for CJK, lower-cased words for Latin text, punctuation
//! and whitespace dropped, a small stop-word list for Chinese function words.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use jieba_rs::Jieba;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The analyzer's identity, recorded with every index. Change it whenever tokens can change
/// for the same text: tokenizer, segmentation mode, dictionary, stop words or normalisation.
pub const ANALYZER_IDENTITY: &str = "zhiku-jieba/1 (jieba-rs 0.11 default dictionary, search mode, no HMM; lower-case; stop-words zh-v1)";

/// The name the analyzer is registered under in the tantivy schema.
pub const TOKENIZER_NAME: &str = "zhiku_jieba";

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

/// Analyses `text` into index terms with their byte offsets.
pub fn analyze(jieba: &Jieba, text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for token in jieba.cut_for_search(text, false) {
        let word = token.word;
        if !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        let term = word.to_lowercase();
        if stop_words().contains(term.as_str()) {
            continue;
        }
        out.push((term, token.byte_start, token.byte_start + word.len()));
    }
    out
}

/// The terms of `text`, as the index sees them.
pub fn terms(text: &str) -> Vec<String> {
    analyze(&jieba(), text)
        .into_iter()
        .map(|(t, _, _)| t)
        .collect()
}

/// A tantivy tokenizer running [`analyze`]. It takes the shared jieba at its first text, not
/// when it is registered: opening an index for `status` builds no dictionary (~85 ms and
/// ~20 % of a fresh `status` at 1M chunks).
#[derive(Clone, Default)]
pub struct JiebaTokenizer {
    jieba: OnceLock<Arc<Jieba>>,
}

impl std::fmt::Debug for JiebaTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(ANALYZER_IDENTITY)
    }
}

/// The token stream of one text.
#[derive(Debug)]
pub struct JiebaTokenStream {
    tokens: Vec<Token>,
    index: usize,
}

impl Tokenizer for JiebaTokenizer {
    type TokenStream<'a> = JiebaTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        let tokens = analyze(self.jieba.get_or_init(jieba), text)
            .into_iter()
            .enumerate()
            .map(|(position, (text, from, to))| Token {
                offset_from: from,
                offset_to: to,
                position,
                text,
                position_length: 1,
            })
            .collect();
        JiebaTokenStream { tokens, index: 0 }
    }
}

impl TokenStream for JiebaTokenStream {
    fn advance(&mut self) -> bool {
        if self.index < self.tokens.len() {
            self.index += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn search_mode_adds_sub_words() {
        let t = terms("中华人民共和国");
        assert!(
            t.contains(&"中华人民共和国".to_string()) || t.contains(&"共和国".to_string()),
            "{t:?}"
        );
    }
}
