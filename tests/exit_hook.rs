//! The exit hook (Unix): records logged before `std::process::exit`, or before `main`
//! returns, reach the file although the guard was dropped at once (`let _ = ...`); an
//! `exit` from inside an appender (also one being unsubscribed), from a forked child, after
//! a timed-out shutdown, with a stuck appender (named on stderr) or with the hook turned off
//! never hangs, and one during another thread's shutdown waits for its drain. Each test re-runs this binary as
//! a child that installs the global backend (`tests/common/child.rs`); a child that hangs
//! is ended by its alarm and fails the test.

#![cfg(unix)]

#[path = "common/child.rs"]
mod child;
mod common;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use logbus::appenders::{FileAppender, Layout};
use logbus::{AppendError, Appender, Record, Subscription};

/// More than the default queue capacity (8,192), as in the report.
const RECORDS: u64 = 20_000;

/// A file appender writing each message as a line, with room for every record (so none is
/// dropped for overflow, and what is missing was lost at exit).
fn lines_to(path: &str, pattern: &str) -> logbus::SubscriptionBuilder {
    let file = FileAppender::builder(path)
        .layout(Layout::parse("{msg}").unwrap())
        .build()
        .unwrap();
    Subscription::builder("lines", file)
        .pattern(pattern)
        .capacity(32_768)
}

/// The gate [`HeldUntilExit`] waits on; dropped by [`open_at_exit`].
static GATE: Mutex<Option<Sender<()>>> = Mutex::new(None);

/// An appender that writes nothing before the process begins to exit: so at exit every
/// record is still queued, and only the hook can write them.
struct HeldUntilExit<A> {
    inner: A,
    gate: Option<Receiver<()>>,
}

impl<A: Appender> Appender for HeldUntilExit<A> {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        if let Some(gate) = self.gate.take() {
            let _ = gate.recv(); // disconnected by `open_at_exit`
        }
        self.inner.append(record)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.inner.flush()
    }
}

/// An `atexit` handler registered after logbus', so it runs before it (handlers run last
/// registered first): it lets [`HeldUntilExit`] go on.
extern "C" fn open_at_exit() {
    let sender = GATE.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(sender);
}

/// [`lines_to`], held until the process exits.
fn held_lines_to(path: &str) -> logbus::SubscriptionBuilder {
    let (tx, rx) = crossbeam_channel::bounded(0);
    *GATE.lock().unwrap() = Some(tx);
    let file = FileAppender::builder(path)
        .layout(Layout::parse("{msg}").unwrap())
        .build()
        .unwrap();
    let held = HeldUntilExit {
        inner: file,
        gate: Some(rx),
    };
    Subscription::builder("lines", held).capacity(32_768)
}

/// Registers [`open_at_exit`]; call it after installing.
fn open_gate_at_exit() {
    // SAFETY: a plain `extern "C"` function that never unwinds (it only drops a sender).
    assert_eq!(unsafe { libc::atexit(open_at_exit) }, 0);
}

fn log_numbers(target: &str, n: u64) {
    for i in 0..n {
        log::info!(target: target, "{i}");
    }
}

/// Runs the child playing `test` on a fresh file and returns the file's lines.
fn run_with_file(test: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.log");
    let output = child::run(test, path.to_str().unwrap(), &[]);
    child::assert_success(&output, test);
    if Path::new(&path).exists() {
        child::lines(&path)
    } else {
        Vec::new()
    }
}

#[test]
fn child_exits_after_20000_records() {
    let Some(path) = child::role("child_exits_after_20000_records") else {
        return;
    };
    // Dropped at once: logging goes on, and the hook drains at exit.
    let _ = logbus::builder()
        .appender(held_lines_to(&path))
        .install()
        .unwrap();
    open_gate_at_exit();
    log_numbers("app", RECORDS);
    std::process::exit(0);
}

#[test]
fn process_exit_after_20000_records_writes_them_all() {
    let lines = run_with_file("child_exits_after_20000_records");
    assert_eq!(lines, child::numbers(RECORDS));
}

#[test]
fn child_returns_after_20000_records() {
    let Some(path) = child::role("child_returns_after_20000_records") else {
        return;
    };
    let _ = logbus::builder()
        .appender(held_lines_to(&path))
        .install()
        .unwrap();
    open_gate_at_exit();
    log_numbers("app", RECORDS);
    // The test passes, and the harness's `main` returns: libc's `exit` runs the hook.
}

