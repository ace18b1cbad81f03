//! Lanes: one bounded ring per (publishing thread, subscription), the
//! caller's fast path into a subscription's queue.
//!
//! A shared multi-producer queue costs the caller two or three contended
//! read-modify-write operations per record (the tail, the slot stamp, the
//! waker check), and each one waits for a cache line the worker's core just
//! touched; on the 2-vCPU machines we measure on that is 400-600 ns per
//! record. A lane has a single producer (the thread that owns it, through
//! its thread-local route view), so a push is plain stores into the slot (a
//! shared record's pointer, or a plain record's parts: `slot.rs`) and a
//! `Release` store of the producer's own tail index: no read-modify-write,
//! nothing that stalls on the worker's cache lines.
//!
//! # Protocol
//!
//! Indices grow without wrapping (a `usize` of records never overflows in
//! practice); slot `i & mask` holds record `i`.
//!
//! - `tail` is written only by the producer: it fills slot `tail`, then
//!   stores `tail + 1` with `Release`.
//! - `head` is advanced only by compare-and-swap, by the worker taking a
//!   run of records or by the producer evicting the oldest one (drop-oldest).
//!   Whoever's CAS moves `head` past index `i` owns record `i`: only that
//!   party turns the slot's pointer back into an `Arc`, or builds a record
//!   from its parts. A party whose CAS fails forgets what it read (copies
//!   of integers and raw pointers, never dereferenced).
//! - The producer writes slot `i` only when `i - capacity < head`, i.e. the
//!   previous occupant was taken: the reader of that occupant read the slot
//!   before its CAS (`AcqRel`), and the producer's `Acquire` load of `head`
//!   saw that CAS, so the overwrite happens after the read.
//! - A taker that loaded `tail` with `Acquire` sees every slot below it
//!   filled. If the producer evicted and overwrote one of those slots
//!   meanwhile, `head` moved, the taker's CAS fails and it retries.
//!
//! `head <= tail` always holds: takers take at most up to the `tail` they
//! loaded, and the producer evicts only from a full lane.
//!
//! Every field of a slot is an atomic, so a taker reading a slot the
//! producer is overwriting races on atomics, not undefined behaviour
//! (`slot.rs`, "Why every field is an atomic").

use logbus_appenders::{Record, ThreadInfo};

use super::budget::Budget;
use super::gate::BusyFlag;
use super::slot::{Evicted, Item, Reading, Ring};
use super::{CEDES_UNANSWERED, CEDE_EVERY};
use crate::recycle::Spares;
use crate::sync::{Arc, AtomicBool, AtomicUsize, CacheLine, Ordering};

/// Most records taken by one compare-and-swap (the slots are read into a
/// buffer of this size first, [`Taker`]'s).
const TAKE_RUN: usize = 32;

/// How many times a producer's quiet (`LaneProducer::outgrew`) doubles, at
/// most, for rings that grew back after it shrank them. A worker that
/// takes in runs empties a flood's lane after each run, so the lane is
/// often found empty, and a one-thread flood of 1,000,000 records moved
/// its ring between 256 and 1,024 wide slots about 47 times, each time
/// mapping and populating a 128 KiB ring on the caller's thread (which then
/// waited in the kernel for the worker's unmapping of the last one). At 4,
/// a ring waits for 256 times its size without filling before it shrinks
/// (262,144 records for 1,024 slots: tens of milliseconds of a flooding
/// thread, minutes of one that logs ten thousand a second): a grown ring,
/// up to the subscription's capacity, is kept that much longer. Two
/// shrinks in a row (the smaller ring stayed quiet too) undo one doubling.
const REGROWN_MOST: u32 = 4;

/// A worker's means of taking: its spare records, to rebuild the records
/// that travelled as parts in, and the buffer a run of slots is read into
/// before the compare-and-swap that takes them. The buffer is kept, not
/// made (and zeroed, 4 KiB) on each take: a worker that keeps up takes a
/// record or two at a time.
pub(crate) struct Taker {
    pub(crate) spares: Spares,
    run: Run,
    /// How many records the take rebuilt from parts: the worker's alone
    /// until it hands them on, so when a take's records all are, their
    /// times are converted without a compare-and-swap once it has noted
    /// the counter (`Drain::take_batch`, `produce::settle_time`).
    pub(crate) rebuilt: usize,
}

/// The buffer a run of slots is read into ([`Taker`]).
struct Run(Box<[Reading; TAKE_RUN]>);

// SAFETY: what keeps `Run` from being `Send` is the raw pointers in its
// readings. A reading is written and read only inside one `take_below`
// call, on the thread making it: what a pointer in it names is owned by
// that call once its compare-and-swap succeeds, and the call turns it into
// a record (`Reading::take`) before it returns. Between calls the readings
// are dead bytes, overwritten before they are read again (`take_below`),
// so moving a `Run` to another thread moves no access to what they point
// to.
unsafe impl Send for Run {}

