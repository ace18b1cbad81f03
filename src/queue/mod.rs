//! The queue of one subscription, both ends: publishers push into it under
//! an overflow policy, the worker drains it.
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | [`Queue`], [`OverflowPolicy`]: the policy that decides, over any end that says "full" |
//! | `lane.rs` | one single-producer ring per (publishing thread, subscription): the caller's fast path |
//! | `shared.rs` | the bounded crossbeam channel for pushes without a lane |
//! | `budget.rs` | the bounds, in records and in bytes, as one kind of budget |
//! | `gate.rs` | the publish/remove gate every push passes |
//! | `waker.rs` | the worker's parking place and the wake-up protocol |
//! | `drain.rs` | the consumer: merges the sources by `seq`, flush barriers |
//!
//! # Overflow, and why each record is counted exactly once
//!
//! A push goes into an *end*: the publisher's own lane, or the shared
//! channel. An end only says whether the record fit; [`OverflowPolicy`]
//! decides what happens when it did not. Under `DropOldest` the publisher
//!
//! 1. takes the oldest record out of the end (for a lane, with a CAS on
//!    its `head` against the worker's; for the channel, `try_recv` on a
//!    receiver clone, crossbeam issue #400);
//! 2. counts it as dropped;
//! 3. retries its push, at most [`EVICT_ATTEMPTS`] times.
//!
//! Races:
//!
//! - The worker may take the oldest record first: the eviction then gets
//!   the next one, or nothing. Either way one party owns each record (the
//!   CAS on a lane's head, crossbeam handing each message to one receiver),
//!   so a record is written by the worker *or* counted by exactly one
//!   evicting publisher, never both.
//! - Another publisher may fill the place we freed (shared channel). We
//!   evict again; after `EVICT_ATTEMPTS` lost races we count the *new*
//!   record as dropped instead, so the caller's time stays bounded.
//! - Between taking a record out and counting it, the record would be
//!   neither queued nor counted; so we count first and take the count back
//!   if there was nothing to take. A reader can therefore over-count
//!   `dropped` by one for an instant, never under-count it.
//! - Order is preserved: ends only remove from the head and append at the
//!   tail, so eviction leaves gaps, never reorderings.
//!
//! Today a lane's producer evicts from its *own* lane: if other threads
//! hold every place of the subscription, its new record is the one dropped.
//!
//! Control messages (flush, shutdown) never travel through the queue (they
//! have their own channel, see `subscription`), so eviction cannot lose
//! them.

mod budget;
mod drain;
mod gate;
mod lane;
mod shared;
mod waker;

use std::time::{Duration, Instant};

use logbus_appenders::Record;

pub(crate) use self::drain::Drain;
pub(crate) use self::gate::{fence as gate_fence, SharedPass};
pub(crate) use self::lane::LaneProducer;
pub(crate) use self::waker::Work;

use self::budget::Budget;
use self::gate::SharedGate;
use self::lane::Lane;
use self::shared::SharedChannel;
use self::waker::Waker;
use crate::stats::Counters;
use crate::sync::{lock, thread, Arc, AtomicUsize, Mutex, Ordering};

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

/// How many times a drop-oldest publisher evicts and retries before it drops
/// its own record instead. One attempt succeeds unless other publishers race
/// us for the freed slot; 4 keeps the worst case to a few hundred ns.
const EVICT_ATTEMPTS: usize = 4;

/// How long a publisher blocked on a full lane sleeps between looks.
const BLOCK_NAP: Duration = Duration::from_micros(50);

/// A subscription's bounded queue of shared records: the lanes, the shared
/// channel, their bounds, the gate and the worker's waker.
pub(crate) struct Queue {
    policy: OverflowPolicy,
    /// Records one lane holds at most (the subscription's capacity).
    capacity: usize,
    /// Places shared by every lane (the subscription's capacity).
    records: Arc<Budget>,
    /// The optional bound on the approximate bytes queued.
    bytes: Option<Budget>,
    shared: SharedChannel,
    registry: Registry,
    /// The gate of the pushers without a lane (lanes carry their own flag).
    gate: SharedGate,
    pub(crate) waker: Waker,
}

