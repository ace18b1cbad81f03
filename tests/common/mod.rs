//! Helpers shared by the integration tests: appenders that stall, fail or
//! record, and small publishing shortcuts.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use logbus::{AppendError, Appender, Broker, LevelFilter, Memory, MemoryHandle, Record};

/// Every level, most severe first.
pub const LEVELS: [log::Level; 5] = [
    log::Level::Error,
    log::Level::Warn,
    log::Level::Info,
    log::Level::Debug,
    log::Level::Trace,
];

/// `log` macros with `logger:` still check the global max level.
pub fn enable_all_levels() {
    log::set_max_level(LevelFilter::Trace);
}

/// A broker with every level enabled for `logger:` macros.
pub fn broker() -> Broker {
    enable_all_levels();
    Broker::new()
}

/// Publishes `count` info records `"<prefix><i>"` on `target`.
pub fn publish_n(broker: &Broker, target: &str, prefix: &str, range: std::ops::Range<u64>) {
    for i in range {
        log::info!(logger: broker, target: target, "{prefix}{i}");
    }
}

/// The messages of captured records, leaving out logbus' own synthetic ones
/// (target `logbus`).
pub fn user_messages(handle: &MemoryHandle) -> Vec<String> {
    handle
        .records()
        .iter()
        .filter(|r| r.target() != "logbus")
        .map(|r| r.message().to_owned())
        .collect()
}

/// logbus' synthetic drop-summary records captured by `handle`.
pub fn summaries(handle: &MemoryHandle) -> Vec<Arc<Record>> {
    handle
        .records()
        .into_iter()
        .filter(|r| r.target() == "logbus")
        .collect()
}

/// An appender that blocks inside its first `append` until released, then
/// records like [`Memory`].
///
/// `entered` receives the seq of the record it stalled on, so a test knows
/// the worker has taken that record; dropping or sending on the `release`
/// side lets it go on.
pub struct GatedAppender {
    inner: Memory,
    entered: Sender<u64>,
    release: Receiver<()>,
    released: bool,
}

/// The test's side of a [`GatedAppender`].
pub struct Gate {
    pub entered: Receiver<u64>,
    pub release: Sender<()>,
    pub captured: MemoryHandle,
}

impl GatedAppender {
    pub fn new() -> (GatedAppender, Gate) {
        let (inner, captured) = Memory::new();
        let (entered_tx, entered_rx) = crossbeam_channel::unbounded();
        let (release_tx, release_rx) = crossbeam_channel::bounded(1);
        (
            GatedAppender {
                inner,
                entered: entered_tx,
                release: release_rx,
                released: false,
            },
            Gate {
                entered: entered_rx,
                release: release_tx,
                captured,
            },
        )
    }
}

impl Gate {
    /// Lets the appender go on (for good).
    pub fn open(&self) {
        let _ = self.release.try_send(());
    }
}

impl Appender for GatedAppender {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        if !self.released {
            let _ = self.entered.send(record.seq());
            // Ok or Disconnected: either way we are released.
            let _ = self.release.recv();
            self.released = true;
        }
        self.inner.append(record)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.inner.flush()
    }
}

/// Names of the live threads of this process (Linux: /proc/self/task).
pub fn thread_names() -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) {
                names.push(comm.trim().to_owned());
            }
        }
    }
    names
}

/// How long a test waits on a channel before failing instead of hanging.
/// Only a safety net: a healthy run never gets near it.
pub const SAFETY_NET: std::time::Duration = std::time::Duration::from_secs(60);

/// Receives from `rx`, failing the test (instead of hanging) if nothing
/// arrives within [`SAFETY_NET`].
#[track_caller]
pub fn recv<T>(rx: &Receiver<T>, what: &str) -> T {
    match rx.recv_timeout(SAFETY_NET) {
        Ok(value) => value,
        Err(e) => panic!("waiting for {what}: {e}"),
    }
}

/// `full` normally, `miri` under Miri (stress sizes).
pub fn scaled(full: u64, miri: u64) -> u64 {
    if cfg!(miri) {
        miri
    } else {
        full
    }
}

/// An appender that records like [`Memory`], then runs `hook` (on the worker
/// thread) with each record it was given. The record is captured before the
/// hook runs, so a hook that signals the test cannot overtake the capture.
pub struct HookAppender<F> {
    inner: Memory,
    hook: F,
}

impl<F: FnMut(&Record) + Send + 'static> HookAppender<F> {
    pub fn new(hook: F) -> (HookAppender<F>, MemoryHandle) {
        let (inner, captured) = Memory::new();
        (HookAppender { inner, hook }, captured)
    }
}

impl<F: FnMut(&Record) + Send + 'static> Appender for HookAppender<F> {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.inner.append(record)?;
        (self.hook)(record);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.inner.flush()
    }
}

/// Sets the flag when dropped, also while unwinding: stops a flooding thread
/// so that a failed assertion in a `thread::scope` fails instead of hanging.
pub struct SetOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A broker with one subscription "s" (configured by `configure`) whose
/// worker has taken a first record and stalls on it until `gate.open()`:
/// everything published next stays queued.
pub fn stalled(
    configure: impl FnOnce(logbus::SubscriptionBuilder) -> logbus::SubscriptionBuilder,
) -> (Broker, Gate) {
    let broker = broker();
    let (appender, gate) = GatedAppender::new();
    broker
        .subscribe(configure(logbus::Subscription::builder("s", appender)))
        .unwrap();
    log::info!(logger: &broker, target: "app", "stalls the worker");
    recv(&gate.entered, "the worker to stall");
    (broker, gate)
}
