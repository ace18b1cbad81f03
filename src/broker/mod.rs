//! The broker: the owner of a set of subscriptions, and its public face.
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | [`Broker`], [`BrokerHandle`], the shared state, stats |
//! | `config.rs` | configuration as immutable snapshots: subscribe, reconfigure, unsubscribe |
//! | `publish/mod.rs` | the caller's path: route, build the record, pass the gates, push |
//! | `publish/direct.rs` | the direct path: a plain record's parts copied into one to four lanes |
//! | `lifecycle.rs` | flush barriers and shutdown |
//! | `journal.rs` | the journal's settings and reader, a replay's last step, loss-free replacement |
//!
//! `Broker` dereferences to `BrokerHandle` on purpose: a `Broker` *is* a
//! handle that also owns the broker's life (it shuts down on drop), as a
//! guard dereferences to what it guards, so every handle method works on
//! it without a copy of the API. The price is [`Broker::flush`]: `Broker`
//! implements `log::Log` (so `log::info!(logger: &broker, ..)` works), and
//! with `log::Log` in scope its `flush` would win over the handle's through
//! `Deref`, so `Broker` repeats it. [`LoggerGuard`](crate::LoggerGuard)
//! dereferences to `BrokerHandle` for the same reason.

mod config;
mod journal;
mod lifecycle;
mod publish;
pub(crate) use self::publish::{Make, Remembering, Text};

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use log::LevelFilter;
use logbus_appenders::Record;

use self::config::Config;
use crate::directive::Directives;
use crate::error::{FlushError, ReconfigureError, SubscribeError, UnsubscribeError};
use crate::recycle::Pool;
use crate::route::{self, Snapshot};
use crate::sanitize::Intake;
use crate::stats::{BrokerStats, Counters, ShutdownReport, SubscriptionStats};
use crate::subscription::{SubShared, SubscriptionBuilder, SubscriptionHandle};
use crate::sync::{Arc, AtomicBool, AtomicU64, CacheLine, Mutex, OnceLock, Ordering};
use crate::topic::PatternSource;

/// How long [`BrokerHandle::flush`] (and `log::logger().flush()`) waits by
/// default.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// How long dropping a [`Broker`] or a [`LoggerGuard`](crate::LoggerGuard)
/// waits by default for the queues to drain.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Gives every broker in the process a distinct id (for thread-local views).
static NEXT_BROKER_ID: AtomicU64 = AtomicU64::new(1);

/// The state every handle of a broker shares.
pub(crate) struct BrokerShared {
    pub(crate) id: u64,
    /// Serialises reconfigurations. Guards the current snapshot and the
    /// shut-down flag; publishers take it only to refresh their thread-local
    /// view after the generation changed. Never held while calling user code
    /// or waiting for a worker.
    config: Mutex<Config>,
    /// The generation of the current snapshot. Written (SeqCst) under the
    /// `config` lock right after a new snapshot is stored; read by every
    /// publish (Acquire on the fast path; for the gate re-check, after the
    /// gate's fence, see `queue/gate.rs`).
    generation: AtomicU64,
    /// Broker-wide record sequence. Relaxed: only uniqueness and monotonic
    /// allocation matter, which the RMW gives; it publishes no memory. On
    /// its own cache line: every publish writes it.
    seq: Arc<CacheLine<AtomicU64>>,
    /// Set (SeqCst) once by shutdown before its generation bump and its gate
    /// waits (whose heavy fence pairs with the publishers' gate fence,
    /// `queue/gate.rs`); publishers that pass the gate re-check read it to
    /// count instead of enqueue.
    closed: AtomicBool,
    /// Log calls discarded by the re-entrancy rule. Relaxed statistic.
    pub(crate) suppressed: AtomicU64,
    /// Records whose message or a value was cut by the size bound
    /// (`sanitize.rs`). Relaxed statistic.
    pub(crate) truncated: AtomicU64,
    /// The size bound and redaction, applied as each record is filled.
    pub(crate) intake: Intake,
    /// Records published after shutdown (also counted per subscription),
    /// or in a forked child (`fork.rs`). Relaxed statistic.
    dropped_after_shutdown: AtomicU64,
    /// Whether this broker is the global `log` backend (then
    /// `log::set_max_level` follows its configuration). Release/Acquire:
    /// set once by `install`.
    pub(crate) installed: AtomicBool,
    /// Records whose last appender is done with them, for publishers to
    /// reuse (see `recycle.rs`).
    pool: Pool,
    /// The dead-letter subscription, set at most once; read by workers.
    dead_letters: Arc<OnceLock<Arc<SubShared>>>,
    flush_timeout: Duration,
    shutdown_timeout: Duration,
    /// The fork generation the broker was created in: in a forked child it
    /// behaves as shut down (`fork.rs`).
    fork_generation: u64,
}

