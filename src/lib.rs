//! logbus: a logging backend for the [`log`](mod@log) crate, built as an in-process
//! publish/subscribe broker.
//!
//! Every log call publishes one immutable [`Record`] on a *topic* named by
//! its level and target (`warn.app.db`). Appenders (console, file, JSON, or
//! your own [`Appender`]) are *subscribers*: each has topic patterns, a level
//! threshold, an optional predicate, its own bounded queue and its own
//! worker thread. A slow or stuck appender never blocks the caller and never
//! delays another appender; every record is delivered, or counted.
//!
//! The quickest start, like `env_logger::init()`: one console appender on
//! stderr filtered by `RUST_LOG` (default `info`). [`try_init`] returns an
//! error instead of panicking when a logger is already installed, and refuses
//! a malformed `RUST_LOG` (which [`init`] reports on stderr and skips).
//!
//! ```no_run
//! let _guard = logbus::init(); // dropping it flushes; logging goes on (`let _ =` works too)
//! log::info!("hello");
//! ```
//!
//! Configured in code, as a local broker (here with a [`Memory`] appender):
//!
//! ```
//! use logbus::{LevelFilter, Memory, Subscription};
//!
//! let (errors, captured) = Memory::new();
//! let broker = logbus::builder()
//!     .appender(Subscription::builder("errors", errors).pattern("error.#"))
//!     .build()?; // `.install()?` instead makes it the `log` backend
//!
//! log::set_max_level(LevelFilter::Trace); // `install()` does this for you
//! log::error!(logger: &broker, target: "app::db", "connection lost");
//! log::warn!(logger: &broker, target: "app::db", "retrying");
//!
//! let report = broker.shutdown();
//! assert_eq!(captured.messages(), ["connection lost"]);
//! assert_eq!(report.subscriptions["errors"].matched, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Concepts
//!
//! - [`Broker`]: owns the subscriptions, routes records, and shuts down on
//!   drop. [`BrokerHandle`] is a cheap clone of it for other threads.
//! - [`Record`]: one log event: `seq`, time, level, target, topic, message,
//!   location, thread, key-values. Shared by `Arc` among the subscriptions
//!   it reaches; a literal message is not copied.
//! - [`Subscription`]: an appender plus where it listens
//!   ([`SubscriptionBuilder::pattern`], [`SubscriptionBuilder::level`],
//!   [`SubscriptionBuilder::filter`]) and how it queues
//!   ([`SubscriptionBuilder::capacity`], [`OverflowPolicy`]).
//! - [`Appender`]: the trait sinks implement (from `logbus-appenders`,
//!   re-exported here).
//! - [`Journal`]: optional memory of recent records under their `seq` as
//!   offsets: a subscription can start from it ([`Replay`]), a
//!   [`FlightRecorder`] draws an error's context from it, and
//!   [`BrokerHandle::journal`] reads it.
//!
//! # Topics and wildcards
//!
//! A record's topic is `<level>.<target>`, the level in lower case and `::`
//! turned into `.`: `log::warn!(target: "app::db", ..)` publishes on
//! `warn.app.db`. Patterns follow AMQP topic-exchange rules: `*` matches one
//! segment, `#` zero or more. `#` matches everything, `error.#` every error,
//! `*.app.db.#` everything from `app::db` and below.
//! A target with a dot (`a.b`) gets the same topic as `a::b`. A pattern
//! that no topic can match (`app::db`, `WARN.#`: the first segment must be
//! a lower-case level, `*` or `#`, and no segment holds `::`) is refused
//! when subscribing ([`TopicParseErrorKind::NeverMatches`]).
//!
//! ```
//! use logbus::TopicPattern;
//!
//! let pattern: TopicPattern = "*.app.db.#".parse()?;
//! assert!(pattern.matches("warn.app.db"));
//! assert!(pattern.matches("info.app.db.pool"));
//! assert!(!pattern.matches("info.app.http"));
//! assert_eq!(pattern, TopicPattern::parse("*.app.db.#")?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The subscriptions a (level, target) reaches are computed once from a trie
//! of patterns and cached per thread, so a steady-state publish costs one
//! lookup whatever the number of subscriptions.
//!
//! # Backpressure
//!
//! Each subscription's queue is bounded ([`DEFAULT_CAPACITY`] records, and
//! optionally bytes). When it is full, [`OverflowPolicy::DropOldest`] (the
//! default) evicts the oldest queued record (and, now and then, the caller
//! that evicted yields its time slice, so that a worker short of CPU catches
//! up: it waits for nothing), `DropNewest` discards the new one, `Block`
//! makes the caller wait and `BlockTimeout` waits a bounded time. Drops are
//! counted exactly ([`SubscriptionStats::dropped`]), and the
//! worker writes one WARN record per burst saying how many were dropped.
//!
//! # Order
//!
//! Every record gets a broker-wide `seq` ([`Record::seq`]) on the caller's
//! thread, before it is queued: when it is built, or, for a plain record
//! that travels as a copy of its parts, once its message is formatted (a
//! record the [`Journal`] keeps takes it under the journal's lock, once its
//! message is formatted). What an appender sees:
//!
//! - **Per thread, program order**, always: one thread's records reach
//!   each appender in the order its log calls were made (their `seq`s
//!   increase), including calls made during thread exit.
//! - **Across threads, `seq` order of what was queued**: the worker merges
//!   the per-thread queues by `seq`, so among the records queued when it
//!   takes a batch, the lower `seq` is written first. A record whose `seq`
//!   was taken before another's but which was queued after the worker took
//!   that other one is written after it: `seq` order is the order of `seq`
//!   allocation, not a promise that a later-queued record never follows a
//!   higher `seq`.
//! - **Drops leave gaps, never reorderings.**
//! - **A flight recorder's context** ([`FlightRecorder`]) comes right
//!   before its trigger, after the records the trigger's thread published
//!   in between: the one exception to program order, marked with
//!   [`CONTEXT_KEY`]. A replay ([`Replay`]) comes before every live record.
//!
//! # Time
//!
//! A record's time ([`Record::time`]) is read on the caller's thread as the
//! record is built. On x86-64 Linux, when the CPU's time-stamp counter is
//! invariant and the kernel's clock source is that counter (`tsc`), logbus
//! reads the raw counter there (about 10 ns, against 35 ns for
//! `SystemTime::now()`) and the record converts it to the wall clock on
//! the worker, as it takes the record (or, for a record that travels
//! shared, when its time is first read); the first conversion is kept, so
//! every output shows the same time. A record copied to several
//! subscriptions' workers is converted by each with the anchor of its
//! stamp's epoch (0.5 ms at most), which they share, so its copies show one
//! time too, but in rare cases where a worker converts with its own anchor
//! instead (within the same accuracy, maybe a few nanoseconds from the
//! others): it takes its copy 1 to 2 s after another worker took its own
//! (the epoch's anchor is gone by then), or the thread publishing the
//! anchor does not run for a millisecond or more. Deciding the source
//! costs the first broker's build a 0.5 ms sleep, once per process (it
//! measures the counter's rate). The conversion
//! is within about 0.1 µs of what `SystemTime::now()` would have read on
//! the caller's thread, for a record first read within a second or so of
//! its stamp (about 0.05 µs more per further second). What can make it
//! worse:
//!
//! - a wall-clock step (`settimeofday`, NTP stepping the clock) shows
//!   within 1 ms: records made within 1 ms after it may still be placed on
//!   the clock as it was before the step, and records made before it but
//!   first read after it land on the clock as it is after it;
//! - NTP may change the kernel's clock rate fast (the kernel allows 10 %
//!   through the tick length, and chrony slews at up to 8.3 %): for up to
//!   2 s after such a change a conversion may be off by that fraction of
//!   1 ms (83 µs at chrony's fastest slew), and a record first read long
//!   after its stamp by that fraction of its age (a steady NTP, under
//!   1 ppm, adds under 1 ns per millisecond of age);
//! - a record made before a system suspend and first read after it is off
//!   by the kernel's error in measuring the suspend (up to about a second,
//!   from the RTC, unless the counter runs through S3); records made after
//!   it are not affected;
//! - where a resume from S3 resets the counter, logbus notices when a
//!   record is next converted and stamps `SystemTime::now()` for the rest
//!   of the process; the records stamped around the reset are placed as
//!   well as their ticks allow.
//!
//! The kernel's clock source is read once, when the first broker is built;
//! if the kernel's watchdog demotes `tsc` later (it found the counter
//! drifting, or the cores' counters apart), logbus goes on stamping the
//! counter, which is then only as good as it is.
//!
//! `LOGBUS_TSC=off` in the environment (or `0`, `false` or `no`, in any
//! case; read when the first broker is built) stamps `SystemTime::now()`
//! instead, as logbus does on other systems: the way out where any of the
//! above matters.
//!
//! # Shutdown
//!
//! Dropping a [`Broker`] drains every queue, flushes every appender and
//! joins the workers (bounded by a timeout). The broker installed as the
//! `log` backend lives for the rest of the process: dropping its
//! [`LoggerGuard`] only flushes (so `let _ = logbus::init();` keeps
//! logging), and [`LoggerGuard::shutdown`] stops it. `log::logger().flush()`
//! and [`BrokerHandle::flush`] are barriers: they return once every record
//! enqueued before them is written. [`Broker::shutdown_timeout`] returns a
//! [`ShutdownReport`] of what was written and what was left. A log call after
//! shutdown returns at once and is counted as dropped.
//!
//! `std::process::exit` skips destructors. On Unix an exit hook drains the
//! installed broker when `main` returns or the process exits, for at most
//! [`DEFAULT_EXIT_TIMEOUT`] ([`Builder::exit_timeout`]); elsewhere, flush or
//! shut down before exiting ([`LoggerGuard`], "At exit").
//!
//! # Using with the `log` crate
//!
//! ```no_run
//! use logbus::{LevelFilter, Memory, Subscription};
//!
//! let _guard = logbus::builder()
//!     .appender(Subscription::builder("memory", Memory::new().0).level(LevelFilter::Info))
//!     .install()?;
//! log::info!("the broker is the `log` backend now");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A log call made from inside an appender (on a logbus worker thread) is
//! discarded and counted in [`BrokerStats::suppressed`]: it can neither
//! deadlock nor loop. `flush` called there returns
//! [`FlushError::OnWorkerThread`] instead of waiting, and `unsubscribe`
//! completes in the background; so it is from inside a subscription's
//! predicate (a flush there waits, except in a replay's predicate:
//! [`FlushError::InPredicate`]).
//!
//! # Formatting on the worker
//!
//! logbus's own macros, [`info!`] and [`error!`], [`warn!`], [`debug!`],
//! [`trace!`], [`log!`], take exactly `log`'s syntax. When a call logs
//! only integers, floats, `bool`s, `char`s and string literals, with a
//! literal format string of `{}`, `{:?}`, `{:x}`, widths, precisions and
//! the like (the rules are at [`log!`]), the caller copies the arguments
//! and formats nothing: the message is formatted on the subscription's
//! worker (unless a predicate, a redaction rewrite or the journal reads
//! it on the caller's thread first, see [`info!`]), byte for byte as
//! `log::info!` would have made it. Every other call (key-values, a
//! `String`, an inline `{name}`, another `log` backend) expands to the
//! `log` macro with the same arguments. Use them on hot call sites that
//! log numbers; `log::info!` and friends keep working everywhere.
//!
//! ```
//! use logbus::{LevelFilter, Memory, Subscription};
//!
//! let (memory, captured) = Memory::new();
//! let broker = logbus::builder()
//!     .appender(Subscription::builder("memory", memory))
//!     .build()?; // with `.install()?`, no `logger:` is needed
//! log::set_max_level(LevelFilter::Trace);
//!
//! let (id, us) = (42u64, 180u32);
//! logbus::info!(logger: &broker, target: "app::http", "request {} served in {} us", id, us);
//! broker.flush()?;
//! assert_eq!(captured.messages(), ["request 42 served in 180 us"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Feature flags
//!
//! - `tail` (default): the `logbus` binary, whose `logbus tail` reads the
//!   files logbus writes (README). Adds `lexopt` and `serde_json`; turn it
//!   off with `default-features = false`.
//! - `gzip`: compress rotated log files.
//! - `syslog`: `appenders::Syslog`, RFC 5424 (or 3164) messages over UDP,
//!   TCP (octet-counted) and Unix sockets, to rsyslog, syslog-ng and the
//!   like. Adds `socket2`.
//! - `syslog-tls`: syslog over TLS (RFC 5425). Adds `rustls` (ring).
//! - `serde`: key-values logged with `:serde` kept as JSON
//!   ([`Value::Json`](crate::Value)) and written as JSON by the JSON
//!   appender (enables `log`'s `kv_serde`); `serde::Serialize` for the
//!   stats and reports ([`BrokerStats`], [`ShutdownReport`],
//!   [`ReplayReport`], ...), to ship them as JSON. Adds serde's derive
//!   macros.
//!
//! # Supported Rust versions
//!
//! The minimum supported Rust version is 1.80 (`rust-version` in
//! `Cargo.toml`).

