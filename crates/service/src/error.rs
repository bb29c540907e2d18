//! The service's error, in terms a transport maps to its own codes. Each kind carries a typed
//! value saying what it is about ([`Invalid`], [`Forbidden`], [`Missing`], [`Conflict`],
//! [`Unavailable`]); its `Display` is the message a client reads.

use std::fmt;

use zhiku_domain::ports::{CatalogError, DocumentError};
use zhiku_domain::rules::section::ReadError;
use zhiku_domain::usecases::{AskError, RetrieveError};

/// Why a call failed, in terms a protocol can map to its own codes.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    /// The request is malformed or out of bounds.
    #[error("{0}")]
    Invalid(Invalid),
    /// The caller lacks a right (writing) or a scope.
    #[error("{0}")]
    Forbidden(Forbidden),
    /// Nothing the caller may see has this name.
    #[error("{0}")]
    NotFound(Missing),
    /// The request conflicts with what is stored.
    #[error("{0}")]
    Conflict(Conflict),
    /// What was asked for is larger than a read may return: `what` (a document, or a section
    /// of one) has `chars` characters, more than `limit`.
    #[error(
        "{what} has {chars} characters; a read returns at most {limit}: read one of its sections instead"
    )]
    TooLarge {
        /// The document, or the section of it, as the message names it.
        what: String,
        /// Its size in characters.
        chars: usize,
        /// The most characters a read returns.
        limit: usize,
    },
    /// A backend (vector server, generator, audit log) or every retrieval route is unavailable
    /// now.
    #[error("{0}")]
    Unavailable(Unavailable),
    /// Anything else.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What part of a request a rule of the domain or of a store refused, the rule being said in
/// that code's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The scope a write goes to.
    Scope,
    /// A search's metadata terms and locale, or the caller's scopes it is built over.
    Filter,
    /// A new document's `expires_at` or `ttl`.
    Retention,
    /// A new document's ID.
    DocumentId,
    /// A new document as the document store checks it (its path, its metadata keys).
    Document,
    /// A retrieval request.
    Query,
    /// A question or its answer policy.
    Question,
}

/// Where the earlier turns of a conversation came from: each names them its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversation {
    /// The service's `history` of [`Turn`](crate::Turn)s (turns counted from 1).
    History,
    /// The HTTP API's `messages` (indexed from 0).
    Messages,
}

/// One text of a conversation's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnPart {
    /// A turn's question.
    Question,
    /// A turn's answer.
    Answer,
    /// The standalone question retrieved for.
    Rewritten,
    /// A message's content.
    Content,
}

impl fmt::Display for TurnPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TurnPart::Question => "question",
            TurnPart::Answer => "answer",
            TurnPart::Rewritten => "rewritten",
            TurnPart::Content => "content",
        })
    }
}

/// The rule a document ID given over the API breaks beyond those of every document ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdRule {
    /// It is not in Unicode NFC.
    NotNfc,
    /// It holds this invisible formatting character.
    Invisible(char),
}

