//! The queue of one subscription, both ends: publishers push into it under
//! an overflow policy, the worker drains it.
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | [`Queue`], [`OverflowPolicy`]: the policy that decides, over any end that says "full" |
//! | `lane.rs` | one single-producer ring per (publishing thread, subscription): the caller's fast path |
//! | `slot.rs` | one place in a lane: a plain record's parts copied in, or a shared record's pointer |
//! | `shared.rs` | the channel for pushes without a lane, one more merge source |
//! | `budget.rs` | the bounds, in records and in bytes, as one kind of budget |
//! | `gate.rs` | the publish/remove gate every push passes |
//! | `waker.rs` | the worker's parking place and the wake-up protocol |
//! | `drain.rs` | the consumer: merges the sources by `seq`, flush barriers |
//! | `front.rs` | records delivered before any live one: a replay |
//!
//! # Overflow, and why each record is counted exactly once
//!
//! A push goes into an *end*: the publisher's own lane, or the shared
//! channel. An end only says whether the record fit; [`OverflowPolicy`]
//! decides what happens when it did not. Under `DropOldest` the publisher
//!
//! 1. takes the queue's oldest record out: the lowest `seq` among the heads
//!    of every lane and of the shared channel, whichever thread published
//!    it (`Queue::take_oldest`), so a noisy thread cannot silence a quiet
//!    one. The head is taken with a CAS on the lane's `head` (or under the
//!    channel's lock) and only if it is still below the other heads it
//!    read; its place in the budget passes to the evictor;
//! 2. counts it as dropped;
//! 3. retries its push, into the place it now holds.
//!
//! Races:
//!
//! - The worker or another evictor may take the oldest record first: the
//!   CAS fails and the publisher scans again ([`SCAN_ATTEMPTS`] times). One
//!   party owns each record (whoever's CAS moves a head past it), so a
//!   record is written by the worker *or* counted by exactly one evicting
//!   publisher, never both.
//! - If the queue drained meanwhile, the eviction finds nothing and the
//!   count is taken back; the retry then finds room. After
//!   [`EVICT_ATTEMPTS`] failed pushes the *new* record is counted as dropped
//!   instead, so the caller's time stays bounded.
//! - Between taking a record out and counting it, the record would be
//!   neither queued nor counted; so we count first and take the count back
//!   if there was nothing to take. A reader can therefore over-count
//!   `dropped` by one for an instant, never under-count it. Drop summaries
//!   read `drops_settled`, counted only once a drop is final.
//! - Order is preserved: sources only lose records at the head and gain
//!   them at the tail, so eviction leaves gaps, never reorderings. A record
//!   whose `seq` was taken before the scan but that is pushed after it can
//!   be older than what was evicted: the oldest *queued* record goes.
//!
//! The byte bound is a second budget: drop-oldest evicts the queue's oldest
//! records until the new one fits (as many as the queue holds, at most), the
//! blocking policies wait for room as they do for a place, drop-newest
//! refuses the new record. An evicted record's place passes to its evictor;
//! the places a push took over and did not use go back to the budget, so
//! a thread that evicted many for one large record holds none of them after.
//! A take gives its records' bytes back as they leave their source, before
//! the worker rebuilds them (`Lane::take_below`).
//!
//! Control messages (flush, shutdown) never travel through the queue (they
//! have their own channel, see `subscription`), so eviction cannot lose
//! them.

mod budget;
mod drain;
mod front;
mod gate;
mod lane;
mod shared;
mod slot;
mod waker;

use std::time::{Duration, Instant};

use logbus_appenders::Record;

pub(crate) use self::drain::{Barrier, Drain};
pub(crate) use self::gate::{fence as gate_fence, SharedPass};
pub(crate) use self::lane::LaneProducer;
pub(crate) use self::slot::{Item, INLINE_TEXT};
pub(crate) use self::waker::Work;

use self::budget::Budget;
use self::drain::Source;
use self::gate::SharedGate;
use self::lane::Lane;
use self::shared::SharedChannel;
use self::slot::Evicted;
use self::waker::Waker;
use crate::stats::Counters;
use crate::sync::{lock, spin_loop, thread, Arc, AtomicBool, AtomicUsize, Mutex, Ordering};

/// The default queue capacity, in records.
///
/// 8,192 records absorb a burst of about 4 ms at full speed (the worker
/// writes 2 M records a second on our 2-vCPU machines) and, with typical
/// 70-150-byte messages, hold about 2.5 MB: the whole process stayed under
/// our 16 MiB RSS budget with four threads flooding one file (16,384 took it
/// to 19 MB, for no fewer drops). A publishing thread's lane grows with its
/// backlog, up to this many slots (16 bytes each, a shared record's pointer,
/// or 128 for a lane that carries plain records' parts: 128 KiB or 1 MiB per
/// thread and subscription under a flood), and shrinks back after.
pub const DEFAULT_CAPACITY: usize = 8_192;

// The record pool holds two default queues' worth (`recycle.rs`).
const _: () = assert!(crate::recycle::POOL_RECORDS == 2 * DEFAULT_CAPACITY);

/// The largest queue capacity a subscription accepts, in records (2^20).
///
/// A publishing thread's lane grows up to `capacity` slots under a burst
/// (16 bytes each, 128 for parts): the bound keeps one at 16 MiB, or 128
/// MiB for parts. A plain record's slot is all the memory it takes (a
/// shared record, about 300 bytes and up, takes its slot and its own
/// allocation).
pub const MAX_CAPACITY: usize = 1 << 20;

/// What a subscription does when its queue is full.
///
/// The caller of a log call never waits under the two drop policies.
///
/// | policy | caller | what is lost |
/// |---|---|---|
/// | `DropOldest` (default) | never waits (now and then it yields its core after evicting, see below) | the oldest queued record, counted in `dropped` |
/// | `DropNewest` | never waits | the new record, counted in `dropped` |
/// | `Block` | waits for space | nothing |
/// | `BlockTimeout(d)` | waits at most `d` | the new record after `d`, counted in `dropped` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OverflowPolicy {
    /// Evict the oldest queued record (the lowest `seq`, whichever thread
    /// published it) to make room for the new one.
    ///
    /// Every 16th log call of a thread that evicted from the subscription
    /// (the first one too) then yields its core to another runnable thread
    /// (`std::thread::yield_now`), usually the worker that fell behind
    /// (a worker that stopped taking records, stuck in its appender, gets
    /// at most eight such yields from each thread, then none from it until
    /// it moves):
    /// without that, publishers in a tight loop on a machine with fewer
    /// cores than threads keep the worker to its even share of the cores,
    /// and most records are evicted instead of written. It never waits for
    /// the worker: alone on its core, the caller goes on at once.
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