// The `unsafe` code is in `queue/lane.rs` and `recycle.rs` (and `fork(2)`
// calls in tests); each block says why it is sound, and `.ci/miri` runs
// their tests under Miri. Beside them, plain libc calls: `pthread_atfork`
// (`fork.rs`), `atexit` (`log_backend.rs`), `pthread_self` (`broker/lifecycle.rs`),
// `prctl` and `clock_gettime` (`clock/tsc.rs`), and the `rdtsc` and `cpuid`
// intrinsics (`clock/tsc.rs`, which Miri does not build).
#![warn(clippy::undocumented_unsafe_blocks)]

#[doc(hidden)]
pub mod __private;
mod broker;
mod builder;
mod clock;
mod directive;
mod error;
mod fork;
pub mod guide;
mod init;
mod journal;
mod log_backend;
mod macros;
mod queue;
mod recycle;
mod report;
mod retry;
mod route;
mod sanitize;
mod stats;
mod subscription;
mod sync;
pub mod testing;
mod thread_role;
mod topic;
mod worker;

/// The appender side, re-exported from `logbus-appenders`; inlined, so its
/// pages (`Console`, `FileAppender`, `JsonAppender`, `Layout`, ...) are
/// part of logbus's documentation.
#[doc(inline)]
pub use logbus_appenders as appenders;

