//! The broker: subscriptions, publishing, flush and shutdown.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::time::{Duration, Instant};

use log::LevelFilter;
use serde::Serialize;

use crate::appenders::{Record, Topic};
use crate::directive::Directives;
use crate::error::{FlushError, ReconfigureError, SubscribeError, UnsubscribeError};
use crate::log_backend;
use crate::recycle::Recycled;
use crate::route::{self, Entry, Routed, Snapshot};
use crate::subscription::worker::{self, Control, DeadLetters, FailurePolicy};
use crate::subscription::PatternSource;
use crate::subscription::{
    Budget, Counters, LaneProducer, Queue, SubShared, SubscriptionBuilder, SubscriptionHandle,
    SubscriptionStats, MAX_CAPACITY,
};
use crate::sync::{
    lock, thread, Arc, AtomicBool, AtomicU64, AtomicUsize, CacheLine, Mutex, OnceLock, Ordering,
};

/// How long [`BrokerHandle::flush`] (and `log::logger().flush()`) waits by
/// default.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// How long dropping a [`Broker`] or a [`LoggerGuard`](crate::LoggerGuard)
/// waits by default for the queues to drain.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Recycled records kept for reuse (about 1.1 MB at most). The queues'
/// depth swings by thousands of records under a flood: with room for only
/// 1,024, workers freed most of what they recycled while publishers, a
/// moment later, allocated afresh (criterion `publish_single/appenders/3`:
/// 3.2 M of 4.7 M recycled records freed). With 4,096 that churn is gone
/// and the 4-thread flood's peak RSS is lower, not higher.
const RECORD_POOL: usize = 4096;

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
    /// publish (Acquire on the fast path; for the gate re-check, after a
    /// SeqCst fence, see `SubShared::wait_gate_closed`).
    generation: AtomicU64,
    /// Broker-wide record sequence. Relaxed: only uniqueness and monotonic
    /// allocation matter, which the RMW gives; it publishes no memory. On
    /// its own cache line: every publish writes it.
    pub(crate) seq: Arc<CacheLine<AtomicU64>>,
    /// Set (SeqCst) once by shutdown before its generation bump; publishers
    /// that pass the gate re-check read it to count instead of enqueue.
    closed: AtomicBool,
    /// Log calls discarded by the re-entrancy rule. Relaxed statistic.
    pub(crate) suppressed: AtomicU64,
    /// Records published after shutdown (also counted per subscription).
    /// Relaxed statistic.
    dropped_after_shutdown: AtomicU64,
    /// Whether this broker is the global `log` backend (then
    /// `log::set_max_level` follows its configuration). Release/Acquire:
    /// set once by `install`.
    pub(crate) installed: AtomicBool,
    /// Records whose last appender is done with them, returned by workers
    /// for publishers to reuse: a steady stream of log calls then allocates
    /// nothing, and no allocation crosses threads (which glibc's malloc
    /// handles slowly). Bounded: extra records are simply freed.
    /// Batches of [`worker::RECYCLE_BATCH`]; a publisher takes one into its
    /// view's stash with one channel operation.
    pool: (
        crossbeam_channel::Sender<Vec<Recycled>>,
        crossbeam_channel::Receiver<Vec<Recycled>>,
    ),
    /// The dead-letter subscription, set at most once; read by workers.
    dead_letters: Arc<OnceLock<Arc<SubShared>>>,
    flush_timeout: Duration,
    shutdown_timeout: Duration,
}

/// The config mutex's guard, plus the snapshots it retired. Fields drop in
/// order: the lock is released before the retired snapshots are dropped, so
/// user code they own (predicates and what those capture) never runs under
/// the lock, where a `Drop` that logs could deadlock.
struct ConfigLock<'a> {
    config: crate::sync::MutexGuard<'a, Config>,
    retired: Vec<Arc<Snapshot>>,
}

impl std::ops::Deref for ConfigLock<'_> {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.config
    }
}

impl std::ops::DerefMut for ConfigLock<'_> {
    fn deref_mut(&mut self) -> &mut Config {
        &mut self.config
    }
}

