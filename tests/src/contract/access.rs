//! The reader filter as a property of every index: a person's search is the same search over
//! the documents they may read, whatever else is stored beside them; and replacing records
//! changes who may read a document on the next search, without touching its vectors.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use zhiku_domain::ports::{IndexError, LexicalIndex, ScoredChunk, VectorIndex};
use zhiku_domain::{Chunk, ChunkId, DocId, Filter, Principal, Scope};

use super::fixtures::{Spec, axis, embedded, vector};

/// The readers a generated document may have: `None` is open to its scope by no rule; an
/// empty list admits no person.
const ACCESSES: &[Option<&[&str]>] = &[
    None,
    Some(&[]),
    Some(&["group:g0"]),
    Some(&["group:g1"]),
    Some(&["user:u0"]),
    Some(&["group:g0", "user:u1"]),
    Some(&["*"]),
    Some(&["group:g2", "user:u0"]),
];

const SCOPES: [&str; 2] = ["s0", "s1"];

/// A generated corpus: per document its scope, its access, and its chunks (an axis and a
/// tilt for a vector, two words for a text).
type Corpus = Vec<(usize, usize, Vec<(usize, f32)>)>;

fn corpus() -> impl Strategy<Value = Corpus> {
    prop::collection::vec(
        (
            0..SCOPES.len(),
            0..ACCESSES.len(),
            prop::collection::vec((0usize..8, -1.0f32..1.0), 1..4),
        ),
        1..16,
    )
}

/// A person: user `u0`–`u2`, groups `g0`–`g2` as a bit mask.
fn principal() -> impl Strategy<Value = Principal> {
    (0usize..3, 0u8..8).prop_map(|(u, mask)| {
        let groups: Vec<String> = (0..3)
            .filter(|g| mask & (1 << g) != 0)
            .map(|g| format!("g{g}"))
            .collect();
        Principal::new(&format!("u{u}"), groups).expect("principal")
    })
}

/// The document `d` of round `r`.
fn doc_of(round: usize, d: usize) -> DocId {
    DocId::new(format!("acc{round}-{d}")).expect("doc id")
}

fn spec(round: usize, d: usize, c: usize, corpus: &Corpus, access: usize) -> Spec {
    let (scope, _, chunks) = &corpus[d];
    let (ax, tilt) = chunks[c];
    let words = format!("w{ax} w{} common", (ax + c) % 8);
    let mut s = Spec::new(doc_of(round, d).as_str(), SCOPES[*scope], words)
        .at(c * 100 + (tilt.to_bits() % 50) as usize);
    if let Some(readers) = ACCESSES[access] {
        s = s.readers(readers);
    }
    s
}

/// Every chunk of the corpus, each document with the access `access(d)`.
fn chunks(round: usize, corpus: &Corpus, access: impl Fn(usize) -> usize) -> Vec<Chunk> {
    let mut out = Vec::new();
    for (d, (_, _, cs)) in corpus.iter().enumerate() {
        for c in 0..cs.len() {
            out.push(spec(round, d, c, corpus, access(d)).chunk());
        }
    }
    out
}

fn all_scopes() -> Filter {
    Filter::for_scopes(SCOPES.iter().map(|s| Scope::new(*s).expect("scope"))).expect("scopes")
}

/// A search under a filter for its top `k`.
type Search<'a> = dyn Fn(&Filter, usize) -> Result<Vec<ScoredChunk>, IndexError> + 'a;

fn ranked(hits: &[ScoredChunk]) -> Vec<(String, f32)> {
    hits.iter()
        .map(|h| (h.chunk.chunk_id().to_string(), h.score))
        .collect()
}

/// Checks a person's top `k` against the same search restricted to the documents they may
/// read (the same ranking, up to a sum's last bits: [`super::check_same_ranking`]), and that no
/// hit is one they may not. The restricted search asks for `past` more, so that a chunk tied
/// with the k-th is found where that ranking has it: a lexical ranking's longer list starts with
/// its shorter one, an approximate vector index's need not, so the vector property passes 0.
fn check(
    chunks: &[Chunk],
    person: &Principal,
    k: usize,
    past: usize,
    search: &Search<'_>,
) -> Result<(), TestCaseError> {
    let permitted: BTreeSet<DocId> = chunks
        .iter()
        .filter(|c| c.doc().access.admits(person))
        .map(|c| c.doc_id().clone())
        .collect();
    let got = search(&all_scopes().for_principal(person), k).expect("search");
    for hit in &got {
        prop_assert!(
            hit.chunk.doc().access.admits(person),
            "{} reached {person:?}, whose readers are {:?}",
            hit.chunk.chunk_id(),
            hit.chunk.doc().access
        );
    }
    let want = if permitted.is_empty() {
        Vec::new()
    } else {
        search(&all_scopes().with_doc_ids(permitted), k + past).expect("search")
    };
    super::check_same_ranking(&ranked(&got), &ranked(&want), k)
        .map_err(|e| TestCaseError::fail(format!("{person:?}: {e}")))?;
    Ok(())
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: 16,
        ..Config::default()
    })
}