/// A cheap, cloneable handle on a broker: subscribe, unsubscribe, flush,
/// read stats. Appenders and other threads may hold one; it does not shut
/// the broker down when dropped (the owning [`Broker`] or
/// [`LoggerGuard`](crate::LoggerGuard) does).
#[derive(Clone)]
pub struct BrokerHandle {
    pub(crate) shared: Arc<BrokerShared>,
}

/// A logging broker: routes records to subscriptions, each with its own
/// queue and worker thread.
///
/// A `Broker` works as a local value (tests, libraries) or, through
/// [`Builder::install`](crate::Builder::install), as the `log` crate's
/// backend. It dereferences to a [`BrokerHandle`] for everything but
/// shutdown. Dropping it shuts it down with [`DEFAULT_SHUTDOWN_TIMEOUT`].
///
/// # Examples
///
/// ```
/// use logbus::{Broker, LevelFilter, Memory, Subscription};
///
/// let broker = Broker::new();
/// let (errors, captured) = Memory::new();
/// broker.subscribe(Subscription::builder("errors", errors).pattern("error.#"))?;
///
/// log::set_max_level(LevelFilter::Trace);
/// log::error!(logger: &broker, target: "app::db", "connection lost");
/// log::info!(logger: &broker, target: "app::db", "reconnected");
///
/// let report = broker.shutdown();
/// assert_eq!(captured.messages(), ["connection lost"]);
/// assert_eq!(report.subscriptions["errors"].written, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Broker {
    handle: BrokerHandle,
}

impl Default for Broker {
    fn default() -> Broker {
        Broker::new()
    }
}

impl fmt::Debug for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broker")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for BrokerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerHandle")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

impl Deref for Broker {
    type Target = BrokerHandle;

    fn deref(&self) -> &BrokerHandle {
        &self.handle
    }
}

impl Broker {
    /// A broker with no subscriptions and the default timeouts.
    #[must_use]
    pub fn new() -> Broker {
        Broker::with_settings(
            DEFAULT_FLUSH_TIMEOUT,
            DEFAULT_SHUTDOWN_TIMEOUT,
            Intake::default(),
        )
    }

    pub(crate) fn with_settings(
        flush_timeout: Duration,
        shutdown_timeout: Duration,
        intake: Intake,
    ) -> Broker {
        crate::clock::prepare();
        crate::sync::prepare_fences();
        let shared = BrokerShared {
            // Relaxed: only uniqueness matters.
            id: NEXT_BROKER_ID.fetch_add(1, Ordering::Relaxed),
            config: Mutex::new(Config::new(Snapshot::new(0, Vec::new(), None, None))),
            generation: AtomicU64::new(0),
            seq: Arc::new(CacheLine(AtomicU64::new(0))),
            closed: AtomicBool::new(false),
            suppressed: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            intake,
            dropped_after_shutdown: AtomicU64::new(0),
            installed: AtomicBool::new(false),
            dead_letters: Arc::new(OnceLock::new()),
            pool: Pool::new(),
            flush_timeout,
            shutdown_timeout,
            fork_generation: crate::fork::generation(),
        };
        Broker {
            handle: BrokerHandle {
                shared: Arc::new(shared),
            },
        }
    }

    /// [`BrokerHandle::flush`], repeated here so that it wins over
    /// `log::Log::flush` (which `Broker` also implements) when `log::Log` is
    /// in scope.
    ///
    /// # Errors
    ///
    /// As for [`BrokerHandle::flush`].
    pub fn flush(&self) -> Result<(), FlushError> {
        self.handle.flush()
    }

    /// A handle that can be cloned and moved to other threads.
    #[must_use]
    pub fn handle(&self) -> BrokerHandle {
        self.handle.clone()
    }

    /// Stops the broker: new log calls are counted as dropped, every queue is
    /// drained and every appender flushed, waiting at most
    /// [`DEFAULT_SHUTDOWN_TIMEOUT`] (or the builder's setting). Calling it
    /// again returns the current counters.
    pub fn shutdown(&self) -> ShutdownReport {
        self.shutdown_timeout(self.shared.shutdown_timeout)
    }

