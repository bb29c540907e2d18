//! The consistency check and repair: does every index hold exactly the chunks the catalog lists?
//!
//! Writers commit the indexes first and save the catalog last, so a crash leaves one of two
//! kinds of damage: chunks in an index that the catalog does not list (orphans: a write whose
//! catalog never got saved, or a deletion that reached one index only), or a catalogued
//! document with a chunk missing from an index (an index that lost a commit). The repair
//! trusts the catalog: a document missing a chunk is dropped from the catalog and from both
//! indexes, so the next indexing run embeds it again, and every chunk the repaired catalog does
//! not list is deleted. The caller saves the repaired catalog last, after both indexes committed.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::contracts::{ChunkId, DocId};
use crate::ports::{IndexError, LexicalIndex, VectorIndex};

use crate::contracts::Catalog;

/// Where a catalog and its indexes disagree, chunk by chunk.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkProblems {
    /// Chunks in the lexical index that the catalog does not list, sorted.
    pub lexical_orphans: Vec<ChunkId>,
    /// Chunks in the vector index that the catalog does not list, sorted.
    pub vector_orphans: Vec<ChunkId>,
    /// Catalogued documents with at least one chunk missing from an index, sorted.
    pub docs_missing_chunks: Vec<DocId>,
}

impl ChunkProblems {
    /// True when catalog and indexes agree.
    pub fn is_empty(&self) -> bool {
        self.lexical_orphans.is_empty()
            && self.vector_orphans.is_empty()
            && self.docs_missing_chunks.is_empty()
    }
}

/// What [`Consistency::repair`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ChunkRepair {
    /// Chunks deleted from an index because the repaired catalog does not list them (the
    /// surviving chunks of requeued documents included), counted once per index.
    pub orphans_removed: usize,
    /// Documents dropped from the catalog and from both indexes because a chunk was missing;
    /// the next indexing run indexes them again. The caller drops their source paths too.
    pub docs_requeued: Vec<DocId>,
}

impl ChunkRepair {
    /// True when nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.orphans_removed == 0 && self.docs_requeued.is_empty()
    }
}

/// The check and repair over one lexical index and, when the dense route exists, one vector
/// index.
pub struct Consistency<'a> {
    lexical: &'a dyn LexicalIndex,
    vectors: Option<&'a dyn VectorIndex>,
}

impl std::fmt::Debug for Consistency<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consistency")
            .field("lexical", &self.lexical.capabilities().adapter)
            .field("vectors", &self.vectors.map(|v| v.capabilities().adapter))
            .finish()
    }
}

/// What one check of a catalog against its indexes saw: the chunk IDs each index held and
/// where they disagree with the catalog. A writer that checks while holding the store for
/// reading and repairs afterwards, without another write in between, repairs from it
/// ([`Consistency::repair_checked`]) instead of listing both indexes twice.
#[derive(Debug)]
pub struct Checked {
    lexical: Listing,
    vectors: Option<Listing>,
    problems: ChunkProblems,
}

impl Checked {
    /// Where the catalog and the indexes disagreed.
    pub fn problems(&self) -> &ChunkProblems {
        &self.problems
    }
}

/// The chunk IDs one index holds.
#[derive(Debug)]
struct Listing {
    stored: BTreeSet<ChunkId>,
}

impl Listing {
    fn orphans(&self, expected: &BTreeSet<&ChunkId>) -> Vec<ChunkId> {
        self.stored
            .iter()
            .filter(|id| !expected.contains(id))
            .cloned()
            .collect()
    }
}

fn expected_ids(catalog: &Catalog) -> BTreeSet<&ChunkId> {
    catalog
        .docs
        .values()
        .flat_map(|entry| entry.chunk_ids.iter())
        .collect()
}

impl<'a> Consistency<'a> {
    /// A check over `lexical` and, when given, `vectors`.
    pub fn new(lexical: &'a dyn LexicalIndex, vectors: Option<&'a dyn VectorIndex>) -> Self {
        Self { lexical, vectors }
    }

