//! The local filesystem as zhiku's storage.
//!
//! - [`paths`] — the one canonical form of a document path and the rules a write inside the
//!   knowledge-base folder obeys (no escape, no link crossing the root, ignore files respected).
//! - [`loader`] — the folder walk: Markdown and text files, front matter, sidecar metadata.
//! - [`config`] — the loader's settings, which the walk, the path rules and the stamps read.
//! - [`stamp`] — file stamps: an unchanged file recognised from its metadata, not read again.
//! - [`folder`] — the folder as a writable document store.
//! - [`folder_source`] — the folder as the source of truth hits are re-checked against.
//! - [`lock`] — the store lock (one writer per store).
//! - [`mirror`] — a document source's copy in the folder (`sources/<name>/`), what a sync writes.
//! - [`manifest`] — the catalog as `manifest.json`, a catalog store.
//! - [`atomic`] — replacing a file atomically (write, fsync, rename, fsync the folder).
//! - [`vector_file`] — the `vectors.bin` format of earlier stores, read to migrate them.
//! - [`trace_log`] — the JSONL trace log with its index and rotation.
//! - [`worker`] — the format parsers in child processes under OS limits, so that a parser's
//!   crash costs one file, never the process that owns the store.
//!
//! The formats themselves (PDF, HTML, Office, EPUB, CSV: bytes in, the chunker's text shape
//! out) are the [`zhiku_formats`] crate; this crate only runs them, in the workers.

pub mod atomic;
pub mod audit_log;
pub mod config;
pub mod folder;
pub mod folder_source;

pub mod front_matter;
pub mod loader;
pub mod lock;
pub mod manifest;
pub mod mirror;
pub mod ocr_cache;
pub mod paths;
pub mod stamp;
pub mod trace_log;
pub mod vector_file;
pub mod worker;
