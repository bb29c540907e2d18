//! Validated string newtypes. Each constructor checks its rule, so an invalid value cannot exist;
//! deserialisation goes through the same constructor.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A value was rejected by a contract constructor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} {value:?}: {reason}")]
pub struct InvalidValue {
    /// The contract type that refused the value, e.g. `"scope"`.
    pub kind: &'static str,
    /// The refused value, shortened to 80 characters.
    pub value: String,
    /// Why it was refused.
    pub reason: String,
}

impl InvalidValue {
    pub(crate) fn new(kind: &'static str, value: &str, reason: impl Into<String>) -> Self {
        Self {
            kind,
            value: value.chars().take(80).collect(),
            reason: reason.into(),
        }
    }
}

/// Lower-case hex of the sha256 of `bytes`.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    let digest = Sha256::digest(bytes.as_ref());
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0x0f), 16).unwrap_or('0'));
    }
    out
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Declares a string newtype backed by `Arc<str>` with a validating constructor.
macro_rules! string_newtype {
    ($(#[$meta:meta])* $name:ident, $kind:literal, $check:path) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(Arc<str>);

        impl $name {
            /// Validates `value` and wraps it.
            pub fn new(value: impl AsRef<str>) -> Result<Self, InvalidValue> {
                let value = value.as_ref();
                match $check(value) {
                    Ok(()) => Ok(Self(Arc::from(value))),
                    Err(reason) => Err(InvalidValue::new($kind, value, reason)),
                }
            }

            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidValue;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = InvalidValue;
            fn try_from(value: &str) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0.to_string()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }
    };
}

fn check_doc_id(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if s.chars().count() > 512 {
        return Err("must be at most 512 characters");
    }
    if has_control(s) {
        return Err("must not contain control characters");
    }
    if s.trim() != s {
        return Err("must not start or end with whitespace");
    }
    Ok(())
}

/// Longest name of a user or group in a [`Reader`], in bytes.
pub const MAX_READER_NAME: usize = 256;

fn check_reader(s: &str) -> Result<(), &'static str> {
    if s == "*" {
        return Ok(());
    }
    let Some((kind, name)) = s.split_once(':') else {
        return Err("must be `*`, `user:NAME` or `group:NAME`");
    };
    if kind != "user" && kind != "group" {
        return Err("must be `*`, `user:NAME` or `group:NAME`");
    }
    if name.is_empty() || name.len() > MAX_READER_NAME {
        return Err("the name must be 1 to 256 bytes");
    }
    if name.trim() != name || name.chars().any(char::is_control) {
        return Err("the name must not start or end with a space or hold control characters");
    }
    Ok(())
}

fn check_scope(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if s.len() > 128 {
        return Err("must be at most 128 characters");
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'))
    {
        return Err("may contain only ASCII letters, digits and _ - . : /");
    }
    Ok(())
}

fn check_source(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if s.chars().count() > 2048 {
        return Err("must be at most 2048 characters");
    }
    if has_control(s) {
        return Err("must not contain control characters");
    }
    Ok(())
}

fn check_title(s: &str) -> Result<(), &'static str> {
    if s.chars().count() > 1024 {
        return Err("must be at most 1024 characters");
    }
    if has_control(s) {
        return Err("must not contain control characters or line breaks");
    }
    Ok(())
}

fn check_revision(s: &str) -> Result<(), &'static str> {
    if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err("must be 64 lower-case hex digits (a sha256)")
    }
}

fn check_locale(s: &str) -> Result<(), &'static str> {
    let mut parts = s.split('-');
    let language = parts.next().unwrap_or_default();
    if !(2..=3).contains(&language.len()) || !language.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err("must start with a 2-3 letter lower-case language code, like zh or en");
    }
    for part in parts {
        if !(1..=8).contains(&part.len()) || !part.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err("subtags must be 1-8 ASCII letters or digits, like zh-CN");
        }
    }
    Ok(())
}

string_newtype!(
    /// A document's stable identity. By default the loader derives it from the source path
    /// relative to the knowledge-base root, never from the title.
    DocId,
    "document id",
    check_doc_id
);

string_newtype!(
    /// An access scope. Retrieval always runs inside a set of scopes that comes from the
    /// caller's identity.
    Scope,
    "scope",
    check_scope
);

string_newtype!(
    /// One who may read a document: `user:NAME` (a person, as the identity provider names
    /// them: `sub` or `email`, compared exactly), `group:NAME` (everyone in the group), or `*`
    /// (everyone who may read the document's scope). The text is also the term indexes store
    /// and filter on.
    Reader,
    "reader",
    check_reader
);