struct Config {
    snapshot: Arc<Snapshot>,
    /// Broker-wide directives, copied into every new snapshot.
    global: Option<Directives>,
    shut_down: bool,
    /// Subscriptions removed from a worker thread, whose own worker could not
    /// be joined there; joined by shutdown.
    detached: Vec<Arc<SubShared>>,
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
        Broker::with_timeouts(DEFAULT_FLUSH_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT)
    }

    pub(crate) fn with_timeouts(flush_timeout: Duration, shutdown_timeout: Duration) -> Broker {
        let shared = BrokerShared {
            id: NEXT_BROKER_ID.fetch_add(1, Ordering::Relaxed),
            config: Mutex::new(Config {
                snapshot: Arc::new(Snapshot::new(0, Vec::new(), None)),
                global: None,
                shut_down: false,
                detached: Vec::new(),
            }),
            generation: AtomicU64::new(0),
            seq: Arc::new(CacheLine(AtomicU64::new(0))),
            closed: AtomicBool::new(false),
            suppressed: AtomicU64::new(0),
            dropped_after_shutdown: AtomicU64::new(0),
            installed: AtomicBool::new(false),
            dead_letters: Arc::new(OnceLock::new()),
            pool: crossbeam_channel::bounded(RECORD_POOL / worker::RECYCLE_BATCH),
            flush_timeout,
            shutdown_timeout,
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
    /// Called from inside an appender (on a logbus worker thread) it does not
    /// wait: routing stops at once and the drain completes in the background.
    ///
    /// # Errors
    ///
    /// [`UnsubscribeError::NotFound`] if no subscription has this name.
    pub fn unsubscribe(&self, name: &str) -> Result<SubscriptionStats, UnsubscribeError> {
        self.shared.unsubscribe(name)
    }

    /// Waits until every record enqueued before this call has been written
    /// (or counted as dropped or failed) and every appender flushed, for at
    /// most the broker's flush timeout ([`DEFAULT_FLUSH_TIMEOUT`]).
    ///
    /// # Errors
    ///
    /// [`FlushError::Timeout`] naming the subscriptions that had not
    /// finished, or [`FlushError::OnWorkerThread`] when called from inside an
    /// appender, where waiting could deadlock.
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
        let parsed = crate::subscription::parse_patterns(&sources)?;
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
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&lock(&self.config).snapshot)
    }

    /// Publishes `entries` as the new snapshot. Called with the config lock
    /// held.
    /// Whether shutdown has begun.
    fn is_shut_down(&self) -> bool {
        self.lock_config().shut_down
    }

    /// Locks the configuration.
    fn lock_config(&self) -> ConfigLock<'_> {
        ConfigLock {
            config: lock(&self.config),
            retired: Vec::new(),
        }
    }

    fn publish_snapshot(&self, config: &mut ConfigLock<'_>, entries: Vec<Entry>) {
        let generation = config.snapshot.generation + 1;
        let next = Arc::new(Snapshot::new(generation, entries, config.global.clone()));
        let old = std::mem::replace(&mut config.snapshot, next);
        config.retired.push(old);
        // SeqCst: the gate protocol (see `SubShared::gate`) needs this store
        // and the publishers' gate increments in one total order.
        self.generation.store(generation, Ordering::SeqCst);
        if self.installed.load(Ordering::Acquire) {
            log::set_max_level(config.snapshot.max_level);
        }
    }

    fn subscribe(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        let patterns = builder.parsed_patterns()?;
        let mut config = self.lock_config();
        self.check_new(&config, &builder)?;
        let level = builder.level;
        let directives = builder.directives.clone();
        let predicate = builder.predicate.clone();
        let sub = self.spawn(builder, DeadLetters::Route(Arc::clone(&self.dead_letters)))?;
        let mut entries = config.snapshot.entries.clone();
        entries.push(Entry {
            sub: Arc::clone(&sub),
            patterns,
            level,
            directives,
            predicate,
        });
        self.publish_snapshot(&mut config, entries);
        Ok(SubscriptionHandle { shared: sub })
    }

    fn set_dead_letter(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        let config = self.lock_config();
        self.check_new(&config, &builder)?;
        if self.dead_letters.get().is_some() {
            return Err(SubscribeError::DeadLetterExists);
        }
        let sub = self.spawn(builder, DeadLetters::IsDeadLetter)?;
        // Cannot fail: checked above under the config lock, which every
        // setter holds.
        let _ = self.dead_letters.set(Arc::clone(&sub));
        Ok(SubscriptionHandle { shared: sub })
    }

    /// Validates a new subscription against the current configuration.
    fn check_new(
        &self,
        config: &ConfigLock<'_>,
        builder: &SubscriptionBuilder,
    ) -> Result<(), SubscribeError> {
        if builder.name.is_empty() {
            return Err(SubscribeError::EmptyName);
        }
        if builder.capacity == 0 {
            return Err(SubscribeError::ZeroCapacity);
        }
        if builder.capacity > MAX_CAPACITY {
            return Err(SubscribeError::CapacityTooLarge {
                capacity: builder.capacity,
                max: MAX_CAPACITY,
            });
        }
        if config.shut_down {
            return Err(SubscribeError::ShutDown);
        }
        let taken = config
            .snapshot
            .entries
            .iter()
            .any(|e| *e.sub.name == *builder.name)
            || self
                .dead_letters
                .get()
                .is_some_and(|d| *d.name == *builder.name);
        if taken {
            return Err(SubscribeError::DuplicateName(builder.name.clone()));
        }
        Ok(())
    }

    /// Creates a subscription's shared state and starts its worker.
    fn spawn(
        &self,
        builder: SubscriptionBuilder,
        dead_letters: DeadLetters,
    ) -> Result<Arc<SubShared>, SubscribeError> {
        let (queue, data_rx) = Queue::new(builder.capacity, builder.max_bytes, builder.overflow);
        let (ctrl_tx, ctrl_rx) = worker::control_channel();
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let sub = Arc::new(SubShared {
            done: done_rx,
            name: builder.name.into(),
            queue,
            capacity: builder.capacity,
            budget: Arc::new(Budget::new(builder.capacity)),
            lanes: Mutex::new(Vec::new()),
            lanes_added: AtomicUsize::new(0),
            sleeping: Default::default(),
            thread: OnceLock::new(),
            ctrl: ctrl_tx,
            counters: Counters::default(),
            gate: Default::default(),
            worker: Mutex::new(None),
        });
        let failures = FailurePolicy {
            retry: builder.retry,
            breaker: builder.breaker,
            dead_letters,
        };
        let channels = worker::WorkerChannels {
            data: data_rx,
            ctrl: ctrl_rx,
            done: done_tx,
            pool: self.pool.0.clone(),
        };
        let handle = worker::spawn(
            builder.appender,
            channels,
            Arc::clone(&sub),
            Arc::clone(&self.seq),
            failures,
        )
        .map_err(SubscribeError::Spawn)?;
        *lock(&sub.worker) = Some(handle);
        Ok(sub)
    }

    /// Applies `change` to the entry called `name` and publishes the result
    /// as a new snapshot. Publishers still routing with the old snapshot
    /// finish under it (wholly); the next publish sees the new one.
    fn reconfigure(
        &self,
        name: &str,
        change: impl FnOnce(&mut Entry) -> Result<(), ReconfigureError>,
    ) -> Result<(), ReconfigureError> {
        let mut config = self.lock_config();
        let mut entries = config.snapshot.entries.clone();
        let Some(entry) = entries.iter_mut().find(|e| &*e.sub.name == name) else {
            return Err(ReconfigureError::NotFound(name.to_owned()));
        };
        change(entry)?;
        self.publish_snapshot(&mut config, entries);
        Ok(())
    }

    fn set_global(&self, directives: Option<Directives>) {
        let mut config = self.lock_config();
        config.global = directives;
        let entries = config.snapshot.entries.clone();
        self.publish_snapshot(&mut config, entries);
    }

    fn unsubscribe(&self, name: &str) -> Result<SubscriptionStats, UnsubscribeError> {
        let sub = {
            let mut config = self.lock_config();
            let Some(index) = config
                .snapshot
                .entries
                .iter()
                .position(|e| &*e.sub.name == name)
            else {
                return Err(UnsubscribeError::NotFound(name.to_owned()));
            };
            let mut entries = config.snapshot.entries.clone();
            let entry = entries.remove(index);
            self.publish_snapshot(&mut config, entries);
            if log_backend::on_worker_thread() {
                config.detached.push(Arc::clone(&entry.sub));
            }
            entry.sub
        };
        if log_backend::on_worker_thread() {
            // We may be this subscription's own worker, or another worker
            // that it waits on: finish the removal on a fresh thread.
            let finisher = Arc::clone(&sub);
            let spawned = thread::Builder::new()
                .name("logbus-unsubscribe".into())
                .spawn(move || stop_worker(&finisher, None));
            if spawned.is_err() {
                // Shutdown joins detached subscriptions; nothing is lost.
                crate::report::stderr(format_args!(
                    "logbus: could not spawn a thread to finish unsubscribing {name:?}; it completes at shutdown"
                ));
            }
            return Ok(sub.stats());
        }
        stop_worker(&sub, None);
        Ok(sub.stats())
    }

    fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        self.flush_some(timeout, None)
    }

    fn flush_some(&self, timeout: Duration, only: Option<&str>) -> Result<(), FlushError> {
        if log_backend::on_worker_thread() {
            return Err(FlushError::OnWorkerThread);
        }
        let deadline = Instant::now() + timeout;
        let snapshot = self.snapshot();
        let subs: Vec<&SubShared> = snapshot
            .entries
            .iter()
            .map(|e| &*e.sub)
            .filter(|sub| only.map_or(true, |name| name == &*sub.name))
            .collect();
        let mut pending = flush_all(&subs, deadline);
        // Second phase: the dead-letter route, which the first phase may
        // have fed.
        if let Some(dead) = self.dead_letters.get() {
            if only.map_or(true, |name| name == &*dead.name) {
                pending.extend(flush_all(&[&**dead], deadline));
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            Err(FlushError::Timeout {
                waited: timeout,
                pending,
            })
        }
    }

    pub(crate) fn shutdown(&self, timeout: Duration) -> ShutdownReport {
        let deadline = Instant::now() + timeout;
        let (subs, detached) = {
            let mut config = self.lock_config();
            if !config.shut_down {
                config.shut_down = true;
                // SeqCst, before the generation bump: a publisher that sees
                // the new generation also sees `closed`.
                self.closed.store(true, Ordering::SeqCst);
                let entries = config.snapshot.entries.clone();
                self.publish_snapshot(&mut config, entries);
            }
            let mut subs: Vec<_> = config
                .snapshot
                .entries
                .iter()
                .map(|e| Arc::clone(&e.sub))
                .collect();
            subs.extend(std::mem::take(&mut config.detached));
            (subs, self.dead_letters.get().cloned())
        };
        let on_worker = log_backend::on_worker_thread();
        let mut unfinished = stop_all(&subs, deadline, on_worker);
        // The dead-letter route last: the others may feed it while draining.
        // If one of them has not finished it may still dead-letter a record,
        // so the route must keep draining: it is left running and reported.
        if let Some(dead) = detached {
            if unfinished.is_empty() {
                unfinished.extend(stop_all(&[dead], deadline, on_worker));
            } else {
                unfinished.push(dead.name.to_string());
            }
        }
        let stats = self.stats();
        ShutdownReport {
            subscriptions: stats.subscriptions,
            unfinished,
            dropped_after_shutdown: stats.dropped_after_shutdown,
        }
    }
}

