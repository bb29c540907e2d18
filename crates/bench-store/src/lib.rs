//! Nothing here: the comparison is the `store` bench (`benches/store.rs`).