/// What is malformed or out of bounds in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// `field` breaks a rule of the code that checks it; `reason` says which, in its words.
    Value {
        /// The part of the request.
        field: Field,
        /// The rule broken, as the checking code says it.
        reason: String,
    },
    /// A text that must say something is blank (`what`: the caller's name for it).
    Empty {
        /// The text, as the message names it ("the question").
        what: String,
    },
    /// A text is longer than accepted.
    TooLong {
        /// The text, as the message names it.
        what: String,
        /// Its length in characters.
        chars: usize,
        /// The most characters accepted.
        limit: usize,
    },
    /// `k` lies outside `1..=max`.
    K {
        /// The largest `k` accepted.
        max: usize,
    },
    /// A batch holds no document.
    NoDocuments,
    /// A new document's ID breaks a rule of IDs given over the API.
    DocumentId {
        /// The ID given.
        id: String,
        /// The rule it breaks.
        rule: IdRule,
    },
    /// A conversation holds more earlier turns than accepted.
    Turns {
        /// Where the turns came from.
        within: Conversation,
        /// How many were given.
        given: usize,
        /// The most accepted.
        limit: usize,
    },
    /// One text of a conversation's turn is longer than accepted.
    TurnText {
        /// Where the turns came from.
        within: Conversation,
        /// The turn's index from 0.
        turn: usize,
        /// Which of its texts.
        part: TurnPart,
        /// Its length in characters.
        chars: usize,
        /// The most characters accepted.
        limit: usize,
    },
    /// A message's role is neither `user` nor `assistant`.
    Role {
        /// The message's index from 0.
        message: usize,
        /// The role given.
        role: String,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Value { reason, .. } => f.write_str(reason),
            Invalid::Empty { what } => write!(f, "{what} must not be empty"),
            Invalid::TooLong { what, chars, limit } => {
                write!(
                    f,
                    "{what} has {chars} characters; at most {limit} are accepted"
                )
            }
            Invalid::K { max } => write!(f, "k must be between 1 and {max}"),
            Invalid::NoDocuments => f.write_str("no documents to add"),
            Invalid::DocumentId {
                id,
                rule: IdRule::NotNfc,
            } => write!(
                f,
                "document id {id:?} must be in Unicode NFC (composed characters)"
            ),
            Invalid::DocumentId {
                id,
                rule: IdRule::Invisible(c),
            } => write!(
                f,
                "document id {id:?} holds the invisible character U+{:04X}",
                *c as u32
            ),
            Invalid::Turns {
                within: Conversation::History,
                given,
                limit,
            } => write!(f, "history: {given} turns, at most {limit} are accepted"),
            Invalid::Turns {
                within: Conversation::Messages,
                given,
                limit,
            } => write!(f, "messages: {given} given, at most {limit}"),
            Invalid::TurnText {
                within: Conversation::History,
                turn,
                part,
                chars,
                limit,
            } => write!(
                f,
                "history turn {}: its {part} has {chars} characters, at most {limit}",
                turn + 1
            ),
            Invalid::TurnText {
                within: Conversation::Messages,
                turn,
                part,
                chars,
                limit,
            } => write!(
                f,
                "messages[{turn}].{part}: {chars} characters, at most {limit}"
            ),
            Invalid::Role { message, role } => write!(
                f,
                "messages[{message}].role: {role:?} is not accepted; a conversation holds only \
                 user and assistant messages"
            ),
        }
    }
}

/// What a write needs the write right for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Adding or replacing documents (and writing knowledge back).
    Write,
    /// Deleting one document.
    Delete,
    /// Removing documents by the retention sweep.
    Remove,
}

/// The right or the scope a caller lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forbidden {
    /// The caller has no scope at all to write to.
    NoScope,
    /// The caller may not see, so may not write to, `scope`.
    Scope {
        /// The caller's name.
        caller: String,
        /// The scope asked for.
        scope: String,
    },
    /// The caller lacks the write right, needed to `act`.
    WriteRight {
        /// The caller's name.
        caller: String,
        /// What it was needed for.
        act: Act,
    },
}

impl fmt::Display for Forbidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Forbidden::NoScope => f.write_str("the caller has no scope"),
            Forbidden::Scope { caller, scope } => {
                write!(f, "{caller} may not write to scope {scope}")
            }
            Forbidden::WriteRight { caller, act } => {
                let act = match act {
                    Act::Write => "write",
                    Act::Delete => "delete",
                    Act::Remove => "remove",
                };
                write!(f, "{caller} may not {act} documents")
            }
        }
    }
}