/// Sends a flush to every subscription, then waits for all of them; returns
/// the names of those that did not answer by `deadline`.
fn flush_all(subs: &[&SubShared], deadline: Instant) -> Vec<String> {
    let mut waiting = Vec::new();
    for sub in subs {
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        let sent = sub.ctrl.send_deadline(Control::Flush(ack_tx), deadline);
        sub.wake();
        match sent {
            Ok(()) => waiting.push((&sub.name, ack_rx)),
            // The worker has exited (shut down): it has nothing left.
            Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => {}
            Err(crossbeam_channel::SendTimeoutError::Timeout(_)) => {
                waiting.push((&sub.name, crossbeam_channel::never()));
            }
        }
    }
    let mut pending = Vec::new();
    for (name, ack) in waiting {
        // Err(Disconnected) means the worker exited (shut down): nothing
        // left to wait for.
        if let Err(crossbeam_channel::RecvTimeoutError::Timeout) = ack.recv_deadline(deadline) {
            pending.push(name.to_string());
        }
    }
    pending
}

/// Closes the gates of `subs`, tells their workers to finish, and waits
/// (they drain in parallel). Returns the names of the unfinished.
fn stop_all(subs: &[Arc<SubShared>], deadline: Instant, on_worker: bool) -> Vec<String> {
    for sub in subs {
        if sub.wait_gate_closed(Some(deadline)) {
            let _ = sub.ctrl.send_deadline(Control::Shutdown, deadline);
            sub.wake();
        }
    }
    subs.iter()
        .filter(|sub| on_worker || !join_worker(sub, Some(deadline)))
        .map(|sub| sub.name.to_string())
        .collect()
}