/// Every live lane into the subscription, one per publishing thread. The
/// lock is taken when a thread publishes to the subscription for the first
/// time, when the drain notices a new lane (by `added`) or forgets a
/// finished one, by stats readers and by removers.
#[derive(Default)]
struct Registry {
    lanes: Mutex<Vec<Arc<Lane>>>,
    /// Bumped (Release) after each lane is registered; the drain compares
    /// it with the count it last saw (Acquire) to refresh its list.
    added: AtomicUsize,
}

impl Queue {
    /// A queue of `capacity` records (and `max_bytes`, if set), and the
    /// worker's end of it.
    pub(crate) fn new(
        capacity: usize,
        max_bytes: Option<usize>,
        policy: OverflowPolicy,
    ) -> (Queue, Drain) {
        let (shared, rx) = SharedChannel::new(capacity);
        let queue = Queue {
            policy,
            capacity,
            records: Arc::new(Budget::new(capacity)),
            bytes: max_bytes.map(Budget::new),
            shared,
            registry: Registry::default(),
            gate: SharedGate::default(),
            waker: Waker::default(),
        };
        (queue, Drain::new(rx))
    }

    /// Records queued now, in the channel and every lane.
    pub(crate) fn len(&self) -> usize {
        let lanes: usize = lock(&self.registry.lanes).iter().map(|l| l.len()).sum();
        self.shared.len() + lanes
    }

    /// A new lane into this queue for the calling thread.
    pub(crate) fn new_lane(&self) -> LaneProducer {
        let (lane, producer) = Lane::create(self.capacity, Arc::clone(&self.records));
        lock(&self.registry.lanes).push(lane);
        // Release: the registration above happens before a drain that sees
        // the new count locks the list.
        self.registry.added.fetch_add(1, Ordering::Release);
        producer
    }

