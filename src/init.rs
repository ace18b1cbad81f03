//! `logbus::init()`: the zero-configuration start, like `env_logger::init()`.

use std::error::Error as StdError;
use std::fmt;

use logbus_appenders::{Console, ConsoleTarget};

use crate::directive::{env_spec, DirectiveError, Directives};
use crate::error::InstallError;
use crate::log_backend::LoggerGuard;
use crate::subscription::Subscription;

/// The environment variable read by [`init`] and [`try_init`].
pub const ENV_VAR: &str = "RUST_LOG";

/// Installs logbus as the `log` backend with one console appender on stderr
/// (named `console`), filtered by the `RUST_LOG` directives (`info` when
/// unset or empty), for the rest of the process, and returns its guard.
///
/// Dropping the guard flushes and logging goes on, so `let _ =
/// logbus::init();` works; on Unix an exit hook drains the queue when `main`
/// returns or the process calls `std::process::exit` (see [`LoggerGuard`]).
/// For tests, use [`testing::init`](crate::testing::init) instead: its
/// records show in each test's captured output.
///
/// A malformed directive in `RUST_LOG` is reported once on stderr and
/// skipped; the valid parts apply, as with env_logger.
///
/// # Panics
///
/// If a `log` backend is already installed, like `env_logger::init()`; use
/// [`try_init`] to get an error instead.
///
/// # Examples
///
/// ```no_run
/// let _guard = logbus::init(); // `let _ = logbus::init();` logs as well
/// log::info!("shown unless RUST_LOG says otherwise");
/// std::process::exit(0); // on Unix, the record is written first
/// ```
pub fn init() -> LoggerGuard {
    let (directives, errors) = directives_from_env_lossy();
    for error in &errors {
        // The documented last resort: there is no logger yet to report to.
        eprintln!("logbus: ignoring {ENV_VAR}: {error}");
    }
    match install(directives) {
        Ok(guard) => guard,
        Err(e) => panic!("logbus::init: {e}"),
    }
}

/// Like [`init`], but returns errors instead of panicking or going on: a
/// malformed `RUST_LOG` directive is an error here.
///
/// # Errors
///
/// [`InitError::Directive`] naming the first malformed directive, or
/// [`InitError::Install`] if a `log` backend is already installed.
///
/// # Examples
///
/// ```no_run
/// match logbus::try_init() {
///     Ok(_guard) => log::info!("logging"),
///     Err(e) => eprintln!("no logging: {e}"),
/// }
/// ```
pub fn try_init() -> Result<LoggerGuard, InitError> {
    let directives = match env_spec(ENV_VAR).map_err(InitError::Directive)? {
        Some(spec) => Directives::parse(&spec).map_err(InitError::Directive)?,
        None => Directives::new(log::LevelFilter::Info),
    };
    install(directives).map_err(InitError::Install)
}

/// `RUST_LOG`'s directives (`info` when unset or empty, or not UTF-8) and
/// the malformed ones skipped; also read by test mode (`testing.rs`).
pub(crate) fn directives_from_env_lossy() -> (Directives, Vec<DirectiveError>) {
    match env_spec(ENV_VAR) {
        Ok(Some(spec)) => Directives::parse_lossy(&spec),
        Ok(None) => (Directives::new(log::LevelFilter::Info), Vec::new()),
        Err(error) => (Directives::new(log::LevelFilter::Info), vec![error]),
    }
}

fn install(directives: Directives) -> Result<LoggerGuard, InstallError> {
    let console = Console::builder().target(ConsoleTarget::Stderr).build();
    crate::builder::builder()
        .appender(Subscription::builder("console", console).directives(directives))
        .install()
}

/// Why [`try_init`] failed.
///
/// ```
/// use logbus::{DirectiveErrorKind, InitError};
///
/// std::env::set_var(logbus::ENV_VAR, "info,app=loud");
/// match logbus::try_init() {
///     Err(InitError::Directive(e)) => {
///         assert_eq!(e.kind(), DirectiveErrorKind::UnknownLevel);
///         assert_eq!(e.directive(), "app=loud");
///     }
///     other => panic!("unexpected: {other:?}"),
/// }
/// std::env::set_var(logbus::ENV_VAR, "info");
/// let _guard = logbus::try_init()?;
/// assert!(matches!(logbus::try_init(), Err(InitError::Install(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum InitError {
    /// `RUST_LOG` held a malformed directive.
    Directive(DirectiveError),
    /// Installing the backend failed (one is already installed).
    Install(InstallError),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Directive(_) => write!(f, "malformed {ENV_VAR}"),
            InitError::Install(_) => f.write_str("could not install the logger"),
        }
    }
}

impl StdError for InitError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            InitError::Directive(e) => Some(e),
            InitError::Install(e) => Some(e),
        }
    }
}