#[test]
fn returning_from_main_after_20000_records_writes_them_all() {
    let lines = run_with_file("child_returns_after_20000_records");
    assert_eq!(lines, child::numbers(RECORDS));
}

/// Calls `std::process::exit(0)` on its worker thread when it gets a record.
struct ExitsOnRecord;

impl Appender for ExitsOnRecord {
    fn append(&mut self, _: &Record) -> Result<(), AppendError> {
        std::process::exit(0);
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

#[test]
fn child_exits_inside_an_appender() {
    let Some(path) = child::role("child_exits_inside_an_appender") else {
        return;
    };
    // If the hook waited for the exiting worker, an hour would end in the alarm.
    let _ = logbus::builder()
        .exit_timeout(Duration::from_secs(3600))
        .appender(lines_to(&path, "*.app.#"))
        .appender(Subscription::builder("exits", ExitsOnRecord).pattern("*.exit.#"))
        .install()
        .unwrap();
    log_numbers("app", RECORDS);
    log::info!(target: "exit", "now");
    loop {
        std::thread::park(); // the process ends on the worker
    }
}

#[test]
fn exit_inside_an_appender_drains_the_others_and_does_not_wait_for_itself() {
    let lines = run_with_file("child_exits_inside_an_appender");
    assert_eq!(lines, child::numbers(RECORDS));
}

#[test]
fn child_forks_and_its_child_exits() {
    let Some(path) = child::role("child_forks_and_its_child_exits") else {
        return;
    };
    let _ = logbus::builder()
        .exit_timeout(Duration::from_secs(3600))
        .appender(lines_to(&path, "#"))
        .install()
        .unwrap();
    log_numbers("app", 100);
    // SAFETY: the forked child logs (counted as dropped, taking no lock) and calls
    // `libc::exit`, which runs the inherited hook; it never returns into the harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: plain libc calls in the forked child; alarms are not inherited.
        unsafe {
            libc::alarm(child::ALARM_SECS);
            log::info!(target: "app", "from the forked child");
            libc::exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child hung in the exit hook (ended by its alarm): status {status:#x}"
    );
    // This process returns: its hook writes the 100 records.
}

#[test]
fn exit_in_a_forked_child_waits_for_nothing_and_the_parent_still_drains() {
    let lines = run_with_file("child_forks_and_its_child_exits");
    assert_eq!(lines, child::numbers(100));
}

#[test]
fn child_exits_after_a_timed_out_shutdown() {
    if child::role("child_exits_after_a_timed_out_shutdown").is_none() {
        return;
    }
    let (gated, gate) = common::GatedAppender::new();
    let guard = logbus::builder()
        .exit_timeout(Duration::from_secs(3600))
        .appender(Subscription::builder("gated", gated))
        .install()
        .unwrap();
    log::info!(target: "app", "stalls the worker");
    common::recv(&gate.entered, "the worker to stall");
    let report = guard.shutdown_timeout(Duration::from_millis(10));
    assert_eq!(report.unfinished, ["gated"]);
    // The shutdown had its wait; the hook must not wait an hour for the stuck worker.
    std::process::exit(0);
}

#[test]
fn exit_after_a_timed_out_shutdown_does_not_wait_again() {
    let test = "child_exits_after_a_timed_out_shutdown";
    child::assert_success(&child::run(test, "", &[]), test);
}

#[test]
fn child_exits_with_a_stuck_appender() {
    let Some(path) = child::role("child_exits_with_a_stuck_appender") else {
        return;
    };
    let (gated, gate) = common::GatedAppender::new();
    let _ = logbus::builder()
        .exit_timeout(Duration::from_millis(200))
        .appender(lines_to(&path, "#"))
        .appender(Subscription::builder("gated", gated))
        .install()
        .unwrap();
    log_numbers("app", RECORDS);
    common::recv(&gate.entered, "the worker to stall");
    // `gate` stays alive (exit runs no destructor): the appender stays stuck.
    std::process::exit(0);
}

#[test]
fn a_stuck_appender_holds_exit_for_the_deadline_only_and_the_others_drain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.log");
    let test = "child_exits_with_a_stuck_appender";
    let output = child::run(test, path.to_str().unwrap(), &[]);
    child::assert_success(&output, test);
    assert_eq!(child::lines(&path), child::numbers(RECORDS));
    // What the deadline left queued is lost with the process: said on stderr, not silent.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "logbus: at exit, not finished within 200ms (their queued records are lost): gated"
        ),
        "{stderr}"
    );
}