/// A person's vector search is the search over what they may read; after their documents'
/// records are replaced with other readers, the next search follows the new readers and the
/// vectors are those stored before.
pub fn reader_filter_is_the_search_over_what_the_reader_may_read(index: &dyn VectorIndex) {
    let round = std::cell::Cell::new(0usize);
    runner()
        .run(
            &(
                corpus(),
                principal(),
                0usize..8,
                1usize..20,
                1..ACCESSES.len(),
            ),
            |(corpus, person, query_axis, k, shift)| {
                round.set(round.get() + 1);
                let r = round.get();
                let before = chunks(r, &corpus, |d| corpus[d].1);
                let items: Vec<_> = corpus
                    .iter()
                    .enumerate()
                    .flat_map(|(d, (_, _, cs))| {
                        let corpus = &corpus;
                        cs.iter().enumerate().map(move |(c, (ax, tilt))| {
                            embedded(&spec(r, d, c, corpus, corpus[d].1), vector(*ax, *tilt))
                        })
                    })
                    .collect();
                index.upsert(&items).expect("upsert");
                index.commit().expect("commit");
                let search = |f: &Filter, k| index.search(&axis(query_axis), k, f);
                check(&before, &person, k, 0, &search)?;

                let all: Vec<ChunkId> = before.iter().map(|c| c.chunk_id().clone()).collect();
                let vectors = index.embeddings(&all).expect("embeddings");
                let after = chunks(r, &corpus, |d| (corpus[d].1 + shift) % ACCESSES.len());
                prop_assert_eq!(index.update_records(&after).expect("update"), after.len());
                index.commit().expect("commit");
                check(&after, &person, k, 0, &search)?;
                prop_assert_eq!(index.embeddings(&all).expect("embeddings"), vectors);
                for d in 0..corpus.len() {
                    index.delete_document(&doc_of(r, d)).expect("delete");
                }
                index.commit().expect("commit");
                Ok(())
            },
        )
        .unwrap();
}

/// The same property for a lexical index: a person's ranking is the ranking over what they may
/// read, before and after their documents' records are replaced.
pub fn reader_filter_is_the_ranking_over_what_the_reader_may_read(index: &dyn LexicalIndex) {
    let round = std::cell::Cell::new(0usize);
    runner()
        .run(
            &(
                corpus(),
                principal(),
                0usize..8,
                1usize..20,
                1..ACCESSES.len(),
            ),
            |(corpus, person, word, k, shift)| {
                round.set(round.get() + 1);
                let r = round.get();
                let before = chunks(r, &corpus, |d| corpus[d].1);
                index.upsert(&before).expect("upsert");
                index.commit().expect("commit");
                let query = format!("w{word} common");
                let search = |f: &Filter, k| index.search(&query, k, f);
                check(&before, &person, k, 8, &search)?;

                let after = chunks(r, &corpus, |d| (corpus[d].1 + shift) % ACCESSES.len());
                prop_assert_eq!(index.update_records(&after).expect("update"), after.len());
                index.commit().expect("commit");
                check(&after, &person, k, 8, &search)?;
                for d in 0..corpus.len() {
                    index.delete_document(&doc_of(r, d)).expect("delete");
                }
                index.commit().expect("commit");
                Ok(())
            },
        )
        .unwrap();
}

/// Replacing the record of a chunk that is not stored stores nothing.
pub fn updating_an_absent_record_stores_nothing(index: &dyn LexicalIndex) {
    let ghost = Spec::new("ghost", "s0", "w1 common").readers(&["group:g0"]);
    assert_eq!(index.update_records(&[ghost.chunk()]).expect("update"), 0);
    index.commit().expect("commit");
    assert_eq!(index.count().expect("count"), 0);
}

/// The same for a vector index.
pub fn updating_an_absent_vector_record_stores_nothing(index: &dyn VectorIndex) {
    let ghost = Spec::new("ghost", "s0", "w1 common").readers(&["group:g0"]);
    assert_eq!(index.update_records(&[ghost.chunk()]).expect("update"), 0);
    index.commit().expect("commit");
    assert_eq!(index.count().expect("count"), 0);
}
