//! The worker loop of one subscription: drain the queue in batches, call the
//! appender, flush when the queue runs empty, answer control messages.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};

use std::borrow::Cow;

use super::{Counters, Lane, SubShared};
use crate::appenders::{AppendError, Appender, BatchError, Level, Operation, Record, Topic, Value};
use crate::recycle::Recycled;
use crate::retry::{Breaker, CircuitBreaker, Gate, RetryPolicy};
use crate::sync::{thread, Arc, AtomicU64, CacheLine, OnceLock, Ordering};

/// Where a worker sends the records its appender failed.
#[derive(Debug, Clone)]
pub(crate) enum DeadLetters {
    /// The broker's dead-letter subscription, once one is set.
    Route(Arc<OnceLock<Arc<SubShared>>>),
    /// This worker *is* the dead-letter subscription: its failures are lost.
    IsDeadLetter,
}

/// Most records taken off the queue before calling the appender: large
/// enough that a flood is written in few system calls, small enough that the
/// first records of a burst reach the file quickly.
pub(crate) const BATCH: usize = 512;

/// How many records a worker hands back to the publishers' pool at a time:
/// a publisher then takes a whole batch with one channel operation.
pub(crate) const RECYCLE_BATCH: usize = 64;

/// How many times the last subscription done with a record looks for the
/// other workers to have dropped their references before it lets the record
/// be freed instead of reused (see [`Recycled::release`]).
const RECYCLE_ATTEMPTS: u32 = 8;

/// How long an idle worker that just said it sleeps waits before it looks
/// at its queue once more. A publisher that pushed just as the worker set
/// its `sleeping` flag may have missed the flag (see `SubShared::sleeping`);
/// this second look catches its record, so such a record is late by at most
/// this much.
pub(crate) const IDLE_RECHECK: Duration = Duration::from_millis(1);

/// After the second look the flag has long been visible, so every later
/// publisher sees it and unparks the worker: it parks with this long a
/// timeout, a safety net only (an idle worker wakes once per this period,
/// however many subscriptions there are).
pub(crate) const IDLE_PARK: Duration = Duration::from_secs(10);

/// A batch smaller than this waits up to [`LINGER`] for more records.
const LINGER_BATCH: usize = 128;

/// How long a small batch waits for more records before it is written.
const LINGER: Duration = Duration::from_micros(20);

/// How many times an idle worker looks for work, spinning then yielding,
/// before it parks: a flood's publisher usually refills the lane within.
const SPIN_ROUNDS: u32 = 16;

/// A request to the worker, on its control channel, never evicted.
#[derive(Debug)]
pub(crate) enum Control {
    /// Write every record queued now, flush the appender, then acknowledge.
    Flush(Sender<()>),
    /// Write everything queued, flush, acknowledge and exit. Sent only once no
    /// publisher can enqueue any more (the subscription's gate is closed).
    Shutdown,
}

/// The owner's side of a worker: its control channel and thread.
#[derive(Debug)]
pub(crate) struct WorkerHandle {
    pub(crate) thread: thread::JoinHandle<()>,
}

pub(crate) struct Worker {
    appender: Box<dyn Appender>,
    data: Receiver<Arc<Record>>,
    ctrl: Receiver<Control>,
    shared: Arc<SubShared>,
    /// The broker's sequence counter, for the synthetic drop-summary records.
    seq: Arc<CacheLine<AtomicU64>>,
    batch: Vec<Arc<Record>>,
    /// Drops already reported in a summary record.
    reported_drops: u64,
    /// Whether records were written since the last appender flush.
    dirty: bool,
    retry: RetryPolicy,
    breaker: Breaker,
    dead_letters: DeadLetters,
    /// The last failure, quoted when the breaker skips the appender.
    last_error: Option<String>,
    /// Where records nobody else holds go back for publishers to reuse, a
    /// batch at a time.
    pool: Sender<Vec<Recycled>>,
    /// Records to hand back, filled up to [`RECYCLE_BATCH`].
    recycled: Vec<Recycled>,
    /// The lanes this worker drains: the subscription's list as of
    /// `lanes_seen` registrations, minus the finished ones it forgot.
    lanes: Vec<Arc<Lane>>,
    lanes_seen: usize,
    /// Scratch for merging the lanes: each lane's oldest `seq`.
    heads: Vec<Option<u64>>,
}

