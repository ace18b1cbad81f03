//! Flush barriers and shutdown, over every subscription at once.
//!
//! Both work in two phases: first the ordinary subscriptions, then the
//! dead-letter route, which the first phase may feed. A flush sends each
//! worker a barrier request and waits for the acknowledgements; shutdown
//! closes the broker (`closed`, a generation bump), waits for each gate,
//! tells every worker to drain and joins them before the deadline.

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
        let deadline = Instant::now() + timeout;
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
            .filter(|sub| only.map_or(true, |name| name == &*sub.name))
            .collect();
        let mut pending = flush_all(&subs, deadline);
        // Second phase: the dead-letter route, which the first phase may
        // have fed.
        if let Some(dead) = self.dead_letters.get() {
            if only.map_or(true, |name| name == &*dead.name) {
                pending.extend(flush_all(&[&**dead], deadline));
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            Err(FlushError::Timeout {
                waited: timeout,
                pending,
            })
        }
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
        let deadline = Instant::now() + timeout;
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
