//! The zhiku application: the composition root that picks adapters, and the use cases it exposes
//! on the command line, over HTTP (`serve`) and over the Model Context Protocol (`mcp`).

pub mod answer;
pub mod beir;
pub mod config;
pub mod corpus;
pub mod eval;
pub mod kb;
pub mod loader;
pub mod mcp;
pub mod paths;
pub mod qdrant;
pub mod serve;
pub mod source;
pub mod store;
