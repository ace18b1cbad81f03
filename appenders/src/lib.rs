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
//!
//! # Sinks
//!
//! | Appender | Writes | Built with |
//! |---|---|---|
//! | [`Console`] | laid-out lines to stderr (default), stdout, or split by level; colours on a terminal | [`Console::builder`] |
//! | [`FileAppender`] | laid-out lines to a file, rotated by size and/or time | [`FileAppender::builder`] |
//! | [`JsonAppender`] | one JSON object per line, to stdout, stderr, a writer, or a rotated file; laid out by a [`JsonSchema`] (ECS, Google Cloud, OpenTelemetry presets) | [`JsonAppender::stdout`], [`JsonAppender::stderr`], [`JsonAppender::file`], [`JsonAppender::schema`] |
//! | [`Memory`] | nothing: captures records for tests | [`Memory::new`] |
//! | `Syslog` (feature `syslog`) | RFC 5424 (or 3164) messages over UDP, TCP, TLS (`syslog-tls`) or Unix sockets | `Syslog::udp`, `Syslog::tcp`, `Syslog::tls`, `Syslog::unix`, `Syslog::unix_stream` |
//!
//! Text appenders format records with a [`Layout`], a pattern parsed once
//! (`{ts} {level:>5} {target}: {msg}{kv}` by default). Every text output
//! escapes control characters, so a message can neither forge a line nor
//! drive a terminal.
//!
//! ## Console
//!
//! ```
//! use logbus_appenders::{Appender, ColorMode, Console, ConsoleTarget, Layout, Level, Record, Topic};
//!
//! let mut console = Console::builder()
//!     .target(ConsoleTarget::Split) // warnings and errors to stderr
//!     .color(ColorMode::Auto) // only on a terminal; honours NO_COLOR, CLICOLOR(_FORCE), TERM
//!     .layout(Layout::parse("{ts:%H:%M:%S%.3f} {level:>5} {target}: {msg}{kv}")?)
//!     .build();
//! console.append(&Record::builder(Topic::new(Level::Info, "app")).message("ready").build())?;
//! console.flush()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## File
//!
//! ```
//! use logbus_appenders::{Appender, FileAppender, Level, Record, Rotation, Topic};
//!
//! let dir = tempfile::tempdir()?;
//! let mut file = FileAppender::builder(dir.path().join("app.log"))
//!     .max_bytes(50 * 1024 * 1024) // app.log -> app.log.1 -> app.log.2 ...
//!     .rotate_every(Rotation::DAILY)
//!     .keep(10)
//!     .mode(0o640)
//!     .build()?; // opens the file now: a bad path fails here
//! file.append(&Record::builder(Topic::new(Level::Info, "app")).message("ready").build())?;
//! file.flush()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## JSON
//!
//! ```
//! use logbus_appenders::{Appender, FileAppender, JsonAppender, Level, Record, Topic};
//!
//! let dir = tempfile::tempdir()?;
//! let mut json = JsonAppender::file(FileAppender::builder(dir.path().join("app.ndjson")).keep(3))?;
//! json.append(&Record::builder(Topic::new(Level::Info, "app")).message("ready").kv("port", 8080u64).build())?;
//! json.flush()?;
//! // Or to stdout: JsonAppender::stdout()
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For a log stack, a [`JsonSchema`] names, nests and formats the fields as
//! it expects; on a container's stderr for Google Cloud Logging:
//!
//! ```
//! use logbus_appenders::{JsonAppender, JsonSchema};
//!
//! let json = JsonAppender::stderr().schema(JsonSchema::google_cloud().build()?);
//! // Elastic: JsonSchema::ecs().constant("service.name", "shop").build()?
//! // OpenTelemetry's log data model: JsonSchema::opentelemetry().build()?
//! # drop(json);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Syslog
//!
//! With the `syslog` feature: a syslog format (RFC 5424 by default) × a
//! socket, connected on the worker at the first record. See `Syslog` for
//! the transports, the defaults and what TCP cannot promise.
//!
//! # Feature flags
//!
//! - `gzip`: `Compression::Gzip`, compressing rotated files to
//!   `app.log.1.gz` (pulls in `flate2`).
//! - `syslog`: `Syslog` and its formats and transports (pulls in `socket2`).
//! - `syslog-tls`: `Syslog::tls`, RFC 5425 (pulls in `rustls` with the
//!   `ring` provider).
//! - `serde`: a `log` key-value captured with `:serde`
//!   (`log::info!(ids:serde = vec![1, 2]; "..")`) that is structured (a
//!   sequence, a map, a struct) becomes [`Value::Json`], serialised on the
//!   caller's thread within the record's size bound (past it, the text is
//!   cut and marked, and the record counted as truncated); the JSON format
//!   writes it as JSON, text layouts and syslog as compact JSON text.
//!   Primitives keep their types, and `:?`/`:%` values stay text. Enables
//!   `log`'s `kv_serde` (value-bag's serde support). Redaction replaces a
//!   configured key's whole value; keys inside a JSON value are not looked
//!   at.

#![forbid(unsafe_code)]

// The ground floor: the trait, the record, text layout.
mod appender;
mod escape;
mod layout;
mod record;

// Format x destination, joined by one render loop.
mod destination;
mod format;
mod render;

// The appenders: named combinations of a format and a destination.
mod console;
mod file;
mod json;
mod memory;
#[cfg(feature = "syslog")]
mod syslog;

pub use crate::{
    appender::{AppendError, Appender, BatchError, Operation, Staged},
    console::{color_choice, ColorMode, Console, ConsoleBuilder, ConsoleTarget},
    destination::file::{
        error::{FileError, FileErrorKind},
        naming::Naming,
        policy::{Clock, Compression, Rotation, SystemClock},
        zone::TimeZone,
    },
    escape::MultilineMode,
    file::{FileAppender, FileAppenderBuilder},
    format::text::level_color,
    format::{
        JsonField, JsonKey, JsonSchema, JsonSchemaBuilder, JsonSchemaError, JsonSchemaErrorKind,
        LevelFormat, TimestampFormat, ECS_VERSION,
    },
    json::JsonAppender,
    layout::{Layout, LayoutError, LayoutErrorKind},
    memory::{Memory, MemoryHandle},
    record::{
        level_name, Json, JsonValueError, Level, Record, RecordBuilder, ThreadInfo, Topic, Value,
    },
};

#[cfg(feature = "syslog")]
pub use crate::{
    format::syslog::{
        syslog_severity, Facility, MsgId, Rfc3164, Rfc5424, SyslogFormat, DEFAULT_SD_ID,
    },
    syslog::{
        error::{SyslogError, SyslogErrorKind},
        StreamFraming, Syslog, SyslogBuilder, SyslogCounters, SyslogTcp, SyslogUdp, SyslogUnix,
        SyslogUnixStream, MIN_DATAGRAM,
    },
};

#[cfg(feature = "syslog-tls")]
pub use crate::syslog::SyslogTls;

/// The producer's side of [`Record`], for the `logbus` crate only: not part
/// of the public API, exempt from semver.
#[doc(hidden)]
pub mod __private_api {
    pub use crate::record::producer::*;
}
