//! A record has one time (`benches/README.md`, "Fan-out shapes without
//! logbus", the ninth session's first rule), as a model ahead of the code:
//! `broadcast.rs`'s ring, its slot holding the caller's counter reading
//! (ticks) in a stamp word, which each worker would convert with its own
//! thread's anchor (two anchors disagree by nanoseconds). So:
//!
//! - a reader reads the slot at its cursor (below the acquired `tail`); if
//!   the stamp's flag is clear, it converts the ticks it read and exchanges
//!   the stamp from them to the nanoseconds, flagged, *before* the
//!   compare-and-swap on its cursor. Finding the flag set, or failing on a
//!   flagged word, it takes the nanoseconds as they are; failing on ticks,
//!   the slot was reused (its cursor evicted, every other cursor past): it
//!   gives up, as its cursor's exchange would fail too;
//! - an evictor only counts the drop: it needs no time, and moves the
//!   cursor with the compare-and-swap alone.
//!
//! The property: the readers that own a record (their cursor's exchange
//! won) read it whole and obtained one time, a conversion of its ticks.
//! (Ticks differ per record here; equal ones let a stale exchange succeed
//! on a reused slot, storing a conversion of that same tick: no harm.)
//!
//! The argument. The fill happens before the `Release` of `tail` that the
//! reader acquired: it reads the fill's ticks or a later value of the word.
//! A cursor never goes back, so one whose exchange wins was at `head`
//! throughout; the producer refills only after reading every cursor past
//! `head` with `Acquire` (synchronising with the `AcqRel` exchanges, a
//! release sequence), so after the owner's loads and stamp exchange. That
//! exchange needs no ordering: the word carries its value, and a
//! read-modify-write that read some ticks comes right after them in the
//! word's modification order, so before a refill, never over it. loom
//! checks the `tail` pair (`Relaxed`, the model fails: "read torn"), not
//! the cursors' (it passes with them `Relaxed`): it does not explore load
//! buffering.
//!
//! The producer fills the stamp with a `swap` where the code would store:
//! loom 0.7 misses that read-modify-write rule against a plain store
//! (tokio-rs/loom#254, #389; fix proposed in #391) and rejects the protocol
//! with a stale exchange over the refill, which C11 forbids. The broken
//! variants: readers converting with their own anchors (two times), and an
//! exchange over any ticks, not the ticks read (a reused slot's record gets
//! an old one's time). A plain store of the time is not modelled: two
//! readers would store their own conversions, the first variant's failure.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::models::{check, expected_failure, must_fail};

/// Slots in the ring (one, so the second record reuses the first's slot),
/// records, cursors (a reader each), and each reader's attempts while the
/// producer runs (two take loom half a minute in a debug build).
const CAPACITY: usize = 1;
const RECORDS: usize = 2;
const CURSORS: usize = 2;
const ATTEMPTS: usize = 1;

/// Set in a stamp word that holds nanoseconds rather than ticks.
const FLAG: usize = 1 << (usize::BITS - 1);

/// The caller's counter reading for `record`: distinct per record.
fn ticks(record: usize) -> usize {
    100 + record
}

/// Reader `reader`'s anchor: its conversions differ from the other's.
fn convert(reader: usize, ticks: usize) -> usize {
    (ticks * 10 + reader) | FLAG
}

/// How a reader obtains the time (all but `Exchange` are broken).
#[derive(Clone, Copy)]
enum Time {
    /// The protocol: exchange the stamp from the ticks read.
    Exchange,
    /// Each reader converts with its own anchor; the stamp stays ticks.
    OwnAnchor,
    /// The conversion stored over any ticks, not only the ticks read.
    AnyTicks,
}

/// A slot: the record's id and its stamp word.
struct Slot {
    id: AtomicUsize,
    stamp: AtomicUsize,
}

impl Slot {
    /// `reader`'s time for the record whose stamp it read as `stamp`, or
    /// `None` if the slot was reused since.
    fn time(&self, stamp: usize, reader: usize, time: Time) -> Option<usize> {
        if stamp & FLAG != 0 {
            return Some(stamp);
        }
        let (nanos, relaxed) = (convert(reader, stamp), Ordering::Relaxed);
        let exchanged = match time {
            Time::OwnAnchor => return Some(nanos),
            Time::Exchange => self.stamp.compare_exchange(stamp, nanos, relaxed, relaxed),
            Time::AnyTicks => self
                .stamp
                .fetch_update(relaxed, relaxed, |now| (now & FLAG == 0).then_some(nanos)),
        };
        match exchanged {
            Ok(_) => Some(nanos),
            Err(now) => (now & FLAG != 0).then_some(now),
        }
    }
}

/// A record's index, and what its owner read and obtained: id and time.
type Owned = (usize, usize, usize);

struct Ring {
    heads: [AtomicUsize; CURSORS],
    tail: AtomicUsize,
    slots: [Slot; CAPACITY],
    /// The producer fills the stamp with a plain store (see the module doc).
    plain_fill: bool,
}

