//! The zhiku application: the composition root that picks adapters, and the use cases it exposes
//! on the command line.

pub mod answer;
pub mod beir;
pub mod config;
pub mod corpus;
pub mod eval;
pub mod loader;
pub mod qdrant;
pub mod source;
pub mod store;
