//! Subscriptions: what an appender receives (patterns, level, predicate) and
//! how it receives it (a bounded queue, an overflow policy, a worker thread).
//!
//! [`Subscription::builder`] configures one; [`SubShared`] is its shared
//! state once subscribed (the queue, the counters, the worker's mailbox);
//! [`SubscriptionHandle`] reads its counters.

use std::fmt;

use log::LevelFilter;

use logbus_appenders::{Appender, Record};

use crate::directive::Directives;
use crate::journal::{FlightRecorder, Replay, ReplayReport};
use crate::queue::{Item, LaneProducer, OverflowPolicy, Queue, DEFAULT_CAPACITY};
use crate::retry::{BreakerState, CircuitBreaker, RetryPolicy};
use crate::stats::{Counters, SubscriptionStats};
use crate::sync::{thread, Arc, AtomicU64, Mutex, OnceLock, Ordering};
use crate::topic::{parse_patterns, PatternSource, TopicParseError, TopicPattern};

/// A predicate over records, checked on the caller's thread.
pub(crate) type Predicate = Arc<dyn Fn(&Record) -> bool + Send + Sync>;

/// Entry point for configuring a subscription: see [`Subscription::builder`].
#[derive(Debug)]
pub struct Subscription {
    _private: (),
}

impl Subscription {
    /// Starts configuring a subscription named `name` that writes to
    /// `appender`.
    ///
    /// Defaults:
    ///
    /// | setting | default |
    /// |---|---|
    /// | patterns | `#` (every topic) |
    /// | level | `Trace` (everything the patterns match) |
    /// | directives | none |
    /// | predicate | none |
    /// | capacity | [`DEFAULT_CAPACITY`] records |
    /// | max bytes | unbounded (the record bound still applies) |
    /// | overflow | [`OverflowPolicy::DropOldest`] |
    /// | retries | [`RetryPolicy::new()`]: 3 attempts, 10 ms backoff doubling |
    /// | circuit breaker | [`CircuitBreaker::default()`]: opens after 8 failed attempts, for 1 s |
    /// | replay | none: live records only |
    /// | flight recorder | none |
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::{Broker, LevelFilter, Memory, OverflowPolicy, Subscription};
    ///
    /// let (appender, captured) = Memory::new();
    /// let broker = Broker::new();
    /// broker.subscribe(
    ///     Subscription::builder("db", appender)
    ///         .pattern("*.app.db.#")
    ///         .level(LevelFilter::Debug)
    ///         .capacity(1024)
    ///         .overflow(OverflowPolicy::DropNewest),
    /// )?;
    /// log::set_max_level(LevelFilter::Trace);
    /// log::debug!(logger: &broker, target: "app::db::pool", "checked out");
    /// log::debug!(logger: &broker, target: "app::http", "not for db");
    /// broker.flush()?;
    /// assert_eq!(captured.messages(), ["checked out"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(name: impl Into<String>, appender: impl Appender) -> SubscriptionBuilder {
        SubscriptionBuilder {
            name: name.into(),
            appender: Box::new(appender),
            patterns: Vec::new(),
            level: LevelFilter::Trace,
            directives: None,
            predicate: None,
            capacity: DEFAULT_CAPACITY,
            max_bytes: None,
            overflow: OverflowPolicy::DropOldest,
            retry: RetryPolicy::new(),
            breaker: CircuitBreaker::default(),
            replay: None,
            recorder: None,
        }
    }
}

/// Configures a subscription; hand it to [`Broker::subscribe`](crate::BrokerHandle::subscribe)
/// or [`Builder::appender`](crate::Builder::appender).
#[must_use]
pub struct SubscriptionBuilder {
    pub(crate) name: String,
    pub(crate) appender: Box<dyn Appender>,
    pub(crate) patterns: Vec<PatternSource>,
    pub(crate) level: LevelFilter,
    pub(crate) directives: Option<Directives>,
    pub(crate) predicate: Option<Predicate>,
    pub(crate) capacity: usize,
    pub(crate) max_bytes: Option<usize>,
    pub(crate) overflow: OverflowPolicy,
    pub(crate) retry: RetryPolicy,
    pub(crate) breaker: CircuitBreaker,
    pub(crate) replay: Option<Replay>,
    pub(crate) recorder: Option<FlightRecorder>,
}

