//! `logbus::builder()`: configure appenders in code, then build or install.

use std::time::Duration;

use crate::broker::{Broker, DEFAULT_FLUSH_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT};
use crate::directive::Directives;
use crate::error::InstallError;
use crate::journal::Journal;
use crate::log_backend::{self, LoggerGuard, DEFAULT_EXIT_TIMEOUT};
use crate::sanitize::{Intake, Redaction, DEFAULT_MAX_RECORD_BYTES};
use crate::subscription::SubscriptionBuilder;

/// Starts configuring a broker in code; see [`Builder`].
pub fn builder() -> Builder {
    Builder::new()
}

/// Configures a broker in code. Start with [`builder()`](crate::builder).
///
/// | setting | default |
/// |---|---|
/// | appenders | none |
/// | dead-letter appender | none: failed records are counted as `lost` |
/// | broker-wide directives | none: each appender's own level and directives decide |
/// | journal | none (see [`Journal`]) |
/// | record size bound | [`DEFAULT_MAX_RECORD_BYTES`] (64 KiB) of message and per value |
/// | redaction | none (see [`Redaction`]) |
/// | flush timeout | [`DEFAULT_FLUSH_TIMEOUT`] (5 s) |
/// | shutdown timeout | [`DEFAULT_SHUTDOWN_TIMEOUT`] (30 s) |
/// | exit timeout (installed, Unix) | [`DEFAULT_EXIT_TIMEOUT`] (5 s) |
///
/// # Examples
///
/// ```
/// use logbus::{LevelFilter, Memory, Subscription};
///
/// let (appender, captured) = Memory::new();
/// let broker = logbus::builder()
///     .appender(Subscription::builder("memory", appender).level(LevelFilter::Info))
///     .build()?;
/// log::set_max_level(LevelFilter::Trace);
/// log::info!(logger: &broker, "hello");
/// log::debug!(logger: &broker, "too verbose for this appender");
/// broker.flush()?;
/// assert_eq!(captured.messages(), ["hello"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct Builder {
    appenders: Vec<SubscriptionBuilder>,
    dead_letter: Option<SubscriptionBuilder>,
    journal: Option<Journal>,
    directives: Option<Directives>,
    env_directives: Option<String>,
    intake: Intake,
    flush_timeout: Duration,
    shutdown_timeout: Duration,
    exit_timeout: Duration,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// A builder with no appenders and the default timeouts.
    pub const fn new() -> Builder {
        Builder {
            appenders: Vec::new(),
            dead_letter: None,
            journal: None,
            directives: None,
            env_directives: None,
            intake: Intake {
                max_bytes: DEFAULT_MAX_RECORD_BYTES,
                redaction: None,
            },
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            exit_timeout: DEFAULT_EXIT_TIMEOUT,
        }
    }

    /// Adds an appender with its subscription settings.
    pub fn appender(mut self, subscription: SubscriptionBuilder) -> Self {
        self.appenders.push(subscription);
        self
    }

    /// Sets the dead-letter appender: records other appenders failed to
    /// write (after retries) go there, with key-values naming the appender,
    /// the error and the attempts. See
    /// [`BrokerHandle::set_dead_letter`](crate::BrokerHandle::set_dead_letter).
    pub fn dead_letter(mut self, subscription: SubscriptionBuilder) -> Self {
        self.dead_letter = Some(subscription);
        self
    }

    /// Sets up the broker's journal of recent records: replay, flight
    /// recorders, [`BrokerHandle::journal`](crate::BrokerHandle::journal).
    pub fn journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Sets broker-wide directives (`RUST_LOG` syntax, see [`Directives`]):
    /// every record must pass them, and then each appender's own level,
    /// patterns and directives. They narrow, never widen: an appender at
    /// `warn` stays at `warn` under `debug` here. Changed at runtime with
    /// [`BrokerHandle::set_global_directives`](crate::BrokerHandle::set_global_directives).
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::{LevelFilter, Memory, Subscription};
    ///
    /// let (appender, captured) = Memory::new();
    /// let broker = logbus::builder()
    ///     .directives("info,hyper=warn".parse()?)
    ///     .appender(Subscription::builder("memory", appender))
    ///     .build()?;
    /// log::set_max_level(LevelFilter::Trace);
    /// log::info!(logger: &broker, target: "app", "kept");
    /// log::info!(logger: &broker, target: "hyper::client", "below hyper's warn");
    /// log::debug!(logger: &broker, target: "app", "below the global info");
    /// broker.flush()?;
    /// assert_eq!(captured.messages(), ["kept"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn directives(mut self, directives: Directives) -> Self {
        self.directives = Some(directives);
        self
    }

    /// Reads broker-wide directives from the environment variable `var`
    /// (usually [`ENV_VAR`](crate::ENV_VAR), `RUST_LOG`) when the broker is
    /// built. Set and not blank, its value replaces what
    /// [`directives`](Builder::directives) gave, with the meaning
    /// [`directives`](Builder::directives) documents: a filter in front of
    /// every appender's own. Unset or blank, nothing changes, so
    /// `.directives("info".parse()?).env_directives("RUST_LOG")` means
    /// "`info` unless `RUST_LOG` says otherwise". A value that is not UTF-8
    /// is read lossily.
    ///
    /// Unlike [`init`](crate::init), which reports a malformed directive
    /// and goes on, [`build`](Builder::build) and
    /// [`install`](Builder::install) refuse it with
    /// [`InstallError::EnvDirectives`], naming the variable and the
    /// directive.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::{LevelFilter, Memory, Subscription};
    ///
    /// std::env::set_var("APP_LOG", "warn,app::db=debug");
    /// let (file, to_file) = Memory::new();
    /// let (console, to_console) = Memory::new();
    /// let broker = logbus::builder()
    ///     .directives("info".parse()?)
    ///     .env_directives("APP_LOG")
    ///     .appender(Subscription::builder("file", file))
    ///     .appender(Subscription::builder("console", console).level(LevelFilter::Warn))
    ///     .build()?;
    /// log::set_max_level(LevelFilter::Trace);
    /// log::debug!(logger: &broker, target: "app::db", "query plan");
    /// log::info!(logger: &broker, target: "app::http", "below APP_LOG's warn");
    /// log::warn!(logger: &broker, target: "app::http", "slow");
    /// broker.flush()?;
    /// assert_eq!(to_file.messages(), ["query plan", "slow"]);
    /// assert_eq!(to_console.messages(), ["slow"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env_directives(mut self, var: impl Into<String>) -> Self {
        self.env_directives = Some(var.into());
        self
    }

    /// Bounds each record: a message, and each key-value's string, longer
    /// than `bytes` is cut at a UTF-8 boundary and marked
    /// `…[truncated N bytes]`, on the caller's thread, which formats and
    /// copies no more than that plus one chunk; counted in
    /// [`BrokerStats::truncated`](crate::BrokerStats::truncated). Values
    /// below 1 KiB are raised to it. The target is not cut (routing reads
    /// it whole); a target longer than 256 bytes is routed afresh on each
    /// call rather than kept for the process's life or in a route cache.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.intake.max_bytes = bytes.max(1024);
        self
    }

    /// Redacts secrets on the caller's thread, before any appender sees
    /// the record; see [`Redaction`].
    pub fn redact(mut self, redaction: Redaction) -> Self {
        self.intake.redaction = Some(redaction);
        self
    }

    /// How long `flush` (and `log::logger().flush()`) waits at most.
    pub fn flush_timeout(mut self, timeout: Duration) -> Self {
        self.flush_timeout = timeout;
        self
    }

    /// How long dropping the broker (a shutdown) or the guard (a flush)
    /// waits at most for the queues to drain.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long, once [installed](Builder::install), the exit hook waits at
    /// most for the queues to drain when `main` returns or the process
    /// calls `std::process::exit` (Unix; see
    /// [`LoggerGuard`](crate::LoggerGuard), "At exit"). `Duration::ZERO`
    /// registers no hook: records still queued at exit are then lost.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// let _guard = logbus::builder()
    ///     .exit_timeout(Duration::from_secs(1))
    ///     .install()?;
    /// log::info!("written before the process ends, unless 1 s is not enough");
    /// std::process::exit(0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exit_timeout(mut self, timeout: Duration) -> Self {
        self.exit_timeout = timeout;
        self
    }

    /// Builds a local broker (not installed as the `log` backend).
    ///
    /// # Errors
    ///
    /// [`InstallError::Subscribe`] if a subscription is rejected (malformed
    /// pattern, duplicate name, zero capacity), [`InstallError::Journal`]
    /// if the journal's settings are, [`InstallError::EnvDirectives`] if the
    /// variable given to [`env_directives`](Builder::env_directives) holds a
    /// malformed directive or is not UTF-8.
    pub fn build(self) -> Result<Broker, InstallError> {
        let mut directives = self.directives;
        if let Some(var) = self.env_directives {
            let parsed = crate::directive::env_spec(&var)
                .and_then(|spec| spec.map(|spec| Directives::parse(&spec)).transpose());
            match parsed {
                Ok(Some(parsed)) => directives = Some(parsed),
                Ok(None) => {}
                Err(error) => return Err(InstallError::EnvDirectives { var, error }),
            }
        }
        let broker = Broker::with_settings(self.flush_timeout, self.shutdown_timeout, self.intake);
        if directives.is_some() {
            broker.set_global_directives(directives);
        }
        if let Some(journal) = &self.journal {
            broker.set_journal(journal.clone())?;
        }
        if let Some(dead_letter) = self.dead_letter {
            broker.set_dead_letter(dead_letter)?;
        }
        for subscription in self.appenders {
            broker.subscribe(subscription)?;
        }
        Ok(broker)
    }

    /// Builds the broker and makes it the `log` crate's backend; sets
    /// `log::max_level` to the loosest level in use. The broker stays
    /// installed for the rest of the process; dropping the returned guard
    /// flushes, [`LoggerGuard::shutdown`] stops it (see [`LoggerGuard`]).
    ///
    /// # Errors
    ///
    /// [`InstallError::AlreadyInstalled`] if a `log` backend is already set
    /// (the broker built here is shut down again), or
    /// [`InstallError::Subscribe`] as for [`build`](Builder::build).
    pub fn install(self) -> Result<LoggerGuard, InstallError> {
        let (exit, drop) = (self.exit_timeout, self.shutdown_timeout);
        log_backend::install(self.build()?, exit, drop)
    }
}