    /// Enters the gate as a pusher without a lane (see `gate.rs`).
    pub(crate) fn enter_shared(&self) -> SharedPass<'_> {
        self.gate.enter()
    }

    /// Waits until no pusher is inside the gate, or until `deadline`;
    /// returns whether it closed. Called after the broker's generation was
    /// bumped; see `gate.rs` for the protocol.
    pub(crate) fn wait_gate_closed(&self, deadline: Option<Instant>) -> bool {
        let lanes: Vec<Arc<Lane>> = lock(&self.registry.lanes).clone();
        gate::wait_closed(&self.gate, lanes.iter().map(|l| l.busy()), deadline)
    }

    /// Enqueues `record` into the publisher's own lane (inside its gate)
    /// under the overflow policy; the publisher wakes the worker after it
    /// left the gate (`waker.rs`). Every
    /// record handed in ends up in the lane or counted in
    /// `counters.dropped`; the records dropped (the new one, or the evicted
    /// oldest) go to `spill`, for the publisher to reuse.
    pub(crate) fn push_lane(
        &self,
        lane: &mut LaneProducer,
        record: Arc<Record>,
        counters: &Counters,
        mut spill: impl FnMut(Arc<Record>),
    ) {
        self.push_into(&mut LaneEnd(lane), record, counters, &mut spill);
    }

    /// Enqueues `record` through the shared channel (inside a
    /// [`SharedPass`]) under the overflow policy; the pusher wakes the
    /// worker after it left the gate.
    pub(crate) fn push_shared(&self, record: Arc<Record>, counters: &Counters) {
        self.push_into(&mut SharedEnd(&self.shared), record, counters, &mut drop);
    }

    /// The overflow policy, over any end.
    fn push_into(
        &self,
        end: &mut impl End,
        record: Arc<Record>,
        counters: &Counters,
        spill: &mut impl FnMut(Arc<Record>),
    ) {
        if !self.reserve_bytes(end, &record, counters, spill) {
            spill(record);
            return;
        }
        let mut record = record;
        let refused = match self.policy {
            OverflowPolicy::DropOldest => {
                for _ in 0..EVICT_ATTEMPTS {
                    match end.try_push(record) {
                        Ok(()) => return,
                        Err(r) => {
                            record = r;
                            // Retrying succeeds unless another publisher
                            // takes the place we freed.
                            if let Some(oldest) = self.evict(counters, || end.evict_oldest()) {
                                spill(oldest);
                            }
                        }
                    }
                }
                record
            }
            OverflowPolicy::DropNewest => match end.try_push(record) {
                Ok(()) => return,
                Err(r) => r,
            },
            OverflowPolicy::Block => match end.push_waiting(record, None, self) {
                Ok(()) => return,
                Err(r) => r,
            },
            OverflowPolicy::BlockTimeout(timeout) => {
                let deadline = Instant::now().checked_add(timeout);
                match end.push_waiting(record, deadline, self) {
                    Ok(()) => return,
                    Err(r) => r,
                }
            }
        };
        self.discard(&refused, counters);
        spill(refused);
    }

    /// Waits for room in a full lane (the blocking policies), until
    /// `deadline` if there is one, waking the worker; hands the record back
    /// if the deadline passed.
    fn wait_for_room(
        &self,
        lane: &mut LaneProducer,
        record: Arc<Record>,
        deadline: Option<Instant>,
    ) -> Result<(), Arc<Record>> {
        let mut record = record;
        let mut step = 0u32;
        loop {
            match lane.try_push(record) {
                Ok(()) => return Ok(()),
                Err(r) => record = r,
            }
            self.waker.wake();
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(record);
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
                self.release_bytes(&oldest);
                counters.stamp_first_drop();
                Some(oldest)
            }
            None => {
                Counters::sub(&counters.dropped, 1);
                None
            }
        }
    }

    /// Counts `record`, which was queued or reserved, as dropped and
    /// releases its bytes.
    fn discard(&self, record: &Record, counters: &Counters) {
        self.release_bytes(record);
        counters.record_drops(1);
    }

    /// Takes the bytes of `record` from the byte budget; when they do not
    /// fit, evicts the oldest records (drop-oldest, a bounded number of
    /// times) or refuses the record, counting it as dropped. Returns
    /// whether the record may be pushed.
    fn reserve_bytes(
        &self,
        end: &mut impl End,
        record: &Record,
        counters: &Counters,
        spill: &mut impl FnMut(Arc<Record>),
    ) -> bool {
        let Some(bytes) = &self.bytes else {
            return true;
        };
        let size = record.approx_size();
        let mut attempts = 0;
        while !bytes.try_take(size) {
            let evicted = match self.policy {
                OverflowPolicy::DropOldest if attempts < EVICT_ATTEMPTS * 4 => {
                    attempts += 1;
                    self.evict(counters, || end.evict_oldest())
                }
                _ => None,
            };
            match evicted {
                Some(oldest) => spill(oldest),
                None => {
                    counters.record_drops(1);
                    return false;
                }
            }
        }
        true
    }

    /// Gives back the bytes of a record leaving the queue (taken by the
    /// drain or evicted).
    fn release_bytes(&self, record: &Record) {
        if let Some(bytes) = &self.bytes {
            bytes.release(record.approx_size());
        }
    }
}

/// One end of the queue, as the overflow policy sees it: it says whether a
/// record fit, and gives up its oldest record on request.
trait End {
    fn try_push(&mut self, record: Arc<Record>) -> Result<(), Arc<Record>>;
    fn evict_oldest(&mut self) -> Option<Arc<Record>>;
    /// Waits for room until `deadline` (for ever if `None`).
    fn push_waiting(
        &mut self,
        record: Arc<Record>,
        deadline: Option<Instant>,
        queue: &Queue,
    ) -> Result<(), Arc<Record>>;
}

/// The publisher's own lane.
struct LaneEnd<'l>(&'l mut LaneProducer);

