//! The zhiku application: the composition root that picks adapters, and the use cases it exposes
//! on the command line, over HTTP (`serve`) and over the Model Context Protocol (`mcp`).

pub mod answer;
pub mod config;
pub mod corpus;
pub mod kb;
pub mod mcp;
pub mod qdrant;
pub mod serve;
pub mod store;

pub use zhiku_adapters_fs::{loader, paths};
pub use zhiku_eval::beir;
pub use zhiku_eval::runner as eval;
