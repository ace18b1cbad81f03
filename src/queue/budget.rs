//! Budgets: the bounds of a subscription's queue, in records and in bytes,
//! as one kind of counting semaphore.
//!
//! A budget counts what is in use against a capacity. The record budget is
//! shared by every lane of a subscription and reserved a chunk at a time
//! ([`Budget::reserve_chunk`]: one atomic operation per chunk, not per
//! record); the byte budget is taken exactly per record
//! ([`Budget::try_take`]). Whoever takes a record out of the queue (the
//! drain, or an evicting publisher) gives its share back.
//!
//! Relaxed throughout: a budget bounds memory, it orders nothing (the
//! records themselves are published by the lanes' `tail` and the channel).

use crate::sync::{AtomicUsize, CacheLine, Ordering};

/// A counting semaphore of `capacity` units (records or bytes).
#[derive(Debug)]
pub(crate) struct Budget {
    used: CacheLine<AtomicUsize>,
    capacity: usize,
    /// Open lanes drawing on this budget (record budgets only): sizes the
    /// chunk a lane reserves.
    lanes: AtomicUsize,
}

impl Budget {
    /// A budget of `capacity` units.
    pub(crate) fn new(capacity: usize) -> Budget {
        Budget {
            used: CacheLine(AtomicUsize::new(0)),
            capacity,
            lanes: AtomicUsize::new(0),
        }
    }

    /// Units a lane reserves at a time: 1/64th of the capacity shared by the
    /// open lanes, at most 32, so that idle threads together hold a small
    /// part of the capacity (about 1/64th of it times the logarithm of the
    /// number of threads, when threads arrive one by one) rather than
    /// starving the busy thread. Capacities under 128 reserve one at a
    /// time, so that their bound is exact.
    fn chunk(&self) -> usize {
        // Relaxed: a sizing hint.
        let lanes = self.lanes.load(Ordering::Relaxed).max(1);
        (self.capacity / 64 / lanes).clamp(1, 32)
    }

    /// Reserves up to a chunk of units; returns how many (0 if none left).
    /// The chunk (a hardware division) is worked out only when there is
    /// room: a drop-oldest publisher under a flood finds none on nearly
    /// every call, and evicts instead.
    pub(crate) fn reserve_chunk(&self) -> usize {
        self.take_with(|used| match self.capacity.saturating_sub(used) {
            0 => 0,
            room => room.min(self.chunk()),
        })
    }

    /// Takes exactly `n` units if they fit, or if nothing is in use (a lone
    /// record larger than the whole budget still gets through, alone);
    /// returns whether it took them.
    pub(crate) fn try_take(&self, n: usize) -> bool {
        self.take_with(|used| {
            if used == 0 || used.saturating_add(n) <= self.capacity {
                n
            } else {
                0
            }
        }) > 0
            || n == 0
    }

    /// Takes `grant(used)` units (0 takes nothing); returns what it took.
    fn take_with(&self, grant: impl Fn(usize) -> usize) -> usize {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let take = grant(used);
            if take == 0 {
                return 0;
            }
            match self.used.compare_exchange_weak(
                used,
                used + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => used = now,
            }
        }
    }

    /// Gives back `n` units (taken before: a budget never gives back more
    /// than was taken, which the debug assertion checks).
    pub(crate) fn release(&self, n: usize) {
        if n > 0 {
            let before = self.used.fetch_sub(n, Ordering::Relaxed);
            debug_assert!(before >= n, "budget released {n} of {before} in use");
        }
    }

    /// Units in use now (a moment's reading).
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether half the capacity or more is in use now (a moment's
    /// reading).
    pub(crate) fn half_used(&self) -> bool {
        self.used.load(Ordering::Relaxed) >= self.capacity / 2
    }

    /// A lane starts drawing on this budget.
    pub(crate) fn lane_opened(&self) {
        // Relaxed: a sizing hint (see `chunk`).
        self.lanes.fetch_add(1, Ordering::Relaxed);
    }

    /// A lane stopped drawing on this budget.
    pub(crate) fn lane_closed(&self) {
        // Relaxed: a sizing hint (see `chunk`).
        self.lanes.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_used_reads_what_is_taken() {
        let budget = Budget::new(100);
        assert!(!budget.half_used());
        assert!(budget.try_take(49));
        assert!(!budget.half_used());
        assert!(budget.try_take(1));
        assert!(budget.half_used());
        budget.release(1);
        assert!(!budget.half_used());
    }

    #[test]
    fn chunks_shrink_with_lanes_and_never_exceed_the_capacity() {
        let budget = Budget::new(8192);
        assert_eq!(budget.reserve_chunk(), 32);
        for _ in 0..8 {
            budget.lane_opened();
        }
        assert_eq!(budget.reserve_chunk(), 16);
        let small = Budget::new(3);
        assert_eq!(
            (
                small.reserve_chunk(),
                small.reserve_chunk(),
                small.reserve_chunk()
            ),
            (1, 1, 1)
        );
        assert_eq!(small.reserve_chunk(), 0);
        small.release(2);
        assert_eq!(small.reserve_chunk(), 1);
    }

    #[test]
    fn exact_takes_fit_or_go_alone() {
        let bytes = Budget::new(100);
        assert!(bytes.try_take(60));
        assert!(!bytes.try_take(41));
        assert!(bytes.try_take(40));
        bytes.release(100);
        // Larger than the whole budget: only into an empty queue.
        assert!(bytes.try_take(500));
        assert!(!bytes.try_take(1));
        bytes.release(500);
        assert!(bytes.try_take(1));
    }
}