    /// Like [`shutdown`](Broker::shutdown), with a deadline: subscriptions
    /// whose appender has not finished by then are named in
    /// [`ShutdownReport::unfinished`] and their remaining records in
    /// `in_queue`. Their threads are left to finish on their own (the
    /// dead-letter route too, while a subscription that may feed it is
    /// unfinished). Calling it again waits again, up to its new deadline;
    /// dropping the broker after a shutdown does not wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use logbus::{Broker, Memory, Subscription};
    ///
    /// let broker = Broker::new();
    /// broker.subscribe(Subscription::builder("mem", Memory::new().0))?;
    /// let report = broker.shutdown_timeout(Duration::from_secs(1));
    /// assert!(report.unfinished.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_timeout(&self, timeout: Duration) -> ShutdownReport {
        self.shared.shutdown(timeout)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if self.shared.in_forked_child() {
            // Nothing to drain here, and no lock to take (`fork.rs`).
            return;
        }
        // Shut down before (e.g. `shutdown_timeout(d)` then drop): that call
        // had its wait; dropping must not wait the default timeout again for
        // an appender that missed the deadline.
        let timeout = if self.shared.is_shut_down() {
            Duration::ZERO
        } else {
            self.shared.shutdown_timeout
        };
        let _ = self.shared.shutdown(timeout);
        route::forget_view(self.shared.id);
    }
}

impl BrokerHandle {
    /// Adds a subscription and starts its worker thread `logbus-<name>`.
    ///
    /// # Errors
    ///
    /// [`SubscribeError`] if a pattern is malformed, the name is taken or
    /// empty, the capacity is zero, the broker is shut down, or the thread
    /// cannot be spawned.
    pub fn subscribe(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        self.shared.subscribe(builder)
    }

    /// Removes a subscription: stops routing to it, writes what it had
    /// queued, flushes its appender and joins its worker. Returns its final
    /// counters.
    ///
    /// Called from inside an appender (on a logbus worker thread) or a
    /// subscription's predicate it does not wait: routing stops at once and
    /// the drain completes in the background (a replaying subscription's
    /// worker waits for its predicate to return before it can stop).
    ///
    /// # Errors
    ///
    /// [`UnsubscribeError::NotFound`] if no subscription has this name.
    pub fn unsubscribe(&self, name: &str) -> Result<SubscriptionStats, UnsubscribeError> {
        BrokerShared::unsubscribe(&self.shared, name)
    }

    /// Waits until every record enqueued before this call has been written
    /// (or counted as dropped or failed) and every appender flushed, for at
    /// most the broker's flush timeout ([`DEFAULT_FLUSH_TIMEOUT`]).
    ///
    /// # Errors
    ///
    /// [`FlushError::Timeout`] naming the subscriptions that had not
    /// finished, [`FlushError::OnWorkerThread`] when called from inside an
    /// appender, or [`FlushError::InPredicate`] from inside a replay's
    /// predicate, where waiting could deadlock.
    pub fn flush(&self) -> Result<(), FlushError> {
        self.shared.flush(self.shared.flush_timeout)
    }

    /// [`flush`](BrokerHandle::flush) with an explicit bound.
    ///
    /// # Errors
    ///
    /// As for [`flush`](BrokerHandle::flush).
    pub fn flush_timeout(&self, timeout: Duration) -> Result<(), FlushError> {
        self.shared.flush(timeout)
    }

    /// Like [`flush`](BrokerHandle::flush), for one subscription only: other
    /// appenders (even stuck ones) are not waited for.
    ///
    /// # Errors
    ///
    /// As for [`flush`](BrokerHandle::flush); a name that matches no
    /// subscription flushes nothing and succeeds.
    pub fn flush_subscription(&self, name: &str, timeout: Duration) -> Result<(), FlushError> {
        self.shared.flush_some(timeout, Some(name))
    }

    /// Changes a subscription's level threshold. Atomic for publishers:
    /// each record is routed wholly under the old or wholly under the new
    /// configuration, and none is lost or delivered twice. When the broker
    /// is the `log` backend, `log::max_level` follows.
    ///
    /// # Errors
    ///
    /// [`ReconfigureError::NotFound`] if no subscription has this name.
    pub fn set_level(&self, name: &str, level: LevelFilter) -> Result<(), ReconfigureError> {
        self.shared.reconfigure(name, |entry| {
            entry.level = level;
            Ok(())
        })
    }

