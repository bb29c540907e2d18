//! Adding and replacing documents: a batch is checked, then planned and embedded under the
//! read lock (searches go on), then written to the document store, both indexes and the
//! catalog together under the write lock — all of it, or none (a failure puts every document
//! and the indexes back).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use zhiku_domain::ports::{DocumentStore, PreparedPut, PutRequest, Staged};
use zhiku_domain::rules::retention::{self, Retention};
use zhiku_domain::usecases::{CatalogEntry, IndexReport, Prepared, SyncMode};
use zhiku_domain::{AccessRule, DocId, Scope};

use crate::error::{Act, Change, Conflict, Field, Forbidden, Invalid, Step, Unavailable};
use crate::ids::checked_new_id;
use crate::kb::{Inner, writable_scope};
use crate::removal::{reindex, set_entry};
use crate::{Caller, DocInfo, Ingested, KbError, KnowledgeBase, NewDocument};

/// One document of a put about to be written, once every check has passed.
#[derive(Debug)]
pub(crate) struct PlannedPut<'a> {
    /// The path it is written to.
    pub(crate) path: &'a str,
    /// Whether it replaces a recorded document.
    pub(crate) updates: bool,
}

/// A batch that passed every check, planned and embedded: what is written next.
struct PlannedBatch {
    /// Each document with the write its document store prepared.
    planned: Vec<(DocId, PreparedPut)>,
    /// Its chunks and vectors, ready to apply to both indexes.
    prepared: Prepared,
    /// The fingerprint each document of the batch was recorded with, if it was: only the
    /// batch's own entries are needed afterwards, to say what happened to each.
    before: BTreeMap<DocId, String>,
}

impl KnowledgeBase {
    /// Adds or replaces a document: writes it into the document store and indexes it
    /// incrementally (only new chunks are embedded).
    ///
    /// The document store checks the path (a folder: its one canonical form, seen by the folder
    /// scan). A document, path, file or sidecar the caller cannot see is answered as not found,
    /// exactly as an unknown one. Document, indexes and catalog change together: when indexing
    /// or saving the catalog fails, the document and the indexes are put back.
    pub fn put_document(&self, caller: &Caller, new: NewDocument) -> Result<Ingested, KbError> {
        self.put_one(caller, new, &mut |_| Ok(()))
    }