impl fmt::Debug for SubscriptionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionBuilder")
            .field("name", &self.name)
            .field("patterns", &self.patterns)
            .field("level", &self.level)
            .field("directives", &self.directives)
            .field("predicate", &self.predicate.is_some())
            .field("capacity", &self.capacity)
            .field("max_bytes", &self.max_bytes)
            .field("overflow", &self.overflow)
            .field("retry", &self.retry)
            .field("breaker", &self.breaker)
            .field("replay", &self.replay)
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl SubscriptionBuilder {
    /// Adds a topic pattern (`error.#`, `*.app.db.#`); a record is delivered
    /// if any pattern matches. Without patterns the subscription gets `#`.
    /// The pattern is checked by `subscribe`, which names a malformed one.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Self {
        self.patterns.push(PatternSource::Text(pattern.into()));
        self
    }

    /// Adds an already parsed topic pattern.
    pub fn topic_pattern(mut self, pattern: TopicPattern) -> Self {
        self.patterns.push(PatternSource::Parsed(pattern));
        self
    }

    /// Sets the level threshold: records less severe are not delivered.
    pub fn level(mut self, level: LevelFilter) -> Self {
        self.level = level;
        self
    }

    /// Also filters by `RUST_LOG`-style directives (env_logger's meaning):
    /// a record is delivered only if the level threshold, the directives and
    /// a pattern all accept it.
    ///
    /// ```
    /// use logbus::{Directives, Memory, Subscription};
    ///
    /// let directives: Directives = "info,app::db=debug,hyper=off".parse()?;
    /// let sub = Subscription::builder("console", Memory::new().0).directives(directives);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn directives(mut self, directives: Directives) -> Self {
        self.directives = Some(directives);
        self
    }

    /// Sets a predicate, checked on the caller's thread before enqueueing.
    /// Keep it cheap and do not log from it (such calls are discarded).
    pub fn filter(mut self, predicate: impl Fn(&Record) -> bool + Send + Sync + 'static) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// Sets the queue capacity in records (at least 1): the most records the
    /// subscription holds queued, across all publishing threads. A thread
    /// takes places a few at a time (1/64th of the capacity shared by the
    /// publishing threads, at most 32) and keeps those it has not used yet;
    /// they count against the capacity, so a thread may find the
    /// subscription full while a little less than `capacity` is queued.
    /// Under 128, places are taken one at a time and the bound is exact.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Also bounds the queue by the approximate bytes of queued records.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = Some(max_bytes);
        self
    }

    /// Sets what happens when the queue is full.
    pub fn overflow(mut self, overflow: OverflowPolicy) -> Self {
        self.overflow = overflow;
        self
    }

    /// Sets how failed records are retried before they are dead-lettered.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the circuit breaker ([`CircuitBreaker::disabled`] turns it off).
    pub fn circuit_breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = breaker;
        self
    }

    /// Starts the subscription in the broker's journal: it first receives
    /// the retained records it matches (patterns, level, directives and
    /// predicate, in `seq` order), then continues live, with no record
    /// missing or repeated at the hand-over, even while other threads
    /// publish. See [`SubscriptionHandle::replay_report`] for what it got,
    /// and [`Replay::From`] for offsets the journal no longer holds.
    ///
    /// Needs a journal ([`SubscribeError::NoJournal`](crate::SubscribeError::NoJournal)
    /// otherwise). The guarantee covers the records the journal keeps;
    /// others arrive from the moment of subscribing, as for any
    /// subscription.
    ///
    /// ```
    /// use logbus::{Journal, LevelFilter, Memory, Replay, Subscription};
    ///
    /// let broker = logbus::builder().journal(Journal::new()).build()?;
    /// log::set_max_level(LevelFilter::Trace);
    /// log::info!(logger: &broker, "before the console was attached");
    ///
    /// let (console, captured) = Memory::new();
    /// let handle = broker.subscribe(Subscription::builder("debug-console", console).replay(Replay::Last(500)))?;
    /// log::info!(logger: &broker, "after");
    /// broker.flush()?;
    /// assert_eq!(captured.messages(), ["before the console was attached", "after"]);
    /// assert_eq!(handle.replay_report().map(|r| r.records), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replay(mut self, replay: Replay) -> Self {
        self.replay = Some(replay);
        self
    }

    /// Gives the subscription a flight recorder: the journal keeps the
    /// records too verbose for it, and a trigger record is preceded by its
    /// context. See [`FlightRecorder`]. Needs a journal.
    pub fn flight_recorder(mut self, recorder: FlightRecorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Parses the patterns (defaulting to `#`).
    pub(crate) fn parsed_patterns(&self) -> Result<Vec<TopicPattern>, TopicParseError> {
        parse_patterns(&self.patterns)
    }
}

