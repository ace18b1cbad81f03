//! The `log` crate backend: turning a `log::Record` into ours (under the
//! re-entrancy rule of `thread_role.rs`), and installing a broker as the
//! global logger.

use std::borrow::Cow;
use std::fmt;

use log::kv::{self, VisitSource, VisitValue};
use logbus_appenders::__private_api as produce;
use logbus_appenders::{Record, Value};

use crate::broker::{Broker, BrokerHandle, BrokerShared};
use crate::sanitize::{bound_str, Bounded, Intake};
use crate::stats::{Counters, ShutdownReport};
use crate::sync::Ordering;
use crate::thread_role::{self, RoutingGuard};

/// Fills `out` (fresh or recycled, already carrying topic, seq and time)
/// from the `log` crate's record, within the size bound, then redacts it
/// (`sanitize.rs`). Returns whether the bound cut something.
fn fill(out: &mut Record, record: &log::Record<'_>, intake: &Intake) -> bool {
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
    produce::set_location(out, module_path, file, record.line());
    produce::set_thread(out, thread_role::thread_info());
    let source = record.key_values();
    if source.count() > 0 {
        let mut collect = CollectKv {
            out: &mut *out,
            max,
            truncated: false,
        };
        let _ = source.visit(&mut collect);
        truncated |= collect.truncated;
    }
    if let Some(redaction) = &intake.redaction {
        redaction.apply(out);
    }
    truncated
}

struct CollectKv<'a> {
    out: &'a mut Record,
    max: usize,
    truncated: bool,
}

/// A value's text within the bound (`sanitize.rs`): formatted through
/// [`Bounded`], so a huge `Display` value is not copied whole.
fn bounded_text(value: &kv::Value<'_>, max: usize, truncated: &mut bool) -> Value {
    let mut text = String::new();
    let mut bounded = Bounded::new(&mut text, max);
    let _ = fmt::Write::write_fmt(&mut bounded, format_args!("{value}"));
    *truncated |= bounded.finish();
    Value::Str(Cow::Owned(text))
}

impl<'kvs> VisitSource<'kvs> for CollectKv<'_> {
    fn visit_pair(&mut self, key: kv::Key<'kvs>, value: kv::Value<'kvs>) -> Result<(), kv::Error> {
        let mut owned = OwnedValue {
            value: Value::Null,
            max: self.max,
            truncated: false,
        };
        if value.visit(&mut owned).is_err() {
            owned.value = bounded_text(&value, self.max, &mut owned.truncated);
        }
        self.truncated |= owned.truncated;
        let key = match bound_str(key.as_str(), self.max) {
            None => Cow::Owned(key.as_str().to_owned()),
            Some(bounded) => {
                self.truncated = true;
                Cow::Owned(bounded)
            }
        };
        produce::push_kv(self.out, key, owned.value);
        Ok(())
    }
}

struct OwnedValue {
    value: Value,
    max: usize,
    truncated: bool,
}

impl<'v> VisitValue<'v> for OwnedValue {
    fn visit_any(&mut self, value: kv::Value<'_>) -> Result<(), kv::Error> {
        // A structured `:serde` value as JSON (feature `serde`; without it
        // this is `None` and costs nothing), else the value's text.
        self.value = match produce::structured_value(&value, self.max, &mut self.truncated) {
            Some(structured) => structured,
            None => bounded_text(&value, self.max, &mut self.truncated),
        };
        Ok(())
    }

    fn visit_null(&mut self) -> Result<(), kv::Error> {
        self.value = Value::Null;
        Ok(())
    }

    fn visit_u64(&mut self, value: u64) -> Result<(), kv::Error> {
        self.value = Value::U64(value);
        Ok(())
    }

    fn visit_i64(&mut self, value: i64) -> Result<(), kv::Error> {
        self.value = Value::I64(value);
        Ok(())
    }

    fn visit_f64(&mut self, value: f64) -> Result<(), kv::Error> {
        self.value = Value::F64(value);
        Ok(())
    }

    fn visit_bool(&mut self, value: bool) -> Result<(), kv::Error> {
        self.value = Value::Bool(value);
        Ok(())
    }

    fn visit_str(&mut self, value: &str) -> Result<(), kv::Error> {
        self.value = Value::Str(Cow::Owned(match bound_str(value, self.max) {
            None => value.to_owned(),
            Some(bounded) => {
                self.truncated = true;
                bounded
            }
        }));
        Ok(())
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
        self.publish(record.level(), record.target(), |out| {
            if fill(out, record, &self.intake) {
                Counters::add(&self.truncated, 1);
            }
        });
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

/// Makes `broker` the `log` backend.
pub(crate) fn install(broker: Broker) -> Result<LoggerGuard, crate::InstallError> {
    let handle = broker.handle();
    match log::set_boxed_logger(Box::new(handle)) {
        Ok(()) => {
            // Release: pairs with the Acquire in `publish_snapshot`, which
            // then keeps `log::max_level` in step with reconfigurations.
            broker.shared.installed.store(true, Ordering::Release);
            log::set_max_level(broker.max_level());
            Ok(LoggerGuard { broker })
        }
        // `broker` is dropped here, which shuts its workers down.
        Err(_) => Err(crate::InstallError::AlreadyInstalled),
    }
}

/// Keeps the installed broker running; dropping it drains every queue,
/// flushes every appender and joins the workers.
///
/// The `log` crate never drops its logger, so this guard is what guarantees
/// that nothing queued is lost at exit. Bind it to a named variable in
/// `main` (`let _guard = ...`; **not** `let _ = ...`, which drops it at
/// once). `std::process::exit` skips destructors: call
/// [`LoggerGuard::shutdown`] (or drop the guard) before it.
///
/// After the guard is dropped, log calls return at once and are counted as
/// dropped.
#[must_use = "dropping the guard shuts logging down; bind it with `let _guard = ...`"]
#[derive(Debug)]
pub struct LoggerGuard {
    broker: Broker,
}

impl LoggerGuard {
    /// A handle on the installed broker (subscribe, unsubscribe, stats at
    /// runtime).
    #[must_use]
    pub fn handle(&self) -> BrokerHandle {
        self.broker.handle()
    }

    /// Shuts down now, with the configured deadline, and returns the report.
    pub fn shutdown(self) -> ShutdownReport {
        self.broker.shutdown()
    }

    /// Shuts down with a deadline and returns the report.
    pub fn shutdown_timeout(self, timeout: std::time::Duration) -> ShutdownReport {
        self.broker.shutdown_timeout(timeout)
    }
}

impl std::ops::Deref for LoggerGuard {
    type Target = BrokerHandle;

    fn deref(&self) -> &BrokerHandle {
        &self.broker
    }
}
