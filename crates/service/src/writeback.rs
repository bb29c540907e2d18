//! Agent write-back (issue 18 §6): knowledge an agent writes into its own scope, through a
//! quality gate and a duplicate check, every decision recorded in the audit log.
//!
//! Only writes made as write-back pass the gate ([`KnowledgeBase::add_knowledge`]: MCP
//! `add_knowledge`); `put_document` (`POST /v1/documents`) stays the plain write a curator or a
//! sync job makes. A write-back is judged in this order:
//!
//! 1. the caller must have the write right and see the scope (an error, not audited: no write
//!    was judged);
//! 2. the quality gate ([`gate`]): `too_short`, `echoes_question`, `refusal` → refused;
//!    then, with `judge = "llm"`, the judge ([`Judge::states_knowledge`]): `states_nothing`
//!    → refused (an unreachable judge leaves the rules' verdict, said in the entry's detail);
//! 3. duplicates among the documents of the same scope (but the one a given ID updates): the same normalised
//!    content hash is `duplicate`, Jaccard of shingles ≥ the threshold is `near_duplicate`.
//!    With `write_back_duplicates = "refuse"` both are refused; with `"merge"` a duplicate is
//!    skipped (nothing written, the existing document stands) and a near duplicate becomes an
//!    update of the document it duplicates (its ID and path, the new text: `merged`);
//! 4. otherwise the document is written (`accepted`, reason `new`; an ID given that exists
//!    already is its update, reason `update`) through `put_document`, whose own refusals
//!    (a bad path, an unreadable `ttl`) are audited as refused with reason `invalid`.
//!
//! The audit comes first: an ID given is checked before anything else is recorded (an invalid
//! one is refused, audited shortened and escaped: [`for_audit`]), and an accepted or merged
//! write is audited once every check of the write has passed and before anything is written,
//! so a trail that cannot be written stops the write (503, naming no server path) and nothing
//! is committed unaudited; a write that then fails is put back and audited again as refused,
//! reason `write_failed`. Every writer-given text of an entry is escaped and bounded.
//!
//! An ID not given is derived from the scope and the text ([`derived_id`]): the same text in
//! the same scope is the same document, and one scope can neither probe another's texts
//! through the IDs nor take the IDs another scope's write-backs will have.
//!
//! The duplicate check reads the scope's documents from the document store, so its cost grows
//! with the scope (fine for a cache of a few hundred entries; a large curated scope wants an
//! index of shingle sketches, left for later).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Serialize;
use serde_json::Value;
#[cfg(doc)]
use zhiku_domain::ports::Judge;
use zhiku_domain::ports::{AuditEntry, AuditLog};
use zhiku_domain::rules::writeback::{
    content_hash, derived_id, gate, jaccard, normalise, shingles,
};
use zhiku_domain::{DocId, Scope, Timestamp};

use crate::error::{Access, Act, Forbidden, Unavailable};
use crate::ids::checked_new_id;
use crate::put::PlannedPut;
use crate::{
    Caller, DuplicatePolicy, Ingested, KbError, KnowledgeBase, NewDocument, WriteBackPolicy,
};

/// One write-back.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeWrite {
    /// Its ID (default: `kb-` and 16 hex digits of the hash of its scope and content hash).
    pub id: Option<String>,
    /// Title (default: the first heading).
    pub title: Option<String>,
    /// The Markdown body.
    pub text: String,
    /// Scope (default: the caller's first).
    pub scope: Option<String>,
    /// The question the text answers, when it answers one (the gate refuses an echo of it).
    pub question: Option<String>,
    /// Attributes, as for `put_document` (`ttl`, `expires_at` included).
    pub metadata: BTreeMap<String, Value>,
}

/// What became of a write-back.
#[derive(Debug, Clone, Serialize)]
pub struct WriteBackOutcome {
    /// `accepted`, `merged`, `skipped` or `refused`.
    pub decision: String,
    /// The reason's code.
    pub reason: String,
    /// The reason in words.
    pub detail: String,
    /// The document written (or that would have been).
    pub doc_id: String,
    /// The document it duplicates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// What the write did, when something was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingested: Option<Ingested>,
}

/// One decision about a write-back, as its audit entry and its outcome say it.
#[derive(Debug)]
struct Verdict {
    decision: &'static str,
    reason: &'static str,
    detail: String,
    doc_id: String,
    duplicate_of: Option<String>,
}

impl Verdict {
    /// `doc_id` refused for `reason`.
    fn refused(reason: &'static str, detail: String, doc_id: &str) -> Self {
        Self {
            decision: "refused",
            reason,
            detail,
            doc_id: doc_id.to_string(),
            duplicate_of: None,
        }
    }

