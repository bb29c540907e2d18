//! The attribute columns (`vectors.attrs`): every stored chunk's filter attributes as flat
//! little-endian arrays indexed by key, written beside each graph snapshot and of the same
//! generation. A read-only open of a store whose snapshot reflects its last commit reads this
//! one file into one buffer and answers filters from it in place, instead of reading and
//! interning every row's attributes from SQLite (at 1M chunks: one ~130 MB read against
//! seconds of hashing and a few hundred MiB of maps).
//!
//! Format `zhiku-attrs/1`, all integers little-endian:
//!
//! ```text
//! magic "ZKATTRS1" | generation u64 | rows u64 | slots u64 | docs u64 | table bytes u64
//! | section byte lengths u64 × 13
//! table: JSON {"scopes": [...], "locales": [...], "terms": [...], "scope_counts": [...]}
//! sections, each padded to 8 bytes:
//!   slot_scope u32 × slots        interned scope of key i (u32::MAX: no chunk has key i)
//!   slot_locale u32 × slots
//!   slot_doc u32 × slots
//!   term_offsets u64 × slots+1    key i's sorted term ids are term_pool[off[i]..off[i+1]]
//!   term_pool u32 × …
//!   id_offsets u64 × slots+1      key i's chunk ID is id_bytes[off[i]..off[i+1]] (UTF-8)
//!   id_bytes
//!   ids_sorted u64 × rows         the keys in ascending chunk-ID order
//!   doc_offsets u64 × docs+1      document d's name is doc_bytes[off[d]..off[d+1]]
//!   doc_bytes
//!   docs_sorted u32 × docs        the document ids in ascending name order
//!   doc_key_offsets u64 × docs+1  document d's keys, ascending, are doc_keys[off[d]..off[d+1]]
//!   doc_keys u64 × rows
//! ```
//!
//! The file is written like the snapshot (temporary file, fsync, rename) and used only when its
//! generation is the store's last commit and the mapped snapshot's; anything else (missing,
//! older, truncated, inconsistent) falls back to reading the rows. Every section's length and
//! every offset is checked when the file is read, so a damaged file is refused, never read out
//! of bounds; and a search's final chunks are checked against their stored records anyway.

use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};
use zhiku_domain::ChunkId;

use crate::attrs::{Attrs, Compiled, IntMap, Interner, Key, Names, locale_match_terms};
use crate::error::backend;
use zhiku_domain::ports::IndexError;

const MAGIC: &[u8; 8] = b"ZKATTRS1";
/// No chunk has this key.
const ABSENT: u32 = u32::MAX;
const SECTIONS: usize = 13;
const HEADER: usize = 8 + 8 * 5 + 8 * SECTIONS;
/// Keys beyond this many per stored row (plus a constant) make the file too sparse to be worth
/// writing: the rows are read instead.
const MAX_SLOTS_PER_ROW: usize = 4;

#[derive(Clone, Copy)]
enum Sec {
    SlotScope,
    SlotLocale,
    SlotDoc,
    TermOffsets,
    TermPool,
    IdOffsets,
    IdBytes,
    IdsSorted,
    DocOffsets,
    DocBytes,
    DocsSorted,
    DocKeyOffsets,
    DocKeys,
}

#[derive(Serialize, Deserialize)]
struct Table {
    scopes: Vec<String>,
    locales: Vec<String>,
    terms: Vec<String>,
    scope_counts: Vec<usize>,
}

/// The column file's path in the index folder.
pub(crate) fn path(dir: &Path) -> std::path::PathBuf {
    dir.join(crate::files::COLUMNS_FILE)
}

