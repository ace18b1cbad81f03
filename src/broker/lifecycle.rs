//! Flush barriers and shutdown, over every subscription at once.
//!
//! Both work in two phases: first the ordinary subscriptions, then the
//! dead-letter route, which the first phase may feed. A flush sends each
//! worker a barrier request and waits for the acknowledgements; shutdown
//! closes the broker (`closed`, a generation bump), waits for each gate,
//! tells every worker to drain and joins them before the deadline.
//!
//! The exit hook's drain (`drain_at_exit`) is a flush that may run on any
//! thread at `exit`, a worker's included; its cases are argued there.

use std::time::{Duration, Instant};

use super::BrokerShared;
use crate::error::FlushError;
use crate::stats::ShutdownReport;
use crate::subscription::{Control, SubShared};
use crate::sync::{Arc, Ordering};
use crate::thread_role;
use crate::worker;

impl BrokerShared {
    pub(super) fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        self.flush_some(timeout, None)
    }

    pub(super) fn flush_some(
        &self,
        timeout: Duration,
        only: Option<&str>,
    ) -> Result<(), FlushError> {
        if thread_role::on_worker_thread() {
            return Err(FlushError::OnWorkerThread);
        }
        if self.in_forked_child() {
            // Nothing of this process is queued: its log calls were counted
            // as dropped, and the queues' contents are the parent's.
            return Ok(());
        }
        let pending = self.flush_where(deadline_after(timeout), |sub| {
            only.map_or(true, |name| name == &*sub.name)
        });
        if pending.is_empty() {
            Ok(())
        } else {
            Err(FlushError::Timeout {
                waited: timeout,
                pending,
            })
        }
    }

    /// Flushes the subscriptions `wanted` accepts, then the dead-letter
    /// route if it accepts it; returns the names of those that did not
    /// answer by `deadline`.
    fn flush_where(&self, deadline: Instant, wanted: impl Fn(&SubShared) -> bool) -> Vec<String> {
        let snapshot = self.snapshot();
        // Subscriptions being removed (unsubscribe, replace) still write
        // records enqueued before this call (a review found flush returning
        // before them).
        let removing: Vec<Arc<SubShared>> = self.lock_config().removing.clone();
        let subs: Vec<&SubShared> = snapshot
            .entries
            .iter()
            .map(|e| &*e.sub)
            .chain(removing.iter().map(|s| &**s))
            .filter(|sub| wanted(sub))
            .collect();
        let mut pending = flush_all(&subs, deadline);
        // Second phase: the dead-letter route, which the first phase may
        // have fed.
        if let Some(dead) = self.dead_letters.get() {
            if wanted(dead) {
                pending.extend(flush_all(&[&**dead], deadline));
            }
        }
        pending
    }

    /// What the exit hook (`log_backend.rs`) does at `exit` for the
    /// installed broker: a flush of every subscription, bounded by
    /// `timeout`, that never waits for the calling thread's own worker.
    /// Returns the names of the subscriptions that did not finish.
    ///
    /// `exit` runs the hook on the thread that called it, while every other
    /// thread still runs; so the workers are there to drain, and the only
    /// ways to wait for ever are waiting for something that cannot come.
    /// The cases:
    ///
    /// - **A forked child** (the hook is inherited across `fork`): the
    ///   workers stayed with the parent and a lock another thread held at
    ///   the fork stays held. Checked first, before any lock: nothing to
    ///   drain (the child's log calls were counted as dropped, `fork.rs`).
    /// - **After a shutdown** (explicit, or still under way on another
    ///   thread): that shutdown had (or has) its own deadline, and workers
    ///   it left unfinished are stuck in their appender; nothing is waited
    ///   for again. A shutdown that starts while the hook waits makes the
    ///   workers drain and end, which answers the hook's flush
    ///   (`flush_all` also ends on a worker's end).
    /// - **On a worker thread** (an appender called `exit`): that worker is
    ///   inside its appender and cannot answer, so its subscription is left
    ///   out (found by comparing `pthread_self` with the worker's join
    ///   handle, which needs no thread-local: those of the exiting thread
    ///   are destroyed before the hook runs). The other workers are waited
    ///   for as from any thread; none of them waits for this one, except a
    ///   dead letter pushed under `Block` into this worker's own route,
    ///   which the deadline bounds. While the handle is not in its place
    ///   (the worker started but `spawn` has not stored it yet, or another
    ///   thread is joining it) the worker is not recognised, and the wait
    ///   for it lasts until the deadline.
    /// - **From a predicate or a message's `Display`**: those run on the
    ///   caller's thread outside every lock and before the publish gate, so
    ///   the flush is an ordinary one.
    ///
    /// Every wait (the config lock aside, which is never held while
    /// waiting or calling user code) has `deadline`; the deadline itself
    /// saturates instead of overflowing.
    #[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
    pub(crate) fn drain_at_exit(&self, timeout: Duration) -> Vec<String> {
        if self.in_forked_child() || self.is_shut_down() {
            return Vec::new();
        }
        let deadline = deadline_after(timeout);
        self.flush_where(deadline, |sub| !is_own_worker(sub))
    }

    pub(crate) fn shutdown(&self, timeout: Duration) -> ShutdownReport {
        if self.in_forked_child() {
            // The workers are the parent's: nothing here can drain, and no
            // lock may be taken (`fork.rs`).
            return ShutdownReport {
                dropped_after_shutdown: self.stats().dropped_after_shutdown,
                ..ShutdownReport::default()
            };
        }
        let deadline = deadline_after(timeout);
        let (subs, dead_letters) = {
            let mut config = self.lock_config();
            if !config.shut_down {
                config.shut_down = true;
                // SeqCst, before the generation bump: a publisher that sees
                // the new generation also sees `closed`.
                self.closed.store(true, Ordering::SeqCst);
                let entries = config.snapshot.entries.clone();
                self.publish_snapshot(&mut config, entries);
            }
            let mut subs: Vec<_> = config
                .snapshot
                .entries
                .iter()
                .map(|e| Arc::clone(&e.sub))
                .collect();
            // Removals in progress may still feed the dead-letter route.
            subs.extend(config.removing.iter().cloned());
            (subs, self.dead_letters.get().cloned())
        };
        let on_worker = thread_role::on_worker_thread();
        let mut unfinished = worker::stop_all(&subs, deadline, on_worker);
        // The dead-letter route last: the others may feed it while draining.
        // If one of them has not finished it may still dead-letter a record,
        // so the route must keep draining: it is left running and reported.
        if let Some(dead) = dead_letters {
            if unfinished.is_empty() {
                unfinished.extend(worker::stop_all(&[dead], deadline, on_worker));
            } else {
                unfinished.push(dead.name.to_string());
            }
        }
        let stats = self.stats();
        ShutdownReport {
            subscriptions: stats.subscriptions,
            unfinished,
            dropped_after_shutdown: stats.dropped_after_shutdown,
        }
    }
}