impl Default for Taker {
    fn default() -> Taker {
        Taker {
            spares: Spares::default(),
            run: Run(Box::new([Reading::EMPTY; TAKE_RUN])),
            rebuilt: 0,
        }
    }
}

/// The shared part of a lane.
pub(crate) struct Lane {
    /// The next index to take. Advanced only by CAS (see the module docs).
    head: CacheLine<AtomicUsize>,
    /// The next index to fill. Written only by the producer.
    tail: CacheLine<AtomicUsize>,
    /// The producer's side of the subscription's gate (`gate.rs`): set
    /// while it enqueues a record routed with a given snapshot. Written only
    /// by the producer.
    busy: BusyFlag,
    /// Set (`Release`) when the producer is gone (its thread exited or its
    /// view moved on): once the lane is then empty, the worker forgets it.
    closed: AtomicBool,
    slots: Ring,
    mask: usize,
    /// The most records the lane holds (at most `slots.len()`).
    capacity: usize,
    /// The subscription's places, shared with its other lanes.
    budget: Arc<Budget>,
    /// The producer's thread (the one that made the lane): the thread of
    /// every record that travels as parts (`slot.rs`).
    thread: ThreadInfo,
}

impl Lane {
    /// A lane of up to `capacity` records (at least 1), drawing on `budget`.
    fn new(capacity: usize, budget: Arc<Budget>, wide: bool) -> Lane {
        let capacity = capacity.max(1);
        let size = capacity.next_power_of_two();
        budget.lane_opened();
        Lane {
            head: CacheLine(AtomicUsize::new(0)),
            tail: CacheLine(AtomicUsize::new(0)),
            busy: BusyFlag::default(),
            closed: AtomicBool::new(false),
            slots: Ring::new(size, wide),
            mask: size - 1,
            capacity,
            budget,
            thread: crate::thread_role::thread_info(),
        }
    }

    /// A new lane and its producer, with a wide ring (`slot.rs`) if `wide`.
    pub(crate) fn create(
        capacity: usize,
        budget: Arc<Budget>,
        wide: bool,
    ) -> (Arc<Lane>, LaneProducer) {
        let lane = Lane::shared(capacity, budget, wide);
        let producer = LaneProducer {
            lane: Arc::clone(&lane),
            tail: 0,
            head_seen: 0,
            places: 0,
            peers: Vec::new(),
            peers_version: usize::MAX,
            pushed_since_move: 0,
            shrank: false,
            regrown: 0,
            retired: Vec::new(),
            evicted: false,
            evicting_calls: 0,
            taken_when_ceded: None,
            cedes_unanswered: 0,
        };
        (lane, producer)
    }

    /// A new lane, for a producer to move to (`LaneProducer::replace`).
    pub(crate) fn shared(capacity: usize, budget: Arc<Budget>, wide: bool) -> Arc<Lane> {
        Arc::new(Lane::new(capacity, budget, wide))
    }

