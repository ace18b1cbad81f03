//! Settlement: what becomes of each record the worker took. It is
//! written, or it failed and is retried under the
//! [`RetryPolicy`](crate::RetryPolicy), and after the last attempt (or
//! straight away while the circuit breaker is open) it is
//! dead-lettered, or lost when there is no dead-letter route. Each record
//! ends in exactly one of `written`, `dead_lettered`, `lost`.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use logbus_appenders::{AppendError, BatchError, Operation, Record, Value};

use super::Worker;
use crate::retry::Verdict;
use crate::stats::Counters;
use crate::subscription::SubShared;
use crate::sync::{thread, Arc, OnceLock, Ordering};

/// Where a worker sends the records its appender failed.
#[derive(Debug, Clone)]
pub(crate) enum DeadLetters {
    /// The broker's dead-letter subscription, once one is set.
    Route(Arc<OnceLock<Arc<SubShared>>>),
    /// This worker *is* the dead-letter subscription: its failures are lost.
    IsDeadLetter,
}

impl Worker {
    /// Hands the batch to the appender and settles every record in it:
    /// written, or failed after retries and dead-lettered (or lost).
    ///
    /// Appender panics are caught closer in; this outer guard is for our own
    /// code. Should it ever panic, the records taken but not yet settled are
    /// counted as lost (so the books still balance and `in_queue` does not
    /// stay up for ever) and the worker goes on.
    pub(super) fn write_batch(&mut self) {
        if catch_unwind(AssertUnwindSafe(|| self.settle_batch())).is_err() {
            let counters = &self.shared.counters;
            let settled = Counters::get(&counters.written)
                + Counters::get(&counters.dead_lettered)
                + Counters::get(&counters.lost);
            let unsettled = Counters::get(&counters.taken).saturating_sub(settled);
            Counters::add(&counters.lost, unsettled);
            self.batch.clear();
            self.staged = 0;
            self.stage_failure = None;
            crate::report::stderr(format_args!(
                "logbus: internal error in subscription {:?}; {unsettled} records lost",
                self.shared.name
            ));
        }
    }

    fn settle_batch(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        let shared = Arc::clone(&self.shared);
        let counters = &shared.counters;
        let mut start = self.settle_staged(&batch);
        while start < batch.len() {
            match self.breaker.verdict(Instant::now()) {
                Verdict::Skip => {
                    let error = format!(
                        "circuit breaker open; last error: {}",
                        self.last_error.as_deref().unwrap_or("unknown")
                    );
                    for record in &batch[start..] {
                        self.dead_letter(record, &error, 0);
                    }
                    break;
                }
                Verdict::Probe => {
                    let record = &batch[start];
                    match self.attempt(record) {
                        Ok(()) => {
                            Counters::add(&counters.written, 1);
                            self.breaker.success();
                        }
                        Err(error) => {
                            self.note_failure(&error);
                            self.dead_letter(record, &error.chain_text(), 1);
                        }
                    }
                    start += 1;
                    continue;
                }
                Verdict::Pass => {}
            }
            let rest = &batch[start..];
            let appender = &mut self.appender;
            let outcome = catch_unwind(AssertUnwindSafe(|| appender.append_batch(rest)))
                .unwrap_or_else(|payload| {
                    // A custom `append_batch` panicked: we cannot know how
                    // many records it wrote, so the first record is taken as
                    // the failing one and the rest are tried again.
                    Err(BatchError {
                        written: 0,
                        error: AppendError::panicked(payload.as_ref()),
                    })
                });
            match outcome {
                Ok(()) => {
                    Counters::add(&counters.written, rest.len() as u64);
                    self.breaker.success();
                    start = batch.len();
                }
                Err(BatchError { written, error }) => {
                    let written = written.min(rest.len() - 1);
                    Counters::add(&counters.written, written as u64);
                    if written > 0 {
                        self.breaker.success();
                    }
                    self.retry(&rest[written], error);
                    start += written + 1;
                }
            }
        }
        self.publish_breaker_state();
        self.dirty = true;
        // No pass over the records here: a batch's records do not fit the
        // core's first-level cache, so a pass paid for each one's lines
        // again. The next batch's takes let go of them as they rewrite
        // them, and the cursor moves past them once they are all let go
        // (`let_go`), so that a journal keeping records until they are
        // written finds them unique when it lets go of them (a review found
        // a cursor moved before the release making a flood allocate two
        // records a call). The newest `seq` was noted as they were taken.
        let mut batch = batch;
        let newest = self.drain.take_newest();
        self.drain
            .taker
            .spares
            .give_back(&mut batch, &mut self.hand_back);
        self.advance_past_released(newest);
        self.batch = batch;
    }

    /// Lets go of what the takes left of the last written batch, and moves
    /// the cursor past it.
    pub(super) fn let_go(&mut self) {
        self.drain.taker.spares.let_go(&mut self.hand_back);
        self.advance_past_released(None);
    }

    /// Moves the cursor past the batch just let go of, and notes where it
    /// moves once the batch written now (`newest`, its highest `seq`) is.
    fn advance_past_released(&mut self, newest: Option<u64>) {
        let released = std::mem::replace(&mut self.released_cursor, newest.map(|seq| seq + 1));
        if let Some(to) = released {
            self.shared.advance(to);
        }
    }

