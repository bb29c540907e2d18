//! The service's error, in terms a transport maps to its own codes.

use zhiku_domain::ports::{CatalogError, DocumentError};
use zhiku_domain::usecases::RetrieveError;

/// Why a call failed, in terms a protocol can map to its own codes.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    /// The request is malformed or out of bounds.
    #[error("{0}")]
    Invalid(String),
    /// The caller lacks a right (writing).
    #[error("{0}")]
    Forbidden(String),
    /// Nothing the caller may see has this name.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what is stored.
    #[error("{0}")]
    Conflict(String),
    /// What was asked for is larger than a response may carry (the message names both sizes).
    #[error("{0}")]
    TooLarge(String),
    /// A backend (vector server, generator) or every retrieval route is unavailable now.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
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

    /// The same error with every occurrence of the `roots` (server paths) replaced by `<kb>`.
    pub(crate) fn without(self, roots: &[String]) -> Self {
        let scrub = |m: String| {
            roots
                .iter()
                .filter(|r| r.len() > 1)
                .fold(m, |m, r| m.replace(r.as_str(), "<kb>"))
        };
        match self {
            KbError::Invalid(m) => KbError::Invalid(scrub(m)),
            KbError::Forbidden(m) => KbError::Forbidden(scrub(m)),
            KbError::NotFound(m) => KbError::NotFound(scrub(m)),
            KbError::Conflict(m) => KbError::Conflict(scrub(m)),
            KbError::TooLarge(m) => KbError::TooLarge(scrub(m)),
            KbError::Unavailable(m) => KbError::Unavailable(scrub(m)),
            KbError::Internal(e) => KbError::Internal(anyhow::anyhow!(scrub(format!("{e:#}")))),
        }
    }
}

impl From<RetrieveError> for KbError {
    fn from(e: RetrieveError) -> Self {
        match e {
            RetrieveError::CannotRetrieve { .. } => KbError::Unavailable(e.to_string()),
            RetrieveError::InvalidInput(_) => KbError::Invalid(e.to_string()),
            RetrieveError::Source(_) => KbError::Unavailable(e.to_string()),
        }
    }
}

impl From<DocumentError> for KbError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Invalid(m) => KbError::Invalid(m),
            DocumentError::NotFound(m) => KbError::NotFound(m),
            DocumentError::Conflict(m) => KbError::Conflict(m),
            DocumentError::Unsupported { .. } => KbError::Conflict(e.to_string()),
            DocumentError::Io(m) => KbError::Internal(anyhow::anyhow!(m)),
        }
    }
}

impl From<CatalogError> for KbError {
    fn from(e: CatalogError) -> Self {
        KbError::Internal(e.into())
    }
}