    /// Records in the lane now (a moment's reading under concurrency).
    pub(crate) fn len(&self) -> usize {
        // Head first: both only grow, so the difference never underflows
        // by more than a concurrent take, which saturates to 0.
        let head = self.head.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Acquire);
        tail.saturating_sub(head)
    }

    /// The index the producer will fill next: every record pushed before
    /// this call (and visible to it) is below.
    pub(crate) fn tail(&self) -> usize {
        self.tail.load(Ordering::Acquire)
    }

    /// The next index to take: every record below has been taken or
    /// evicted.
    pub(crate) fn head(&self) -> usize {
        self.head.load(Ordering::Acquire)
    }

    /// Whether the producer is gone and nothing is left: the lane can be
    /// forgotten.
    pub(crate) fn is_finished(&self) -> bool {
        // Acquire on `closed` first: the producer's last `tail` store
        // happens before its `closed` store, so `len` then sees it.
        self.closed.load(Ordering::Acquire) && self.len() == 0
    }

    /// The `seq` of the oldest record, if any. A hint: the record may be
    /// taken or evicted meanwhile; but the `seq` is that record's, never
    /// that of a record that overwrote its slot.
    pub(crate) fn peek_seq(&self) -> Option<u64> {
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            // Acquire: the slot below `tail` is filled.
            if head >= self.tail.load(Ordering::Acquire) {
                return None;
            }
            // Acquire: pairs with the producer's Release store of the seq.
            // The producer overwrites a slot only after it saw `head` move
            // past the slot's record (Acquire on `head`), so if we read an
            // overwriting seq, our reread of `head` below sees it moved.
            let seq = self.slots.seq(head & self.mask).load(Ordering::Acquire);
            let now = self.head.load(Ordering::Acquire);
            if now == head {
                return Some(seq);
            }
            head = now;
        }
    }

    /// Takes the oldest record out if its `seq` is below `limit`, for a
    /// publisher evicting the queue's oldest record (drop-oldest, from any
    /// thread's lane): its place in the budget passes to the evictor, which
    /// pushes into it. `None` if the lane is empty, its oldest record is not
    /// below `limit`, or another party took it first.
    pub(crate) fn evict_head_below(&self, limit: u64) -> Option<Evicted> {
        let head = self.head.load(Ordering::Acquire);
        // Acquire: pairs with the producer's `Release` store of `tail`, so
        // the slot is filled.
        if head >= self.tail.load(Ordering::Acquire) {
            return None;
        }
        let at = head & self.mask;
        // Acquire, as in `peek_seq`; a stale or overwritten reading fails
        // the CAS below, since the slot is overwritten only after `head`
        // moved.
        let seq = self.slots.seq(at).load(Ordering::Acquire);
        if seq >= limit {
            return None;
        }
        let reading = self.slots.read_for_eviction(at);
        // AcqRel: as in `take_below`.
        self.head
            .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: our CAS moved `head` past the slot's index after we read
        // it, which makes us its record's only owner (module docs).
        Some(unsafe { reading.evicted(seq) })
    }

    /// Takes up to `max` of the oldest records into `out` (the worker's
    /// side); returns how many.
    #[cfg(test)]
    pub(crate) fn take(&self, max: usize, out: &mut Vec<Arc<Record>>) -> usize {
        self.take_below(u64::MAX, max, out, &mut Taker::default(), None)
    }

    /// Takes up to `max` of the oldest records whose `seq` is below `limit`
    /// into `out`; returns how many (0 if the oldest is not below `limit`:
    /// the merge then reads the lane's head again, which has moved). A
    /// record that travelled as parts is rebuilt in one of `taker`'s
    /// spares. The records' places go back to the lane's budget, and their
    /// sizes to `bytes` (the queue's byte bound, if it has one), as soon as
    /// they are taken. A reading of `taker`'s buffer left from an earlier
    /// take is overwritten before it is read, in the parts that are read:
    /// the rest is bytes of an older reading, which nothing reads.
    pub(crate) fn take_below(
        &self,
        limit: u64,
        max: usize,
        out: &mut Vec<Arc<Record>>,
        taker: &mut Taker,
        bytes: Option<&Budget>,
    ) -> usize {
        let Taker {
            spares,
            run: Run(run),
            rebuilt,
        } = taker;
        let mut taken = 0;
        while taken < max {
            let head = self.head.load(Ordering::Acquire);
            // Acquire: pairs with the producer's `Release` store of `tail`,
            // so the slots below it are filled.
            let tail = self.tail.load(Ordering::Acquire);
            let available = tail.saturating_sub(head).min(max - taken).min(TAKE_RUN);
            let mut n = 0;
            while n < available {
                let at = (head + n) & self.mask;
                // Acquire, as in `peek_seq`. If the producer overwrites the
                // slot meanwhile, `head` moved and the CAS below fails.
                if self.slots.seq(at).load(Ordering::Acquire) >= limit {
                    break;
                }
                self.slots.read_into(at, &mut run[n]);
                n += 1;
            }
            if n == 0 {
                break;
            }
            // AcqRel: Release publishes our slot reads to the producer's
            // `Acquire` load of `head` before it overwrites them.
            if self
                .head
                .compare_exchange(head, head + n, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // The producer evicted the oldest record meanwhile; what we
                // read may be stale. Forget it and read again.
                continue;
            }
            // The records are ours and out of the queue: their places and
            // bytes go back before they are rebuilt (a deferred message is
            // formatted as it is: a run of long ones takes milliseconds),
            // for a publisher that waits for one, or a byte-bounded queue
            // that would drop a record for want of them.
            self.budget.release(n);
            if let Some(bytes) = bytes {
                // SAFETY: as for `take` below: our CAS made us the owner of
                // each slot's record.
                bytes.release(
                    run[..n]
                        .iter()
                        .map(|reading| unsafe { reading.size() })
                        .sum(),
                );
            }
            for reading in &run[..n] {
                *rebuilt += usize::from(!reading.is_shared());
                // SAFETY: our CAS moved `head` past each slot's index after
                // we read it, which makes us its record's only owner
                // (module docs): no one else will take it.
                out.push(unsafe { reading.take(self.thread, spares) });
            }
            taken += n;
            if n < available {
                break; // reached `limit`
            }
        }
        taken
    }

    /// The producer's gate flag, for the remover's side of the gate.
    pub(crate) fn busy(&self) -> &BusyFlag {
        &self.busy
    }

    /// The producer's thread.
    #[cfg(test)]
    pub(crate) fn thread(&self) -> ThreadInfo {
        self.thread
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // We are the last holder: no producer or taker is left.
        let head = *self.head.0.get_mut();
        let tail = *self.tail.0.get_mut();
        for i in head..tail {
            if let Some(record) = self.slots.shared_record(i & self.mask) {
                // SAFETY: records in [head, tail) were pushed and never
                // taken, so the lane still owns each shared record's
                // pointer (from `Arc::into_raw`) exactly once.
                drop(unsafe { Arc::from_raw(record) });
            }
        }
    }
}

