//! What the index keeps in memory per stored chunk: its ID and the attributes a filter tests,
//! as small interned integers, so a filter is a predicate over integers evaluated inside the
//! graph walk, and opening a store reads a few short columns instead of every chunk record.
//!
//! Per key: the chunk ID, the interned document, scope and locale, and the sorted interned
//! metadata terms (`key=value`, from [`Metadata::filter_terms`](zhiku_domain::Metadata)).
//! Metadata terms are kept in memory rather than answered by an SQLite query producing a key
//! set: a term list is a few integers per chunk, the predicate stays one memory lookup per
//! visited node, and uncommitted writes (visible to this handle's searches) need no overlay.
//! Interned strings are never forgotten while the handle lives (a deleted document's name stays
//! in the table); they are a few bytes each and the table restarts at every open.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use zhiku_domain::{Chunk, ChunkId, Filter, Locale, RESTRICTED_TERM};

/// The graph's key of a chunk: SQLite's integer primary key of its row. Keys are allocated in
/// increasing order and never reused by another chunk.
pub(crate) type Key = u64;

/// A hasher for integer keys: one multiply, enough for keys that are counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
pub(crate) type IntSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

/// Strings numbered in the order they are first seen.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Interner {
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        let name: Arc<str> = Arc::from(name);
        self.names.push(Arc::clone(&name));
        self.ids.insert(name, id);
        id
    }

    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// Every name, in the order of their ids.
    pub(crate) fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    #[cfg(test)]
    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// The lower-cased terms a filter's locale may equal for a chunk of locale `name` (`zh` and
/// `zh-cn` for `zh-CN`); the name itself, lower-cased, when it is not a valid tag.
pub(crate) fn locale_match_terms(name: &str) -> Vec<String> {
    Locale::new(name)
        .map(|l| l.match_terms())
        .unwrap_or_else(|_| vec![name.to_ascii_lowercase()])
}

/// The name tables a filter is translated with: implemented by the attributes in memory
/// ([`Attrs`]) and by the column file ([`Columns`](crate::columns::Columns)), so both compile a
/// filter by the same rules.
pub(crate) trait Names {
    fn scope_id(&self, name: &str) -> Option<u32>;
    fn doc_id(&self, name: &str) -> Option<u32>;
    fn term_id(&self, term: &str) -> Option<u32>;
    /// Per locale id: its match terms.
    fn locale_terms(&self) -> &[Vec<String>];
    /// Stored chunks per scope id (scopes with none may be missing).
    fn scope_counts(&self) -> &IntMap<u32, usize>;
    /// Stored chunks of a document id.
    fn doc_rows(&self, doc: u32) -> usize;
}

/// Translates `filter` into integer sets over `names`; `None` when no stored chunk can pass it
/// (a scope, document, locale or metadata term no chunk carries).
pub(crate) fn compile(names: &impl Names, filter: &Filter) -> Option<Compiled> {
    let scopes: Vec<u32> = filter
        .scopes()
        .iter()
        .filter_map(|s| names.scope_id(s.as_str()))
        .collect();
    if scopes.is_empty() {
        return None;
    }
    let docs = match filter.doc_ids() {
        None => None,
        Some(ids) => {
            let docs: IntSet<u32> = ids
                .iter()
                .filter_map(|d| names.doc_id(d.as_str()))
                .collect();
            if docs.is_empty() {
                return None;
            }
            Some(docs)
        }
    };
    let locales = match filter.locale_term() {
        None => None,
        Some(term) => {
            let allowed: Vec<bool> = names
                .locale_terms()
                .iter()
                .map(|terms| terms.contains(&term))
                .collect();
            if !allowed.contains(&true) {
                return None;
            }
            Some(allowed)
        }
    };
    let mut terms = Vec::new();
    for term in filter.metadata_terms() {
        terms.push(names.term_id(&term)?);
    }
    // Access terms are kept among the metadata terms (`@` never starts one); with no
    // restricted chunk stored, a reader condition lets everything through.
    let readers = match (filter.reader_index_terms(), names.term_id(RESTRICTED_TERM)) {
        (Some(allowed), Some(restricted)) => Some(Readers {
            restricted,
            allowed: allowed.iter().filter_map(|t| names.term_id(t)).collect(),
        }),
        _ => None,
    };
    // The bound on how many chunks can pass, from counts kept up to date.
    let counts = names.scope_counts();
    let scope_bound: usize = scopes
        .iter()
        .map(|s| counts.get(s).copied().unwrap_or(0))
        .sum();
    let doc_bound = docs
        .as_ref()
        .map(|docs| docs.iter().map(|d| names.doc_rows(*d)).sum::<usize>());
    let everything = docs.is_none()
        && locales.is_none()
        && terms.is_empty()
        && readers.is_none()
        && counts.iter().all(|(s, n)| *n == 0 || scopes.contains(s));
    Some(Compiled {
        bound: doc_bound.map_or(scope_bound, |d| d.min(scope_bound)),
        everything,
        scopes,
        docs,
        locales,
        terms,
        readers,
    })
}