/// What is not there (or not visible to the caller, which reads the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// No document the caller may see has this ID.
    #[error("no document {id:?}")]
    Document {
        /// The ID asked for.
        id: String,
    },
    /// The document is recorded but its source cannot be read now.
    #[error("document {id:?} cannot be read now: {reason}")]
    Unreadable {
        /// The document's ID.
        id: String,
        /// The document store's message.
        reason: String,
    },
    /// The document has no file to hand out.
    #[error("document {id:?} has no file to open")]
    File {
        /// The document's ID.
        id: String,
    },
    /// The document's page has no picture to show: a page with a text layer (open the file
    /// at it), or no such page.
    #[error("document {id:?} has no picture of page {page}")]
    Page {
        /// The document's ID.
        id: String,
        /// The page asked for.
        page: u32,
    },
    /// What was asked as a section is no section ID at all.
    #[error("document {doc:?} has no section {given:?}")]
    SectionId {
        /// The document's ID.
        doc: String,
        /// What was given.
        given: String,
    },
    /// The document has no section of this ID (now: a renamed heading has a new one).
    #[error("document {doc:?} has no section {section}")]
    Section {
        /// The document's ID.
        doc: String,
        /// The section's ID.
        section: String,
    },
    /// No answer run the caller may see has this trace ID.
    #[error("no trace {id:?}")]
    Trace {
        /// The trace ID asked for.
        id: String,
    },
    /// The document store found nothing of the caller's there, in its own words.
    #[error("{0}")]
    InStore(String),
}

/// What a document cannot be, being `removed`, `swept` or `added`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Added or replaced.
    Add,
    /// Removed by a delete.
    Remove,
    /// Removed by the retention sweep.
    Sweep,
}

/// How a request conflicts with what is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// One ID appears twice in a batch.
    #[error("document {id:?} appears twice in the batch")]
    DuplicateId {
        /// The ID.
        id: String,
    },
    /// Two documents of a batch would be written to one path.
    #[error("two documents of the batch would be written to {path}")]
    DuplicatePath {
        /// The path, relative to the folder.
        path: String,
    },
    /// The document store cannot be written (not a folder).
    #[error("this knowledge base is not a folder; documents cannot be {} over the API", change_word(.change))]
    NotWritable {
        /// The change asked for.
        change: Change,
    },
    /// The document store does not do what was asked.
    #[error("the {adapter} document store does not support {operation}")]
    Unsupported {
        /// The store's adapter name.
        adapter: &'static str,
        /// What was asked.
        operation: &'static str,
    },
    /// The document store refused the change, in its own words.
    #[error("{0}")]
    InStore(String),
}

fn change_word(change: &Change) -> &'static str {
    match change {
        Change::Add => "added",
        Change::Remove => "removed",
        Change::Sweep => "swept",
    }
}

/// A step of a write that needs the indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Indexing documents.
    Index,
    /// Removing a document from the indexes.
    Remove,
    /// Checkpointing the vector index.
    Checkpoint,
}

/// The audit log's access that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading its entries.
    Read,
    /// Appending a decision (so nothing was written).
    Write,
}

/// What is unavailable now (a retry later may help).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// A step of a write failed in an index; `reason` is the index's message.
    #[error("cannot {}: {reason}", step_words(.step))]
    Step {
        /// The step.
        step: Step,
        /// The index's message.
        reason: String,
    },
    /// The audit log cannot be read or written; the details are in the server's log only.
    #[error("{}", audit_words(.0))]
    AuditLog(Access),
    /// No route could retrieve, or the revision check could not read the source, in the
    /// retriever's words.
    #[error("{0}")]
    Retrieval(String),
    /// An answer could not be made (the generator failed, or the revision check could not read
    /// the source), in the answerer's words.
    #[error("{0}")]
    Answer(String),
}

fn step_words(step: &Step) -> &'static str {
    match step {
        Step::Index => "index",
        Step::Remove => "remove",
        Step::Checkpoint => "checkpoint the vectors",
    }
}

fn audit_words(access: &Access) -> &'static str {
    match access {
        Access::Read => "the audit log cannot be read now; the server's log has the details",
        Access::Write => {
            "the audit log cannot be written now, so nothing was written; the server's log has \
             the details"
        }
    }
}

/// What a client is told of an internal error: its details (file paths, the store's and the
/// system's messages) go to the server's log only.
pub const INTERNAL_MESSAGE: &str = "internal error; the server's log has the details";