/// `timeout` from now, or as far as an `Instant` reaches (a timeout of
/// `Duration::MAX` must not overflow into a panic).
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

/// Whether `sub`'s worker is the calling thread. Compares thread handles
/// with `pthread_self`, which reads no thread-local (the exit hook runs
/// after the exiting thread's thread-locals are destroyed).
#[cfg(unix)]
fn is_own_worker(sub: &SubShared) -> bool {
    use std::os::unix::thread::JoinHandleExt;
    // SAFETY: `pthread_self` has no preconditions and cannot fail.
    let me = unsafe { libc::pthread_self() };
    crate::sync::lock(&sub.worker)
        .as_ref()
        // SAFETY: `pthread_equal` compares two thread ids; both are valid
        // (ours, and that of a thread whose handle is not yet joined).
        .is_some_and(|handle| unsafe { libc::pthread_equal(handle.as_pthread_t(), me) } != 0)
}

/// No exit hook elsewhere (`log_backend.rs`): never called there.
#[cfg(not(unix))]
fn is_own_worker(_: &SubShared) -> bool {
    false
}

/// Sends a flush to every subscription, then waits for all of them; returns
/// the names of those that did not answer by `deadline`.
fn flush_all(subs: &[&SubShared], deadline: Instant) -> Vec<String> {
    let mut waiting = Vec::new();
    for sub in subs {
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        let sent = sub.ctrl.send_deadline(Control::Flush(ack_tx), deadline);
        sub.queue.waker.wake();
        match sent {
            Ok(()) => waiting.push((*sub, ack_rx)),
            // The worker has exited (shut down): it has nothing left.
            Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => {}
            Err(crossbeam_channel::SendTimeoutError::Timeout(_)) => {
                waiting.push((*sub, crossbeam_channel::never()));
            }
        }
    }
    let mut pending = Vec::new();
    for (sub, ack) in waiting {
        // An acknowledgement, or the worker's end: a worker told to stop
        // (unsubscribe, shutdown) drains everything before it ends, and may
        // end with our request still in its control channel, unread (the
        // channel keeps it, and our `ack` sender with it, for as long as the
        // subscription exists), so `done` disconnecting ends the wait too.
        let left = deadline.saturating_duration_since(Instant::now());
        let answered = crossbeam_channel::select! {
            recv(ack) -> _ => true,
            recv(sub.done) -> _ => true,
            default(left) => false,
        };
        if !answered {
            pending.push(sub.name.to_string());
        }
    }
    pending
}
