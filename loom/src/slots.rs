//! A lane's slot protocol (`src/queue/lane.rs`, "Protocol", and
//! `src/queue/slot.rs`, "Why every field is an atomic"), as a model: the
//! lane needs its budget, its registry and the record types, which this
//! crate does not build, so the model keeps each step's synchronisation as
//! the code has it. The producer fills a slot (`seq` with `Release`, the
//! other fields `Relaxed`) only when `tail - head` is below the capacity,
//! refreshing its view of `head` with `Acquire`, and publishes with a
//! `Release` store of `tail`. Takers (the worker) and evictors (the
//! producer itself, as drop-oldest does from a full lane) read a slot
//! *before* the compare-and-swap on `head` that makes them its owner, and
//! trust what they read only if it succeeds (`AcqRel`).
//!
//! The property: whoever owns a record read it whole, as written (a slot
//! holds two payload words and its `seq`, all equal to the record's index),
//! and every record is owned exactly once. A broken variant, a producer
//! that overwrites a slot without looking at `head`, must fail.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::models::{check, expected_failure, must_fail};

/// Slots in the ring (a power of two, as the lane's), and records pushed.
const CAPACITY: usize = 2;
const RECORDS: usize = 3;

/// A slot of the model (also `broadcast.rs`'s).
pub(crate) struct Slot {
    seq: AtomicUsize,
    /// Two words of a record's parts: a torn reading shows as a mismatch.
    first: AtomicUsize,
    second: AtomicUsize,
}

impl Slot {
    pub(crate) fn empty() -> Slot {
        Slot {
            seq: AtomicUsize::new(usize::MAX),
            first: AtomicUsize::new(usize::MAX),
            second: AtomicUsize::new(usize::MAX),
        }
    }

    /// The producer's fill: `seq` with `Release`, the rest `Relaxed`.
    pub(crate) fn fill(&self, record: usize) {
        self.seq.store(record, Ordering::Release);
        self.first.store(record, Ordering::Relaxed);
        self.second.store(record, Ordering::Relaxed);
    }
}

/// Reads the slot of index `head` (below the acquired `tail`), then owns
/// its record if the compare-and-swap of `cursor` from `head` wins: a
/// lane's take or eviction (`Lane::take_below`, `evict_head_below`).
pub(crate) fn take_at(cursor: &AtomicUsize, tail: &AtomicUsize, slots: &[Slot]) -> Option<Owned> {
    let head = cursor.load(Ordering::Acquire);
    if head >= tail.load(Ordering::Acquire) {
        return None;
    }
    let slot = &slots[head % slots.len()];
    let reading = (
        slot.seq.load(Ordering::Acquire),
        slot.first.load(Ordering::Relaxed),
        slot.second.load(Ordering::Relaxed),
    );
    cursor
        .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
        .ok()
        .map(|_| (head, reading))
}

/// The property: each record of `0..records` owned once, read whole.
pub(crate) fn assert_owned_once(owned: &[Owned], records: usize, whose: &str) {
    for &(index, reading) in owned {
        assert_eq!(
            reading,
            (index, index, index),
            "{whose}: record {index} read torn"
        );
    }
    let mut indices: Vec<usize> = owned.iter().map(|&(index, _)| index).collect();
    indices.sort_unstable();
    assert_eq!(
        indices,
        (0..records).collect::<Vec<_>>(),
        "{whose}: each record owned once"
    );
}

struct Ring {
    head: AtomicUsize,
    tail: AtomicUsize,
    slots: [Slot; CAPACITY],
}

/// A record's index and what its owner read of it: `seq` and the words.
pub(crate) type Owned = (usize, (usize, usize, usize));

impl Ring {
    fn new() -> Ring {
        Ring {
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            slots: [Slot::empty(), Slot::empty()],
        }
    }

    /// `Lane::take_below` for one record, or `evict_head_below`.
    fn take(&self) -> Option<Owned> {
        take_at(&self.head, &self.tail, &self.slots)
    }

    /// `LaneProducer::try_push` under drop-oldest for `RECORDS` records:
    /// a full lane evicts its own oldest. `careful`: the lane's rule
    /// (overwrite only below `head + capacity`); without it, the broken
    /// variant. Returns what it evicted.
    fn produce(&self, careful: bool) -> Vec<Owned> {
        let (mut tail, mut head_seen) = (0, 0);
        let mut evicted = Vec::new();
        for record in 0..RECORDS {
            while careful && tail - head_seen >= CAPACITY {
                head_seen = self.head.load(Ordering::Acquire);
                if tail - head_seen >= CAPACITY {
                    evicted.extend(self.take());
                }
            }
            self.slots[tail % CAPACITY].fill(record);
            tail += 1;
            self.tail.store(tail, Ordering::Release);
        }
        evicted
    }
}

/// A producer and a worker on one ring; what is left is drained after.
fn slots(careful: bool) {
    let ring = Arc::new(Ring::new());
    let producer = {
        let ring = Arc::clone(&ring);
        thread::spawn(move || ring.produce(careful))
    };
    let mut owned = Vec::new();
    for _ in 0..RECORDS {
        match ring.take() {
            Some(record) => owned.push(record),
            None => thread::yield_now(),
        }
    }
    owned.extend(producer.join().unwrap());
    while let Some(record) = ring.take() {
        owned.push(record);
    }
    assert_owned_once(&owned, RECORDS, "the lane");
}

#[test]
fn whoever_owns_a_slot_read_it_whole_and_each_record_is_owned_once() {
    check(|| slots(true));
}

#[test]
fn a_producer_that_overwrites_without_looking_at_head_tears_a_reading() {
    must_fail("slots::overwriting_producer", "read torn");
}

#[test]
fn overwriting_producer() {
    expected_failure(|| slots(false));
}
