//! Time rotation in a zone other than UTC: boundaries at the zone's hours
//! and midnights, names in its dates, and days of 23 and 25 hours across
//! daylight-saving changes. With an injected clock.
//!
//! The fixed-offset tests need no zone database. The daylight-saving tests
//! use [`TimeZone::LOCAL`] itself: each runs again in a child process of
//! this test binary with `TZ` set to the POSIX rule of central Europe
//! (which chrono reads without a zone database), so they depend neither on
//! the machine's zone nor on changing the environment of a running process.

mod common;

use std::fs;
use std::process::Command;

use common::{at, msg_builder, names, numbered, read_in, temp_log, ManualClock};
use logbus_appenders::{Appender, FileAppender, Naming, Rotation, TimeZone};

const HOUR: u64 = 3_600;

fn zoned(
    path: &std::path::Path,
    rotation: Rotation,
    zone: TimeZone,
    clock: &ManualClock,
) -> FileAppender {
    msg_builder(path)
        .rotate_every(rotation)
        .time_zone(zone)
        .naming(Naming::DATED)
        .keep(50)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn days_end_at_the_midnight_of_a_fixed_offset_and_are_named_by_its_date() {
    let (dir, path) = temp_log();
    let new_york_winter = TimeZone::fixed_offset(-5 * 3600);
    // 23:00 on Nov 30 in UTC−05:00.
    let clock = ManualClock::at(at("2026-12-01T04:00:00Z"));
    let mut appender = zoned(&path, Rotation::DAILY, new_york_winter, &clock);
    appender.append(&numbered(0)).unwrap();
    // UTC midnight passed: nothing happens.
    clock.set(at("2026-12-01T04:59:59Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log"]);
    // Local midnight.
    clock.set(at("2026-12-01T05:00:00Z"));
    appender.append(&numbered(2)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-11-30"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-11-30"),
        "record 0\nrecord 1\n"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 2\n");
}

#[test]
fn hours_of_a_half_hour_offset_start_at_half_past_utc() {
    let (dir, path) = temp_log();
    let india = TimeZone::fixed_offset(5 * 3600 + 1800);
    // 14:05 in UTC+05:30.
    let clock = ManualClock::at(at("2026-12-01T08:35:00Z"));
    let mut appender = zoned(&path, Rotation::HOURLY, india, &clock);
    appender.append(&numbered(0)).unwrap();
    // A whole UTC hour passed, not a local one.
    clock.set(at("2026-12-01T09:29:59Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log"]);
    clock.set(at("2026-12-01T09:30:00Z"));
    appender.append(&numbered(2)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.2026-12-01T14"]);
    assert_eq!(
        read_in(dir.path(), "app.log.2026-12-01T14"),
        "record 0\nrecord 1\n"
    );
}

#[test]
fn numbered_names_rotate_at_the_zones_boundaries_too() {
    let (dir, path) = temp_log();
    let tokyo = TimeZone::fixed_offset(9 * 3600);
    // Local midnight in UTC+09:00 is 15:00Z.
    let clock = ManualClock::at(at("2026-12-01T14:00:00Z"));
    let mut appender = msg_builder(&path)
        .rotate_every(Rotation::DAILY)
        .time_zone(tokyo)
        .clock(clock.clone())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    clock.set(at("2026-12-01T15:00:00Z"));
    appender.append(&numbered(1)).unwrap();
    assert_eq!(names(dir.path()), ["app.log", "app.log.1"]);
    assert_eq!(read_in(dir.path(), "app.log.1"), "record 0\n");
}

/// Central European time as a POSIX rule: UTC+1, and UTC+2 from the last
/// Sunday of March, 02:00, to the last Sunday of October, 03:00. In 2026
/// the changes are on March 29 and October 25, at 01:00Z.
const CET: &str = "CET-1CEST,M3.5.0,M10.5.0/3";
const CHILD: &str = "LOGBUS_TEST_ZONE_CHILD";

/// Runs `body` in a child process of this binary with `TZ` set to
/// [`CET`], where it runs `test` alone; returns whether this is the child.
#[track_caller]
fn in_central_europe(test: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        // The zone the child runs in is the one intended.
        let summer =
            chrono::DateTime::from_timestamp(i64::try_from(at("2026-07-01T00:00:00Z")).unwrap(), 0)
                .unwrap()
                .with_timezone(&chrono::Local);
        assert_eq!(summer.offset().to_string(), "+02:00");
        body();
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("TZ", CET)
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} in TZ={CET}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn local_days_across_daylight_saving_changes_last_23_and_25_hours() {
    in_central_europe(
        "local_days_across_daylight_saving_changes_last_23_and_25_hours",
        || {
            let (dir, path) = temp_log();
            let clock = ManualClock::at(at("2026-03-28T12:00:00+01:00"));
            let mut appender = zoned(&path, Rotation::DAILY, TimeZone::LOCAL, &clock);
            appender.append(&numbered(0)).unwrap();
            // Midnight of Sunday March 29, still UTC+1.
            let sunday = at("2026-03-29T00:00:00+01:00");
            clock.set(sunday);
            appender.append(&numbered(1)).unwrap();
            // 24 hours later it is already 01:00 on Monday: summer time
            // began at 02:00 on Sunday.
            clock.set(sunday + 23 * HOUR - 1);
            appender.append(&numbered(2)).unwrap();
            clock.set(sunday + 23 * HOUR);
            appender.append(&numbered(3)).unwrap();
            assert_eq!(read_in(dir.path(), "app.log.2026-03-28"), "record 0\n");
            assert_eq!(
                read_in(dir.path(), "app.log.2026-03-29"),
                "record 1\nrecord 2\n"
            );
            assert_eq!(sunday + 23 * HOUR, at("2026-03-30T00:00:00+02:00"));

            // October 25 lasts 25 hours: 24 hours after its midnight it is
            // still 23:00 on the 25th.
            let sunday = at("2026-10-25T00:00:00+02:00");
            clock.set(sunday);
            appender.append(&numbered(4)).unwrap();
            clock.set(sunday + 24 * HOUR);
            appender.append(&numbered(5)).unwrap();
            clock.set(sunday + 25 * HOUR);
            appender.append(&numbered(6)).unwrap();
            assert_eq!(
                read_in(dir.path(), "app.log.2026-10-25"),
                "record 4\nrecord 5\n"
            );
            assert_eq!(sunday + 25 * HOUR, at("2026-10-26T00:00:00+01:00"));
            assert_eq!(fs::read_to_string(&path).unwrap(), "record 6\n");
        },
    );
}

#[test]
fn the_hour_a_change_repeats_is_one_file_and_the_hour_it_skips_none() {
    in_central_europe(
        "the_hour_a_change_repeats_is_one_file_and_the_hour_it_skips_none",
        || {
            let (dir, path) = temp_log();
            // October 25: 02:00–03:00 twice, first in summer time.
            let clock = ManualClock::at(at("2026-10-25T01:30:00+02:00"));
            let mut appender = zoned(&path, Rotation::HOURLY, TimeZone::LOCAL, &clock);
            appender.append(&numbered(0)).unwrap();
            clock.set(at("2026-10-25T02:30:00+02:00"));
            appender.append(&numbered(1)).unwrap();
            clock.set(at("2026-10-25T02:30:00+01:00"));
            appender.append(&numbered(2)).unwrap();
            clock.set(at("2026-10-25T03:00:00+01:00"));
            appender.append(&numbered(3)).unwrap();
            assert_eq!(
                names(dir.path()),
                ["app.log", "app.log.2026-10-25T01", "app.log.2026-10-25T02"]
            );
            assert_eq!(
                read_in(dir.path(), "app.log.2026-10-25T02"),
                "record 1\nrecord 2\n"
            );

            // March 29: after 01:59:59 comes 03:00:00.
            clock.set(at("2026-03-29T01:30:00+01:00"));
            let (dir, path) = temp_log();
            let mut appender = zoned(&path, Rotation::HOURLY, TimeZone::LOCAL, &clock);
            appender.append(&numbered(0)).unwrap();
            clock.set(at("2026-03-29T03:00:00+02:00"));
            appender.append(&numbered(1)).unwrap();
            clock.set(at("2026-03-29T04:00:00+02:00"));
            appender.append(&numbered(2)).unwrap();
            assert_eq!(
                names(dir.path()),
                ["app.log", "app.log.2026-03-29T01", "app.log.2026-03-29T03"]
            );
        },
    );
}