string_newtype!(
    /// Where a document came from, e.g. `examples/kb/chunking.md` or `corpus.jsonl#DEV_0`.
    Source,
    "source",
    check_source
);

string_newtype!(
    /// A one-line document title; may be empty.
    Title,
    "title",
    check_title
);

string_newtype!(
    /// The sha256 (lower-case hex) of a document's content.
    Revision,
    "revision",
    check_revision
);

string_newtype!(
    /// A BCP 47 style language tag such as `zh`, `zh-CN` or `en`.
    Locale,
    "locale",
    check_locale
);

impl Scope {
    /// The scope given to documents that do not declare one.
    pub fn default_scope() -> Self {
        Self(Arc::from("default"))
    }
}

impl Reader {
    /// `*`: everyone who may read the scope.
    pub fn everyone() -> Self {
        Self(Arc::from("*"))
    }

    /// `user:NAME`.
    pub fn user(name: &str) -> Result<Self, InvalidValue> {
        Self::new(format!("user:{name}"))
    }

    /// `group:NAME`.
    pub fn group(name: &str) -> Result<Self, InvalidValue> {
        Self::new(format!("group:{name}"))
    }

    /// True for `*`.
    pub fn is_everyone(&self) -> bool {
        &*self.0 == "*"
    }
}

impl Revision {
    /// The revision of `content`: its sha256.
    pub fn of_content(content: &str) -> Self {
        Self(Arc::from(sha256_hex(content)))
    }
}

impl Locale {
    /// `zh`, the default for text that is mostly CJK.
    pub fn zh() -> Self {
        Self(Arc::from("zh"))
    }

    /// `en`.
    pub fn en() -> Self {
        Self(Arc::from("en"))
    }

    /// Guesses `zh` or `en` from the share of CJK characters among letters.
    pub fn detect(text: &str) -> Self {
        let (mut cjk, mut letters) = (0usize, 0usize);
        for c in text.chars().take(4000) {
            if zhiku_text::is_cjk(c) {
                cjk += 1;
                letters += 1;
            } else if c.is_alphabetic() {
                letters += 1;
            }
        }
        if letters > 0 && cjk * 5 >= letters {
            Self::zh()
        } else {
            Self::en()
        }
    }

    /// The language subtag, e.g. `zh` for `zh-CN`.
    pub fn language(&self) -> &str {
        self.0.split('-').next().unwrap_or(&self.0)
    }

    /// Every prefix of the tag, lower-cased: `zh-Hans-CN` gives `zh`, `zh-hans`, `zh-hans-cn`.
    /// A locale filter matches a chunk when the filter's (lower-cased) tag is one of these.
    pub fn match_terms(&self) -> Vec<String> {
        let lower = self.0.to_ascii_lowercase();
        let mut out = Vec::new();
        let mut end = 0;
        for part in lower.split('-') {
            end += part.len();
            out.push(lower[..end].to_string());
            end += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_refuse_invalid_values() {
        assert!(DocId::new("").is_err());
        assert!(DocId::new(" padded").is_err());
        assert!(DocId::new("a\nb").is_err());
        assert!(DocId::new("guides/切分.md").is_ok());
        assert!(Scope::new("team a").is_err());
        assert!(Scope::new("team-a").is_ok());
        assert!(Revision::new("abc").is_err());
        assert!(Locale::new("ZH").is_err());
        assert!(Locale::new("zh-CN").is_ok());
        assert!(Title::new("line\nbreak").is_err());
        assert!(Title::new("").is_ok());
    }

    #[test]
    fn deserialisation_validates() {
        let bad: Result<Scope, _> = serde_json::from_str("\"a b\"");
        assert!(bad.is_err());
        let good: Scope = serde_json::from_str("\"a\"").unwrap();
        assert_eq!(good.as_str(), "a");
    }

    #[test]
    fn revision_is_sha256_of_content() {
        assert_eq!(
            Revision::of_content("abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn locale_detection_and_terms() {
        assert_eq!(
            Locale::detect("切分策略改变后 chunkId 会怎样").as_str(),
            "zh"
        );
        assert_eq!(Locale::detect("How does chunking work?").as_str(), "en");
        let l = Locale::new("zh-Hans-CN").unwrap();
        assert_eq!(l.match_terms(), vec!["zh", "zh-hans", "zh-hans-cn"]);
        assert_eq!(l.language(), "zh");
    }
}
