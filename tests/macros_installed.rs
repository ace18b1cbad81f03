//! logbus's own macros with logbus installed as the `log` backend (its own
//! process): calls without `logger:` are deferred through the installed
//! broker, with the text `log::info!` gives; a level `log::max_level` turns
//! off evaluates no argument; after the guard's shutdown, calls are counted
//! as dropped on both paths.

use std::cell::Cell;

use logbus::appenders::__private_api::is_deferred;
use logbus::{LevelFilter, Memory, Subscription};

/// One test: the global logger can be set only once per process.
#[test]
fn the_installed_broker_takes_deferred_calls() {
    let (memory, captured) = Memory::new();
    let guard = logbus::builder()
        .appender(Subscription::builder("memory", memory).level(LevelFilter::Debug))
        .install()
        .unwrap();
    assert_eq!(log::max_level(), LevelFilter::Debug);

    let (id, ms) = (7u64, 2.5f64);
    logbus::info!(target: "app::http", "request {} served in {:.1} ms", id, ms);
    log::info!(target: "app::http", "request {} served in {:.1} ms", id, ms);
    let (yes, byte, q) = (true, 255u8, 'q');
    logbus::warn!("{:>5}|{:#x}|{:?}", yes, byte, q);
    log::warn!("{:>5}|{:#x}|{:?}", yes, byte, q);
    logbus::debug!("not deferred: {}", String::from("owned"));
    log::debug!("not deferred: {}", String::from("owned"));

    // Below `log::max_level`: no argument is evaluated, nothing published.
    let calls = Cell::new(0);
    let next = || {
        calls.set(calls.get() + 1);
        calls.get()
    };
    logbus::trace!("{}", next());
    logbus::trace!("{}", next().to_string());
    assert_eq!(calls.get(), 0);

    log::logger().flush();
    let records = captured.records();
    let deferred: Vec<_> = records.iter().map(|r| is_deferred(r)).collect();
    assert_eq!(deferred, [true, false, true, false, false, false]);
    let messages = captured.messages();
    assert_eq!(messages[0], "request 7 served in 2.5 ms");
    assert_eq!(messages[2], " true|0xff|'q'");
    for pair in records.chunks(2) {
        assert_eq!(pair[0].message(), pair[1].message());
        assert_eq!(
            (
                pair[0].level(),
                pair[0].target(),
                pair[0].module_path(),
                pair[0].file()
            ),
            (
                pair[1].level(),
                pair[1].target(),
                pair[1].module_path(),
                pair[1].file()
            )
        );
    }

    let handle = guard.handle();
    let report = guard.shutdown();
    assert_eq!(report.written(), 6);
    // Bound: a call of literals only takes `log`'s path.
    let one = 1;
    logbus::info!("{}", one);
    log::info!("{}", one);
    assert_eq!(captured.len(), 6, "nothing logged after the shutdown");
    assert_eq!(handle.stats().dropped_after_shutdown, 2);
}
