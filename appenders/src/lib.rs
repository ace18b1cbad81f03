//! The appender side of [logbus](https://docs.rs/logbus): the [`Appender`]
//! trait, the [`Record`] appenders consume, and the sinks.
//!
//! Appenders know how to write a record; they know nothing of topics, queues
//! or threads. The `logbus` crate owns one worker thread per appender and
//! calls it with `&mut self`, so an appender needs no locks.
//!
//! Third-party appender authors depend on this crate alone: implement
//! [`Appender`] and hand a value of your type to `logbus`.
//!
//! ```
//! use logbus_appenders::{Appender, Level, Memory, Record, Topic};
//!
//! let (mut memory, captured) = Memory::new();
//! let record = Record::builder(Topic::new(Level::Warn, "app::db"))
//!     .message("slow query")
//!     .kv("ms", 1200u64)
//!     .build();
//! memory.append(&record)?;
//! assert_eq!(captured.records()[0].topic().as_str(), "warn.app.db");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod appender;
mod memory;
mod record;

pub use crate::{
    appender::{AppendError, Appender, BatchError, Operation},
    memory::{Memory, MemoryHandle},
    record::{level_name, Level, Record, RecordBuilder, ThreadInfo, Topic, Value},
};