    /// Replaces a subscription's topic patterns (an empty list means `#`).
    /// Atomic for publishers, as for [`set_level`](BrokerHandle::set_level).
    ///
    /// # Errors
    ///
    /// [`ReconfigureError::Pattern`] naming a malformed pattern (nothing is
    /// changed then), or [`ReconfigureError::NotFound`].
    pub fn set_patterns<S: AsRef<str>>(
        &self,
        name: &str,
        patterns: &[S],
    ) -> Result<(), ReconfigureError> {
        let sources: Vec<PatternSource> = patterns
            .iter()
            .map(|p| PatternSource::Text(p.as_ref().to_owned()))
            .collect();
        let parsed = crate::topic::parse_patterns(&sources)?;
        self.shared.reconfigure(name, move |entry| {
            entry.patterns = parsed;
            Ok(())
        })
    }

    /// Replaces (or with `None` removes) a subscription's directives.
    /// Atomic for publishers, as for [`set_level`](BrokerHandle::set_level).
    ///
    /// # Errors
    ///
    /// [`ReconfigureError::NotFound`] if no subscription has this name.
    pub fn set_directives(
        &self,
        name: &str,
        directives: Option<Directives>,
    ) -> Result<(), ReconfigureError> {
        self.shared.reconfigure(name, move |entry| {
            entry.directives = directives;
            Ok(())
        })
    }

    /// Replaces a subscription's predicate. Atomic for publishers, as for
    /// [`set_level`](BrokerHandle::set_level).
    ///
    /// # Errors
    ///
    /// [`ReconfigureError::NotFound`] if no subscription has this name.
    pub fn set_filter(
        &self,
        name: &str,
        predicate: impl Fn(&Record) -> bool + Send + Sync + 'static,
    ) -> Result<(), ReconfigureError> {
        let predicate: crate::subscription::Predicate = Arc::new(predicate);
        self.shared.reconfigure(name, move |entry| {
            entry.predicate = Some(predicate);
            Ok(())
        })
    }

    /// Removes a subscription's predicate.
    ///
    /// # Errors
    ///
    /// [`ReconfigureError::NotFound`] if no subscription has this name.
    pub fn clear_filter(&self, name: &str) -> Result<(), ReconfigureError> {
        self.shared.reconfigure(name, |entry| {
            entry.predicate = None;
            Ok(())
        })
    }

    /// Sets (or with `None` removes) broker-wide directives that every record
    /// must pass in addition to its subscriptions' own filters. Atomic for
    /// publishers; `log::max_level` follows.
    ///
    /// ```
    /// use logbus::{Broker, Directives, LevelFilter, Memory, Subscription};
    ///
    /// let broker = Broker::new();
    /// let (appender, captured) = Memory::new();
    /// broker.subscribe(Subscription::builder("all", appender))?;
    /// broker.set_global_directives(Some("warn,app=info".parse()?));
    /// assert_eq!(broker.max_level(), LevelFilter::Info);
    /// log::set_max_level(LevelFilter::Trace);
    /// log::info!(logger: &broker, target: "app::db", "kept");
    /// log::info!(logger: &broker, target: "hyper", "filtered out");
    /// broker.flush()?;
    /// assert_eq!(captured.messages(), ["kept"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_global_directives(&self, directives: Option<Directives>) {
        self.shared.set_global(directives);
    }

    /// Sets the dead-letter route: the subscription (its own queue and
    /// worker) that receives every record another appender failed to write,
    /// with key-values `dead_letter.appender`, `dead_letter.error` and
    /// `dead_letter.attempts`. Its patterns and level are not used. If it
    /// fails too, the record is counted as `lost` and reported on stderr
    /// (rate-limited); it never loops.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::DeadLetterExists`] if one is already set, or as for
    /// [`subscribe`](BrokerHandle::subscribe).
    pub fn set_dead_letter(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        self.shared.set_dead_letter(builder)
    }

    /// A snapshot of every subscription's counters and the broker totals.
    #[must_use]
    pub fn stats(&self) -> BrokerStats {
        self.shared.stats()
    }

    /// The handle of the subscription called `name`, if any.
    #[must_use]
    pub fn subscription(&self, name: &str) -> Option<SubscriptionHandle> {
        let snapshot = self.shared.snapshot();
        snapshot
            .entries
            .iter()
            .find(|e| &*e.sub.name == name)
            .map(|e| SubscriptionHandle {
                shared: Arc::clone(&e.sub),
            })
    }

    /// The loosest level any subscription accepts.
    #[must_use]
    pub fn max_level(&self) -> LevelFilter {
        self.shared.snapshot().max_level
    }
}