    /// What a write that passed every check is audited as, once the document store planned
    /// it: the update of the document it nearly duplicates (`merges`), or its own.
    fn accepted(planned: &PlannedPut<'_>, doc_id: &str, merges: bool, judged: &str) -> Self {
        let (decision, reason) = match (merges, planned.updates) {
            (true, _) => ("merged", "near_duplicate"),
            (false, true) => ("accepted", "update"),
            (false, false) => ("accepted", "new"),
        };
        let detail = if merges {
            format!("replaced the text of {doc_id}{judged}")
        } else {
            format!("written as {}{judged}", planned.path)
        };
        Self {
            decision,
            reason,
            detail,
            doc_id: doc_id.to_string(),
            duplicate_of: merges.then(|| doc_id.to_string()),
        }
    }

    fn outcome(self, ingested: Option<Ingested>) -> WriteBackOutcome {
        WriteBackOutcome {
            decision: self.decision.into(),
            reason: self.reason.into(),
            detail: self.detail,
            doc_id: self.doc_id,
            duplicate_of: self.duplicate_of,
            ingested,
        }
    }
}

/// Where one write-back's decisions are recorded, and what every entry of it says.
struct Audit<'a> {
    log: &'a dyn AuditLog,
    at: Timestamp,
    who: &'a str,
    scope: &'a Scope,
    content_hash: String,
}

impl Audit<'_> {
    /// Appends `v` to the audit log, its writer-given texts escaped and bounded.
    fn append(&self, v: &Verdict) -> Result<(), KbError> {
        self.log
            .append(&AuditEntry {
                at: self.at,
                who: for_audit(self.who),
                doc_id: for_audit(&v.doc_id),
                scope: self.scope.to_string(),
                decision: v.decision.into(),
                reason: v.reason.into(),
                detail: for_audit(&v.detail),
                duplicate_of: v.duplicate_of.as_deref().map(for_audit),
                content_hash: self.content_hash.clone(),
            })
            .map_err(audit_unavailable)
    }

    /// Appends `v`, then makes it the outcome of a write-back that wrote nothing.
    fn record(&self, v: Verdict) -> Result<WriteBackOutcome, KbError> {
        self.append(&v)?;
        Ok(v.outcome(None))
    }
}

/// The document of the scope closest to a write-back's text.
#[derive(Debug)]
struct Closest {
    /// It holds the same text (normalised).
    exact: bool,
    /// Jaccard similarity of the two texts' shingles (1 when exact).
    similarity: f64,
    doc: DocId,
    path: String,
}

/// Where a write-back goes once no duplicate stops it.
#[derive(Debug)]
struct Target {
    doc_id: String,
    /// Its path, when it replaces the text of a document it nearly duplicates.
    path: Option<String>,
    /// It replaces the text of the document it nearly duplicates.
    merges: bool,
}

/// What a duplicate makes of a write-back to `id`: refused, skipped (an exact one, merging),
/// or an update of the document it nearly duplicates (merging); without one, the write as
/// asked.
fn target_of(
    closest: Option<Closest>,
    policy: &WriteBackPolicy,
    id: &str,
) -> ControlFlow<Verdict, Target> {
    let as_asked = Target {
        doc_id: id.to_string(),
        path: None,
        merges: false,
    };
    let Some(c) = closest.filter(|c| c.exact || c.similarity >= policy.near_duplicate) else {
        return ControlFlow::Continue(as_asked);
    };
    let (reason, detail) = if c.exact {
        ("duplicate", format!("the same text as {}", c.doc))
    } else {
        (
            "near_duplicate",
            format!(
                "{:.2} similar to {} (threshold {:.2})",
                c.similarity, c.doc, policy.near_duplicate
            ),
        )
    };
    let duplicate_of = Some(c.doc.to_string());
    match (policy.duplicates, c.exact) {
        (DuplicatePolicy::Refuse, _) => ControlFlow::Break(Verdict {
            duplicate_of,
            ..Verdict::refused(reason, detail, id)
        }),
        (DuplicatePolicy::Merge, true) => ControlFlow::Break(Verdict {
            decision: "skipped",
            reason,
            detail,
            doc_id: c.doc.to_string(),
            duplicate_of,
        }),
        (DuplicatePolicy::Merge, false) => ControlFlow::Continue(Target {
            doc_id: c.doc.to_string(),
            path: Some(c.path),
            merges: true,
        }),
    }
}