/// A reader condition in interned terms: a chunk passes when it lacks the restricted mark or
/// carries one of the allowed reader terms.
#[derive(Debug)]
struct Readers {
    restricted: u32,
    allowed: Vec<u32>,
}

/// The filterable attributes of one chunk, as they are stored in the `chunks` table's small
/// columns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowAttrs {
    pub(crate) chunk_id: ChunkId,
    pub(crate) doc_id: String,
    pub(crate) scope: String,
    pub(crate) locale: String,
    /// Sorted, without duplicates.
    pub(crate) terms: Vec<String>,
}

impl RowAttrs {
    pub(crate) fn of(chunk: &Chunk) -> Self {
        let doc = chunk.doc();
        let mut terms = doc.metadata.filter_terms();
        terms.extend(doc.access.index_terms());
        terms.sort();
        terms.dedup();
        Self {
            chunk_id: chunk.chunk_id().clone(),
            doc_id: chunk.doc_id().as_str().to_string(),
            scope: doc.scope.as_str().to_string(),
            locale: doc.locale.as_str().to_string(),
            terms,
        }
    }
}

/// One chunk's attributes, interned.
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    pub(crate) chunk_id: ChunkId,
    pub(crate) doc: u32,
    pub(crate) scope: u32,
    pub(crate) locale: u32,
    /// Sorted term ids.
    pub(crate) terms: Box<[u32]>,
}

/// Every stored chunk's attributes and the lookups built on them.
#[derive(Debug, Default)]
pub(crate) struct Attrs {
    pub(crate) by_key: IntMap<Key, Attr>,
    pub(crate) by_id: BTreeMap<ChunkId, Key>,
    pub(crate) by_doc: IntMap<u32, BTreeSet<Key>>,
    pub(crate) scope_counts: IntMap<u32, usize>,
    pub(crate) docs: Interner,
    pub(crate) scopes: Interner,
    pub(crate) locales: Interner,
    /// Per interned locale: its lower-cased match terms (`zh`, `zh-cn` for `zh-CN`).
    pub(crate) locale_terms: Vec<Vec<String>>,
    pub(crate) terms: Interner,
}

impl Attrs {
    /// Room for `rows` more chunks (of about as many documents), so a load of every row does
    /// not rehash its tables as they grow.
    pub(crate) fn reserve(&mut self, rows: usize) {
        self.by_key.reserve(rows);
        self.by_doc.reserve(rows);
        self.docs.ids.reserve(rows);
        self.docs.names.reserve(rows);
    }

    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    pub(crate) fn key_of(&self, id: &ChunkId) -> Option<Key> {
        self.by_id.get(id).copied()
    }