/// How a worker treats failures.
#[derive(Debug, Clone)]
pub(crate) struct FailurePolicy {
    pub(crate) retry: RetryPolicy,
    pub(crate) breaker: CircuitBreaker,
    pub(crate) dead_letters: DeadLetters,
}

/// A control channel. Control messages are few (one per flush caller, one
/// shutdown); the bound keeps a stuck appender plus repeated timed-out
/// flushes from growing it without limit.
pub(crate) fn control_channel() -> (Sender<Control>, Receiver<Control>) {
    crossbeam_channel::bounded(64)
}

/// The channels a worker serves.
#[derive(Debug)]
pub(crate) struct WorkerChannels {
    /// The subscription's queue.
    pub(crate) data: Receiver<Arc<Record>>,
    /// Flush and shutdown requests.
    pub(crate) ctrl: Receiver<Control>,
    /// Dropped when the worker thread ends: disconnects the `done` receiver.
    pub(crate) done: Sender<()>,
    /// The broker's pool of records to recycle.
    pub(crate) pool: Sender<Vec<Recycled>>,
}

/// Spawns the worker thread `logbus-<name>`.
pub(crate) fn spawn(
    appender: Box<dyn Appender>,
    channels: WorkerChannels,
    shared: Arc<SubShared>,
    seq: Arc<CacheLine<AtomicU64>>,
    failures: FailurePolicy,
) -> std::io::Result<WorkerHandle> {
    let name = format!("logbus-{}", shared.name);
    let done_tx = channels.done;
    let worker = Worker {
        appender,
        data: channels.data,
        ctrl: channels.ctrl,
        shared,
        seq,
        batch: Vec::with_capacity(BATCH),
        reported_drops: 0,
        dirty: false,
        retry: failures.retry,
        breaker: Breaker::new(failures.breaker),
        dead_letters: failures.dead_letters,
        last_error: None,
        pool: channels.pool,
        recycled: Vec::with_capacity(RECYCLE_BATCH),
        lanes: Vec::new(),
        lanes_seen: 0,
        heads: Vec::new(),
    };
    let thread = thread::Builder::new().name(name).spawn(move || {
        // Dropped when the thread ends, however it ends: disconnects `done`.
        let _done = done_tx;
        crate::log_backend::mark_worker_thread();
        let _ = worker.shared.thread.set(thread::current());
        worker.run();
    })?;
    Ok(WorkerHandle { thread })
}

impl Worker {
    fn run(mut self) {
        loop {
            // Control first: a flush or shutdown must not wait behind a flood.
            match self.ctrl.try_recv() {
                Ok(Control::Flush(ack)) => {
                    self.flush_barrier();
                    self.idle();
                    let _ = ack.send(()); // the flusher may have timed out
                    continue;
                }
                Ok(Control::Shutdown) | Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {}
            }
            if self.take_batch() > 0 {
                self.linger();
                self.write_batch();
                continue;
            }
            // Nothing queued: report drops and flush the appender, then wait.
            self.idle();
            self.forget_finished_lanes();
            if self.spin_for_work() {
                continue;
            }
            self.sleep();
        }
        // Draining: no publisher can enqueue any more (the gate is closed),
        // so "empty" is final.
        while self.take_batch() > 0 {
            self.write_batch();
        }
        self.idle();
        self.hand_back_recycled();
    }