impl KnowledgeBase {
    /// Judges and, when it passes, writes `w` into the caller's scope (see the module docs);
    /// every outcome, accepted or refused, is appended to the audit log first.
    pub fn add_knowledge(
        &self,
        caller: &Caller,
        w: KnowledgeWrite,
    ) -> Result<WriteBackOutcome, KbError> {
        if !caller.write {
            return Err(Forbidden::WriteRight {
                caller: caller.name.clone(),
                act: Act::Write,
            }
            .into());
        }
        let scope = crate::kb::writable_scope(caller, w.scope.as_deref())?;
        let (policy, now) = {
            let inner = self.read();
            (inner.store.settings.write_back, inner.store.now_utc())
        };
        let audit = Audit {
            log: self.audit.as_ref(),
            at: now,
            who: &caller.name,
            scope: &scope,
            content_hash: content_hash(&w.text),
        };
        // A given ID is checked before anything is recorded: an invalid one (a megabyte long,
        // holding line breaks or terminal escapes) is audited shortened and escaped, and
        // refused.
        if let Some(given) = &w.id
            && let Err(e) = checked_new_id(given)
        {
            audit.append(&Verdict::refused("invalid", e.to_string(), given))?;
            return Err(e);
        }
        // A derived ID is the text's within its scope only (`derived_id`).
        let id =
            w.id.clone()
                .unwrap_or_else(|| derived_id(&scope, &audit.content_hash));
        let judged = match self.gate_and_judge(&w, policy.min_chars, &id) {
            ControlFlow::Continue(judged) => judged,
            ControlFlow::Break(refused) => return audit.record(refused),
        };
        let closest = self.closest_in_scope(caller, &scope, &w, &audit.content_hash);
        match target_of(closest, &policy, &id) {
            ControlFlow::Continue(target) => self.write_back(caller, &w, target, &judged, &audit),
            ControlFlow::Break(decided) => audit.record(decided),
        }
    }

    /// The quality gate, then the judge when one is configured (it has the gate's last word;
    /// when it cannot be reached the rules alone decide): a refusal, or what the audit entry
    /// says of the judge ("" without one).
    fn gate_and_judge(
        &self,
        w: &KnowledgeWrite,
        min_chars: usize,
        id: &str,
    ) -> ControlFlow<Verdict, String> {
        if let Err((refusal, detail)) = gate(&w.text, w.question.as_deref(), min_chars) {
            return ControlFlow::Break(Verdict::refused(refusal.code(), detail, id));
        }
        let Some(judge) = &self.judge else {
            return ControlFlow::Continue(String::new());
        };
        match judge.states_knowledge(&w.text) {
            Ok(true) => ControlFlow::Continue(format!(" (judged by {})", judge.identity())),
            Ok(false) => {
                let detail = format!("{} read it as stating no fact", judge.identity());
                ControlFlow::Break(Verdict::refused("states_nothing", detail, id))
            }
            Err(e) => ControlFlow::Continue(format!(" (the rules alone: {e})")),
        }
    }

    /// The document of `scope` closest to `w`'s text, and whether it is the same text. An ID
    /// the caller gives names the document it updates, which is no duplicate of itself; a
    /// derived ID is the content's, so a document holding it is the same text.
    fn closest_in_scope(
        &self,
        caller: &Caller,
        scope: &Scope,
        w: &KnowledgeWrite,
        hash: &str,
    ) -> Option<Closest> {
        let updates = w.id.as_deref();
        let own = shingles(&normalise(&w.text));
        let mut closest: Option<Closest> = None;
        let inner = self.read();
        let candidates: Vec<DocId> = inner
            .docs
            .values()
            .filter(|d| d.scope == *scope && Some(d.id.as_str()) != updates)
            .map(|d| d.id.clone())
            .collect();
        for other in candidates {
            let Ok((doc, path)) = self.visible_document(&inner, caller, other.as_str()) else {
                continue;
            };
            let exact = content_hash(doc.content()) == hash;
            let similarity = if exact {
                1.0
            } else {
                jaccard(&own, &shingles(&normalise(doc.content())))
            };
            let better = closest
                .as_ref()
                .is_none_or(|c| (exact, similarity) > (c.exact, c.similarity));
            if better {
                closest = Some(Closest {
                    exact,
                    similarity,
                    doc: other,
                    path,
                });
            }
        }
        closest
    }