    /// Sets the attributes of `key` (replacing those it had).
    pub(crate) fn put(&mut self, key: Key, row: &RowAttrs) {
        self.remove(key);
        let doc = self.docs.intern(&row.doc_id);
        let scope = self.scopes.intern(&row.scope);
        let locale = self.locales.intern(&row.locale);
        if self.locale_terms.len() < self.locales.len() {
            self.locale_terms.push(locale_match_terms(&row.locale));
        }
        let mut terms: Vec<u32> = row.terms.iter().map(|t| self.terms.intern(t)).collect();
        terms.sort_unstable();
        terms.dedup();
        self.by_id.insert(row.chunk_id.clone(), key);
        self.by_doc.entry(doc).or_default().insert(key);
        *self.scope_counts.entry(scope).or_default() += 1;
        self.by_key.insert(
            key,
            Attr {
                chunk_id: row.chunk_id.clone(),
                doc,
                scope,
                locale,
                terms: terms.into_boxed_slice(),
            },
        );
    }

    /// Forgets `key`; returns whether it was present.
    pub(crate) fn remove(&mut self, key: Key) -> bool {
        let Some(attr) = self.by_key.remove(&key) else {
            return false;
        };
        self.by_id.remove(&attr.chunk_id);
        if let Some(keys) = self.by_doc.get_mut(&attr.doc) {
            keys.remove(&key);
            if keys.is_empty() {
                self.by_doc.remove(&attr.doc);
            }
        }
        if let Some(n) = self.scope_counts.get_mut(&attr.scope) {
            *n -= 1;
            if *n == 0 {
                self.scope_counts.remove(&attr.scope);
            }
        }
        true
    }

