//! Staged batches (`logbus_appenders::Staged`): a worker hands an appender
//! that stages its batches each run of records as it takes them, then
//! commits the batch. A failure anywhere in a batch, while staging or at
//! the commit, leaves every record written once (or retried, or
//! dead-lettered), in order, and counted exactly as `append_batch`'s would.

mod common;

use std::io::{self, Write};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use logbus::appenders::JsonAppender;
use logbus::{
    AppendError, Appender, BatchError, Operation, OverflowPolicy, Record, RetryPolicy, Staged,
    Subscription,
};

const CALLS: u64 = 3_000;

/// Three attempts, no waiting between them.
fn fast() -> RetryPolicy {
    RetryPolicy::new().initial_backoff(Duration::ZERO)
}

/// A writer that takes bytes up to `fail_at` in all, fails once there
/// (ENOSPC, as a full disk does), then takes everything. Its first write
/// waits at the gate.
#[derive(Clone)]
struct FailsOnce(Arc<Mutex<(Vec<u8>, Option<usize>)>>, Arc<Gate>);

impl Write for FailsOnce {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.1.pass();
        let mut state = self.0.lock().unwrap();
        let (taken, fail_at) = &mut *state;
        if let Some(at) = *fail_at {
            let room = at.saturating_sub(taken.len());
            if room == 0 {
                *fail_at = None;
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            let n = buf.len().min(room);
            taken.extend_from_slice(&buf[..n]);
            return Ok(n);
        }
        taken.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn message(i: u64) -> String {
    format!("staged {i:05}")
}

/// Holds a worker in its appender's first call until the test has queued
/// a burst, so that the batch after it is a few hundred records, staged
/// in runs (not timing: the burst is queued whole before the worker goes
/// on).
struct Gate {
    entered: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Gate {
    /// The gate, and the test's ends: told when the worker waits at it,
    /// and what opens it.
    fn new() -> (Arc<Gate>, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let gate = Gate {
            entered: Mutex::new(Some(entered_tx)),
            release: Mutex::new(release_rx),
        };
        (Arc::new(gate), entered, release)
    }

    /// Waits the first time only.
    fn pass(&self) {
        if let Some(entered) = self.entered.lock().unwrap().take() {
            entered.send(()).unwrap();
            // Ok or disconnected: either way, go on.
            let _ = self.release.lock().unwrap().recv();
        }
    }
}

/// Logs the workload's `CALLS` records: the first, then (once the worker
/// waits at the gate) a burst of `BURST`, then (the gate opened) the rest;
/// then flushes.
fn log_through_the_gate(
    broker: &logbus::Broker,
    entered: &mpsc::Receiver<()>,
    release: &mpsc::Sender<()>,
) {
    log::info!(logger: broker, target: "app", "{}", message(0));
    entered.recv().unwrap();
    for i in 1..=BURST {
        log::info!(logger: broker, target: "app", "{}", message(i));
    }
    release.send(()).unwrap();
    for i in BURST + 1..CALLS {
        log::info!(logger: broker, target: "app", "{}", message(i));
    }
    broker.flush().unwrap();
}

/// Fewer than a lane's first ring holds, so that the burst is queued
/// while the worker waits, and the batch after it fills up.
const BURST: u64 = 240;

/// A JSON appender (which stages its batches) over a writer that fails
/// once, at byte `fail_at` of the output: before the first record, inside
/// the first batch, and later ones, where the failing write is one made
/// while staging (a full buffer) or at a commit. Every record comes out in
/// a whole line of its own, once and in order; the cut line is ended
/// before the next; the failing record is retried once and written.
#[test]
fn a_write_failing_anywhere_in_a_staged_batch_loses_and_repeats_nothing() {
    for fail_at in [0, 1, 3_000, 40_000, 70_000, 150_000, 299_000] {
        let (gate, entered, release) = Gate::new();
        let writer = FailsOnce(Arc::new(Mutex::new((Vec::new(), Some(fail_at)))), gate);
        let broker = common::broker();
        let json = JsonAppender::writer(writer.clone());
        assert!(
            Box::new(json).staged().is_some(),
            "the JSON appender stages"
        );
        let handle = broker
            .subscribe(
                Subscription::builder("json", JsonAppender::writer(writer.clone()))
                    .overflow(OverflowPolicy::Block)
                    .retry(fast()),
            )
            .unwrap();
        log_through_the_gate(&broker, &entered, &release);
        let stats = handle.stats();
        let output = String::from_utf8(writer.0.lock().unwrap().0.clone()).unwrap();
        assert!(output.len() > fail_at, "the failure came ({fail_at})");
        assert_eq!(
            (stats.matched, stats.written, stats.retried),
            (CALLS, CALLS, 1),
            "at {fail_at}: {stats:?}"
        );
        assert_eq!(
            (stats.dead_lettered, stats.lost, stats.dropped),
            (0, 0, 0),
            "{stats:?}"
        );
        let whole: Vec<&str> = output
            .lines()
            .filter(|line| line.starts_with('{') && line.ends_with('}'))
            .collect();
        let found: Vec<String> = whole
            .iter()
            .filter_map(|line| {
                let at = line.find("staged ")?;
                Some(line[at..at + 12].to_owned())
            })
            .collect();
        assert_eq!(
            found,
            (0..CALLS).map(message).collect::<Vec<_>>(),
            "at {fail_at}"
        );
        let cut = output.lines().count() - whole.len();
        assert_eq!(cut, usize::from(fail_at > 0), "the cut line, at {fail_at}");
    }
}

/// Which call of the appender below fails, and how.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The `stage` call that reaches the batch's record `at` fails there
    /// (a render failure: the records before it are written).
    Stage { at: usize },
    /// The first commit of a batch of more than one record writes half of
    /// it and fails.
    Commit,
    /// The `stage` call that reaches the batch's record `at` panics.
    Panic { at: usize },
    /// `Appender::staged` answers `None` once, the first time it is asked
    /// with records staged (the contract asks it not to): the worker
    /// settles what was staged.
    StopsStaging,
    /// `Appender::staged` panics once, the first time it is asked (as the
    /// first batch begins): the batch goes the usual way.
    StagedPanicsFirst,
    /// `Appender::staged` panics once, the first time it is asked with
    /// records staged (for the burst's next run): as a panicking `stage`.
    StagedPanics,
}

/// An appender that stages records into a list, writes them (to
/// `written`) at the commit, and fails once as `fault` says.
struct Scripted {
    staged: Vec<String>,
    written: Arc<Mutex<Vec<String>>>,
    fault: Option<Fault>,
    gate: Arc<Gate>,
}

impl Appender for Scripted {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.gate.pass();
        self.staged.clear();
        self.written
            .lock()
            .unwrap()
            .push(record.message().to_owned());
        Ok(())
    }

    fn staged(&mut self) -> Option<&mut dyn Staged> {
        match self.fault {
            Some(Fault::StopsStaging) if !self.staged.is_empty() => {
                self.fault = None;
                return None;
            }
            Some(Fault::StagedPanicsFirst) => {
                self.fault = None;
                panic!("scripted panic in staged");
            }
            Some(Fault::StagedPanics) if !self.staged.is_empty() => {
                self.fault = None;
                self.staged.clear();
                panic!("scripted panic in staged");
            }
            _ => {}
        }
        Some(self)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

impl Staged for Scripted {
    fn stage(&mut self, records: &[Arc<Record>], from: usize) -> Result<(), BatchError> {
        self.gate.pass();
        if from == 0 {
            self.staged.clear();
        }
        assert_eq!(self.staged.len(), from, "runs follow each other");
        for (i, record) in records.iter().enumerate() {
            let index = from + i;
            match self.fault {
                Some(Fault::Stage { at }) if at == index => {
                    self.fault = None;
                    // Written: what was staged before the failing record.
                    self.written.lock().unwrap().append(&mut self.staged);
                    return Err(BatchError {
                        written: index,
                        error: AppendError::new(Operation::Format, "scripted"),
                    });
                }
                Some(Fault::Panic { at }) if at == index => {
                    self.fault = None;
                    self.staged.clear();
                    panic!("scripted panic");
                }
                _ => self.staged.push(record.message().to_owned()),
            }
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), BatchError> {
        if matches!(self.fault, Some(Fault::Commit)) && self.staged.len() > 1 {
            self.fault = None;
            let half = self.staged.len() / 2;
            self.staged.truncate(half);
            self.written.lock().unwrap().append(&mut self.staged);
            return Err(BatchError {
                written: half,
                error: AppendError::new(Operation::Write, "scripted"),
            });
        }
        self.written.lock().unwrap().append(&mut self.staged);
        Ok(())
    }
}

/// The worker settles a staged batch exactly as it does a batch handed
/// whole: the records its failure names written are counted written, the
/// failing one is retried alone, and the rest go to later calls; a panic
/// is taken to have written nothing of the batch, so the records it staged
/// are written again, never counted written unwritten.
#[test]
fn a_worker_settles_a_failed_staged_batch_record_by_record() {
    for fault in [
        Fault::Stage { at: 0 },
        Fault::Stage { at: 1 },
        Fault::Stage { at: 40 },
        Fault::Commit,
        Fault::Panic { at: 0 },
        Fault::Panic { at: 40 },
        // Asked next with the first record staged, for the burst's first
        // run: the burst is queued whole when the gate opens, so the batch
        // goes on (not its commit).
        Fault::StopsStaging,
        // Uncaught, either panic ended the worker: the flush below then
        // answered, and `Block` publishers waited for ever.
        Fault::StagedPanicsFirst,
        Fault::StagedPanics,
    ] {
        let written = Arc::new(Mutex::new(Vec::new()));
        let (gate, entered, release) = Gate::new();
        let appender = Scripted {
            staged: Vec::new(),
            written: Arc::clone(&written),
            fault: Some(fault),
            gate,
        };
        let broker = common::broker();
        let handle = broker
            .subscribe(
                Subscription::builder("scripted", appender)
                    .overflow(OverflowPolicy::Block)
                    .retry(fast()),
            )
            .unwrap();
        log_through_the_gate(&broker, &entered, &release);
        let stats = handle.stats();
        let written = written.lock().unwrap().clone();
        let panicked = matches!(
            fault,
            Fault::Panic { .. } | Fault::StagedPanicsFirst | Fault::StagedPanics
        );
        let failed = !matches!(fault, Fault::StopsStaging | Fault::StagedPanicsFirst);
        assert_eq!(
            (stats.matched, stats.written, stats.retried, stats.panics),
            (CALLS, CALLS, u64::from(failed), u64::from(panicked)),
            "{fault:?} came once, a failing record retried once: {stats:?}"
        );
        assert_eq!((stats.dead_lettered, stats.lost), (0, 0), "{stats:?}");
        // The panic here came before the batch wrote anything, so nothing
        // is repeated either.
        let expected: Vec<String> = (0..CALLS).map(message).collect();
        assert_eq!(written, expected, "{fault:?}: each once, in order");
    }
}

/// The records a worker is staging count in `matched` (and in
/// `in_queue`) while it renders them: they left the queue, and are counted
/// taken at once, not when the batch is settled (a CI run caught
/// `matched` reading 0 after a replay had queued 4).
#[test]
fn records_being_staged_are_counted_matched_and_in_queue() {
    let written = Arc::new(Mutex::new(Vec::new()));
    let (gate, entered, release) = Gate::new();
    let appender = Scripted {
        staged: Vec::new(),
        written: Arc::clone(&written),
        fault: None,
        gate,
    };
    let broker = common::broker();
    let handle = broker
        .subscribe(Subscription::builder("scripted", appender).overflow(OverflowPolicy::Block))
        .unwrap();
    log::info!(logger: &broker, target: "app", "{}", message(0));
    // The worker took the record and waits inside its first `stage`.
    entered.recv().unwrap();
    let stats = handle.stats();
    assert_eq!(
        (stats.matched, stats.written, stats.in_queue),
        (1, 0, 1),
        "{stats:?}"
    );
    release.send(()).unwrap();
    broker.flush().unwrap();
    let stats = handle.stats();
    assert_eq!(
        (stats.matched, stats.written, stats.in_queue),
        (1, 1, 0),
        "{stats:?}"
    );
    assert_eq!(*written.lock().unwrap(), [message(0)]);
}
