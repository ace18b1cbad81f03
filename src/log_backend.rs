//! The `log` crate backend: turning a `log::Record` into ours (under the
//! re-entrancy rule of `thread_role.rs`), or, for a plain one on a direct
//! route, into the parts a lane slot copies (`broker/publish/`,
//! `publish_direct`: the message formatted into the stack), and installing
//! a broker as the global logger. Also the broker's side of logbus's own
//! macros (`macros.rs`): a record whose message is formatted later, on the
//! worker.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::panic::Location;
use std::time::Duration;

use logbus_appenders::__private_api::{self as produce, Arg, Template};
use logbus_appenders::Record;

use crate::broker::{Broker, BrokerHandle, BrokerShared, Make, Remembering, Text};
use crate::queue::INLINE_TEXT;
use crate::sanitize::{bound_str, Bounded, Intake, SlotText};
use crate::stats::{Counters, ShutdownReport};
use crate::sync::{AtomicU64, OnceLock, Ordering};
use crate::thread_role::{self, RoutingGuard};

mod kv;

use self::kv::{collect_kv, SlotKv};

/// Fills `out` (fresh or recycled, already carrying topic, seq and time)
/// from the `log` crate's record, within the size bound, then redacts it
/// (`sanitize.rs`). Returns whether the bound cut something.
pub(crate) fn fill(out: &mut Record, record: &log::Record<'_>, intake: &Intake) -> bool {
    fill_with(out, record, intake, None)
}

/// [`fill`], the key-values from `kv` if the direct path packed them
/// (`SlotKv::collect`).
fn fill_with(
    out: &mut Record,
    record: &log::Record<'_>,
    intake: &Intake,
    kv: Option<&mut SlotKv>,
) -> bool {
    let args = record.args();
    let max = intake.max_bytes;
    let mut truncated = match args.as_str() {
        Some(literal) => match bound_str(literal, max) {
            None => {
                produce::set_message_literal(out, literal);
                false
            }
            Some(bounded) => {
                produce::message_buffer(out).push_str(&bounded);
                true
            }
        },
        None => {
            // Writing only fails if a Display impl does, or the bound
            // stopped it; the message then ends there, as with `format!`'s
            // callers.
            let buffer = produce::message_buffer(out);
            if buffer.capacity() == 0 {
                // A fresh record: skip the 8-16-32 growth steps most
                // messages would otherwise take.
                buffer.reserve(64);
            }
            let mut bounded = Bounded::new(buffer, max);
            let _ = fmt::Write::write_fmt(&mut bounded, *args);
            bounded.finish()
        }
    };
    let module_path = record
        .module_path_static()
        .map(Cow::Borrowed)
        .or_else(|| record.module_path().map(|m| Cow::Owned(m.to_owned())));
    let file = record
        .file_static()
        .map(Cow::Borrowed)
        .or_else(|| record.file().map(|f| Cow::Owned(f.to_owned())));
    locate(out, module_path, file, record.line());
    truncated |= match kv {
        Some(kv) => kv.collect(out, record, max),
        None => collect_kv(out, record, max),
    };
    truncated |= redact(out, intake);
    truncated
}

/// Where and on which thread the log call was made: the part of a record
/// both paths fill alike.
#[inline]
fn locate(
    out: &mut Record,
    module_path: Option<Cow<'static, str>>,
    file: Option<Cow<'static, str>>,
    line: Option<u32>,
) {
    produce::set_location(out, module_path, file, line);
    produce::set_thread(out, thread_role::thread_info());
}

/// The last step of both paths: redaction, if configured (`sanitize.rs`).
/// A message rewrite reads the message, so it formats a deferred one here.
/// Returns whether the size bound cut the rewritten message.
#[inline]
fn redact(out: &mut Record, intake: &Intake) -> bool {
    intake
        .redaction
        .as_ref()
        .is_some_and(|redaction| redaction.apply(out, intake.max_bytes))
}

/// A call site of logbus's own macros whose message may be deferred: its
/// module and its format string read at compile time (a `const` of the
/// macro's expansion). Macro plumbing.
#[doc(hidden)]
#[derive(Debug)]
pub struct Site {
    module_path: &'static str,
    template: Template,
}

impl Site {
    /// The site in `module_path` of `template`.
    #[must_use]
    pub const fn new(module_path: &'static str, template: Template) -> Site {
        Site {
            module_path,
            template,
        }
    }

    /// Whether the format can be deferred (the macro's first test).
    #[must_use]
    #[inline]
    pub const fn deferrable(&self) -> bool {
        self.template.plan().deferrable()
    }
}

