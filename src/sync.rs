//! The synchronisation primitives logbus uses, in one place.
//!
//! Everything concurrent in the crate goes through these names so that a
//! model checker (loom) or another lock implementation could be swapped in
//! here without touching the broker.

pub(crate) use std::hint::spin_loop;
pub(crate) use std::sync::atomic::{
    compiler_fence, fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
/// For tests that start threads at once.
#[cfg(test)]
pub(crate) use std::sync::Barrier;
/// Only `fork.rs`'s handler registration uses it, on Unix outside Miri.
#[cfg(all(unix, not(miri)))]
pub(crate) use std::sync::Once;
pub(crate) use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
pub(crate) use std::thread;

mod barrier;
/// The two sides of the gate's and the wake-up's fence (`sync/barrier.rs`):
/// a publisher's, which costs nothing where the kernel lets the other side
/// interrupt every thread, and a remover's or sleeping worker's.
pub(crate) use self::barrier::{
    heavy as fence_heavy, light as fence_light, prepare as prepare_fences,
};

/// Parks the calling thread for at most `timeout`: a wait whose end comes
/// from the timeout (loom's model, which has no timed park, yields instead:
/// the timeout always fires there).
pub(crate) fn nap(timeout: std::time::Duration) {
    thread::park_timeout(timeout);
}

/// Locks `mutex`, ignoring poisoning.
///
/// Every mutex in logbus guards data that stays consistent even if a holder
/// panics (we never call user code while holding one), so a poisoned lock is
/// still safe to use and must not turn one panic into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps a value on its own cache line (64 bytes on x86-64 and most ARM
/// cores), so that writes to neighbouring data by another thread do not
/// bounce the line this value lives on (false sharing).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct CacheLine<T>(pub(crate) T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
