//! The worker of one subscription: its thread, its loop, and how it is
//! started, stopped and joined.
//!
//! The loop takes a batch from the queue's drain, lets a small batch linger
//! for more, settles it (`settle.rs`), and when the queue runs empty writes
//! a drop summary (`summary.rs`), flushes the appender and parks on the
//! queue's waker. Control messages (flush, shutdown) come first.

mod settle;
mod summary;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};
use logbus_appenders::{AppendError, Appender, BatchError, Operation, Record};

pub(crate) use self::settle::DeadLetters;

use crate::error::SubscribeError;
use crate::queue::{Barrier, Drain, Queue, Work};
use crate::recycle::{HandBack, Pool};
use crate::retry::{Breaker, RetryPolicy};
use crate::stats::Counters;
use crate::subscription::{Control, SubShared, SubscriptionBuilder};
use crate::sync::{lock, spin_loop, thread, Arc, AtomicU64, CacheLine, Mutex, OnceLock, Ordering};

/// Most records taken off the queue before calling the appender: large
/// enough that a flood is written in few system calls, small enough that the
/// first records of a burst reach the file quickly.
const BATCH: usize = 512;

/// Most records a take hands an appender that stages its batches
/// (`logbus_appenders::Staged`) at once: few enough that they are still in
/// the core's first-level cache when it renders them.
const RUN: usize = 32;

/// A batch smaller than this waits for more records (`Worker::linger`).
const LINGER_BATCH: usize = BATCH;

/// How long a linger goes on while its takes find nothing: a take that
/// finds nothing ends it once this has passed since it began. (A record
/// logged alone is written about [`RUN_WAIT`] after it was taken: the
/// pause after its take, then a take that finds nothing.)
const LINGER: Duration = Duration::from_micros(20);

/// A take of fewer records than this, while records keep coming, is
/// followed by a pause ([`RUN_WAIT`]) before the next take (a queue of
/// fewer than twice this many records pauses after takes of fewer than
/// half its capacity: [`run_size`]): the worker takes a flood in runs of
/// a few hundred records, not one record behind the publisher. Taking
/// each record a moment after it was written pulled its slot and the
/// lane's tail back to the worker's core while the publisher was writing
/// the next ones, and each line then had to come back to the publisher. On a two-core VM, over 24 paired rounds of a
/// one-thread flood, the pause cut the caller's p99.9 by 142-152 ns (17
/// and 23 rounds of 24, drop-oldest and `Block`) and its mean by 16-28 ns
/// (`benches/README.md`, "Sixteenth session: a worker that takes in runs").
const LINGER_RUN: usize = 256;

/// The pause after a short take of a flood ([`LINGER_RUN`]). The worker
/// yields its core meanwhile: with more publishers than cores, they use it
/// (spinning instead cost 4-thread drop-oldest its p99.9 in one
/// comparison). A control message ends it, and so does a run queued
/// meanwhile (`Queue::holds_run`: a run's worth of records, or a byte
/// bound half used, which may not hold a run).
const RUN_WAIT: Duration = Duration::from_micros(30);

// A lone record's pause outlasts the empty take's linger after it, so the
// take after the pause ends the linger (`linger_step`'s first arm).
const _: () = assert!(RUN_WAIT.as_nanos() >= LINGER.as_nanos());

/// The longest a batch lingers while records trickle in: what bounds the
/// delay of a record when a slow, steady stream never leaves a take empty.
/// (Time the scheduler gives to other threads when the worker yields its
/// core is not bounded by it.)
const LINGER_MOST: Duration = Duration::from_micros(200);

/// A take that follows a whole pause ([`RUN_WAIT`]) and finds fewer
/// records than a run's share of this (a run of 256: 8, about 270,000
/// records a second) says that records may trickle in, and a second such
/// pause that they do: pausing for runs only burns the core
/// ([`Pace::Slowing`], [`Pace::Trickle`]). A take that finds that many says
/// they flood again.
const TRICKLE_SHARE: usize = 32;

/// How fast records arrive, as the worker last saw it: what decides whether
/// it chases them (pausing for runs, spinning when it runs out) or lets
/// them gather while it sleeps. At a steady rate of tens of thousands of
/// records a second, the chase kept the worker's core 83-95 % busy for
/// nothing, and parking after it made every log call wake the worker (a
/// system call on the caller's thread: 3-4 µs at p50).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// Records come in runs: a short take pauses for a run
    /// ([`linger_step`]), and the worker spins briefly before it dozes.
    Flood,
    /// As a flood, but a whole pause gathered few records, and no take of a
    /// run's share came since: one more such pause makes a trickle. (One alone is more often the publisher's core
    /// taken from it for a moment than a slower stream; a flood of 1,000,000
    /// records from one thread went through about a hundred such pauses.)
    Slowing,
    /// Records trickle in: a batch is written as soon as a take is short,
    /// and the worker dozes at once when it runs out ([`doze_nap`]).
    Trickle,
}

/// What came before a take, for [`Pace::after_take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// A whole pause for a run ([`RUN_WAIT`], not cut short).
    Pause,
    /// A doze's nap, this long: records gathered meanwhile.
    Doze(Duration),
    /// Work: a write, a take or a spin.
    Work,
}

impl Pace {
    /// The pace after a take of `taken` records, for a queue whose runs are
    /// `run` records, after `after`: a whole pause that gathered fewer than
    /// a run's share ([`TRICKLE_SHARE`]) makes a flood [`Pace::Slowing`]
    /// and a slowing flood a trickle; a take after a doze is a flood if it
    /// found as many as a run's share per [`RUN_WAIT`] napped (a run at
    /// most); any other take is a flood if it found a run's share. Anything
    /// less leaves the pace as it was. (Leaving a trickle only for a whole
    /// run kept a flood
    /// that once looked like one in small batches, each written as soon as
    /// it was taken while the next as small gathered meanwhile: the
    /// caller's p99.9 rose 60 ns over 16 paired rounds.)
    fn after_take(self, taken: usize, after: After, run: usize) -> Pace {
        let few = (run / TRICKLE_SHARE).max(1);
        match after {
            After::Pause if taken < few && self == Pace::Flood => Pace::Slowing,
            After::Pause if taken < few => Pace::Trickle,
            After::Doze(napped) => {
                let pauses = napped.as_nanos() / RUN_WAIT.as_nanos();
                let share = usize::try_from(pauses).unwrap_or(usize::MAX);
                if taken >= few.saturating_mul(share).clamp(few, run) {
                    Pace::Flood
                } else {
                    self
                }
            }
            _ if taken >= few => Pace::Flood,
            _ => self,
        }
    }
}