/// The producer's end of a lane, owned by one thread's route view.
pub(crate) struct LaneProducer {
    lane: Arc<Lane>,
    /// Our own copy of `lane.tail` (only we write it).
    tail: usize,
    /// The last `head` we loaded: a lower bound of the real one, enough to
    /// know there is room without touching the worker's cache line.
    head_seen: usize,
    /// Places reserved from the budget and not used yet.
    places: usize,
    /// The queue's lanes as this producer last saw them, for evicting the
    /// queue's oldest record (`Queue::take_oldest`), and the registry
    /// version they are from. Kept while the producer keeps evicting, so
    /// that a flood does not lock the registry per record; emptied after
    /// the next push that needs no eviction, so that it does not keep
    /// finished lanes alive.
    pub(super) peers: Vec<Arc<Lane>>,
    pub(super) peers_version: usize,
    /// Records pushed since the producer last moved to another lane: a
    /// burst is taken to be over only after many times the ring's size went
    /// through without filling it (see `Queue::RING_START`).
    pushed_since_move: usize,
    /// Whether the producer's last move was to a smaller ring, and how many
    /// times (at most [`REGROWN_MOST`], less one for each second shrink in
    /// a row) a move to a larger ring followed such a one: each doubles the
    /// quiet [`outgrew`](Self::outgrew) asks for.
    shrank: bool,
    regrown: u32,
    /// Lanes this producer replaced inside its current gate (`replace`):
    /// their busy flags stay set until it leaves, so that a remover that
    /// saw only an old lane still waits for the push into the new one.
    retired: Vec<Arc<Lane>>,
    /// Whether a push inside the current gate evicted a record to make
    /// room; how many log calls that evicted came since the last one that
    /// was due to cede, that one included, modulo [`CEDE_EVERY`] (kept
    /// across floods and ring swaps); and the worker's count of taken
    /// records at the last due call (see `should_cede`).
    evicted: bool,
    evicting_calls: u32,
    taken_when_ceded: Option<u64>,
    /// Due calls since the worker's count last moved, suppressed ones
    /// included (saturating).
    cedes_unanswered: u32,
}

