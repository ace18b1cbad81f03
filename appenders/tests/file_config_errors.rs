//! Rotation settings that cannot work, alone or together: a typed
//! `Config` error when the appender is built, naming the setting, before
//! anything is created on disk. And their neighbours that are fine.

use std::time::Duration;

use logbus_appenders::{
    FileAppender, FileAppenderBuilder, FileErrorKind, JsonAppender, Naming, Rotation, TimeZone,
};

/// `builder` (for a path in a directory that does not exist yet) fails
/// with a `Config` error whose message contains `names`, and creates
/// nothing.
#[track_caller]
fn refused(make: impl Fn(&std::path::Path) -> FileAppenderBuilder, names: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/app.log");
    for json in [false, true] {
        let err = if json {
            JsonAppender::file(make(&path)).unwrap_err()
        } else {
            make(&path).build().unwrap_err()
        };
        assert_eq!(err.kind(), FileErrorKind::Config, "{err}");
        assert_eq!(err.path(), path);
        let text = err.to_string();
        assert!(text.contains(names), "{text:?} names no {names:?}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(!dir.path().join("logs").exists(), "{names}: created");
    }
}

#[test]
fn bad_rotation_settings_are_refused_naming_the_setting() {
    refused(
        |p| FileAppender::builder(p).keep_for(Duration::ZERO),
        "keep_for must be longer than zero",
    );
    refused(
        |p| FileAppender::builder(p).keep_total_bytes(0),
        "keep_total_bytes must be at least 1",
    );
    refused(
        |p| FileAppender::builder(p).naming(Naming::DATED),
        "naming(Naming::DATED) needs rotate_every",
    );
    refused(
        |p| {
            FileAppender::builder(p)
                .naming(Naming::DATED)
                .rotate_every(Rotation::NEVER)
                .max_bytes(100)
        },
        "naming(Naming::DATED) needs rotate_every",
    );
    refused(
        |p| {
            FileAppender::builder(p)
                .keep(0)
                .keep_for(Duration::from_secs(60))
        },
        "keep(0) keeps no rotated file",
    );
    refused(
        |p| FileAppender::builder(p).keep(0).keep_total_bytes(1 << 20),
        "keep(0) keeps no rotated file",
    );
    for offset in [86_400, -86_400, i32::MAX, i32::MIN] {
        refused(
            |p| {
                FileAppender::builder(p)
                    .rotate_every(Rotation::DAILY)
                    .time_zone(TimeZone::fixed_offset(offset))
            },
            "time_zone",
        );
    }
}

#[test]
fn their_neighbours_are_fine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let fine = [
        FileAppender::builder(&path).keep_for(Duration::from_secs(1)),
        FileAppender::builder(&path).keep_total_bytes(1),
        FileAppender::builder(&path)
            .keep_all()
            .keep_for(Duration::MAX)
            .keep_total_bytes(u64::MAX),
        FileAppender::builder(&path)
            .naming(Naming::DATED)
            .rotate_every(Rotation::HOURLY),
        FileAppender::builder(&path).keep(0).rotate_on_start(),
        FileAppender::builder(&path)
            .rotate_every(Rotation::DAILY)
            .time_zone(TimeZone::fixed_offset(86_399)),
        FileAppender::builder(&path)
            .rotate_every(Rotation::DAILY)
            .time_zone(TimeZone::fixed_offset(-86_399)),
        FileAppender::builder(&path).time_zone(TimeZone::LOCAL),
    ];
    for builder in fine {
        let described = format!("{builder:?}");
        builder
            .build()
            .unwrap_or_else(|e| panic!("{described}: {e}"));
    }
}