/// The first nap of a dozing worker (`Worker::doze`). Naps double from
/// here to [`DOZE_LONGEST`]: a worker that finds a record after a nap
/// starts again from the first, so at a steady rate a record waits about
/// as long as the time between records, and a usual push never wakes it.
const DOZE_FIRST: Duration = Duration::from_micros(50);

/// The longest nap of a dozing worker: what bounds the delay of a record
/// logged while it dozes (plus the kernel's timer slack, 50 µs by default).
const DOZE_LONGEST: Duration = Duration::from_millis(1);

/// Naps a worker takes, looking for work before each, before it parks and
/// publishers must wake it: about 4.5 ms in all.
const DOZE_NAPS: u32 = 8;

/// The `n`th nap (from 0) of a dozing worker, or `None` once it should
/// park: [`DOZE_FIRST`] doubling to [`DOZE_LONGEST`], [`DOZE_NAPS`] of
/// them.
fn doze_nap(n: u32) -> Option<Duration> {
    (n < DOZE_NAPS).then(|| (DOZE_FIRST * (1 << n.min(15))).min(DOZE_LONGEST))
}

/// When a pause for a run that starts at `now` ends, for a linger that
/// began at `start`: [`RUN_WAIT`] later, but never past [`LINGER_MOST`]
/// into the linger.
fn pause_until(now: Instant, start: Instant) -> Instant {
    (now + RUN_WAIT).min(start + LINGER_MOST)
}

/// What a lingering worker does after a take of `taken` records, `waited`
/// into its linger (`Worker::linger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Write the batch now.
    Write,
    /// Take again at once (a run came in).
    Take,
    /// Look again after a brief spin (nothing came in yet).
    Spin,
    /// Let a run build up first ([`RUN_WAIT`]).
    Wait,
}

/// A brief pause on the worker's core: 64 spin-loop hints.
fn spin() {
    for _ in 0..64 {
        spin_loop();
    }
}

/// The run a take must find for the worker to take again at once, for a
/// queue of `capacity` records: [`LINGER_RUN`], or half the capacity of a
/// smaller queue (which cannot hold a run of 256: pausing after each of
/// its takes would leave it full while the worker waits).
fn run_size(capacity: usize) -> usize {
    LINGER_RUN.min(capacity / 2).max(1)
}

/// The linger's rule, after a take of `taken` records `waited` into the
/// linger, at `pace`: a take that found nothing ends it once [`LINGER`] has
/// passed; a take short of a `run` waits for one in a flood, for at most
/// [`LINGER_MOST`] in all, and ends it in a trickle; a run is taken on at
/// once.
fn linger_step(taken: usize, waited: Duration, run: usize, pace: Pace) -> Next {
    match taken {
        0 if waited >= LINGER => Next::Write,
        0 => Next::Spin,
        _ if waited >= LINGER_MOST => Next::Write,
        n if n < run && pace == Pace::Trickle => Next::Write,
        n if n < run => Next::Wait,
        _ => Next::Take,
    }
}

/// How many times an idle worker looks for work, spinning then yielding,
/// before it parks: a flood's publisher usually refills the lane within.
const SPIN_ROUNDS: u32 = 16;

/// Control messages a worker's channel holds (see `SubShared::ctrl`).
const CONTROL_CAPACITY: usize = 64;

/// One subscription's worker, owned by its thread.
pub(crate) struct Worker {
    appender: Box<dyn Appender>,
    drain: Drain,
    ctrl: Receiver<Control>,
    shared: Arc<SubShared>,
    /// The broker's sequence counter, for the synthetic drop-summary records.
    seq: Arc<CacheLine<AtomicU64>>,
    batch: Vec<Arc<Record>>,
    /// The run a take must find for the linger to take on at once
    /// ([`run_size`] of the queue's capacity).
    run: usize,
    /// Whether records come in runs or trickle in, as the last takes said.
    pace: Pace,
    /// How long the worker napped before it found work in a doze, until
    /// its next take.
    dozed: Option<Duration>,
    /// Drops already reported in a summary record.
    reported_drops: u64,
    /// Whether records were written since the last appender flush.
    dirty: bool,
    retry: RetryPolicy,
    breaker: Breaker,
    dead_letters: DeadLetters,
    /// The last failure, quoted when the breaker skips the appender.
    last_error: Option<String>,
    /// Where the records nobody else holds go back for publishers to reuse.
    hand_back: HandBack,
    /// Where the cursor moves once the last written batch is let go of
    /// (`settle.rs`).
    released_cursor: Option<u64>,
    /// Whether the batch being taken is staged, a run at a time.
    staging: bool,
    /// How many of the batch's records were handed to the appender to
    /// stage, and how staging failed, if it did (`settle.rs` settles them).
    staged: usize,
    stage_failure: Option<BatchError>,
}

