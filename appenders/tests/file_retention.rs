//! Retention by count, age and total size: every limit at once, oldest
//! first, when the file is opened and after each rotation, and only ever
//! of the appender's own rotated files. With an injected clock.

mod common;

use std::fs;
use std::time::Duration;

use common::{at, msg_builder, names, numbered, read_in, set_modified, temp_log, ManualClock};
use logbus_appenders::{Appender, FileAppender, Naming, Rotation};

const DAY: u64 = 86_400;
const HOUR: u64 = 3_600;

/// A daily, dated appender at `clock` keeping files for `days` days, no
/// count limit.
fn dated_for_days(path: &std::path::Path, clock: &ManualClock, days: u64) -> FileAppender {
    msg_builder(path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .keep_all()
        .keep_for(Duration::from_secs(days * DAY))
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn dated_files_age_from_the_end_of_the_day_their_name_gives() {
    let (dir, path) = temp_log();
    let dec_1 = at("2026-12-01T00:00:00Z");
    let clock = ManualClock::at(dec_1);
    let mut appender = dated_for_days(&path, &clock, 2);
    for day in 0..4 {
        clock.set(dec_1 + day * DAY);
        appender.append(&numbered(day)).unwrap();
    }
    // Dec 1 to 3 rotated, Dec 4 live; at Dec 4, 00:00, Dec 1 ended two
    // days ago: not older than two days.
    assert_eq!(
        names(dir.path()),
        [
            "app.log",
            "app.log.2026-12-01",
            "app.log.2026-12-02",
            "app.log.2026-12-03"
        ]
    );
    // The files' own times do not count: the names do.
    set_modified(&dir.path().join("app.log.2026-12-02"), 0);
    set_modified(&dir.path().join("app.log.2026-12-01"), dec_1 + 10 * DAY);
    // At Dec 5, 00:00, Dec 2 ended exactly two days ago: kept. Dec 1, three
    // days ago: removed.
    clock.set(dec_1 + 4 * DAY);
    appender.append(&numbered(4)).unwrap();
    assert_eq!(
        names(dir.path()),
        [
            "app.log",
            "app.log.2026-12-02",
            "app.log.2026-12-03",
            "app.log.2026-12-04"
        ]
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-04"), "record 3\n");
}

#[test]
fn numbered_files_age_from_their_modification_time() {
    let (dir, path) = temp_log();
    // The files the appender writes get the system's times: the clock
    // reads the same time.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let clock = ManualClock::at(now);
    let mut appender = msg_builder(&path)
        .max_bytes(10)
        .keep_all()
        .keep_for(Duration::from_secs(HOUR))
        .clock(clock.clone())
        .build()
        .unwrap();
    // One record per file: records 0 and 1 in .2 and .1, 2 live.
    for seq in 0..3 {
        appender.append(&numbered(seq)).unwrap();
    }
    set_modified(&dir.path().join("app.log.2"), now - 2 * HOUR);
    set_modified(&dir.path().join("app.log.1"), now - HOUR);
    // The next rotation shifts them (a rename keeps a file's time): the
    // one two hours old goes, the one exactly an hour old stays.
    appender.append(&numbered(3)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.1", "app.log.2"]);
    assert_eq!(read_in(dir.path(), "app.log.2"), "record 1\n");
    assert_eq!(read_in(dir.path(), "app.log.1"), "record 2\n");
}

#[test]
fn total_size_removes_the_oldest_until_the_rest_fits() {
    let (dir, path) = temp_log();
    // "record N\n" is 9 bytes, one per file; three fit in 30 bytes.
    let mut appender = msg_builder(&path)
        .max_bytes(10)
        .keep_all()
        .keep_total_bytes(30)
        .build()
        .unwrap();
    for seq in 0..8 {
        appender.append(&numbered(seq)).unwrap();
    }
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.1", "app.log.2", "app.log.3"]
    );
    assert_eq!(read_in(dir.path(), "app.log.3"), "record 4\n");
    assert_eq!(read_in(dir.path(), "app.log.1"), "record 6\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 7\n");
}

#[test]
fn count_age_and_size_all_apply_to_dated_files() {
    let (dir, path) = temp_log();
    let dec_1 = at("2026-12-01T00:00:00Z");
    let clock = ManualClock::at(dec_1 + HOUR);
    let build = |keep: usize, days: u64, bytes: u64| {
        msg_builder(&path)
            .rotate_every(Rotation::DAILY)
            .naming(Naming::DATED)
            .keep(keep)
            .keep_for(Duration::from_secs(days * DAY))
            .keep_total_bytes(bytes)
            .clock(clock.clone())
            .build()
            .unwrap()
    };
    // Ten days, one record each, with no limit that bites.
    let mut appender = build(100, 100, 1000);
    for day in 0..10 {
        clock.set(dec_1 + day * DAY + HOUR);
        appender.append(&numbered(day)).unwrap();
    }
    drop(appender);
    assert_eq!(names(dir.path()).len(), 10);
    let rotated = |dir: &std::path::Path| names(dir).len() - 1;

    // Reopened (retention runs when opening) with each limit the strictest
    // in turn: the count (4), the size (3 files of 9 bytes), the age (the
    // days ended at most 2 days before Dec 10, 01:00: Dec 8 and 9).
    drop(build(4, 100, 1000));
    assert_eq!(rotated(dir.path()), 4);
    drop(build(5, 100, 27));
    assert_eq!(rotated(dir.path()), 3);
    drop(build(5, 2, 1000));
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.2026-12-08", "app.log.2026-12-09"]
    );
}

#[test]
fn retention_removes_only_the_appenders_own_files() {
    let (dir, path) = temp_log();
    let dec_1 = at("2026-12-01T00:00:00Z");
    // Old files: ours (dated), and others' that look alike.
    let ours = [
        "app.log.2026-11-01",
        "app.log.2026-11-01.1",
        "app.log.2026-11-02.gz",
    ];
    let others = [
        "app.log.1",
        "app.log.2026-11-01.bak",
        "app.log.2026-11-01.01",
        "app.log.2026-11-1",
        "app.log.2026-13-01",
        "app.log.2026-11-01T25",
        "app.log.old",
        "app.logs.2026-11-01",
        "other.log.2026-11-01",
        "notes.txt",
    ];
    for name in ours.iter().chain(&others) {
        fs::write(dir.path().join(name), "old\n").unwrap();
    }
    // A directory with our name is not ours either.
    fs::create_dir(dir.path().join("app.log.2026-11-03")).unwrap();
    let clock = ManualClock::at(dec_1);
    let mut appender = dated_for_days(&path, &clock, 7);
    let mut expected: Vec<String> = others.iter().map(|s| (*s).to_owned()).collect();
    expected.extend(["app.log".to_owned(), "app.log.2026-11-03".to_owned()]);
    expected.sort();
    // Opening removed ours that are too old, and nothing else.
    assert_eq!(names(dir.path()), expected);
    for day in 0..3 {
        clock.set(dec_1 + day * DAY);
        appender.append(&numbered(day)).unwrap();
    }
    for name in &others {
        assert_eq!(read_in(dir.path(), name), "old\n", "{name}");
    }
    assert!(dir.path().join("app.log.2026-11-03").is_dir());
    assert!(dir.path().join("app.log.2026-12-02").exists());
}

#[test]
fn keep_all_with_no_other_limit_removes_nothing() {
    let (dir, path) = temp_log();
    fs::write(dir.path().join("app.log.2000-01-01"), "ancient\n").unwrap();
    let clock = ManualClock::at(at("2026-12-01T00:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .keep_all()
        .clock(clock.clone())
        .build()
        .unwrap();
    for day in 0..3 {
        clock.set(at("2026-12-01T00:00:00Z") + day * DAY);
        appender.append(&numbered(day)).unwrap();
    }
    assert_eq!(read_in(dir.path(), "app.log.2000-01-01"), "ancient\n");
    assert_eq!(names(dir.path()).len(), 4);
}

#[test]
fn a_clock_gone_back_names_files_after_the_newest_so_keep_removes_the_oldest() {
    let (dir, path) = temp_log();
    let clock = ManualClock::at(at("2026-12-05T10:00:00Z"));
    // "record N\n" is 9 bytes: two per file.
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .max_bytes(20)
        .keep(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    appender.append(&numbered(1)).unwrap();
    clock.set(at("2026-12-01T10:00:00Z"));
    for seq in 2..5 {
        appender.append(&numbered(seq)).unwrap();
    }
    // Records 2 and 3 are the newest rotated ones: kept, 0 and 1 removed.
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-05.1"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-05.1"),
        "record 2\nrecord 3\n"
    );
    // A time rotation while still behind: after them again.
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(5)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-05.2"]);
    assert_eq!(read_in(dir.path(), "app.log.2026-12-05.2"), "record 4\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 5\n");
}

#[test]
fn retention_leaves_symlinks_with_rotated_names_alone() {
    use std::os::unix::fs::symlink;
    let (dir, path) = temp_log();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    // Numbered: a link past `keep`, which rotations would remove.
    symlink(&victim, dir.path().join("app.log.3")).unwrap();
    let mut appender = msg_builder(&path).max_bytes(10).keep(2).build().unwrap();
    for seq in 0..4 {
        appender.append(&numbered(seq)).unwrap();
    }
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.1", "app.log.2", "app.log.3", "victim"]
    );
    assert!(fs::symlink_metadata(dir.path().join("app.log.3"))
        .unwrap()
        .file_type()
        .is_symlink());
    drop(appender);

    // Dated: an older day's link, past keep(1) and keep_for alike.
    let (dir, path) = temp_log();
    symlink(&victim, dir.path().join("app.log.2026-11-01")).unwrap();
    let clock = ManualClock::at(at("2026-12-01T10:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .keep(1)
        .keep_for(Duration::from_secs(DAY))
        .clock(clock.clone())
        .build()
        .unwrap();
    for day in 0..3 {
        clock.set(at("2026-12-01T10:00:00Z") + day * DAY);
        appender.append(&numbered(day)).unwrap();
    }
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.2026-11-01", "app.log.2026-12-02"]
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}
