//! `logbus::testing`: logging in tests, shown in each test's own captured
//! output, and a capture to assert on records (like env_logger's
//! `is_test`).
//!
//! Call [`init`] at the start of every test that logs (it is idempotent,
//! and safe from many tests at once). It installs a *test logger* as the
//! `log` backend: every record `RUST_LOG` enables (`info` when unset, the
//! same directives as [`crate::init`]) is rendered with the default
//! [`Layout`] (`{ts} {level:>5} {target}: {msg}{kv}`, without colour) and
//! written with `eprintln!` **on the thread that logged it**. That thread
//! matters: the test harness captures `print!`/`eprint!` per test, on the
//! test's thread and the threads it spawns, and shows a test's capture only
//! when the test fails (or with `--nocapture`). So each failing test shows
//! its own records, and only those, however many tests run in parallel.
//!
//! This is the one exception to "no I/O on the caller's thread": test mode
//! has no queue and no worker. A logbus worker would write from its own
//! thread, outside every test's capture.
//!
//! [`capture`] collects the records the *current thread* logs while the
//! returned [`Capture`] lives, whatever `RUST_LOG` says, for assertions;
//! parallel tests never see each other's records.
//!
//! ```
//! logbus::testing::init();
//! let logs = logbus::testing::capture();
//! log::info!(target: "app::db", "connected");
//! log::trace!(target: "app::db", "kept too: a capture takes every level");
//! assert_eq!(logs.messages(), ["connected", "kept too: a capture takes every level"]);
//! ```
//!
//! # Limits
//!
//! - **Threads the test spawns**: their records are *printed* into the
//!   test's output (the harness hands its capture to threads spawned with
//!   `std::thread`), but a [`Capture`] only holds the records of the thread
//!   that made it: make one on the spawned thread, or give the code a local
//!   [`Broker`](crate::Broker) with a [`Memory`](crate::Memory) appender.
//!   Threads that outlive their test, or that another test started (a
//!   shared pool, a runtime in a `static`), print into the output of the
//!   test that spawned them; once that test is over, what they log is
//!   lost (libtest keeps their capture buffer, and shows it to no one).
//! - **Another backend first**: `log` takes one backend per process. If
//!   the test binary installed another one (or logbus through
//!   [`crate::init`] or [`Builder::install`](crate::Builder::install)),
//!   [`init`] changes nothing, [`try_init`] says so, and [`capture`] panics.
//! - `log::max_level` is `Trace` in test mode, so that a capture sees every
//!   level: each log call reaches the test logger, which checks the
//!   directives (and whether the thread captures) before building anything.
//! - Records are bounded as by a broker's default
//!   ([`DEFAULT_MAX_RECORD_BYTES`](crate::DEFAULT_MAX_RECORD_BYTES)); no
//!   redaction, no appenders, no journal.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::time::SystemTime;

use logbus_appenders::{Layout, Record, Topic};

use crate::directive::Directives;
use crate::error::InstallError;
use crate::log_backend;
use crate::sanitize::Intake;
use crate::sync::{Arc, AtomicU64, OnceLock, Ordering};

/// Installs the test logger, unless it is installed already (then it does
/// nothing). Call it at the start of every test that logs.
///
/// If another `log` backend is installed, it does nothing either; use
/// [`try_init`] to find out.
///
/// # Examples
///
/// ```
/// // A test: `#[test]` on it, in a `#[cfg(test)] mod tests`.
/// fn parses_the_config() {
///     logbus::testing::init();
///     log::info!("shown in this test's output if it fails");
/// }
/// # parses_the_config();
/// ```
pub fn init() {
    let _ = try_init();
}

/// Like [`init`], but says whether the test logger is the `log` backend.
///
/// A malformed `RUST_LOG` directive is reported once (on the first call's
/// thread) and skipped, as [`crate::init`] does.
///
/// # Errors
///
/// [`InstallError::AlreadyInstalled`] if another `log` backend was
/// installed first.
///
/// # Examples
///
/// ```
/// logbus::testing::try_init()?;
/// logbus::testing::try_init()?; // again: still fine
/// # Ok::<(), logbus::InstallError>(())
/// ```
pub fn try_init() -> Result<(), InstallError> {
    /// Whether the test logger is installed: decided once, by the first
    /// call; the others wait for that decision (`OnceLock`).
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    let installed = *INSTALLED.get_or_init(|| {
        let (directives, errors) = crate::init::directives_from_env_lossy();
        for error in &errors {
            eprintln!("logbus: ignoring {}: {error}", crate::init::ENV_VAR);
        }
        let logger = TestLogger {
            directives,
            intake: Intake::default(),
        };
        let ok = log::set_boxed_logger(Box::new(logger)).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Trace);
        }
        ok
    });
    if installed {
        Ok(())
    } else {
        Err(InstallError::AlreadyInstalled)
    }
}

