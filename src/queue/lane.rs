//! Lanes: one bounded ring per (publishing thread, subscription), the
//! caller's fast path into a subscription's queue.
//!
//! A shared multi-producer queue costs the caller two or three contended
//! read-modify-write operations per record (the tail, the slot stamp, the
//! waker check), and each one waits for a cache line the worker's core just
//! touched; on the 2-vCPU machines we measure on that is 400-600 ns per
//! record. A lane has a single producer (the thread that owns it, through
//! its thread-local route view), so a push is a plain store of the record's
//! pointer and a `Release` store of the producer's own tail index: no
//! read-modify-write, nothing that stalls on the worker's cache lines.
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
//!   party turns the slot's pointer back into an `Arc`. A party whose CAS
//!   fails forgets the pointers it read (they were copies of a raw pointer,
//!   never dereferenced).
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
//! Slots are `AtomicPtr`s, so a taker reading a slot the producer is
//! overwriting is a race on an atomic, not undefined behaviour.

use std::ptr;

use logbus_appenders::Record;

use super::budget::Budget;
use super::gate::BusyFlag;
use crate::sync::{Arc, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, CacheLine, Ordering};

/// Most records taken by one compare-and-swap (the pointers are read into a
/// stack buffer of this size first).
const TAKE_RUN: usize = 64;

/// One place in a lane: the record's pointer (from `Arc::into_raw`) and its
/// `seq`, so that the worker can merge lanes in `seq` order without touching
/// a record it does not own yet.
struct Slot {
    seq: AtomicU64,
    record: AtomicPtr<Record>,
}

/// `size` (at least 1) empty slots, from zeroed memory: large rings come
/// straight from the kernel (calloc over mmap), so their pages are touched
/// only as the lane fills, not all at creation (writing every slot made
/// each new lane cost 256 KiB of resident memory at the default capacity).
fn zeroed_slots(size: usize) -> Box<[Slot]> {
    // `Box::new_zeroed_slice` says this safely from Rust 1.92; we support
    // older compilers.
    let layout = std::alloc::Layout::array::<Slot>(size)
        .unwrap_or_else(|_| panic!("lane of {size} slots overflows the address space"));
    // SAFETY: `layout` has a non-zero size (`size >= 1`, `Slot` is 16
    // bytes).
    let raw = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Slot>();
    if raw.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `raw` is a live allocation of `layout`, i.e. of `size` slots,
    // from the global allocator, as `Box` requires; all-zero bytes are a
    // valid `Slot` (an `AtomicU64` of 0 and a null `AtomicPtr`, both laid
    // out as their integer and pointer); and the `Box` becomes its only
    // owner.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(raw, size)) }
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
    slots: Box<[Slot]>,
    mask: usize,
    /// The most records the lane holds (at most `slots.len()`).
    capacity: usize,
    /// The subscription's places, shared with its other lanes.
    budget: Arc<Budget>,
}

impl Lane {
    /// A lane of up to `capacity` records (at least 1), drawing on `budget`.
    fn new(capacity: usize, budget: Arc<Budget>) -> Lane {
        let capacity = capacity.max(1);
        let size = capacity.next_power_of_two();
        budget.lane_opened();
        Lane {
            head: CacheLine(AtomicUsize::new(0)),
            tail: CacheLine(AtomicUsize::new(0)),
            busy: BusyFlag::default(),
            closed: AtomicBool::new(false),
            slots: zeroed_slots(size),
            mask: size - 1,
            capacity,
            budget,
        }
    }

