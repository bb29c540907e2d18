//! Rules: pure functions over contracts that decide what counts as evidence and how good
//! retrieval is.

pub mod budget;
pub mod citation;
pub mod context;
pub mod expand;
pub mod fusion;
pub mod grading;
pub mod ocr;
pub mod plan;
pub mod retention;
pub mod revision;
pub mod section;
pub mod support;
pub mod vocabulary;
pub mod writeback;