/// Creates a subscription's shared state from `builder` and starts its
/// worker thread `logbus-<name>`.
///
/// # Errors
///
/// If the thread cannot be started: the unstarted worker, which holds the
/// user's appender, comes back inside [`SpawnFailed`], for the caller to
/// drop once it released its locks (an appender's `Drop` is user code).
pub(crate) fn spawn(
    builder: SubscriptionBuilder,
    dead_letters: DeadLetters,
    pool: &Pool,
    seq: Arc<CacheLine<AtomicU64>>,
) -> Result<Arc<SubShared>, SpawnFailed> {
    let (worker, done_tx) = Worker::new(builder, dead_letters, pool, seq);
    let shared = Arc::clone(&worker.shared);
    // The worker goes to its thread through a slot, so that a failed spawn
    // (which drops the closure inside `spawn`) leaves it with us.
    let slot = Arc::new(Mutex::new(Some(worker)));
    let theirs = Arc::clone(&slot);
    let spawned = start_thread(format!("logbus-{}", shared.name), move || {
        // Dropped when the thread ends, however it ends: disconnects `done`.
        let _done = done_tx;
        let Some(worker) = lock(&theirs).take() else {
            return;
        };
        drop(theirs);
        // The address identifies the subscription for the exit hook
        // (`broker/lifecycle.rs`), which must not wait for its own thread.
        crate::thread_role::mark_worker_thread(Arc::as_ptr(&worker.shared) as usize);
        worker.shared.queue.waker.register();
        worker.run();
    });
    match spawned {
        Ok(thread) => {
            *lock(&shared.worker) = Some(thread);
            Ok(shared)
        }
        Err(error) => Err(SpawnFailed {
            error,
            unstarted: lock(&slot).take().map(Box::new),
        }),
    }
}

/// A worker thread that could not be started, and the worker it was to
/// run (with the user's appender).
pub(crate) struct SpawnFailed {
    error: std::io::Error,
    unstarted: Option<Box<Worker>>,
}

impl std::fmt::Debug for SpawnFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnFailed")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl SpawnFailed {
    /// The error, the worker dropped here: call it with no lock held.
    pub(crate) fn into_error(self) -> SubscribeError {
        drop(self.unstarted);
        SubscribeError::Spawn(self.error)
    }
}

