//! Subscriptions: what an appender receives (patterns, level, predicate) and
//! how it receives it (a bounded queue, an overflow policy, a worker thread).

mod lane;
mod queue;
pub(crate) mod worker;

use std::fmt;
use std::time::Duration;

use log::LevelFilter;
use serde::Serialize;

use crate::appenders::{Appender, Record};
use crate::directive::Directives;
use crate::retry::{BreakerState, CircuitBreaker, RetryPolicy};
use crate::sync::{
    lock, thread, Arc, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, CacheLine, Mutex, OnceLock,
    Ordering,
};
use crate::topic::{TopicParseError, TopicPattern};

pub(crate) use lane::{Budget, Lane, LaneProducer};
pub(crate) use queue::Queue;

/// The default queue capacity, in records.
///
/// 8,192 records absorb a burst of about 4 ms at full speed (the worker
/// writes 2 M records a second on our 2-vCPU machines) and, with typical
/// 70-150-byte messages, hold about 2.5 MB: the whole process stayed under
/// our 16 MiB RSS budget with four threads flooding one file (16,384 took it
/// to 19 MB, for no fewer drops). Each publishing thread's lane also has
/// room for this many record pointers (16 bytes each, made resident only as
/// the lane fills: up to 128 KiB per thread and subscription under a flood).
pub const DEFAULT_CAPACITY: usize = 8_192;

/// The largest queue capacity a subscription accepts, in records (2^20).
///
/// Each publishing thread's lane has room for `capacity` record pointers
/// (16 bytes each, made resident as it fills), and the subscription's shared
/// channel allocates its `capacity` slots up front: the bound keeps each of
/// those under 16 MiB.
pub const MAX_CAPACITY: usize = 1 << 20;

/// What a subscription does when its queue is full.
///
/// The caller of a log call never waits under the two drop policies.
///
/// | policy | caller | what is lost |
/// |---|---|---|
/// | `DropOldest` (default) | never waits | the oldest queued record, counted in `dropped` |
/// | `DropNewest` | never waits | the new record, counted in `dropped` |
/// | `Block` | waits for space | nothing |
/// | `BlockTimeout(d)` | waits at most `d` | the new record after `d`, counted in `dropped` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OverflowPolicy {
    /// Evict the oldest queued record to make room for the new one.
    #[default]
    DropOldest,
    /// Discard the new record.
    DropNewest,
    /// Wait until the worker makes room.
    Block,
    /// Wait at most this long, then discard the new record.
    BlockTimeout(Duration),
}

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
}

/// A pattern as given to the builder: parsed at subscribe time so that the
/// error surfaces from `subscribe`, naming the pattern and the position.
#[derive(Debug, Clone)]
pub(crate) enum PatternSource {
    Text(String),
    Parsed(TopicPattern),
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

    /// Parses the patterns (defaulting to `#`).
    pub(crate) fn parsed_patterns(&self) -> Result<Vec<TopicPattern>, TopicParseError> {
        parse_patterns(&self.patterns)
    }
}

/// Parses patterns as given to a builder; no patterns means `#`.
pub(crate) fn parse_patterns(
    sources: &[PatternSource],
) -> Result<Vec<TopicPattern>, TopicParseError> {
    if sources.is_empty() {
        return Ok(vec![TopicPattern::match_all()]);
    }
    sources
        .iter()
        .map(|p| match p {
            PatternSource::Text(text) => TopicPattern::parse(text),
            PatternSource::Parsed(parsed) => Ok(parsed.clone()),
        })
        .collect()
}

