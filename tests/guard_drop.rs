//! Dropping the guard of the installed broker flushes and leaves logging on (its own
//! process: it installs the global backend): what was queued is written when the drop
//! returns, later log calls still reach the appenders, nothing is counted as dropped after
//! shutdown. The explicit shutdown is in `tests/install.rs`.

mod common;

use logbus::{LevelFilter, Memory, Subscription};

#[test]
fn dropping_the_guard_flushes_and_logging_goes_on() {
    let (memory, captured) = Memory::new();
    let (gated, gate) = common::GatedAppender::new();
    let guard = logbus::builder()
        .appender(Subscription::builder("memory", memory).level(LevelFilter::Info))
        .appender(Subscription::builder("gated", gated).level(LevelFilter::Info))
        .install()
        .unwrap();
    let handle = guard.handle();

    let n = common::scaled(1_000, 20);
    for i in 0..n {
        log::info!(target: "app", "q{i}");
    }
    common::recv(&gate.entered, "the gated appender to take its first record");
    gate.open();
    drop(guard);
    // The drop returned after the flush: everything logged before it is written.
    let queued: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
    assert_eq!(common::user_messages(&gate.captured), queued);
    assert_eq!(common::user_messages(&captured), queued);

    // Logging goes on after the drop, through `log` and through the handle.
    log::info!(target: "app", "after the drop");
    log::logger().flush();
    assert_eq!(
        common::user_messages(&captured).last().map(String::as_str),
        Some("after the drop")
    );
    let stats = handle.stats();
    assert_eq!(stats.dropped_after_shutdown, 0, "{stats:?}");
    for name in ["memory", "gated"] {
        let s = stats.subscriptions[name];
        assert_eq!(
            (s.matched, s.written, s.dropped),
            (n + 1, n + 1, 0),
            "{name}: {s:?}"
        );
    }
}