/// Starts a named thread; under `cfg(test)`, fails instead on a thread
/// that set [`FAIL_SPAWNS`] (a failed spawn cannot be provoked otherwise
/// when running as root).
fn start_thread(
    name: String,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<thread::JoinHandle<()>> {
    #[cfg(test)]
    if FAIL_SPAWNS.with(std::cell::Cell::get) {
        drop(body);
        return Err(std::io::Error::from(std::io::ErrorKind::WouldBlock));
    }
    thread::Builder::new().name(name).spawn(body)
}

#[cfg(test)]
thread_local! {
    /// Makes [`start_thread`] fail on this thread (tests only).
    pub(crate) static FAIL_SPAWNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Closes the gate of a removed subscription, tells its worker to finish and
/// joins it. Returns whether the worker finished before `deadline`.
pub(crate) fn stop(sub: &SubShared, deadline: Option<Instant>) -> bool {
    sub.queue.close();
    sub.queue.wait_gate_closed(deadline);
    let _ = match deadline {
        Some(d) => sub.ctrl.send_deadline(Control::Shutdown, d).is_ok(),
        None => sub.ctrl.send(Control::Shutdown).is_ok(),
    };
    sub.queue.waker.wake();
    join(sub, deadline)
}

/// Closes the gates of `subs`, tells their workers to finish, and waits
/// (they drain in parallel). Returns the names of the unfinished; from a
/// worker thread (`on_worker`) it does not wait, and names them all.
pub(crate) fn stop_all(subs: &[Arc<SubShared>], deadline: Instant, on_worker: bool) -> Vec<String> {
    for sub in subs {
        sub.queue.close();
        if sub.queue.wait_gate_closed(Some(deadline)) {
            let _ = sub.ctrl.send_deadline(Control::Shutdown, deadline);
            sub.queue.waker.wake();
        }
    }
    subs.iter()
        .filter(|sub| on_worker || !join(sub, Some(deadline)))
        .map(|sub| sub.name.to_string())
        .collect()
}

/// Waits for the worker thread to finish and joins it (never from the worker
/// itself). Returns whether it finished before `deadline`.
fn join(sub: &SubShared, deadline: Option<Instant>) -> bool {
    let handle = lock(&sub.worker).take();
    if let Some(h) = handle.as_ref() {
        if h.thread().id() == thread::current().id() {
            // Never join (or wait for) the worker from its own thread.
            *lock(&sub.worker) = handle;
            return false;
        }
    }
    // Wait on `done`, not on owning the handle: another party (a background
    // unsubscribe) may hold the handle and join the thread itself.
    let finished = match deadline {
        Some(d) => !matches!(
            sub.done.recv_deadline(d),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        ),
        None => {
            let _ = sub.done.recv();
            true
        }
    };
    match handle {
        // The worker catches appender panics, so the thread itself does not
        // panic; a join error would only repeat what was reported.
        Some(handle) if finished => {
            let _ = handle.join();
        }
        Some(handle) => *lock(&sub.worker) = Some(handle),
        None => {}
    }
    finished
}

impl Worker {
    /// A subscription's shared state made from `builder`, and the worker
    /// that serves it, not started; and the sender whose drop tells
    /// `join` the worker is done.
    fn new(
        builder: SubscriptionBuilder,
        dead_letters: DeadLetters,
        pool: &Pool,
        seq: Arc<CacheLine<AtomicU64>>,
    ) -> (Worker, crossbeam_channel::Sender<()>) {
        let run = run_size(builder.capacity);
        let (queue, drain) = Queue::new(builder.capacity, builder.max_bytes, builder.overflow);
        if builder.replay.is_some() {
            // Held before the worker thread exists, so that its every take sees
            // the hold (the thread's creation publishes it): no live record
            // overtakes the replay (`queue/front.rs`). A review found the hold
            // set after the spawn missed by a first take already under way.
            queue.front.hold();
        }
        let (ctrl_tx, ctrl_rx) = crossbeam_channel::bounded(CONTROL_CAPACITY);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(SubShared {
            name: builder.name.into(),
            queue,
            counters: Counters::default(),
            ctrl: ctrl_tx,
            worker: Mutex::new(None),
            done: done_rx,
            fork_generation: crate::fork::generation(),
            cursor: AtomicU64::new(0),
            replay: OnceLock::new(),
        });
        let worker = Worker {
            appender: builder.appender,
            drain,
            ctrl: ctrl_rx,
            shared,
            seq,
            batch: Vec::with_capacity(BATCH),
            run,
            pace: Pace::Flood,
            dozed: None,
            reported_drops: 0,
            dirty: false,
            retry: builder.retry,
            breaker: Breaker::new(builder.breaker),
            dead_letters,
            last_error: None,
            hand_back: pool.hand_back(),
            released_cursor: None,
            staging: false,
            staged: 0,
            stage_failure: None,
        };
        (worker, done_tx)
    }

    /// The loop, as a small state machine: *working* (take a batch, write
    /// it), *idle* (report drops, flush, forget finished lanes, spin, park),
    /// *draining* (after `Shutdown`: write what is left, flush, exit).
    fn run(mut self) {
        loop {
            // Control first: a flush or shutdown must not wait behind a flood.
            match self.ctrl.try_recv() {
                Ok(Control::Flush(ack)) => {
                    // What a doze's nap gathered, the flush takes.
                    self.dozed = None;
                    self.flush_barrier();
                    self.idle();
                    let _ = ack.send(()); // the flusher may have timed out
                    continue;
                }
                Ok(Control::Shutdown) | Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {}
            }
            // Read before the take: a hold that ends after it (`fill`) does
            // not make the take's empty result mean that all was written.
            let held = self.shared.queue.front.is_active();
            let taken = self.take_batch();
            // A doze that found work before its first nap (zero) reads as
            // work: its bar is a run's share either way.
            let after = self.dozed.take().map_or(After::Work, After::Doze);
            if taken > 0 {
                self.pace = self.pace.after_take(taken, after, self.run);
                self.linger(taken);
                self.write_batch();
                continue;
            }
            // Nothing queued: the cursor moves, then report drops and flush
            // the appender, then wait.
            self.caught_up(held);
            self.idle();
            self.drain.forget_finished(&self.shared.queue);
            if self.pace != Pace::Trickle && self.spin_for_work() {
                continue;
            }
            if let Some(napped) = self.doze() {
                self.dozed = Some(napped);
                continue;
            }
            let shared = Arc::clone(&self.shared);
            shared.queue.waker.sleep(|| self.look());
        }
        // Draining: no publisher can enqueue any more (the gate is closed),
        // so "empty" is final, once a replay's hold has ended.
        self.shared.queue.front.wait_released();
        while self.take_batch() > 0 {
            self.write_batch();
        }
        self.idle();
        self.hand_back.send();
    }

    /// A take found nothing: every record below the next seq that was
    /// queued here is written (the cursor, a hint: one in flight may still
    /// come), once the written ones are let go of. Not if a replay held the
    /// queue when the take began (`held`, read before it), or holds it now:
    /// its records, and the live ones queued behind them, are not written
    /// yet (a review found an `UntilWritten` journal letting go of them,
    /// and a second one the hold ending, with no records, between the take
    /// and this look). A hold only ever ends, so a take that began with
    /// none saw every source.
    fn caught_up(&mut self, held: bool) {
        // Relaxed: see `SubShared::cursor`.
        let next = self.seq.load(Ordering::Relaxed);
        self.let_go();
        if !held && !self.shared.queue.front.is_active() {
            self.shared.advance(next);
        }
    }

    /// Takes up to a batch of queued records; returns how many were added.
    fn take_batch(&mut self) -> usize {
        self.take(None)
    }

    /// Takes up to a batch of queued records, towards `barrier` if given
    /// (a flush's: 0 once it is reached); returns how many were added. An
    /// appender that stages its batches gets them a run at a time, as they
    /// are taken, while its breaker is closed (a probe or a skip takes its
    /// records one at a time, `settle.rs`).
    fn take(&mut self, barrier: Option<&Barrier>) -> usize {
        if self.batch.is_empty() {
            self.staging = !self.breaker.is_open() && self.offers_staging();
        }
        let before = self.batch.len();
        let take_into =
            |drain: &mut Drain, queue: &Queue, batch: &mut Vec<Arc<Record>>, max| match barrier {
                Some(barrier) => drain.take_towards(barrier, queue, batch, max),
                None => drain.take_batch(queue, batch, max),
            };
        while self.staging && self.batch.len() < BATCH {
            let max = (self.batch.len() + RUN).min(BATCH);
            let taken = take_into(&mut self.drain, &self.shared.queue, &mut self.batch, max);
            self.count_taken(taken);
            if taken == 0 {
                return self.batch.len() - before;
            }
            self.stage_taken();
        }
        if !self.staging {
            // Not staged, or staging failed: the rest the usual way.
            let taken = take_into(&mut self.drain, &self.shared.queue, &mut self.batch, BATCH);
            self.count_taken(taken);
        }
        self.batch.len() - before
    }

    /// Counts `n` records as taken the moment they left the queue, before
    /// any is staged: from then on `stats` finds them in `taken`, not in
    /// the queue's length. (Counted when the batch was settled, a staged
    /// batch's records were in neither while it was rendered, and
    /// `matched` read low; `tests/journal.rs` caught it.)
    fn count_taken(&self, n: usize) {
        Counters::add(&self.shared.counters.taken, n as u64);
    }

    /// Whether the appender stages its batches (`Appender::staged`, user
    /// code, asked as a batch begins). A panic there is counted and
    /// reported, and the batch goes the usual way (`append_batch`, whose
    /// panics are caught too): uncaught, it ended the worker, and flushes
    /// then answered for a queue no one drained. Out of line: asked once a
    /// batch, not in the take's loop.
    #[inline(never)]
    fn offers_staging(&mut self) -> bool {
        let appender = &mut self.appender;
        match catch_unwind(AssertUnwindSafe(|| appender.staged().is_some())) {
            Ok(offers) => offers,
            Err(payload) => {
                Counters::add(&self.shared.counters.panics, 1);
                crate::report::stderr(format_args!(
                    "logbus: subscription {:?}: {}; its batch is written without staging",
                    self.shared.name,
                    AppendError::panicked(payload.as_ref()).chain_text()
                ));
                false
            }
        }
    }

    /// Hands the records taken since the last run to the appender to
    /// stage. A failure ends the staged batch (`settle.rs` settles it);
    /// so does a panic, in `stage` or in `Appender::staged` asked for it,
    /// taken to have written nothing of the batch, as a panicking
    /// `append_batch` is: a record may be written twice, none is counted
    /// as written unwritten.
    fn stage_taken(&mut self) {
        let from = self.staged;
        let (appender, run) = (&mut self.appender, &self.batch[from..]);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            appender.staged().map(|staged| staged.stage(run, from))
        }))
        .unwrap_or_else(|payload| {
            Some(Err(BatchError {
                written: 0,
                error: AppendError::panicked(payload.as_ref()),
            }))
        });
        let Some(outcome) = outcome else {
            // It stopped offering staging (`Appender::staged` says it must
            // not): what it staged is settled, the rest goes the usual way.
            self.staging = false;
            return;
        };
        self.staged = self.batch.len();
        if let Err(failure) = outcome {
            self.staging = false;
            self.stage_failure = Some(failure);
        }
    }

    /// Lets a small batch grow to [`LINGER_BATCH`] records while records
    /// keep arriving (see [`linger_step`]): under a flood, one write then
    /// carries hundreds of records, and each take a run of them
    /// ([`LINGER_RUN`]). `taken` is what the take before it found. A control
    /// message ends the wait.
    fn linger(&mut self, mut taken: usize) {
        if self.batch.len() >= LINGER_BATCH {
            // A full take (the worker is behind): no clock read.
            return;
        }
        if taken < self.run && self.pace == Pace::Trickle {
            // A trickle's short take: no clock read either.
            return;
        }
        let start = Instant::now();
        while self.batch.len() < LINGER_BATCH && self.ctrl.is_empty() {
            let mut after = After::Work;
            match linger_step(taken, start.elapsed(), self.run, self.pace) {
                Next::Write => return,
                Next::Take => {}
                Next::Spin => spin(),
                Next::Wait => {
                    let now = Instant::now();
                    let until = pause_until(now, start);
                    // Whole: it ran out its time, which the linger's bound
                    // did not cut (a pause a control message or a queued
                    // run ended says nothing of the rate: a half-used byte
                    // bound may hold a handful of records).
                    let whole = loop {
                        if !self.ctrl.is_empty() || self.shared.queue.holds_run(self.run) {
                            break false;
                        }
                        if Instant::now() >= until {
                            break until == now + RUN_WAIT;
                        }
                        thread::yield_now();
                    };
                    if whole {
                        after = After::Pause;
                    }
                }
            }
            taken = self.take_batch();
            self.pace = self.pace.after_take(taken, after, self.run);
        }
    }

    /// Looks for work a few times, spinning then yielding; true if found.
    fn spin_for_work(&mut self) -> bool {
        for round in 0..SPIN_ROUNDS {
            if self.look() == Work::Ready {
                return true;
            }
            if round < SPIN_ROUNDS / 2 {
                spin();
            } else {
                thread::yield_now();
            }
        }
        false
    }

    /// Naps while nothing is queued ([`doze_nap`]), looking for work
    /// before each; once found, how long its last nap lasted (zero if it
    /// found work before its first), or `None` once it should park. A dozing
    /// worker has not said it sleeps, so a usual push does not wake it (a
    /// flush, a shutdown, a blocked publisher, or a push once the queue is
    /// filling (64 records queued, or an eighth of a small queue, or half
    /// its byte bound),
    /// `Queue::wake_if_filling`, ends a nap early). It is
    /// not part of the wake-up protocol (`queue/waker.rs`, "Dozing").
    fn doze(&self) -> Option<Duration> {
        let waker = &self.shared.queue.waker;
        waker.set_dozing(true);
        let mut began = None;
        let found = (0..).map_while(doze_nap).any(|nap| {
            if self.look() == Work::Ready {
                return true;
            }
            // What a look then finds came in during this nap.
            began = Some(Instant::now());
            crate::sync::nap(nap);
            false
        });
        waker.set_dozing(false);
        found.then(|| began.map_or(Duration::ZERO, |began| began.elapsed()))
    }

    /// Whether a control message, a queued record, a new lane or a drop
    /// summary is waiting, or a publisher is inside the gate (see
    /// `queue/waker.rs`).
    fn look(&self) -> Work {
        let urgent = !self.ctrl.is_empty() || self.drops_to_report();
        Work::from(urgent).or(self.drain.look(&self.shared.queue))
    }

    /// Writes every record queued before the flush request (see
    /// `queue/drain.rs`, "Flush barriers").
    fn flush_barrier(&mut self) {
        let shared = Arc::clone(&self.shared);
        shared.queue.front.wait_released();
        let barrier = self.drain.barrier(&shared.queue);
        while self.take(Some(&barrier)) > 0 {
            self.write_batch();
        }
    }

    /// The queue ran empty: let go of the written records, report drops,
    /// then flush the appender. What the thread converts from now on was
    /// not taken since its last take (`clock::forget_taken`).
    fn idle(&mut self) {
        crate::clock::forget_taken();
        self.let_go();
        self.report_drops();
        self.drain.taker.spares.trim();
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
}