impl BrokerShared {
    fn stats(&self) -> BrokerStats {
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
            dropped_after_shutdown: Counters::get(&self.dropped_after_shutdown),
        }
    }

    /// Whether any subscription accepts `level` from `target`.
    pub(crate) fn enabled(&self, level: log::Level, target: &str) -> bool {
        if log_backend::in_logbus() {
            return false;
        }
        self.with_view(|view| !view.lookup(level, target).route.entries.is_empty())
            .unwrap_or(false)
    }

    fn with_view<R>(&self, f: impl FnOnce(&mut route::BrokerView) -> R) -> Option<R> {
        route::with_view(
            self.id,
            || self.snapshot(),
            |view| {
                // Acquire: pairs with the SeqCst store in `publish_snapshot`; a
                // stale read only delays the refresh to the gate re-check.
                if self.generation.load(Ordering::Acquire) != view.generation() {
                    view.refresh(self.snapshot());
                }
                f(view)
            },
        )
    }

    /// Takes a recycled record from the pool (or allocates one), stamps it
    /// with `topic`, the next seq and the time, and lets `fill` write the
    /// rest.
    fn make_record(
        &self,
        stash: Option<&mut Vec<Recycled>>,
        topic: Topic,
        fill: impl FnOnce(&mut Record),
    ) -> Arc<Record> {
        // Relaxed: see `seq`.
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let now = std::time::SystemTime::now();
        let recycled = stash.and_then(|stash| {
            if stash.is_empty() {
                if let Ok(batch) = self.pool.1.try_recv() {
                    *stash = batch;
                }
            }
            stash.pop()
        });
        match recycled {
            Some(recycled) => recycled.reuse(|record| {
                record.recycle(topic, seq, now);
                fill(record);
            }),
            None => {
                let mut record = Record::builder(topic).seq(seq).time(now).build();
                fill(&mut record);
                Arc::new(record)
            }
        }
    }

    /// Routes and enqueues one record made by `fill` (called at most once,
    /// and only if some subscription may want the record).
    pub(crate) fn publish(&self, level: log::Level, target: &str, fill: impl FnOnce(&mut Record)) {
        let mut fill = Some(fill);
        let mut record: Option<Arc<Record>> = None;
        let routed =
            self.with_view(|view| self.publish_in(view, level, target, &mut fill, &mut record));
        if routed.is_none() {
            // This thread's views are gone (a log call from a thread-local
            // destructor at thread exit): route through a temporary view, so
            // the record is still delivered or counted.
            let mut view = route::BrokerView::temporary(self.id, self.snapshot());
            self.publish_in(&mut view, level, target, &mut fill, &mut record);
        }
    }

    /// The body of [`publish`](BrokerShared::publish), on one view. `fill` is
    /// taken when the record is built; `record` holds it across a re-route.
    ///
    /// User code (formatting the message, predicates) runs before any gate
    /// is entered, so a `Display` impl or predicate that panics or blocks can
    /// never hold up an unsubscribe or a shutdown.
    fn publish_in<F: FnOnce(&mut Record)>(
        &self,
        view: &mut route::BrokerView,
        level: log::Level,
        target: &str,
        fill: &mut Option<F>,
        record: &mut Option<Arc<Record>>,
    ) {
        loop {
            let retry = {
                let Routed {
                    snapshot,
                    route,
                    lanes,
                    stash,
                    temporary,
                } = view.lookup(level, target);
                if route.entries.is_empty() {
                    return;
                }
                // After shutdown: count and return at once, without building
                // the record or running predicates. (A publisher that misses
                // the flag here is caught inside the gate below.)
                // Acquire: pairs with the SeqCst store in `shutdown`.
                if record.is_none() && self.closed.load(Ordering::Acquire) {
                    self.count_after_shutdown(snapshot, &route.entries);
                    return;
                }
                let built: &Arc<Record> = match record {
                    Some(r) => r,
                    None => {
                        let Some(fill) = fill.take() else { return };
                        let stash = if temporary { None } else { Some(&mut *stash) };
                        record.insert(self.make_record(stash, route.topic.clone(), fill))
                    }
                };
                let chosen = Chosen::new(snapshot, &route.entries, built);
                // Relaxed: published with the record by each lane's Release
                // store; see `Worker::recycle`.
                built.holders().store(chosen.ids().len(), Ordering::Relaxed);
                // Enter the gate of each chosen subscription: mark our lanes
                // busy, then one fence (see `SubShared::wait_gate_closed`).
                let mut gate = LaneGate::enter(snapshot, lanes, chosen.ids(), temporary);
                std::sync::atomic::fence(Ordering::SeqCst);
                // Relaxed: ordered after the fence, which is the re-check
                // half of the gate protocol.
                if self.generation.load(Ordering::Relaxed) != snapshot.generation {
                    true
                } else if self.closed.load(Ordering::Relaxed) {
                    // Relaxed, after the fence: pairs with shutdown's SeqCst
                    // store (see `closed`). Counted like the early check
                    // does, whatever the predicates said.
                    self.count_after_shutdown(snapshot, &route.entries);
                    *record = None;
                    false
                } else {
                    // The last subscription gets our reference itself: one
                    // reference-count round trip fewer per record.
                    let mut owned = record.take();
                    let mut ids = chosen.ids().iter().peekable();
                    while let Some(&i) = ids.next() {
                        let shared = if ids.peek().is_none() {
                            owned.take()
                        } else {
                            owned.clone()
                        };
                        if let Some(shared) = shared {
                            gate.push(i, shared, |dropped| reclaim(stash, dropped));
                        }
                    }
                    false
                }
                // `gate` drops here: the lanes leave, also on unwinding.
            };
            if !retry {
                return;
            }
            view.refresh(self.snapshot());
        }
    }

    /// Counts a record published after shutdown, in every subscription of
    /// its route (predicates are not run).
    fn count_after_shutdown(&self, snapshot: &Snapshot, entries: &[u32]) {
        for &i in entries {
            snapshot.entries[i as usize].sub.counters.record_drops(1);
        }
        Counters::add(&self.dropped_after_shutdown, 1);
    }
}

