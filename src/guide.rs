//! Guides: how to do a whole task with logbus, longer than an API page. Every example in
//! them compiles and runs as a test.

#[doc = include_str!("../docs/guide/migration.md")]
pub mod migration {}

#[doc = include_str!("../docs/guide/retries.md")]
pub mod retries {}

#[doc = include_str!("../docs/guide/testing.md")]
pub mod testing {}