    /// The keys of a document's chunks.
    pub(crate) fn doc_keys(&self, doc: &str) -> Vec<Key> {
        self.docs
            .get(doc)
            .and_then(|d| self.by_doc.get(&d))
            .map(|keys| keys.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The document name of an interned id (for tests and messages).
    #[cfg(test)]
    pub(crate) fn doc_name(&self, doc: u32) -> &str {
        self.docs.name(doc)
    }

    /// Translates `filter` into integer sets (see [`compile`]).
    pub(crate) fn compile(&self, filter: &Filter) -> Option<Compiled> {
        compile(self, filter)
    }

    /// True when the chunk under `key` passes `filter`.
    pub(crate) fn passes(&self, key: Key, filter: &Compiled) -> bool {
        self.by_key.get(&key).is_some_and(|a| filter.passes(a))
    }

    /// The keys of every chunk that passes `filter`: from the listed documents' chunks when the
    /// filter names documents, else from a scan of every key.
    pub(crate) fn allowed_keys(&self, filter: &Compiled) -> Vec<Key> {
        match &filter.docs {
            Some(docs) => docs
                .iter()
                .filter_map(|d| self.by_doc.get(d))
                .flatten()
                .copied()
                .filter(|k| self.passes(*k, filter))
                .collect(),
            None => self
                .by_key
                .iter()
                .filter(|(_, a)| filter.passes(a))
                .map(|(k, _)| *k)
                .collect(),
        }
    }
}

/// A filter translated into the interned integers of one [`Attrs`].
#[derive(Debug)]
pub(crate) struct Compiled {
    /// At most this many stored chunks pass.
    pub(crate) bound: usize,
    /// Every stored chunk passes (all scopes present, no other condition).
    pub(crate) everything: bool,
    scopes: Vec<u32>,
    docs: Option<IntSet<u32>>,
    locales: Option<Vec<bool>>,
    terms: Vec<u32>,
    readers: Option<Readers>,
}

impl Compiled {
    fn passes(&self, a: &Attr) -> bool {
        self.admits(a.scope, a.doc, a.locale, |t| {
            a.terms.binary_search(&t).is_ok()
        })
    }

    /// True for a chunk of these interned scope, document and locale whose metadata and access
    /// terms satisfy `has_term`.
    pub(crate) fn admits(
        &self,
        scope: u32,
        doc: u32,
        locale: u32,
        has_term: impl Fn(u32) -> bool,
    ) -> bool {
        self.scopes.contains(&scope)
            && self.docs.as_ref().is_none_or(|d| d.contains(&doc))
            && self
                .locales
                .as_ref()
                .is_none_or(|l| l.get(locale as usize).copied().unwrap_or(false))
            && self.terms.iter().all(|t| has_term(*t))
            && self
                .readers
                .as_ref()
                .is_none_or(|r| !has_term(r.restricted) || r.allowed.iter().any(|t| has_term(*t)))
    }

    /// The documents the filter names, if it names any.
    pub(crate) fn docs(&self) -> Option<&IntSet<u32>> {
        self.docs.as_ref()
    }
}

impl Names for Attrs {
    fn scope_id(&self, name: &str) -> Option<u32> {
        self.scopes.get(name)
    }
    fn doc_id(&self, name: &str) -> Option<u32> {
        self.docs.get(name)
    }
    fn term_id(&self, term: &str) -> Option<u32> {
        self.terms.get(term)
    }
    fn locale_terms(&self) -> &[Vec<String>] {
        &self.locale_terms
    }
    fn scope_counts(&self) -> &IntMap<u32, usize> {
        &self.scope_counts
    }
    fn doc_rows(&self, doc: u32) -> usize {
        self.by_doc.get(&doc).map_or(0, BTreeSet::len)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use zhiku_domain::{DocId, Scope};

    /// A chunk's attributes from string slices (also for the column file's tests).
    pub(crate) fn row(id: &str, doc: &str, scope: &str, locale: &str, terms: &[&str]) -> RowAttrs {
        RowAttrs {
            chunk_id: ChunkId::parse(id).unwrap(),
            doc_id: doc.into(),
            scope: scope.into(),
            locale: locale.into(),
            terms: terms.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn compiled_filters_follow_the_reference_semantics() {
        let mut attrs = Attrs::default();
        attrs.put(
            1,
            &row(
                "a:0:0000000000000000",
                "a",
                "s",
                "zh-CN",
                &["tags=x", "year=2024"],
            ),
        );
        attrs.put(2, &row("b:0:0000000000000000", "b", "s", "en", &["tags=y"]));
        attrs.put(3, &row("c:0:0000000000000000", "c", "t", "en", &[]));
        let s = Filter::for_scope(Scope::new("s").unwrap());
        fn keys(attrs: &Attrs, f: &Filter) -> Vec<Key> {
            let mut k = attrs
                .compile(f)
                .map(|c| attrs.allowed_keys(&c))
                .unwrap_or_default();
            k.sort();
            k
        }
        assert_eq!(keys(&attrs, &s), vec![1, 2]);
        assert_eq!(
            keys(&attrs, &s.clone().with_locale(Locale::new("zh").unwrap())),
            vec![1]
        );
        assert_eq!(
            keys(&attrs, &s.clone().with_metadata("tags", "y").unwrap()),
            vec![2]
        );
        assert_eq!(
            keys(&attrs, &s.clone().with_metadata("tags", "z").unwrap()),
            Vec::<Key>::new()
        );
        assert_eq!(
            keys(&attrs, &s.clone().with_doc_ids([DocId::new("b").unwrap()])),
            vec![2]
        );
        assert_eq!(
            keys(&attrs, &Filter::for_scope(Scope::new("u").unwrap())),
            Vec::<Key>::new()
        );
        let c = attrs.compile(&s).unwrap();
        assert_eq!(c.bound, 2);
        assert!(!c.everything);
        // Replacing a key's attributes moves it between scopes and documents.
        attrs.put(2, &row("b:0:0000000000000000", "b", "t", "en", &[]));
        assert_eq!(keys(&attrs, &s), vec![1]);
        assert!(attrs.remove(1));
        assert!(!attrs.remove(1));
        assert!(keys(&attrs, &s).is_empty());
        assert_eq!(attrs.doc_keys("b"), vec![2]);
        assert_eq!(attrs.doc_name(attrs.by_key[&2].doc), "b");
        let all = Filter::for_scope(Scope::new("t").unwrap());
        assert!(attrs.compile(&all).unwrap().everything);
    }
}
