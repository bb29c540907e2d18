//! The embedded store's records in SQLite.
//!
//! - [`catalog`] — the catalog (documents, source paths, file stamps, generations) as
//!   `catalog.sqlite`, a catalog store whose saves write only the rows that changed.

pub mod catalog;

pub use catalog::{CATALOG_FILE, CATALOG_FORMAT, SqliteCatalog};