    /// Writes `w` to `target` through the put path. The decision is audited once every check
    /// of the write has passed and before anything is written: an audit log that cannot be
    /// written stops the write, so nothing is ever committed unaudited. A write that fails
    /// after that is audited again as refused.
    fn write_back(
        &self,
        caller: &Caller,
        w: &KnowledgeWrite,
        target: Target,
        judged: &str,
        audit: &Audit<'_>,
    ) -> Result<WriteBackOutcome, KbError> {
        let Target {
            doc_id,
            path,
            merges,
        } = target;
        let mut audited: Option<Verdict> = None;
        let mut audit_failed = false;
        let written = self.put_one(
            caller,
            NewDocument {
                id: doc_id.clone(),
                path,
                title: w.title.clone(),
                text: w.text.clone(),
                scope: Some(audit.scope.to_string()),
                locale: None,
                metadata: w.metadata.clone(),
            },
            &mut |planned| {
                let verdict = Verdict::accepted(planned, &doc_id, merges, judged);
                audit
                    .append(&verdict)
                    .inspect_err(|_| audit_failed = true)?;
                audited = Some(verdict);
                Ok(())
            },
        );
        match (written, audited) {
            (Ok(ingested), Some(verdict)) => Ok(verdict.outcome(Some(ingested))),
            (Ok(_), None) => Err(KbError::Internal(anyhow::anyhow!(
                "a write-back was written without its audit entry"
            ))),
            (Err(e), _) if audit_failed => Err(e),
            (Err(e), Some(_)) => {
                // Accepted and audited, then the write failed and was put back: the trail says
                // so (best effort: the failure is the answer either way).
                let detail = format!(
                    "accepted, but the write failed; nothing was written: {}",
                    e.public_message()
                );
                let _ = audit.append(&Verdict::refused("write_failed", detail, &doc_id));
                Err(e)
            }
            (Err(e), None) => {
                audit.record(Verdict::refused("invalid", e.public_message(), &doc_id))?;
                Err(e)
            }
        }
    }

    /// The audit entries of the caller's scopes, oldest first. A person (not an operator)
    /// gets the entries of their own writes and of documents they may read now: an entry names
    /// a document and what it duplicated, which a person outside its readers may not learn.
    pub fn audit_entries(&self, caller: &Caller) -> Result<Vec<AuditEntry>, KbError> {
        let entries = self.audit.entries().map_err(|e| {
            tracing::error!(target: "zhiku::error", error = %e, "cannot read the audit log");
            KbError::from(Unavailable::AuditLog(Access::Read))
        })?;
        let inner = self.read();
        let readable = |id: &str| {
            DocId::new(id)
                .ok()
                .and_then(|id| inner.docs.get(&id))
                .is_some_and(|d| caller.reads(&d.scope, &d.access))
        };
        let person = caller.principal.is_some() && !caller.operator;
        Ok(entries
            .into_iter()
            .filter(|e| Scope::new(&e.scope).is_ok_and(|s| caller.sees(&s)))
            .filter(|e| {
                !person
                    || e.who == caller.name
                    || (readable(&e.doc_id) && e.duplicate_of.as_deref().is_none_or(readable))
            })
            .collect())
    }

    /// The same knowledge base, recording write-back decisions in `audit`.
    pub fn with_audit(mut self, audit: std::sync::Arc<dyn zhiku_domain::ports::AuditLog>) -> Self {
        self.audit = audit;
        self
    }
}

/// What a client is told when the audit log cannot be written: the details (the log's path on
/// the server, the system's message) go to the server's log only.
fn audit_unavailable(e: zhiku_domain::ports::AuditError) -> KbError {
    tracing::error!(target: "zhiku::error", error = %e, "cannot append to the audit log");
    Unavailable::AuditLog(Access::Write).into()
}

/// The longest text of one audit field, in characters.
const AUDIT_FIELD_CHARS: usize = 512;

/// A writer's text as the audit trail keeps it: control characters (line breaks, tabs,
/// terminal escapes) escaped, and at most [`AUDIT_FIELD_CHARS`] characters, the rest counted,
/// so a field can neither forge a line of a text listing nor grow the trail without bound.
pub(crate) fn for_audit(text: &str) -> String {
    let mut out = String::new();
    for (shown, (at, c)) in text.char_indices().enumerate() {
        if shown >= AUDIT_FIELD_CHARS {
            out.push_str(&format!("… ({} more bytes)", text.len() - at));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_field_is_escaped_and_bounded() {
        assert_eq!(for_audit("kb-1"), "kb-1");
        assert_eq!(for_audit("文档 一"), "文档 一");
        assert_eq!(
            for_audit("a\n{\"decision\":\"accepted\"}\t\u{1b}[31mred\u{7}"),
            "a\\n{\"decision\":\"accepted\"}\\t\\u{1b}[31mred\\u{7}"
        );
        let huge = "x".repeat(1 << 20);
        let kept = for_audit(&huge);
        assert!(kept.len() < 600, "{}", kept.len());
        assert!(
            kept.ends_with(&format!("… ({} more bytes)", (1 << 20) - 512)),
            "{kept}"
        );
        assert!(!for_audit(&"\n".repeat(10_000)).contains('\n'));
    }
}
