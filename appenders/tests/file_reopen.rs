//! A log file moved away or deleted by another tool is noticed at the next
//! flush and reopened at the configured path.

mod common;

use std::fs;

use common::{append_flushed, msg_file, temp_log};

#[test]
fn a_file_moved_away_is_reopened_at_the_path() {
    let (dir, path) = temp_log();
    let moved = dir.path().join("app.log.logrotated");
    let mut appender = msg_file(&path);
    append_flushed(&mut appender, 0);

    fs::rename(&path, &moved).unwrap();
    append_flushed(&mut appender, 1);
    append_flushed(&mut appender, 2);

    assert_eq!(fs::read_to_string(&moved).unwrap(), "record 0\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\nrecord 2\n");
}

#[test]
fn a_deleted_file_is_recreated() {
    let (_dir, path) = temp_log();
    let mut appender = msg_file(&path);
    append_flushed(&mut appender, 0);

    fs::remove_file(&path).unwrap();
    // Noticed at this flush, before the buffered record is written.
    append_flushed(&mut appender, 1);
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\n");
}

#[test]
fn a_file_replaced_by_another_is_followed() {
    let (dir, path) = temp_log();
    let mut appender = msg_file(&path);
    append_flushed(&mut appender, 0);
    // logrotate `create`: move away, then create a fresh file.
    fs::rename(&path, dir.path().join("old")).unwrap();
    fs::write(&path, "fresh\n").unwrap();
    append_flushed(&mut appender, 1);
    assert_eq!(fs::read_to_string(&path).unwrap(), "fresh\nrecord 1\n");
}