impl KbError {
    /// The message for a client. An internal error's details are logged, not returned: they
    /// may name server paths or another scope's files.
    pub fn public_message(&self) -> String {
        match self {
            KbError::Internal(inner) => {
                tracing::error!(target: "zhiku::error", error = %format!("{inner:#}"), "internal error");
                INTERNAL_MESSAGE.to_string()
            }
            other => other.to_string(),
        }
    }

    /// `field` refused by the code that checks it, for the reason `e` gives.
    pub(crate) fn invalid(field: Field, e: impl fmt::Display) -> Self {
        KbError::Invalid(Invalid::Value {
            field,
            reason: e.to_string(),
        })
    }

    /// The same error with every occurrence of the `roots` (server paths) in its texts replaced
    /// by `<kb>`.
    pub(crate) fn without(self, roots: &[String]) -> Self {
        let s = Scrub(roots);
        match self {
            KbError::Invalid(v) => KbError::Invalid(v.scrubbed(&s)),
            KbError::Forbidden(v) => KbError::Forbidden(v.scrubbed(&s)),
            KbError::NotFound(v) => KbError::NotFound(v.scrubbed(&s)),
            KbError::Conflict(v) => KbError::Conflict(v.scrubbed(&s)),
            KbError::TooLarge { what, chars, limit } => KbError::TooLarge {
                what: s.text(what),
                chars,
                limit,
            },
            KbError::Unavailable(v) => KbError::Unavailable(v.scrubbed(&s)),
            KbError::Internal(e) => KbError::Internal(anyhow::anyhow!(s.text(format!("{e:#}")))),
        }
    }
}

/// Replaces the server's paths in a text.
struct Scrub<'r>(&'r [String]);

impl Scrub<'_> {
    fn text(&self, m: String) -> String {
        self.0
            .iter()
            .filter(|r| r.len() > 1)
            .fold(m, |m, r| m.replace(r.as_str(), "<kb>"))
    }
}

impl Invalid {
    fn scrubbed(self, s: &Scrub<'_>) -> Self {
        match self {
            Invalid::Value { field, reason } => Invalid::Value {
                field,
                reason: s.text(reason),
            },
            Invalid::Empty { what } => Invalid::Empty { what: s.text(what) },
            Invalid::TooLong { what, chars, limit } => Invalid::TooLong {
                what: s.text(what),
                chars,
                limit,
            },
            Invalid::DocumentId { id, rule } => Invalid::DocumentId {
                id: s.text(id),
                rule,
            },
            Invalid::Role { message, role } => Invalid::Role {
                message,
                role: s.text(role),
            },
            other @ (Invalid::K { .. }
            | Invalid::NoDocuments
            | Invalid::Turns { .. }
            | Invalid::TurnText { .. }) => other,
        }
    }
}

impl Forbidden {
    fn scrubbed(self, s: &Scrub<'_>) -> Self {
        match self {
            Forbidden::NoScope => Forbidden::NoScope,
            Forbidden::Scope { caller, scope } => Forbidden::Scope {
                caller: s.text(caller),
                scope: s.text(scope),
            },
            Forbidden::WriteRight { caller, act } => Forbidden::WriteRight {
                caller: s.text(caller),
                act,
            },
        }
    }
}

impl Missing {
    fn scrubbed(self, s: &Scrub<'_>) -> Self {
        match self {
            Missing::Document { id } => Missing::Document { id: s.text(id) },
            Missing::Unreadable { id, reason } => Missing::Unreadable {
                id: s.text(id),
                reason: s.text(reason),
            },
            Missing::File { id } => Missing::File { id: s.text(id) },
            Missing::Page { id, page } => Missing::Page {
                id: s.text(id),
                page,
            },
            Missing::SectionId { doc, given } => Missing::SectionId {
                doc: s.text(doc),
                given: s.text(given),
            },
            Missing::Section { doc, section } => Missing::Section {
                doc: s.text(doc),
                section: s.text(section),
            },
            Missing::Trace { id } => Missing::Trace { id: s.text(id) },
            Missing::InStore(m) => Missing::InStore(s.text(m)),
        }
    }
}