impl LaneProducer {
    /// Appends `item`, or hands it back if the lane is full. Inline in
    /// each push (`Queue::push_lane`): out of line, its frame cost each
    /// push about 20 instructions saved and restored (`benches/README.md`,
    /// "Twenty-fifth session").
    #[inline(always)]
    pub(crate) fn try_push<'p>(&mut self, item: impl Into<Item<'p>>) -> Result<(), Item<'p>> {
        let item = item.into();
        let lane = &*self.lane;
        // A lane is its thread's (its view is thread-local): the slot does
        // not carry the thread. Parts go only into a wide ring
        // (`LaneEnd::try_push` moves the lane first).
        debug_assert!(!matches!(item, Item::Parts(p) if p.thread.id != lane.thread.id));
        if self.places == 0 {
            self.places = lane.budget.reserve_chunk();
            if self.places == 0 {
                return Err(item); // the subscription is full
            }
        }
        if self.tail - self.head_seen >= lane.capacity {
            // Acquire: pairs with the taker's CAS, so the slot we are about
            // to overwrite was read before.
            self.head_seen = lane.head.load(Ordering::Acquire);
            if self.tail - self.head_seen >= lane.capacity {
                return Err(item);
            }
        }
        // Every store is published to takers by the `Release` store of
        // `tail` (`slot.rs`).
        lane.slots.put(self.tail & lane.mask, item);
        self.tail += 1;
        self.places -= 1;
        self.pushed_since_move += 1;
        lane.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// The most records the producer's current lane holds.
    pub(crate) fn capacity(&self) -> usize {
        self.lane.capacity
    }

    /// Whether the producer's current lane can hold parts (`slot.rs`).
    pub(crate) fn is_wide(&self) -> bool {
        self.lane.slots.is_wide()
    }

    /// Records in the producer's current lane, as far as it knows (a hint:
    /// the worker's `head`, read `Relaxed`).
    pub(crate) fn queued(&self) -> usize {
        self.tail
            .saturating_sub(self.lane.head.load(Ordering::Relaxed))
    }

    /// Places reserved from the budget and not used yet.
    pub(crate) fn places(&self) -> usize {
        self.places
    }

    /// After a refused push: whether the lane's own ring was full (rather
    /// than the subscription's budget).
    pub(crate) fn ring_is_full(&self) -> bool {
        self.tail - self.head_seen >= self.lane.capacity
    }

    /// Whether the lane's ring is larger than this producer needs: more
    /// than `quiet` times its size (doubled for each time a ring grew back
    /// after a shrink, see `regrown`) went through it since the producer
    /// moved to it, and everything was taken (one `Acquire` load of the
    /// worker's `head`, made only once the count is reached: call it
    /// rarely).
    pub(crate) fn outgrew(&mut self, quiet: usize) -> bool {
        let quiet = quiet.saturating_mul(1 << self.regrown);
        if self.pushed_since_move <= self.lane.capacity.saturating_mul(quiet) {
            return false;
        }
        self.head_seen = self.lane.head.load(Ordering::Acquire);
        self.head_seen == self.tail
    }

    /// Moves to `lane` (registered already), inside the gate: the new
    /// lane's busy flag is set, the old lane is closed (the drain forgets it
    /// once it is empty; until then its records merge by `seq` with the new
    /// lane's, so this thread's order holds) and its flag stays set until
    /// [`leave`](LaneProducer::leave). The places reserved carry over.
    /// This is how a lane grows under a burst and shrinks after it.
    pub(crate) fn replace(&mut self, lane: Arc<Lane>) {
        let (to, from) = (lane.capacity, self.lane.capacity);
        if to > from && self.shrank {
            self.regrown = (self.regrown + 1).min(REGROWN_MOST);
        } else if to < from && self.shrank {
            self.regrown = self.regrown.saturating_sub(1);
        }
        if to != from {
            self.shrank = to < from;
        }
        lane.busy.enter();
        let old = std::mem::replace(&mut self.lane, lane);
        old.budget.lane_closed();
        // Release: our last `tail` store happens before, for the drain's
        // `Acquire` in `is_finished`.
        old.closed.store(true, Ordering::Release);
        self.tail = 0;
        self.head_seen = 0;
        self.pushed_since_move = 0;
        self.retired.push(old);
    }

    /// Leaves the gate: clears the busy flags of the current lane and of
    /// the lanes replaced inside it (`gate.rs`).
    #[inline]
    pub(crate) fn leave(&mut self) {
        self.lane.busy.leave();
        // Almost always empty (a lane replaced inside this gate): the check
        // spares the caller's path a `Drain`'s setup and drop (about 40
        // instructions a record, `benches/peers/callgrind.sh`).
        if !self.retired.is_empty() {
            for old in self.retired.drain(..) {
                old.busy.leave();
            }
        }
    }

    /// Whether the publisher should cede its core after this log call
    /// (`queue::cede`), asked once per log call after it left the gate: a
    /// push inside the gate evicted a record, this is this producer's first
    /// such call ever or a multiple of [`CEDE_EVERY`] after it (the count
    /// is not reset when a flood ends), and the worker took
    /// records within this lane's last [`CEDES_UNANSWERED`] cedes (`taken`
    /// reads the subscription's count of records taken; a worker stuck in
    /// its appender cannot use the core, and ceding to it would only slow
    /// the caller down).
    #[must_use]
    #[inline]
    pub(crate) fn should_cede(&mut self, taken: impl FnOnce() -> u64) -> bool {
        // Almost every call: one load and a branch, no store.
        if !self.evicted {
            return false;
        }
        self.evicted = false;
        self.cede_due(taken)
    }

    /// The rest of [`should_cede`](LaneProducer::should_cede), for a call
    /// that evicted.
    #[cold]
    #[inline(never)]
    fn cede_due(&mut self, taken: impl FnOnce() -> u64) -> bool {
        let due = self.evicting_calls == 0;
        self.evicting_calls = (self.evicting_calls + 1) % CEDE_EVERY;
        if !due {
            return false;
        }
        let taken = taken();
        if self.taken_when_ceded != Some(taken) {
            self.taken_when_ceded = Some(taken);
            self.cedes_unanswered = 0;
        }
        // Ceding to a worker that does not move: a few times (it may be
        // waiting for a core the other cedes gave elsewhere), then not
        // until it moves (it is stuck in its appender).
        self.cedes_unanswered = self.cedes_unanswered.saturating_add(1);
        self.cedes_unanswered <= CEDES_UNANSWERED
    }

    /// Takes over the place of a record this producer evicted from another
    /// lane (or from its own with [`Lane::evict_head_below`]).
    pub(crate) fn adopt_place(&mut self) {
        self.places += 1;
        self.evicted = true;
    }

    /// Gives up to `n` of the places this producer holds back to the
    /// budget (places it took over by evicting and did not use).
    pub(crate) fn give_back(&mut self, n: usize) {
        let n = n.min(self.places);
        self.places -= n;
        self.lane.budget.release(n);
    }

    /// This producer's gate flag (see `gate.rs`).
    pub(crate) fn busy(&self) -> &BusyFlag {
        &self.lane.busy
    }
}

