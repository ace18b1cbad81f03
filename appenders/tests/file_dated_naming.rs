//! Dated names: each rotated file carries the period it holds, a counter
//! orders the files of one period, nothing is ever replaced, and the live
//! file keeps its plain name. With an injected clock.

mod common;

use std::fs;
use std::io;

use common::{at, msg_builder, names, numbered, read_in, set_modified, temp_log, ManualClock};
use logbus_appenders::{Appender, FileAppender, JsonAppender, Naming, Operation, Rotation};

fn dated(path: &std::path::Path, rotation: Rotation, clock: &ManualClock) -> FileAppender {
    msg_builder(path)
        .rotate_every(rotation)
        .naming(Naming::DATED)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn daily_names_carry_the_day_each_file_holds() {
    let (dir, path) = temp_log();
    let clock = ManualClock::at(at("2026-12-01T10:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-01T23:59:59Z"));
    appender.append(&numbered(1)).unwrap();
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(2)).unwrap();
    // A day with no record: no file for it.
    clock.set(at("2026-12-04T05:00:00Z"));
    appender.append(&numbered(3)).unwrap();
    appender.flush().unwrap();

    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.2026-12-01", "app.log.2026-12-02"]
    );
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-01"),
        "record 0\nrecord 1\n"
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-02"), "record 2\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 3\n");
    assert_eq!(appender.path(), path);
}

#[test]
fn hourly_names_carry_the_day_and_hour() {
    let (dir, path) = temp_log();
    let clock = ManualClock::at(at("2026-12-01T13:05:00Z"));
    let mut appender = dated(&path, Rotation::HOURLY, &clock);
    appender.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-01T14:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    clock.set(at("2026-12-01T23:30:00Z"));
    appender.append(&numbered(2)).unwrap();
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(3)).unwrap();
    assert_eq!(
        names(dir.path()),
        [
            "app.log",
            "app.log.2026-12-01T13",
            "app.log.2026-12-01T14",
            "app.log.2026-12-01T23"
        ]
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01T23"), "record 2\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 3\n");
}

#[test]
fn size_rotation_within_a_period_adds_a_counter_in_writing_order() {
    let (dir, path) = temp_log();
    let clock = ManualClock::at(at("2026-12-01T08:00:00Z"));
    // "record N\n" is 9 bytes: two per file.
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .max_bytes(18)
        .keep(20)
        .clock(clock.clone())
        .build()
        .unwrap();
    for seq in 0..7 {
        appender.append(&numbered(seq)).unwrap();
    }
    // The next day: the last file of Dec 1 takes the next counter.
    clock.set(at("2026-12-02T00:00:01Z"));
    appender.append(&numbered(7)).unwrap();
    appender.flush().unwrap();

    let expected = [
        ("app.log.2026-12-01", "record 0\nrecord 1\n"),
        ("app.log.2026-12-01.1", "record 2\nrecord 3\n"),
        ("app.log.2026-12-01.2", "record 4\nrecord 5\n"),
        ("app.log.2026-12-01.3", "record 6\n"),
    ];
    let mut want: Vec<&str> = expected.iter().map(|(name, _)| *name).collect();
    want.insert(0, "app.log");
    assert_eq!(names(dir.path()), want);
    for (name, text) in expected {
        assert_eq!(read_in(dir.path(), name), text, "{name}");
    }
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 7\n");
}

#[test]
fn a_restart_never_replaces_a_file_of_the_same_period() {
    let (dir, path) = temp_log();
    // An earlier run of the same day rotated twice.
    fs::write(dir.path().join("app.log.2026-12-01"), "first run\n").unwrap();
    fs::write(
        dir.path().join("app.log.2026-12-01.1"),
        "first run, later\n",
    )
    .unwrap();
    let clock = ManualClock::at(at("2026-12-01T20:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01"), "first run\n");
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-01.1"),
        "first run, later\n"
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01.2"), "record 0\n");
}

