//! The queue of one subscription: the publishers' lanes and a shared
//! crossbeam channel, under one overflow policy.
//!
//! A publisher with a thread-local route view (every log call, in practice)
//! pushes into its own lane (`lane.rs`): one single-producer ring per
//! (thread, subscription), with no read-modify-write on the caller's path.
//! All lanes of a subscription draw on one [`Budget`](super::Budget) of
//! `capacity` places, so the subscription holds at most `capacity` records
//! (places a thread reserved and has not used yet count against it: see
//! `Budget`). Under drop-oldest a
//! publisher evicts the oldest record *of its own lane*; if it has none (the
//! other threads hold every place) its new record is the one dropped. The
//! worker merges the lanes in `seq` order.
//!
//! The shared channel takes what has no lane: dead letters that other
//! workers push, and log calls made after a thread's locals were destroyed.
//! Drop-oldest on it works as follows.
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

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};

use super::lane::LaneProducer;
use super::{Counters, OverflowPolicy};
use crate::appenders::Record;
use crate::sync::{thread, Arc, Ordering};

/// How many times a drop-oldest publisher evicts and retries before it drops
/// its own record instead. One attempt succeeds unless other publishers race
/// us for the freed slot; 4 keeps the worst case to a few hundred ns.
const EVICT_ATTEMPTS: usize = 4;

/// How long a publisher blocked on a full lane sleeps between looks.
const BLOCK_NAP: Duration = Duration::from_micros(50);

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
            let evict = || self.evict_rx.try_recv().ok();
            if !self.reserve_bytes(&record, max, counters, evict) {
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

    /// Enqueues `record` into the publisher's own lane (see `lane.rs`) under
    /// the overflow policy. Every record handed in ends up in the lane or
    /// counted in `counters.dropped`; the records dropped (the new one, or
    /// the evicted oldest) are handed to `spill`, for the publisher to reuse.
    /// `wake` rouses the worker while we wait for room under the blocking
    /// policies.
    pub(crate) fn push_lane(
        &self,
        lane: &mut LaneProducer,
        record: Arc<Record>,
        counters: &Counters,
        wake: impl Fn(),
        mut spill: impl FnMut(Arc<Record>),
    ) {
        if let Some(max) = self.max_bytes {
            if !self.reserve_bytes(&record, max, counters, || lane.evict_oldest()) {
                return;
            }
        }
        let mut record = record;
        match self.policy {
            OverflowPolicy::DropOldest => {
                // Only we push into our lane, so once an eviction succeeded
                // the next push does; the bound is for form's sake.
                for _ in 0..EVICT_ATTEMPTS {
                    match lane.try_push(record) {
                        Ok(()) => return,
                        Err(r) => {
                            record = r;
                            if let Some(oldest) = self.evict(counters, || lane.evict_oldest()) {
                                spill(oldest);
                            }
                        }
                    }
                }
                self.discard(&record, counters);
                spill(record);
            }
            OverflowPolicy::DropNewest => {
                if let Err(r) = lane.try_push(record) {
                    self.discard(&r, counters);
                    spill(r);
                }
            }
            OverflowPolicy::Block => {
                // Without a deadline it only returns once the record is in.
                let _ = self.push_lane_waiting(lane, record, None, counters, wake);
            }
            OverflowPolicy::BlockTimeout(timeout) => {
                let deadline = Instant::now().checked_add(timeout);
                if let Some(dropped) =
                    self.push_lane_waiting(lane, record, deadline, counters, wake)
                {
                    spill(dropped);
                }
            }
        }
    }

    /// Waits for room in a full lane (the blocking policies), until
    /// `deadline` if there is one; then counts the record as dropped and
    /// hands it back.
    fn push_lane_waiting(
        &self,
        lane: &mut LaneProducer,
        record: Arc<Record>,
        deadline: Option<Instant>,
        counters: &Counters,
        wake: impl Fn(),
    ) -> Option<Arc<Record>> {
        let mut record = record;
        let mut step = 0u32;
        loop {
            match lane.try_push(record) {
                Ok(()) => return None,
                Err(r) => record = r,
            }
            wake();
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.discard(&record, counters);
                return Some(record);
            }
            // The worker frees room a batch at a time, so a short wait
            // usually suffices; past that, sleep briefly rather than spin on
            // a core the worker may need.
            if step < 6 {
                for _ in 0..(1 << step) {
                    std::hint::spin_loop();
                }
            } else if step < 10 {
                thread::yield_now();
            } else {
                let nap = deadline.map_or(BLOCK_NAP, |d| (d - now).min(BLOCK_NAP));
                thread::sleep(nap);
            }
            step = step.saturating_add(1);
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
                    // Retrying succeeds unless another publisher takes the
                    // slot we freed.
                    self.evict(counters, || self.evict_rx.try_recv().ok());
                }
                Err(TrySendError::Disconnected(r)) => {
                    record = r;
                    break;
                }
            }
        }
        self.discard(&record, counters);
    }

    /// Evicts the oldest record with `take` (drop-oldest on a full queue)
    /// and counts it; returns it.
    ///
    /// The eviction is counted *before* the record is taken out, so that no
    /// observer (a flush barrier reading the stats after the worker
    /// acknowledged) can see the record neither queued nor counted: taking
    /// is a release operation on the queue's head (the channel's, or the
    /// lane's CAS), which the worker's later takes acquire, so the count is
    /// visible to anyone the worker then synchronises with. If there was
    /// nothing to take (the worker drained meanwhile) the count is taken
    /// back.
    fn evict(
        &self,
        counters: &Counters,
        take: impl FnOnce() -> Option<Arc<Record>>,
    ) -> Option<Arc<Record>> {
        Counters::add(&counters.dropped, 1);
        match take() {
            Some(oldest) => {
                self.release_bytes(&oldest, counters);
                counters.stamp_first_drop();
                Some(oldest)
            }
            None => {
                Counters::sub(&counters.dropped, 1);
                None
            }
        }
    }

    /// Counts `record` as dropped and releases its bytes.
    fn discard(&self, record: &Record, counters: &Counters) {
        self.release_bytes(record, counters);
        counters.record_drops(1);
    }

    /// Accounts the bytes of `record`; under the byte bound, evicts (drop
    /// oldest) or refuses (the other policies) when it would not fit.
    /// Returns whether the record may be sent.
    fn reserve_bytes(
        &self,
        record: &Record,
        max: usize,
        counters: &Counters,
        mut evict: impl FnMut() -> Option<Arc<Record>>,
    ) -> bool {
        let size = record.approx_size();
        // Relaxed: a statistic-like budget; exceeding it by a few records
        // under a race is acceptable, it bounds memory, not correctness.
        let mut used = counters.bytes.fetch_add(size, Ordering::Relaxed) + size;
        let mut attempts = 0;
        while used > max && used != size {
            let evicted = match self.policy {
                OverflowPolicy::DropOldest if attempts < EVICT_ATTEMPTS * 4 => evict(),
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
