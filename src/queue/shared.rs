//! The shared channel: the part of a subscription's queue that takes the
//! pushes without a lane (dead letters that other workers push, log calls
//! made after a thread's locals were destroyed).
//!
//! These pushes are rare, so the channel is a `VecDeque` under a mutex,
//! which lets it be what a lane is to the drain: a [`Source`] in `seq`
//! order whose oldest `seq` can be read without taking the record. So the
//! drain merges it with the lanes (a thread's exit-time record comes after
//! its lane records, wherever the batch boundaries fall), and drop-oldest
//! can evict its head like a lane's. Its records draw on the
//! subscription's record budget like the lanes': the queue is bounded as a
//! whole.
//!
//! `len` mirrors the deque's length outside the lock, so that the worker's
//! looks and the merge skip the lock while the channel is empty (nearly
//! always): it is raised (`Release`) after a push, under the lock, and read
//! with `Acquire`, so a reader that sees it raised sees the record.

use std::collections::VecDeque;

use logbus_appenders::Record;

use super::budget::Budget;
use super::drain::Source;
use super::lane::Taker;
use crate::sync::{lock, Arc, AtomicUsize, Mutex, Ordering};

/// A bounded channel of shared records that can evict its oldest one.
pub(crate) struct SharedChannel {
    state: Mutex<State>,
    len: AtomicUsize,
    budget: Arc<Budget>,
}

struct State {
    records: VecDeque<Arc<Record>>,
    /// Records taken or evicted so far: the index of the front record.
    head: usize,
}

impl SharedChannel {
    /// An empty channel drawing on `budget`.
    pub(crate) fn new(budget: Arc<Budget>) -> SharedChannel {
        SharedChannel {
            state: Mutex::new(State {
                records: VecDeque::new(),
                head: 0,
            }),
            len: AtomicUsize::new(0),
            budget,
        }
    }

    /// Records waiting (a moment's reading).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Appends `record` if a place is free in the budget, or if the caller
    /// `holds` some (it evicted records: their places passed to it, and one
    /// is used now); hands the record back otherwise.
    pub(crate) fn try_push(
        &self,
        record: Arc<Record>,
        holds: &mut usize,
    ) -> Result<(), Arc<Record>> {
        if *holds == 0 && !self.budget.try_take(1) {
            return Err(record);
        }
        *holds = holds.saturating_sub(1);
        let mut state = lock(&self.state);
        state.records.push_back(record);
        // Release, under the lock (so that a take cannot lower it first):
        // see the module docs.
        self.len.fetch_add(1, Ordering::Release);
        drop(state);
        Ok(())
    }

    /// Takes the oldest record out if its `seq` is below `limit`
    /// (drop-oldest): its place passes to the caller.
    pub(crate) fn evict_head_below(&self, limit: u64) -> Option<Arc<Record>> {
        let mut state = lock(&self.state);
        if state.records.front()?.seq() >= limit {
            return None;
        }
        state.head += 1;
        self.len.fetch_sub(1, Ordering::Relaxed);
        state.records.pop_front()
    }

    /// The index the next record will have: every record pushed before
    /// this call is below (a flush barrier's mark).
    pub(crate) fn tail(&self) -> usize {
        let state = lock(&self.state);
        state.head + state.records.len()
    }

    /// The index of the front record: every record below was taken or
    /// evicted.
    pub(crate) fn head(&self) -> usize {
        lock(&self.state).head
    }
}

impl Source for SharedChannel {
    fn peek_seq(&self) -> Option<u64> {
        if self.len() == 0 {
            return None;
        }
        lock(&self.state).records.front().map(|r| r.seq())
    }

    fn take_below(
        &self,
        limit: u64,
        max: usize,
        out: &mut Vec<Arc<Record>>,
        _: &mut Taker,
        bytes: Option<&Budget>,
    ) -> usize {
        if self.len() == 0 {
            return 0;
        }
        let mut state = lock(&self.state);
        let mut taken = 0;
        while taken < max && state.records.front().is_some_and(|r| r.seq() < limit) {
            out.extend(state.records.pop_front());
            taken += 1;
        }
        state.head += taken;
        self.len.fetch_sub(taken, Ordering::Relaxed);
        drop(state);
        self.budget.release(taken);
        if let Some(bytes) = bytes {
            bytes.release(
                out[out.len() - taken..]
                    .iter()
                    .map(|r| r.approx_size())
                    .sum(),
            );
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_record as record;

    #[test]
    fn a_source_bounded_by_its_budget_that_evicts_its_oldest() {
        let channel = SharedChannel::new(Arc::new(Budget::new(2)));
        let mut holds = 0;
        channel.try_push(record(0), &mut holds).unwrap();
        channel.try_push(record(1), &mut holds).unwrap();
        assert_eq!(
            channel.try_push(record(2), &mut holds).unwrap_err().seq(),
            2
        );
        assert_eq!(channel.peek_seq(), Some(0));
        assert!(channel.evict_head_below(0).is_none(), "not below the limit");
        assert_eq!(channel.evict_head_below(1).map(|r| r.seq()), Some(0));
        // The evicted record's place is the caller's now.
        holds = 1;
        channel.try_push(record(2), &mut holds).unwrap();
        assert_eq!(holds, 0);
        assert_eq!((channel.head(), channel.tail(), channel.len()), (1, 3, 2));
        let mut out = Vec::new();
        assert_eq!(
            channel.take_below(2, 10, &mut out, &mut Taker::default(), None),
            1
        );
        assert_eq!(
            channel.take_below(u64::MAX, 10, &mut out, &mut Taker::default(), None),
            1
        );
        assert_eq!(out.iter().map(|r| r.seq()).collect::<Vec<_>>(), [1, 2]);
        // Taking gave the places back.
        channel.try_push(record(3), &mut holds).unwrap();
        channel.try_push(record(4), &mut holds).unwrap();
    }
}