/// The publisher's side of the gates of the subscriptions it enqueues into:
/// its lanes' `busy` flags, set by `enter` and cleared when dropped (also on
/// unwinding, so a panic cannot leave a subscription's removal waiting).
/// A temporary view has no lanes: it enters each subscription's shared gate
/// counter and pushes through the shared queue, as dead letters do.
struct LaneGate<'v, 'i> {
    snapshot: &'v Snapshot,
    lanes: &'v mut [Option<LaneProducer>],
    ids: &'i [u32],
    shared: bool,
}

impl<'v, 'i> LaneGate<'v, 'i> {
    /// Marks this thread's lane into each subscription `ids` names busy,
    /// making the lanes it lacks (or, `shared`, enters their gate counters).
    /// The caller then issues the fence.
    fn enter(
        snapshot: &'v Snapshot,
        lanes: &'v mut [Option<LaneProducer>],
        ids: &'i [u32],
        shared: bool,
    ) -> LaneGate<'v, 'i> {
        for &i in ids {
            let sub = &snapshot.entries[i as usize].sub;
            if shared {
                // SeqCst: see `SubShared::gate`.
                sub.gate.fetch_add(1, Ordering::SeqCst);
            } else {
                lanes[i as usize]
                    .get_or_insert_with(|| sub.new_lane())
                    .enter();
            }
        }
        LaneGate {
            snapshot,
            lanes,
            ids,
            shared,
        }
    }