/// Offers the calling thread's core to another runnable thread
/// (`sched_yield`): what a drop-oldest publisher does after a log call
/// that evicted, on the first such call of its lane and every
/// [`CEDE_EVERY`]th after, unless the worker took no record over the lane's
/// last [`CEDES_UNANSWERED`] cedes (`LaneProducer::should_cede`).
///
/// A queue that overflows has a worker that is behind, and on a machine
/// with fewer cores than busy threads the worker is behind because the
/// scheduler shares the cores out evenly: with four publishers in a tight
/// loop on two cores it gets 2/5 of a core, and more than half of the
/// records were evicted instead of written (written per second: half of
/// `Block`'s, whose publishers park). Ceding the core after an eviction
/// hands the rest of the time slice to a runnable thread, which under
/// overflow is usually the worker, and the worker's lead comes back:
/// measured in `benches/peers` at 4 threads, the written rate went from
/// about 0.5x to `Block`'s, and the share of records dropped from 50-60%
/// to 1-2%. A worker that took nothing over several cedes is not waiting
/// for a core but stuck in its appender: its publishers do not cede again
/// until it moves, so a stalled appender costs each lane at most
/// [`CEDES_UNANSWERED`] time slices per stall.
///
/// It is not a wait: nothing here depends on the worker (a publisher alone
/// on its core continues at once), the gate is already left and no lock of
/// logbus's is held, so a removal or the worker never waits for it (a lock
/// of the caller's own is held through it). The cost is at most one system
/// call per [`CEDE_EVERY`] log calls that evicted, plus the time slice the
/// caller gives away when someone else can run: the price of overflow,
/// paid by the thread that causes it. Measured at 8 and 16 threads too
/// (2,000,000 records): written 0.82x and 0.99x of `Block`'s rate.
pub(crate) fn cede() {
    thread::yield_now();
}

/// How often a lane's log calls that evicted cede (the first, then every
/// 16th). Ceding gives away the rest of a time slice (milliseconds), so
/// ceding this often is enough for the worker: with four threads the share
/// of records written was 0.985-0.989 (every evicting call: 0.995-0.998;
/// never: 0.41-0.50), and the callers' p99.9 rose about 10% over never
/// ceding (3.7-4.0 us, against 3.4-3.6; every call: 3.9-6.1 us), three
/// rounds of 1,000,000 records in `benches/peers`.
pub(crate) const CEDE_EVERY: u32 = 16;

/// How many times in a row a lane cedes to a worker that took no record
/// in between before it stops until the worker moves: one cede may give
/// the core to another publisher, not the worker (with four publishers on
/// two cores, stopping after one such cede left the written share at
/// 0.48-0.55, as if there were none); a worker stuck in its appender costs
/// each lane at most this many time slices per stall.
pub(crate) const CEDES_UNANSWERED: u32 = 8;

/// How long a publisher blocked on a full queue sleeps between looks.
const BLOCK_NAP: Duration = Duration::from_micros(50);

/// Records a new lane's narrow ring holds (16-byte slots, `slot.rs`: 16
/// KiB). A lane whose ring fills while the subscription has room moves to a
/// ring [`RING_GROWTH`] times larger, up to the capacity; one found empty
/// after more than [`RING_QUIET`] times its size went through it without
/// filling it moves to a ring that much smaller, and the drain frees the
/// old ring once it is empty. So a thread's lanes hold about what it
/// queues, not `capacity` slots each. The shrink happens on the thread's
/// next pushes: a thread that floods and then falls silent keeps its grown
/// ring (up to `capacity` slots: 128 KiB narrow, 1 MiB wide, at the default
/// capacity) until it logs again; an exited thread's lane is freed once
/// drained. (Starting at 64 slots, the one-thread flood of the peer
/// comparison paid its lane's growth steps in p99.9: 511 ns against 400
/// with 1,024, in 7 alternating rounds. Under Miri, 64 keeps the growth
/// test small.)
const RING_START: usize = if cfg!(miri) { 64 } else { 1024 };

/// Records a new wide ring holds (128-byte slots, parts: 32 KiB), and the
/// smallest it shrinks to; a lane's first parts move it from its narrow
/// ring to a wide one as large.
const RING_START_WIDE: usize = if cfg!(miri) { 64 } else { 256 };

/// Records in a lane from which its pushes wake a dozing worker
/// (`Queue::wake_if_filling`): a quarter of a new wide ring (outside Miri),
/// so a burst from one thread wakes it before its lane must grow; a
/// steady stream of up to 64,000 records a second from one thread gathers
/// fewer in the longest nap.
const FILLING: usize = 64;

/// How much larger (or smaller) a lane's ring becomes at a time.
const RING_GROWTH: usize = 4;

/// How many times its size must go through a ring without filling it
/// before the producer takes it as too large. Shrinking as soon as a lane
/// was found empty made a flood whose worker just kept up grow and shrink
/// its lane over and over (each move allocates a ring, faults its pages in
/// and locks the registry): the peer comparison's one-thread p99.9 went
/// from 441 to 1,071 ns. With hysteresis a lane settles at the size its
/// bursts need. A lane asks for twice this for each time its ring grew
/// back after a shrink, up to 16 times this (`lane.rs`, `REGROWN_MOST`):
/// its caller made 47-57 `mmap` calls in a one-thread flood of 1,000,000
/// records with this alone, nearly all for a 128 KiB ring, and 11-14 with
/// the doubling.
const RING_QUIET: usize = 16;

/// How many times a drop-oldest publisher scans the sources' heads for the
/// oldest record before it gives up (each failed scan means another party
/// took a record meanwhile, so the queue made room anyway).
const SCAN_ATTEMPTS: usize = 8;

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
    /// Set when the worker is told to stop (`close`): a pusher without a
    /// lane that then finds it set does not enqueue (see `push_shared`).
    closed: AtomicBool,
    pub(crate) waker: Waker,
    /// Records delivered before any live one (a replay): `front.rs`.
    pub(crate) front: self::front::Front,
}

/// Every live lane into the subscription, one per publishing thread. The
/// lock is taken when a thread publishes to the subscription for the first
/// time, when the drain notices a change (by `version`) or forgets a
/// finished lane, when a drop-oldest publisher refreshes its copy, by
/// stats readers and by removers.
#[derive(Default)]
struct Registry {
    lanes: Mutex<Vec<Arc<Lane>>>,
    /// Bumped (Release) after each change of `lanes`; readers compare it
    /// with the version they copied (Acquire) to refresh their copy.
    version: AtomicUsize,
}