impl Drop for LaneProducer {
    fn drop(&mut self) {
        for old in self.retired.drain(..) {
            old.busy.leave();
        }
        // Release: our last `tail` store happens before this, for the
        // worker's `Acquire` in `is_finished`.
        self.lane.budget.release(self.places);
        self.lane.budget.lane_closed();
        self.lane.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_record as record;

    /// A producer evicting its own oldest record, as `Queue::take_oldest`
    /// does when that record is the queue's oldest.
    fn evict(producer: &mut LaneProducer, lane: &Lane) -> Option<u64> {
        let oldest = lane.evict_head_below(u64::MAX)?;
        producer.adopt_place();
        Some(oldest.seq)
    }

    fn seqs(records: &[Arc<Record>]) -> Vec<u64> {
        records.iter().map(|r| r.seq()).collect()
    }

    #[test]
    fn fifo_and_full() {
        let (lane, mut p) = Lane::create(3, Arc::new(Budget::new(3)), false);
        for i in 0..3 {
            assert!(p.try_push(record(i)).is_ok());
        }
        let back = p.try_push(record(3)).unwrap_err();
        assert_eq!(back.seq(), 3);
        assert_eq!(lane.len(), 3);
        let mut out = Vec::new();
        assert_eq!(lane.take(2, &mut out), 2);
        assert_eq!(seqs(&out), [0, 1]);
        assert!(p.try_push(record(4)).is_ok());
        assert_eq!(lane.take(10, &mut out), 2);
        assert_eq!(seqs(&out), [0, 1, 2, 4]);
        assert_eq!(lane.len(), 0);
    }

    #[test]
    fn lanes_share_the_subscription_budget() {
        let budget = Arc::new(Budget::new(4));
        let (a, mut pa) = Lane::create(4, Arc::clone(&budget), false);
        let (_b, mut pb) = Lane::create(4, Arc::clone(&budget), false);
        for i in 0..3 {
            pa.try_push(record(i)).unwrap();
        }
        pb.try_push(record(3)).unwrap();
        // Four queued in all: both lanes are full, whatever their own room.
        assert!(pa.try_push(record(4)).is_err());
        assert!(pb.try_push(record(5)).is_err());
        // Taking gives places back; evicting keeps the place in the lane.
        let mut out = Vec::new();
        assert_eq!(a.take(2, &mut out), 2);
        assert_eq!(evict(&mut pa, &a), Some(2));
        pa.try_push(record(6)).unwrap();
        pb.try_push(record(7)).unwrap();
        pb.try_push(record(8)).unwrap();
        assert!(pb.try_push(record(9)).is_err());
        // A closed producer gives back what it reserved and did not use.
        drop(pa);
        assert_eq!(budget.reserve_chunk(), 0);
    }

    /// A producer whose ring grows back after a shrink asks for twice the
    /// quiet before the next shrink, up to [`REGROWN_MOST`] doublings; a
    /// move to a ring as large (narrow to wide) changes nothing; a second
    /// shrink in a row undoes a doubling.
    #[test]
    fn a_ring_that_grows_back_after_a_shrink_must_stay_quiet_longer() {
        let budget = Arc::new(Budget::new(1 << 20));
        let (_, mut p) = Lane::create(64, Arc::clone(&budget), false);
        // The quiet (a power of two from 16) at which the empty lane is
        // outgrown: not with that many times its size pushed since the
        // move, but with one record more.
        let threshold = |p: &mut LaneProducer| {
            (0..=REGROWN_MOST).map(|k| 16 << k).find(|&quiet| {
                p.pushed_since_move = p.capacity() * quiet;
                let before = p.outgrew(16);
                p.pushed_since_move += 1;
                !before && p.outgrew(16)
            })
        };
        let move_to = |p: &mut LaneProducer, ring: usize, wide: bool| {
            let lane = Lane::shared(ring, Arc::clone(&budget), wide);
            p.replace(lane);
            p.leave();
        };
        assert_eq!(threshold(&mut p), Some(16));
        move_to(&mut p, 256, false); // a growth, not after a shrink
        assert_eq!(threshold(&mut p), Some(16));
        let mut expected = 16;
        for _ in 0..REGROWN_MOST + 2 {
            move_to(&mut p, 64, false); // a shrink
            assert_eq!(threshold(&mut p), Some(expected));
            move_to(&mut p, 64, true); // as large: neither
            move_to(&mut p, 256, true); // grown back
            expected = (expected * 2).min(16 << REGROWN_MOST);
            assert_eq!(threshold(&mut p), Some(expected));
        }
        assert_eq!(p.regrown, REGROWN_MOST);
        // Two shrinks in a row undo a doubling each, from the second on.
        move_to(&mut p, 64, true);
        assert_eq!(threshold(&mut p), Some(16 << REGROWN_MOST));
        move_to(&mut p, 16, true);
        assert_eq!(threshold(&mut p), Some(16 << (REGROWN_MOST - 1)));
        move_to(&mut p, 4, true);
        assert_eq!(threshold(&mut p), Some(16 << (REGROWN_MOST - 2)));
    }

    /// A take gives the records' bytes back itself, at its
    /// compare-and-swap, before it rebuilds them: a byte-bounded queue does
    /// not wait for the rebuild (a run of long deferred messages, each
    /// formatted as it is rebuilt, took milliseconds).
    #[test]
    fn a_take_gives_back_the_bytes_of_what_it_takes() {
        use crate::queue::{test_parts, Item};
        let bytes = Budget::new(1 << 20);
        let (lane, mut p) = Lane::create(8, Arc::new(Budget::new(8)), true);
        let thread = lane.thread;
        let parts: Vec<_> = (0..3)
            .map(|seq| test_parts(seq, "a message in the slot", thread))
            .collect();
        let mut push = |item: Item<'_>| {
            assert!(bytes.try_take(item.size()));
            p.try_push(item).unwrap();
        };
        push(Item::parts(&parts[0]).unwrap());
        push(Item::Shared(Arc::new(
            Record::builder(parts[1].topic.topic().clone())
                .seq(1)
                .message("x".repeat(1000))
                .build(),
        )));
        push(Item::parts(&parts[2]).unwrap());
        assert!(bytes.used() > 1000);
        let mut out = Vec::new();
        let taker = &mut Taker::default();
        assert_eq!(lane.take_below(2, 10, &mut out, taker, Some(&bytes)), 2);
        let left = Item::parts(&parts[2]).unwrap().size();
        assert_eq!(bytes.used(), left, "only the record left behind's");
        assert_eq!(
            lane.take_below(u64::MAX, 10, &mut out, taker, Some(&bytes)),
            1
        );
        assert_eq!(bytes.used(), 0);
        assert_eq!(seqs(&out), [0, 1, 2]);
    }