impl Conflict {
    fn scrubbed(self, s: &Scrub<'_>) -> Self {
        match self {
            Conflict::DuplicateId { id } => Conflict::DuplicateId { id: s.text(id) },
            Conflict::DuplicatePath { path } => Conflict::DuplicatePath { path: s.text(path) },
            Conflict::InStore(m) => Conflict::InStore(s.text(m)),
            other @ (Conflict::NotWritable { .. } | Conflict::Unsupported { .. }) => other,
        }
    }
}

impl Unavailable {
    fn scrubbed(self, s: &Scrub<'_>) -> Self {
        match self {
            Unavailable::Step { step, reason } => Unavailable::Step {
                step,
                reason: s.text(reason),
            },
            Unavailable::Retrieval(m) => Unavailable::Retrieval(s.text(m)),
            Unavailable::Answer(m) => Unavailable::Answer(s.text(m)),
            other @ Unavailable::AuditLog(_) => other,
        }
    }
}

impl From<Invalid> for KbError {
    fn from(v: Invalid) -> Self {
        KbError::Invalid(v)
    }
}

impl From<Forbidden> for KbError {
    fn from(v: Forbidden) -> Self {
        KbError::Forbidden(v)
    }
}

impl From<Missing> for KbError {
    fn from(v: Missing) -> Self {
        KbError::NotFound(v)
    }
}

impl From<Conflict> for KbError {
    fn from(v: Conflict) -> Self {
        KbError::Conflict(v)
    }
}

impl From<Unavailable> for KbError {
    fn from(v: Unavailable) -> Self {
        KbError::Unavailable(v)
    }
}

impl From<RetrieveError> for KbError {
    fn from(e: RetrieveError) -> Self {
        match e {
            RetrieveError::CannotRetrieve { .. } | RetrieveError::Source(_) => {
                Unavailable::Retrieval(e.to_string()).into()
            }
            RetrieveError::InvalidInput(_) => KbError::invalid(Field::Query, e),
        }
    }
}

impl From<AskError> for KbError {
    fn from(e: AskError) -> Self {
        match e {
            AskError::InvalidInput(m) => KbError::invalid(Field::Question, m),
            other => Unavailable::Answer(other.to_string()).into(),
        }
    }
}

impl From<ReadError> for KbError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NoSuchSection { doc, section } => Missing::Section { doc, section }.into(),
            ReadError::TooLarge { what, chars, limit } => KbError::TooLarge { what, chars, limit },
        }
    }
}

impl From<DocumentError> for KbError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Invalid(m) => KbError::invalid(Field::Document, m),
            DocumentError::NotFound(m) => Missing::InStore(m).into(),
            DocumentError::Conflict(m) => Conflict::InStore(m).into(),
            DocumentError::Unsupported { adapter, operation } => {
                Conflict::Unsupported { adapter, operation }.into()
            }
            DocumentError::Io(m) => KbError::Internal(anyhow::anyhow!(m)),
        }
    }
}