impl Registry {
    /// The lanes, and the version they are from. The old copy is let go
    /// of after the lock: it may hold the last reference to a finished
    /// lane, whose ring is then unmapped (`slot/memory.rs`).
    fn copy(&self, into: &mut Vec<Arc<Lane>>) -> usize {
        let stale = std::mem::take(into);
        let lanes = lock(&self.lanes);
        // Relaxed under the lock: every change bumps it under the lock too.
        let version = self.version.load(Ordering::Relaxed);
        into.extend(lanes.iter().cloned());
        drop(lanes);
        drop(stale);
        version
    }

    /// Changes the list under the lock and bumps the version.
    fn change(&self, change: impl FnOnce(&mut Vec<Arc<Lane>>)) -> usize {
        let mut lanes = lock(&self.lanes);
        change(&mut lanes);
        // Release: the change happens before a reader that sees the new
        // version locks the list.
        self.version.fetch_add(1, Ordering::Release) + 1
    }
}

impl Queue {
    /// A queue of `capacity` records (and `max_bytes`, if set), and the
    /// worker's end of it.
    pub(crate) fn new(
        capacity: usize,
        max_bytes: Option<usize>,
        policy: OverflowPolicy,
    ) -> (Queue, Drain) {
        let records = Arc::new(Budget::new(capacity));
        let queue = Queue {
            policy,
            capacity,
            shared: SharedChannel::new(Arc::clone(&records)),
            records,
            bytes: max_bytes.map(Budget::new),
            registry: Registry::default(),
            gate: SharedGate::default(),
            closed: AtomicBool::new(false),
            waker: Waker::default(),
            front: self::front::Front::new(),
        };
        (queue, Drain::new())
    }

    /// Records queued now, in the channel and every lane.
    pub(crate) fn len(&self) -> usize {
        let lanes: usize = lock(&self.registry.lanes).iter().map(|l| l.len()).sum();
        self.front.len() + self.shared.len() + lanes
    }

    /// Whether `run` records or more are queued, or the byte bound, if
    /// there is one, is half used (a moment's reading; the record count
    /// includes the places publishers reserved and have not filled yet): a
    /// worker waiting for a run to build up takes it then, rather than let
    /// a small queue fill.
    pub(crate) fn holds_run(&self, run: usize) -> bool {
        self.records.used() >= run || self.bytes.as_ref().is_some_and(Budget::half_used)
    }

    /// Wakes a dozing worker (`worker/mod.rs`) once the pushing end holds
    /// `own()` records of [`FILLING`] or more (an eighth of a smaller queue),
    /// or the queue a quarter of its records, or half its bytes: a burst
    /// that comes while the worker naps must not fill the queue, or grow a
    /// lane's ring, before the nap ends. (The queue's count includes the
    /// places lanes reserved and did not fill, up to about a 64th of the
    /// capacity times the logarithm of the number of lanes: a quarter
    /// leaves room for them, where a threshold as low as one end's had
    /// every chunk of a few threads' pushes unpark the worker.)
    /// Asked on every push that takes the policy's way (a lane's at least
    /// once per chunk of places, 32 records at most; every shared push;
    /// every push with a byte bound), so it is one `Relaxed` load while the
    /// worker does not doze. A hint, not part of the wake-up protocol: a
    /// stale read delays the record by a nap at most.
    #[inline]
    fn wake_if_filling(&self, own: impl FnOnce() -> usize) {
        // The flag first: the lane's depth reads the worker's `head`, a
        // line it writes with every take (reading it on every full push of
        // a `Block` flood cost that flood 12 ns at p50). The rest out of
        // line, so the policy's path stays as it was while no worker dozes.
        if self.waker.is_dozing() {
            self.wake_dozing_if_filling(own());
        }
    }

    /// [`wake_if_filling`](Queue::wake_if_filling) for a worker that dozes.
    #[cold]
    #[inline(never)]
    fn wake_dozing_if_filling(&self, own: usize) {
        if own >= (self.capacity / 8).clamp(1, FILLING) || self.holds_run(self.capacity / 4) {
            self.waker.wake();
        }
    }

    /// Lanes registered now (for tests).
    pub(crate) fn lanes_registered(&self) -> usize {
        lock(&self.registry.lanes).len()
    }

    /// A new lane into this queue for the calling thread, small at first
    /// (see [`RING_START`]); wide (parts, `slot.rs`) if `wide`.
    pub(crate) fn new_lane(&self, wide: bool) -> LaneProducer {
        let start = if wide { RING_START_WIDE } else { RING_START };
        let ring = self.capacity.min(start);
        let (lane, producer) = Lane::create(ring, Arc::clone(&self.records), wide);
        self.registry.change(|lanes| lanes.push(lane));
        producer
    }

    /// Moves `producer` to a new lane of `ring` records (inside its gate),
    /// wide if `wide`.
    fn renew(&self, producer: &mut LaneProducer, ring: usize, wide: bool) {
        let lane = Lane::shared(ring, Arc::clone(&self.records), wide);
        self.registry.change(|lanes| lanes.push(Arc::clone(&lane)));
        producer.replace(lane);
    }

