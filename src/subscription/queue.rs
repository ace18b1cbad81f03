//! The bounded queue of one subscription, and drop-oldest built on
//! crossbeam-channel.
//!
//! crossbeam-channel has no eviction of its own (crossbeam issue #400; the
//! proposal in PR #1135 was not merged), so drop-oldest is ours: the queue
//! keeps a `Receiver` clone beside the `Sender`. When `try_send` reports
//! `Full(record)`, the publisher
//!
//! 1. `try_recv`s one record from its receiver clone: the oldest one, since
//!    the channel is FIFO;
//! 2. counts it as dropped;
//! 3. retries `try_send(record)`, at most [`EVICT_ATTEMPTS`] times.
//!
//! Races, and why each record is still counted exactly once:
//!
//! - The worker may take the oldest record first (our `try_recv` then gets
//!   the next one, or `Empty`). Either way crossbeam hands every message to
//!   exactly one receiver, so a record is written by the worker *or* counted
//!   by exactly one evicting publisher, never both.
//! - Another publisher may fill the slot we freed. We evict again; after
//!   `EVICT_ATTEMPTS` lost races we count the *new* record as dropped
//!   instead, so the caller's time stays bounded.
//! - Between our `try_recv` and the count, the record would be neither
//!   queued nor counted; so we count first and take the count back if the
//!   queue turned out empty. A reader can therefore over-count `dropped` by
//!   one for an instant, never under-count it.
//! - Order is preserved: we only ever remove from the head and append at the
//!   tail, so eviction leaves gaps, never reorderings.
//!
//! Control messages (flush, shutdown) never travel through this queue (they
//! have their own channel, see `worker.rs`), so eviction cannot lose them.

use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};

use super::{Counters, OverflowPolicy};
use crate::appenders::Record;
use crate::sync::{Arc, Ordering};

/// How many times a drop-oldest publisher evicts and retries before it drops
/// its own record instead. One attempt succeeds unless other publishers race
/// us for the freed slot; 4 keeps the worst case to a few hundred ns.
const EVICT_ATTEMPTS: usize = 4;

/// A subscription's bounded queue of shared records.
pub(crate) struct Queue {
    tx: Sender<Arc<Record>>,
    /// Beside the sender, to pop the oldest record under drop-oldest.
    evict_rx: Receiver<Arc<Record>>,
    policy: OverflowPolicy,
    max_bytes: Option<usize>,
}

impl Queue {
    /// A queue of `capacity` records; returns the worker's receiver too.
    pub(crate) fn new(
        capacity: usize,
        max_bytes: Option<usize>,
        policy: OverflowPolicy,
    ) -> (Queue, Receiver<Arc<Record>>) {
        let (tx, rx) = crossbeam_channel::bounded(capacity);
        let queue = Queue {
            tx,
            evict_rx: rx.clone(),
            policy,
            max_bytes,
        };
        (queue, rx)
    }

    /// Records waiting in the queue.
    pub(crate) fn len(&self) -> usize {
        self.tx.len()
    }

    /// Enqueues `record` under the overflow policy. Every record handed in
    /// ends up in the queue or counted in `counters.dropped`.
    pub(crate) fn push(&self, record: Arc<Record>, counters: &Counters) {
        if let Some(max) = self.max_bytes {
            if !self.reserve_bytes(&record, max, counters) {
                return;
            }
        }
        match self.policy {
            OverflowPolicy::DropOldest => self.push_drop_oldest(record, counters),
            OverflowPolicy::DropNewest => match self.tx.try_send(record) {
                Ok(()) => {}
                Err(TrySendError::Full(r) | TrySendError::Disconnected(r)) => {
                    self.discard(&r, counters);
                }
            },
            OverflowPolicy::Block => {
                if let Err(e) = self.tx.send(record) {
                    // Cannot happen (we hold a receiver), but count it anyway.
                    self.discard(&e.into_inner(), counters);
                }
            }
            OverflowPolicy::BlockTimeout(timeout) => self.push_timeout(record, timeout, counters),
        }
    }

    fn push_timeout(&self, record: Arc<Record>, timeout: Duration, counters: &Counters) {
        match self.tx.send_timeout(record, timeout) {
            Ok(()) => {}
            Err(SendTimeoutError::Timeout(r) | SendTimeoutError::Disconnected(r)) => {
                self.discard(&r, counters);
            }
        }
    }

    fn push_drop_oldest(&self, record: Arc<Record>, counters: &Counters) {
        let mut record = record;
        for _ in 0..EVICT_ATTEMPTS {
            match self.tx.try_send(record) {
                Ok(()) => return,
                Err(TrySendError::Full(r)) => {
                    record = r;
                    // Count the eviction *before* taking the record out, so
                    // that no observer (a flush barrier reading the stats
                    // after the worker acknowledged) can see the record
                    // neither queued nor counted. Our `try_recv` is a release
                    // operation on the channel's head, which the worker's
                    // later receives acquire: the count is visible to anyone
                    // the worker then synchronises with.
                    Counters::add(&counters.dropped, 1);
                    match self.evict_rx.try_recv() {
                        Ok(oldest) => {
                            self.release_bytes(&oldest, counters);
                            counters.stamp_first_drop();
                        }
                        // Empty: the worker drained meanwhile, so there was
                        // nothing to evict; take the count back. Retrying
                        // succeeds unless another publisher takes the slot.
                        Err(_) => Counters::sub(&counters.dropped, 1),
                    }
                }
                Err(TrySendError::Disconnected(r)) => {
                    record = r;
                    break;
                }
            }
        }
        self.discard(&record, counters);
    }

    /// Counts `record` as dropped and releases its bytes.
    fn discard(&self, record: &Record, counters: &Counters) {
        self.release_bytes(record, counters);
        counters.record_drops(1);
    }

    /// Accounts the bytes of `record`; under the byte bound, evicts (drop
    /// oldest) or refuses (the other policies) when it would not fit.
    /// Returns whether the record may be sent.
    fn reserve_bytes(&self, record: &Record, max: usize, counters: &Counters) -> bool {
        let size = record.approx_size();
        // Relaxed: a statistic-like budget; exceeding it by a few records
        // under a race is acceptable, it bounds memory, not correctness.
        let mut used = counters.bytes.fetch_add(size, Ordering::Relaxed) + size;
        let mut attempts = 0;
        while used > max && used != size {
            let evicted = match self.policy {
                OverflowPolicy::DropOldest if attempts < EVICT_ATTEMPTS * 4 => {
                    self.evict_rx.try_recv().ok()
                }
                _ => None,
            };
            match evicted {
                Some(oldest) => {
                    self.discard(&oldest, counters);
                    attempts += 1;
                    used = counters.bytes.load(Ordering::Relaxed);
                }
                None => {
                    counters.bytes.fetch_sub(size, Ordering::Relaxed);
                    counters.record_drops(1);
                    return false;
                }
            }
        }
        true
    }

    /// Releases the bytes of a record leaving the queue (taken by the worker
    /// or evicted).
    pub(crate) fn release_bytes(&self, record: &Record, counters: &Counters) {
        if self.max_bytes.is_some() {
            counters
                .bytes
                .fetch_sub(record.approx_size(), Ordering::Relaxed);
        }
    }
}