/// The broker installed as the `log` backend, for logbus's own macros:
/// set once, by the one successful install (`install`). Unset when another
/// backend (or test mode) is installed: the macros then take the `log`
/// crate's path. Its states: unset -> set, once. `OnceLock::get` is an
/// Acquire load pairing with the Release of `set`, so a macro that finds
/// the broker sees it whole (it is leaked before `set`); one that misses it
/// during the install takes the `log` path, which reaches the same broker.
static INSTALLED: OnceLock<&'static BrokerShared> = OnceLock::new();

/// The installed broker, if the `log` backend is one.
#[inline]
pub(crate) fn installed() -> Option<&'static BrokerShared> {
    INSTALLED.get().copied()
}

thread_local! {
    /// The direct path's buffer for a message longer than a slot: it
    /// becomes the record's message (swapped with the record's old buffer,
    /// kept for the next one), so a steady stream of long messages
    /// allocates nothing either.
    static SPILL: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A deferred call of logbus's macros (`BrokerShared::log_deferred`), for
/// the direct path: its parts are the template and the arguments, copied
/// into the slot, and the worker formats the message.
struct DeferredCall<'a> {
    site: &'static Site,
    loc: &'static Location<'static>,
    args: &'a [Arg],
    intake: &'a Intake,
    /// The broker's count of messages the size bound cut (a rewrite's).
    truncated: &'a AtomicU64,
}

impl Make for DeferredCall<'_> {
    const PLAIN: bool = true;
    const REMEMBERS: Remembering = Remembering::Ahead;

    fn text(&mut self) -> Option<Text<'_>> {
        Some(Text {
            message: "",
            literal: None,
            deferred: Some(produce::DeferredParts {
                template: &self.site.template,
                args: self.args,
            }),
            module_path: Some(self.site.module_path),
            file: Some(self.loc.file()),
            line: Some(self.loc.line()),
            kv: Default::default(),
        })
    }

    fn fill(self, out: &mut Record) {
        produce::set_message_deferred(out, &self.site.template, self.args);
        locate(
            out,
            Some(Cow::Borrowed(self.site.module_path)),
            Some(Cow::Borrowed(self.loc.file())),
            Some(self.loc.line()),
        );
        if redact(out, self.intake) {
            Counters::add(self.truncated, 1);
        }
    }
}

/// A plain `log` call (`BrokerShared::log`), for the direct path.
struct Plain<'a, 's> {
    broker: &'a BrokerShared,
    record: &'a log::Record<'a>,
    text: &'a mut SlotText<'s>,
    /// Whether `text` formatted the message (into `text`): a second call,
    /// after a re-route, gives that text again.
    formatted: bool,
    /// The call's key-values packed for the slot, if it has any.
    kv: Option<&'a mut SlotKv>,
}

impl Make for Plain<'_, '_> {
    const PLAIN: bool = true;
    const REMEMBERS: Remembering = Remembering::InView;

    #[inline]
    fn text(&mut self) -> Option<Text<'_>> {
        let record = self.record;
        let args = record.args();
        let (message, literal) = match args.as_str() {
            // Not copied; one longer than the size bound takes the usual
            // path, which cuts it.
            Some(literal) if literal.len() <= self.broker.intake.max_bytes => {
                (literal, Some(literal))
            }
            Some(_) => return None,
            None => {
                if !self.formatted {
                    self.formatted = true;
                    // As in `fill`: a failing Display impl or the bound
                    // ends the message there.
                    let _ = fmt::Write::write_fmt(&mut *self.text, *args);
                }
                (self.text.in_slot()?, None)
            }
        };
        let kv = match &mut self.kv {
            None => produce::Packed::default(),
            Some(kv) => {
                // What the slot's text words hold besides (`queue/slot.rs`):
                // a literal's length, or the copied message.
                let used = if literal.is_some() { 8 } else { message.len() };
                let room = INLINE_TEXT.saturating_sub(used);
                kv.packed(record, room, self.broker.intake.max_bytes)?
            }
        };
        Some(Text {
            message,
            literal,
            deferred: None,
            module_path: record.module_path_static(),
            file: record.file_static(),
            line: record.line(),
            kv,
        })
    }

    fn fill(self, out: &mut Record) {
        if !self.formatted {
            if fill_with(out, self.record, &self.broker.intake, self.kv) {
                Counters::add(&self.broker.truncated, 1);
            }
            return;
        }
        let mut truncated = self.text.finish(produce::message_buffer(out));
        let record = self.record;
        locate(
            out,
            record.module_path_static().map(Cow::Borrowed),
            record.file_static().map(Cow::Borrowed),
            record.line(),
        );
        if let Some(kv) = self.kv {
            truncated |= kv.collect(out, record, self.broker.intake.max_bytes);
        }
        // One record cut, however many of its parts were (as `fill`).
        if truncated {
            Counters::add(&self.broker.truncated, 1);
        }
    }
}