    /// Enters the gate as a pusher without a lane (see `gate.rs`).
    pub(crate) fn enter_shared(&self) -> SharedPass<'_> {
        self.gate.enter()
    }

    /// Marks the queue closed before its worker is told to stop: pushers
    /// without a lane that have not yet entered the gate will find it so.
    /// The remover then waits for the gate, whose fence orders this store
    /// before its loads (`gate.rs`).
    pub(crate) fn close(&self) {
        // Relaxed: ordered by the fence of `wait_gate_closed`.
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Whether the queue was closed (a pusher without a lane, inside its
    /// gate, whose fence orders this load after its entry).
    pub(crate) fn is_closed(&self) -> bool {
        // Relaxed: ordered by the pusher's gate fence.
        self.closed.load(Ordering::Relaxed)
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
    /// left the gate (`waker.rs`). Every record handed in ends up in the
    /// queue or counted in `counters.dropped`; the records dropped (the new
    /// one, or the evicted oldest) go to `spill`, for the publisher to
    /// reuse. Inline, as [`LaneProducer::try_push`] is in it: the usual
    /// case is a few checks and the slot's stores.
    #[inline(always)]
    pub(crate) fn push_lane<'p>(
        &self,
        lane: &mut LaneProducer,
        item: impl Into<Item<'p>>,
        counters: &Counters,
        spill: impl FnMut(Arc<Record>),
    ) {
        let mut item = item.into();
        // The usual case first, without the policy's steps: no byte bound,
        // places reserved, a ring that holds the item, no flood going on
        // (no lanes kept for evicting, so there is nothing to let go of).
        // What is refused (the ring is full) takes the whole way below,
        // which grows the ring or applies the policy; what it skips is what
        // `LaneEnd::try_push` and `push_into` do only without a place or
        // with a byte bound.
        if self.bytes.is_none()
            && lane.places() > 0
            && lane.peers.is_empty()
            && (lane.is_wide() || !matches!(item, Item::Parts(_)))
        {
            match lane.try_push(item) {
                Ok(()) => return,
                Err(back) => item = back,
            }
        }
        self.push_lane_fully(lane, item, counters, spill);
    }

    /// [`push_lane`](Queue::push_lane) through the overflow policy and the
    /// ring's growth and shrinking: out of line, for the pushes the usual
    /// case does not take.
    #[inline(never)]
    fn push_lane_fully(
        &self,
        lane: &mut LaneProducer,
        item: Item<'_>,
        counters: &Counters,
        mut spill: impl FnMut(Arc<Record>),
    ) {
        let mut end = LaneEnd {
            producer: lane,
            queue: self,
            evicted: false,
            adopted: 0,
            pushed: false,
        };
        self.push_into(&mut end, item, counters, &mut spill);
        // The places of evicted records this push did not use go back to
        // the budget, as the shared channel's do (`push_shared`): a record
        // evicted for bytes passes its place on too, and kept, these were
        // this thread's alone (a review found an idle thread holding nearly
        // the whole capacity after big records, the others dropping).
        let unused = end.adopted.saturating_sub(usize::from(end.pushed));
        end.producer.give_back(unused);
        if !end.evicted && !end.producer.peers.is_empty() {
            // The flood is over for this thread: let go of the lanes.
            end.producer.peers.clear();
            end.producer.peers_version = usize::MAX;
        }
    }

    /// Enqueues `record` through the shared channel (inside a
    /// [`SharedPass`]) under the overflow policy; the pusher wakes the
    /// worker after it left the gate.
    pub(crate) fn push_shared(&self, record: Arc<Record>, counters: &Counters) {
        let mut end = SharedEnd {
            channel: &self.shared,
            holds: 0,
        };
        self.push_into(&mut end, Item::Shared(record), counters, &mut drop);
        // Evicted records' places we did not use after all.
        self.records.release(end.holds);
    }

    /// The overflow policy, over any end.
    fn push_into<'p>(
        &self,
        end: &mut impl End,
        item: Item<'p>,
        counters: &Counters,
        spill: &mut impl FnMut(Arc<Record>),
    ) {
        self.wake_if_filling(|| end.queued());
        let deadline = match self.policy {
            OverflowPolicy::BlockTimeout(timeout) => Instant::now().checked_add(timeout),
            _ => None,
        };
        if !self.reserve_bytes(end, &item, deadline, counters, spill) {
            item.into_shared().map(&mut *spill);
            return;
        }
        let mut item = item;
        let refused = match self.policy {
            OverflowPolicy::DropOldest => {
                for attempt in 1..=EVICT_ATTEMPTS {
                    match end.try_push(item) {
                        Ok(()) => return,
                        Err(back) if attempt == EVICT_ATTEMPTS => item = back,
                        Err(back) => {
                            item = back;
                            // The oldest record's place passes to us: the
                            // retry succeeds, unless the queue was drained
                            // meanwhile and another publisher took the place.
                            self.evict(counters, spill, || end.evict_oldest(self));
                        }
                    }
                }
                item
            }
            OverflowPolicy::DropNewest => match end.try_push(item) {
                Ok(()) => return,
                Err(back) => back,
            },
            OverflowPolicy::Block | OverflowPolicy::BlockTimeout(_) => {
                match self.wait_for(deadline, item, |item| end.try_push(item)) {
                    Ok(()) => return,
                    Err(back) => back,
                }
            }
        };
        self.discard(&refused, counters);
        refused.into_shared().map(spill);
    }

    /// Retries `attempt` with `value` (the blocking policies) until it
    /// succeeds or `deadline` passes (never, if `None`), waking the worker,
    /// which frees room a batch at a time: a short spin usually suffices;
    /// past that the caller sleeps briefly rather than spin on a core the
    /// worker may need. Hands `value` back after the deadline.
    fn wait_for<T>(
        &self,
        deadline: Option<Instant>,
        mut value: T,
        mut attempt: impl FnMut(T) -> Result<(), T>,
    ) -> Result<(), T> {
        let mut step = 0u32;
        loop {
            value = match attempt(value) {
                Ok(()) => return Ok(()),
                Err(back) => back,
            };
            self.waker.wake();
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(value);
            }
            if step < 6 {
                for _ in 0..(1 << step) {
                    spin_loop();
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

    /// Takes the queue's oldest record out (drop-oldest): the one with the
    /// lowest `seq` among the heads of `lanes` and of the shared channel,
    /// whichever thread published it, so that a noisy thread cannot silence
    /// a quiet one. Its place in the budget passes to the caller. `None` if
    /// the queue is empty, or if other parties kept taking the oldest first.
    ///
    /// A source's head is taken only if its `seq` is still below every
    /// other head's as read in the same scan; if a head moved meanwhile
    /// (taken by the worker or another evictor) the scan starts again.
    /// Records published concurrently can still be older than what was
    /// read (their `seq` was taken before ours, their push comes after our
    /// scan): eviction picks the oldest queued, not the oldest in flight.
    fn take_oldest(&self, lanes: &[Arc<Lane>]) -> Option<Evicted> {
        for _ in 0..SCAN_ATTEMPTS {
            // The source with the lowest head (`None`: the shared channel)
            // and the lowest head of the others.
            let mut lowest: Option<(Option<usize>, u64)> = None;
            let mut next = u64::MAX;
            let heads = lanes
                .iter()
                .enumerate()
                .map(|(i, lane)| (Some(i), lane.peek_seq()))
                .chain(std::iter::once((None, self.shared.peek_seq())));
            for (at, seq) in heads {
                let Some(seq) = seq else { continue };
                match lowest {
                    Some((_, low)) if seq > low => next = next.min(seq),
                    _ => {
                        if let Some((_, low)) = lowest {
                            next = next.min(low);
                        }
                        lowest = Some((at, seq));
                    }
                }
            }
            let (at, low) = lowest?;
            // Seqs are unique; should two heads tie, take one of them.
            let limit = next.max(low + 1);
            let taken = match at {
                Some(i) => lanes[i].evict_head_below(limit),
                None => self.shared.evict_head_below(limit).map(Evicted::shared),
            };
            if taken.is_some() {
                return taken;
            }
        }
        None
    }

    /// Evicts the oldest record with `take` (drop-oldest on a full queue)
    /// and counts it; a shared one goes to `spill`. Returns whether there
    /// was one.
    ///
    /// The eviction is counted *before* the record is taken out, so that no
    /// observer (a flush barrier reading the stats after the worker
    /// acknowledged) can see the record neither queued nor counted: taking
    /// is a release operation on the source's head (a lane's CAS, the
    /// channel's lock), which the worker's later takes acquire, so the
    /// count is visible to anyone the worker then synchronises with. If
    /// there was nothing to take (the worker drained meanwhile) the count
    /// is taken back.
    fn evict(
        &self,
        counters: &Counters,
        spill: &mut impl FnMut(Arc<Record>),
        take: impl FnOnce() -> Option<Evicted>,
    ) -> bool {
        Counters::add(&counters.dropped, 1);
        match take() {
            Some(oldest) => {
                if let Some(bytes) = &self.bytes {
                    bytes.release(oldest.size());
                }
                counters.settle_drops(1);
                oldest.record.map(spill);
                true
            }
            None => {
                Counters::sub(&counters.dropped, 1);
                false
            }
        }
    }

    /// Counts `item`, which was queued or reserved, as dropped and
    /// releases its bytes.
    fn discard(&self, item: &Item<'_>, counters: &Counters) {
        if let Some(bytes) = &self.bytes {
            bytes.release(item.size());
        }
        counters.record_drops(1);
    }

    /// Takes the bytes of `record` from the byte budget. When they do not
    /// fit: drop-oldest evicts the queue's oldest records until they do
    /// (at most the queue's capacity of them), the blocking policies wait
    /// for the worker as they do for a place (until `deadline`), drop-newest
    /// refuses. A refused record is counted as dropped. Returns whether the
    /// record may be pushed.
    fn reserve_bytes(
        &self,
        end: &mut impl End,
        item: &Item<'_>,
        deadline: Option<Instant>,
        counters: &Counters,
        spill: &mut impl FnMut(Arc<Record>),
    ) -> bool {
        let Some(bytes) = &self.bytes else {
            return true;
        };
        // Only with a byte bound: a deferred record's size walks its format.
        let size = item.size();
        let fits = match self.policy {
            OverflowPolicy::DropOldest => {
                // As many evictions as the record needs, which the queue's
                // length bounds: each takes a record out, and one that
                // finds none ends the loop. (A cap of 16 made a record that
                // needed more evict 16 and then be dropped too: a review
                // found it.) The count bounds the caller's time should
                // other publishers keep refilling the bytes meanwhile.
                let mut evictions = 0;
                loop {
                    if bytes.try_take(size) {
                        break true;
                    }
                    if evictions == self.capacity {
                        break false;
                    }
                    evictions += 1;
                    if !self.evict(counters, spill, || end.evict_oldest(self)) {
                        break false;
                    }
                }
            }
            OverflowPolicy::DropNewest => bytes.try_take(size),
            OverflowPolicy::Block | OverflowPolicy::BlockTimeout(_) => self
                .wait_for(deadline, (), |()| {
                    bytes.try_take(size).then_some(()).ok_or(())
                })
                .is_ok(),
        };
        if !fits {
            counters.record_drops(1);
        }
        fits
    }
}

/// One end of the queue, as the overflow policy sees it: it says whether a
/// record fit, and evicts the queue's oldest record on request, taking
/// over its place.
trait End {
    fn try_push<'p>(&mut self, item: Item<'p>) -> Result<(), Item<'p>>;
    fn evict_oldest(&mut self, queue: &Queue) -> Option<Evicted>;
    /// Records this end holds, as far as its pusher knows (a hint for
    /// `Queue::wake_if_filling`; 0 where it would cost a lock).
    fn queued(&self) -> usize;
}

/// The publisher's own lane.
struct LaneEnd<'l> {
    producer: &'l mut LaneProducer,
    queue: &'l Queue,
    /// Whether this push evicted (the producer then keeps its copy of the
    /// lane list for the next one).
    evicted: bool,
    /// Places of evicted records this push took over, and whether it
    /// pushed (using one of them, or one of its own).
    adopted: usize,
    pushed: bool,
}

impl End for LaneEnd<'_> {
    fn queued(&self) -> usize {
        self.producer.queued()
    }

    /// Pushes into the lane, growing its ring when the ring (not the
    /// subscription) is full, and shrinking it back when a burst is over:
    /// a lane's memory follows its depth, not the capacity (see
    /// [`RING_START`]).
    fn try_push<'p>(&mut self, item: Item<'p>) -> Result<(), Item<'p>> {
        let pushed = self.push(item);
        self.pushed |= pushed.is_ok();
        pushed
    }

    fn evict_oldest(&mut self, queue: &Queue) -> Option<Evicted> {
        self.evicted = true;
        let producer = &mut *self.producer;
        // Acquire: pairs with `Registry::change`.
        if producer.peers_version != queue.registry.version.load(Ordering::Acquire) {
            producer.peers_version = queue.registry.copy(&mut producer.peers);
        }
        let oldest = queue.take_oldest(&producer.peers)?;
        producer.adopt_place();
        self.adopted += 1;
        Some(oldest)
    }
}