impl End for LaneEnd<'_> {
    fn try_push(&mut self, record: Arc<Record>) -> Result<(), Arc<Record>> {
        self.0.try_push(record)
    }

    fn evict_oldest(&mut self) -> Option<Arc<Record>> {
        self.0.evict_oldest()
    }

    fn push_waiting(
        &mut self,
        record: Arc<Record>,
        deadline: Option<Instant>,
        queue: &Queue,
    ) -> Result<(), Arc<Record>> {
        queue.wait_for_room(self.0, record, deadline)
    }
}

/// The shared channel.
struct SharedEnd<'c>(&'c SharedChannel);

impl End for SharedEnd<'_> {
    fn try_push(&mut self, record: Arc<Record>) -> Result<(), Arc<Record>> {
        self.0.try_push(record)
    }

    fn evict_oldest(&mut self) -> Option<Arc<Record>> {
        self.0.evict_oldest()
    }

    fn push_waiting(
        &mut self,
        record: Arc<Record>,
        deadline: Option<Instant>,
        _queue: &Queue,
    ) -> Result<(), Arc<Record>> {
        self.0.push_waiting(record, deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logbus_appenders::{Level, Topic};

    fn record(seq: u64) -> Arc<Record> {
        Arc::new(
            Record::builder(Topic::new(Level::Info, "t"))
                .seq(seq)
                .build(),
        )
    }

    /// Pushes `0..n` through one lane and returns what the drain takes.
    fn run(policy: OverflowPolicy, capacity: usize, n: u64) -> (Vec<u64>, Counters, Vec<u64>) {
        let (queue, mut drain) = Queue::new(capacity, None, policy);
        let counters = Counters::default();
        let mut lane = queue.new_lane();
        let mut spilled = Vec::new();
        for seq in 0..n {
            queue.push_lane(&mut lane, record(seq), &counters, |r| spilled.push(r.seq()));
        }
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        (batch.iter().map(|r| r.seq()).collect(), counters, spilled)
    }

    #[test]
    fn drop_oldest_keeps_the_newest_and_counts_the_rest() {
        let (taken, counters, spilled) = run(OverflowPolicy::DropOldest, 4, 10);
        assert_eq!(taken, [6, 7, 8, 9]);
        assert_eq!(Counters::get(&counters.dropped), 6);
        assert_eq!(spilled, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn drop_newest_keeps_the_oldest() {
        let (taken, counters, spilled) = run(OverflowPolicy::DropNewest, 4, 10);
        assert_eq!(taken, [0, 1, 2, 3]);
        assert_eq!(Counters::get(&counters.dropped), 6);
        assert_eq!(spilled, [4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn a_timed_block_drops_after_its_deadline() {
        let (taken, counters, _) = run(OverflowPolicy::BlockTimeout(Duration::ZERO), 2, 3);
        assert_eq!(taken, [0, 1]);
        assert_eq!(Counters::get(&counters.dropped), 1);
    }

    #[test]
    fn the_byte_bound_evicts_under_drop_oldest_and_refuses_otherwise() {
        let size = record(0).approx_size();
        for (policy, kept) in [
            (OverflowPolicy::DropOldest, vec![3, 4]),
            (OverflowPolicy::DropNewest, vec![0, 1]),
        ] {
            let (queue, mut drain) = Queue::new(100, Some(2 * size), policy);
            let counters = Counters::default();
            for seq in 0..5 {
                let _pass = queue.enter_shared();
                queue.push_shared(record(seq), &counters);
            }
            assert_eq!(queue.len(), 2);
            let mut batch = Vec::new();
            drain.take_batch(&queue, &mut batch, usize::MAX);
            assert_eq!(batch.iter().map(|r| r.seq()).collect::<Vec<_>>(), kept);
            assert_eq!(Counters::get(&counters.dropped), 3);
            // The drain gave the bytes back: two more fit.
            queue.push_shared(record(5), &counters);
            queue.push_shared(record(6), &counters);
            assert_eq!((queue.len(), Counters::get(&counters.dropped)), (2, 3));
        }
    }
}
