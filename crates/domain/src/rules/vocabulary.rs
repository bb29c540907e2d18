//! A team's own words for one thing: synonyms (`报销 ~ 报账`, `VPN ~ 远程接入 ~ 内网`), applied at
//! query time. A question naming one word of a group is retrieved and answered with the others
//! beside it, so that a document written with another word of the group is found and quoted.
//! Nothing in the index changes: a new group takes effect on the next question.

use zhiku_text::to_simplified;

/// The most groups a configuration may hold.
pub const MAX_GROUPS: usize = 10_000;
/// The most characters of one word of a group.
pub const MAX_WORD_CHARS: usize = 64;

/// Groups of words that name one thing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synonyms {
    /// Each group's words as written, and as matched (Simplified, lower case).
    groups: Vec<Vec<(String, String)>>,
}

impl Synonyms {
    /// The groups, each of two or more distinct words of at most [`MAX_WORD_CHARS`] characters,
    /// at most [`MAX_GROUPS`] of them; why not, otherwise.
    pub fn new(groups: Vec<Vec<String>>) -> Result<Self, String> {
        if groups.len() > MAX_GROUPS {
            return Err(format!(
                "{} synonym groups, more than {MAX_GROUPS}",
                groups.len()
            ));
        }
        let mut out = Vec::with_capacity(groups.len());
        for group in groups {
            let mut words: Vec<(String, String)> = Vec::new();
            for word in group {
                let word = word.trim().to_string();
                if word.is_empty() || word.chars().count() > MAX_WORD_CHARS {
                    return Err(format!(
                        "a synonym must be 1 to {MAX_WORD_CHARS} characters: {word:?}"
                    ));
                }
                let key = matched(&word);
                if !words.iter().any(|(_, k)| *k == key) {
                    words.push((word, key));
                }
            }
            if words.len() < 2 {
                let listed: Vec<&str> = words.iter().map(|(w, _)| w.as_str()).collect();
                return Err(format!(
                    "a synonym group needs two or more different words: {listed:?}"
                ));
            }
            out.push(words);
        }
        Ok(Self { groups: out })
    }

    /// Whether there are no groups.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// `text` with the other words of every group it names put after it ("出差怎么报账？" →
    /// "出差怎么报账？（报销）"); `None` when it names no word of a group, or already names
    /// every word of those it names. A word is named when the text holds it (Traditional and
    /// Simplified alike, Latin in any case).
    pub fn expand(&self, text: &str) -> Option<String> {
        let key = matched(text);
        let mut added: Vec<&str> = Vec::new();
        for group in &self.groups {
            if !group.iter().any(|(_, k)| key.contains(k.as_str())) {
                continue;
            }
            for (word, k) in group {
                if !key.contains(k.as_str()) && !added.contains(&word.as_str()) {
                    added.push(word);
                }
            }
        }
        (!added.is_empty()).then(|| format!("{}（{}）", text.trim_end(), added.join("、")))
    }

    /// [`expand`](Self::expand), when the expansion is at most `max_chars` characters (a
    /// query past its bound is not retrieved expanded: it stays as it was).
    pub fn expand_within(&self, text: &str, max_chars: usize) -> Option<String> {
        self.expand(text)
            .filter(|e| e.chars().nth(max_chars).is_none())
    }
}

fn matched(text: &str) -> String {
    to_simplified(text).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(g: &[&[&str]]) -> Synonyms {
        Synonyms::new(
            g.iter()
                .map(|w| w.iter().map(|s| s.to_string()).collect())
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_named_word_brings_the_others_of_its_group() {
        let s = groups(&[&["报销", "报账"], &["VPN", "远程接入", "内网"]]);
        assert_eq!(
            s.expand("出差怎么报账？").as_deref(),
            Some("出差怎么报账？（报销）")
        );
        assert_eq!(
            s.expand("在家连内网怎么办？").as_deref(),
            Some("在家连内网怎么办？（VPN、远程接入）")
        );
        // Latin in any case, Traditional as Simplified.
        assert_eq!(
            s.expand("vpn 密碼多久換？").as_deref(),
            Some("vpn 密碼多久換？（远程接入、内网）")
        );
        assert_eq!(s.expand("年假有几天？"), None);
        assert_eq!(s.expand("报销和报账一样吗？"), None);
    }

    #[test]
    fn an_expansion_past_the_bound_is_left_out() {
        let s = groups(&[&["报销", "报账"]]);
        let full = s.expand("怎么报账？").unwrap();
        let n = full.chars().count();
        assert_eq!(
            s.expand_within("怎么报账？", n).as_deref(),
            Some(full.as_str())
        );
        assert_eq!(s.expand_within("怎么报账？", n - 1), None);
    }

    #[test]
    fn a_group_of_fewer_than_two_words_is_refused() {
        for bad in [
            vec![vec!["报销".to_string()]],
            vec![vec!["报销".into(), " 报销 ".into()]],
        ] {
            assert!(Synonyms::new(bad).is_err());
        }
        assert!(Synonyms::new(vec![vec!["a".into(), "x".repeat(65)]]).is_err());
        assert!(Synonyms::new(vec![]).unwrap().is_empty());
    }
}
