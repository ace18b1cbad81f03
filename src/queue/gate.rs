//! The gate: how a removal (unsubscribe, reconfiguration, shutdown) knows
//! that no publisher will enqueue into a subscription with a stale routing
//! decision. Every push into a queue passes it: a publisher's lane push, a
//! push through the shared channel (log calls after thread-local teardown,
//! dead letters from other workers).
//!
//! # Protocol
//!
//! Two kinds of pusher hold the gate open:
//!
//! - a lane's producer sets its lane's [`BusyFlag`] (a plain `Relaxed`
//!   store; only that producer writes it), for every subscription of its
//!   route, then issues **one** [`fence`] for all of them: the light side
//!   of `sync/barrier.rs`'s pair, a compiler fence where the kernel lets
//!   the remover interrupt every thread, else a `SeqCst` fence;
//! - a pusher without a lane increments the subscription's [`SharedGate`]
//!   counter, then issues a `SeqCst` fence ([`SharedGate::enter`] does
//!   both).
//!
//! Then the pusher re-reads the broker's generation; if it changed, it
//! leaves and routes again. It enqueues, and leaves: the flag is cleared or
//! the counter decremented with `Release`, so its enqueue happens before a
//! remover's (or a worker's) `Acquire` load that sees it gone.
//!
//! A remover publishes the new configuration and bumps the generation,
//! then [`wait_closed`]: the heavy side of the pair (a `SeqCst` fence, and
//! where registered the `membarrier` call that makes every thread of the
//! process issue a full barrier), then it loads every flag and the counter
//! (`Acquire`) until none is set. With two `SeqCst` fences (the fallback,
//! and what loom checks), the fences are ordered in the single total order
//! of `SeqCst` operations; with the kernel's side, the barrier it puts
//! into each pusher's execution is ordered before or after the pusher's
//! flag store (`sync/barrier.rs` argues the two cases). For each pusher
//! either
//!
//! - the pusher's fence (or flag store) comes first: the remover's loads,
//!   after its own fence, see the pusher's flag set (or its later
//!   clearing, whose `Release` makes the enqueue visible): it waits for
//!   the enqueue, which the worker then drains; or
//! - the remover's fence comes first: the pusher's generation load, after
//!   its fence, sees the bump: it routes again under the new configuration.
//!
//! So a record is routed wholly under the old or wholly under the new
//! configuration, and nothing is enqueued after a worker's final drain. A
//! lane registered after the remover copied the lane list was registered
//! under the subscription's registry lock after the bump, so its producer
//! sees the new generation too. A producer that moves to a new lane inside
//! its gate (`LaneProducer::replace`: a lane's growth) sets the new lane's
//! flag before it closes the old one (`Release`), and keeps the old flag set
//! until it leaves: a remover that copied the list before the new lane was
//! registered waits on the old flag; one that copied it after the drain
//! forgot the old lane (which it does only after reading it closed) sees
//! the new flag. The same flags and fence serve the worker's
//! wake-up (`waker.rs`), and `loom/` model-checks both uses.
//!
//! Publishers run no user code inside the gate (the record is built and
//! the predicates run before it is entered), so a removal made from a
//! predicate or a `Display` impl never waits for its own thread, and one
//! that panics cannot hold the gate: leaving is done by guards' `Drop`.
//! Publishers never block under the drop policies, so the wait is short;
//! under `Block` it lasts until the worker has made room for them.

use std::time::Instant;

use crate::sync::{
    fence as atomic_fence, fence_heavy, fence_light, spin_loop, thread, AtomicBool, AtomicUsize,
    CacheLine, Ordering,
};

/// One lane's side of the gate: set by its producer while it enqueues.
/// On its own cache line: the producer writes it twice per record, and no
/// one else writes near it.
#[derive(Debug, Default)]
pub(crate) struct BusyFlag(CacheLine<AtomicBool>);

impl BusyFlag {
    /// Marks the producer inside. Relaxed: the producer issues one
    /// [`fence`] after marking every lane of its route.
    pub(crate) fn enter(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Marks the producer gone. Release: its pushes happen before a
    /// remover's `Acquire` load that sees `false`.
    pub(crate) fn leave(&self) {
        self.0.store(false, Ordering::Release);
    }

    /// Whether the producer is inside (a remover's or a worker's look,
    /// after its own heavy fence). Acquire: seeing the flag cleared makes
    /// the producer's enqueue visible (its `leave` is `Release`).
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The producer's fence between marking its lanes busy and re-reading the
/// generation: the other half of the remover's fence ([`wait_closed`])
/// and of a sleeping worker's (`waker.rs`). Its light side
/// (`sync/barrier.rs`): a compiler fence where the other side makes every
/// thread issue a full barrier, else a `SeqCst` fence.
#[inline]
pub(crate) fn fence() {
    fence_light();
}

/// The gate of the pushers that have no lane: a count of those inside.
/// On its own cache line, away from the counters the worker writes.
#[derive(Debug, Default)]
pub(crate) struct SharedGate(CacheLine<AtomicUsize>);

impl SharedGate {
    /// Enters, and issues the protocol's fence: the pusher may then re-read
    /// the generation (a dead letter instead relies on its route being
    /// stopped only after every subscription that feeds it). Relaxed: the
    /// fence that follows orders the increment.
    pub(crate) fn enter(&self) -> SharedPass<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        // A real fence (not the light side): these pushers are rare, and a
        // fence pairs with either kind of the other side.
        atomic_fence(Ordering::SeqCst);
        SharedPass(self)
    }

    /// Whether a pusher is inside (as for [`BusyFlag::is_set`]).
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire) != 0
    }
}

/// A pusher inside a [`SharedGate`]; leaves when dropped (also on
/// unwinding).
#[derive(Debug)]
pub(crate) struct SharedPass<'g>(&'g SharedGate);

impl Drop for SharedPass<'_> {
    fn drop(&mut self) {
        // Release: our push happens before the remover's Acquire load that
        // observes 0.
        self.0 .0.fetch_sub(1, Ordering::Release);
    }
}

/// The remover's side: waits until no pusher is inside `shared` and no
/// flag of `lanes` is set, or until `deadline`; returns whether the gate
/// closed. Called after the generation was bumped.
pub(crate) fn wait_closed<'a>(
    shared: &SharedGate,
    lanes: impl Iterator<Item = &'a BusyFlag> + Clone,
    deadline: Option<Instant>,
) -> bool {
    // The remover's fence: orders the generation bump before the loads, and
    // is the heavy side that a producer's light one pairs with.
    fence_heavy();
    let mut spins = 0u32;
    loop {
        let busy = shared.is_set() || lanes.clone().any(BusyFlag::is_set);
        if !busy {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        spins += 1;
        if spins < 64 {
            spin_loop();
        } else {
            thread::yield_now();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_gate_closes_when_every_pusher_has_left() {
        let shared = SharedGate::default();
        let flags = [BusyFlag::default(), BusyFlag::default()];
        assert!(wait_closed(&shared, flags.iter(), None));
        flags[1].enter();
        let soon = Some(Instant::now() + Duration::from_millis(1));
        assert!(!wait_closed(&shared, flags.iter(), soon));
        flags[1].leave();
        let pass = shared.enter();
        assert!(!wait_closed(&shared, flags.iter(), soon));
        drop(pass);
        assert!(wait_closed(&shared, flags.iter(), None));
    }
}
