//! Comparison bench of ANN libraries; the bench itself is `benches/ann.rs`.
