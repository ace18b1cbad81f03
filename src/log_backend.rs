//! The `log` crate backend: turning a `log::Record` into ours (under the
//! re-entrancy rule of `thread_role.rs`), and installing a broker as the
//! global logger.

use std::borrow::Cow;
use std::fmt;

use log::kv::{self, VisitSource, VisitValue};
use logbus_appenders::__private_api as produce;
use logbus_appenders::{Record, Value};

use crate::broker::{Broker, BrokerHandle, BrokerShared};
use crate::stats::{Counters, ShutdownReport};
use crate::sync::Ordering;
use crate::thread_role::{self, RoutingGuard};

/// Fills `out` (fresh or recycled, already carrying topic, seq and time)
/// from the `log` crate's record.
fn fill(out: &mut Record, record: &log::Record<'_>) {
    let args = record.args();
    match args.as_str() {
        Some(literal) => produce::set_message_literal(out, literal),
        None => {
            // Writing into a String only fails if a Display impl does; the
            // message then ends where it failed, as with `format!`'s callers.
            let buffer = produce::message_buffer(out);
            if buffer.capacity() == 0 {
                // A fresh record: skip the 8-16-32 growth steps most
                // messages would otherwise take.
                buffer.reserve(64);
            }
            let _ = fmt::Write::write_fmt(buffer, *args);
        }
    }
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
        let _ = source.visit(&mut CollectKv(out));
    }
}

struct CollectKv<'a>(&'a mut Record);

impl<'kvs> VisitSource<'kvs> for CollectKv<'_> {
    fn visit_pair(&mut self, key: kv::Key<'kvs>, value: kv::Value<'kvs>) -> Result<(), kv::Error> {
        let mut owned = OwnedValue(Value::Null);
        if value.visit(&mut owned).is_err() {
            owned.0 = Value::Str(Cow::Owned(value.to_string()));
        }
        produce::push_kv(self.0, Cow::Owned(key.as_str().to_owned()), owned.0);
        Ok(())
    }
}

struct OwnedValue(Value);

impl<'v> VisitValue<'v> for OwnedValue {
    fn visit_any(&mut self, value: kv::Value<'_>) -> Result<(), kv::Error> {
        self.0 = Value::Str(Cow::Owned(value.to_string()));
        Ok(())
    }

    fn visit_null(&mut self) -> Result<(), kv::Error> {
        self.0 = Value::Null;
        Ok(())
    }

    fn visit_u64(&mut self, value: u64) -> Result<(), kv::Error> {
        self.0 = Value::U64(value);
        Ok(())
    }

    fn visit_i64(&mut self, value: i64) -> Result<(), kv::Error> {
        self.0 = Value::I64(value);
        Ok(())
    }

    fn visit_f64(&mut self, value: f64) -> Result<(), kv::Error> {
        self.0 = Value::F64(value);
        Ok(())
    }

    fn visit_bool(&mut self, value: bool) -> Result<(), kv::Error> {
        self.0 = Value::Bool(value);
        Ok(())
    }

    fn visit_str(&mut self, value: &str) -> Result<(), kv::Error> {
        self.0 = Value::Str(Cow::Owned(value.to_owned()));
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
        self.publish(record.level(), record.target(), |out| fill(out, record));
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