impl BrokerShared {
    /// The `log::Log::log` entry point.
    pub(crate) fn log(&self, record: &log::Record<'_>) {
        let Some(_guard) = RoutingGuard::enter() else {
            // Relaxed: a statistic.
            Counters::add(&self.suppressed, 1);
            return;
        };
        let (level, target) = (record.level(), record.target());
        // A plain call may take the direct path (`broker/publish/`), its
        // key-values packed into the slot (`SlotKv`).
        let plain = self.intake.redaction.is_none()
            && (record.module_path_static().is_some() || record.module_path().is_none())
            && (record.file_static().is_some() || record.file().is_none());
        if plain {
            // At thread exit the spill buffer may be gone: the usual path
            // then routes through a temporary view.
            let done = SPILL.try_with(|spill| {
                // Taken only here, under the routing guard: never twice.
                let Ok(mut spill) = spill.try_borrow_mut() else {
                    return false;
                };
                let mut text = SlotText::new(self.intake.max_bytes, &mut spill);
                // Made (and zeroed) only for a call with key-values.
                let mut packed;
                let kv = if record.key_values().count() > 0 {
                    packed = SlotKv::new();
                    Some(&mut packed)
                } else {
                    None
                };
                let call = Plain {
                    broker: self,
                    record,
                    text: &mut text,
                    formatted: false,
                    kv,
                };
                self.publish_made(level, target, call);
                true
            });
            if done == Ok(true) {
                return;
            }
        }
        self.publish(level, target, |out| {
            if fill(out, record, &self.intake) {
                Counters::add(&self.truncated, 1);
            }
        });
    }

    /// The entry point of logbus's own macros for a message they defer:
    /// the record carries `site`'s format string and copies of `args`, and
    /// is formatted on the worker, as it rebuilds the record from its
    /// lane's slot (or when first read, `Record::message`, for a record
    /// that travels shared). Returns `false`, having done nothing, when the
    /// message could be longer than the size bound: the macro then takes
    /// the `log` path, which cuts it as for any call, so the two paths
    /// never differ.
    pub(crate) fn log_deferred(
        &self,
        level: log::Level,
        target: &str,
        site: &'static Site,
        loc: &'static Location<'static>,
        args: &[Arg],
    ) -> bool {
        if !site.template.plan().fits(args, self.intake.max_bytes) {
            return false;
        }
        let Some(_guard) = RoutingGuard::enter() else {
            // Relaxed: a statistic.
            Counters::add(&self.suppressed, 1);
            return true;
        };
        let mut call = DeferredCall {
            site,
            loc,
            args,
            intake: &self.intake,
            truncated: &self.truncated,
        };
        if self.intake.redaction.is_none() {
            // The direct path on the route this thread's view remembers, if
            // it is this call's; else where the route allows
            // (`broker/publish/`).
            if self.publish_remembered(level, target, &mut call) {
                return true;
            }
            self.publish_made(level, target, call);
        } else {
            self.publish(level, target, |out| call.fill(out));
        }
        true
    }
}

impl log::Log for BrokerHandle {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.shared.enabled(metadata.level(), metadata.target())
    }

    fn log(&self, record: &log::Record<'_>) {
        self.shared.log(record);
    }

    fn flush(&self) {
        // `Log::flush` cannot report; a timeout or a call from a worker
        // thread simply returns.
        let _ = BrokerHandle::flush(self);
    }
}

impl log::Log for Broker {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        log::Log::enabled(&**self, metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        self.shared.log(record);
    }

    fn flush(&self) {
        log::Log::flush(&**self);
    }
}

