//! The incremental indexer.

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;

use crate::chunker::chunk_document;
use crate::contracts::{Chunk, ChunkId, ChunkingPolicy, DocId, Document, Timestamp};
use crate::ports::{
    EmbedError, EmbeddedChunk, Embedder, IndexError, LexicalIndex, VectorIndex, VectorIndexExt,
};

use crate::rules::retention::{Retention, RetentionError};

use crate::contracts::{Catalog, CatalogChanges, CatalogEntry, DocAbout};

/// Whether documents absent from the input are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncMode {
    /// The input is the whole knowledge base: documents not in it are removed.
    Full,
    /// Like `Full`, but the listed documents are kept as indexed even though they are absent
    /// (their source could not be read this time: bad input loses nothing).
    FullKeeping(BTreeSet<DocId>),
    /// The input adds or replaces documents; nothing else is touched.
    Partial,
}

/// What an indexing run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IndexReport {
    /// Documents seen for the first time.
    pub docs_added: usize,
    /// Documents whose content or attributes changed.
    pub docs_changed: usize,
    /// Documents skipped because nothing changed.
    pub docs_skipped: usize,
    /// Documents removed from both indexes.
    pub docs_removed: usize,
    /// Chunks kept with their existing vectors.
    pub chunks_reused: usize,
    /// Chunks sent to the embedder.
    pub chunks_embedded: usize,
    /// Chunks deleted from both indexes.
    pub chunks_removed: usize,
    /// Embedded chunks the model truncated at its maximum sequence length.
    pub chunks_truncated: usize,
}

/// A run made of steps reports the sum of its steps.
impl std::ops::AddAssign<&IndexReport> for IndexReport {
    fn add_assign(&mut self, step: &IndexReport) {
        self.docs_added += step.docs_added;
        self.docs_changed += step.docs_changed;
        self.docs_skipped += step.docs_skipped;
        self.docs_removed += step.docs_removed;
        self.chunks_reused += step.chunks_reused;
        self.chunks_embedded += step.chunks_embedded;
        self.chunks_removed += step.chunks_removed;
        self.chunks_truncated += step.chunks_truncated;
    }
}

/// Why an indexing run failed. The catalog passed in is never modified; indexes may hold
/// uncommitted or partially written changes that the next run overwrites.
#[derive(Debug, thiserror::Error)]
pub enum IndexerError {
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// The vector index failed.
    #[error("vector index failed: {0}")]
    Vectors(#[source] IndexError),
    /// The lexical index failed.
    #[error("lexical index failed: {0}")]
    Lexical(#[source] IndexError),
    /// The catalog was built with another configuration.
    #[error(
        "the index was built with {what} {recorded}, this run uses {requested}; rebuild the index"
    )]
    ConfigMismatch {
        /// What differs.
        what: &'static str,
        /// Recorded in the catalog.
        recorded: String,
        /// Requested now.
        requested: String,
    },
    /// Two input documents share an ID.
    #[error("two documents have the id {0}")]
    DuplicateDocument(DocId),
    /// Embedder and vector index do not fit together.
    #[error("{0}")]
    Wiring(String),
    /// A document's `expires_at` or `ttl` cannot be read (the error names the document).
    #[error("{0}")]
    Retention(#[from] RetentionError),
}

/// A run chunked and embedded by [`Indexer::prepare`], not yet written.
#[derive(Debug)]
pub struct Prepared {
    changes: CatalogChanges,
    report: IndexReport,
    removed_docs: Vec<DocId>,
    removed_chunks: Vec<ChunkId>,
    lexical_writes: Vec<Chunk>,
    vector_writes: Vec<EmbeddedChunk>,
    /// Chunks that kept their ID and whose vector is stored: their records are replaced, their
    /// vectors left as they are.
    record_updates: Vec<Chunk>,
    space: Option<String>,
}

impl Prepared {
    /// What the run will do once applied.
    pub fn report(&self) -> &IndexReport {
        &self.report
    }

    /// What the run will change in the catalog it was prepared against.
    pub fn changes(&self) -> &CatalogChanges {
        &self.changes
    }
}

/// Progress of a run, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Chunks embedded so far.
    pub embedded: usize,
    /// Chunks to embed in this run.
    pub to_embed: usize,
}

/// Indexes documents incrementally into a lexical index and, when an embedder is given, a
/// vector index.
///
/// A document whose [fingerprint](Document::fingerprint) is unchanged is skipped. Otherwise its
/// chunk IDs are diffed against the catalog: only new chunks are embedded, chunks that are
/// still present are re-stored with their existing vectors and the new document attributes,
/// chunks that disappeared are deleted from both indexes. In [`SyncMode::Full`], documents
/// missing from the input disappear from both indexes. Both indexes are committed before the
/// catalog's changes are returned; the catalog itself is never copied (its size must not set
/// the cost of a small run).
pub struct Indexer<'a> {
    policy: ChunkingPolicy,
    dense: Option<(&'a dyn Embedder, &'a dyn VectorIndex)>,
    lexical: &'a dyn LexicalIndex,
    embed_batch: usize,
    now: Option<Timestamp>,
}

