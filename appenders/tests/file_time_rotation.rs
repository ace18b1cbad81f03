//! Time rotation at hour and day boundaries, with an injected clock.

mod common;

use std::fs;

use common::{msg_layout, numbered, rotated, ManualClock};
use logbus_appenders::{Appender, FileAppender, Rotation};

const DAY: u64 = 86_400;
const HOUR: u64 = 3_600;
/// 2026-11-29T00:00:00Z.
const MIDNIGHT: u64 = 1_795_910_400;

fn read(path: &std::path::Path) -> String {
    fs::read_to_string(path).unwrap()
}

#[test]
fn hourly_rotation_happens_at_the_first_record_after_the_hour() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let clock = ManualClock::at(MIDNIGHT + 10 * HOUR + 59 * 60);
    let mut appender = FileAppender::builder(&path)
        .rotate_every(Rotation::HOURLY)
        .keep(5)
        .layout(msg_layout())
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    clock.set(MIDNIGHT + 11 * HOUR - 1);
    appender.append(&numbered(1)).unwrap();
    clock.set(MIDNIGHT + 11 * HOUR);
    appender.append(&numbered(2)).unwrap();
    clock.set(MIDNIGHT + 11 * HOUR + 30 * 60);
    appender.append(&numbered(3)).unwrap();
    // Three hours later: one rotation, not three.
    clock.set(MIDNIGHT + 14 * HOUR + 5);
    appender.append(&numbered(4)).unwrap();
    appender.flush().unwrap();

    assert_eq!(read(&rotated(&path, 2)), "record 0\nrecord 1\n");
    assert_eq!(read(&rotated(&path, 1)), "record 2\nrecord 3\n");
    assert_eq!(read(&path), "record 4\n");
    assert!(!rotated(&path, 3).exists());
}

#[test]
fn daily_rotation_happens_at_utc_midnight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let clock = ManualClock::at(MIDNIGHT + 23 * HOUR);
    let mut appender = FileAppender::builder(&path)
        .rotate_every(Rotation::DAILY)
        .layout(msg_layout())
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    clock.set(MIDNIGHT + 23 * HOUR + 59 * 60 + 59);
    appender.append(&numbered(1)).unwrap();
    clock.set(MIDNIGHT + DAY);
    appender.append(&numbered(2)).unwrap();
    clock.set(MIDNIGHT + DAY + 12 * HOUR);
    appender.append(&numbered(3)).unwrap();
    appender.flush().unwrap();

    assert_eq!(read(&rotated(&path, 1)), "record 0\nrecord 1\n");
    assert_eq!(read(&path), "record 2\nrecord 3\n");
}

#[test]
fn an_empty_period_does_not_rotate_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let clock = ManualClock::at(MIDNIGHT);
    let mut appender = FileAppender::builder(&path)
        .rotate_every(Rotation::HOURLY)
        .layout(msg_layout())
        .clock(clock.clone())
        .build()
        .unwrap();
    clock.set(MIDNIGHT + 5 * HOUR);
    appender.append(&numbered(0)).unwrap();
    appender.flush().unwrap();
    assert!(!rotated(&path, 1).exists());
    assert_eq!(read(&path), "record 0\n");
}

#[test]
fn time_and_size_rotation_combine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let clock = ManualClock::at(MIDNIGHT);
    let mut appender = FileAppender::builder(&path)
        .rotate_every(Rotation::HOURLY)
        .max_bytes(18)
        .keep(9)
        .layout(msg_layout())
        .clock(clock.clone())
        .build()
        .unwrap();
    for seq in 0..3 {
        appender.append(&numbered(seq)).unwrap();
    }
    clock.set(MIDNIGHT + HOUR);
    appender.append(&numbered(3)).unwrap();
    appender.flush().unwrap();
    assert_eq!(read(&rotated(&path, 2)), "record 0\nrecord 1\n");
    assert_eq!(read(&rotated(&path, 1)), "record 2\n");
    assert_eq!(read(&path), "record 3\n");
}