    /// Enqueues `record` into the subscription at snapshot index `i`; what
    /// the overflow policy drops goes to `spill`.
    fn push(&mut self, i: u32, record: Arc<Record>, spill: impl FnMut(Arc<Record>)) {
        let sub = &*self.snapshot.entries[i as usize].sub;
        match &mut self.lanes[i as usize] {
            Some(lane) if !self.shared => sub.push_lane(lane, record, spill),
            _ => sub.push_shared(record),
        }
    }
}

impl Drop for LaneGate<'_, '_> {
    fn drop(&mut self) {
        for &i in self.ids {
            if self.shared {
                // Release: our push happens before the remover's SeqCst load
                // that observes 0.
                self.snapshot.entries[i as usize]
                    .sub
                    .gate
                    .fetch_sub(1, Ordering::Release);
            } else if let Some(lane) = &self.lanes[i as usize] {
                lane.leave();
            }
        }
    }
}

/// Most recycled records a thread's view keeps.
const STASH_CAP: usize = 2 * worker::RECYCLE_BATCH;

/// Takes back a record the overflow policy dropped (evicted or refused) for
/// reuse, if the subscription that dropped it was the last one holding it:
/// under a flood with a stalled appender every record ends this way, and
/// freeing it made the next log call allocate.
fn reclaim(stash: &mut Vec<Recycled>, record: Arc<Record>) {
    if let Some(recycled) = Recycled::release(record, 1) {
        if stash.len() < STASH_CAP {
            stash.push(recycled);
        }
    }
}

