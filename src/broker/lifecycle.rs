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

use crossbeam_channel::TryRecvError;

use super::BrokerShared;
use crate::error::FlushError;
use crate::route::Snapshot;
use crate::stats::ShutdownReport;
use crate::subscription::{Control, SubShared};
use crate::sync::{thread, Arc, Mutex, MutexGuard, Ordering, TryLockError};
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
        if thread_role::replaying() {
            // A replay's predicate: its subscription's worker waits for
            // it to return (a review found the flush waiting out its
            // timeout while the worker spun). Other predicates may flush.
            return Err(FlushError::InPredicate);
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
        let subs = subscriptions(&snapshot, &removing, &wanted);
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
    /// installed broker: a flush of every subscription (or, while a
    /// shutdown is under way on another thread, a wait for its workers to
    /// end), bounded by `timeout`, that never waits for the calling
    /// thread's own worker. Returns the names of the subscriptions that did
    /// not finish.
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
    /// - **This thread holds a logbus lock** (`exit` from a signal handler
    ///   that interrupted a reconfiguration): the config lock is only
    ///   *tried*, until the deadline, and no other lock is taken, so the
    ///   hook gives up at the deadline instead of deadlocking on itself. (A
    ///   handler that interrupted `malloc` can still deadlock the drain's
    ///   allocations: call `_exit` from signal handlers, as POSIX says.)
    /// - **A shutdown finished** before: it had its own deadline, and the
    ///   workers it left unfinished are stuck in their appender; nothing is
    ///   waited for again. **A shutdown under way** on another thread: its
    ///   workers are draining; the hook waits for them to end, until its
    ///   deadline, rather than ending the process under them.
    /// - **On a worker thread** (an appender called `exit`): that worker is
    ///   inside its appender and cannot answer, so its subscription is left
    ///   out, recognised by the address each worker keeps in a const
    ///   thread-local without a destructor (`thread_role::worker_of`),
    ///   which outlives the other thread-locals into the hook. The other
    ///   workers are waited for as from any thread; none of them waits for
    ///   this one, except a dead letter pushed under `Block` into this
    ///   worker's own route, which the deadline bounds.
    /// - **From a predicate or a message's `Display`**: those run on the
    ///   caller's thread outside every lock and before the publish gate, so
    ///   the flush is an ordinary one.
    ///
    /// The waits use no thread-local and never park: the exiting thread's
    /// thread-locals with destructors are gone (glibc and macOS destroy
    /// them before `atexit` handlers run), and so may be what blocking
    /// channel operations and `thread::current` need on some platforms and
    /// Rust versions. Requests are sent with `try_send` and answers polled
    /// with `try_recv` between short sleeps (`nanosleep`).
    #[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
    pub(crate) fn drain_at_exit(&self, timeout: Duration) -> Vec<String> {
        if self.in_forked_child() {
            return Vec::new();
        }
        let deadline = deadline_after(timeout);
        let Some(config) = try_lock_until(&self.config, deadline) else {
            return vec!["(the configuration lock is held by the exiting thread)".to_owned()];
        };
        let (snapshot, removing) = (Arc::clone(&config.snapshot), config.removing.clone());
        let (shutting_down, finished) = (config.shut_down, config.shutdown_finished);
        drop(config);
        if finished {
            return Vec::new();
        }
        let own = thread_role::worker_of();
        let is_own = |sub: &SubShared| std::ptr::from_ref(sub) as usize == own;
        let subs = subscriptions(&snapshot, &removing, |sub| !is_own(sub));
        let dead = self.dead_letters.get().filter(|dead| !is_own(dead));
        if shutting_down {
            // The shutdown drains and joins them; wait for their ends.
            let all: Vec<&SubShared> = subs.into_iter().chain(dead.map(|d| &**d)).collect();
            return poll_until(deadline, &all, |_| crossbeam_channel::never());
        }
        let mut pending = poll_flush(&subs, deadline);
        if let Some(dead) = dead {
            pending.extend(poll_flush(&[&**dead], deadline));
        }
        pending
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
                // the new generation also sees `closed`; and before the gate
                // waits below, whose heavy fence pairs with the publishers'.
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
        self.lock_config().shutdown_finished = true;
        let stats = self.stats();
        ShutdownReport {
            subscriptions: stats.subscriptions,
            unfinished,
            dropped_after_shutdown: stats.dropped_after_shutdown,
        }
    }
}

