//! The adapter's name, as its capabilities and errors give it, and the one mapping of a
//! backend failure (SQLite, usearch, a file) into the port's error.

use zhiku_domain::ports::{BoxError, IndexError};

/// The adapter's name in capabilities and errors.
pub const ADAPTER: &str = "usearch";

/// A failure of a backend this index runs on, as the port's error.
pub(crate) fn backend(e: impl Into<BoxError>) -> IndexError {
    IndexError::backend(ADAPTER, e)
}