/// Starts collecting the records the current thread logs, at every level,
/// until the returned [`Capture`] is dropped. Installs the test logger
/// first ([`init`]).
///
/// # Panics
///
/// If another `log` backend is installed, which would never pass a record
/// here: a test asserting on an empty capture would fail later, and less
/// clearly.
///
/// # Examples
///
/// ```
/// let logs = logbus::testing::capture();
/// log::warn!(target: "app", user = "ann"; "slow");
/// let records = logs.records();
/// assert_eq!(records[0].target(), "app");
/// assert_eq!(records[0].get("user").map(|v| v.to_string()), Some("ann".into()));
/// ```
pub fn capture() -> Capture {
    if let Err(error) = try_init() {
        panic!("logbus::testing::capture: {error}: another `log` backend was installed first");
    }
    let sink = Sink::default();
    let _ = CAPTURES.try_with(|captures| {
        if let Ok(mut captures) = captures.try_borrow_mut() {
            captures.push(Rc::clone(&sink));
        }
    });
    Capture { sink }
}

/// What logbus stamps records with in this process, as decided when the
/// first broker was built: `"tsc"` (the CPU's time-stamp counter, converted
/// when a record's time is read), `"wall clock"` (`SystemTime::now()`:
/// other systems, `LOGBUS_TSC=off`, or once the counter was found going
/// back), or `"undecided"` (no broker built yet). For logbus's own tests:
/// hidden, and exempt from semver.
#[doc(hidden)]
#[must_use]
pub fn __stamp_source() -> &'static str {
    crate::clock::source()
}

/// The records the current thread logged since [`capture`] made this;
/// stops collecting when dropped.
///
/// Tied to its thread (neither `Send` nor `Sync`). Several may be alive
/// on one thread: each holds what was logged during its own life.
pub struct Capture {
    sink: Sink,
}

/// What a capture holds; shared with its thread's list of captures.
type Sink = Rc<RefCell<Vec<Arc<Record>>>>;

thread_local! {
    /// The thread's live captures, oldest first.
    static CAPTURES: RefCell<Vec<Sink>> = const { RefCell::new(Vec::new()) };
    /// The thread's layout (it caches the formatted second) and line buffer.
    static LINE: RefCell<(Layout, Vec<u8>)> = RefCell::new((Layout::default(), Vec::new()));
}

impl Capture {
    /// The records captured so far, oldest first.
    #[must_use]
    pub fn records(&self) -> Vec<Arc<Record>> {
        self.sink.borrow().clone()
    }

    /// The messages of the records captured so far, oldest first.
    #[must_use]
    pub fn messages(&self) -> Vec<String> {
        let records = self.sink.borrow();
        records.iter().map(|r| r.message().to_owned()).collect()
    }

    /// How many records were captured.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sink.borrow().len()
    }

    /// Whether no record was captured.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sink.borrow().is_empty()
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("records", &self.len())
            .finish()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = CAPTURES.try_with(|captures| {
            if let Ok(mut captures) = captures.try_borrow_mut() {
                captures.retain(|sink| !Rc::ptr_eq(sink, &self.sink));
            }
        });
    }
}

/// Whether the current thread has a live capture (false while its
/// thread-locals are being destroyed).
fn capturing() -> bool {
    CAPTURES
        .try_with(|c| c.try_borrow().is_ok_and(|c| !c.is_empty()))
        .unwrap_or(false)
}

/// Test records' `seq`: unique and increasing in the process. Relaxed:
/// only the RMW's uniqueness matters; it publishes no memory.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// The `log` backend of test mode: no broker, everything on the caller's
/// thread.
struct TestLogger {
    directives: Directives,
    intake: Intake,
}

impl log::Log for TestLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.directives.enabled(metadata.level(), metadata.target()) || capturing()
    }

    fn log(&self, record: &log::Record<'_>) {
        let shown = self.directives.enabled(record.level(), record.target());
        let captured = capturing();
        if !shown && !captured {
            return;
        }
        let mut out = Record::builder(Topic::new(record.level(), record.target()))
            .seq(SEQ.fetch_add(1, Ordering::Relaxed))
            .time(SystemTime::now())
            .build();
        // The message is formatted (user code may run, and log: that call
        // is handled on its own, no borrow of ours is held) before either
        // thread-local is borrowed.
        let _truncated = log_backend::fill(&mut out, record, &self.intake);
        if shown {
            print(&out);
        }
        if captured {
            let record = Arc::new(out);
            let _ = CAPTURES.try_with(|captures| {
                if let Ok(captures) = captures.try_borrow() {
                    for sink in captures.iter() {
                        sink.borrow_mut().push(Arc::clone(&record));
                    }
                }
            });
        }
    }

    fn flush(&self) {}
}

/// Writes one record as one line with `eprintln!`, which the test harness
/// captures for the test running on this thread. One call per line: the
/// harness's buffer (or stderr) takes it whole.
fn print(record: &Record) {
    let render = |layout: &mut Layout, line: &mut Vec<u8>| {
        line.clear();
        layout.render(record, line);
        eprintln!("{}", String::from_utf8_lossy(line));
    };
    let done = LINE
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut cell) => {
                let (layout, line) = &mut *cell;
                render(layout, line);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !done {
        // During thread exit, or re-entered: a fresh layout.
        render(&mut Layout::default(), &mut Vec::new());
    }
}
