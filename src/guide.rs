//! Guides: task-oriented pages of the manual, beside the API reference.

#[doc = include_str!("../docs/guide/testing.md")]
pub mod testing {}