impl std::fmt::Debug for Indexer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("policy", &self.policy)
            .field(
                "dense",
                &self.dense.map(|(e, _)| e.space().identity().to_string()),
            )
            .field("lexical", &self.lexical.analyzer())
            .finish()
    }
}

impl<'a> Indexer<'a> {
    /// An indexer writing to `lexical` only.
    pub fn lexical_only(policy: ChunkingPolicy, lexical: &'a dyn LexicalIndex) -> Self {
        Self {
            policy,
            dense: None,
            lexical,
            embed_batch: 64,
            now: None,
        }
    }

    /// An indexer writing to both indexes. The embedder's space must be the vector index's.
    pub fn hybrid(
        policy: ChunkingPolicy,
        embedder: &'a dyn Embedder,
        vectors: &'a dyn VectorIndex,
        lexical: &'a dyn LexicalIndex,
    ) -> Result<Self, IndexerError> {
        if embedder.space() != vectors.space() {
            return Err(IndexerError::Wiring(format!(
                "the embedder produces {} but the vector index holds {}",
                embedder.space(),
                vectors.space()
            )));
        }
        Ok(Self {
            policy,
            dense: Some((embedder, vectors)),
            lexical,
            embed_batch: 64,
            now: None,
        })
    }

    /// Records `now` as the indexing time of every document this indexer writes
    /// ([`CatalogEntry::indexed_at`]), from which a `ttl` counts. Without it no time is recorded
    /// and only an absolute `expires_at` sets an expiry.
    pub fn at(mut self, now: Timestamp) -> Self {
        self.now = Some(now);
        self
    }

    /// Texts per embedder call (default 64).
    pub fn with_embed_batch(mut self, batch: usize) -> Self {
        self.embed_batch = batch.max(1);
        self
    }

    /// The catalog configuration this indexer writes.
    pub fn empty_catalog(&self) -> Catalog {
        Catalog::new(
            self.policy,
            self.dense.map(|(e, _)| e.space().identity().to_string()),
            self.lexical.analyzer(),
        )
    }