#[cfg(test)]
mod tests {
    use logbus_appenders::Memory;

    use super::*;
    use crate::queue::{test_record, DEFAULT_CAPACITY};
    use crate::subscription::Subscription;

    /// The linger's bounds, apart from the clock: a lone record waits for a
    /// run that does not come, a trickle at most [`LINGER_MOST`], a flood is
    /// taken in runs.
    #[test]
    fn a_lingering_batch_waits_for_runs_and_is_written_within_its_bounds() {
        let us = Duration::from_micros;
        let run = LINGER_RUN;
        // A lone record: its take is short, so a run may build up; the take
        // after the pause finds nothing, past LINGER, and the batch is
        // written.
        assert_eq!(linger_step(1, us(0), run, Pace::Flood), Next::Wait);
        assert_eq!(linger_step(0, RUN_WAIT, run, Pace::Flood), Next::Write);
        // Nothing came soon after a run: look again briefly, then write once
        // LINGER passed.
        assert_eq!(linger_step(0, us(0), run, Pace::Flood), Next::Spin);
        assert_eq!(linger_step(0, LINGER - us(1), run, Pace::Flood), Next::Spin);
        assert_eq!(linger_step(0, LINGER, run, Pace::Flood), Next::Write);
        // A few came: let a run build up, but never past LINGER_MOST, so a
        // steady trickle that never leaves a take empty is still written.
        assert_eq!(linger_step(1, LINGER * 2, run, Pace::Flood), Next::Wait);
        assert_eq!(linger_step(run - 1, us(0), run, Pace::Flood), Next::Wait);
        assert_eq!(linger_step(1, LINGER_MOST, run, Pace::Flood), Next::Write);
        assert_eq!(linger_step(run, LINGER_MOST, run, Pace::Flood), Next::Write);
        // A run came: take on at once.
        assert_eq!(linger_step(run, us(0), run, Pace::Flood), Next::Take);
        assert_eq!(
            linger_step(run * 2, LINGER_MOST - us(1), run, Pace::Flood),
            Next::Take
        );
    }