/// A request to the worker, on its control channel: never evicted, since
/// it does not travel through the queue.
#[derive(Debug)]
pub(crate) enum Control {
    /// Write every record queued now, flush the appender, then acknowledge.
    Flush(crossbeam_channel::Sender<()>),
    /// Write everything queued, flush, acknowledge and exit. Sent only once no
    /// publisher can enqueue any more (the subscription's gate is closed).
    Shutdown,
}

/// The shared state of one subscription: what publishers, its worker, the
/// broker and stats readers all reach. Built by `worker::spawn`.
pub(crate) struct SubShared {
    pub(crate) name: Arc<str>,
    /// The queue: lanes, shared channel, bounds, gate, waker.
    pub(crate) queue: Queue,
    pub(crate) counters: Counters,
    /// The worker's control channel (flush, shutdown). Control messages are
    /// few (one per flush caller, one shutdown); its bound (see
    /// `worker::CONTROL_CAPACITY`) keeps a stuck appender plus repeated
    /// timed-out flushes from growing it without limit.
    pub(crate) ctrl: crossbeam_channel::Sender<Control>,
    /// The worker's thread, taken by whoever stops the worker and joins it.
    pub(crate) worker: Mutex<Option<thread::JoinHandle<()>>>,
    /// Disconnects when the worker thread has finished, whoever joins it:
    /// lets several parties (shutdown, a background unsubscribe) wait.
    pub(crate) done: crossbeam_channel::Receiver<()>,
    /// The fork generation the subscription was made in (`fork.rs`): in a
    /// forked child its stats take no lock.
    pub(crate) fork_generation: u64,
    /// The worker's cursor: every record below it that this subscription
    /// will write is written, as far as the worker knows (the `seq` after
    /// the last one written; the broker's next `seq` when idle). Read by
    /// `Retention::UntilWritten`. Relaxed: a hint, it publishes nothing.
    pub(crate) cursor: AtomicU64,
    /// What a replaying subscription was given.
    pub(crate) replay: OnceLock<ReplayReport>,
}

impl fmt::Debug for SubShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubShared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SubShared {
    /// See `cursor`.
    pub(crate) fn cursor(&self) -> u64 {
        // Relaxed: see `cursor`.
        self.cursor.load(Ordering::Relaxed)
    }