impl LaneEnd<'_> {
    /// [`End::try_push`]'s body.
    fn push<'p>(&mut self, item: Item<'p>) -> Result<(), Item<'p>> {
        let (producer, queue) = (&mut *self.producer, self.queue);
        let wide = producer.is_wide();
        if !wide && matches!(item, Item::Parts(_)) {
            // The lane's first parts: its ring becomes wide, as large.
            queue.renew(producer, producer.capacity(), true);
            return producer.try_push(item);
        }
        let start = if wide { RING_START_WIDE } else { RING_START };
        // Looked at once per chunk of places (at most 32 records).
        if producer.places() == 0 && producer.capacity() > start && producer.outgrew(RING_QUIET) {
            let ring = (producer.capacity() / RING_GROWTH).max(start);
            queue.renew(producer, ring, wide);
        }
        match producer.try_push(item) {
            // With places left, a refusal came from the ring, whose view of
            // the worker's head was just refreshed (with none, from the
            // budget, and that view may be stale: no growth then).
            Err(item)
                if producer.places() > 0
                    && producer.ring_is_full()
                    && producer.capacity() < queue.capacity =>
            {
                let ring = producer
                    .capacity()
                    .saturating_mul(RING_GROWTH)
                    .min(queue.capacity);
                queue.renew(producer, ring, wide);
                producer.try_push(item)
            }
            pushed => pushed,
        }
    }
}

/// The shared channel, for one push.
struct SharedEnd<'c> {
    channel: &'c SharedChannel,
    /// The places of records we evicted, not used yet.
    holds: usize,
}

impl End for SharedEnd<'_> {
    fn queued(&self) -> usize {
        0
    }

    fn try_push<'p>(&mut self, item: Item<'p>) -> Result<(), Item<'p>> {
        // Only shared records come this way (`push_shared`).
        self.channel
            .try_push(item.into_record(), &mut self.holds)
            .map_err(Item::Shared)
    }

    fn evict_oldest(&mut self, queue: &Queue) -> Option<Evicted> {
        // A rare path (dead letters, thread exit): copy the list each time.
        let mut lanes = Vec::new();
        queue.registry.copy(&mut lanes);
        let oldest = queue.take_oldest(&lanes)?;
        self.holds += 1;
        Some(oldest)
    }
}