/// The entries of a route whose predicate accepts the record.
enum Chosen<'a> {
    /// Every entry of the route (no predicate rejected any).
    All(&'a [u32]),
    Some(Vec<u32>),
}

impl<'a> Chosen<'a> {
    fn new(snapshot: &Snapshot, entries: &'a [u32], record: &Record) -> Chosen<'a> {
        let rejects = |&i: &u32| {
            snapshot.entries[i as usize]
                .predicate
                .as_ref()
                .is_some_and(|p| !p(record))
        };
        if !entries.iter().any(rejects) {
            return Chosen::All(entries);
        }
        Chosen::Some(entries.iter().copied().filter(|i| !rejects(i)).collect())
    }

    fn ids(&self) -> &[u32] {
        match self {
            Chosen::All(ids) => ids,
            Chosen::Some(ids) => ids,
        }
    }
}

/// Closes the gate of a removed subscription, tells its worker to finish and
/// joins it. Returns whether the worker finished before `deadline`.
fn stop_worker(sub: &SubShared, deadline: Option<Instant>) -> bool {
    sub.wait_gate_closed(deadline);
    let _ = match deadline {
        Some(d) => sub.ctrl.send_deadline(Control::Shutdown, d).is_ok(),
        None => sub.ctrl.send(Control::Shutdown).is_ok(),
    };
    sub.wake();
    join_worker(sub, deadline)
}

/// Waits for the worker thread to finish and joins it (never from the worker
/// itself). Returns whether it finished before `deadline`.
fn join_worker(sub: &SubShared, deadline: Option<Instant>) -> bool {
    let handle = lock(&sub.worker).take();
    if let Some(h) = handle.as_ref() {
        if h.thread.thread().id() == thread::current().id() {
            // Never join (or wait for) the worker from its own thread.
            *lock(&sub.worker) = handle;
            return false;
        }
    }
    // Wait on `done`, not on owning the handle: another party (a background
    // unsubscribe) may hold the handle and join the thread itself.
    let finished = match deadline {
        Some(d) => !matches!(
            sub.done.recv_deadline(d),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        ),
        None => {
            let _ = sub.done.recv();
            true
        }
    };
    match handle {
        // The worker catches appender panics, so the thread itself does not
        // panic; a join error would only repeat what was reported.
        Some(handle) if finished => {
            let _ = handle.thread.join();
        }
        Some(handle) => *lock(&sub.worker) = Some(handle),
        None => {}
    }
    finished
}

/// Counters of every subscription and of the broker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BrokerStats {
    /// Per subscription, by name (the dead-letter subscription included).
    pub subscriptions: BTreeMap<String, SubscriptionStats>,
    /// The sums of every subscription's counters.
    pub totals: SubscriptionStats,
    /// Log calls discarded by the re-entrancy rule (made on a logbus worker
    /// thread, or from a predicate while logbus was routing).
    pub suppressed: u64,
    /// Records published after shutdown (each also counted as `dropped` in
    /// the subscriptions it matched).
    pub dropped_after_shutdown: u64,
}

/// What [`Broker::shutdown`] did: final counters, and which subscriptions did
/// not finish before the deadline.
///
/// For every subscription `matched == written + dropped + dead_lettered +
/// lost + in_queue`, where `in_queue` is what an unfinished subscription
/// left undelivered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Per subscription, by name.
    pub subscriptions: BTreeMap<String, SubscriptionStats>,
    /// Subscriptions whose appender had not finished by the deadline.
    pub unfinished: Vec<String>,
    /// Records published after shutdown began.
    pub dropped_after_shutdown: u64,
}

impl ShutdownReport {
    /// Records written, over all subscriptions.
    #[must_use]
    pub fn written(&self) -> u64 {
        self.subscriptions.values().map(|s| s.written).sum()
    }

    /// Records left undelivered (queued or in an unfinished appender's hands).
    #[must_use]
    pub fn left(&self) -> u64 {
        self.subscriptions.values().map(|s| s.in_queue).sum()
    }
}