impl BrokerShared {
    /// Whether this process is a child forked after the broker was made:
    /// its workers are not here (`fork.rs`).
    pub(crate) fn in_forked_child(&self) -> bool {
        crate::fork::forked_since(self.fork_generation)
    }

    /// Every subscription's counters and the broker's.
    fn stats(&self) -> BrokerStats {
        if self.in_forked_child() {
            // The subscriptions are the parent's, and their locks may be
            // held for ever here (`fork.rs`): the broker's own counters only.
            return BrokerStats {
                suppressed: Counters::get(&self.suppressed),
                truncated: Counters::get(&self.truncated),
                dropped_after_shutdown: Counters::get(&self.dropped_after_shutdown),
                ..BrokerStats::default()
            };
        }
        let snapshot = self.snapshot();
        let subscriptions: BTreeMap<String, SubscriptionStats> = snapshot
            .entries
            .iter()
            .map(|e| &e.sub)
            .chain(self.dead_letters.get())
            .map(|sub| (sub.name.to_string(), sub.stats()))
            .collect();
        let mut totals = SubscriptionStats::default();
        for stats in subscriptions.values() {
            totals.accumulate(stats);
        }
        BrokerStats {
            subscriptions,
            totals,
            suppressed: Counters::get(&self.suppressed),
            truncated: Counters::get(&self.truncated),
            dropped_after_shutdown: Counters::get(&self.dropped_after_shutdown),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sync::Mutex;

    use logbus_appenders::{AppendError, Appender, Record};

    use super::*;
    use crate::queue::OverflowPolicy;
    use crate::subscription::Subscription;

    /// Keeps the messages, not the records, so that workers hand the
    /// records back for reuse.
    #[derive(Clone, Default)]
    struct Tally(Arc<Mutex<Vec<String>>>);

    impl Appender for Tally {
        fn append(&mut self, record: &Record) -> Result<(), AppendError> {
            self.0.lock().unwrap().push(record.message().to_owned());
            Ok(())
        }

        fn flush(&mut self) -> Result<(), AppendError> {
            Ok(())
        }
    }

    /// A plain call for the tests: its message, or `None` for one longer
    /// than a slot; it notes which of its two ways was taken.
    struct Call<'a> {
        message: Option<&'static str>,
        ways: &'a mut Vec<&'static str>,
    }

    impl super::Make for Call<'_> {
        const PLAIN: bool = true;

        fn text(&mut self) -> Option<super::Text<'_>> {
            self.ways.push("text");
            self.message.map(|message| super::Text {
                message,
                literal: None,
                deferred: None,
                module_path: Some("m"),
                file: Some("f.rs"),
                line: Some(1),
                kv: Default::default(),
            })
        }

