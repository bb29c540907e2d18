//! Whether a store's catalog and indexes agree, and the one-step repair when they do not: what
//! every writing open runs first ([`Store::check_and_repair`]) and what `zhiku verify` reports
//! ([`Store::problems`]).
//!
//! The catalog is the truth: both indexes commit before it is saved, so after a crash an index
//! may hold chunks the catalog does not list (orphans, deleted) or lack chunks of a document it
//! lists (the document is dropped and queued for re-indexing). See
//! [`Consistency`](zhiku_domain::usecases::Consistency) for the chunk-by-chunk rules.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, anyhow};
use serde::Serialize;
use zhiku_domain::ports::StoredCatalog;
use zhiku_domain::usecases::{Catalog, Checked, ChunkRepair, Consistency};
use zhiku_domain::{ChunkId, DocId};

use crate::Store;

/// What [`Store::check_and_repair`] found and did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Repair {
    /// Chunks present in an index but not in the manifest, deleted.
    pub orphans_removed: usize,
    /// Documents with chunks missing from an index, dropped from the manifest and from both
    /// indexes so the next `zhiku index` re-indexes them.
    pub docs_requeued: Vec<String>,
    /// Files in the lexical index that its committed state does not reference (left by a writer
    /// killed mid-commit), removed before writing.
    pub stray_files_removed: Vec<String>,
    /// The user dictionary changed since the lexical index was last analysed: the chunks
    /// holding a changed word were analysed again.
    pub reanalysed: Option<Reanalysis>,
}

/// A changed user dictionary applied to the chunks it affects.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reanalysis {
    /// Words added, removed or changed.
    pub words: usize,
    /// Chunks analysed again (nothing embedded).
    pub chunks: usize,
    /// Chunks in the lexical index.
    pub of: usize,
}

impl Repair {
    /// True when something was repaired.
    pub fn repaired(&self) -> bool {
        self.orphans_removed > 0
            || !self.docs_requeued.is_empty()
            || !self.stray_files_removed.is_empty()
            || self.reanalysed.is_some()
    }

    /// One line saying what was repaired.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.reanalysed {
            parts.push(format!(
                "user dictionary changed ({} words): {} of {} chunks analysed again",
                r.words, r.chunks, r.of
            ));
        }
        if !self.stray_files_removed.is_empty() {
            parts.push(format!(
                "{} stray lexical-index files removed ({})",
                self.stray_files_removed.len(),
                self.stray_files_removed.join(", ")
            ));
        }
        if self.orphans_removed > 0 {
            parts.push(format!("{} orphan chunks removed", self.orphans_removed));
        }
        if !self.docs_requeued.is_empty() {
            parts.push(format!(
                "{} documents with missing chunks dropped and queued for re-indexing ({})",
                self.docs_requeued.len(),
                self.docs_requeued.join(", ")
            ));
        }
        parts.join("; ")
    }
}

/// Inconsistencies between manifest and indexes.
#[derive(Debug, Default, Serialize)]
pub struct Problems {
    /// Files in the lexical index folder that its committed state does not reference: left by
    /// a writer killed mid-commit (the next writing open removes them), or the work in progress
    /// of a writer running now.
    pub stray_files: Vec<String>,
    /// Chunks in the lexical index that the manifest does not list.
    pub lexical_orphans: Vec<ChunkId>,
    /// Chunks in the vector index that the manifest does not list.
    pub vector_orphans: Vec<ChunkId>,
    /// Documents with at least one chunk missing from an index.
    pub docs_missing_chunks: Vec<String>,
}

impl Problems {
    /// True when manifest and indexes agree.
    pub fn is_empty(&self) -> bool {
        self.stray_files.is_empty()
            && self.lexical_orphans.is_empty()
            && self.vector_orphans.is_empty()
            && self.docs_missing_chunks.is_empty()
    }
}

impl Store {
    /// Compares manifest, lexical index and vectors chunk by chunk and repairs from the manifest
    /// in one step (see [`Consistency::repair`]); the manifest is saved after both indexes
    /// committed, so a crash during the repair leaves a state the next repair finishes. Skipped
    /// when both indexes still carry the generations recorded with the manifest.
    pub fn check_and_repair(&mut self) -> Result<Repair> {
        if self.is_read_only() {
            return Err(anyhow!(
                "the store was opened read-only and cannot be repaired"
            ));
        }
        let turn = self.begin_write()?;
        // Both indexes still carry the generations saved with the catalog: nothing committed
        // since, so they hold what it lists (a crash after an index commit and before the
        // catalog save changes a generation). Or the catalog store saw every earlier write
        // finish (a store several processes write, which keeps no generations). Checked in
        // O(1) instead of chunk by chunk.
        if self.generations_match() || self.earlier_writes_finished() == Some(true) {
            turn.finish();
            return Ok(Repair::default());
        }
        let repair = self.repair_chunks()?;
        turn.finish();
        Ok(repair)
    }

