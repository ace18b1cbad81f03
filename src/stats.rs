//! The counters: per subscription, cheap to bump from any thread, read as
//! [`SubscriptionStats`]; and the broker-wide [`BrokerStats`] and
//! [`ShutdownReport`] built from them.
//!
//! Every record a subscription matches ends in exactly one of its counters
//! (written, dropped, dead-lettered, lost) or is still queued; see
//! [`SubscriptionStats`] for the identity and where each counter is bumped.

use std::collections::BTreeMap;

use crate::retry::BreakerState;
use crate::sync::{AtomicU64, AtomicU8, Ordering};

/// Per-subscription counters, shared by publishers, the worker and readers.
///
/// Every counter is a pure statistic: `Relaxed`, it publishes no other
/// memory. Exactness comes from each record being counted by exactly one
/// party (see `queue/mod.rs`); sums are exact at quiescent points (after a flush).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Records taken off the queue by the worker.
    pub(crate) taken: AtomicU64,
    /// Records the appender accepted.
    pub(crate) written: AtomicU64,
    /// Records discarded by the overflow policy or published after shutdown.
    /// An eviction is counted here before the record leaves the queue (so
    /// that a flush barrier never sees it neither queued nor counted) and
    /// taken back if there was nothing to evict: it can read one high for an
    /// instant.
    pub(crate) dropped: AtomicU64,
    /// The drops that are final: `dropped` less the evictions still in
    /// progress. What drop summaries report, so that they never report a
    /// drop that is then taken back.
    pub(crate) drops_settled: AtomicU64,
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
        self.settle_drops(n);
    }

    /// `n` drops already counted in `dropped` are final.
    pub(crate) fn settle_drops(&self, n: u64) {
        Counters::add(&self.drops_settled, n);
        self.stamp_first_drop();
    }

    /// Remembers when the current burst of drops started, if not yet known.
    pub(crate) fn stamp_first_drop(&self) {
        if self.first_drop_micros.load(Ordering::Relaxed) == 0 {
            let now = crate::clock::now_micros();
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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

/// Counters of every subscription and of the broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct BrokerStats {
    /// Per subscription, by name (the dead-letter subscription included).
    pub subscriptions: BTreeMap<String, SubscriptionStats>,
    /// The sums of every subscription's counters.
    pub totals: SubscriptionStats,
    /// Log calls discarded by the re-entrancy rule (made on a logbus worker
    /// thread, or from a predicate while logbus was routing).
    pub suppressed: u64,
    /// Records whose message or a key-value was cut by the size bound
    /// ([`Builder::max_record_bytes`](crate::Builder::max_record_bytes)).
    pub truncated: u64,
    /// Records published after shutdown (each also counted as `dropped` in
    /// the subscriptions it matched).
    pub dropped_after_shutdown: u64,
}

/// What [`Broker::shutdown`](crate::Broker::shutdown) did: final counters, and which subscriptions did
/// not finish before the deadline.
///
/// For every subscription `matched == written + dropped + dead_lettered +
/// lost + in_queue`, where `in_queue` is what an unfinished subscription
/// left undelivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