        fn fill(self, out: &mut Record) {
            self.ways.push("fill");
            let message = self.message.unwrap_or("made before, longer than a slot");
            logbus_appenders::__private_api::message_buffer(out).push_str(message);
        }
    }

    /// The direct path takes a plain record for one subscription, and as
    /// copies for two, and the worker writes what the caller formatted; a
    /// message longer than a slot goes the usual way with its text made,
    /// and a subscription with a predicate on the route makes the call skip
    /// the direct path unformatted.
    #[test]
    fn the_direct_path_takes_what_it_can_and_steps_aside_otherwise() {
        let broker = Broker::new();
        let tally = Tally::default();
        broker
            .subscribe(Subscription::builder("one", tally.clone()))
            .unwrap();
        let shared = &broker.handle().shared;
        let mut ways = Vec::new();
        let publish = |message, ways: &mut Vec<_>| {
            ways.clear();
            shared.publish_made(log::Level::Info, "app", Call { message, ways });
        };
        publish(Some("direct"), &mut ways);
        assert_eq!(ways, ["text"]);
        publish(None, &mut ways);
        assert_eq!(ways, ["text", "fill"]);
        let two = Tally::default();
        broker
            .subscribe(Subscription::builder("two", two.clone()))
            .unwrap();
        publish(Some("copies"), &mut ways);
        assert_eq!(ways, ["text"]);
        broker
            .subscribe(Subscription::builder("three", Tally::default()).filter(|_| true))
            .unwrap();
        publish(Some("shared"), &mut ways);
        assert_eq!(ways, ["fill"]);
        broker.flush().unwrap();
        assert_eq!(
            *tally.0.lock().unwrap(),
            [
                "direct",
                "made before, longer than a slot",
                "copies",
                "shared"
            ]
        );
        assert_eq!(*two.0.lock().unwrap(), ["copies", "shared"]);
    }

    /// A call that makes the broker closed from its `text` (run between
    /// the early check of `closed` and the gate, as a shutdown racing the
    /// call may land) and reopens it after.
    struct Closing<'a>(&'a BrokerShared);

    impl super::Make for Closing<'_> {
        const PLAIN: bool = true;

        fn text(&mut self) -> Option<super::Text<'_>> {
            self.0.closed.store(true, Ordering::SeqCst);
            Some(super::Text {
                message: "late",
                literal: None,
                deferred: None,
                module_path: None,
                file: None,
                line: None,
                kv: Default::default(),
            })
        }

        fn fill(self, _: &mut Record) {
            unreachable!("a plain call to two subscriptions is copied");
        }
    }

    /// Copies found closed under the gate are counted dropped where the
    /// usual path counts them: in each subscription of the route, not in
    /// one whose replay starts ahead of the record.
    #[test]
    fn copies_found_closed_are_counted_as_the_usual_path_counts() {
        let broker = crate::builder()
            .journal(crate::Journal::new().level(LevelFilter::Warn))
            .build()
            .unwrap();
        broker
            .subscribe(Subscription::builder("now", Tally::default()))
            .unwrap();
        let ahead =
            Subscription::builder("ahead", Tally::default()).replay(crate::Replay::From(1_000));
        broker.subscribe(ahead).unwrap();
        let shared = &broker.handle().shared;
        shared.publish_made(log::Level::Info, "app", Closing(shared));
        shared.closed.store(false, Ordering::SeqCst);
        let counts = |name: &str| {
            let s = broker.subscription(name).unwrap().stats();
            (s.matched, s.dropped)
        };
        assert_eq!(counts("now"), (1, 1));
        assert_eq!(counts("ahead"), (0, 0));
        assert_eq!(broker.stats().dropped_after_shutdown, 1);
    }

    /// The whole broker on a small scale, for Miri (`.ci/miri`): two
    /// producers into drop-oldest and `Block` subscriptions of capacity 2,
    /// every other record also to a third with a predicate (so it travels
    /// as one shared pooled record, reused; the others as copies of their
    /// parts), a reconfiguration and a flush while they publish.
    #[test]
    fn two_producers_two_policies_reuse_reconfiguration_and_flush() {
        let per: usize = if cfg!(miri) { 12 } else { 2000 };
        log::set_max_level(LevelFilter::Trace);
        let broker = Broker::new();
        let (oldest, block) = (Tally::default(), Tally::default());
        broker
            .subscribe(Subscription::builder("oldest", oldest.clone()).capacity(2))
            .unwrap();
        broker
            .subscribe(
                Subscription::builder("block", block.clone())
                    .capacity(2)
                    .overflow(OverflowPolicy::Block),
            )
            .unwrap();
        let shared = Subscription::builder("shared", Tally::default())
            .pattern("*.u")
            .filter(|_| true);
        broker.subscribe(shared).unwrap();
        crate::sync::thread::scope(|s| {
            for p in 0..2 {
                let broker = &broker;
                s.spawn(move || {
                    for i in 0..per {
                        let target = if i % 2 == 0 { "t" } else { "u" };
                        log::info!(logger: broker, target: target, "{p} {i}");
                    }
                });
            }
            s.spawn(|| {
                broker.set_level("oldest", LevelFilter::Debug).unwrap();
                broker.flush().unwrap();
            });
        });
        let report = broker.shutdown();
        assert!(report.unfinished.is_empty());
        for (name, tally) in [("oldest", &oldest), ("block", &block)] {
            let s = report.subscriptions[name];
            assert_eq!(s.matched, 2 * per as u64, "{name}: {s:?}");
            assert_eq!(s.matched, s.written + s.dropped, "{name}: {s:?}");
            let messages = tally.0.lock().unwrap();
            let mut last = [None::<usize>; 2];
            for message in messages.iter().filter(|m| !m.contains("dropped")) {
                let (p, i) = message.split_once(' ').unwrap();
                let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
                assert!(last[p] < Some(i), "{name}: {p}'s {i} out of order");
                last[p] = Some(i);
            }
        }
        assert_eq!(report.subscriptions["block"].dropped, 0);
        let s = report.subscriptions["shared"];
        assert_eq!((s.matched, s.written), (per as u64, per as u64), "{s:?}");
    }
}
