//! A dictionary-free analyzer shared by the hashing embedder and the memory lexical index.

use zhiku_text::is_cjk;

/// Lower-cased runs of letters and digits; CJK text as single characters and overlapping
/// bigrams. Punctuation and whitespace produce no tokens.
pub fn simple_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut previous_cjk: Option<char> = None;
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut tokens);
            tokens.push(c.to_string());
            if let Some(p) = previous_cjk {
                tokens.push(format!("{p}{c}"));
            }
            previous_cjk = Some(c);
        } else {
            previous_cjk = None;
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else {
                flush(&mut word, &mut tokens);
            }
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

fn flush(word: &mut String, tokens: &mut Vec<String>) {
    if !word.is_empty() {
        tokens.push(std::mem::take(word));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_text() {
        assert_eq!(
            simple_tokens("HTTP 404 错误!"),
            vec!["http", "404", "错", "误", "错误"]
        );
        assert!(simple_tokens(" ，。!").is_empty());
    }
}
