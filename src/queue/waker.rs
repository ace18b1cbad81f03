//! The waker: how an idle worker parks and how publishers wake it, with
//! the one `sleeping` flag and its protocol in one place.
//!
//! # Protocol (today's; see the caveat)
//!
//! - The worker, finding nothing to do, sets `sleeping` and issues a
//!   `SeqCst` fence, looks for work once more, and parks. It keeps the flag
//!   set while it sleeps (wake-ups without work do not clear it) and clears
//!   it when it goes back to work.
//! - A publisher, after its push, reads `sleeping` (`Relaxed`, no fence: a
//!   fence there would cost what lanes save) and unparks the worker if set.
//!   Flush and shutdown requesters, and a publisher that dropped a record
//!   (for the drop summary), unpark unconditionally.
//!
//! The publisher's read is not ordered after its push, so a publisher
//! racing with the worker falling asleep can miss the flag while the worker
//! misses the record. The worker therefore looks again [`IDLE_RECHECK`]
//! (1 ms) after setting the flag, and parks for at most [`IDLE_PARK`]
//! (10 s) at a time. **Caveat:** this relies on something the memory model
//! does not promise but every CPU we know provides: a store (the racing
//! publisher's tail) becomes visible to other cores within a millisecond.
//! If it ever did not, the record would be late by up to 10 s, never lost.
//! Replacing it with a protocol that has a proof is the delivery issue's.

use std::time::{Duration, Instant};

use crate::sync::{fence, thread, AtomicBool, CacheLine, OnceLock, Ordering};

/// How long an idle worker that just said it sleeps waits before it looks
/// for work once more (see the module docs): a record missed in the race is
/// late by at most this much.
const IDLE_RECHECK: Duration = Duration::from_millis(1);

/// After the second look the flag has long been visible, so every later
/// publisher sees it and unparks the worker: it parks with this long a
/// timeout, a safety net only (an idle worker wakes once per this period,
/// however many subscriptions there are).
const IDLE_PARK: Duration = Duration::from_secs(10);

/// One worker's parking place.
#[derive(Debug, Default)]
pub(crate) struct Waker {
    /// Set by the worker before it parks, cleared when it goes back to
    /// work; read by publishers after each push. On its own cache line:
    /// read on every publish, written only when the worker sleeps or wakes.
    sleeping: CacheLine<AtomicBool>,
    /// The worker's thread, to unpark it; set once by the worker.
    thread: OnceLock<thread::Thread>,
}

impl Waker {
    /// Called on the worker's thread when it starts.
    pub(crate) fn register(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// Unparks the worker if it said it is going to sleep (a publisher,
    /// after its push).
    pub(crate) fn wake_if_sleeping(&self) {
        // Relaxed: see the module docs.
        if self.sleeping.load(Ordering::Relaxed) {
            self.wake();
        }
    }

    /// Unparks the worker (it parks again if there is nothing to do).
    pub(crate) fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// The worker's side: parks until `has_work` says there is something to
    /// do, or [`IDLE_PARK`] passed without a wake-up (the worker then does
    /// its idle duties and comes back).
    pub(crate) fn sleep(&self, mut has_work: impl FnMut() -> bool) {
        self.sleeping.store(true, Ordering::Relaxed);
        // Our half of the store-then-load pattern: the flag store is
        // ordered before our later loads of the queue. (The publisher's
        // half has no fence; see the module docs.)
        fence(Ordering::SeqCst);
        let flagged = Instant::now();
        while !has_work() {
            // A wake-up may come early (a stale unpark, or a spurious one):
            // the second look must still come a full `IDLE_RECHECK` after
            // the flag was set.
            let since = flagged.elapsed();
            if since < IDLE_RECHECK {
                thread::park_timeout(IDLE_RECHECK - since);
                continue;
            }
            let before = Instant::now();
            thread::park_timeout(IDLE_PARK);
            if before.elapsed() >= IDLE_PARK {
                break;
            }
        }
        // Relaxed: a hint for publishers; see the module docs.
        self.sleeping.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{Arc, AtomicBool as Flag};

    #[test]
    fn a_sleeping_worker_is_woken_by_a_publisher() {
        let waker = Arc::new(Waker::default());
        let work = Arc::new(Flag::new(false));
        let (registered_tx, registered_rx) = crossbeam_channel::bounded(0);
        let worker = {
            let (waker, work) = (Arc::clone(&waker), Arc::clone(&work));
            thread::spawn(move || {
                waker.register();
                registered_tx.send(()).unwrap();
                waker.sleep(|| work.load(Ordering::SeqCst));
            })
        };
        registered_rx.recv().unwrap();
        work.store(true, Ordering::SeqCst);
        waker.wake();
        worker.join().unwrap();
        assert!(!waker.sleeping.load(Ordering::Relaxed));
    }
}