    /// A pause lasts [`RUN_WAIT`], cut short where the linger would pass
    /// [`LINGER_MOST`].
    #[test]
    fn a_pause_never_outlasts_its_linger() {
        let start = Instant::now();
        assert_eq!(pause_until(start, start), start + RUN_WAIT);
        let late = start + LINGER_MOST - RUN_WAIT / 2;
        assert_eq!(pause_until(late, start), start + LINGER_MOST);
        let past = start + LINGER_MOST * 2;
        assert_eq!(pause_until(past, start), start + LINGER_MOST);
    }

    /// A queue too small to hold a run of [`LINGER_RUN`] records waits for
    /// half of it: a take that empties it is taken on at once, not left to
    /// fill up behind a pause.
    #[test]
    fn a_small_queue_waits_for_half_of_itself() {
        assert_eq!(run_size(DEFAULT_CAPACITY), LINGER_RUN);
        assert_eq!(run_size(2 * LINGER_RUN), LINGER_RUN);
        assert_eq!(run_size(64), 32);
        assert_eq!(run_size(3), 1);
        assert_eq!(run_size(1), 1);
        let run = run_size(16);
        assert_eq!(linger_step(8, Duration::ZERO, run, Pace::Flood), Next::Take);
        assert_eq!(
            linger_step(16, Duration::ZERO, run, Pace::Flood),
            Next::Take
        );
        assert_eq!(linger_step(7, Duration::ZERO, run, Pace::Flood), Next::Wait);
        // A queue of one record never pauses.
        assert_eq!(
            linger_step(1, Duration::ZERO, run_size(1), Pace::Flood),
            Next::Take
        );
    }

    /// A pause that gathers few records turns the worker to a trickle's
    /// pace, where a short take is written at once; a take of more turns
    /// it back to a flood's, whatever came before.
    #[test]
    fn a_pause_that_gathers_few_records_stops_the_chase_until_a_run_comes() {
        let run = LINGER_RUN;
        let few = run / TRICKLE_SHARE;
        let (flood, trickle) = (Pace::Flood, Pace::Trickle);
        let slowing = Pace::Slowing;
        // After a whole pause: fewer than a run's share twice in a row is a
        // trickle; that many is a flood, whatever came before.
        assert_eq!(flood.after_take(few - 1, After::Pause, run), slowing);
        assert_eq!(flood.after_take(0, After::Pause, run), slowing);
        assert_eq!(slowing.after_take(few - 1, After::Pause, run), trickle);
        assert_eq!(slowing.after_take(0, After::Pause, run), trickle);
        assert_eq!(flood.after_take(few, After::Pause, run), flood);
        assert_eq!(slowing.after_take(few, After::Pause, run), flood);
        assert_eq!(trickle.after_take(few, After::Pause, run), flood);
        // Slowing still pauses for runs.
        assert_eq!(linger_step(1, Duration::ZERO, run, slowing), Next::Wait);
        // After work: a run's share is a flood, less leaves the pace.
        assert_eq!(flood.after_take(1, After::Work, run), flood);
        assert_eq!(slowing.after_take(few, After::Work, run), flood);
        assert_eq!(slowing.after_take(1, After::Work, run), slowing);
        assert_eq!(trickle.after_take(few - 1, After::Work, run), trickle);
        assert_eq!(trickle.after_take(few, After::Work, run), flood);
        // After a doze, which gathers for as long as it napped: a run's
        // share per pause's time napped, a run at most.
        let napped = |pauses| After::Doze(RUN_WAIT * pauses);
        assert_eq!(trickle.after_take(few - 1, napped(0), run), trickle);
        assert_eq!(trickle.after_take(few, napped(0), run), flood, "as work");
        assert_eq!(trickle.after_take(few, napped(1), run), flood);
        assert_eq!(trickle.after_take(3 * few - 1, napped(3), run), trickle);
        assert_eq!(trickle.after_take(3 * few, napped(3), run), flood);
        assert_eq!(trickle.after_take(run - 1, napped(100), run), trickle);
        assert_eq!(trickle.after_take(run, napped(100), run), flood);
        assert_eq!(flood.after_take(1, napped(1), run), flood);
        // In a trickle a short take is written, a run still taken on.
        let zero = Duration::ZERO;
        assert_eq!(linger_step(1, zero, run, trickle), Next::Write);
        assert_eq!(linger_step(run - 1, zero, run, trickle), Next::Write);
        assert_eq!(linger_step(run, zero, run, trickle), Next::Take);
        assert_eq!(linger_step(0, zero, run, trickle), Next::Spin);
        // A small queue's run's share is one record: only empty takes
        // after pauses make a trickle.
        let small = run_size(16);
        assert_eq!(slowing.after_take(0, After::Pause, small), trickle);
        assert_eq!(flood.after_take(1, After::Pause, small), flood);
        assert_eq!(trickle.after_take(1, After::Work, small), flood);
    }

