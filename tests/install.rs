//! Installing logbus as the global `log` backend (its own process): records reach the
//! appenders, `log::max_level` follows the subscriptions, a second install is refused,
//! and shutting down through the guard writes everything queued, then stops logging
//! (dropping the guard only flushes: `tests/guard_drop.rs`).

mod common;

use logbus::{InstallError, LevelFilter, Memory, Subscription};

/// One test: the global logger can be set only once per process.
#[test]
fn install_routes_log_macros_and_the_guards_shutdown_drains() {
    let (appender, info) = Memory::new();
    let (appender2, debug) = Memory::new();
    let guard = logbus::builder()
        .appender(Subscription::builder("info", appender).level(LevelFilter::Info))
        .appender(Subscription::builder("debug", appender2).level(LevelFilter::Debug))
        .install()
        .unwrap();
    // The loosest subscription level.
    assert_eq!(log::max_level(), LevelFilter::Debug);

    // A second install is refused without panicking, and changes nothing.
    let (spare, spare_captured) = Memory::new();
    let second = logbus::builder()
        .appender(Subscription::builder("spare", spare).level(LevelFilter::Trace))
        .install();
    assert!(
        matches!(second, Err(InstallError::AlreadyInstalled)),
        "{second:?}"
    );
    assert_eq!(log::max_level(), LevelFilter::Debug);

    // The first keeps working.
    log::info!(target: "app", "one");
    log::debug!(target: "app", "two");
    log::trace!(target: "app", "three");
    log::logger().flush();
    assert_eq!(info.messages(), ["one"]);
    assert_eq!(debug.messages(), ["one", "two"]);
    assert!(spare_captured.is_empty());

    // Records queued behind a stalled appender are written by the guard's shutdown.
    let handle = guard.handle();
    let (gated, gate) = common::GatedAppender::new();
    handle
        .subscribe(Subscription::builder("gated", gated).level(LevelFilter::Info))
        .unwrap();
    assert_eq!(log::max_level(), LevelFilter::Debug);
    let n = common::scaled(1_000, 20);
    for i in 0..n {
        log::info!(target: "app", "q{i}");
    }
    common::recv(&gate.entered, "the gated appender to take its first record");
    assert_eq!(handle.stats().subscriptions["gated"].matched, n);
    gate.open();
    let report = guard.shutdown();
    assert!(report.unfinished.is_empty(), "{report:?}");

    let queued: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
    assert_eq!(common::user_messages(&gate.captured), queued);
    let mut expected = vec!["one".to_owned()];
    expected.extend(queued);
    assert_eq!(common::user_messages(&info), expected);

    // After the shutdown a log call returns at once and is counted:
    // a debug record matches only "debug" ...
    log::debug!(target: "app", "late debug");
    let stats = handle.stats();
    assert_eq!(stats.dropped_after_shutdown, 1);
    // ... an info record matches all three.
    log::info!(target: "app", "late info");
    let stats = handle.stats();
    for (name, dropped) in [("info", 1), ("debug", 2), ("gated", 1)] {
        let s = stats.subscriptions[name];
        assert_eq!(s.dropped, dropped, "{name}: {s:?}");
        assert_eq!(s.in_queue, 0, "{name}: {s:?}");
        assert_eq!(s.matched, s.written + s.dropped, "{name}: {s:?}");
    }
    assert_eq!(common::user_messages(&info).len() as u64, n + 1);
    assert_eq!(
        debug.messages(),
        ["one", "two"]
            .map(String::from)
            .into_iter()
            .chain((0..n).map(|i| format!("q{i}")))
            .collect::<Vec<_>>()
    );
}