    /// Waits up to [`LINGER`] for a small batch to grow to [`LINGER_BATCH`]
    /// records while records keep arriving: under a flood, one write then
    /// carries a few hundred records instead of a few dozen. A control
    /// message ends the wait.
    fn linger(&mut self) {
        if self.batch.len() >= LINGER_BATCH {
            return;
        }
        let deadline = Instant::now() + LINGER;
        while self.batch.len() < LINGER_BATCH && self.ctrl.is_empty() {
            let before = self.batch.len();
            self.take_batch();
            if self.batch.len() == before {
                if Instant::now() >= deadline {
                    return;
                }
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// Parks until a publisher, a flush or a shutdown unparks us. The flag
    /// stays set while we wait (wake-ups without work do not clear it), so
    /// only the first moments of a sleep can race with a publisher, and the
    /// look we take `IDLE_RECHECK` after setting it settles that race.
    fn sleep(&mut self) {
        self.shared.sleeping.store(true, Ordering::Relaxed);
        // Our half of the store-then-load pattern: the flag store is ordered
        // before our later loads of the lanes' tails. (The publisher's half
        // has no fence; see `SubShared::sleeping`.)
        std::sync::atomic::fence(Ordering::SeqCst);
        let flagged = Instant::now();
        while !self.has_work() {
            // A wake-up may come early (a stale unpark, or a spurious one):
            // the second look must still come a full `IDLE_RECHECK` after
            // the flag was set.
            let since = flagged.elapsed();
            if since < IDLE_RECHECK {
                thread::park_timeout(IDLE_RECHECK - since);
                continue;
            }
            let before = Instant::now();
            thread::park_timeout(IDLE_PARK);
            if before.elapsed() >= IDLE_PARK {
                break; // back to the loop's idle duties (finished lanes)
            }
        }
        // Relaxed: a hint for publishers; see `SubShared::sleeping`.
        self.shared.sleeping.store(false, Ordering::Relaxed);
    }

    /// Looks for work a few times, spinning then yielding; true if found.
    fn spin_for_work(&mut self) -> bool {
        for round in 0..SPIN_ROUNDS {
            if self.has_work() {
                return true;
            }
            if round < SPIN_ROUNDS / 2 {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            } else {
                thread::yield_now();
            }
        }
        false
    }

    /// Whether a control message, a queued record or a new lane is waiting.
    fn has_work(&self) -> bool {
        !self.ctrl.is_empty()
            || !self.data.is_empty()
            // Acquire: pairs with `new_lane`'s Release increment.
            || self.shared.lanes_added.load(Ordering::Acquire) != self.lanes_seen
            || self.lanes.iter().any(|lane| lane.len() > 0)
            || self.drops_to_report()
    }

    /// Whether a burst of drops waits for its summary. A publisher that
    /// drops a record wakes us after counting and stamping it, so the
    /// summary is written at once, not at the next activity. (A drop counted
    /// but not stamped is reported with the next burst, or at shutdown.)
    fn drops_to_report(&self) -> bool {
        let counters = &self.shared.counters;
        // Relaxed: statistics; see `report_drops`.
        Counters::get(&counters.dropped) > self.reported_drops
            && counters.first_drop_micros.load(Ordering::Relaxed) != 0
    }

    /// Picks up lanes registered since we last looked.
    fn refresh_lanes(&mut self) {
        // Acquire: pairs with `new_lane`'s Release increment.
        let added = self.shared.lanes_added.load(Ordering::Acquire);
        if added != self.lanes_seen {
            self.lanes_seen = added;
            self.lanes
                .clone_from(&crate::sync::lock(&self.shared.lanes));
        }
    }

    /// Forgets lanes whose publisher is gone and which are drained.
    fn forget_finished_lanes(&mut self) {
        if !self.lanes.iter().any(|lane| lane.is_finished()) {
            return;
        }
        let mut registry = crate::sync::lock(&self.shared.lanes);
        registry.retain(|lane| !lane.is_finished());
        self.lanes.clone_from(&registry);
    }

    /// Takes up to a batch of queued records, from the shared queue and then
    /// from the lanes merged in `seq` order; returns how many.
    ///
    /// Each lane is in `seq` order already (one thread's records), so a
    /// k-way merge on the lanes' oldest `seq` gives the appender the records
    /// of all threads in `seq` order, as one shared queue would: repeatedly
    /// take, from the lane with the lowest oldest `seq`, the run of records
    /// below the next lane's oldest `seq`.
    fn take_batch(&mut self) -> usize {
        self.refresh_lanes();
        let before = self.batch.len();
        self.fill_from_shared(BATCH);
        self.take_lanes_after_shared(self.batch.len() - before)
    }

    /// Takes from the lanes after `shared` records were just added to the
    /// batch from the shared queue, keeping the batch in `seq` order: a
    /// thread's records reach the shared queue only after its lane ones (at
    /// thread exit), and taking the shared ones first makes those lane
    /// records visible here. Shared records are rare, so the sort is too.
    fn take_lanes_after_shared(&mut self, shared: usize) -> usize {
        let before = self.batch.len();
        let total = self.take_lanes();
        if shared > 0 && total > before {
            self.batch.sort_by_key(|record| record.seq());
        }
        total
    }

    /// Fills the batch from the lanes, merged in `seq` order; returns the
    /// batch's length.
    fn take_lanes(&mut self) -> usize {
        if let [lane] = self.lanes.as_slice() {
            lane.take(BATCH - self.batch.len(), &mut self.batch);
            return self.batch.len();
        }
        // The oldest `seq` of each lane, read once and then again only for
        // the lane we took from: the other lanes' oldest records stay put
        // (or are evicted, which only makes our value a harmless
        // underestimate). Lanes that were empty wait for the next batch.
        let mut heads = std::mem::take(&mut self.heads);
        heads.clear();
        heads.extend(self.lanes.iter().map(|lane| lane.peek_seq()));
        while self.batch.len() < BATCH {
            let mut lowest: Option<(usize, u64)> = None;
            let mut next = u64::MAX;
            for (i, head) in heads.iter().enumerate() {
                let Some(seq) = *head else { continue };
                match lowest {
                    Some((_, low)) if seq >= low => next = next.min(seq),
                    _ => {
                        if let Some((_, low)) = lowest {
                            next = next.min(low);
                        }
                        lowest = Some((i, seq));
                    }
                }
            }
            let Some((i, low)) = lowest else { break };
            // Our value may be stale: the producer may have evicted the
            // records we saw. Look again before taking, so that the lane's
            // real oldest record does not overtake another lane's.
            let now = self.lanes[i].peek_seq();
            if now != Some(low) {
                heads[i] = now;
                continue;
            }
            let room = BATCH - self.batch.len();
            self.lanes[i].take_below(next, room, &mut self.batch);
            heads[i] = self.lanes[i].peek_seq();
        }
        self.heads = heads;
        self.batch.len()
    }

    /// Writes every record queued before the flush request: the first `len`
    /// records of the shared queue (FIFO; evictions only remove from the
    /// head), and in each lane the records below the `tail` it had then.
    fn flush_barrier(&mut self) {
        let pending = self.data.len();
        self.refresh_lanes();
        let marks: Vec<(Arc<Lane>, usize)> = self
            .lanes
            .iter()
            .map(|lane| (Arc::clone(lane), lane.tail()))
            .collect();
        // Merged as usual (records published after the request may come
        // along); each round takes the lowest `seq`s first, so the marks
        // are reached.
        let mut pending = pending;
        while pending > 0 || marks.iter().any(|(lane, mark)| lane.head() < *mark) {
            self.fill_from_shared(pending.min(BATCH));
            // None taken: the rest of what was pending was evicted.
            let shared = self.batch.len();
            pending = match shared {
                0 => 0,
                taken => pending - taken,
            };
            if self.take_lanes_after_shared(shared) == 0 {
                break; // everything pending was evicted meanwhile
            }
            self.write_batch();
        }
    }

    /// Takes up to `max` more records from the shared queue into the batch
    /// without blocking.
    fn fill_from_shared(&mut self, max: usize) {
        while self.batch.len() < max {
            match self.data.try_recv() {
                Ok(record) => self.batch.push(record),
                Err(_) => break,
            }
        }
    }

    /// Hands a record back to the publishers' pool if we are the last
    /// subscription done with it (see [`Recycled::release`]).
    fn recycle(&mut self, record: Arc<Record>) {
        let Some(record) = Recycled::release(record, RECYCLE_ATTEMPTS) else {
            return;
        };
        self.recycled.push(record);
        if self.recycled.len() >= RECYCLE_BATCH {
            self.hand_back_recycled();
        }
    }

    /// Sends the recycled records to the pool; if it is full they are freed.
    fn hand_back_recycled(&mut self) {
        if self.recycled.is_empty() {
            return;
        }
        let full = std::mem::replace(&mut self.recycled, Vec::with_capacity(RECYCLE_BATCH));
        if let Err(TrySendError::Full(mut back) | TrySendError::Disconnected(mut back)) =
            self.pool.try_send(full)
        {
            back.clear();
            self.recycled = back;
        }
    }

    /// Hands the batch to the appender and settles every record in it:
    /// written, or failed after retries and dead-lettered (or lost).
    ///
    /// Appender panics are caught closer in; this outer guard is for our own
    /// code. Should it ever panic, the records taken but not yet settled are
    /// counted as lost (so the books still balance and `in_queue` does not
    /// stay up for ever) and the worker goes on.
    fn write_batch(&mut self) {
        if catch_unwind(AssertUnwindSafe(|| self.settle_batch())).is_err() {
            let counters = &self.shared.counters;
            let settled = Counters::get(&counters.written)
                + Counters::get(&counters.dead_lettered)
                + Counters::get(&counters.lost);
            let unsettled = Counters::get(&counters.taken).saturating_sub(settled);
            Counters::add(&counters.lost, unsettled);
            self.batch.clear();
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
        Counters::add(&counters.taken, batch.len() as u64);
        for record in &batch {
            shared.queue.release_bytes(record, counters);
        }
        let mut start = 0;
        while start < batch.len() {
            match self.breaker.gate(Instant::now()) {
                Gate::Open => {
                    let error = format!(
                        "circuit breaker open; last error: {}",
                        self.last_error.as_deref().unwrap_or("unknown")
                    );
                    for record in &batch[start..] {
                        self.dead_letter(record, &error, 0);
                    }
                    break;
                }
                Gate::Probe => {
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
                Gate::Pass => {}
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
        // Give back the records only we still hold, and keep the batch's
        // allocation for the next batch.
        let mut batch = batch;
        for record in batch.drain(..) {
            self.recycle(record);
        }
        self.batch = batch;
    }

    /// One attempt at writing one record, panics caught.
    fn attempt(&mut self, record: &Record) -> Result<(), AppendError> {
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
        while attempts < self.retry.get_max_attempts() && !self.breaker.is_open() {
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
        Counters::add(&counters.dead_lettered, 1);
        // The dead-letter queue is ours to push into like a publisher's: enter
        // its gate so its shutdown waits for us (see `SubShared::gate`).
        route.gate.fetch_add(1, Ordering::SeqCst);
        route.push_shared(Arc::new(letter));
        route.gate.fetch_sub(1, Ordering::Release);
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

    /// The queue ran empty: report drops, then flush the appender.
    fn idle(&mut self) {
        self.report_drops();
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let appender = &mut self.appender;
        let result = catch_unwind(AssertUnwindSafe(|| appender.flush()))
            .unwrap_or_else(|payload| Err(AppendError::panicked(payload.as_ref())));
        if let Err(error) = result {
            if error.operation() == Operation::Panic {
                Counters::add(&self.shared.counters.panics, 1);
            }
            crate::report::stderr(format_args!(
                "logbus: subscription {:?} could not flush: {}",
                self.shared.name,
                error.chain_text()
            ));
        }
    }

    /// Emits one synthetic WARN record per burst of drops to our own
    /// appender. It is not counted as `matched` or `written`: it is the
    /// broker talking, not a published record.
    fn report_drops(&mut self) {
        let counters = &self.shared.counters;
        let dropped = Counters::get(&counters.dropped);
        // `dropped` can read one high for an instant (see `queue.rs`), and
        // then lower again: report only growth past what was reported.
        if dropped <= self.reported_drops {
            return;
        }
        // Droppers stamp the burst right after counting. No stamp yet means
        // a drop is still being counted (or an eviction may be taken back):
        // report at the next idle point, when it is settled. At shutdown no
        // dropper is left, so nothing is missed.
        // Relaxed: the timestamp is a plain value; a dropper racing with the
        // swap below starts the next burst.
        if counters.first_drop_micros.load(Ordering::Relaxed) == 0 {
            return;
        }
        let burst = dropped - self.reported_drops;
        self.reported_drops = dropped;
        let since = counters.first_drop_micros.swap(0, Ordering::Relaxed);
        let since = crate::format_micros(since);
        let record = Record::builder(Topic::new(Level::Warn, "logbus"))
            // Relaxed: seq numbers only need to be unique and increasing.
            .seq(self.seq.fetch_add(1, Ordering::Relaxed))
            .message(format!(
                "{burst} records dropped by subscription {:?} since {since} (queue full)",
                self.shared.name
            ))
            .kv("dropped", burst)
            .kv("subscription", self.shared.name.to_string())
            .thread(crate::log_backend::thread_info())
            .build();
        if let Err(error) = self.attempt(&record) {
            if error.operation() == Operation::Panic {
                Counters::add(&self.shared.counters.panics, 1);
            }
            crate::report::stderr(format_args!(
                "logbus: subscription {:?} dropped {burst} records since {since}; the summary could not be written: {}",
                self.shared.name,
                error.chain_text()
            ));
        }
        self.dirty = true;
    }
}
