//! `FaultyAppender`: an appender whose failures a test scripts (fail the first k attempts,
//! fail always, fail at random with a seed, panic, block, sleep, write to `/dev/full`).
//!
//! Included by `tests/fault_injection.rs` with `#[path = "common/faulty.rs"] mod faulty;`.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use logbus::{AppendError, Appender, Operation, Record};

/// What one attempt at one record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Write the record to the target (which may still fail: `/dev/full`).
    Write,
    /// Return an injected `Operation::Write` error.
    Fail,
    /// Panic with `boom <message>`.
    Panic,
}

/// How an attempt ended, as logged by the appender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Failed,
    Panicked,
}

/// What the plan is shown for each attempt.
#[derive(Debug)]
pub struct Attempt<'a> {
    pub record: &'a Record,
    /// `i` when the message is `m<i>`.
    pub index: Option<u64>,
    /// 1-based attempt number for this record (by seq).
    pub attempt: u32,
}

/// One call of `append` for a published record (not logbus' own records).
#[derive(Debug, Clone)]
pub struct Call {
    pub record: Arc<Record>,
    pub attempt: u32,
    pub outcome: Outcome,
}

/// A tiny xorshift64 PRNG: deterministic faults without new dependencies.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

type Plan = Box<dyn FnMut(&Attempt<'_>) -> Action + Send>;

#[derive(Debug, Default)]
struct Log {
    calls: Vec<Call>,
    /// Every record written, logbus' synthetic ones included.
    written: Vec<Arc<Record>>,
    attempts: HashMap<u64, u32>,
    flushes: u64,
}

/// Where written records go.
enum Target {
    /// Only into the log.
    Memory,
    /// A real file, written and flushed per record; a new one can be sent
    /// on the channel (checked before every attempt).
    File(File, Receiver<File>),
}

/// Blocks the first attempt until released.
struct Block {
    entered: Sender<u64>,
    release: Receiver<()>,
}

/// An appender with scripted faults. See the constructors.
pub struct FaultyAppender {
    plan: Plan,
    target: Target,
    block: Option<Block>,
    sleep: Option<Duration>,
    log: Arc<Mutex<Log>>,
}

/// The test's view of a [`FaultyAppender`], from any thread.
#[derive(Clone)]
pub struct Observed {
    log: Arc<Mutex<Log>>,
}

/// The test's side of a blocking [`FaultyAppender`].
pub struct Gate {
    /// Receives the seq of the record the appender is stuck on.
    pub entered: Receiver<u64>,
    /// Send (or drop) to let it go on.
    pub release: Sender<()>,
}

fn lock(log: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // The appender never panics while holding the lock; ignore poisoning anyway.
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

fn index_of(record: &Record) -> Option<u64> {
    record.message().strip_prefix('m')?.parse().ok()
}

impl FaultyAppender {
    /// Follows `plan` for every attempt; writes into memory.
    pub fn with_plan(
        plan: impl FnMut(&Attempt<'_>) -> Action + Send + 'static,
    ) -> (FaultyAppender, Observed) {
        let log = Arc::new(Mutex::new(Log::default()));
        (
            FaultyAppender {
                plan: Box::new(plan),
                target: Target::Memory,
                block: None,
                sleep: None,
                log: Arc::clone(&log),
            },
            Observed { log },
        )
    }

    /// Never fails on its own.
    pub fn healthy() -> (FaultyAppender, Observed) {
        FaultyAppender::with_plan(|_| Action::Write)
    }

    /// Fails the first `k` attempts of each record, then writes it.
    pub fn fail_first(k: u32) -> (FaultyAppender, Observed) {
        FaultyAppender::with_plan(move |a| {
            if a.attempt <= k {
                Action::Fail
            } else {
                Action::Write
            }
        })
    }

    /// Fails every attempt at every record.
    pub fn fail_every() -> (FaultyAppender, Observed) {
        FaultyAppender::with_plan(|_| Action::Fail)
    }

    /// Fails each attempt with probability `percent`/100, drawn from a
    /// xorshift seeded with `seed` (one draw per attempt, in call order).
    pub fn fail_random(seed: u64, percent: u64) -> (FaultyAppender, Observed) {
        let mut rng = XorShift::new(seed);
        FaultyAppender::with_plan(move |_| {
            if rng.chance(percent) {
                Action::Fail
            } else {
                Action::Write
            }
        })
    }

    /// Panics on the attempts `when` selects; writes otherwise.
    pub fn panic_when(
        when: impl Fn(&Attempt<'_>) -> bool + Send + 'static,
    ) -> (FaultyAppender, Observed) {
        FaultyAppender::with_plan(move |a| {
            if when(a) {
                Action::Panic
            } else {
                Action::Write
            }
        })
    }

    /// Blocks in its first attempt until the gate is released.
    pub fn blocking(self) -> (FaultyAppender, Gate) {
        let (entered_tx, entered_rx) = crossbeam_channel::unbounded();
        let (release_tx, release_rx) = crossbeam_channel::bounded(1);
        let appender = FaultyAppender {
            block: Some(Block {
                entered: entered_tx,
                release: release_rx,
            }),
            ..self
        };
        (
            appender,
            Gate {
                entered: entered_rx,
                release: release_tx,
            },
        )
    }

    /// Sleeps `d` in every attempt: a slow appender (its behaviour, not test
    /// synchronisation).
    pub fn sleeping(self, d: Duration) -> FaultyAppender {
        FaultyAppender {
            sleep: Some(d),
            ..self
        }
    }

    /// Writes each record as a line to `file`, write + flush per record, I/O
    /// errors mapped to `AppendError::io(Operation::Write, e)`. Send another
    /// file on the returned channel to switch to it (taken at the next
    /// attempt).
    pub fn writing_to(self, file: File) -> (FaultyAppender, Sender<File>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (
            FaultyAppender {
                target: Target::File(file, rx),
                ..self
            },
            tx,
        )
    }

    fn write(&mut self, record: &Record) -> Result<(), AppendError> {
        if let Target::File(file, _) = &mut self.target {
            writeln!(file, "{}", record.message())
                .and_then(|()| file.flush())
                .map_err(|e| AppendError::io(Operation::Write, e))?;
        }
        Ok(())
    }
}

impl Appender for FaultyAppender {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        if record.target() == "logbus" {
            // logbus' own drop summaries: not a published record, no faults.
            lock(&self.log).written.push(Arc::new(record.clone()));
            return Ok(());
        }
        let attempt = {
            let mut log = lock(&self.log);
            let n = log.attempts.entry(record.seq()).or_insert(0);
            *n += 1;
            *n
        };
        if let Some(block) = self.block.take() {
            let _ = block.entered.send(record.seq());
            // Ok or Disconnected: either way we are released.
            let _ = block.release.recv();
        }
        if let Some(d) = self.sleep {
            std::thread::sleep(d);
        }
        if let Target::File(file, switch) = &mut self.target {
            if let Ok(new) = switch.try_recv() {
                *file = new;
            }
        }
        let action = (self.plan)(&Attempt {
            record,
            index: index_of(record),
            attempt,
        });
        let result = match action {
            Action::Write => self.write(record),
            Action::Fail => Err(AppendError::new(
                Operation::Write,
                format!(
                    "injected failure of {}, attempt {attempt}",
                    record.message()
                ),
            )),
            Action::Panic => Ok(()),
        };
        let outcome = match (action, &result) {
            (Action::Panic, _) => Outcome::Panicked,
            (_, Ok(())) => Outcome::Written,
            (_, Err(_)) => Outcome::Failed,
        };
        {
            let mut log = lock(&self.log);
            let record = Arc::new(record.clone());
            if outcome == Outcome::Written {
                log.written.push(Arc::clone(&record));
            }
            log.calls.push(Call {
                record,
                attempt,
                outcome,
            });
        }
        if action == Action::Panic {
            panic!("boom {}", record.message());
        }
        result
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        lock(&self.log).flushes += 1;
        Ok(())
    }
}

impl Observed {
    /// Every `append` call for a published record, in call order.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.log).calls.clone()
    }

    /// How many `append` calls were made for published records.
    pub fn call_count(&self) -> u64 {
        lock(&self.log).calls.len() as u64
    }

    /// How many attempts were made at the record `seq`.
    pub fn attempts(&self, seq: u64) -> u32 {
        lock(&self.log).attempts.get(&seq).copied().unwrap_or(0)
    }

    /// Published records written, in order (logbus' own left out).
    pub fn written(&self) -> Vec<Arc<Record>> {
        lock(&self.log)
            .written
            .iter()
            .filter(|r| r.target() != "logbus")
            .cloned()
            .collect()
    }

    /// Messages of published records written, in order.
    pub fn written_messages(&self) -> Vec<String> {
        self.written()
            .iter()
            .map(|r| r.message().to_owned())
            .collect()
    }

    /// logbus' synthetic records written (drop summaries).
    pub fn synthetic(&self) -> Vec<Arc<Record>> {
        lock(&self.log)
            .written
            .iter()
            .filter(|r| r.target() == "logbus")
            .cloned()
            .collect()
    }
}