    /// [`Self::put_document`], calling `before_write` with what is about to be written once
    /// every check has passed and before anything is written: an error it returns stops the
    /// write with nothing changed (the write-back's audit entry is appended there, so nothing
    /// is committed unaudited).
    pub(crate) fn put_one(
        &self,
        caller: &Caller,
        new: NewDocument,
        before_write: &mut dyn FnMut(&PlannedPut<'_>) -> Result<(), KbError>,
    ) -> Result<Ingested, KbError> {
        self.put_many_then(caller, vec![new], before_write)
            .map(|(mut done, report)| {
                let mut one = done.pop().expect("one document in, one out");
                one.report = report;
                one
            })
            .map_err(|e| self.without_paths(e))
    }

    /// Adds or replaces several documents in one step: all are written and indexed with one
    /// commit of each index and one catalog save, or none is (a failure puts every document and
    /// the indexes back). Each document is checked as by [`Self::put_document`]; an ID or a path
    /// twice in the batch is refused. Each document's `report` says what happened to it alone
    /// (added, changed or unchanged); the batch's whole report comes beside them.
    pub fn put_documents(
        &self,
        caller: &Caller,
        news: Vec<NewDocument>,
    ) -> Result<(Vec<Ingested>, IndexReport), KbError> {
        self.put_many_then(caller, news, &mut |_| Ok(()))
            .map_err(|e| self.without_paths(e))
    }

    /// Checks the caller may write `new`; returns its ID and scope.
    fn checked_new(&self, caller: &Caller, new: &NewDocument) -> Result<(DocId, Scope), KbError> {
        let id = checked_new_id(&new.id)?;
        // An unreadable `expires_at` or `ttl` is the writer's mistake, named with the document.
        let mut retention = zhiku_domain::Metadata::new();
        for key in [retention::EXPIRES_AT, retention::TTL] {
            if let Some(value) = new.metadata.get(key) {
                retention
                    .insert(key, value.clone())
                    .map_err(|e| KbError::invalid(Field::Retention, e))?;
            }
        }
        Retention::of_metadata(id.as_str(), &retention)
            .map_err(|e| KbError::invalid(Field::Retention, e))?;
        Ok((id, writable_scope(caller, new.scope.as_deref())?))
    }

    /// Checks the caller may write every document of the batch, and that no ID is there
    /// twice; returns each one's ID and scope, in order.
    fn checked_batch(
        &self,
        caller: &Caller,
        news: &[NewDocument],
    ) -> Result<Vec<(DocId, Scope)>, KbError> {
        if !caller.write {
            return Err(Forbidden::WriteRight {
                caller: caller.name.clone(),
                act: Act::Write,
            }
            .into());
        }
        if news.is_empty() {
            return Err(Invalid::NoDocuments.into());
        }
        let mut checked = Vec::with_capacity(news.len());
        let mut ids = BTreeSet::new();
        for new in news {
            let (id, scope) = self.checked_new(caller, new)?;
            if !ids.insert(id.clone()) {
                // A conflict within the batch (the schema cannot say "distinct IDs").
                return Err(Conflict::DuplicateId { id: id.to_string() }.into());
            }
            checked.push((id, scope));
        }
        Ok(checked)
    }

    /// Plans the batch's writes with `documents` (which checks each path) and prepares its
    /// chunks and vectors, under the read lock: searches go on meanwhile.
    fn plan_batch(
        &self,
        caller: &Caller,
        documents: &dyn DocumentStore,
        news: &[NewDocument],
        checked: &[(DocId, Scope)],
    ) -> Result<PlannedBatch, KbError> {
        let inner = self.read();
        let store = &inner.store;
        let visible = |other: &DocId| {
            inner
                .docs
                .get(other)
                .is_some_and(|d| caller.reads(&d.scope, &d.access))
        };
        let sees = |s: &Scope| caller.sees(s);
        let mut planned = Vec::with_capacity(news.len());
        let mut paths = BTreeSet::new();
        for (new, (id, scope)) in news.iter().zip(checked) {
            // An overwrite that names no readers keeps the ones the document named itself: an
            // update or a write-back merge must not open a restricted document to its scope.
            let mut metadata = std::borrow::Cow::Borrowed(&new.metadata);
            if !new.metadata.contains_key("access")
                && let Some(own) = inner
                    .docs
                    .get(id)
                    .map(|d| &d.access)
                    .filter(|a| matches!(a.rule(), AccessRule::Document | AccessRule::Api))
            {
                let readers = own.readers().iter().map(|r| r.to_string().into()).collect();
                metadata
                    .to_mut()
                    .insert("access".into(), serde_json::Value::Array(readers));
            }
            let mut plan = documents.prepare_put(&PutRequest {
                id,
                scope,
                path: new.path.as_deref(),
                title: new.title.as_deref(),
                locale: new.locale.as_deref(),
                metadata: &metadata,
                text: &new.text,
                recorded: &store.recorded.sources,
                visible: &visible,
                sees: &sees,
            })?;
            // Written documents take the folder rules' and scope defaults' readers too.
            plan.document = store.settings.access.apply(plan.document);
            // The store refuses another recorded document's path; the batch its own twice.
            if !paths.insert(plan.path.clone()) {
                return Err(Conflict::DuplicatePath {
                    path: plan.path.to_string(),
                }
                .into());
            }
            planned.push((id.clone(), plan));
        }
        let indexer = store.indexer()?;
        let prepared = indexer
            .prepare(
                &store.recorded.catalog,
                planned.iter().map(|(_, p)| p.document.clone()),
                SyncMode::Partial,
                &mut |_| {},
            )
            .map_err(|e| cannot_index(&e))?;
        let before = planned
            .iter()
            .filter_map(|(id, _)| {
                let entry = store.recorded.catalog.docs.get(id)?;
                Some((id.clone(), entry.fingerprint.clone()))
            })
            .collect();
        Ok(PlannedBatch {
            planned,
            prepared,
            before,
        })
    }

    /// Checks, plans and writes the batch `news`; `before_write` is told what is about to be
    /// written once every check has passed, and an error it returns stops the write with
    /// nothing changed.
    pub(crate) fn put_many_then(
        &self,
        caller: &Caller,
        news: Vec<NewDocument>,
        before_write: &mut dyn FnMut(&PlannedPut<'_>) -> Result<(), KbError>,
    ) -> Result<(Vec<Ingested>, IndexReport), KbError> {
        let checked = self.checked_batch(caller, &news)?;
        let started = Instant::now();
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let documents = self.writable(Change::Add)?;
        // The turn is taken before planning, so the plan is made on the catalog on record.
        let turn = self.begin_write()?;
        let turn_taken = started.elapsed();
        // Plan and embed under the read lock: searches go on meanwhile.
        let batch = self.plan_batch(caller, documents, &news, &checked)?;
        let planned = started.elapsed();
        // Every check has passed: what is about to be written is told first (and may stop it).
        for (id, plan) in &batch.planned {
            before_write(&PlannedPut {
                path: &plan.path,
                updates: batch.before.contains_key(id),
            })?;
        }
        // Write the documents, indexes and catalog under the write lock: searches wait briefly.
        let mut inner = self.write();
        let locked = started.elapsed();
        let (report, steps) = write_batch(&mut inner, documents, &batch.planned, batch.prepared)?;
        let done = record_batch(&mut inner, batch.planned, &batch.before);
        drop(inner);
        turn.finish();
        // Where a write's time goes, for an operator who finds writes slow (ZHIKU_LOG=debug).
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            target: "zhiku::put",
            documents = done.len(),
            turn_ms = ms(turn_taken),
            plan_ms = ms(planned - turn_taken),
            lock_wait_ms = ms(locked - planned),
            write_documents_ms = ms(steps.documents),
            write_indexes_ms = ms(steps.indexes),
            save_catalog_ms = ms(steps.catalog),
            total_ms = ms(started.elapsed()),
            "documents written"
        );
        Ok((done, report))
    }
}

/// What a client is told when the indexes cannot take a batch (`e`: the indexer's message).
fn cannot_index(e: &impl std::fmt::Display) -> Unavailable {
    Unavailable::Step {
        step: Step::Index,
        reason: e.to_string(),
    }
}

/// How long each step of [`write_batch`] took.
struct WriteSteps {
    documents: Duration,
    indexes: Duration,
    catalog: Duration,
}

/// Writes the planned documents, applies the prepared chunks to both indexes and saves the
/// catalog; when a step fails, what the earlier ones changed is put back.
fn write_batch(
    inner: &mut Inner,
    documents: &dyn DocumentStore,
    planned: &[(DocId, PreparedPut)],
    prepared: Prepared,
) -> Result<(IndexReport, WriteSteps), KbError> {
    let started = Instant::now();
    let staged = write_documents(documents, planned)?;
    let documents_written = started.elapsed();
    let applied = {
        let indexer = inner.store.indexer()?;
        indexer.apply(prepared)
    };
    let indexes_written = started.elapsed();
    let (changes, report) = match applied {
        Ok(done) => done,
        Err(e) => {
            undo_batch(inner, staged, planned);
            return Err(cannot_index(&e).into());
        }
    };
    let committed = inner.store.commit(|stored, changed| {
        stored.apply(&changes, changed);
        for (id, plan) in planned {
            stored.set_source(id, &plan.path, changed);
            // The file was just written: its stamp is taken at the next refresh.
            stored.set_stamp(&plan.path, None, changed);
        }
    });
    if let Err(e) = committed {
        // The catalog on record still says the old state: put documents and indexes back.
        undo_batch(inner, staged, planned);
        return Err(KbError::Internal(anyhow!(
            "cannot save the manifest; nothing was changed: {:#}",
            anyhow::Error::from(e)
        )));
    }
    staged.into_iter().for_each(|s| s.keep());
    let steps = WriteSteps {
        documents: documents_written,
        indexes: indexes_written - documents_written,
        catalog: started.elapsed() - indexes_written,
    };
    Ok((report, steps))
}

/// Writes each planned document; when one cannot be written, those written before it are
/// put back.
fn write_documents(
    documents: &dyn DocumentStore,
    planned: &[(DocId, PreparedPut)],
) -> Result<Vec<Box<dyn Staged>>, KbError> {
    let mut staged = Vec::with_capacity(planned.len());
    for (_, plan) in planned {
        match documents.write(plan) {
            Ok(s) => staged.push(s),
            Err(e) => {
                staged
                    .into_iter()
                    .rev()
                    .for_each(|s: Box<dyn Staged>| s.undo());
                return Err(e.into());
            }
        }
    }
    Ok(staged)
}

/// Puts every document back as it was, and the indexes as far as they changed; the catalog in
/// memory then lists what the indexes hold.
fn undo_batch(inner: &mut Inner, staged: Vec<Box<dyn Staged>>, planned: &[(DocId, PreparedPut)]) {
    staged.into_iter().rev().for_each(|s| s.undo());
    for (id, plan) in planned {
        match reindex(&inner.store, id, plan.previous.clone()) {
            Ok(entry) => set_entry(&mut inner.store.recorded.catalog, id, entry),
            Err(_) => return,
        }
    }
}

/// Serves each written document as the catalog now describes it, and says what happened to
/// each: added, changed or unchanged (by the fingerprint it was recorded with `before`).
fn record_batch(
    inner: &mut Inner,
    planned: Vec<(DocId, PreparedPut)>,
    before: &BTreeMap<DocId, String>,
) -> Vec<Ingested> {
    let mut done = Vec::with_capacity(planned.len());
    for (id, plan) in planned {
        let entry = inner.store.recorded.catalog.docs.get(&id);
        let info = entry
            .and_then(|e| DocInfo::indexed(&id, e))
            .unwrap_or_else(|| DocInfo::of(&plan.document));
        inner.docs.insert(id.clone(), info);
        let entry = inner.store.recorded.catalog.docs.get(&id);
        done.push(Ingested {
            doc_id: id.to_string(),
            path: plan.path,
            revision: plan.document.revision().to_string(),
            chunk_ids: entry
                .map(|e| e.chunk_ids.iter().map(|c| c.to_string()).collect())
                .unwrap_or_default(),
            report: own_report(before.get(&id), entry),
        });
    }
    done
}

/// What a put did to one document: added (it was not recorded), unchanged (recorded with the
/// same fingerprint) or changed.
fn own_report(before: Option<&String>, now: Option<&CatalogEntry>) -> IndexReport {
    match (before, now) {
        (None, _) => IndexReport {
            docs_added: 1,
            ..IndexReport::default()
        },
        (Some(old), Some(new)) if *old == new.fingerprint => IndexReport {
            docs_skipped: 1,
            ..IndexReport::default()
        },
        _ => IndexReport {
            docs_changed: 1,
            ..IndexReport::default()
        },
    }
}
