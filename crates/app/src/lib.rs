//! The zhiku binary's library half: the configuration ([`config`]) and the composition root
//! ([`wiring`]), the only code that names adapter crates. The commands live in the binary
//! (`src/cli/`); the service, the transports and the adapters in their own crates.

pub mod config;
pub mod wiring;