/// The subscriptions of `snapshot` and those being removed (which still
/// write what was queued before), as far as `wanted` accepts them.
fn subscriptions<'a>(
    snapshot: &'a Snapshot,
    removing: &'a [Arc<SubShared>],
    wanted: impl Fn(&SubShared) -> bool,
) -> Vec<&'a SubShared> {
    snapshot
        .entries
        .iter()
        .map(|e| &*e.sub)
        .chain(removing.iter().map(|s| &**s))
        .filter(|sub| wanted(sub))
        .collect()
}

/// `timeout` from now, or as far as an `Instant` reaches (a timeout of
/// `Duration::MAX` must not overflow into a panic).
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

/// Locks `mutex` by trying until `deadline` (the exit hook's way: the
/// exiting thread may itself hold it, interrupted by a signal).
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
fn try_lock_until<T>(mutex: &Mutex<T>, deadline: Instant) -> Option<MutexGuard<'_, T>> {
    let mut nap = EXIT_POLL_MIN;
    loop {
        match mutex.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
            Err(TryLockError::WouldBlock) => nap = exit_nap(nap),
        }
    }
}

/// The exit hook's shortest and longest sleep between two polls.
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
const EXIT_POLL_MIN: Duration = Duration::from_micros(50);
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
const EXIT_POLL_MAX: Duration = Duration::from_millis(2);

/// Sleeps `nap` (`nanosleep`: no thread-local, no parking) and returns the
/// next, doubled up to [`EXIT_POLL_MAX`].
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
fn exit_nap(nap: Duration) -> Duration {
    thread::sleep(nap);
    (nap * 2).min(EXIT_POLL_MAX)
}

/// The exit hook's flush: a request to each subscription with `try_send`
/// (a full control channel, stale requests of timed-out flushes, counts as
/// no answer), then [`poll_until`] their answers.
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
fn poll_flush(subs: &[&SubShared], deadline: Instant) -> Vec<String> {
    let mut acks = Vec::with_capacity(subs.len());
    for sub in subs {
        let (ack_tx, ack_rx) = crossbeam_channel::bounded(1);
        match sub.ctrl.try_send(Control::Flush(ack_tx)) {
            Ok(()) => acks.push(ack_rx),
            // Full: it will not answer this one in time; `done` may still
            // say it ended. Disconnected: it ended, `done` says so.
            Err(_) => acks.push(crossbeam_channel::never()),
        }
        sub.queue.waker.wake();
    }
    poll_until(deadline, subs, |i| acks[i].clone())
}

/// Polls until each subscription answered on its `ack(i)` or ended
/// (`done` disconnected), or `deadline`; returns those that did neither.
#[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
fn poll_until(
    deadline: Instant,
    subs: &[&SubShared],
    ack: impl Fn(usize) -> crossbeam_channel::Receiver<()>,
) -> Vec<String> {
    let acks: Vec<_> = (0..subs.len()).map(ack).collect();
    let mut open: Vec<usize> = (0..subs.len()).collect();
    let mut nap = EXIT_POLL_MIN;
    loop {
        open.retain(|&i| {
            let answered = !matches!(acks[i].try_recv(), Err(TryRecvError::Empty));
            let ended = matches!(subs[i].done.try_recv(), Err(TryRecvError::Disconnected));
            !(answered || ended)
        });
        if open.is_empty() || Instant::now() >= deadline {
            return open.iter().map(|&i| subs[i].name.to_string()).collect();
        }
        nap = exit_nap(nap);
    }
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
