//! Files that survive planted hard links, a crash mid-line and long
//! retention: hard links refused, a partial last line terminated before
//! the next record, rotated files above `keep` removed (ours only), and
//! `keep_all`.

mod common;

use std::fs;

use common::{append_flushed, append_numbered, msg_builder, rotating_msg_file, temp_log};
use logbus_appenders::{Appender, FileAppender, FileErrorKind, Operation};

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_hard_link_at_the_log_path_is_refused_and_the_other_file_untouched() {
    let (dir, path) = temp_log();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    fs::hard_link(&victim, &path).unwrap();
    let err = FileAppender::builder(&path).build().unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::Hardlink);
    assert_eq!(err.path(), path);
    assert!(err.to_string().contains("hard link"), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn a_hard_link_planted_after_a_rotation_is_refused_at_the_reopen() {
    let (dir, path) = temp_log();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let mut appender = rotating_msg_file(&path, 10, 3);
    appender.append(&common::numbered(0)).unwrap();
    // Between two writes, someone swaps the live file for a link to theirs;
    // logrotate-style detection reopens the path at the next call.
    fs::remove_file(&path).unwrap();
    fs::hard_link(&victim, &path).unwrap();
    appender.flush().unwrap();
    let err = appender.append(&common::numbered(1)).unwrap_err();
    assert_eq!(err.operation(), Operation::Open);
    assert!(err.to_string().contains("hard links"), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn a_partial_last_line_is_terminated_before_the_next_record() {
    let (_dir, path) = temp_log();
    // What a process killed in the middle of a write leaves.
    fs::write(&path, "record 0\nrecord 1\nrecor").unwrap();
    let mut appender = msg_builder(&path).build().unwrap();
    append_flushed(&mut appender, 2);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "record 0\nrecord 1\nrecor\nrecord 2\n"
    );
    // A file that ends with its line feed gets none extra.
    drop(appender);
    let mut appender = msg_builder(&path).build().unwrap();
    append_flushed(&mut appender, 3);
    assert!(fs::read_to_string(&path)
        .unwrap()
        .ends_with("record 2\nrecord 3\n"));
}

#[test]
fn files_above_keep_are_removed_and_only_ours() {
    let (dir, path) = temp_log();
    // An earlier run kept 4; others' files sit beside ours.
    for name in [
        "app.log.1",
        "app.log.2",
        "app.log.3",
        "app.log.4",
        "app.log.4.gz",
        "app.log.03",
        "app.log.bak",
        "app.log.3.old",
        "other.log.5",
    ] {
        fs::write(dir.path().join(name), "old\n").unwrap();
    }
    // What is left: ours up to keep, and everyone else's.
    let kept = [
        "app.log",
        "app.log.03",
        "app.log.1",
        "app.log.2",
        "app.log.3.old",
        "app.log.bak",
        "other.log.5",
    ];
    let mut appender = rotating_msg_file(&path, 10, 2);
    // Opening removed what is above keep, and nothing else.
    assert_eq!(names(dir.path()), kept);
    append_numbered(&mut appender, 0..6);
    assert_eq!(names(dir.path()), kept);
    assert_eq!(
        fs::read_to_string(dir.path().join("app.log.2")).unwrap(),
        "record 3\n"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 5\n");
}

#[test]
fn keep_all_keeps_every_rotated_file() {
    let (dir, path) = temp_log();
    let mut appender = msg_builder(&path).max_bytes(10).keep_all().build().unwrap();
    append_numbered(&mut appender, 0..30);
    let rotated = names(dir.path()).len() - 1;
    assert_eq!(rotated, 29);
    assert_eq!(
        fs::read_to_string(dir.path().join("app.log.29")).unwrap(),
        "record 0\n"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 29\n");
}

/// A large `keep` costs nothing while few files exist: a rotation renames
/// the files present (the plan is unit-tested in `rotate.rs`); here the
/// result with keep at 100,000.
#[test]
fn a_huge_keep_rotates_the_files_present() {
    let (dir, path) = temp_log();
    let mut appender = rotating_msg_file(&path, 10, 100_000);
    append_numbered(&mut appender, 0..4);
    assert_eq!(
        names(dir.path()),
        ["app.log", "app.log.1", "app.log.2", "app.log.3"]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("app.log.3")).unwrap(),
        "record 0\n"
    );
}
