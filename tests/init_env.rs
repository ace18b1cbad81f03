//! `logbus::init()` reads `RUST_LOG`: `log::max_level()`, `enabled` and what reaches the
//! `console` subscription follow its directives. Its own process: it installs the global
//! backend.

use log::{Level, LevelFilter, Metadata};

fn enabled(level: Level, target: &str) -> bool {
    log::logger().enabled(&Metadata::builder().level(level).target(target).build())
}

#[test]
fn init_applies_rust_log() {
    std::env::set_var(logbus::ENV_VAR, "warn,app::db=debug");
    let guard = logbus::init();

    assert_eq!(log::max_level(), LevelFilter::Debug);
    assert!(enabled(Level::Info, "app::db"));
    assert!(enabled(Level::Debug, "app::db::pool"));
    assert!(!enabled(Level::Trace, "app::db"));
    assert!(!enabled(Level::Info, "other"));
    assert!(enabled(Level::Warn, "other"));
    assert!(!enabled(Level::Info, "app"));

    // These go to stderr; `enabled` says which are routed.
    let records = [
        (Level::Info, "app::db"),
        (Level::Debug, "app::db::pool"),
        (Level::Trace, "app::db"),
        (Level::Info, "other"),
        (Level::Warn, "other"),
        (Level::Error, "app"),
        (Level::Debug, "app"),
    ];
    let mut routed = 0;
    for (level, target) in records {
        log::log!(target: target, level, "init_env test record at {level}");
        routed += u64::from(enabled(level, target));
    }
    assert_eq!(routed, 4);
    log::logger().flush();

    let console = guard.stats().subscriptions["console"];
    assert_eq!(
        (
            console.matched,
            console.written,
            console.dropped,
            console.in_queue
        ),
        (routed, routed, 0, 0)
    );
}