impl From<CatalogError> for KbError {
    fn from(e: CatalogError) -> Self {
        KbError::Internal(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each typed error reads exactly as the message clients have always been given.
    #[test]
    fn each_payload_renders_the_message_clients_read() {
        let cases: Vec<(KbError, &str)> = vec![
            (
                Invalid::Empty {
                    what: "the question".into(),
                }
                .into(),
                "the question must not be empty",
            ),
            (
                Invalid::TooLong {
                    what: "query".into(),
                    chars: 9,
                    limit: 8,
                }
                .into(),
                "query has 9 characters; at most 8 are accepted",
            ),
            (Invalid::K { max: 50 }.into(), "k must be between 1 and 50"),
            (Invalid::NoDocuments.into(), "no documents to add"),
            (
                Invalid::DocumentId {
                    id: "e\u{301}".into(),
                    rule: IdRule::NotNfc,
                }
                .into(),
                "document id \"e\\u{301}\" must be in Unicode NFC (composed characters)",
            ),
            (
                Invalid::DocumentId {
                    id: "a".into(),
                    rule: IdRule::Invisible('\u{200B}'),
                }
                .into(),
                "document id \"a\" holds the invisible character U+200B",
            ),
            (
                Invalid::Turns {
                    within: Conversation::History,
                    given: 101,
                    limit: 100,
                }
                .into(),
                "history: 101 turns, at most 100 are accepted",
            ),
            (
                Invalid::Turns {
                    within: Conversation::Messages,
                    given: 101,
                    limit: 100,
                }
                .into(),
                "messages: 101 given, at most 100",
            ),
            (
                Invalid::TurnText {
                    within: Conversation::History,
                    turn: 0,
                    part: TurnPart::Rewritten,
                    chars: 3,
                    limit: 2,
                }
                .into(),
                "history turn 1: its rewritten has 3 characters, at most 2",
            ),
            (
                Invalid::TurnText {
                    within: Conversation::Messages,
                    turn: 0,
                    part: TurnPart::Content,
                    chars: 3,
                    limit: 2,
                }
                .into(),
                "messages[0].content: 3 characters, at most 2",
            ),
            (
                Invalid::Role {
                    message: 2,
                    role: "system".into(),
                }
                .into(),
                "messages[2].role: \"system\" is not accepted; a conversation holds only user and \
                 assistant messages",
            ),
            (Forbidden::NoScope.into(), "the caller has no scope"),
            (
                Forbidden::Scope {
                    caller: "bob".into(),
                    scope: "hr".into(),
                }
                .into(),
                "bob may not write to scope hr",
            ),
            (
                Forbidden::WriteRight {
                    caller: "bob".into(),
                    act: Act::Delete,
                }
                .into(),
                "bob may not delete documents",
            ),
            (
                Missing::SectionId {
                    doc: "a".into(),
                    given: "x".into(),
                }
                .into(),
                "document \"a\" has no section \"x\"",
            ),
            (
                Missing::Section {
                    doc: "a".into(),
                    section: "0123456789abcdef".into(),
                }
                .into(),
                "document \"a\" has no section 0123456789abcdef",
            ),
            (
                Conflict::NotWritable {
                    change: Change::Sweep,
                }
                .into(),
                "this knowledge base is not a folder; documents cannot be swept over the API",
            ),
            (
                Unavailable::Step {
                    step: Step::Checkpoint,
                    reason: "disk full".into(),
                }
                .into(),
                "cannot checkpoint the vectors: disk full",
            ),
            (
                Unavailable::AuditLog(Access::Write).into(),
                "the audit log cannot be written now, so nothing was written; the server's log \
                 has the details",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.public_message(), message, "{error:?}");
        }
    }

    /// A server path is scrubbed from every text of a payload, and what is not a text is kept.
    #[test]
    fn without_scrubs_every_text_and_keeps_the_kind() {
        let roots = ["/srv/kb".to_string()];
        let e = KbError::from(Missing::Unreadable {
            id: "/srv/kb/a.md".into(),
            reason: "cannot open /srv/kb/a.md".into(),
        })
        .without(&roots);
        assert_eq!(
            e.to_string(),
            "document \"<kb>/a.md\" cannot be read now: cannot open <kb>/a.md"
        );
        assert!(matches!(e, KbError::NotFound(Missing::Unreadable { .. })));
        let e = KbError::Internal(anyhow::anyhow!("at /srv/kb/x")).without(&roots);
        assert_eq!(format!("{e:#}"), "at <kb>/x");
        let e = KbError::TooLarge {
            what: "document \"/srv/kb\"".into(),
            chars: 2,
            limit: 1,
        }
        .without(&roots);
        assert!(
            e.to_string()
                .starts_with("document \"<kb>\" has 2 characters")
        );
    }
}
