//! An asymmetric fence: a publisher's side that costs nothing at run time,
//! and an observer's side that makes every thread of the process issue a
//! full barrier (Linux's `membarrier`).
//!
//! # What it is for
//!
//! The gate and the wake-up (`queue/gate.rs`, `queue/waker.rs`) are
//! store-buffering pairs: a publisher stores its lane's busy flag and then
//! loads the broker's generation and the worker's `sleeping` flag; a
//! remover or a sleeping worker stores the generation or `sleeping` and
//! then loads the busy flags. Each side needs a full fence between its
//! store and its loads, so that at least one of them sees the other's
//! store. Publishers pass that fence on every log call; removers and
//! sleeping workers seldom (a removal, a shutdown, a worker that dozed
//! for milliseconds and is about to park). [`light`] is the publisher's
//! side and [`heavy`] the other's.
//!
//! # The two sides
//!
//! Where the kernel offers `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (Linux 4.14
//! and later, registered once per process as the first broker is made,
//! which a forked child inherits),
//! [`light`] is a compiler fence: no instruction, only no reordering by the
//! compiler of the stores before it with the loads after it. [`heavy`] is a
//! `SeqCst` fence followed by the `membarrier` system call, which returns
//! only after every other thread of the process that is running has
//! executed a full memory barrier (the kernel interrupts its CPU), and a
//! thread that is not running passes one when the kernel switches it back
//! in. Elsewhere (another system, a kernel without it, a seccomp filter
//! that refuses it with an error, Miri, loom), both sides are `SeqCst`
//! fences, which pair as the C++ memory model's fences do. Android is
//! elsewhere too: before Android 10 its apps' seccomp filter kills a
//! process that calls `membarrier`. Linux's usual filters allow it
//! (systemd lists it in `@default`, the set every `SystemCallFilter=`
//! allows) or return an error; a filter that kills on any call it does
//! not list kills the process at its first broker. Should the
//! kernel's barrier fail once the process registered (it does not, short
//! of the kernel running out of memory for a CPU mask, which is retried),
//! and the system-wide barrier too, the process aborts with a message on
//! stderr: publishers that skipped their fence would otherwise go
//! unordered.
//!
//! # Why the pair still holds
//!
//! Take a publisher P that stores `s` (its flag), then, past [`light`],
//! loads `l` (the generation or `sleeping`); and an observer O that stores
//! `l'` (a new generation, `sleeping = true`), then calls [`heavy`], then
//! loads `s'` (the flags). The `membarrier` call puts a full barrier `B`
//! into P's execution somewhere between O's call and its return, and the
//! compiler fence keeps P's store before its load in the instructions it
//! runs. Either
//!
//! - P's store comes before `B`: the barrier makes it visible to every
//!   thread before `B` completes, so before O's call returns, and O's load
//!   of the flag, after the call, sees it (or a later value); or
//! - P's store comes after `B`, and so does P's load, which follows it in
//!   program order: the kernel's barrier on O's side, before it interrupts
//!   P, made O's store visible, and `B` orders P's load after that, so P
//!   sees O's store (or a later value).
//!
//! `B` is one point in P's program, so the same holds for several stores
//! before the fence (a flag per subscription of a route) and several loads
//! after it (the generation, `closed`, each `sleeping`): for each pair of
//! one of P's stores and one of its loads, the first case or the second.
//!
//! A publisher that issued a real `SeqCst` fence instead (one that has no
//! lane, `SharedGate::enter`, or an unregistered process) pairs with
//! either side as a fence does. This is the argument of the
//! `membarrier(2)` manual page and of user-space RCU; the C++ memory model
//! has no system call in it, so loom models the pair with two `SeqCst`
//! fences (the fallback), and `waker.rs` has a stress test that counts
//! lost wake-ups (0) with the kernel's side on.
//!
//! # Cost
//!
//! On the 2-vCPU VM these notes were measured on, `membarrier` took 0.24 µs
//! with no other thread of the process running and about 10 µs with one
//! running (an interrupt through the hypervisor, which also interrupts the
//! running thread for its barrier). A worker calls it once each time it
//! parks after its doze (4.5 ms without a record; so at most once a record
//! for streams slower than that), a removal or shutdown once per
//! subscription. `benches/README.md` (eighteenth session) counts them at
//! steady rates.

use super::{compiler_fence, fence, AtomicU8, Ordering};

/// Not decided yet: publishers fence, and the next heavy side decides.
const UNKNOWN: u8 = 0;
/// Registered: publishers take the compiler fence, heavy sides call the
/// kernel.
const LIGHT: u8 = 1;
/// Not registered, for good: both sides are `SeqCst` fences.
const FENCE: u8 = 2;