/// Writes the columns of `attrs` (the committed state of `generation`) to `path` atomically.
/// Returns `false`, writing nothing and removing an older file, when the keys are too sparse
/// for flat arrays.
pub(crate) fn write(path: &Path, attrs: &Attrs, generation: u64) -> Result<bool, IndexError> {
    let rows = attrs.len();
    let slots = attrs.by_key.keys().max().map_or(0, |k| *k as usize + 1);
    if slots > MAX_SLOTS_PER_ROW * rows + 65_536 {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(backend(e)),
        }
        return Ok(false);
    }
    let bytes = encode(attrs, generation, slots);
    // The one atomic replace (a leftover temporary file or a link in its place removed, never
    // written through; the folder synced, so a power loss never leaves the old attributes
    // beside a newer graph).
    let tmp = path.with_extension("attrs.tmp");
    zhiku_files::replace_atomically(path, &tmp, |tmp| {
        std::io::Write::write_all(&mut zhiku_files::create_temporary(tmp)?, &bytes)
    })
    .map_err(|e| backend(format!("cannot write {}: {e}", path.display())))?;
    Ok(true)
}

fn encode(attrs: &Attrs, generation: u64, slots: usize) -> Vec<u8> {
    let mut slot_scope = vec![ABSENT; slots];
    let mut slot_locale = vec![ABSENT; slots];
    let mut slot_doc = vec![ABSENT; slots];
    for (key, a) in &attrs.by_key {
        let i = *key as usize;
        (slot_scope[i], slot_locale[i], slot_doc[i]) = (a.scope, a.locale, a.doc);
    }
    let (mut term_offsets, mut term_pool) = (Vec::with_capacity(slots + 1), Vec::new());
    let (mut id_offsets, mut id_bytes) = (Vec::with_capacity(slots + 1), Vec::new());
    term_offsets.push(0u64);
    id_offsets.push(0u64);
    for i in 0..slots {
        if let Some(a) = attrs.by_key.get(&(i as Key)) {
            term_pool.extend_from_slice(&a.terms);
            id_bytes.extend_from_slice(a.chunk_id.as_str().as_bytes());
        }
        term_offsets.push(term_pool.len() as u64);
        id_offsets.push(id_bytes.len() as u64);
    }
    let ids_sorted: Vec<u64> = attrs.by_id.values().copied().collect();
    let names = attrs.docs.names();
    let (mut doc_offsets, mut doc_bytes) = (Vec::with_capacity(names.len() + 1), Vec::new());
    doc_offsets.push(0u64);
    for name in names {
        doc_bytes.extend_from_slice(name.as_bytes());
        doc_offsets.push(doc_bytes.len() as u64);
    }
    let mut docs_sorted: Vec<u32> = (0..names.len() as u32).collect();
    docs_sorted.sort_unstable_by(|a, b| names[*a as usize].cmp(&names[*b as usize]));
    let (mut doc_key_offsets, mut doc_keys) = (Vec::with_capacity(names.len() + 1), Vec::new());
    doc_key_offsets.push(0u64);
    for d in 0..names.len() as u32 {
        if let Some(keys) = attrs.by_doc.get(&d) {
            doc_keys.extend(keys.iter().copied());
        }
        doc_key_offsets.push(doc_keys.len() as u64);
    }
    let table = Table {
        scopes: strings(&attrs.scopes),
        locales: strings(&attrs.locales),
        terms: strings(&attrs.terms),
        scope_counts: (0..attrs.scopes.len() as u32)
            .map(|s| attrs.scope_counts.get(&s).copied().unwrap_or(0))
            .collect(),
    };
    let table = serde_json::to_vec(&table).expect("a table of strings serialises");

    let sections: [Vec<u8>; SECTIONS] = [
        u32s(&slot_scope),
        u32s(&slot_locale),
        u32s(&slot_doc),
        u64s(&term_offsets),
        u32s(&term_pool),
        u64s(&id_offsets),
        id_bytes,
        u64s(&ids_sorted),
        u64s(&doc_offsets),
        doc_bytes,
        u32s(&docs_sorted),
        u64s(&doc_key_offsets),
        u64s(&doc_keys),
    ];
    let mut out = Vec::with_capacity(
        HEADER + padded(table.len()) + sections.iter().map(|s| padded(s.len())).sum::<usize>(),
    );
    out.extend_from_slice(MAGIC);
    for n in [
        generation,
        attrs.len() as u64,
        slots as u64,
        names.len() as u64,
        table.len() as u64,
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    for s in &sections {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    }
    for part in std::iter::once(&table).chain(sections.iter()) {
        out.extend_from_slice(part);
        out.resize(padded(out.len()), 0);
    }
    out
}

fn strings(names: &Interner) -> Vec<String> {
    names.names().iter().map(|n| n.to_string()).collect()
}

fn u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn padded(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// The generation a column file at `path` was written for, read from its header alone.
pub(crate) fn generation_of(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (&head[..8] == MAGIC).then(|| u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")))
}

/// The attribute columns of one generation, read whole into one buffer and answered in place.
#[derive(Debug)]
pub(crate) struct Columns {
    buf: Vec<u8>,
    rows: usize,
    slots: usize,
    docs: usize,
    sections: [Range<usize>; SECTIONS],
    scopes: Interner,
    terms: Interner,
    locale_terms: Vec<Vec<String>>,
    scope_counts: IntMap<u32, usize>,
}

impl Columns {
    /// Reads the file at `path`; `Ok(None)` when it is missing or of another generation than
    /// `generation`; an error when it is damaged.
    pub(crate) fn read(path: &Path, generation: u64) -> Result<Option<Self>, String> {
        if generation_of(path) != Some(generation) {
            return Ok(None);
        }
        let buf =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(buf)
            .map(Some)
            .map_err(|e| format!("{} is damaged: {e}", path.display()))
    }

    fn parse(buf: Vec<u8>) -> Result<Self, String> {
        if buf.len() < HEADER || &buf[..8] != MAGIC {
            return Err("no column-file header".into());
        }
        let word = |i: usize| u64::from_le_bytes(buf[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        let size =
            |i: usize| usize::try_from(word(i)).map_err(|_| "a length overflows".to_string());
        let (rows, slots, docs, table_len) = (size(1)?, size(2)?, size(3)?, size(4)?);
        let mut at = HEADER;
        let mut take = |len: usize| -> Result<Range<usize>, String> {
            let end = at.checked_add(len).filter(|e| *e <= buf.len());
            let end = end.ok_or("a section runs past the end of the file")?;
            let range = at..end;
            at = padded(end);
            Ok(range)
        };
        let table = take(table_len)?;
        let mut sections: [Range<usize>; SECTIONS] = Default::default();
        for (i, section) in sections.iter_mut().enumerate() {
            *section = take(size(5 + i)?)?;
        }
        let table: Table =
            serde_json::from_slice(&buf[table]).map_err(|e| format!("its table: {e}"))?;
        let columns = Self {
            buf,
            rows,
            slots,
            docs,
            sections,
            scopes: interned(&table.scopes),
            terms: interned(&table.terms),
            locale_terms: table
                .locales
                .iter()
                .map(|l| locale_match_terms(l))
                .collect(),
            scope_counts: table
                .scope_counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| (s as u32, *n))
                .collect(),
        };
        columns.check(table.scopes.len())?;
        Ok(columns)
    }

    /// Every section has its length and every offset stays in its pool, ascending.
    fn check(&self, scopes: usize) -> Result<(), String> {
        let (slots, rows, docs) = (self.slots, self.rows, self.docs);
        let want = [
            (Sec::SlotScope, 4 * slots),
            (Sec::SlotLocale, 4 * slots),
            (Sec::SlotDoc, 4 * slots),
            (Sec::TermOffsets, 8 * (slots + 1)),
            (Sec::IdOffsets, 8 * (slots + 1)),
            (Sec::IdsSorted, 8 * rows),
            (Sec::DocOffsets, 8 * (docs + 1)),
            (Sec::DocsSorted, 4 * docs),
            (Sec::DocKeyOffsets, 8 * (docs + 1)),
            (Sec::DocKeys, 8 * rows),
        ];
        for (sec, len) in want {
            if self.sections[sec as usize].len() != len {
                return Err("a section has the wrong length".into());
            }
        }
        if !self.sections[Sec::TermPool as usize]
            .len()
            .is_multiple_of(4)
        {
            return Err("the term pool is cut".into());
        }
        let pools = [
            (
                Sec::TermOffsets,
                slots,
                self.sections[Sec::TermPool as usize].len() / 4,
            ),
            (
                Sec::IdOffsets,
                slots,
                self.sections[Sec::IdBytes as usize].len(),
            ),
            (
                Sec::DocOffsets,
                docs,
                self.sections[Sec::DocBytes as usize].len(),
            ),
            (Sec::DocKeyOffsets, docs, rows),
        ];
        for (sec, n, pool) in pools {
            let mut last = 0;
            for i in 0..=n {
                let off = self.u64_at(sec, i);
                if off < last || off > pool as u64 {
                    return Err("an offset is out of order".into());
                }
                last = off;
            }
            if last != pool as u64 {
                return Err("a pool is longer than its offsets".into());
            }
        }
        let present = (0..slots)
            .filter(|i| self.u32_at(Sec::SlotScope, *i) != ABSENT)
            .count();
        let scopes_ok = (0..slots).all(|i| {
            let s = self.u32_at(Sec::SlotScope, i);
            s == ABSENT || (s as usize) < scopes
        });
        let keys_ok = (0..rows).all(|i| {
            let (a, b) = (self.u64_at(Sec::IdsSorted, i), self.u64_at(Sec::DocKeys, i));
            (a as usize) < slots && (b as usize) < slots
        });
        let docs_ok = (0..docs).all(|i| (self.u32_at(Sec::DocsSorted, i) as usize) < docs);
        if present != rows || !scopes_ok || !keys_ok || !docs_ok {
            return Err("its keys and rows disagree".into());
        }
        Ok(())
    }

    fn u32_at(&self, sec: Sec, i: usize) -> u32 {
        let at = self.sections[sec as usize].start + 4 * i;
        u32::from_le_bytes(self.buf[at..at + 4].try_into().expect("4 bytes"))
    }

    fn u64_at(&self, sec: Sec, i: usize) -> u64 {
        let at = self.sections[sec as usize].start + 8 * i;
        u64::from_le_bytes(self.buf[at..at + 8].try_into().expect("8 bytes"))
    }

    fn bytes(&self, sec: Sec, offsets: Sec, i: usize) -> &[u8] {
        let start = self.sections[sec as usize].start;
        let (a, b) = (self.u64_at(offsets, i), self.u64_at(offsets, i + 1));
        &self.buf[start + a as usize..start + b as usize]
    }

    /// Stored chunks.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    fn present(&self, key: Key) -> Option<usize> {
        let i = usize::try_from(key).ok().filter(|i| *i < self.slots)?;
        (self.u32_at(Sec::SlotScope, i) != ABSENT).then_some(i)
    }

    /// The chunk ID of `key`.
    pub(crate) fn chunk_id(&self, key: Key) -> Option<&str> {
        let i = self.present(key)?;
        std::str::from_utf8(self.bytes(Sec::IdBytes, Sec::IdOffsets, i)).ok()
    }

    /// The key of chunk `id` (a binary search over the keys in chunk-ID order).
    pub(crate) fn key_of(&self, id: &ChunkId) -> Option<Key> {
        let at = |i| self.u64_at(Sec::IdsSorted, i);
        find_sorted(self.rows, |i| {
            self.chunk_id(at(i)).unwrap_or_default().cmp(id.as_str())
        })
        .map(at)
    }

    /// Every chunk ID, ascending.
    pub(crate) fn chunk_ids(&self) -> Result<Vec<ChunkId>, IndexError> {
        (0..self.rows)
            .map(|i| {
                let id = self
                    .chunk_id(self.u64_at(Sec::IdsSorted, i))
                    .unwrap_or_default();
                ChunkId::parse(id).map_err(backend)
            })
            .collect()
    }

    fn doc_name(&self, doc: u32) -> &[u8] {
        self.bytes(Sec::DocBytes, Sec::DocOffsets, doc as usize)
    }

    /// The keys of document `doc`'s chunks, ascending.
    pub(crate) fn doc_keys(&self, doc: &str) -> Vec<Key> {
        self.doc_id(doc)
            .map(|d| self.keys_of_doc(d).collect())
            .unwrap_or_default()
    }

    fn keys_of_doc(&self, doc: u32) -> impl Iterator<Item = Key> + '_ {
        let (a, b) = (
            self.u64_at(Sec::DocKeyOffsets, doc as usize),
            self.u64_at(Sec::DocKeyOffsets, doc as usize + 1),
        );
        (a as usize..b as usize).map(|i| self.u64_at(Sec::DocKeys, i))
    }

    /// True when the chunk under `key` passes `filter`.
    pub(crate) fn passes(&self, key: Key, filter: &Compiled) -> bool {
        let Some(i) = self.present(key) else {
            return false;
        };
        let (a, b) = (
            self.u64_at(Sec::TermOffsets, i) as usize,
            self.u64_at(Sec::TermOffsets, i + 1) as usize,
        );
        filter.admits(
            self.u32_at(Sec::SlotScope, i),
            self.u32_at(Sec::SlotDoc, i),
            self.u32_at(Sec::SlotLocale, i),
            |t| (a..b).any(|j| self.u32_at(Sec::TermPool, j) == t),
        )
    }

    /// The keys of every chunk that passes `filter`.
    pub(crate) fn allowed_keys(&self, filter: &Compiled) -> Vec<Key> {
        match filter.docs() {
            Some(docs) => docs
                .iter()
                .flat_map(|d| self.keys_of_doc(*d))
                .filter(|k| self.passes(*k, filter))
                .collect(),
            None => (0..self.slots as Key)
                .filter(|k| self.passes(*k, filter))
                .collect(),
        }
    }
}

/// The position in `0..n` where `probe` (the ordering of the entry there against the one
/// sought, over entries in ascending order) answers `Equal`: a binary search over a sorted
/// column of the file, which is bytes, not a slice of typed values.
fn find_sorted(n: usize, probe: impl Fn(usize) -> std::cmp::Ordering) -> Option<usize> {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe(mid) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

fn interned(names: &[String]) -> Interner {
    let mut interner = Interner::default();
    for name in names {
        interner.intern(name);
    }
    interner
}

impl Names for Columns {
    fn scope_id(&self, name: &str) -> Option<u32> {
        self.scopes.get(name)
    }
    fn doc_id(&self, name: &str) -> Option<u32> {
        let at = |i| self.u32_at(Sec::DocsSorted, i);
        find_sorted(self.docs, |i| self.doc_name(at(i)).cmp(name.as_bytes())).map(at)
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
        (self.u64_at(Sec::DocKeyOffsets, doc as usize + 1)
            - self.u64_at(Sec::DocKeyOffsets, doc as usize)) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::compile;
    use crate::attrs::tests::row;
    use zhiku_domain::{DocId, Filter, Locale, Scope};

    /// Attributes of 300 chunks over 40 documents, 3 scopes, 3 locales and a few terms, with
    /// some removed and some replaced, so interned ids and keys have gaps.
    fn sample() -> Attrs {
        let mut attrs = Attrs::default();
        let locales = ["zh-CN", "zh-TW", "en"];
        let terms = ["team=a", "team=b", "year=2024", "tags=中文"];
        for key in 1..=300u64 {
            let doc = format!("doc-{:02}", key % 40);
            let t: Vec<&str> = terms
                .iter()
                .enumerate()
                .filter(|(i, _)| (key as usize >> i) & 1 == 1)
                .map(|(_, t)| *t)
                .collect();
            attrs.put(
                key,
                &row(
                    &format!("{doc}:{key}:{:016x}", key * 7919),
                    &doc,
                    ["s0", "s1", "s2"][key as usize % 3],
                    locales[key as usize % 5 % 3],
                    &t,
                ),
            );
        }
        for key in (5..300).step_by(17) {
            attrs.remove(key);
        }
        for key in (3..100).step_by(31) {
            let doc = "doc-moved";
            attrs.put(
                key,
                &row(
                    &format!("{doc}:{key}:0000000000000000"),
                    doc,
                    "s2",
                    "en",
                    &[],
                ),
            );
        }
        attrs
    }

    fn filters() -> Vec<Filter> {
        let s = |n: &str| Scope::new(n).unwrap();
        let d = |n: &str| DocId::new(n).unwrap();
        let mut out = vec![
            Filter::for_scope(s("s0")),
            Filter::for_scopes([s("s0"), s("s1"), s("s2")]).unwrap(),
            Filter::for_scope(s("absent")),
            Filter::for_scope(s("s1")).with_locale(Locale::new("zh").unwrap()),
            Filter::for_scope(s("s2")).with_locale(Locale::new("en").unwrap()),
            Filter::for_scopes([s("s0"), s("s2")])
                .unwrap()
                .with_doc_ids([d("doc-07"), d("doc-moved"), d("nope")]),
            Filter::for_scope(s("s1")).with_doc_ids([d("nope")]),
        ];
        for (k, v) in [("team", "a"), ("tags", "中文"), ("year", "1999")] {
            out.push(
                Filter::for_scopes([s("s0"), s("s1")])
                    .unwrap()
                    .with_metadata(k, v)
                    .unwrap(),
            );
        }
        out
    }

    #[test]
    fn the_columns_answer_as_the_attributes_in_memory_do() {
        let attrs = sample();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vectors.attrs");
        assert!(write(&file, &attrs, 42).unwrap());
        assert_eq!(generation_of(&file), Some(42));
        assert!(
            Columns::read(&file, 41).unwrap().is_none(),
            "another generation"
        );
        let columns = Columns::read(&file, 42).unwrap().unwrap();
        assert_eq!(columns.len(), attrs.len());
        for filter in filters() {
            let (a, c) = (attrs.compile(&filter), compile(&columns, &filter));
            assert_eq!(a.is_none(), c.is_none(), "{filter:?}");
            let (Some(a), Some(c)) = (a, c) else { continue };
            assert_eq!(
                (a.bound, a.everything),
                (c.bound, c.everything),
                "{filter:?}"
            );
            let mut from_memory = attrs.allowed_keys(&a);
            from_memory.sort_unstable();
            let mut from_columns = columns.allowed_keys(&c);
            from_columns.sort_unstable();
            assert_eq!(from_columns, from_memory, "{filter:?}");
            for key in 0..310 {
                assert_eq!(attrs.passes(key, &a), columns.passes(key, &c));
            }
        }
        let ids: Vec<ChunkId> = attrs.by_id.keys().cloned().collect();
        assert_eq!(columns.chunk_ids().unwrap(), ids);
        for (id, key) in &attrs.by_id {
            assert_eq!(columns.key_of(id), Some(*key));
            assert_eq!(columns.chunk_id(*key), Some(id.as_str()));
        }
        assert_eq!(
            columns.key_of(&ChunkId::parse("zz:0:0000000000000000").unwrap()),
            None
        );
        for doc in ["doc-00", "doc-07", "doc-moved", "nope"] {
            assert_eq!(columns.doc_keys(doc), attrs.doc_keys(doc), "{doc}");
        }
    }

    #[test]
    fn a_damaged_or_sparse_file_is_refused() {
        let attrs = sample();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vectors.attrs");
        write(&file, &attrs, 7).unwrap();
        let bytes = std::fs::read(&file).unwrap();
        for cut in [20, HEADER + 3, bytes.len() / 2, bytes.len() - 9] {
            std::fs::write(&file, &bytes[..cut]).unwrap();
            assert!(Columns::read(&file, 7).is_err(), "cut at {cut}");
        }
        // An offset moved backwards inside an intact-length file.
        let mut bad = bytes.clone();
        let sections = Columns::parse(bytes.clone()).unwrap().sections;
        let at = sections[Sec::IdOffsets as usize].start + 8 * 10;
        bad[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&file, &bad).unwrap();
        assert!(Columns::read(&file, 7).is_err());

        let mut sparse = Attrs::default();
        sparse.put(1_000_000, &row("a:0:0000000000000000", "a", "s", "en", &[]));
        std::fs::write(&file, &bytes).unwrap();
        assert!(!write(&file, &sparse, 8).unwrap());
        assert!(
            !file.exists(),
            "an older file is removed rather than left to mislead"
        );
    }
}