    /// Moves the cursor forward to `to`.
    pub(crate) fn advance(&self, to: u64) {
        // Relaxed: see `cursor`.
        self.cursor.fetch_max(to, Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    ///
    /// `matched` is derived rather than counted on the caller's path: every
    /// routed record is either still in the queue, taken by the worker, or
    /// was dropped at enqueue time, and each of those is counted once.
    pub(crate) fn stats(&self) -> SubscriptionStats {
        let c = &self.counters;
        // Read the worker-side counters before the queue length: a record
        // moves from the queue to `taken` to `written`, so reading the later
        // stages first avoids counting a record twice on the worker's side.
        // Under concurrent eviction `matched` can still be off by a record
        // or two for an instant (an eviction between reading `queued` and
        // `dropped`, or its early count); at quiescent points it is exact.
        let written = Counters::get(&c.written);
        let dead_lettered = Counters::get(&c.dead_lettered);
        let lost = Counters::get(&c.lost);
        let taken = Counters::get(&c.taken);
        // In a forked child the queue's lock may be held for ever, and what
        // is queued is the parent's (`fork.rs`).
        let queued = if crate::fork::forked_since(self.fork_generation) {
            0
        } else {
            self.queue.len() as u64
        };
        let dropped = Counters::get(&c.dropped);
        let in_hand = taken.saturating_sub(written + dead_lettered + lost);
        // `matched` counts records at enqueue time; a record in the worker's
        // hands is counted once in `taken`, whatever its fate.
        SubscriptionStats {
            matched: taken + queued + dropped,
            written,
            dropped,
            dead_lettered,
            lost,
            retried: Counters::get(&c.retried),
            panics: Counters::get(&c.panics),
            in_queue: queued + in_hand,
            breaker: BreakerState::from_u8(c.breaker.load(Ordering::Relaxed)),
        }
    }

    /// Enqueues `record` through the calling thread's lane (inside its
    /// gate); the records the overflow policy drops go to `spill`.
    #[inline(always)]
    pub(crate) fn push_lane(
        &self,
        lane: &mut LaneProducer,
        item: Item<'_>,
        spill: impl FnMut(Arc<Record>),
    ) {
        self.queue.push_lane(lane, item, &self.counters, spill);
    }

    /// Enters the gate, enqueues `record` through the shared channel,
    /// leaves, and wakes the worker if it sleeps (`queue/waker.rs`); a push
    /// into a dead-letter route from another subscription's worker.
    ///
    /// Hands the record back if the worker was already told to stop: the
    /// queue is closed before the remover waits for the gate, and the pusher
    /// looks after its gate fence, so either the pusher sees it closed, or
    /// the remover waits for the push, which the worker then drains.
    pub(crate) fn push_shared(&self, record: Arc<Record>) -> Result<(), Arc<Record>> {
        {
            let _pass = self.queue.enter_shared();
            if self.queue.is_closed() {
                return Err(record);
            }
            self.queue.push_shared(record, &self.counters);
        }
        self.queue.waker.wake_if_sleeping();
        Ok(())
    }
}

/// A cheap, cloneable handle on a subscription, returned by
/// [`Broker::subscribe`](crate::BrokerHandle::subscribe).
///
/// It reads the subscription's counters; it does not keep it alive in the
/// broker (use [`Broker::unsubscribe`](crate::BrokerHandle::unsubscribe) to remove
/// it).
#[derive(Clone)]
pub struct SubscriptionHandle {
    pub(crate) shared: Arc<SubShared>,
}

impl fmt::Debug for SubscriptionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionHandle")
            .field("name", &self.shared.name)
            .field("stats", &self.stats())
            .finish()
    }
}

impl SubscriptionHandle {
    /// The subscription's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// A snapshot of its counters.
    #[must_use]
    pub fn stats(&self) -> SubscriptionStats {
        self.shared.stats()
    }

    /// For a subscription started with
    /// [`replay`](SubscriptionBuilder::replay): what it was given (the
    /// records replayed, the hand-over offset, a gap if the journal no
    /// longer held the start); `None` for any other.
    #[must_use]
    pub fn replay_report(&self) -> Option<ReplayReport> {
        self.shared.replay.get().copied()
    }

    /// The per-thread lanes registered in its queue now: for logbus' own
    /// tests of lane upkeep, not a stable API.
    #[doc(hidden)]
    #[must_use]
    pub fn lanes_registered(&self) -> usize {
        self.shared.queue.lanes_registered()
    }
}