/// How long the exit hook waits by default for the queues to drain when
/// the process exits (see [`LoggerGuard`], "At exit", and
/// [`Builder::exit_timeout`](crate::Builder::exit_timeout)).
pub const DEFAULT_EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Makes `broker` the `log` backend for the rest of the process, and on
/// Unix registers the exit hook (unless `exit_timeout` is zero). The guard's
/// drop flushes for at most `drop_timeout`.
pub(crate) fn install(
    broker: Broker,
    exit_timeout: Duration,
    drop_timeout: Duration,
) -> Result<LoggerGuard, crate::InstallError> {
    let handle = broker.handle();
    match log::set_boxed_logger(Box::new(handle)) {
        Ok(()) => {
            // The installed broker lives for the process, as the `log`
            // crate's logger does: its owner is never dropped, so no drop
            // can shut it down; only `LoggerGuard::shutdown` does.
            let broker: &'static Broker = Box::leak(Box::new(broker));
            // The one successful install: it cannot be set already.
            let _ = INSTALLED.set(&broker.shared);
            // Release: pairs with the Acquire in `publish_snapshot`, which
            // then keeps `log::max_level` in step with reconfigurations.
            broker.shared.installed.store(true, Ordering::Release);
            log::set_max_level(broker.max_level());
            exit_hook::register(broker, exit_timeout);
            Ok(LoggerGuard {
                broker,
                drop_timeout,
            })
        }
        // `broker` is dropped here, which shuts its workers down.
        Err(_) => Err(crate::InstallError::AlreadyInstalled),
    }
}

/// The installed broker's guard: a handle on it, a flush when dropped, and
/// the explicit shutdown.
///
/// # What dropping it does
///
/// Dropping the guard **flushes**: it waits (at most the builder's
/// [`shutdown_timeout`](crate::Builder::shutdown_timeout), 30 s by default)
/// until every record logged before is written and every appender flushed.
/// Logging goes on afterwards: the installed broker lives for the rest of
/// the process. So `let _ = logbus::init();` and a bare `logbus::init();`
/// work (the guard is dropped at once, and flushes nothing); binding it
/// (`let _guard = ...` in `main`) adds a flush where its scope ends.
///
/// [`shutdown`](LoggerGuard::shutdown) and
/// [`shutdown_timeout`](LoggerGuard::shutdown_timeout) stop logging for
/// the process: they drain every queue, flush every appender, join the
/// workers and return a [`ShutdownReport`]; log calls after them return at
/// once and are counted as dropped.
///
/// # At exit
///
/// On Unix, installing registers an exit hook (`atexit`) that runs when
/// `main` returns or the process calls `std::process::exit` (which skips
/// destructors, the guard's included): it flushes every subscription, for
/// at most [`DEFAULT_EXIT_TIMEOUT`] (5 s) or
/// [`Builder::exit_timeout`](crate::Builder::exit_timeout)
/// (`Duration::ZERO` registers no hook). It waits for nothing when the
/// broker was shut down before, in a forked child (the workers are the
/// parent's), or for the worker of an appender that itself called `exit`.
/// Records logged by other threads while the process exits, records of
/// local [`Broker`]s, and anything after a `SIGKILL` or `abort` are not
/// covered. `libc::_exit` and a death by signal run no hook.
///
/// Elsewhere (Windows) there is no hook: `std::process::exit`, and the
/// end of the process after `main` returns, end the other threads at once,
/// the workers with them, so records still queued are lost. There, keep the
/// guard bound in `main` (its drop flushes when `main` returns) and call
/// `log::logger().flush()` or [`shutdown`](LoggerGuard::shutdown) before
/// `std::process::exit`.
#[must_use = "dropping the guard only flushes, and logging goes on; bind it \
              (`let _guard = ...`) to flush where its scope ends, or keep it \
              to call `shutdown`"]
#[derive(Debug)]
pub struct LoggerGuard {
    broker: &'static Broker,
    drop_timeout: Duration,
}

impl LoggerGuard {
    /// A handle on the installed broker (subscribe, unsubscribe, stats at
    /// runtime).
    #[must_use]
    pub fn handle(&self) -> BrokerHandle {
        self.broker.handle()
    }

    /// Shuts down now, with the configured deadline, and returns the report.
    /// Logging stops for the rest of the process: later log calls are
    /// counted as dropped.
    pub fn shutdown(self) -> ShutdownReport {
        self.into_broker().shutdown()
    }

    /// Shuts down with a deadline and returns the report; as
    /// [`shutdown`](LoggerGuard::shutdown).
    pub fn shutdown_timeout(self, timeout: Duration) -> ShutdownReport {
        self.into_broker().shutdown_timeout(timeout)
    }

    /// The broker, without the guard's drop (whose flush would follow the
    /// shutdown, and wait again for a worker the deadline left unfinished).
    fn into_broker(self) -> &'static Broker {
        let broker = self.broker;
        std::mem::forget(self); // holds nothing but a reference and a number
        broker
    }
}

