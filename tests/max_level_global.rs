//! `log::max_level()` follows every reconfiguration of the installed broker, and a record
//! that no subscription enables is not routed. Its own process: it installs the global
//! backend.

use log::{Level, LevelFilter, Metadata, Record};
use logbus::{BrokerStats, Directives, Memory, MemoryHandle, Subscription};

/// What the installed broker reports: the counters and what `a` captured.
fn counters(guard: &logbus::LoggerGuard) -> BrokerStats {
    log::logger().flush();
    guard.stats()
}

/// Calls the installed logger directly, bypassing the `log::max_level()` check the macros
/// make, so that the broker's own filtering is what is tested.
fn log_directly(level: Level, target: &str) {
    log::logger().log(
        &Record::builder()
            .level(level)
            .target(target)
            .args(format_args!("direct"))
            .build(),
    );
}

fn enabled(level: Level, target: &str) -> bool {
    log::logger().enabled(&Metadata::builder().level(level).target(target).build())
}

#[test]
fn max_level_follows_every_change_and_disabled_records_are_not_routed() {
    use LevelFilter::{Debug, Error, Info, Off, Trace, Warn};
    let (appender, captured): (Memory, MemoryHandle) = Memory::new();
    let guard = logbus::builder()
        .appender(Subscription::builder("a", appender).level(Warn))
        .install()
        .unwrap();
    assert_eq!(log::max_level(), Warn);

    let directives = |spec: &str| Some(spec.parse::<Directives>().unwrap());
    type Change = Box<dyn Fn(&logbus::LoggerGuard)>;
    let table: Vec<(&str, Change, LevelFilter)> = vec![
        (
            "set_level a info",
            Box::new(|g| g.set_level("a", Info).unwrap()),
            Info,
        ),
        (
            "set_directives a error",
            Box::new(move |g| g.set_directives("a", directives("error")).unwrap()),
            Error,
        ),
        (
            "subscribe b debug",
            Box::new(|g| {
                g.subscribe(Subscription::builder("b", Memory::new().0).level(Debug))
                    .unwrap();
            }),
            Debug,
        ),
        (
            "set_directives b warn,app=trace",
            Box::new(move |g| {
                g.set_directives("b", directives("warn,app=trace")).unwrap();
            }),
            Debug,
        ),
        (
            "set_level b trace",
            Box::new(|g| g.set_level("b", Trace).unwrap()),
            Trace,
        ),
        (
            "global info",
            Box::new(move |g| g.set_global_directives(directives("info"))),
            Info,
        ),
        (
            "global none",
            Box::new(|g| g.set_global_directives(None)),
            Trace,
        ),
        (
            "unsubscribe b",
            Box::new(|g| {
                g.unsubscribe("b").unwrap();
            }),
            Error,
        ),
        (
            "set_directives a none",
            Box::new(|g| g.set_directives("a", None).unwrap()),
            Info,
        ),
        (
            "global warn,app=off",
            Box::new(move |g| g.set_global_directives(directives("warn,app=off"))),
            Warn,
        ),
        (
            "set_level a off",
            Box::new(|g| g.set_level("a", Off).unwrap()),
            Off,
        ),
        (
            "global none, set_level a warn",
            Box::new(|g| {
                g.set_global_directives(None);
                g.set_level("a", Warn).unwrap();
            }),
            Warn,
        ),
    ];
    for (what, change, expected) in table {
        change(&guard);
        assert_eq!(
            (log::max_level(), guard.max_level()),
            (expected, expected),
            "after {what}"
        );
    }

    // Now `a` (the only subscription) takes warn and above. Records disabled everywhere,
    // through the macros or straight to the logger: not routed, nothing counted.
    let before = counters(&guard);
    assert!(!enabled(Level::Info, "app"));
    log::info!(target: "app", "filtered by log::max_level");
    log::debug!(target: "app", "filtered by log::max_level");
    log_directly(Level::Info, "app");
    log_directly(Level::Trace, "other");
    assert_eq!(counters(&guard), before);
    assert!(captured.is_empty());

    // Disabled only by the global directives: not routed either.
    guard.set_global_directives(directives("error"));
    assert_eq!(log::max_level(), Error);
    log_directly(Level::Warn, "app");
    assert_eq!(counters(&guard), before);

    // An enabled record is routed and counted once.
    guard.set_global_directives(None);
    assert!(enabled(Level::Warn, "app"));
    log::warn!(target: "app", "kept");
    let after = counters(&guard);
    let a = after.subscriptions["a"];
    assert_eq!(
        (
            a.matched - before.subscriptions["a"].matched,
            a.written,
            a.dropped
        ),
        (1, 1, 0)
    );
    assert_eq!(captured.messages(), ["kept"]);

    let report = guard.shutdown();
    assert!(report.unfinished.is_empty());
}
