//! A log file moved away or deleted by another tool is noticed at the next
//! flush and reopened at the configured path.

mod common;

use std::fs;

use common::{msg_layout, numbered};
use logbus_appenders::{Appender, FileAppender};

#[test]
fn a_file_moved_away_is_reopened_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let moved = dir.path().join("app.log.logrotated");
    let mut appender = FileAppender::builder(&path)
        .layout(msg_layout())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    appender.flush().unwrap();

    fs::rename(&path, &moved).unwrap();
    appender.append(&numbered(1)).unwrap();
    appender.flush().unwrap();
    appender.append(&numbered(2)).unwrap();
    appender.flush().unwrap();

    assert_eq!(fs::read_to_string(&moved).unwrap(), "record 0\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\nrecord 2\n");
}

#[test]
fn a_deleted_file_is_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let mut appender = FileAppender::builder(&path)
        .layout(msg_layout())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    appender.flush().unwrap();

    fs::remove_file(&path).unwrap();
    // Noticed at this flush, before the buffered record is written.
    appender.append(&numbered(1)).unwrap();
    appender.flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\n");
}

#[test]
fn a_file_replaced_by_another_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let mut appender = FileAppender::builder(&path)
        .layout(msg_layout())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    appender.flush().unwrap();
    // logrotate `create`: move away, then create a fresh file.
    fs::rename(&path, dir.path().join("old")).unwrap();
    fs::write(&path, "fresh\n").unwrap();
    appender.append(&numbered(1)).unwrap();
    appender.flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "fresh\nrecord 1\n");
}