/// Which pair the process runs: [`UNKNOWN`] until a first decision, then
/// [`LIGHT`] or [`FENCE`] for good (a compare-exchange from `UNKNOWN`
/// stores it once; a losing decider takes the winner's). A publisher that
/// reads `LIGHT` skipped its fence; a heavy side reads the mode after
/// deciding, so it reads `LIGHT` too (a compare-exchange reads the latest
/// value) and interrupts that publisher. One that reads anything else
/// issues a real fence, which pairs with either heavy side. Not a
/// `OnceLock`: a fork while another thread decided would leave the
/// child's waiting for ever; registering twice is harmless. Relaxed: it
/// guards no data, only which fence a publisher issues.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Decides the mode the first time (registering the process for the
/// kernel's barrier where it can); the mode, [`LIGHT`] or [`FENCE`].
fn decided() -> u8 {
    match MODE.load(Ordering::Relaxed) {
        UNKNOWN => {
            let mode = if kernel::register() { LIGHT } else { FENCE };
            match MODE.compare_exchange(UNKNOWN, mode, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => mode,
                Err(winner) => winner,
            }
        }
        mode => mode,
    }
}

/// Decides the mode, so that publishers take the light side from now on
/// where the kernel allows it: called as a broker is made, before it has
/// publishers (one that came earlier only fences, as it would anyway).
pub(crate) fn prepare() {
    decided();
}

/// The publisher's side: a compiler fence once the process registered for
/// the kernel's barrier (module docs), else a `SeqCst` fence.
#[inline]
pub(crate) fn light() {
    if MODE.load(Ordering::Relaxed) == LIGHT {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The observer's side (a remover, a worker about to park): a `SeqCst`
/// fence, then, where the process registered for it, a full barrier on
/// every other thread of the process (module docs).
pub(crate) fn heavy() {
    fence(Ordering::SeqCst);
    if decided() == LIGHT {
        kernel::barrier();
    }
}

#[cfg(all(target_os = "linux", not(target_env = "uclibc"), not(miri), not(loom)))]
mod kernel {
    //! The `membarrier` system call (`linux/membarrier.h`).

    /// Which commands the kernel supports, as a bit set.
    const QUERY: libc::c_int = 0;
    /// A barrier on every CPU of the system (no registration; slow: it
    /// waits for each CPU to pass a quiescent state).
    const GLOBAL: libc::c_int = 1 << 0;
    /// A barrier on every CPU running a thread of this process.
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    /// The registration [`PRIVATE_EXPEDITED`] needs, once per process.
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// How many times a failed barrier is tried again before the
    /// system-wide one.
    const RETRIES: u32 = 64;

    /// Calls `membarrier(cmd, 0)`; returns its result (`-1` on an error).
    fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: `membarrier` takes two integers and touches no memory of
        // ours; an unknown command or a kernel without the call returns an
        // error (ENOSYS, EINVAL, EPERM), which the callers look at.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint) }
    }

    /// Registers the process for expedited barriers; whether it can use
    /// them (the kernel has them and no filter refused the call).
    pub(super) fn register() -> bool {
        let supported = membarrier(QUERY);
        supported >= 0
            && supported & libc::c_long::from(PRIVATE_EXPEDITED) != 0
            && membarrier(REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// A full barrier on every running thread of the process.
    pub(super) fn barrier() {
        if membarrier(PRIVATE_EXPEDITED) != 0 {
            recover();
        }
    }

    /// A registered process's expedited barrier failed: the kernel could
    /// not allocate its CPU mask (ENOMEM, transient), or the registration
    /// was lost (EPERM). Try again, registering again, then take the
    /// system-wide barrier. Should that fail too (a kernel with
    /// `nohz_full` refuses it), publishers that skipped their fence would
    /// go unordered: a record could slip past a removal, a wake-up be
    /// lost. Nothing can make that right, so the process stops, saying
    /// why.
    #[cold]
    fn recover() {
        for _ in 0..RETRIES {
            crate::sync::thread::yield_now();
            if membarrier(PRIVATE_EXPEDITED) == 0
                || (membarrier(REGISTER_PRIVATE_EXPEDITED) == 0
                    && membarrier(PRIVATE_EXPEDITED) == 0)
            {
                return;
            }
        }
        if membarrier(GLOBAL) == 0 {
            return;
        }
        let error = std::io::Error::last_os_error();
        eprintln!("logbus: membarrier failed after registering ({error}); aborting");
        std::process::abort();
    }

    #[cfg(test)]
    mod tests {
        use super::super::{decided, prepare, LIGHT, MODE};
        use super::*;

        #[test]
        fn the_process_runs_the_pair_exactly_when_it_could_register() {
            prepare();
            // Registering again is harmless and says whether the process
            // can: the mode every thread uses must agree (a kernel, or a
            // container's seccomp filter, without expedited barriers takes
            // the fences).
            let registered = register();
            assert_eq!(decided() == LIGHT, registered);
            assert_eq!(MODE.load(crate::sync::Ordering::Relaxed), decided());
            if registered {
                assert_eq!(membarrier(PRIVATE_EXPEDITED), 0);
                barrier();
            }
        }
    }
}

/// Elsewhere: no kernel barrier, so the mode is decided as the fences.
#[cfg(not(all(target_os = "linux", not(target_env = "uclibc"), not(miri), not(loom))))]
mod kernel {
    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn barrier() {}
}