    /// Inside a turn, holding the store for reading: when the catalog store says an earlier
    /// write did not finish (a writer killed midway, on this machine or another), checks the
    /// store chunk by chunk. Consistent: the catalog store is told so and `None` comes back.
    /// Otherwise what the check saw, for [`Self::repair_checked`] in the same turn. How a
    /// process that serves a store kept on a server heals what a writer killed elsewhere left,
    /// without waiting for the next writing open, and with searches going on during the check.
    pub fn check_if_unvouched(&self) -> Result<Option<Checked>> {
        if self.earlier_writes_finished() != Some(false) {
            return Ok(None);
        }
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let checked =
            Consistency::new(self.lexical.as_ref(), vectors).inspect(&self.recorded.catalog)?;
        if checked.problems().is_empty() {
            self.vouch_consistent();
            return Ok(None);
        }
        Ok(Some(checked))
    }

    /// Inside the turn of [`Self::check_if_unvouched`]: repairs what its check found, from
    /// the same listings (both indexes are listed once).
    pub fn repair_checked(&mut self, checked: Checked) -> Result<Repair> {
        self.repair_with(Some(checked))
    }

    /// Inside a turn: checks every catalogued chunk against both indexes and repairs the store
    /// in one step (see [`Self::check_and_repair`]), then tells the catalog store it was
    /// checked.
    fn repair_chunks(&mut self) -> Result<Repair> {
        self.repair_with(None)
    }

    /// The repair of [`Self::repair_chunks`], from `checked` when the caller already listed
    /// the indexes in this turn.
    fn repair_with(&mut self, checked: Option<Checked>) -> Result<Repair> {
        // A writing open lists no stray files (it swept them): the repair is about chunks.
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let consistency = Consistency::new(self.lexical.as_ref(), vectors);
        let (catalog, done) = match checked {
            Some(checked) => consistency.repair_checked(&self.recorded.catalog, checked)?,
            None => consistency.repair(&self.recorded.catalog)?,
        };
        self.vouch_consistent();
        if done.is_empty() {
            self.record_vouched_generations()?;
            return Ok(Repair::default());
        }
        self.commit_repaired(catalog, &done)?;
        Ok(Repair {
            orphans_removed: done.orphans_removed,
            docs_requeued: done.docs_requeued.iter().map(ToString::to_string).collect(),
            stray_files_removed: Vec::new(),
            reanalysed: None,
        })
    }

    /// Consistent: records the generations the check vouched for, so the next open need not
    /// check again.
    fn record_vouched_generations(&mut self) -> Result<()> {
        let current = self.generations();
        if !current.is_unknown() && current != self.recorded.generations {
            // Only the header changes: no document row is written.
            self.commit(|_, _| {})?;
        }
        Ok(())
    }

    /// Saves `catalog`, what the repair left of the recorded one, with the sources and stamps
    /// of the documents it kept: a requeued document's file must be read again.
    fn commit_repaired(&mut self, catalog: Catalog, done: &ChunkRepair) -> Result<()> {
        let mut sources = self.recorded.sources.clone();
        for id in &done.docs_requeued {
            sources.remove(id);
        }
        let mut next = StoredCatalog {
            catalog,
            sources,
            stamps: BTreeMap::new(),
            generations: Default::default(),
            origin: self.recorded.origin.clone(),
        };
        next.stamps = next.stamps_of_sources(&self.recorded.stamps);
        self.commit_catalog(next)?;
        Ok(())
    }

    /// A full consistency check: every manifest chunk in every index, nothing else there.
    pub fn problems(&self) -> Result<Problems> {
        let vectors = self.dense.as_ref().map(|(_, v)| v.as_ref());
        let chunks =
            Consistency::new(self.lexical.as_ref(), vectors).check(&self.recorded.catalog)?;
        // A writing open swept what a killed writer left before its first write (reported in
        // its repair); whatever is unreferenced later is this process's own work in progress (a
        // commit's background merge), not damage. Only a read-only open lists stray files.
        let stray_files = if self.is_read_only() {
            self.stray_files()?
        } else {
            Vec::new()
        };
        Ok(Problems {
            stray_files,
            lexical_orphans: chunks.lexical_orphans,
            vector_orphans: chunks.vector_orphans,
            docs_missing_chunks: chunks
                .docs_missing_chunks
                .iter()
                .map(ToString::to_string)
                .collect(),
        })
    }

    /// Beside a running writer, this store's manifest was read before the indexes, and writes
    /// may have committed in between (indexes first, then the manifest): what the manifest on
    /// disk now explains is such a write, not damage. Drops from `problems` the orphans the
    /// current manifest lists and the documents whose entry changed since this store's
    /// manifest was read.
    pub fn discount_later_writes(&self, problems: &mut Problems) -> Result<()> {
        let Some(later) = self.load_catalog()? else {
            return Ok(());
        };
        let listed: BTreeSet<&ChunkId> = later
            .catalog
            .docs
            .values()
            .flat_map(|e| e.chunk_ids.iter())
            .collect();
        problems.lexical_orphans.retain(|id| !listed.contains(id));
        problems.vector_orphans.retain(|id| !listed.contains(id));
        problems
            .docs_missing_chunks
            .retain(|doc| match DocId::new(doc) {
                Ok(id) => later.catalog.docs.get(&id) == self.recorded.catalog.docs.get(&id),
                Err(_) => true,
            });
        Ok(())
    }
}
