//! The broadcast ring that issue 16's item 2 calls for (`benches/README.md`,
//! "Fan-out shapes without logbus"), as a model ahead of the code: one
//! producer's ring read by two subscriptions, each through its own cursor.
//! It is the lane's slot protocol (`slots.rs`) with one `head` per cursor:
//!
//! - the producer fills a slot only when it is below *every* cursor plus
//!   the capacity, refreshing its view of each cursor with `Acquire`, and
//!   publishes with a `Release` store of `tail`;
//! - a subscription's worker reads the slot at its cursor, then owns that
//!   record *for its subscription* if its compare-and-swap on its own cursor
//!   succeeds (`AcqRel`), as `Lane::take_below` does on the lane's head;
//! - drop-oldest evicts for one subscription alone: the producer, finding
//!   the ring full because of one cursor, reads that cursor's slot and moves
//!   that cursor with the same compare-and-swap, counting the record as
//!   dropped for that subscription only.
//!
//! No record is shared between the subscriptions: each worker would build
//! its own from the slot's parts, so there is no holders or reference count
//! to model.
//!
//! The property: for each cursor, whoever owns a record read it whole, as
//! written, and every record is owned exactly once (taken or evicted). A
//! broken variant, a producer that looks at the first cursor only (today's
//! lane, which has one), must fail on the second.
//!
//! What it checks is the cursors' logic: room below the slowest, eviction
//! for one, ownership per cursor. The orderings rest on the written
//! argument, as in `slots.rs`: loom does not explore a load that reads a
//! later store (load buffering), so this model, like that one, still
//! passes with every ordering weakened to `Relaxed`.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::models::{check, expected_failure, must_fail};
use crate::slots::{assert_owned_once, take_at, Owned, Slot};

/// Slots in the ring, records pushed, and cursors (subscriptions).
const CAPACITY: usize = 2;
const RECORDS: usize = 3;
const CURSORS: usize = 2;

struct Ring {
    heads: [AtomicUsize; CURSORS],
    tail: AtomicUsize,
    slots: [Slot; CAPACITY],
}

impl Ring {
    fn new() -> Ring {
        Ring {
            heads: [AtomicUsize::new(0), AtomicUsize::new(0)],
            tail: AtomicUsize::new(0),
            slots: [Slot::empty(), Slot::empty()],
        }
    }

    /// One record for `cursor`'s subscription: read the slot at the
    /// cursor, then own it if the compare-and-swap on that cursor wins.
    fn take(&self, cursor: usize) -> Option<Owned> {
        take_at(&self.heads[cursor], &self.tail, &self.slots)
    }

    /// The producer under drop-oldest for `RECORDS` records: before each
    /// slot it makes room below every cursor (`careful`) or below the first
    /// only (the broken variant), evicting for a cursor that holds the ring
    /// full. Returns what it evicted, with the cursor it evicted for.
    fn produce(&self, careful: bool) -> Vec<(usize, Owned)> {
        let mut tail = 0;
        let mut seen = [0; CURSORS];
        let mut evicted = Vec::new();
        let looked_at = if careful { CURSORS } else { 1 };
        for record in 0..RECORDS {
            for (cursor, seen) in seen.iter_mut().enumerate().take(looked_at) {
                while tail - *seen >= CAPACITY {
                    *seen = self.heads[cursor].load(Ordering::Acquire);
                    if tail - *seen >= CAPACITY {
                        evicted.extend(self.take(cursor).map(|owned| (cursor, owned)));
                    }
                }
            }
            self.slots[tail % CAPACITY].fill(record);
            tail += 1;
            self.tail.store(tail, Ordering::Release);
        }
        evicted
    }
}

/// A producer and the second subscription's worker, concurrently; the
/// first subscription's worker comes only after, so that the first cursor
/// holds the ring full and the producer evicts for it while the second
/// cursor moves. (Two workers at once as well took loom three minutes in a
/// debug build; the race of a worker and an evictor on one cursor is
/// `slots.rs`'s.) What is left is drained after.
fn broadcast(careful: bool) {
    let ring = Arc::new(Ring::new());
    let producer = {
        let ring = Arc::clone(&ring);
        thread::spawn(move || ring.produce(careful))
    };
    let worker = |cursor: usize| {
        let ring = Arc::clone(&ring);
        move || {
            let mut owned = Vec::new();
            for _ in 0..RECORDS - 1 {
                match ring.take(cursor) {
                    Some(record) => owned.push((cursor, record)),
                    None => thread::yield_now(),
                }
            }
            owned
        }
    };
    let mut owned = worker(1)();
    owned.extend(producer.join().unwrap());
    for cursor in 0..CURSORS {
        while let Some(record) = ring.take(cursor) {
            owned.push((cursor, record));
        }
    }
    for cursor in 0..CURSORS {
        let mine: Vec<Owned> = owned
            .iter()
            .filter(|(c, _)| *c == cursor)
            .map(|&(_, record)| record)
            .collect();
        assert_owned_once(&mine, RECORDS, &format!("cursor {cursor}"));
    }
}

#[test]
fn each_cursor_owns_every_record_once_and_reads_it_whole() {
    check(|| broadcast(true));
}

#[test]
fn a_producer_that_looks_at_one_cursor_fails_the_other() {
    must_fail("broadcast::one_cursor_producer", "cursor 1");
}

#[test]
fn one_cursor_producer() {
    expected_failure(|| broadcast(false));
}