/// A record with `seq`, for the queue's unit tests.
#[cfg(test)]
pub(crate) fn test_record(seq: u64) -> Arc<Record> {
    use logbus_appenders::{Level, Topic};
    Arc::new(
        Record::builder(Topic::new(Level::Info, "t"))
            .seq(seq)
            .build(),
    )
}

/// The parts of a plain record with `seq` and `message`, for the queue's
/// unit tests.
#[cfg(test)]
pub(crate) fn test_parts(
    seq: u64,
    message: &str,
    thread: logbus_appenders::ThreadInfo,
) -> logbus_appenders::__private_api::Parts<'_> {
    use logbus_appenders::__private_api as produce;
    use logbus_appenders::{Level, Topic};
    static TOPIC: crate::sync::OnceLock<Topic> = crate::sync::OnceLock::new();
    let topic = TOPIC.get_or_init(|| Topic::leak(Level::Info, "t"));
    produce::Parts {
        seq,
        topic: produce::static_topic(topic).expect("leaked"),
        stamp: produce::Stamp::Wall(std::time::SystemTime::UNIX_EPOCH),
        module_path: Some("m"),
        file: Some("f.rs"),
        line: Some(7),
        thread,
        message,
        literal: None,
        deferred: None,
        kv: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_record as record;
    use logbus_appenders::{Level, Topic};

    /// Pushes `0..n` through one lane and returns what the drain takes.
    fn run(policy: OverflowPolicy, capacity: usize, n: u64) -> (Vec<u64>, Counters, Vec<u64>) {
        let (queue, mut drain) = Queue::new(capacity, None, policy);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        let mut spilled = Vec::new();
        for seq in 0..n {
            queue.push_lane(&mut lane, record(seq), &counters, |r| spilled.push(r.seq()));
        }
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        (batch.iter().map(|r| r.seq()).collect(), counters, spilled)
    }

    #[test]
    fn a_run_is_held_once_that_many_records_or_half_the_bytes_are_queued() {
        let counters = Counters::default();
        // Under 128 records a lane reserves one place at a time: the count
        // is exact.
        let (queue, mut drain) = Queue::new(16, None, OverflowPolicy::Block);
        let mut lane = queue.new_lane(false);
        for seq in 0..4 {
            assert!(!queue.holds_run(4), "{seq} queued");
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        assert!(queue.holds_run(4));
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        assert_eq!(batch.len(), 4);
        assert!(!queue.holds_run(1), "taken records are not queued");
        // A byte bound half used holds a run, however few records it is
        // (2 bytes: one record, larger than the bound, gets in alone).
        let (queue, _drain) = Queue::new(16, Some(2), OverflowPolicy::Block);
        let mut lane = queue.new_lane(false);
        assert!(!queue.holds_run(4));
        queue.push_lane(&mut lane, record(0), &counters, drop);
        assert!(queue.holds_run(4));
    }

    /// A push on the policy's way wakes a dozing worker once the queue is
    /// filling (an eighth of a small one), and never one that does not
    /// doze (whose usual wake-up is the protocol's, after the gate).
    #[test]
    fn a_filling_queue_wakes_a_dozing_worker() {
        let counters = Counters::default();
        // 64 records: a lane reserves one place at a time, so every push
        // takes the policy's way.
        let (queue, _drain) = Queue::new(64, None, OverflowPolicy::DropOldest);
        let mut lane = queue.new_lane(false);
        for seq in 0..8 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        assert_eq!(queue.waker.wakes(), 0, "not dozing: not woken");
        queue.waker.set_dozing(true);
        queue.push_lane(&mut lane, record(8), &counters, drop);
        assert_eq!(queue.waker.wakes(), 1, "an eighth full: woken");

        let (queue, _drain) = Queue::new(64, None, OverflowPolicy::DropNewest);
        let mut lane = queue.new_lane(false);
        queue.waker.set_dozing(true);
        for seq in 0..8 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        // The eighth record's push found seven queued.
        assert_eq!(queue.waker.wakes(), 0, "less than an eighth full");
        queue.push_lane(&mut lane, record(8), &counters, drop);
        assert_eq!(queue.waker.wakes(), 1);
        // A byte bound half used wakes it too, however few the records.
        let (queue, _drain) = Queue::new(64, Some(2), OverflowPolicy::DropNewest);
        let mut lane = queue.new_lane(false);
        queue.waker.set_dozing(true);
        queue.push_lane(&mut lane, record(0), &counters, drop);
        assert_eq!(queue.waker.wakes(), 0);
        queue.push_lane(&mut lane, record(1), &counters, drop);
        assert_eq!(queue.waker.wakes(), 1, "the byte bound half used");
        // The default capacity: a lane reserves 32 places at a time and
        // takes the policy's way once per chunk; it wakes the worker at its
        // first chunk from 64 records on (a lane's ring must not fill and
        // grow while the worker naps).
        let (queue, _drain) = Queue::new(DEFAULT_CAPACITY, None, OverflowPolicy::DropOldest);
        let mut lane = queue.new_lane(false);
        queue.waker.set_dozing(true);
        for seq in 0..FILLING as u64 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        assert_eq!(queue.waker.wakes(), 0, "{FILLING} records queued");
        queue.push_lane(&mut lane, record(FILLING as u64), &counters, drop);
        assert_eq!(queue.waker.wakes(), 1, "the next chunk's push");
        // Through the shared channel, every push looks at the queue's count:
        // a quarter of it.
        let (queue, _drain) = Queue::new(64, None, OverflowPolicy::DropOldest);
        queue.waker.set_dozing(true);
        for seq in 0..16 {
            queue.push_shared(record(seq), &counters);
        }
        assert_eq!(queue.waker.wakes(), 0, "the sixteenth push found 15");
        queue.push_shared(record(16), &counters);
        assert_eq!(queue.waker.wakes(), 1, "the seventeenth found 16");
    }

    #[test]
    fn drop_oldest_keeps_the_newest_and_counts_the_rest() {
        let (taken, counters, spilled) = run(OverflowPolicy::DropOldest, 4, 10);
        assert_eq!(taken, [6, 7, 8, 9]);
        assert_eq!(Counters::get(&counters.dropped), 6);
        assert_eq!(spilled, [0, 1, 2, 3, 4, 5]);
    }

    /// Pushes `0..n` through one lane of a queue of `capacity` records
    /// (and a byte bound, if given) and returns, for each, whether the
    /// caller would cede afterwards; `taken(seq)` is the worker's count
    /// then.
    fn cedes(
        policy: OverflowPolicy,
        (capacity, bytes): (usize, Option<usize>),
        n: u64,
        taken: impl Fn(u64) -> u64,
    ) -> Vec<bool> {
        let (queue, _drain) = Queue::new(capacity, bytes, policy);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        (0..n)
            .map(|seq| {
                queue.push_lane(&mut lane, record(seq), &counters, drop);
                lane.leave();
                lane.should_cede(|| taken(seq))
            })
            .collect()
    }

    #[test]
    fn a_caller_that_evicted_cedes_on_every_16th_such_call_unless_the_worker_is_stuck() {
        let n = 3 + 2 * u64::from(CEDE_EVERY);
        // Pushes 0 and 1 fit; every later one evicts. The first evicting
        // call cedes, then every CEDE_EVERY-th: calls 2, 18 and 34.
        let every = |seq: u64| seq >= 2 && (seq - 2) % u64::from(CEDE_EVERY) == 0;
        let expected: Vec<bool> = (0..n).map(every).collect();
        let moving = |seq: u64| seq;
        let two = (2, None);
        assert_eq!(cedes(OverflowPolicy::DropOldest, two, n, moving), expected);
        // Evicting for the byte bound (two test records' worth) too.
        let two_by_bytes = (100, Some(2 * record(0).approx_size()));
        assert_eq!(
            cedes(OverflowPolicy::DropOldest, two_by_bytes, n, moving),
            expected
        );
        // A worker that moves, then takes nothing (stuck in its appender)
        // from call `stalls` on, then moves again from call `resumes`: the
        // lane cedes while it moves, CEDES_UNANSWERED more times into the
        // stall (the first of them sees the stalled count as new), then not
        // until it moves again.
        let every = u64::from(CEDE_EVERY);
        let unanswered = u64::from(CEDES_UNANSWERED);
        let due = |seq: u64| seq >= 2 && (seq - 2) % every == 0;
        let stalls = 2 + 3 * every + 1;
        let resumes = stalls + every * (unanswered + 3);
        let n = resumes + 3 * every;
        let stuck = |seq: u64| {
            if (stalls..resumes).contains(&seq) {
                1_000_000
            } else {
                seq
            }
        };
        let expected: Vec<bool> = (0..n)
            .map(|seq| {
                let into_stall = seq.saturating_sub(stalls).div_ceil(every);
                due(seq) && (!(stalls..resumes).contains(&seq) || into_stall <= unanswered)
            })
            .collect();
        assert_eq!(
            expected.iter().filter(|&&c| c).count() as u64,
            4 + unanswered + 3
        );
        assert_eq!(cedes(OverflowPolicy::DropOldest, two, n, stuck), expected);
        // No eviction, no cede.
        assert_eq!(
            cedes(OverflowPolicy::DropNewest, two, n, moving),
            vec![false; n as usize]
        );
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
    fn a_lane_grows_with_its_backlog_and_shrinks_after_it() {
        const CAPACITY: u64 = 20 * RING_START as u64;
        let (queue, mut drain) = Queue::new(CAPACITY as usize, None, OverflowPolicy::DropNewest);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        assert_eq!(lane.capacity(), RING_START);
        for seq in 0..CAPACITY {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        // 1 -> 4 -> 16 times RING_START (the old rings hold the rest,
        // waiting to drain; the next step would be the capacity).
        assert_eq!(lane.capacity(), 16 * RING_START);
        assert_eq!(lock(&queue.registry.lanes).len(), 3);
        assert_eq!(
            (queue.len() as u64, Counters::get(&counters.dropped)),
            (CAPACITY, 0)
        );
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        let seqs: Vec<u64> = batch.iter().map(|r| r.seq()).collect();
        assert_eq!(
            seqs,
            (0..CAPACITY).collect::<Vec<_>>(),
            "order across the rings"
        );
        // The drained old rings are forgotten. Once many times its size has
        // gone through the ring without filling it, the lane moves to a
        // ring 4 times smaller, and so on down.
        let mut seq = CAPACITY;
        for expected in [4 * RING_START, RING_START] {
            while lane.capacity() != expected {
                queue.push_lane(&mut lane, record(seq), &counters, drop);
                drain.take_batch(&queue, &mut Vec::new(), usize::MAX);
                seq += 1;
                assert!(seq < 1000 * CAPACITY, "never shrank to {expected}");
            }
        }
        assert_eq!(lock(&queue.registry.lanes).len(), 1);
        assert_eq!(Counters::get(&counters.dropped), 0);
    }

    /// A ring that grows back after a shrink waits for twice the quiet
    /// before it shrinks again (a worker that takes in runs empties a
    /// flood's lane often: without this, its ring moved back and forth all
    /// flood long). Not under Miri: it takes about 200,000 pushes and
    /// takes and adds no unsafe path to the test above (about 3 minutes a
    /// seed there); `lane.rs` checks the rule itself under Miri.
    #[test]
    #[cfg_attr(miri, ignore = "slow; lane.rs checks the rule")]
    fn a_ring_that_grew_back_waits_twice_as_long_to_shrink() {
        const CAPACITY: usize = 20 * RING_START;
        let (queue, mut drain) = Queue::new(CAPACITY, None, OverflowPolicy::DropNewest);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        let mut seq = 0;
        // Pushes `n` records (taking each at once if `take`), then takes
        // what is queued; returns how many went into a ring of `ring`.
        let mut push = |lane: &mut LaneProducer, n: usize, take: bool, ring: usize| {
            let mut into = 0;
            for _ in 0..n {
                queue.push_lane(lane, record(seq), &counters, drop);
                seq += 1;
                into += usize::from(lane.capacity() == ring);
                if take {
                    drain.take_batch(&queue, &mut Vec::new(), usize::MAX);
                }
                if lane.capacity() < ring && take {
                    return into;
                }
            }
            drain.take_batch(&queue, &mut Vec::new(), usize::MAX);
            into
        };
        let quiet = 4 * RING_START * RING_QUIET;
        // A backlog grows the ring; a quiet flood shrinks it after
        // RING_QUIET times its size, to the chunk's end.
        let grown = push(&mut lane, 2 * RING_START, false, 4 * RING_START);
        assert_eq!(lane.capacity(), 4 * RING_START);
        let into = grown + push(&mut lane, 4 * quiet, true, 4 * RING_START);
        assert_eq!(lane.capacity(), RING_START);
        assert!((quiet + 1..=quiet + 32).contains(&(into - 1)), "{into}");
        // Grown back, it shrinks only after twice that.
        let grown = push(&mut lane, 2 * RING_START, false, 4 * RING_START);
        assert_eq!(lane.capacity(), 4 * RING_START);
        let into = grown + push(&mut lane, 4 * quiet, true, 4 * RING_START);
        assert_eq!(lane.capacity(), RING_START);
        assert!(
            (2 * quiet + 1..=2 * quiet + 32).contains(&(into - 1)),
            "{into}"
        );
        assert_eq!(Counters::get(&counters.dropped), 0);
    }

    /// A ring that fills while its producer still holds places: the lane's
    /// first try (`push_lane`) is refused, and the whole way grows the ring,
    /// under every policy, dropping nothing (the review of the lane's first
    /// try found no test reaching this: in the test above the ring fills
    /// exactly when the places run out).
    #[test]
    fn a_ring_that_fills_with_places_left_grows_under_every_policy() {
        let capacity: u64 = if cfg!(miri) { 200 } else { 2_000 };
        for policy in [
            OverflowPolicy::DropOldest,
            OverflowPolicy::DropNewest,
            OverflowPolicy::Block,
            OverflowPolicy::BlockTimeout(Duration::from_secs(3600)),
        ] {
            let (queue, mut drain) = Queue::new(capacity as usize, None, policy);
            let counters = Counters::default();
            let mut lane = queue.new_lane(false);
            let mut left_when_full = None;
            for seq in 0..capacity {
                if lane.ring_is_full() && left_when_full.is_none() {
                    left_when_full = Some(lane.places());
                }
                queue.push_lane(&mut lane, record(seq), &counters, drop);
            }
            assert!(
                left_when_full.is_some_and(|places| places > 0),
                "{policy:?}"
            );
            assert_eq!(lane.capacity(), capacity as usize, "{policy:?}");
            let mut batch = Vec::new();
            drain.take_batch(&queue, &mut batch, usize::MAX);
            let seqs: Vec<u64> = batch.iter().map(|r| r.seq()).collect();
            assert_eq!(seqs, (0..capacity).collect::<Vec<_>>(), "{policy:?}");
            assert_eq!(Counters::get(&counters.dropped), 0, "{policy:?}");
        }
    }

    /// A shared push (a dead letter) larger than one queued record evicts as
    /// many as it needs (found in review: it stopped after one).
    #[test]
    fn a_large_shared_push_evicts_as_many_records_as_it_needs() {
        let small = record(0).approx_size();
        let (queue, mut drain) = Queue::new(100, Some(2 * small + 5), OverflowPolicy::DropOldest);
        let counters = Counters::default();
        let big = Record::builder(Topic::new(Level::Info, "t"))
            .seq(2)
            .message("x".repeat(small))
            .build();
        for record in [record(0), record(1), Arc::new(big)] {
            let _pass = queue.enter_shared();
            queue.push_shared(record, &counters);
        }
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        assert_eq!(batch.iter().map(|r| r.seq()).collect::<Vec<_>>(), [2]);
        assert_eq!(Counters::get(&counters.dropped), 2);
        assert_eq!(queue.records.used(), 0, "no place kept by the evictions");
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

    /// A record `seq` whose message is `len` bytes.
    fn large(seq: u64, len: usize) -> Arc<Record> {
        let record = Record::builder(Topic::new(Level::Info, "t"))
            .seq(seq)
            .message("x".repeat(len));
        Arc::new(record.build())
    }

    /// A record larger than many queued ones evicts as many as it needs
    /// from a lane, and is kept: 18 for a record 17 small ones long (a
    /// first version stopped at 16 evictions and then dropped it too).
    #[test]
    fn a_large_record_into_a_lane_evicts_as_many_as_it_needs() {
        let small = record(0).approx_size();
        let (queue, mut drain) = Queue::new(100, Some(20 * small), OverflowPolicy::DropOldest);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        for seq in 0..20 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        queue.push_lane(&mut lane, large(20, 17 * small), &counters, drop);
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        let seqs: Vec<u64> = batch.iter().map(|r| r.seq()).collect();
        assert_eq!(seqs, [18, 19, 20]);
        assert_eq!(Counters::get(&counters.dropped), 18);
    }

    /// Places of records evicted for bytes that a push does not use go
    /// back to the budget: after a big record evicted eight small ones and
    /// the worker took it, another thread fills the queue again without a
    /// drop (a first version left seven of the eight places with the big
    /// record's thread, and the other thread's pushes found the queue full).
    #[test]
    fn places_of_records_evicted_for_bytes_go_back_to_the_budget() {
        let small = record(0).approx_size();
        let (queue, mut drain) = Queue::new(8, Some(8 * small), OverflowPolicy::DropOldest);
        let counters = Counters::default();
        let mut a = queue.new_lane(false);
        let mut b = queue.new_lane(false);
        for seq in 0..8 {
            queue.push_lane(&mut b, record(seq), &counters, drop);
        }
        let big = large(8, 7 * small);
        assert_eq!(big.approx_size(), 8 * small);
        queue.push_lane(&mut a, big, &counters, drop);
        assert_eq!(Counters::get(&counters.dropped), 8, "it evicted all eight");
        let mut batch = Vec::new();
        assert_eq!(drain.take_batch(&queue, &mut batch, usize::MAX), 1);
        assert!(
            a.places() <= 1,
            "the big record's thread holds {}",
            a.places()
        );
        for seq in 10..18 {
            queue.push_lane(&mut b, record(seq), &counters, drop);
        }
        assert_eq!((queue.len(), Counters::get(&counters.dropped)), (8, 8));
    }

    /// Parts count in the byte budget as the records made of them do: a
    /// mix of parts and shared records, evicted and drained, gives back
    /// exactly what it took (the bound lets two of each in afterwards).
    #[test]
    fn parts_count_in_the_byte_bound_as_their_records_do() {
        let texts: Vec<String> = (0..8).map(|i| "t".repeat(i * 5)).collect();
        let (queue, mut drain) = Queue::new(
            100,
            Some(3 * record(0).approx_size() + 40),
            OverflowPolicy::DropOldest,
        );
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        let thread = crate::thread_role::thread_info();
        for (seq, text) in texts.iter().enumerate() {
            let seq = seq as u64;
            lane.busy().enter();
            if seq % 2 == 0 {
                let parts = test_parts(seq, text, thread);
                queue.push_lane(&mut lane, Item::parts(&parts).unwrap(), &counters, drop);
            } else {
                queue.push_lane(&mut lane, record(seq), &counters, drop);
            }
            lane.leave();
        }
        let mut batch = Vec::new();
        drain.take_batch(&queue, &mut batch, usize::MAX);
        let dropped = Counters::get(&counters.dropped);
        assert_eq!(batch.len() as u64 + dropped, 8);
        assert!(dropped > 0, "the bound evicted");
        for record in &batch {
            if record.seq() % 2 == 0 {
                assert_eq!(record.message(), texts[record.seq() as usize]);
            }
        }
        // Everything given back: three records' worth fit again.
        for seq in 8..11 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        assert_eq!(
            (queue.len(), Counters::get(&counters.dropped)),
            (3, dropped)
        );
    }
}
