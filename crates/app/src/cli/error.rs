//! Why a command failed, as far as the command line acts on it: the errors that have an exit
//! status of their own, and those after which a command opens the store in a lesser way instead
//! of failing. [`CliError::from`] is the only code that looks inside an error for its kind.

use zhiku_app::wiring::store::{NeedsRebuild, StoreLocked, VectorsUnavailable};
use zhiku_domain::usecases::RetrieveError;

use super::exit::Exit;

/// A command's error, sorted by what the command line does with it. Each variant keeps the
/// error itself, which is what gets printed.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The store was built with another configuration and must be rebuilt: exit 4.
    NeedsRebuild(anyhow::Error),
    /// No retrieval route could run: exit 5.
    CannotRetrieve(anyhow::Error),
    /// Another process holds the store lock, or the store's folder cannot be written: a reader
    /// may fall back to the last committed state.
    Locked(anyhow::Error),
    /// The vector index cannot be reached: a reader may open the store for lexical retrieval.
    VectorsUnavailable(anyhow::Error),
    /// Anything else: exit 1.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        if e.downcast_ref::<NeedsRebuild>().is_some() {
            Self::NeedsRebuild(e)
        } else if matches!(
            e.downcast_ref::<RetrieveError>(),
            Some(RetrieveError::CannotRetrieve { .. })
        ) {
            Self::CannotRetrieve(e)
        } else if e.downcast_ref::<StoreLocked>().is_some() {
            Self::Locked(e)
        } else if e.downcast_ref::<VectorsUnavailable>().is_some() {
            Self::VectorsUnavailable(e)
        } else {
            Self::Other(e)
        }
    }
}

impl CliError {
    /// The exit status of a command that ends with this error.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            Self::NeedsRebuild(_) => Exit::NeedsRebuild,
            Self::CannotRetrieve(_) => Exit::CannotRetrieve,
            Self::Locked(_) | Self::VectorsUnavailable(_) | Self::Other(_) => Exit::Error,
        }
    }

    /// The error itself, to pass on.
    pub(crate) fn into_inner(self) -> anyhow::Error {
        match self {
            Self::NeedsRebuild(e)
            | Self::CannotRetrieve(e)
            | Self::Locked(e)
            | Self::VectorsUnavailable(e)
            | Self::Other(e) => e,
        }
    }
}
