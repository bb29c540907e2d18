//! How a run of `zhiku` ends: a named outcome per exit status, turned into the process's exit code
//! in one place.

use std::process::ExitCode;

/// The outcome of a command, as scripts see it in the exit status. Status 2 (a usage error) is
/// clap's and never passes through here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: the command did what it was asked.
    Success,
    /// 1: it failed for a reason none of the statuses below names.
    Error,
    /// 3: it finished, but some files of the knowledge base were skipped (they could not be
    /// loaded; their earlier documents are kept).
    FilesSkipped,
    /// 4: the store was built with another configuration (policy, model, tokenizer) and must be
    /// rebuilt (`zhiku index --rebuild`).
    NeedsRebuild,
    /// 5: cannot retrieve: no retrieval route could run.
    CannotRetrieve,
    /// 6: `verify` found manifest, lexical index and vectors disagreeing.
    Inconsistent,
    /// 7: `ask` was blocked: the generator's citations kept failing validation.
    Blocked,
    /// 8: `sync` finished, but some sources could not be synced (their documents of the last
    /// sync are kept; the others were synced and indexed).
    SourcesFailed,
}

impl Exit {
    /// [`Exit::FilesSkipped`] when `skipped` files could not be loaded, else [`Exit::Success`].
    pub(crate) fn unless_skipped(skipped: usize) -> Self {
        if skipped > 0 {
            Self::FilesSkipped
        } else {
            Self::Success
        }
    }

    /// The process exit status.
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Error => 1,
            Self::FilesSkipped => 3,
            Self::NeedsRebuild => 4,
            Self::CannotRetrieve => 5,
            Self::Inconsistent => 6,
            Self::Blocked => 7,
            Self::SourcesFailed => 8,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}