impl Ring {
    fn new(plain_fill: bool) -> Ring {
        let (id, stamp) = (AtomicUsize::new(usize::MAX), AtomicUsize::new(0));
        Ring {
            heads: [AtomicUsize::new(0), AtomicUsize::new(0)],
            tail: AtomicUsize::new(0),
            slots: [Slot { id, stamp }],
            plain_fill,
        }
    }

    /// One record for `reader`'s cursor: read the slot, obtain the time,
    /// then own the record if the compare-and-swap on the cursor wins.
    fn take(&self, reader: usize, time: Time) -> Option<Owned> {
        let head = self.heads[reader].load(Ordering::Acquire);
        if head >= self.tail.load(Ordering::Acquire) {
            return None;
        }
        let slot = &self.slots[head % self.slots.len()];
        let id = slot.id.load(Ordering::Relaxed);
        let nanos = slot.time(slot.stamp.load(Ordering::Relaxed), reader, time)?;
        self.pass(reader, head).then_some((head, id, nanos))
    }

    /// Moves `cursor` past `head` if it is still there: a take's and an
    /// eviction's compare-and-swap.
    fn pass(&self, cursor: usize, head: usize) -> bool {
        self.heads[cursor]
            .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The producer under drop-oldest: before each slot it makes room below
    /// every cursor, evicting for one that holds the ring full (the
    /// cursor's exchange alone: an eviction needs no time), then fills the
    /// slot and publishes it with a `Release` store of `tail`.
    fn produce(&self) {
        let mut seen = [0; CURSORS];
        for record in 0..RECORDS {
            for (cursor, seen) in seen.iter_mut().enumerate() {
                while record - *seen >= CAPACITY {
                    *seen = self.heads[cursor].load(Ordering::Acquire);
                    if record - *seen >= CAPACITY {
                        self.pass(cursor, *seen);
                    }
                }
            }
            let slot = &self.slots[record % self.slots.len()];
            slot.id.store(record, Ordering::Relaxed);
            if self.plain_fill {
                slot.stamp.store(ticks(record), Ordering::Relaxed);
            } else {
                slot.stamp.swap(ticks(record), Ordering::Relaxed);
            }
            self.tail.store(record + 1, Ordering::Release);
        }
    }
}

/// The producer and the first reader on threads of their own, the second
/// on the model's thread, each reader trying [`ATTEMPTS`] times while the
/// producer runs; then both cursors are drained.
fn stamp(time: Time, plain_fill: bool) {
    let ring = Arc::new(Ring::new(plain_fill));
    let producer = {
        let ring = Arc::clone(&ring);
        thread::spawn(move || ring.produce())
    };
    let reader = |cursor: usize| {
        let ring = Arc::clone(&ring);
        move || {
            let attempts = (0..ATTEMPTS).map(|_| ring.take(cursor, time));
            attempts.flatten().collect::<Vec<_>>()
        }
    };
    let first = thread::spawn(reader(0));
    let mut owned = reader(1)();
    owned.extend(first.join().unwrap());
    producer.join().unwrap();
    for cursor in 0..CURSORS {
        while let Some(record) = ring.take(cursor, time) {
            owned.push(record);
        }
    }
    assert_one_time(&owned);
}

/// The property: each owner read its record whole, every owner of a record
/// obtained the same time, and that time is a conversion of its ticks.
fn assert_one_time(owned: &[Owned]) {
    for &(index, id, nanos) in owned {
        assert_eq!(id, index, "record {index} read torn");
        assert!(
            (0..CURSORS).any(|reader| nanos == convert(reader, ticks(index))),
            "record {index} got another record's time"
        );
        for &(_, _, other) in owned.iter().filter(|&&(i, _, _)| i == index) {
            assert_eq!(nanos, other, "record {index} has two times");
        }
    }
}

#[test]
fn every_owner_of_a_record_obtains_its_one_time() {
    check(|| stamp(Time::Exchange, false));
}

#[test]
fn readers_converting_with_their_own_anchors_print_two_times() {
    must_fail("stamp::own_anchor", "two times");
}

#[test]
fn own_anchor() {
    expected_failure(|| stamp(Time::OwnAnchor, false));
}

#[test]
fn an_exchange_over_any_ticks_gives_a_reused_slot_an_old_time() {
    must_fail("stamp::any_ticks", "another record's time");
}

#[test]
fn any_ticks() {
    expected_failure(|| stamp(Time::AnyTicks, false));
}

/// loom 0.7's gap (tokio-rs/loom#254): with the producer's plain store it
/// rejects the protocol. Once this fails, loom is fixed and the swap can go.
#[test]
fn a_plain_fill_is_rejected_until_loom_fixes_254() {
    must_fail("stamp::plain_fill", "another record's time");
}

#[test]
fn plain_fill() {
    expected_failure(|| stamp(Time::Exchange, true));
}
