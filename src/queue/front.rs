//! The front of a queue: records a subscription receives before any live
//! one, the records a replay hands it (`journal/replay.rs`). Every `seq`
//! in the front is below that of every live record the journal keeps (the
//! subscription's `live_from`), so "the front first" is the drain's `seq`
//! merge with one more source, up to the records the journal does not
//! keep, those another journal kept (one removed while they were routed,
//! `route::Entry::replayed`), and a flight recorder's context, which
//! arrive live whatever their `seq`.
//!
//! While the subscribing thread still filters the replay with the
//! subscription's predicate, the front is *held*: the drain takes nothing,
//! not even live records, so none overtakes a replayed one. `fill` ends the
//! hold and wakes the worker. Front records are outside the queue's bounds
//! (the journal's limits bound them) and are never evicted; they count in
//! the queue's length, hence in `matched` and `in_queue`.

use std::collections::VecDeque;

use logbus_appenders::Record;

use crate::sync::{fence, lock, Arc, AtomicBool, AtomicUsize, Mutex, Ordering};

/// The longest a worker parks between looks at a held front (it is woken
/// when the hold ends; this bounds a wake-up that came before its park).
const RELEASE_LOOK: std::time::Duration = std::time::Duration::from_millis(1);

pub(crate) struct Front {
    records: Mutex<VecDeque<Arc<Record>>>,
    /// How many records `records` holds, readable without the lock.
    len: AtomicUsize,
    /// Set by `hold` (a replaying subscription's queue) until `fill`.
    held: AtomicBool,
}

impl Front {
    pub(crate) fn new() -> Front {
        Front {
            records: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            held: AtomicBool::new(false),
        }
    }

    /// Holds the drain until `fill`. Called before the worker thread is
    /// spawned, so every take of the worker sees it (and `held` only ever
    /// goes from set to clear, so a take that saw it cleared may merge).
    pub(crate) fn hold(&self) {
        // Relaxed: ordered before the snapshot's publication (see above).
        self.held.store(true, Ordering::Relaxed);
    }

    /// Waits until the hold ends: a flush or a shutdown must not finish
    /// while the records it waits for are held back. The subscribing
    /// thread ends the hold as soon as the predicate has run over the
    /// replayed records (a guard ends it on unwinding too).
    ///
    /// Called by the worker, which `Release` (the hold's end) wakes: it
    /// parks meanwhile, a millisecond at most between looks, instead of
    /// spinning a core while the predicate runs (a review measured a whole
    /// core spent).
    pub(crate) fn wait_released(&self) {
        while self.is_held() {
            crate::sync::thread::park_timeout(RELEASE_LOOK);
        }
    }

    /// Puts `records` in the front and ends the hold. The caller then
    /// wakes the worker.
    pub(crate) fn fill(&self, records: Vec<Arc<Record>>) {
        let mut front = lock(&self.records);
        front.extend(records);
        // Relaxed: the lock publishes the records to `take`, and
        // `is_active` is only a hint the drain confirms under it.
        self.len.store(front.len(), Ordering::Relaxed);
        drop(front);
        // Release: pairs with the drain's Acquire in `is_held`, so a drain
        // that sees the hold ended also sees the records.
        self.held.store(false, Ordering::Release);
        // Then the caller wakes the worker, which looks at `held` only
        // after its own fence in `Waker::sleep` (the heavy side), and
        // registered its thread before: with this fence, either its look
        // sees the hold ended, or our wake (after the fence) finds its
        // thread to unpark.
        // The store-buffering pair of the wake-up protocol (`waker.rs`).
        fence(Ordering::SeqCst);
    }

    /// Whether the drain must wait for `fill`.
    pub(crate) fn is_held(&self) -> bool {
        // Acquire: see `fill`.
        self.held.load(Ordering::Acquire)
    }

    /// Whether the front holds records or is held (the drain's look).
    pub(crate) fn is_active(&self) -> bool {
        self.is_held() || self.len() > 0
    }

    pub(crate) fn len(&self) -> usize {
        // Relaxed: a count for stats and the drain's look.
        self.len.load(Ordering::Relaxed)
    }

    /// Takes up to `max` records into `out`; returns how many.
    pub(crate) fn take(&self, max: usize, out: &mut Vec<Arc<Record>>) -> usize {
        let mut front = lock(&self.records);
        let n = max.min(front.len());
        out.extend(front.drain(..n));
        self.len.store(front.len(), Ordering::Relaxed);
        n
    }
}