    /// Indexes `docs` against `catalog` and returns the new catalog: [`Indexer::prepare`]
    /// followed by [`Indexer::apply`], the changes applied to a copy of `catalog`.
    pub fn run(
        &self,
        catalog: &Catalog,
        docs: impl IntoIterator<Item = Document>,
        mode: SyncMode,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<(Catalog, IndexReport), IndexerError> {
        let prepared = self.prepare(catalog, docs, mode, on_progress)?;
        let (changes, report) = self.apply(prepared)?;
        Ok((changes.applied(catalog), report))
    }

    /// The slow, read-only half of a run: chunks the documents, diffs them against `catalog`
    /// and embeds the new chunks. Nothing is written to either index, so searches may run
    /// meanwhile; [`Indexer::apply`] then writes the result in one short step.
    pub fn prepare(
        &self,
        catalog: &Catalog,
        docs: impl IntoIterator<Item = Document>,
        mode: SyncMode,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<Prepared, IndexerError> {
        let space = self.dense.map(|(e, _)| e.space().identity().to_string());
        if let Some((what, recorded, requested)) =
            catalog.config_difference(&self.policy, space.as_deref(), &self.lexical.analyzer())
        {
            return Err(IndexerError::ConfigMismatch {
                what,
                recorded,
                requested,
            });
        }
        let mut diff = Diff::default();
        for doc in docs {
            diff.document(doc, catalog, &self.policy, self.now)?;
        }
        diff.remove_absent(catalog, &mode);
        let Diff {
            changes,
            mut report,
            removed_docs,
            removed_chunks,
            lexical_writes,
            reused,
            to_embed,
            ..
        } = diff;
        let (vector_writes, record_updates) = match self.dense {
            Some((embedder, vectors)) => {
                let (record_updates, to_embed) = stored_vectors(vectors, reused, to_embed)?;
                report.chunks_reused = record_updates.len();
                report.chunks_embedded = to_embed.len();
                let mut writes = Vec::with_capacity(to_embed.len());
                report.chunks_truncated +=
                    self.embed(embedder, &to_embed, &mut writes, on_progress)?;
                (writes, record_updates)
            }
            None => {
                report.chunks_reused = reused.len();
                (Vec::new(), Vec::new())
            }
        };
        Ok(Prepared {
            changes,
            report,
            removed_docs,
            removed_chunks,
            lexical_writes,
            vector_writes,
            record_updates,
            space,
        })
    }

    /// Embeds `to_embed` in batches onto `writes`, reporting progress before the first batch
    /// and after each; returns how many embeddings the model truncated.
    fn embed(
        &self,
        embedder: &dyn Embedder,
        to_embed: &[Chunk],
        writes: &mut Vec<EmbeddedChunk>,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<usize, IndexerError> {
        let total = to_embed.len();
        let mut done = 0;
        let mut truncated = 0;
        on_progress(Progress {
            embedded: 0,
            to_embed: total,
        });
        for batch in to_embed.chunks(self.embed_batch) {
            let indexed: Vec<_> = batch.iter().map(Chunk::indexed_text).collect();
            let texts: Vec<&str> = indexed.iter().map(AsRef::as_ref).collect();
            let embeddings = embedder.embed_documents(&texts)?;
            if embeddings.len() != batch.len() {
                return Err(IndexerError::Wiring(format!(
                    "the embedder returned {} vectors for {} texts",
                    embeddings.len(),
                    batch.len()
                )));
            }
            for (chunk, embedding) in batch.iter().zip(embeddings) {
                truncated += usize::from(embedding.truncated());
                writes.push(EmbeddedChunk {
                    chunk: chunk.clone(),
                    embedding,
                });
            }
            done += batch.len();
            on_progress(Progress {
                embedded: done,
                to_embed: total,
            });
        }
        Ok(truncated)
    }

    /// The write half of a run: deletes, upserts and commits both indexes, then returns what
    /// changes in the catalog. `prepared` must come from [`Indexer::prepare`] of an indexer over
    /// the same indexes, against the catalog that is still current.
    pub fn apply(&self, prepared: Prepared) -> Result<(CatalogChanges, IndexReport), IndexerError> {
        let space = self.dense.map(|(e, _)| e.space().identity().to_string());
        if space != prepared.space {
            return Err(IndexerError::Wiring(
                "the prepared run was embedded for another vector space".into(),
            ));
        }
        // Nothing to write: no commit either, so an unchanged run leaves both indexes' commit
        // generations where they were (and costs no fsync).
        if prepared.removed_docs.is_empty()
            && prepared.removed_chunks.is_empty()
            && prepared.lexical_writes.is_empty()
            && prepared.vector_writes.is_empty()
            && prepared.record_updates.is_empty()
        {
            return Ok((prepared.changes, prepared.report));
        }
        if let Some((_, vectors)) = self.dense {
            let v = |e| IndexerError::Vectors(e);
            for doc in &prepared.removed_docs {
                vectors.delete_document(doc).map_err(v)?;
            }
            vectors.delete_chunks(&prepared.removed_chunks).map_err(v)?;
            vectors.upsert_batched(&prepared.vector_writes).map_err(v)?;
            // A kept chunk's new attributes (readers, title, metadata) without writing its
            // vector again: an access change costs no vector write.
            for part in prepared.record_updates.chunks(4096) {
                vectors.update_records(part).map_err(v)?;
            }
        }

        let l = IndexerError::Lexical;
        for doc in &prepared.removed_docs {
            self.lexical.delete_document(doc).map_err(l)?;
        }
        self.lexical
            .delete_chunks(&prepared.removed_chunks)
            .map_err(l)?;
        for part in prepared.lexical_writes.chunks(4096) {
            self.lexical.upsert(part).map_err(l)?;
        }
        self.lexical.commit().map_err(l)?;
        if let Some((_, vectors)) = self.dense {
            vectors.commit().map_err(IndexerError::Vectors)?;
        }
        Ok((prepared.changes, prepared.report))
    }

    /// Removes documents from both indexes and returns what changes in `catalog`. Unknown IDs
    /// are ignored.
    pub fn remove(
        &self,
        catalog: &Catalog,
        ids: &[DocId],
    ) -> Result<(CatalogChanges, IndexReport), IndexerError> {
        let mut changes = CatalogChanges::default();
        let mut report = IndexReport::default();
        for id in ids {
            if let Some(entry) = catalog.docs.get(id)
                && !changes.removed().contains(id)
            {
                changes.remove(id.clone());
                report.docs_removed += 1;
                report.chunks_removed += entry.chunk_ids.len();
                self.lexical
                    .delete_document(id)
                    .map_err(IndexerError::Lexical)?;
                if let Some((_, vectors)) = self.dense {
                    vectors.delete_document(id).map_err(IndexerError::Vectors)?;
                }
            }
        }
        self.lexical.commit().map_err(IndexerError::Lexical)?;
        if let Some((_, vectors)) = self.dense {
            vectors.commit().map_err(IndexerError::Vectors)?;
        }
        Ok((changes, report))
    }
}

/// What a run will write, as its documents are diffed against the catalog one by one.
#[derive(Default)]
struct Diff {
    changes: CatalogChanges,
    report: IndexReport,
    /// The documents of the input so far.
    seen: HashSet<DocId>,
    removed_docs: Vec<DocId>,
    removed_chunks: Vec<ChunkId>,
    /// Every chunk of a new or changed document.
    lexical_writes: Vec<Chunk>,
    /// Those that kept their ID (and so, if the index has it, their vector).
    reused: Vec<Chunk>,
    /// Those that are new.
    to_embed: Vec<Chunk>,
}

impl Diff {
    /// Diffs `doc` against its entry in `catalog`: skipped when its fingerprint is unchanged,
    /// else chunked with `policy` (its expiry resolved from `now`), its chunks kept, new or
    /// gone.
    fn document(
        &mut self,
        doc: Document,
        catalog: &Catalog,
        policy: &ChunkingPolicy,
        now: Option<Timestamp>,
    ) -> Result<(), IndexerError> {
        if !self.seen.insert(doc.id().clone()) {
            return Err(IndexerError::DuplicateDocument(doc.id().clone()));
        }
        let previous = catalog.docs.get(doc.id());
        let fingerprint = doc.fingerprint();
        let about = DocAbout::of(&doc);
        if let Some(entry) = previous.filter(|e| e.fingerprint == fingerprint) {
            self.unchanged(doc.id(), entry, about);
            return Ok(());
        }
        // The expiry rides with every chunk, so a hit carries it to the query-time check.
        let expires_at = Retention::of(&doc)?.expiry(now);
        let doc = doc.with_expiry(expires_at);
        match previous {
            Some(_) => self.report.docs_changed += 1,
            None => self.report.docs_added += 1,
        }
        let chunks = chunk_document(&doc, policy);
        let old: BTreeSet<&ChunkId> = previous
            .map(|e| e.chunk_ids.iter().collect())
            .unwrap_or_default();
        let new: HashSet<&ChunkId> = chunks.iter().map(Chunk::chunk_id).collect();
        for id in &old {
            if !new.contains(*id) {
                self.removed_chunks.push((*id).clone());
            }
        }
        self.changes.write(
            doc.id().clone(),
            CatalogEntry {
                revision: doc.revision().clone(),
                fingerprint,
                chunk_ids: chunks.iter().map(|c| c.chunk_id().clone()).collect(),
                about: Some(about),
                indexed_at: now,
                expires_at,
            },
        );
        for chunk in chunks {
            self.lexical_writes.push(chunk.clone());
            if old.contains(chunk.chunk_id()) {
                self.reused.push(chunk);
            } else {
                self.to_embed.push(chunk);
            }
        }
        Ok(())
    }

    /// An unchanged document is skipped; an entry of an earlier format learns what the document
    /// says of itself without touching either index.
    fn unchanged(&mut self, id: &DocId, entry: &CatalogEntry, about: DocAbout) {
        if entry.about.as_ref() != Some(&about) {
            let mut entry = entry.clone();
            entry.about = Some(about);
            self.changes.write(id.clone(), entry);
        }
        self.report.docs_skipped += 1;
    }

    /// Removes the documents of `catalog` absent from the input, in a full sync (but those it
    /// keeps); then counts the chunks removed from changed documents.
    fn remove_absent(&mut self, catalog: &Catalog, mode: &SyncMode) {
        let keep = match mode {
            SyncMode::Full => Some(BTreeSet::new()),
            SyncMode::FullKeeping(keep) => Some(keep.clone()),
            SyncMode::Partial => None,
        };
        if let Some(keep) = keep {
            for (id, entry) in &catalog.docs {
                if !self.seen.contains(id) && !keep.contains(id) {
                    self.removed_docs.push(id.clone());
                    self.report.docs_removed += 1;
                    self.report.chunks_removed += entry.chunk_ids.len();
                    self.changes.remove(id.clone());
                }
            }
        }
        self.report.chunks_removed += self.removed_chunks.len();
    }
}

/// Splits the chunks that kept their ID into those whose vector the index stores (their
/// records are replaced) and, with the new ones, those to embed (a vector lost from the index
/// is embedded again).
fn stored_vectors(
    vectors: &dyn VectorIndex,
    reused: Vec<Chunk>,
    mut to_embed: Vec<Chunk>,
) -> Result<(Vec<Chunk>, Vec<Chunk>), IndexerError> {
    let ids: Vec<ChunkId> = reused.iter().map(|c| c.chunk_id().clone()).collect();
    let stored = vectors.embeddings(&ids).map_err(IndexerError::Vectors)?;
    let mut kept: Vec<Chunk> = Vec::with_capacity(reused.len());
    for (chunk, embedding) in reused.into_iter().zip(stored) {
        match embedding {
            Some(_) => kept.push(chunk),
            None => to_embed.push(chunk),
        }
    }
    Ok((kept, to_embed))
}
