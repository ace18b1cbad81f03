//! `rotate_on_start`: a non-empty file found when the appender is built is
//! rotated before the first record, on the thread that appends (the
//! broker's worker), so each run starts a file of its own.

mod common;

use std::fs;

use common::{at, msg_builder, names, numbered, read_in, set_modified, temp_log, ManualClock};
use logbus_appenders::{Appender, Naming, Rotation};

#[test]
fn a_non_empty_file_is_rotated_at_the_first_call_not_when_built() {
    let (dir, path) = temp_log();
    fs::write(&path, "last run\n").unwrap();
    let mut appender = msg_builder(&path).rotate_on_start().build().unwrap();
    // Building touched nothing: the rotation waits for the worker.
    assert_eq!(names(dir.path()), ["app.log"]);
    appender.append(&numbered(0)).unwrap();
    appender.append(&numbered(1)).unwrap();
    assert_eq!(read_in(dir.path(), "app.log.1"), "last run\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\nrecord 1\n");
    assert_eq!(names(dir.path()), ["app.log", "app.log.1"]);
}

#[test]
fn an_empty_or_missing_file_is_simply_used() {
    let (dir, path) = temp_log();
    let mut appender = msg_builder(&path).rotate_on_start().build().unwrap();
    appender.append(&numbered(0)).unwrap();
    drop(appender);
    fs::write(&path, "").unwrap();
    let mut appender = msg_builder(&path).rotate_on_start().build().unwrap();
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log"]);
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\n");
}

#[test]
fn each_run_of_a_day_gets_a_dated_file_of_its_own() {
    let (dir, path) = temp_log();
    let clock = ManualClock::at(at("2026-12-01T09:00:00Z"));
    let run = |seq: u64| {
        let mut appender = msg_builder(&path)
            .rotate_every(Rotation::DAILY)
            .naming(Naming::DATED)
            .rotate_on_start()
            .clock(clock.clone())
            .build()
            .unwrap();
        appender.append(&numbered(seq)).unwrap();
        drop(appender);
        // Written this morning, by the clock.
        set_modified(&path, at("2026-12-01T09:00:00Z"));
    };
    for seq in 0..3 {
        run(seq);
    }
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.2026-12-01", "app.log.2026-12-01.1"]
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01"), "record 0\n");
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01.1"), "record 1\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 2\n");
}

#[test]
fn a_file_of_an_earlier_day_is_rotated_once_under_its_date() {
    let (dir, path) = temp_log();
    fs::write(&path, "yesterday\n").unwrap();
    set_modified(&path, at("2026-11-30T22:00:00Z"));
    let clock = ManualClock::at(at("2026-12-01T09:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .rotate_on_start()
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    appender.append(&numbered(1)).unwrap();
    // Rotated at start, and not a second time for its day having passed.
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-11-30"]);
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\nrecord 1\n");
}

#[test]
fn with_keep_zero_the_last_runs_file_is_deleted() {
    let (dir, path) = temp_log();
    fs::write(&path, "last run\n").unwrap();
    let mut appender = msg_builder(&path)
        .rotate_on_start()
        .keep(0)
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    assert_eq!(names(dir.path()), ["app.log"]);
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
}

#[test]
fn a_clock_behind_the_found_file_never_names_it_as_the_oldest() {
    let (dir, path) = temp_log();
    fs::write(dir.path().join("app.log.2026-12-04"), "older\n").unwrap();
    fs::write(&path, "before the crash\n").unwrap();
    set_modified(&path, at("2026-12-05T10:00:00Z"));
    // A clock far behind (no RTC yet, say).
    let clock = ManualClock::at(at("2000-01-01T00:01:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .rotate_on_start()
        .keep(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    // Named by when it was written, so the older file is the one removed.
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-05"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-05"),
        "before the crash\n"
    );
    // The clock's next midnight rotates the new file after it, not as
    // 2000-01-01, which keep(1) would remove at once.
    clock.set(at("2000-01-02T00:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-05.1"]);
    assert_eq!(read_in(dir.path(), "app.log.2026-12-05.1"), "record 0\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\n");
}
