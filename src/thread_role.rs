//! What the current thread is to logbus: an ordinary caller, a caller in
//! the middle of routing a record, or a logbus worker; and its identity as
//! records show it.
//!
//! # The re-entrancy rule
//!
//! A log call made on a logbus worker thread (from inside an appender), or
//! made while logbus is already routing a record on the same thread (from a
//! subscription predicate), is discarded and counted in
//! [`BrokerStats::suppressed`](crate::BrokerStats::suppressed). It can
//! therefore neither deadlock (no lock is taken) nor loop (no record is
//! produced). Appenders report their problems by returning errors instead.
//!
//! On the ground floor: the worker marks its thread, the broker asks who
//! is calling, the `log` backend enters the routing state; none of them
//! needs the others for it.

use std::cell::Cell;
use std::collections::HashSet;

use logbus_appenders::ThreadInfo;

use crate::sync::{lock, thread, Mutex};

/// The role of the current thread. States and transitions:
/// `IDLE -> ROUTING` (a log call starts routing) `-> IDLE` (it ends, also
/// on unwinding); `IDLE -> WORKER` once, when a worker thread starts.
const IDLE: u8 = 0;
/// Routing a record right now (a predicate may be running).
const ROUTING: u8 = 1;
/// A logbus worker thread, for its whole life.
const WORKER: u8 = 2;

thread_local! {
    static STATE: Cell<u8> = const { Cell::new(IDLE) };
    static THREAD: Cell<Option<ThreadInfo>> = const { Cell::new(None) };
    /// The address of the subscription whose worker this thread is (0 on
    /// other threads). Const and without a destructor, so it is still
    /// readable in an `atexit` handler running on this thread, after the
    /// thread-locals with destructors are gone.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
    /// Set while this thread runs a replay's predicate ([`ReplayGuard`]).
    static REPLAYING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as the worker of the subscription at address
/// `subscription` (for its whole life).
pub(crate) fn mark_worker_thread(subscription: usize) {
    STATE.with(|s| s.set(WORKER));
    WORKER_OF.with(|w| w.set(subscription));
}

/// The address of the subscription whose worker the current thread is, or
/// 0; readable at `exit` (see `WORKER_OF`).
pub(crate) fn worker_of() -> usize {
    WORKER_OF.try_with(Cell::get).unwrap_or(0)
}

/// Whether the current thread is a logbus worker.
pub(crate) fn on_worker_thread() -> bool {
    STATE.try_with(|s| s.get() == WORKER).unwrap_or(false)
}

/// Whether this thread runs a replay's predicate right now (the
/// subscribing thread, while the replaying subscription's queue is held:
/// `broker/journal.rs`, `finish_replay`).
pub(crate) fn replaying() -> bool {
    REPLAYING.try_with(Cell::get).unwrap_or(false)
}

/// Marks this thread as running a replay's predicate until dropped (also
/// on unwinding).
pub(crate) struct ReplayGuard(());

impl ReplayGuard {
    pub(crate) fn enter() -> ReplayGuard {
        let _ = REPLAYING.try_with(|r| r.set(true));
        ReplayGuard(())
    }
}

impl Drop for ReplayGuard {
    fn drop(&mut self) {
        let _ = REPLAYING.try_with(|r| r.set(false));
    }
}

/// Whether a log call on this thread must be discarded (re-entrancy rule).
pub(crate) fn in_logbus() -> bool {
    STATE.try_with(|s| s.get() != IDLE).unwrap_or(true)
}

/// The routing state of this thread, left when dropped (also on unwinding).
pub(crate) struct RoutingGuard(());

impl RoutingGuard {
    /// Enters the routing state, or `None` if the re-entrancy rule says the
    /// call must be discarded.
    pub(crate) fn enter() -> Option<RoutingGuard> {
        STATE
            .try_with(|s| {
                if s.get() == IDLE {
                    s.set(ROUTING);
                    Some(RoutingGuard(()))
                } else {
                    None
                }
            })
            .ok()
            .flatten()
    }
}

impl Drop for RoutingGuard {
    fn drop(&mut self) {
        let _ = STATE.try_with(|s| s.set(IDLE));
    }
}

/// Most thread names interned for the life of the process; past the cap
/// (programs that spawn endless uniquely named threads) names are omitted.
const THREAD_NAMES_CAP: usize = 1024;

/// Interned thread names. The caller takes this lock once per thread, on
/// its first record (the result is cached in `THREAD`).
static THREAD_NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// The current thread's id and interned name, computed once per thread.
pub(crate) fn thread_info() -> ThreadInfo {
    THREAD
        .try_with(|cell| {
            if let Some(info) = cell.get() {
                return info;
            }
            let info = compute_thread_info();
            cell.set(Some(info));
            info
        })
        .unwrap_or_else(|_| compute_thread_info())
}

fn compute_thread_info() -> ThreadInfo {
    let current = thread::current();
    // `ThreadId::as_u64` is unstable; its Debug form is `ThreadId(N)`.
    let debug = format!("{:?}", current.id());
    let id = debug
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0);
    let name = current.name().and_then(|name| {
        let mut names = lock(&THREAD_NAMES);
        let names = names.get_or_insert_with(HashSet::new);
        if let Some(&interned) = names.get(name) {
            return Some(interned);
        }
        if names.len() >= THREAD_NAMES_CAP {
            return None;
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(leaked);
        Some(leaked)
    });
    ThreadInfo { id, name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_is_not_reentrant_and_workers_are_marked() {
        thread::spawn(|| {
            assert!(!in_logbus());
            let guard = RoutingGuard::enter().expect("idle thread");
            assert!(in_logbus() && RoutingGuard::enter().is_none());
            drop(guard);
            assert!(!in_logbus() && !on_worker_thread());
            mark_worker_thread(1);
            assert!(on_worker_thread() && in_logbus() && RoutingGuard::enter().is_none());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn thread_info_names_the_thread_once() {
        let info = thread::Builder::new()
            .name("role-test".into())
            .spawn(|| (thread_info(), thread_info()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(info.0.name, Some("role-test"));
        assert_eq!(info.0.id, info.1.id);
    }
}