    /// A dozing worker's naps double from the first to the longest, and it
    /// parks after the last; in all they stay within a few milliseconds.
    #[test]
    fn a_dozing_worker_naps_longer_each_time_then_parks() {
        let naps: Vec<Duration> = (0..).map_while(doze_nap).collect();
        assert_eq!(naps.len(), DOZE_NAPS as usize);
        assert_eq!(naps[0], DOZE_FIRST);
        assert_eq!(naps[1], DOZE_FIRST * 2);
        assert!(naps.windows(2).all(|w| w[0] <= w[1] && w[1] <= w[0] * 2));
        assert_eq!(*naps.last().unwrap(), DOZE_LONGEST);
        let total: Duration = naps.iter().sum();
        assert_eq!(total, Duration::from_micros(4_550));
        assert_eq!(doze_nap(DOZE_NAPS), None);
        assert_eq!(doze_nap(u32::MAX), None);
    }

    /// Stages records in a list and counts its calls; writes them (to
    /// `written`) at the commit.
    #[derive(Default)]
    struct Stages {
        staged: Vec<u64>,
        written: Arc<Mutex<Vec<u64>>>,
        runs: Arc<AtomicU64>,
    }

    impl Appender for Stages {
        fn append(&mut self, record: &Record) -> Result<(), AppendError> {
            lock(&self.written).push(record.seq());
            Ok(())
        }

        fn staged(&mut self) -> Option<&mut dyn logbus_appenders::Staged> {
            Some(self)
        }

        fn flush(&mut self) -> Result<(), AppendError> {
            Ok(())
        }
    }

    impl logbus_appenders::Staged for Stages {
        fn stage(&mut self, records: &[Arc<Record>], from: usize) -> Result<(), BatchError> {
            assert_eq!(self.staged.len(), from);
            self.runs.fetch_add(1, Ordering::Relaxed);
            self.staged.extend(records.iter().map(|r| r.seq()));
            Ok(())
        }

        fn commit(&mut self) -> Result<(), BatchError> {
            lock(&self.written).append(&mut self.staged);
            Ok(())
        }
    }

    /// A flush's barrier takes what was queued before it in staged runs
    /// too, and writes all of it before the flush is answered.
    #[test]
    fn a_flush_stages_what_it_takes_in_runs() {
        let seq = Arc::new(CacheLine(AtomicU64::new(0)));
        let appender = Stages::default();
        let (written, runs) = (Arc::clone(&appender.written), Arc::clone(&appender.runs));
        let builder = Subscription::builder("s", appender).capacity(4096);
        let (mut worker, _done) =
            Worker::new(builder, DeadLetters::IsDeadLetter, &Pool::new(), seq);
        for seq in 0..1_000 {
            worker.shared.push_shared(test_record(seq)).unwrap();
        }
        worker.flush_barrier();
        assert_eq!(*lock(&written), (0..1_000).collect::<Vec<_>>());
        // Batches of 512 in runs of 32: 16, then 16 again (480 of the
        // second batch's 488 in 15 runs, the last 8 in one).
        assert_eq!(runs.load(Ordering::Relaxed), 32);
        let stats = worker.shared.stats();
        assert_eq!(
            (stats.matched, stats.written, stats.in_queue),
            (1_000, 1_000, 0)
        );
    }

    /// A written batch stays with the worker until it is let go of, when
    /// the worker goes idle or writes the next batch; only then does the
    /// cursor move past it, so that a journal that keeps records until
    /// they are written lets go of records no worker holds any more.
    #[test]
    fn the_cursor_moves_once_a_written_batch_is_let_go_of() {
        let seq = Arc::new(CacheLine(AtomicU64::new(0)));
        let (memory, captured) = Memory::new();
        let builder = Subscription::builder("s", memory);
        let (mut worker, _done) =
            Worker::new(builder, DeadLetters::IsDeadLetter, &Pool::new(), seq);
        let counts =
            || -> Vec<usize> { captured.records().iter().map(Arc::strong_count).collect() };
        for seq in 0..3 {
            worker.shared.push_shared(test_record(seq)).unwrap();
        }
        assert_eq!(worker.take_batch(), 3);
        worker.write_batch();
        // The appender's, `records`' copy, and the worker's.
        assert_eq!(counts(), [3, 3, 3]);
        assert_eq!(worker.shared.cursor(), 0, "not let go of yet");

        worker.shared.push_shared(test_record(3)).unwrap();
        assert_eq!(worker.take_batch(), 1);
        worker.write_batch();
        assert_eq!(counts(), [2, 2, 2, 3], "the first batch let go of");
        assert_eq!(worker.shared.cursor(), 3);

        worker.idle();
        assert_eq!(counts(), [2, 2, 2, 2]);
        assert_eq!(worker.shared.cursor(), 4);
    }