    /// Commits what the appender staged of `batch` (`Worker::take_batch`)
    /// and settles it, as the outcome of an `append_batch` of those
    /// records; returns how many of the batch's first records are settled.
    fn settle_staged(&mut self, batch: &[Arc<Record>]) -> usize {
        self.staging = false;
        let staged = std::mem::take(&mut self.staged);
        let failure = self.stage_failure.take();
        if staged == 0 {
            return 0;
        }
        let appender = &mut self.appender;
        let outcome = match failure {
            Some(failure) => Err(failure),
            // `staged` is user code too: its panic is the commit's.
            None => catch_unwind(AssertUnwindSafe(|| match appender.staged() {
                Some(appender) => appender.commit(),
                // It staged them: it cannot stop staging (a broken
                // appender); none was written, as far as we know.
                None => Err(BatchError {
                    written: 0,
                    error: AppendError::new(Operation::Other, "the staged batch went away"),
                }),
            }))
            .unwrap_or_else(|payload| {
                Err(BatchError {
                    written: 0,
                    error: AppendError::panicked(payload.as_ref()),
                })
            }),
        };
        let counters = &self.shared.counters;
        match outcome {
            Ok(()) => {
                Counters::add(&counters.written, staged as u64);
                self.breaker.success();
                staged
            }
            Err(BatchError { written, error }) => {
                let written = written.min(staged - 1);
                Counters::add(&counters.written, written as u64);
                if written > 0 {
                    self.breaker.success();
                }
                self.retry(&batch[written], error);
                written + 1
            }
        }
    }

    /// One attempt at writing one record, panics caught.
    pub(super) fn attempt(&mut self, record: &Record) -> Result<(), AppendError> {
        let appender = &mut self.appender;
        catch_unwind(AssertUnwindSafe(|| appender.append(record)))
            .unwrap_or_else(|payload| Err(AppendError::panicked(payload.as_ref())))
    }

    /// Counts a failed attempt (and a panic) and feeds the breaker.
    fn note_failure(&mut self, error: &AppendError) {
        if error.operation() == Operation::Panic {
            Counters::add(&self.shared.counters.panics, 1);
        }
        self.last_error = Some(error.chain_text());
        self.breaker.failure(Instant::now());
    }

    /// Retries a record whose first attempt failed with `error`, under the
    /// retry policy, then dead-letters it if every attempt failed. Retrying
    /// before taking the next record keeps the order.
    fn retry(&mut self, record: &Record, error: AppendError) {
        let mut error = error;
        let mut attempts = 1;
        self.note_failure(&error);
        while attempts < self.retry.attempts() && !self.breaker.is_open() {
            attempts += 1;
            // The worker's own thread waits; the caller never does.
            thread::sleep(self.retry.backoff(attempts));
            Counters::add(&self.shared.counters.retried, 1);
            match self.attempt(record) {
                Ok(()) => {
                    Counters::add(&self.shared.counters.written, 1);
                    self.breaker.success();
                    return;
                }
                Err(e) => {
                    self.note_failure(&e);
                    error = e;
                }
            }
        }
        self.dead_letter(record, &error.chain_text(), attempts);
    }

    /// Hands a failed record to the dead-letter route, with key-values naming
    /// this subscription, the error and the attempts; counts it as lost (and
    /// says so on stderr, rate-limited) when there is no route or this is the
    /// dead-letter subscription itself, so nothing loops.
    fn dead_letter(&mut self, record: &Record, error: &str, attempts: u32) {
        let counters = &self.shared.counters;
        let route = match &self.dead_letters {
            DeadLetters::Route(slot) => slot.get(),
            DeadLetters::IsDeadLetter => None,
        };
        let Some(route) = route else {
            Counters::add(&counters.lost, 1);
            crate::report::stderr(format_args!(
                "logbus: {} {:?} lost record {} after {attempts} attempts: {error}",
                if matches!(self.dead_letters, DeadLetters::IsDeadLetter) {
                    "dead-letter appender"
                } else {
                    "subscription"
                },
                self.shared.name,
                record.seq(),
            ));
            return;
        };
        let letter = record.with_extra_kv(vec![
            (
                Cow::Borrowed("dead_letter.appender"),
                Value::Str(Cow::Owned(self.shared.name.to_string())),
            ),
            (
                Cow::Borrowed("dead_letter.error"),
                Value::Str(Cow::Owned(error.to_owned())),
            ),
            (
                Cow::Borrowed("dead_letter.attempts"),
                Value::U64(u64::from(attempts)),
            ),
        ]);
        // Through the route's gate, like any pusher without a lane, so that
        // its shutdown waits for us (see `queue/gate.rs`). Counted first, so
        // that the route's worker cannot write it before it is counted here.
        Counters::add(&counters.dead_lettered, 1);
        if route.push_shared(Arc::new(letter)).is_err() {
            // The route was stopped (a shutdown that did not wait for us):
            // nothing will drain it.
            Counters::sub(&counters.dead_lettered, 1);
            Counters::add(&counters.lost, 1);
            crate::report::stderr(format_args!(
                "logbus: subscription {:?} lost record {} after {attempts} attempts: the dead-letter route {:?} is stopped; {error}",
                self.shared.name,
                record.seq(),
                route.name,
            ));
        }
    }

    /// Publishes the breaker state for the stats.
    fn publish_breaker_state(&self) {
        let state = self.breaker.state(Instant::now());
        // Relaxed: a plain value for readers of the stats.
        self.shared
            .counters
            .breaker
            .store(state.to_u8(), Ordering::Relaxed);
    }
}
