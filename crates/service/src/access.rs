//! Who may read a document that does not say so itself: folder rules and scope defaults.
//!
//! A document's own readers (front matter, sidecar, the API) win. Otherwise the first folder
//! rule whose pattern matches its source path gives them (`access_rules = ["hr/** = group:hr"]`,
//! gitignore-style globs: `*` stays inside one folder, `**` crosses folders), else its scope's
//! default (`scope_readers = ["finance = group:finance"]`), else everyone who may read the
//! scope. The rules are applied when a document is indexed; a document whose recorded readers
//! no longer follow the rules is read again at the next index run (its text unchanged, so
//! nothing is embedded: the indexer replaces its records).

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use globset::{GlobBuilder, GlobMatcher};
use zhiku_domain::{Access, AccessRule, DocAbout, Document, Scope};

/// The folder rules and scope defaults of a knowledge base.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    rules: Vec<(GlobMatcher, Access)>,
    scopes: BTreeMap<Scope, Access>,
}

impl AccessPolicy {
    /// Folder rules, first match wins (`(pattern, readers)`), and scope defaults.
    pub fn new(rules: &[(String, Vec<String>)], scopes: &[(Scope, Vec<String>)]) -> Result<Self> {
        let mut policy = Self::default();
        for (pattern, readers) in rules {
            let glob = GlobBuilder::new(pattern.trim_start_matches('/'))
                .literal_separator(true)
                .build()
                .with_context(|| format!("access rule {pattern:?} is not a valid path pattern"))?;
            let rule = AccessRule::Folder {
                pattern: pattern.clone(),
            };
            let access =
                Access::parse(readers, rule).with_context(|| format!("access rule {pattern:?}"))?;
            policy.rules.push((glob.compile_matcher(), access));
        }
        for (scope, readers) in scopes {
            if policy.scopes.contains_key(scope) {
                bail!("scope_readers names scope {scope} twice");
            }
            let access = Access::parse(readers, AccessRule::ScopeDefault)
                .with_context(|| format!("scope_readers for {scope}"))?;
            policy.scopes.insert(scope.clone(), access);
        }
        Ok(policy)
    }

    /// The readers of a document at `source` in `scope` that names none itself.
    pub fn readers_for(&self, source: &str, scope: &Scope) -> Access {
        let path = source.trim_start_matches('/');
        if let Some((_, access)) = self.rules.iter().find(|(glob, _)| glob.is_match(path)) {
            return access.clone();
        }
        self.scopes
            .get(scope)
            .cloned()
            .unwrap_or_else(Access::everyone)
    }

    /// `doc` with the readers the rules give it, unless it names its own.
    pub fn apply(&self, doc: Document) -> Document {
        if names_its_own(doc.attributes().access.rule()) {
            return doc;
        }
        let a = doc.attributes();
        let access = self.readers_for(a.source.as_str(), &a.scope);
        doc.with_access(access)
    }

    /// True when what the catalog recorded of a document no longer follows the rules (so it
    /// must be read again to take its new readers).
    pub fn is_stale(&self, about: &DocAbout) -> bool {
        !names_its_own(about.access.rule())
            && self.readers_for(&about.source, &about.scope) != about.access
    }
}

fn names_its_own(rule: &AccessRule) -> bool {
    matches!(rule, AccessRule::Document | AccessRule::Api)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::{DocId, Source};

    fn doc(path: &str, scope: &str, own: Option<&[&str]>) -> Document {
        let mut b = Document::builder(
            DocId::new(path).unwrap(),
            Source::new(path).unwrap(),
            "text",
        )
        .scope(Scope::new(scope).unwrap());
        if let Some(readers) = own {
            b = b.access(Access::parse(readers, AccessRule::Document).unwrap());
        }
        b.build()
    }

    fn policy() -> AccessPolicy {
        AccessPolicy::new(
            &[
                ("hr/**".into(), vec!["group:hr".into()]),
                ("hr/board/*.md".into(), vec!["user:ceo@corp".into()]),
                ("*.pdf".into(), vec!["group:readers".into()]),
            ],
            &[(Scope::new("finance").unwrap(), vec!["group:finance".into()])],
        )
        .unwrap()
    }

    #[test]
    fn the_first_matching_rule_then_the_scope_default_then_everyone() {
        let p = policy();
        let readers = |path: &str, scope: &str, own: Option<&[&str]>| {
            let d = p.apply(doc(path, scope, own));
            let a = &d.attributes().access;
            (a.terms(), a.rule().clone())
        };
        let folder = |pattern: &str| AccessRule::Folder {
            pattern: pattern.into(),
        };
        assert_eq!(
            readers("hr/pay/2024.md", "default", None),
            (vec!["group:hr".into()], folder("hr/**"))
        );
        // First match wins: hr/** comes before the board rule.
        assert_eq!(
            readers("hr/board/minutes.md", "default", None).1,
            folder("hr/**")
        );
        // `*` stays inside one folder.
        assert_eq!(readers("a.pdf", "default", None).1, folder("*.pdf"));
        assert_eq!(readers("docs/a.pdf", "default", None).1, AccessRule::Open);
        assert_eq!(
            readers("notes.md", "finance", None),
            (vec!["group:finance".into()], AccessRule::ScopeDefault)
        );
        assert_eq!(
            readers("notes.md", "default", None),
            (vec!["*".into()], AccessRule::Open)
        );
        // A document's own readers win over every rule.
        assert_eq!(
            readers("hr/pay/2024.md", "finance", Some(&["user:li@corp"])),
            (vec!["user:li@corp".into()], AccessRule::Document)
        );
    }

    #[test]
    fn recorded_readers_that_no_longer_follow_the_rules_are_stale() {
        let p = policy();
        let about = |path: &str, own: Option<&[&str]>| DocAbout::of(&doc(path, "default", own));
        assert!(
            p.is_stale(&about("hr/pay.md", None)),
            "indexed before the rule"
        );
        assert!(!p.is_stale(&DocAbout::of(&p.apply(doc("hr/pay.md", "default", None)))));
        assert!(!p.is_stale(&about("notes.md", None)));
        assert!(
            !p.is_stale(&about("hr/pay.md", Some(&["user:x@corp"]))),
            "its own readers"
        );
    }

    #[test]
    fn bad_rules_are_refused() {
        assert!(AccessPolicy::new(&[("hr/[".into(), vec!["group:hr".into()])], &[]).is_err());
        assert!(AccessPolicy::new(&[("hr/**".into(), vec!["hr".into()])], &[]).is_err());
        let s = Scope::new("a").unwrap();
        assert!(AccessPolicy::new(&[], &[(s.clone(), vec![]), (s, vec![])]).is_err());
    }
}