    #[test]
    fn a_take_below_a_limit_takes_nothing_at_or_above_it() {
        let (lane, mut p) = Lane::create(4, Arc::new(Budget::new(4)), false);
        p.try_push(record(5)).unwrap();
        p.try_push(record(9)).unwrap();
        let mut out = Vec::new();
        // The first record too: the merge relies on it (a head that moved
        // under it must not overtake another source's older record).
        let taker = &mut Taker::default();
        assert_eq!(lane.take_below(5, 10, &mut out, taker, None), 0);
        assert_eq!(lane.take_below(9, 10, &mut out, taker, None), 1);
        assert_eq!(lane.peek_seq(), Some(9));
        assert!(lane.evict_head_below(9).is_none());
        assert_eq!(lane.evict_head_below(10).map(|e| e.seq), Some(9));
        assert_eq!(lane.peek_seq(), None);
    }

    #[test]
    fn evict_takes_the_oldest() {
        let (lane, mut p) = Lane::create(2, Arc::new(Budget::new(2)), false);
        p.try_push(record(0)).unwrap();
        p.try_push(record(1)).unwrap();
        assert_eq!(evict(&mut p, &lane), Some(0));
        p.try_push(record(2)).unwrap();
        let mut out = Vec::new();
        lane.take(10, &mut out);
        assert_eq!(seqs(&out), [1, 2]);
        assert!(evict(&mut p, &lane).is_none());
    }

    #[test]
    fn closed_lane_finishes_when_empty_and_drop_frees_leftovers() {
        let (lane, mut p) = Lane::create(4, Arc::new(Budget::new(4)), false);
        let kept = record(7);
        p.try_push(Arc::clone(&kept)).unwrap();
        drop(p);
        assert!(!lane.is_finished());
        drop(lane); // the leftover record's reference is released
        assert_eq!(Arc::strong_count(&kept), 1);
    }