    fn list(&self) -> Result<(Listing, Option<Listing>), IndexError> {
        let lexical = Listing {
            stored: self.lexical.all_chunk_ids()?.into_iter().collect(),
        };
        let vectors = match self.vectors {
            Some(v) => Some(Listing {
                stored: v.all_chunk_ids()?.into_iter().collect(),
            }),
            None => None,
        };
        Ok((lexical, vectors))
    }

    fn compare(catalog: &Catalog, lexical: &Listing, vectors: Option<&Listing>) -> ChunkProblems {
        let expected = expected_ids(catalog);
        let docs_missing_chunks = catalog
            .docs
            .iter()
            .filter(|(_, entry)| {
                entry.chunk_ids.iter().any(|id| {
                    !lexical.stored.contains(id) || vectors.is_some_and(|v| !v.stored.contains(id))
                })
            })
            .map(|(doc, _)| doc.clone())
            .collect();
        ChunkProblems {
            lexical_orphans: lexical.orphans(&expected),
            vector_orphans: vectors.map(|v| v.orphans(&expected)).unwrap_or_default(),
            docs_missing_chunks,
        }
    }

    /// Compares `catalog` with the indexes: every catalogued chunk in every index, and nothing
    /// else there. Reads only.
    pub fn check(&self, catalog: &Catalog) -> Result<ChunkProblems, IndexError> {
        Ok(self.inspect(catalog)?.problems)
    }

    /// [`Self::check`], keeping what the indexes held for a [`Self::repair_checked`] of the
    /// same catalog. Reads only.
    pub fn inspect(&self, catalog: &Catalog) -> Result<Checked, IndexError> {
        let (lexical, vectors) = self.list()?;
        let problems = Self::compare(catalog, &lexical, vectors.as_ref());
        Ok(Checked {
            lexical,
            vectors,
            problems,
        })
    }

    /// Repairs the indexes from `catalog` in one step and returns the repaired catalog: the
    /// documents missing a chunk are dropped from it and deleted from both indexes, then every
    /// chunk the repaired catalog does not list is deleted; each index that changed is
    /// committed. A consistent store is left untouched (no write, no commit) and `catalog` comes
    /// back unchanged. The caller saves the returned catalog after this returns, so a crash
    /// during the repair leaves orphans the next repair removes.
    pub fn repair(&self, catalog: &Catalog) -> Result<(Catalog, ChunkRepair), IndexError> {
        let checked = self.inspect(catalog)?;
        self.repair_checked(catalog, checked)
    }

    /// [`Self::repair`] from what [`Self::inspect`] saw of the same `catalog` and indexes.
    /// The caller keeps every other writer out from the inspection to the repair (it holds
    /// the write turn throughout), so the listings are still those of the indexes.
    pub fn repair_checked(
        &self,
        catalog: &Catalog,
        checked: Checked,
    ) -> Result<(Catalog, ChunkRepair), IndexError> {
        let Checked {
            lexical,
            vectors,
            problems: first,
        } = checked;
        if first.is_empty() {
            return Ok((catalog.clone(), ChunkRepair::default()));
        }
        let mut repaired = catalog.clone();
        for doc in &first.docs_missing_chunks {
            repaired.docs.remove(doc);
        }
        // With the requeued documents gone from the catalog, their surviving chunks are
        // orphans too: the same listing finds them all.
        let problems = Self::compare(&repaired, &lexical, vectors.as_ref());
        let requeued = &first.docs_missing_chunks;
        if !requeued.is_empty() || !problems.lexical_orphans.is_empty() {
            for doc in requeued {
                self.lexical.delete_document(doc)?;
            }
            self.lexical.delete_chunks(&problems.lexical_orphans)?;
            self.lexical.commit()?;
        }
        if let Some(index) = self.vectors
            && (!requeued.is_empty() || !problems.vector_orphans.is_empty())
        {
            for doc in requeued {
                index.delete_document(doc)?;
            }
            index.delete_chunks(&problems.vector_orphans)?;
            index.commit()?;
        }
        let repair = ChunkRepair {
            orphans_removed: problems.lexical_orphans.len() + problems.vector_orphans.len(),
            docs_requeued: first.docs_missing_chunks,
        };
        Ok((repaired, repair))
    }
}
