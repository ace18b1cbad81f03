//! `logbus::testing` in one test binary (its own process: it installs the test logger):
//! `init` is idempotent from many tests at once; a capture holds exactly the records its
//! own thread logged during its life, at every level, with their fields, and never another
//! thread's, however many tests capture in parallel. What the harness shows is checked
//! from outside by `tests/test_capture.rs`.

use std::sync::Barrier;

use log::Level;

/// Tests that log here all start with this, as a user's tests would.
fn start() -> logbus::testing::Capture {
    logbus::testing::init();
    logbus::testing::capture()
}

#[test]
fn init_is_idempotent_and_try_init_says_the_test_logger_is_installed() {
    logbus::testing::init();
    logbus::testing::init();
    assert!(logbus::testing::try_init().is_ok());
    assert_eq!(log::max_level(), log::LevelFilter::Trace);
}

#[test]
fn a_capture_holds_this_threads_records_at_every_level_with_their_fields() {
    let logs = start();
    log::error!(target: "app::db", "e");
    log::warn!(target: "app::db", "w");
    log::info!(target: "app::db", user = "ann", attempt = 3; "i {}", 1);
    log::debug!(target: "app::db", "d");
    log::trace!(target: "app::db", "t");
    assert_eq!(logs.len(), 5);
    assert_eq!(logs.messages(), ["e", "w", "i 1", "d", "t"]);
    let records = logs.records();
    let levels: Vec<Level> = records.iter().map(|r| r.level()).collect();
    assert_eq!(
        levels,
        [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace
        ]
    );
    let info = &records[2];
    assert_eq!(info.topic().as_str(), "info.app.db");
    assert_eq!(
        info.get("user").map(ToString::to_string),
        Some("ann".into())
    );
    assert_eq!(
        info.get("attempt").map(ToString::to_string),
        Some("3".into())
    );
    assert_eq!(info.file(), Some(file!()));
    assert!(records.windows(2).all(|w| w[0].seq() < w[1].seq()));
    // While a capture lives, every level is enabled on its thread.
    assert!(log::log_enabled!(target: "anything", Level::Trace));
}

#[test]
fn parallel_captures_never_see_each_others_records() {
    const THREADS: usize = 8;
    const RECORDS: usize = 500;
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let barrier = &barrier;
            s.spawn(move || {
                let logs = start();
                barrier.wait();
                for i in 0..RECORDS {
                    log::info!(target: "parallel", "{t} {i}");
                }
                let expected: Vec<String> = (0..RECORDS).map(|i| format!("{t} {i}")).collect();
                assert_eq!(logs.messages(), expected, "thread {t}");
            });
        }
    });
}

#[test]
fn a_spawned_threads_records_are_not_in_the_parents_capture() {
    let logs = start();
    log::info!(target: "app", "before");
    std::thread::spawn(|| {
        let own = logbus::testing::capture();
        log::info!(target: "app", "on the spawned thread");
        assert_eq!(own.messages(), ["on the spawned thread"]);
    })
    .join()
    .unwrap();
    log::info!(target: "app", "after");
    assert_eq!(logs.messages(), ["before", "after"]);
}

#[test]
fn nested_captures_each_hold_what_was_logged_during_their_life() {
    let outer = start();
    log::info!(target: "app", "one");
    let inner = logbus::testing::capture();
    log::info!(target: "app", "two");
    drop(inner);
    log::info!(target: "app", "three");
    assert_eq!(outer.messages(), ["one", "two", "three"]);

    let inner = logbus::testing::capture();
    assert!(inner.is_empty());
    log::info!(target: "app", "four");
    assert_eq!(inner.messages(), ["four"]);
    assert_eq!(outer.len(), 4);
}

/// A value whose `Display` logs: the nested call is a record of its own, and nothing
/// borrowed twice panics.
struct LogsWhenShown;

impl std::fmt::Display for LogsWhenShown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        log::info!(target: "app", "from Display");
        f.write_str("shown")
    }
}

#[test]
fn a_log_call_inside_a_message_is_captured_before_it() {
    let logs = start();
    log::info!(target: "app", "outer {}", LogsWhenShown);
    assert_eq!(logs.messages(), ["from Display", "outer shown"]);
}
