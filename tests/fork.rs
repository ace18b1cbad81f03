//! `fork()` with live workers: the child must never hang, and what it logs
//! is counted (as dropped: its workers stayed with the parent; see the
//! crate's `fork.rs`). Its own file: forking a process with many test
//! threads is best avoided.

#![cfg(unix)]

mod common;

use logbus::{OverflowPolicy, Subscription};

#[test]
fn a_forked_child_neither_hangs_nor_loses_count_and_the_parent_goes_on() {
    let broker = common::broker();
    let (appender, gate) = common::GatedAppender::new();
    broker
        .subscribe(
            Subscription::builder("s", appender)
                .capacity(2)
                .overflow(OverflowPolicy::Block),
        )
        .unwrap();
    // The worker stalls on the first record and the queue fills: one more
    // log call would block, in the parent.
    log::info!(logger: &broker, target: "app", "stalls the worker");
    common::recv(&gate.entered, "the worker to stall");
    log::info!(logger: &broker, target: "app", "queued 1");
    log::info!(logger: &broker, target: "app", "queued 2");

    // SAFETY: the child only logs, flushes, reads stats and leaves with
    // `_exit`, never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The child: a hang is ended by the alarm, and fails the test.
        // SAFETY: plain libc calls in the child.
        unsafe { libc::alarm(30) };
        for i in 0..10 {
            log::info!(logger: &broker, target: "app", "child {i}");
        }
        let flushed = broker.flush().is_ok();
        let stats = broker.stats();
        let report = broker.shutdown();
        let code = if flushed
            && stats.dropped_after_shutdown == 10
            && stats.subscriptions.is_empty()
            && report.dropped_after_shutdown == 10
        {
            0
        } else {
            3
        };
        // SAFETY: leaves the child without running the harness's exit path.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child hung (killed by its alarm) or counted wrongly: status {status:#x}"
    );

    // The parent's broker is untouched.
    gate.open();
    log::info!(logger: &broker, target: "app", "after the fork");
    broker.flush().unwrap();
    assert_eq!(
        common::user_messages(&gate.captured),
        [
            "stalls the worker",
            "queued 1",
            "queued 2",
            "after the fork"
        ]
    );
    let s = broker.stats().subscriptions["s"];
    assert_eq!((s.matched, s.written, s.dropped), (4, 4, 0), "{s:?}");
}
