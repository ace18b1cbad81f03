//! Model checks of logbus' publish/remove gate and wake-up protocol, run
//! with [loom](https://docs.rs/loom) on the code itself.
//!
//! loom cannot build the whole logbus crate (thread-locals, crossbeam), so
//! this crate compiles the files that hold the protocols,
//! `src/queue/gate.rs` and `src/queue/waker.rs`, and the keyed anchors'
//! slot, `src/clock/keyed.rs` (modelled in `keyed.rs`), with `crate::sync` mapped
//! to loom's atomics, fences and threads (the module below; logbus routes
//! every primitive through its own `sync.rs` for this). What loom cannot
//! model is mapped to its worst case: `park_timeout` is `park`, so a model
//! passes only if no wake-up ever depends on a timeout. The lane is reduced
//! to what the protocols read of it: a `tail` stored with `Release` and
//! loaded with `Acquire`, as `src/queue/lane.rs` does.
//!
//! The models are in `models.rs` (and `handover.rs`, the replay's
//! hand-over, and `slots.rs`, a lane's slots, which model code this crate
//! cannot build). Three model the multi-cursor ring issue 16's item 2 calls
//! for, ahead of its code: `broadcast.rs` its cursors, `stamp.rs` a
//! record's one time (the first reader's exchange of the stamp; the
//! shared anchors of `keyed.rs` give it without an exchange) and
//! `order.rs` one thread's order across the lanes a subscription reads.
//! `cargo test -p logbus-loom` runs them (under a minute on two cores). Each protocol also has a model of a
//! broken variant that loom must reject, so that the models are known to
//! be able to fail.

/// logbus' `sync.rs`, on loom's primitives.
pub(crate) mod sync {
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::OnceLock;

    /// logbus' two sides of its fence (`src/sync/barrier.rs`), taken as
    /// its fallback: a `SeqCst` fence each. loom has no `membarrier`; the
    /// kernel's side is argued in `barrier.rs` and stress-tested in
    /// `waker.rs`.
    pub(crate) fn fence_light() {
        fence(Ordering::SeqCst);
    }

    /// See [`fence_light`].
    pub(crate) fn fence_heavy() {
        fence(Ordering::SeqCst);
    }

    /// Threads, with `park_timeout` taken at its worst: no timeout.
    pub(crate) mod thread {
        pub(crate) use loom::thread::{current, yield_now, Thread};

        /// loom has no timed park: a wake-up that would come only from the
        /// timeout never comes, and the model fails with a deadlock.
        pub(crate) fn park_timeout(_timeout: std::time::Duration) {
            loom::thread::park();
        }
    }

    /// A short timed wait, taken at its best: the timeout always fires
    /// (the long idle park, `park_timeout` above, is taken at its worst).
    pub(crate) fn nap(_timeout: std::time::Duration) {
        loom::thread::yield_now();
    }

    /// As in logbus' `sync.rs`.
    #[derive(Debug, Default)]
    #[repr(align(64))]
    pub(crate) struct CacheLine<T>(pub(crate) T);

    impl<T> std::ops::Deref for CacheLine<T> {
        type Target = T;

        fn deref(&self) -> &T {
            &self.0
        }
    }
}

/// logbus' `src/queue/gate.rs`, unchanged.
#[allow(dead_code, unreachable_pub)]
#[path = "../../src/queue/gate.rs"]
pub(crate) mod gate;

/// logbus' `src/clock/keyed.rs`, unchanged: the keyed anchors' slot.
#[allow(dead_code, unreachable_pub)]
#[path = "../../src/clock/keyed.rs"]
pub(crate) mod keyed_slot;

/// logbus' `src/queue/waker.rs`, unchanged.
#[allow(dead_code, unreachable_pub)]
#[path = "../../src/queue/waker.rs"]
pub(crate) mod waker;

#[cfg(test)]
mod broadcast;
#[cfg(test)]
mod handover;
#[cfg(test)]
mod keyed;
#[cfg(test)]
mod models;
#[cfg(test)]
mod order;
#[cfg(test)]
mod slots;
#[cfg(test)]
mod stamp;