pub use crate::{
    appenders::{
        AppendError, Appender, BatchError, Level, Memory, MemoryHandle, Operation, Record, Staged,
        Topic, Value,
    },
    broker::{Broker, BrokerHandle, DEFAULT_FLUSH_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT},
    builder::{builder, Builder},
    directive::{DirectiveError, DirectiveErrorKind, Directives},
    error::{
        FlushError, InstallError, JournalError, ReconfigureError, ReplaceError, SubscribeError,
        UnsubscribeError,
    },
    init::{init, try_init, InitError, ENV_VAR},
    journal::{
        FlightRecorder, Journal, JournalIter, JournalQuery, JournalReader, JournalStats, Replay,
        ReplayGap, ReplayReport, Retention, CONTEXT_KEY, CONTEXT_SCAN, DEFAULT_JOURNAL_BYTES,
        DEFAULT_JOURNAL_RECORDS, JOURNAL_SLACK_PER_RECORD,
    },
    log_backend::{LoggerGuard, DEFAULT_EXIT_TIMEOUT},
    queue::{OverflowPolicy, DEFAULT_CAPACITY, MAX_CAPACITY},
    retry::{BreakerState, CircuitBreaker, RetryPolicy},
    sanitize::{Redaction, DEFAULT_MAX_RECORD_BYTES, REDACTED},
    stats::{BrokerStats, ShutdownReport, SubscriptionStats},
    subscription::{Subscription, SubscriptionBuilder, SubscriptionHandle},
    topic::{TopicParseError, TopicParseErrorKind, TopicPattern},
};
pub use log::LevelFilter;
