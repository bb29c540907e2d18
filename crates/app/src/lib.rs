//! The zhiku application: the composition root that picks adapters, and the use cases it exposes
//! on the command line, over HTTP (`serve`) and over the Model Context Protocol (`mcp`).

pub mod answer;
pub mod config;
pub mod wiring;

pub use wiring::{corpus, qdrant, store};
pub use zhiku_adapters_fs::{loader, paths};
pub use zhiku_eval::beir;
pub use zhiku_eval::runner as eval;
pub use zhiku_http as serve;
pub use zhiku_mcp as mcp;
