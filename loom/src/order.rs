//! Program order per thread across route-set lanes (`benches/README.md`,
//! "Fan-out shapes without logbus", "Program order per thread"), as a
//! model ahead of the code. In the planned broadcast design a thread has
//! one lane per *route set*, so a subscription's worker reads several lanes
//! of one thread: here lane X (records routed to S alone) and lane Y (to S
//! and T). Every record takes a global `seq` in program order; the worker
//! merges its lanes by `seq` (`src/queue/drain.rs`), taking a lane's head
//! while it is below the other lanes' heads *as read*. A lane is the slot
//! protocol of `slots.rs` reduced to one producer and one taker: fill the
//! slot, then a `Release` store of `tail`; the taker loads `tail` with
//! `Acquire` and moves a head of its own (no eviction, no reuse).
//!
//! As read, the merge breaks program order: it finds X empty, the producer
//! pushes record 0 into X and record 1 into Y, the merge sees 1 in Y and
//! takes it first. The fix: after the `Acquire` load that saw the chosen
//! record, load again the tails of the lanes that looked empty, and merge
//! again if one has a record now. The argument: every record with a lower
//! `seq` was pushed earlier in the producer's program, so its `Release`
//! store of its lane's tail is sequenced before the one that published the
//! chosen record; the worker's `Acquire` load read that later store, so
//! the earlier one happens before the second look, which reads it or a
//! later value (coherence). A lane whose head was read has its later
//! records above that head, so it needs no second look. The look must
//! follow the `Acquire` that saw *every* record taken: here the fix takes
//! one record per look; a run taken with fresh loads of the lane's tail
//! (as `Lane::take_below` does) reaches records pushed after the look and
//! breaks the order again, so a run must stop at the tail loaded before it.
//!
//! The property: the worker takes the records in `seq` order. Two broken
//! variants must fail: the merge as read, and the look followed by such a
//! run. loom does not explore a load that reads a later store (load
//! buffering); the orderings rest on the argument above. Nor does its
//! search see a conflict hidden by a later access: a producer that loaded
//! its own `tail` before storing it hid the worker's load from it, and
//! loom 0.7 passed the merge as read; the producer keeps its own copy, as
//! `LaneProducer` does.
//!
//! Today's logbus has one lane per (thread, subscription), so a
//! subscription reads one lane of each thread and the rule holds as is; it
//! matters once a subscription reads route-set lanes. It says nothing of
//! several producers: records of different threads have no order to keep
//! beyond what the merge gives from the heads it read.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::models::{check, expected_failure, must_fail};

/// The producer's two lanes, and the lane each record goes to, in program
/// order (record `seq` into `pattern[seq]`): the race at the first record,
/// and after a take.
const X: usize = 0;
const Y: usize = 1;
const LANES: usize = 2;
const RECORDS: usize = 3;
const PATTERNS: [[usize; RECORDS]; 2] = [[X, Y, X], [Y, X, Y]];

/// How the worker merges its lanes.
#[derive(Clone, Copy, PartialEq)]
enum Merge {
    /// Today's merge: the lowest head as read.
    AsRead,
    /// The fix: a second look at the lanes that looked empty.
    SecondLook,
    /// The second look, then a run from the chosen lane with fresh loads
    /// of its tail, below the other heads as read (the broken run).
    SecondLookThenRun,
}

/// One lane of the producer: slots for every record (no reuse) and a tail.
struct Lane {
    tail: AtomicUsize,
    seqs: [AtomicUsize; RECORDS],
}

impl Lane {
    fn new() -> Lane {
        Lane {
            tail: AtomicUsize::new(0),
            seqs: std::array::from_fn(|_| AtomicUsize::new(usize::MAX)),
        }
    }

    /// The producer's push, with its own copy of `tail` (only it writes
    /// `tail`, as `LaneProducer`): fill the slot, then publish it with a
    /// `Release` store of `tail`.
    fn push(&self, tail: &mut usize, seq: usize) {
        self.seqs[*tail].store(seq, Ordering::Relaxed);
        *tail += 1;
        self.tail.store(*tail, Ordering::Release);
    }

    /// The `seq` at `head`, if the tail (`Acquire`: the slot is filled) is
    /// past it; `Lane::peek_seq`.
    fn peek(&self, head: usize) -> Option<usize> {
        (self.tail.load(Ordering::Acquire) > head).then(|| self.seqs[head].load(Ordering::Relaxed))
    }
}

/// The worker: merges the lanes by `seq` until it has taken every record,
/// yielding when none is visible; asserts each taken record is the next in
/// the producer's program order.
fn work(lanes: &[Lane; LANES], merge: Merge) {
    let mut heads = [0; LANES];
    let mut taken = 0;
    while taken < RECORDS {
        // Each lane's head, in lane order, as the merge reads them.
        let seen: [Option<usize>; LANES] = std::array::from_fn(|i| lanes[i].peek(heads[i]));
        let lowest = (0..LANES).filter_map(|i| seen[i].map(|seq| (seq, i))).min();
        let Some((seq, lane)) = lowest else {
            thread::yield_now();
            continue;
        };
        if merge != Merge::AsRead
            && (0..LANES).any(|i| seen[i].is_none() && lanes[i].peek(heads[i]).is_some())
        {
            continue;
        }
        let next = (0..LANES)
            .filter(|&i| i != lane)
            .filter_map(|i| seen[i])
            .min()
            .unwrap_or(usize::MAX);
        let mut head = Some(seq);
        while let Some(seq) = head.filter(|&seq| seq < next) {
            assert_eq!(seq, taken, "record {seq} taken out of program order");
            heads[lane] += 1;
            taken += 1;
            head = match merge {
                Merge::SecondLookThenRun => lanes[lane].peek(heads[lane]),
                _ => None,
            };
        }
    }
}

/// The producer on its own thread, pushing `pattern`, and the worker.
fn order(pattern: [usize; RECORDS], merge: Merge) {
    let lanes = Arc::new([Lane::new(), Lane::new()]);
    let producer = {
        let lanes = Arc::clone(&lanes);
        thread::spawn(move || {
            let mut tails = [0; LANES];
            for (seq, &lane) in pattern.iter().enumerate() {
                lanes[lane].push(&mut tails[lane], seq);
            }
        })
    };
    work(&lanes, merge);
    producer.join().unwrap();
}

#[test]
fn a_second_look_keeps_one_threads_records_in_program_order() {
    for pattern in PATTERNS {
        check(move || order(pattern, Merge::SecondLook));
    }
}

#[test]
fn the_merge_as_read_takes_one_threads_records_out_of_order() {
    must_fail("order::merge_as_read", "out of program order");
}

#[test]
fn merge_as_read() {
    expected_failure(|| order(PATTERNS[0], Merge::AsRead));
}

/// The second look, then a run read past it: the run takes a record
/// pushed after that look, ahead of one in the lane that looked empty.
#[test]
fn a_run_read_past_the_second_look_takes_records_out_of_order() {
    must_fail("order::second_look_then_run", "out of program order");
}

#[test]
fn second_look_then_run() {
    expected_failure(|| order(PATTERNS[0], Merge::SecondLookThenRun));
}
