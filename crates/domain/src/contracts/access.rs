//! Who may read a document, and who is asking: the per-person partition inside a scope.
//!
//! Scopes stay the coarse partition: a caller's scopes come from its credentials, and retrieval
//! never runs outside them. Inside a scope each document carries its readers ([`Access`]), and a
//! caller acting for a person ([`Principal`]) sees a document only when one of the person's
//! [`Reader`] terms is among the document's. Indexes keep a document's reader terms with each of
//! its chunks and test them inside the search, as they test the scope
//! ([`Filter`](super::Filter)).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::values::{InvalidValue, Reader};

/// The term an index keeps with each chunk of a document that not everyone in its scope may
/// read, beside one [`index term`](Access::index_terms) per reader. A chunk without it is open
/// to its whole scope, which is also what a chunk stored before access existed means, so no
/// index needs rebuilding to start filtering. (`@` never starts a metadata term.)
pub const RESTRICTED_TERM: &str = "@restricted";

/// The index term of a reader: `@` and its text.
pub fn reader_index_term(reader: &Reader) -> String {
    format!("@{}", reader.as_str())
}

/// Most readers one document may list.
pub const MAX_READERS: usize = 256;

/// Which rule gave a document its readers, so `zhiku access DOC` can say why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AccessRule {
    /// No rule applies: everyone who may read the scope.
    #[default]
    Open,
    /// The scope's default readers (`[scopes.NAME] readers` in `zhiku.toml`).
    ScopeDefault,
    /// A folder rule: the first `[[access.rules]]` whose pattern matched the document's path.
    Folder {
        /// The rule's path pattern.
        pattern: String,
    },
    /// The document's own `access` (front matter or sidecar).
    Document,
    /// Set by the writer of the document through the API.
    Api,
}

impl AccessRule {
    /// A short description for people: `open`, `scope default`, `folder rule hr/**`, …
    pub fn describe(&self) -> String {
        match self {
            Self::Open => "no rule: everyone who may read the scope".into(),
            Self::ScopeDefault => "the scope's default readers".into(),
            Self::Folder { pattern } => format!("folder rule `{pattern}`"),
            Self::Document => "the document's own `access`".into(),
            Self::Api => "set through the API".into(),
        }
    }
}

/// Who may read a document: a set of [`Reader`]s (`*` for everyone who may read its scope),
/// and the rule it came from. An empty set admits no person: only callers that read whole
/// scopes (service tokens, the local user) see the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    readers: BTreeSet<Reader>,
    #[serde(default)]
    rule: AccessRule,
}

impl Default for Access {
    fn default() -> Self {
        Self::everyone()
    }
}

impl Access {
    /// Everyone who may read the scope, by no rule.
    pub fn everyone() -> Self {
        Self {
            readers: BTreeSet::from([Reader::everyone()]),
            rule: AccessRule::Open,
        }
    }

    /// The given readers, by `rule`; at most [`MAX_READERS`].
    pub fn new(
        readers: impl IntoIterator<Item = Reader>,
        rule: AccessRule,
    ) -> Result<Self, InvalidValue> {
        let readers: BTreeSet<Reader> = readers.into_iter().collect();
        if readers.len() > MAX_READERS {
            return Err(InvalidValue::new(
                "access",
                &format!("{} readers", readers.len()),
                format!("a document lists at most {MAX_READERS} readers (use a group)"),
            ));
        }
        Ok(Self { readers, rule })
    }