    /// A new lane and its producer.
    pub(crate) fn create(capacity: usize, budget: Arc<Budget>) -> (Arc<Lane>, LaneProducer) {
        let lane = Arc::new(Lane::new(capacity, budget));
        let producer = LaneProducer {
            lane: Arc::clone(&lane),
            tail: 0,
            head_seen: 0,
            places: 0,
        };
        (lane, producer)
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
    /// taken or evicted meanwhile.
    pub(crate) fn peek_seq(&self) -> Option<u64> {
        let head = self.head.load(Ordering::Acquire);
        // Acquire: the slot below `tail` is filled.
        if head >= self.tail.load(Ordering::Acquire) {
            return None;
        }
        Some(self.slots[head & self.mask].seq.load(Ordering::Relaxed))
    }

    /// Takes up to `max` of the oldest records into `out` (the worker's
    /// side); returns how many.
    #[cfg(test)]
    pub(crate) fn take(&self, max: usize, out: &mut Vec<Arc<Record>>) -> usize {
        self.take_below(u64::MAX, max, out)
    }

    /// Takes up to `max` of the oldest records whose `seq` is below `limit`
    /// (at least one if the lane is not empty, so that the caller always
    /// progresses) into `out`; returns how many.
    pub(crate) fn take_below(&self, limit: u64, max: usize, out: &mut Vec<Arc<Record>>) -> usize {
        let mut run = [ptr::null_mut::<Record>(); TAKE_RUN];
        let mut taken = 0;
        while taken < max {
            let head = self.head.load(Ordering::Acquire);
            // Acquire: pairs with the producer's `Release` store of `tail`,
            // so the slots below it are filled.
            let tail = self.tail.load(Ordering::Acquire);
            let available = tail.saturating_sub(head).min(max - taken).min(TAKE_RUN);
            let mut n = 0;
            while n < available {
                let slot = &self.slots[(head + n) & self.mask];
                // Relaxed: ordered after the `Acquire` load of `tail`. If the
                // producer overwrites the slot meanwhile, `head` moved and
                // the CAS below fails.
                if (taken > 0 || n > 0) && slot.seq.load(Ordering::Relaxed) >= limit {
                    break;
                }
                run[n] = slot.record.load(Ordering::Relaxed);
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
            for &record in &run[..n] {
                // SAFETY: each pointer came from `Arc::into_raw` in
                // `try_push`, and our CAS moved `head` past its index, which
                // makes us its only owner (module docs): no one else will
                // turn it back.
                out.push(unsafe { Arc::from_raw(record) });
            }
            self.budget.release(n);
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
}

impl Drop for Lane {
    fn drop(&mut self) {
        // We are the last holder: no producer or taker is left.
        let head = *self.head.0.get_mut();
        let tail = *self.tail.0.get_mut();
        for i in head..tail {
            let record = *self.slots[i & self.mask].record.get_mut();
            // SAFETY: records in [head, tail) were pushed and never taken,
            // so the lane still owns each pointer exactly once.
            drop(unsafe { Arc::from_raw(record) });
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
}

impl LaneProducer {
    /// Appends `record`, or hands it back if the lane is full.
    pub(crate) fn try_push(&mut self, record: Arc<Record>) -> Result<(), Arc<Record>> {
        let lane = &*self.lane;
        if self.places == 0 {
            self.places = lane.budget.reserve_chunk();
            if self.places == 0 {
                return Err(record); // the subscription is full
            }
        }
        if self.tail - self.head_seen >= lane.capacity {
            // Acquire: pairs with the taker's CAS, so the slot we are about
            // to overwrite was read before.
            self.head_seen = lane.head.load(Ordering::Acquire);
            if self.tail - self.head_seen >= lane.capacity {
                return Err(record);
            }
        }
        let slot = &lane.slots[self.tail & lane.mask];
        // Relaxed: both published by the `Release` store of `tail` below.
        slot.seq.store(record.seq(), Ordering::Relaxed);
        slot.record
            .store(Arc::into_raw(record).cast_mut(), Ordering::Relaxed);
        self.tail += 1;
        self.places -= 1;
        lane.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// This producer's gate flag (see `gate.rs`).
    pub(crate) fn busy(&self) -> &BusyFlag {
        &self.lane.busy
    }

    /// Takes the oldest record out of the lane (drop-oldest), or `None` if
    /// the worker took everything meanwhile.
    pub(crate) fn evict_oldest(&mut self) -> Option<Arc<Record>> {
        let lane = &*self.lane;
        loop {
            let head = lane.head.load(Ordering::Acquire);
            if head >= self.tail {
                self.head_seen = head;
                return None;
            }
            if lane
                .head
                .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.head_seen = head + 1;
                self.places += 1; // the evicted record's place is ours now
                                  // Relaxed: we wrote this slot ourselves and have not
                                  // overwritten it (that needs `head` past it, which only we
                                  // just did).
                let record = lane.slots[head & lane.mask].record.load(Ordering::Relaxed);
                // SAFETY: the pointer came from `Arc::into_raw` in
                // `try_push`, and our CAS made us its only owner.
                return Some(unsafe { Arc::from_raw(record) });
            }
            // The worker took some: look again (at most `capacity` times,
            // since `head` only grows towards our `tail`).
        }
    }
}

impl Drop for LaneProducer {
    fn drop(&mut self) {
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
    use logbus_appenders::{Level, Topic};

    fn record(seq: u64) -> Arc<Record> {
        Arc::new(
            Record::builder(Topic::new(Level::Info, "t"))
                .seq(seq)
                .build(),
        )
    }

    fn seqs(records: &[Arc<Record>]) -> Vec<u64> {
        records.iter().map(|r| r.seq()).collect()
    }

    #[test]
    fn fifo_and_full() {
        let (lane, mut p) = Lane::create(3, Arc::new(Budget::new(3)));
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
        let (a, mut pa) = Lane::create(4, Arc::clone(&budget));
        let (_b, mut pb) = Lane::create(4, Arc::clone(&budget));
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
        assert_eq!(pa.evict_oldest().map(|r| r.seq()), Some(2));
        pa.try_push(record(6)).unwrap();
        pb.try_push(record(7)).unwrap();
        pb.try_push(record(8)).unwrap();
        assert!(pb.try_push(record(9)).is_err());
        // A closed producer gives back what it reserved and did not use.
        drop(pa);
        assert_eq!(budget.reserve_chunk(), 0);
    }

    #[test]
    fn evict_takes_the_oldest() {
        let (lane, mut p) = Lane::create(2, Arc::new(Budget::new(2)));
        p.try_push(record(0)).unwrap();
        p.try_push(record(1)).unwrap();
        assert_eq!(p.evict_oldest().map(|r| r.seq()), Some(0));
        p.try_push(record(2)).unwrap();
        let mut out = Vec::new();
        lane.take(10, &mut out);
        assert_eq!(seqs(&out), [1, 2]);
        assert!(p.evict_oldest().is_none());
    }

    #[test]
    fn closed_lane_finishes_when_empty_and_drop_frees_leftovers() {
        let (lane, mut p) = Lane::create(4, Arc::new(Budget::new(4)));
        let kept = record(7);
        p.try_push(Arc::clone(&kept)).unwrap();
        drop(p);
        assert!(!lane.is_finished());
        drop(lane); // the leftover record's reference is released
        assert_eq!(Arc::strong_count(&kept), 1);
    }

    /// A producer that evicts when full, racing a taker: every record is
    /// taken or evicted exactly once, each side sees its records in order,
    /// and nothing leaks. Small under Miri, which checks the unsafe code.
    #[test]
    fn concurrent_push_evict_take_accounts_every_record() {
        let total: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let (lane, mut p) = Lane::create(8, Arc::new(Budget::new(8)));
        let producer = crate::sync::thread::spawn(move || {
            let mut evicted = Vec::new();
            for i in 0..total {
                let mut r = record(i);
                loop {
                    match p.try_push(r) {
                        Ok(()) => break,
                        Err(back) => {
                            r = back;
                            if let Some(old) = p.evict_oldest() {
                                evicted.push(old.seq());
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
}