/// Per-subscription counters, shared by publishers, the worker and readers.
///
/// Every counter is a pure statistic: `Relaxed`, it publishes no other
/// memory. Exactness comes from each record being counted by exactly one
/// party (see `queue.rs`); sums are exact at quiescent points (after a flush).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Records taken off the queue by the worker.
    pub(crate) taken: AtomicU64,
    /// Records the appender accepted.
    pub(crate) written: AtomicU64,
    /// Records discarded by the overflow policy or published after shutdown.
    pub(crate) dropped: AtomicU64,
    /// Records that failed and reached the dead-letter route.
    pub(crate) dead_lettered: AtomicU64,
    /// Records that failed with no dead-letter route to take them.
    pub(crate) lost: AtomicU64,
    /// Extra attempts made after failures.
    pub(crate) retried: AtomicU64,
    /// Panics caught from the appender.
    pub(crate) panics: AtomicU64,
    /// Unix time in microseconds of the first drop not yet reported by a
    /// summary record; 0 when none. Set by droppers (compare-exchange from
    /// 0), cleared by the worker when it reports.
    pub(crate) first_drop_micros: AtomicU64,
    /// Approximate bytes of queued records (only maintained with
    /// `max_bytes`).
    pub(crate) bytes: AtomicUsize,
    /// The circuit breaker's state (`BreakerState::to_u8`), written by the
    /// worker for readers of the stats. Relaxed: a plain published value.
    pub(crate) breaker: AtomicU8,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        // Relaxed: a statistic; publishes no other memory.
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(counter: &AtomicU64, n: u64) {
        // Relaxed: a statistic; publishes no other memory.
        counter.fetch_sub(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Counts `n` dropped records and remembers when the burst started.
    pub(crate) fn record_drops(&self, n: u64) {
        Counters::add(&self.dropped, n);
        self.stamp_first_drop();
    }

    /// Remembers when the current burst of drops started, if not yet known.
    pub(crate) fn stamp_first_drop(&self) {
        if self.first_drop_micros.load(Ordering::Relaxed) == 0 {
            let now = crate::record_now_micros();
            // Relaxed: only the value matters; losing the race means another
            // dropper already stamped the burst.
            let _ = self.first_drop_micros.compare_exchange(
                0,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

/// A snapshot of one subscription's counters.
///
/// At any quiescent point (after [`Broker::flush`](crate::BrokerHandle::flush)
/// returned, or after shutdown) the accounting identity holds exactly:
///
/// `matched == written + dropped + dead_lettered + lost + in_queue`
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SubscriptionStats {
    /// Records routed to this subscription (they passed its patterns, level
    /// and predicate).
    pub matched: u64,
    /// Records the appender accepted.
    pub written: u64,
    /// Records discarded by the overflow policy, or published after shutdown
    /// (those are counted in every subscription whose patterns, level and
    /// directives match; predicates are not run after shutdown).
    pub dropped: u64,
    /// Records that failed and were handed to the dead-letter route.
    pub dead_lettered: u64,
    /// Records that failed with no dead-letter route.
    pub lost: u64,
    /// Extra attempts made after failures.
    pub retried: u64,
    /// Panics caught from the appender.
    pub panics: u64,
    /// Records queued or in the worker's hands, not yet settled.
    pub in_queue: u64,
    /// The circuit breaker's state.
    pub breaker: BreakerState,
}

impl SubscriptionStats {
    /// Adds `other`'s counters to these (the breaker state is kept).
    pub(crate) fn accumulate(&mut self, other: &SubscriptionStats) {
        self.matched += other.matched;
        self.written += other.written;
        self.dropped += other.dropped;
        self.dead_lettered += other.dead_lettered;
        self.lost += other.lost;
        self.retried += other.retried;
        self.panics += other.panics;
        self.in_queue += other.in_queue;
    }
}

/// The shared state of one subscription.
pub(crate) struct SubShared {
    pub(crate) name: Arc<str>,
    /// The shared queue: for records pushed without a lane (dead letters
    /// from other workers, log calls after a thread's locals are gone).
    pub(crate) queue: Queue,
    /// Records one lane holds (the subscription's capacity).
    pub(crate) capacity: usize,
    /// Records all the lanes hold together (the subscription's capacity).
    pub(crate) budget: Arc<Budget>,
    /// Every live lane into this subscription, one per publishing thread
    /// (see `lane.rs`). The lock is taken when a thread publishes to this
    /// subscription for the first time, when the worker notices a new lane
    /// (by `lanes_added`) or forgets a finished one, and by stats readers.
    pub(crate) lanes: Mutex<Vec<Arc<Lane>>>,
    /// Bumped (Release) after each lane is registered; the worker compares
    /// it with the count it last saw (Acquire) to refresh its list.
    pub(crate) lanes_added: AtomicUsize,
    /// Set by the worker before it parks, cleared when it wakes. Publishers
    /// read it (Relaxed) after each push and unpark the worker if set.
    ///
    /// The publisher's read is not ordered after its push (a fence there
    /// would cost what lanes save), so a publisher racing with the worker
    /// falling asleep can miss the flag while the worker misses the record.
    /// The worker therefore looks at its queue again `worker::IDLE_RECHECK`
    /// (1 ms) after setting the flag, keeps the flag set while it sleeps, and
    /// parks for at most `worker::IDLE_PARK` (10 s) at a time. This relies
    /// on something the memory model does not promise but every CPU we know
    /// provides: a store (the racing publisher's tail) becomes visible to
    /// other cores within a millisecond. If it ever did not, the record would
    /// be late by up to 10 s, never lost. Flush and shutdown requesters
    /// unpark unconditionally. On its own cache line: read on every publish,
    /// written only when the worker sleeps or wakes.
    pub(crate) sleeping: CacheLine<AtomicBool>,
    /// The worker's thread, to unpark it.
    pub(crate) thread: OnceLock<thread::Thread>,
    /// The worker's control channel (flush, shutdown); never evicted.
    pub(crate) ctrl: crossbeam_channel::Sender<worker::Control>,
    pub(crate) counters: Counters,
    /// Publishers currently between "routed with snapshot generation g" and
    /// "done enqueueing". Incremented (SeqCst) before the publisher
    /// re-checks the broker generation, decremented (Release) when done. A
    /// reconfiguration bumps the generation (SeqCst) and then waits for this
    /// to reach 0: in the single total order of SeqCst operations either the
    /// publisher's increment precedes the waiter's load (the waiter waits for
    /// it) or the publisher's generation load follows the bump (it sees the
    /// new generation and re-routes). So no publisher enqueues with a stale
    /// routing decision after the waiter moved on.
    /// On its own cache line: publishers write it twice per record, while
    /// the worker writes the counters beside it once per batch.
    pub(crate) gate: CacheLine<AtomicUsize>,
    /// The worker's join handle, taken by whoever stops the worker.
    pub(crate) worker: Mutex<Option<worker::WorkerHandle>>,
    /// Disconnects when the worker thread has finished, whoever joins it:
    /// lets several parties (shutdown, a background unsubscribe) wait.
    pub(crate) done: crossbeam_channel::Receiver<()>,
}

impl fmt::Debug for SubShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubShared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SubShared {
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
        let queued = (self.queue.len() + self.lanes_len()) as u64;
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

    /// Records queued in all lanes now.
    fn lanes_len(&self) -> usize {
        lock(&self.lanes).iter().map(|lane| lane.len()).sum()
    }

    /// A new lane into this subscription for the calling thread.
    pub(crate) fn new_lane(&self) -> LaneProducer {
        let (lane, producer) = Lane::create(self.capacity, Arc::clone(&self.budget));
        lock(&self.lanes).push(lane);
        // Release: the registration above happens before a worker that
        // sees the new count locks the list.
        self.lanes_added.fetch_add(1, Ordering::Release);
        producer
    }

    /// Enqueues `record` through the calling thread's lane; the records the
    /// overflow policy drops go to `spill`.
    pub(crate) fn push_lane(
        &self,
        lane: &mut LaneProducer,
        record: Arc<Record>,
        spill: impl FnMut(Arc<Record>),
    ) {
        self.queue
            .push_lane(lane, record, &self.counters, || self.wake(), spill);
        self.wake_if_sleeping();
    }

    /// Enqueues `record` through the shared queue.
    pub(crate) fn push_shared(&self, record: Arc<Record>) {
        self.queue.push(record, &self.counters);
        self.wake_if_sleeping();
    }

    /// Unparks the worker if it said it is going to sleep.
    pub(crate) fn wake_if_sleeping(&self) {
        // Relaxed: see `sleeping`.
        if self.sleeping.load(Ordering::Relaxed) {
            self.wake();
        }
    }

    /// Unparks the worker (it parks again if there is nothing to do).
    pub(crate) fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// Waits until no publisher is inside the gate: neither a lane's
    /// producer (its `busy` flag) nor a pusher into the shared queue (`gate`).
    /// Called after the broker's generation was bumped (SeqCst).
    ///
    /// The protocol, for lanes: a publisher stores `busy = true`, issues a
    /// `SeqCst` fence, then loads the generation; we store the generation
    /// (`SeqCst`), then load each `busy` (`SeqCst`). In the single total
    /// order of `SeqCst` operations either our load comes after the
    /// publisher's fence (we see `busy` and wait for it) or its generation
    /// load comes after our store (it sees the new generation and routes
    /// again). A lane registered after we copied the list was registered
    /// under the same mutex after our bump, so its publisher sees the new
    /// generation too.
    ///
    /// Publishers run no user code inside the gate (the record is built and
    /// the predicates run first), so a removal made from a predicate or a
    /// `Display` impl never waits for its own thread.
    ///
    /// Publishers never block under the drop policies, so this is short; under
    /// `Block` it lasts until the worker has made room for them.
    pub(crate) fn wait_gate_closed(&self, deadline: Option<std::time::Instant>) -> bool {
        let lanes: Vec<Arc<Lane>> = lock(&self.lanes).clone();
        let mut spins = 0u32;
        loop {
            // SeqCst: pairs with the publisher's SeqCst increment (see `gate`).
            let busy =
                self.gate.load(Ordering::SeqCst) != 0 || lanes.iter().any(|lane| lane.is_busy());
            if !busy {
                return true;
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return false;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
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
}