/// An appender that calls `exit` once released, from its worker thread.
struct ExitWhenReleased {
    entered: Sender<()>,
    release: Receiver<()>,
}

impl Appender for ExitWhenReleased {
    fn append(&mut self, _: &Record) -> Result<(), AppendError> {
        let _ = self.entered.send(());
        let _ = self.release.recv();
        std::process::exit(0);
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

#[test]
fn child_exits_inside_an_appender_being_unsubscribed() {
    let Some(path) = child::role("child_exits_inside_an_appender_being_unsubscribed") else {
        return;
    };
    let (entered_tx, entered) = crossbeam_channel::bounded(1);
    let (release, release_rx) = crossbeam_channel::bounded::<()>(0);
    let guard = logbus::builder()
        // Waiting for itself would hold exit for the hour.
        .exit_timeout(Duration::from_secs(3600))
        .appender(lines_to(&path, "*.others"))
        .appender(
            Subscription::builder(
                "exits",
                ExitWhenReleased {
                    entered: entered_tx,
                    release: release_rx,
                },
            )
            .pattern("*.exits"),
        )
        .install()
        .unwrap();
    log_numbers("others", 1000);
    log::info!(target: "exits", "go");
    common::recv(&entered, "the appender to be entered");
    // Another thread unsubscribes it: the join takes the worker's handle, so the hook must
    // recognise its own worker otherwise.
    let handle = guard.handle();
    let (unsubscribing_tx, unsubscribing) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        unsubscribing_tx.send(()).unwrap();
        let _ = handle.unsubscribe("exits");
    });
    common::recv(&unsubscribing, "the unsubscribe to start");
    drop(release); // the appender calls exit on its worker thread
    loop {
        std::thread::park();
    }
}

#[test]
fn exit_inside_an_appender_being_unsubscribed_does_not_wait_for_itself() {
    let lines = run_with_file("child_exits_inside_an_appender_being_unsubscribed");
    assert_eq!(lines, child::numbers(1000));
}

/// A slow appender: half a millisecond per record (its work, not a synchronisation).
struct Slow<A>(A);

impl<A: Appender> Appender for Slow<A> {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        std::thread::sleep(Duration::from_micros(500));
        self.0.append(record)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.0.flush()
    }
}

#[test]
fn child_exits_while_another_thread_shuts_down() {
    let Some(path) = child::role("child_exits_while_another_thread_shuts_down") else {
        return;
    };
    let file = FileAppender::builder(&path)
        .layout(Layout::parse("{msg}").unwrap())
        .build()
        .unwrap();
    let guard = logbus::builder()
        .exit_timeout(Duration::from_secs(3600))
        .appender(Subscription::builder("slow", Slow(file)).capacity(32_768))
        .install()
        .unwrap();
    log_numbers("app", 2000);
    let (shutting_tx, shutting) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        shutting_tx.send(()).unwrap();
        let _ = guard.shutdown();
    });
    common::recv(&shutting, "the shutdown to start");
    // Whether the hook finds the shutdown under way or not yet begun, it must not end the
    // process under the draining worker.
    std::process::exit(0);
}

#[test]
fn exit_while_another_thread_shuts_down_waits_for_its_drain() {
    let lines = run_with_file("child_exits_while_another_thread_shuts_down");
    assert_eq!(lines, child::numbers(2000));
}

#[test]
fn child_exits_without_a_hook() {
    if child::role("child_exits_without_a_hook").is_none() {
        return;
    }
    let (gated, gate) = common::GatedAppender::new();
    let _ = logbus::builder()
        .exit_timeout(Duration::ZERO)
        .shutdown_timeout(Duration::from_secs(3600))
        .appender(Subscription::builder("gated", gated))
        .install()
        .unwrap();
    log::info!(target: "app", "stalls the worker");
    common::recv(&gate.entered, "the worker to stall");
    std::process::exit(0);
}

#[test]
fn exit_timeout_zero_waits_for_nothing() {
    let test = "child_exits_without_a_hook";
    child::assert_success(&child::run(test, "", &[]), test);
}