impl Drop for LoggerGuard {
    fn drop(&mut self) {
        // A timeout leaves the records queued, where the stats show them;
        // on a worker thread the flush returns at once.
        let _ = self.broker.flush_timeout(self.drop_timeout);
    }
}

impl std::ops::Deref for LoggerGuard {
    type Target = BrokerHandle;

    fn deref(&self) -> &BrokerHandle {
        self.broker
    }
}

/// The exit hook: one `atexit` handler, registered by the one successful
/// install of the process, that drains the installed broker.
///
/// Why it is safe wherever `exit` is called (the drain's own cases, a
/// worker thread, a forked child, a shutdown before or under way, are
/// argued at `BrokerShared::drain_at_exit`):
///
/// - It runs at most once (`RAN`). A second `exit` while the hook waits
///   does not reach it: Rust's `exit` parks a second exiting thread for
///   ever (std's `unique_thread_exit`), so if that thread is a worker the
///   hook waits for, the wait lasts until the deadline and the second exit
///   code is lost.
/// - Handlers run in the reverse order of registration: libraries set up
///   after logbus (OpenSSL's cleanup, C++ static destructors) may be torn
///   down before the drain, so an appender using one can fail at exit.
/// - Nothing unwinds into C: the body runs under `catch_unwind`, and it
///   has no panicking path of its own (no unwrap, no index, a saturating
///   deadline).
/// - The exiting thread's thread-locals with destructors are gone when
///   `atexit` handlers run (glibc and macOS destroy them first): the drain
///   reads only a const thread-local without a destructor, and polls
///   instead of blocking, so neither crossbeam's context nor
///   `thread::current` is needed (`tests/exit_hook.rs` runs the hook after
///   `exit` and after `main` returns).
/// - Subscriptions that did not finish by the deadline are named on stderr
///   (one raw `write`): their queued records are lost, not counted.
/// - `AT_EXIT` is set before `atexit` is called, so the hook finds it; in
///   a process with no install there is no hook.
#[cfg(all(unix, not(miri)))]
mod exit_hook {
    use std::panic::catch_unwind;
    use std::time::Duration;

    use crate::broker::Broker;
    use crate::sync::{AtomicBool, OnceLock, Ordering};

    /// The installed broker and the hook's deadline, set once before the
    /// hook is registered.
    static AT_EXIT: OnceLock<(&'static Broker, Duration)> = OnceLock::new();

    /// Whether the hook has begun. Its states: `false` -> `true` once, by
    /// the first call. AcqRel swap: the one RMW that lets exactly one
    /// caller through; it publishes nothing else.
    static RAN: AtomicBool = AtomicBool::new(false);

    pub(super) fn register(broker: &'static Broker, timeout: Duration) {
        if timeout.is_zero() || AT_EXIT.set((broker, timeout)).is_err() {
            return;
        }
        // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the
        // process (a plain function) and never unwinds (see the module
        // docs). A non-zero return (no room for another handler) leaves the
        // process without a hook, as on other platforms.
        unsafe {
            libc::atexit(at_exit);
        }
    }

    /// Says on stderr which subscriptions did not finish: their queued
    /// records are lost with the process, and the stats can no longer be
    /// read. One `write(2)` on fd 2, not `eprintln!`: a stuck worker may
    /// hold the stderr lock.
    fn report(pending: &[String], timeout: Duration) {
        let line = format!(
            "logbus: at exit, not finished within {timeout:?} (their queued records are lost): {}\n",
            pending.join(", ")
        );
        let mut bytes = line.as_bytes();
        while !bytes.is_empty() {
            // SAFETY: writes `bytes.len()` initialised bytes from a live
            // buffer to fd 2; a closed or invalid fd only returns an error.
            let written = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
            match usize::try_from(written) {
                Ok(n) if n > 0 => bytes = &bytes[n.min(bytes.len())..],
                _ => return,
            }
        }
    }

    extern "C" fn at_exit() {
        let _ = catch_unwind(|| {
            if RAN.swap(true, Ordering::AcqRel) {
                return;
            }
            if let Some((broker, timeout)) = AT_EXIT.get() {
                let pending = broker.shared.drain_at_exit(*timeout);
                if !pending.is_empty() {
                    report(&pending, *timeout);
                }
            }
        });
    }
}

/// No exit hook without Unix's `atexit` (see [`LoggerGuard`], "At exit").
#[cfg(not(all(unix, not(miri))))]
mod exit_hook {
    pub(super) fn register(_: &'static crate::broker::Broker, _: std::time::Duration) {}
}
