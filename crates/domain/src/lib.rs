//! The pure core of zhiku: contracts, the chunker, port traits, rules and use cases.
//!
//! Data flows through this crate in one direction:
//!
//! ```text
//! Document ─► chunker ─► Chunk ─► Embedder ─► VectorIndex ┐
//!                              └──────────────► LexicalIndex ┴► Retriever ─► fusion ─► revision
//!                                                            check ─► budget ─► citations ─► grading
//! ```
//!
//! Nothing here performs I/O, spawns threads for networking, or depends on an adapter. Adapters
//! implement the traits in [`ports`]; the application crate wires them together.

pub mod chunker;
pub mod contracts;
pub mod ports;
pub mod rules;
pub mod usecases;

pub use contracts::*;