    /// A take that finds nothing because a replay holds the queue does not
    /// move the cursor past the records held back, even when the hold ends
    /// between the take and the look; once they are written, it moves.
    #[test]
    fn the_cursor_stays_while_a_replay_holds_the_queue() {
        let seq = Arc::new(CacheLine(AtomicU64::new(0)));
        let (memory, captured) = Memory::new();
        let builder = Subscription::builder("s", memory);
        let (mut worker, _done) = Worker::new(
            builder,
            DeadLetters::IsDeadLetter,
            &Pool::new(),
            Arc::clone(&seq),
        );
        worker.shared.queue.front.hold();
        seq.store(3, Ordering::Relaxed);
        worker.shared.push_shared(test_record(2)).unwrap();
        let held = worker.shared.queue.front.is_active();
        assert_eq!(worker.take_batch(), 0, "held");
        worker.caught_up(held);
        assert_eq!(worker.shared.cursor(), 0, "records 0 to 2 are not written");
        // The hold ends between a take and its look, with no records (the
        // replay's predicate kept none): the front looks idle, and the live
        // record is still queued.
        let held = worker.shared.queue.front.is_active();
        assert_eq!(worker.take_batch(), 0, "held");
        worker.shared.queue.front.fill(Vec::new());
        worker.caught_up(held);
        assert_eq!(worker.shared.cursor(), 0, "record 2 is not written");
        while worker.take_batch() > 0 {
            worker.write_batch();
        }
        worker.caught_up(false);
        assert_eq!(worker.shared.cursor(), 3);
        assert_eq!(captured.records().len(), 1);
    }

    /// Sends each record's `seq` as it is written.
    struct Sends(crossbeam_channel::Sender<u64>);

    impl Appender for Sends {
        fn append(&mut self, record: &Record) -> Result<(), AppendError> {
            let _ = self.0.send(record.seq());
            Ok(())
        }

        fn flush(&mut self) -> Result<(), AppendError> {
            Ok(())
        }
    }

    /// An idle worker dozes, then parks; a record pushed in either state is
    /// written without a flush asking for it: found by a look after a nap,
    /// or after the publisher's unpark. (How promptly is not tested: the
    /// park's safety net would deliver it too, and telling them apart
    /// would take a timing threshold; `loom/` checks that no wake-up is
    /// lost.)
    #[test]
    fn a_record_is_written_whether_the_idle_worker_dozes_or_parked() {
        let seq = Arc::new(CacheLine(AtomicU64::new(0)));
        let (tx, rx) = crossbeam_channel::unbounded();
        let builder = Subscription::builder("s", Sends(tx));
        let sub = spawn(builder, DeadLetters::IsDeadLetter, &Pool::new(), seq).unwrap();
        let written = || rx.recv_timeout(Duration::from_secs(60)).expect("written");
        // Pushed as soon as the one before was written: the worker is
        // spinning or dozing, not parked.
        for seq in 0..4 {
            sub.push_shared(test_record(seq)).unwrap();
            assert_eq!(written(), seq);
        }
        // Once its naps are over, it says it sleeps and parks.
        let parked = Instant::now() + Duration::from_secs(60);
        while !sub.queue.waker.is_sleeping() {
            assert!(Instant::now() < parked, "the idle worker never parked");
            thread::yield_now();
        }
        sub.push_shared(test_record(4)).unwrap();
        assert_eq!(written(), 4);
        assert!(stop(&sub, None));
        let stats = sub.stats();
        assert_eq!((stats.matched, stats.written, stats.in_queue), (5, 5, 0));
    }

    /// A dead letter pushed after its route was told to stop is handed back
    /// (and counted as lost by the pushing worker), never left where
    /// nothing drains it.
    #[test]
    fn a_push_into_a_stopped_subscription_is_handed_back() {
        let seq = Arc::new(CacheLine(AtomicU64::new(0)));
        let (memory, captured) = Memory::new();
        let builder = Subscription::builder("s", memory);
        let sub = spawn(builder, DeadLetters::IsDeadLetter, &Pool::new(), seq).unwrap();
        assert!(sub.push_shared(test_record(0)).is_ok());
        assert!(stop(&sub, None));
        assert_eq!(sub.push_shared(test_record(1)).unwrap_err().seq(), 1);
        let stats = sub.stats();
        assert_eq!((stats.matched, stats.written, stats.in_queue), (1, 1, 0));
        assert_eq!(captured.records().len(), 1);
    }
}

#[cfg(test)]
mod spawn_tests {
    use super::*;
    use crate::{Broker, BrokerHandle, Memory, Subscription};

    /// An appender whose `Drop` reads the broker's stats (which takes the
    /// config lock), then says it is done.
    struct ReadsStatsOnDrop {
        handle: BrokerHandle,
        dropped: crossbeam_channel::Sender<()>,
    }

    impl Appender for ReadsStatsOnDrop {
        fn append(&mut self, _: &Record) -> Result<(), AppendError> {
            Ok(())
        }

        fn flush(&mut self) -> Result<(), AppendError> {
            Ok(())
        }
    }

    impl Drop for ReadsStatsOnDrop {
        fn drop(&mut self) {
            let _ = self.handle.stats();
            let _ = self.dropped.send(());
        }
    }

    #[test]
    fn a_failed_spawn_drops_the_appender_with_no_lock_held() {
        let broker = Broker::new();
        broker
            .subscribe(Subscription::builder("old", Memory::new().0))
            .unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let (handle, dropped) = (broker.handle(), tx.clone());
        // On a thread of its own: under the config lock, the drop would
        // deadlock that thread, and this one would see no message.
        let attempts = thread::spawn(move || {
            FAIL_SPAWNS.with(|f| f.set(true));
            let appender = |dropped| ReadsStatsOnDrop {
                handle: handle.clone(),
                dropped,
            };
            let subscribed =
                handle.subscribe(Subscription::builder("a", appender(dropped.clone())));
            let replaced = handle.replace("old", Subscription::builder("new", appender(dropped)));
            (subscribed.is_err(), replaced.is_err())
        });
        for what in ["subscribe", "replace"] {
            rx.recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("the appender of a failed {what} was not dropped: {e}"));
        }
        assert_eq!(attempts.join().unwrap(), (true, true));
        let names: Vec<String> = broker.stats().subscriptions.into_keys().collect();
        assert_eq!(names, ["old"]);
    }
}