#[test]
fn a_file_left_by_an_earlier_period_is_rotated_under_its_own_date() {
    let (dir, path) = temp_log();
    fs::write(&path, "from yesterday\n").unwrap();
    set_modified(&path, at("2026-11-30T18:00:00Z"));
    let clock = ManualClock::at(at("2026-12-01T09:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(0)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-11-30"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-11-30"),
        "from yesterday\n"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");

    // One written today is appended to, as before.
    drop(appender);
    set_modified(&path, at("2026-12-01T09:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(1)).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\nrecord 1\n");
}

#[test]
fn numbered_names_also_rotate_a_file_of_an_earlier_period_first() {
    let (dir, path) = temp_log();
    fs::write(&path, "from last hour\n").unwrap();
    set_modified(&path, at("2026-12-01T08:59:59Z"));
    let clock = ManualClock::at(at("2026-12-01T09:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::HOURLY)
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    assert_eq!(read_in(dir.path(), "app.log.1"), "from last hour\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
}

#[cfg(unix)]
#[test]
fn what_sits_at_a_dated_name_is_stepped_over_never_replaced_or_followed() {
    let (dir, path) = temp_log();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    fs::create_dir(dir.path().join("app.log.2026-12-01")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("app.log.2026-12-01.1")).unwrap();
    let clock = ManualClock::at(at("2026-12-01T12:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(read_in(dir.path(), "app.log.2026-12-01.2"), "record 0\n");
    assert!(dir.path().join("app.log.2026-12-01").is_dir());
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        fs::symlink_metadata(dir.path().join("app.log.2026-12-01.1"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn counters_at_the_end_of_their_range_fail_the_rotation_without_a_panic() {
    let (dir, path) = temp_log();
    // The largest counter a listing reads back: the next would be
    // `usize::MAX`, a name retention would never see again.
    let last = usize::MAX - 1;
    fs::write(
        dir.path().join(format!("app.log.2026-12-01.{last}")),
        "planted\n",
    )
    .unwrap();
    let clock = ManualClock::at(at("2026-12-01T12:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .max_bytes(10)
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    // So the first rotation is an error, reported for the record, typed.
    let err = appender.append(&numbered(1)).unwrap_err();
    assert_eq!(err.operation(), Operation::Rotate);
    assert_eq!(err.io_kind(), Some(io::ErrorKind::AlreadyExists));
    assert!(err.to_string().contains("no free name"), "{err}");
    assert!(!dir
        .path()
        .join(format!("app.log.2026-12-01.{}", usize::MAX))
        .exists());
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
    assert_eq!(
        names(dir.path()),
        ["app.log".to_owned(), format!("app.log.2026-12-01.{last}")]
    );
}

#[test]
fn a_found_file_written_after_the_clocks_time_keeps_its_date_and_rotates_at_the_clocks_boundary() {
    let (dir, path) = temp_log();
    fs::write(&path, "before the clock went back\n").unwrap();
    set_modified(&path, at("2026-12-05T10:00:00Z"));
    let clock = ManualClock::at(at("2026-12-01T10:00:00Z"));
    let mut appender = dated(&path, Rotation::DAILY, &clock);
    appender.append(&numbered(0)).unwrap();
    // Not at 2026-12-06: at the clock's next midnight.
    clock.set(at("2026-12-02T00:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-05"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-05"),
        "before the clock went back\nrecord 0\n"
    );
    // The next one is not named 2026-12-02, before it: after it.
    clock.set(at("2026-12-03T00:00:00Z"));
    appender.append(&numbered(2)).unwrap();
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.2026-12-05", "app.log.2026-12-05.1"]
    );
    assert_eq!(read_in(dir.path(), "app.log.2026-12-05.1"), "record 1\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 2\n");
}

#[test]
fn the_json_appender_takes_dated_names_too() {
    let (dir, _) = temp_log();
    let path = dir.path().join("app.ndjson");
    let clock = ManualClock::at(at("2026-12-01T12:00:00Z"));
    let builder = FileAppender::builder(&path)
        .rotate_every(Rotation::DAILY)
        .naming(Naming::DATED)
        .clock(clock.clone());
    let mut json = JsonAppender::file(builder).unwrap();
    json.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-02T00:00:00Z"));
    json.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.ndjson", "app.ndjson.2026-12-01"]);
    assert!(read_in(dir.path(), "app.ndjson.2026-12-01").contains(r#""msg":"record 0""#));
}

#[cfg(feature = "gzip")]
mod gzip {
    use std::fs::File;
    use std::io::Read;

    use super::*;
    use logbus_appenders::Compression;

    fn gunzip(path: &std::path::Path) -> String {
        let mut text = String::new();
        flate2::read::GzDecoder::new(File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    #[test]
    fn dated_files_compress_to_their_name_plus_gz_and_counters_count_them() {
        let (dir, path) = temp_log();
        let clock = ManualClock::at(at("2026-12-01T08:00:00Z"));
        let mut appender = msg_builder(&path)
            .rotate_every(Rotation::DAILY)
            .naming(Naming::DATED)
            .max_bytes(18)
            .compression(Compression::Gzip)
            .clock(clock.clone())
            .build()
            .unwrap();
        for seq in 0..5 {
            appender.append(&numbered(seq)).unwrap();
        }
        clock.set(at("2026-12-02T00:00:00Z"));
        appender.append(&numbered(5)).unwrap();
        drop(appender);
        assert_eq!(
            names(dir.path()),
            [
                "app.log",
                "app.log.2026-12-01.1.gz",
                "app.log.2026-12-01.2.gz",
                "app.log.2026-12-01.gz",
            ]
        );
        let day = |name: &str| gunzip(&dir.path().join(name));
        assert_eq!(day("app.log.2026-12-01.gz"), "record 0\nrecord 1\n");
        assert_eq!(day("app.log.2026-12-01.1.gz"), "record 2\nrecord 3\n");
        assert_eq!(day("app.log.2026-12-01.2.gz"), "record 4\n");

        // A file written late on Dec 1 by another run: its rotation takes
        // the counter after the compressed ones.
        fs::write(&path, "late\n").unwrap();
        set_modified(&path, at("2026-12-01T23:00:00Z"));
        let mut appender = msg_builder(&path)
            .rotate_every(Rotation::DAILY)
            .naming(Naming::DATED)
            .compression(Compression::Gzip)
            .clock(clock.clone())
            .build()
            .unwrap();
        appender.append(&numbered(6)).unwrap();
        assert_eq!(day("app.log.2026-12-01.3.gz"), "late\n");
    }
}