    /// Parses reader texts (`user:NAME`, `group:NAME`, `*`), by `rule`.
    pub fn parse<S: AsRef<str>>(
        readers: impl IntoIterator<Item = S>,
        rule: AccessRule,
    ) -> Result<Self, InvalidValue> {
        let readers = readers
            .into_iter()
            .map(|r| Reader::new(r.as_ref().trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(readers, rule)
    }

    /// True for [`Access::everyone`]: what a document without an access field means (so its
    /// records and fingerprint are those of before access existed).
    pub fn is_unruled_open(&self) -> bool {
        self.rule == AccessRule::Open && self.readers.len() == 1 && self.is_open()
    }

    /// The readers, sorted.
    pub fn readers(&self) -> &BTreeSet<Reader> {
        &self.readers
    }

    /// The rule the readers came from.
    pub fn rule(&self) -> &AccessRule {
        &self.rule
    }

    /// True when everyone who may read the scope may read the document.
    pub fn is_open(&self) -> bool {
        self.readers.iter().any(Reader::is_everyone)
    }

    /// The reader texts, sorted.
    pub fn terms(&self) -> Vec<String> {
        self.readers.iter().map(|r| r.as_str().to_owned()).collect()
    }

    /// The terms an index keeps with each chunk: none for an open document; otherwise
    /// [`RESTRICTED_TERM`] and one [`reader_index_term`] per reader, sorted.
    pub fn index_terms(&self) -> Vec<String> {
        if self.is_open() {
            return Vec::new();
        }
        let mut terms: Vec<String> = std::iter::once(RESTRICTED_TERM.to_owned())
            .chain(self.readers.iter().map(reader_index_term))
            .collect();
        terms.sort();
        terms
    }

    /// True when `principal` is one of the readers (or everyone is).
    pub fn admits(&self, principal: &Principal) -> bool {
        principal.readers().iter().any(|r| self.readers.contains(r))
    }
}

/// A person a request acts for: their user name and groups, as the identity provider (or a
/// token's configuration) says. What they may read is every document of their scopes whose
/// [`Access`] names them, one of their groups, or everyone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    user: String,
    groups: BTreeSet<String>,
    readers: BTreeSet<Reader>,
}

impl Principal {
    /// The person `user` in `groups`; names are checked as [`Reader`] names.
    pub fn new<S: AsRef<str>>(
        user: &str,
        groups: impl IntoIterator<Item = S>,
    ) -> Result<Self, InvalidValue> {
        let mut readers = BTreeSet::from([Reader::everyone(), Reader::user(user)?]);
        let mut names = BTreeSet::new();
        for g in groups {
            let g = g.as_ref();
            readers.insert(Reader::group(g)?);
            names.insert(g.to_owned());
        }
        Ok(Self {
            user: user.to_owned(),
            groups: names,
            readers,
        })
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The groups.
    pub fn groups(&self) -> &BTreeSet<String> {
        &self.groups
    }

    /// Every reader term the principal matches: `*`, `user:NAME`, and `group:G` per group.
    pub fn readers(&self) -> &BTreeSet<Reader> {
        &self.readers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_parsed_and_checked() {
        for good in [
            "*",
            "user:li.lei@corp",
            "group:hr",
            "group:研发部",
            "user:a b",
        ] {
            assert!(Reader::new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "hr",
            "team:hr",
            "user:",
            "group: hr",
            "user:x\n",
            "**",
            "user:\u{7}",
        ] {
            assert!(Reader::new(bad).is_err(), "{bad:?}");
        }
        assert!(Reader::new(format!("group:{}", "x".repeat(257))).is_err());
    }

    #[test]
    fn a_principal_is_admitted_by_name_group_or_everyone() {
        let li = Principal::new("li.lei@corp", ["hr", "all"]).unwrap();
        let wang = Principal::new("wang@corp", ["eng"]).unwrap();
        let hr = Access::parse(["group:hr"], AccessRule::Document).unwrap();
        assert!(hr.admits(&li) && !hr.admits(&wang));
        let named = Access::parse(["user:wang@corp"], AccessRule::Api).unwrap();
        assert!(named.admits(&wang) && !named.admits(&li));
        assert!(Access::everyone().admits(&li) && Access::everyone().admits(&wang));
        let nobody = Access::new([], AccessRule::Document).unwrap();
        assert!(!nobody.admits(&li) && !nobody.admits(&wang));
        // A group and a user of the same name are different readers.
        let user_hr = Principal::new("hr", Vec::<String>::new()).unwrap();
        assert!(!hr.admits(&user_hr));
    }

    #[test]
    fn access_round_trips_and_defaults_to_everyone() {
        let a = Access::parse(
            ["group:hr", "user:li.lei@corp"],
            AccessRule::Folder {
                pattern: "hr/**".into(),
            },
        )
        .unwrap();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            r#"{"readers":["group:hr","user:li.lei@corp"],"rule":{"kind":"folder","pattern":"hr/**"}}"#
        );
        assert_eq!(serde_json::from_str::<Access>(&text).unwrap(), a);
        assert!(serde_json::from_str::<Access>(r#"{"readers":["team:x"]}"#).is_err());
        assert!(Access::default().is_open());
        assert_eq!(a.terms(), vec!["group:hr", "user:li.lei@corp"]);
        let many: Vec<String> = (0..=MAX_READERS).map(|i| format!("user:u{i}")).collect();
        assert!(Access::parse(&many, AccessRule::Document).is_err());
    }
}
