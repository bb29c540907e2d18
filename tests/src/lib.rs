//! The zhiku contract suite.
//!
//! Every adapter of a port passes the same properties. Each property is a plain function over
//! `&dyn Port` whose documentation states the rule it checks; the macros
//! [`vector_index_contract!`], [`lexical_index_contract!`], [`embedder_contract!`] and
//! [`catalog_store_contract!`] generate one `#[test]` per property inside the caller's module,
//! so a failure reads as `(adapter, property)`, e.g. `memory::delete_document_removes_only_its_chunks`.
//!
//! ```text
//! mod memory {
//!     zhiku_tests::vector_index_contract!(|space| Some(Box::new(MemoryVectorIndex::new(space))));
//! }
//! ```
//!
//! A factory returns `None` when the backend is not reachable (for example a server whose URL
//! variable is unset); the generated test then prints a loud `SKIPPED` line and passes nothing
//! silently: it is reported as skipped, never as checked.

#[cfg(feature = "contract")]
pub mod contract;
pub mod local;
#[cfg(feature = "oidc")]
pub mod oidc;
#[cfg(feature = "sources")]
pub mod sources;

/// Writes `line` to the process's standard error directly, past the test harness's capture.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
