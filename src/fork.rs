//! `fork()`: workers do not survive it, so a forked child must not wait
//! for them.
//!
//! After `fork` only the forking thread exists in the child; a broker's
//! worker threads, their appenders and the records they held stayed with
//! the parent (which writes them), and so did their locks: a lock another
//! thread held at the fork stays held in the child for ever. So in the
//! child every broker that existed before the fork behaves as shut down,
//! and takes no lock: log calls return at once and are counted in
//! `BrokerStats::dropped_after_shutdown` (they are not routed, so no
//! subscription counts them), `flush` returns at once, `shutdown` (dropping
//! the guard) returns at once, `stats` shows only the broker's own counters
//! (a `SubscriptionHandle`'s, its counters without the queue), the broker
//! shows no subscription, and subscribing, reconfiguring and unsubscribing
//! are refused. A child that wants to log
//! builds a new [`Broker`](crate::Broker) (or execs).
//!
//! Detection costs a log call one relaxed load of a global that only a
//! fork changes: a `pthread_atfork` child handler bumps it, and each broker
//! remembers its value at creation. Elsewhere than on Unix there is no
//! `fork`, and nothing to detect.

#[cfg(all(unix, not(miri)))]
use crate::sync::Once;
use crate::sync::{AtomicU64, Ordering};

/// How many forks this process is into, as seen by the child handler.
/// Relaxed: the child's only thread bumps it before the child's code runs
/// again, and only that thread and its descendants read it.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// The fork generation of this process now, registering the child handler
/// the first time. A broker keeps the value it was created under.
pub(crate) fn generation() -> u64 {
    register();
    FORKS.load(Ordering::Relaxed)
}

/// Whether this process is a forked child of the one that read
/// `generation`.
pub(crate) fn forked_since(generation: u64) -> bool {
    FORKS.load(Ordering::Relaxed) != generation
}

#[cfg(all(unix, not(miri)))]
fn register() {
    static REGISTERED: Once = Once::new();
    extern "C" fn in_child() {
        // Async-signal-safe: one atomic add.
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
    REGISTERED.call_once(|| {
        // SAFETY: `pthread_atfork` is given a valid `extern "C"` function
        // that stays alive for the life of the process (a plain function),
        // and null for the handlers we do not need, which POSIX allows. The
        // child handler does nothing but an atomic add, which is safe in a
        // forked child. A non-zero return (ENOMEM) leaves forks undetected,
        // which is what happens without this handler anyway.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
}

/// Miri does not model `fork`; other platforms have none.
#[cfg(not(all(unix, not(miri))))]
fn register() {}