    /// A producer that evicts when full, racing a taker: every record is
    /// taken or evicted exactly once, whole (a record that travelled as
    /// parts comes out with its own message), each side sees its records in
    /// order, and nothing leaks. Every other record is shared. Small under
    /// Miri, which checks the unsafe code.
    #[test]
    fn concurrent_push_evict_take_accounts_every_record() {
        let total: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let (lane, mut p) = Lane::create(8, Arc::new(Budget::new(8)), true);
        let own = Arc::clone(&lane);
        let producer = crate::sync::thread::spawn(move || {
            let mut evicted = Vec::new();
            use logbus_appenders::__private_api::Template;
            use logbus_appenders::__private_api::{parse, pieces, Arg, DeferredParts, Piece};
            const FORMAT: &str = "{} {}";
            const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
            static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 2);
            for i in 0..total {
                let text = format!("message {i}");
                let mut parts = crate::queue::test_parts(i, &text, own.thread());
                // Plain parts, a shared record, a deferred message's parts.
                let args = [Arg::U64(i), Arg::I128(-i128::from(i))];
                if i % 3 == 2 {
                    parts.message = "";
                    parts.deferred = Some(DeferredParts {
                        template: &TEMPLATE,
                        args: &args,
                    });
                }
                let mut item = if i % 3 == 1 {
                    Item::Shared(record(i))
                } else {
                    Item::parts(&parts).unwrap()
                };
                loop {
                    match p.try_push(item) {
                        Ok(()) => break,
                        Err(back) => {
                            item = back;
                            if let Some(old) = evict(&mut p, &own) {
                                evicted.push(old);
                            }
                        }
                    }
                }
            }
            evicted
        });
        let mut taken = Vec::new();
        let mut out = Vec::new();
        loop {
            out.clear();
            lane.take(5, &mut out);
            for r in &out {
                let seq = r.seq();
                let message = match seq % 3 {
                    0 => format!("message {seq}"),
                    2 => format!("{seq} -{seq}"),
                    _ => continue,
                };
                assert_eq!(r.message(), message);
                assert_eq!(r.line(), Some(7));
                assert_eq!(r.thread(), lane.thread());
            }
            taken.extend(out.iter().map(|r| r.seq()));
            if out.is_empty() && lane.is_finished() {
                break;
            }
            if out.is_empty() {
                crate::sync::thread::yield_now();
            }
        }
        let evicted = producer.join().unwrap();
        assert!(taken.windows(2).all(|w| w[0] < w[1]));
        assert!(evicted.windows(2).all(|w| w[0] < w[1]));
        let mut all: Vec<u64> = taken.iter().chain(&evicted).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..total).collect::<Vec<_>>());
    }

    /// A producer pushing every kind of item (plain, shared, deferred,
    /// literal), reserving its bytes, and evicting its own oldest when the
    /// lane is full (giving back what the evicted counted), races a taker
    /// that gives bytes back as it takes: every byte comes back once (a
    /// review's test).
    #[test]
    fn racing_pushes_evictions_and_takes_give_every_byte_back_once() {
        use crate::queue::{test_parts, Item};
        use logbus_appenders::__private_api::{parse, pieces, Arg, DeferredParts, Piece, Template};
        const FORMAT: &str = "{:>90} {}";
        const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
        static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 2);
        const LIT: &str = "a literal longer than a slot holds, which travels as its pointer!!";
        let total: u64 = if cfg!(miri) { 200 } else { 50_000 };
        let bytes = Arc::new(Budget::new(usize::MAX / 2));
        let (lane, mut p) = Lane::create(8, Arc::new(Budget::new(8)), true);
        let own = Arc::clone(&lane);
        let pbytes = Arc::clone(&bytes);
        let producer = crate::sync::thread::spawn(move || {
            let mut evicted = 0u64;
            for i in 0..total {
                let text = format!("m {i}");
                let mut parts = test_parts(i, &text, own.thread());
                let args = [Arg::U64(i), Arg::I128(-i128::from(i))];
                match i % 4 {
                    2 => {
                        parts.message = "";
                        parts.deferred = Some(DeferredParts {
                            template: &TEMPLATE,
                            args: &args,
                        });
                    }
                    3 => {
                        parts.message = LIT;
                        parts.literal = Some(LIT);
                    }
                    _ => {}
                }
                let mut item = if i % 4 == 1 {
                    Item::Shared(Arc::new(
                        Record::builder(parts.topic.topic())
                            .seq(i)
                            .message("z".repeat((i % 300) as usize))
                            .build(),
                    ))
                } else {
                    Item::parts(&parts).unwrap()
                };
                assert!(pbytes.try_take(item.size()));
                loop {
                    match p.try_push(item) {
                        Ok(()) => break,
                        Err(back) => {
                            item = back;
                            if let Some(old) = own.evict_head_below(u64::MAX) {
                                p.adopt_place();
                                pbytes.release(old.size());
                                evicted += 1;
                            }
                        }
                    }
                }
            }
            evicted
        });
        let mut taken = 0u64;
        let mut out = Vec::new();
        let taker = &mut Taker::default();
        loop {
            out.clear();
            taken += lane.take_below(u64::MAX, 5, &mut out, taker, Some(&bytes)) as u64;
            if out.is_empty() && lane.is_finished() {
                break;
            }
            if out.is_empty() {
                crate::sync::thread::yield_now();
            }
        }
        let evicted = producer.join().unwrap();
        assert_eq!(taken + evicted, total);
        assert_eq!(bytes.used(), 0);
    }
}
