//! Hostile file systems: symlinks refused, unwritable paths and full disks
//! reported as typed errors.

mod common;

use std::fs;
use std::io;
use std::os::unix::fs::symlink;

use common::{msg_layout, numbered};
use logbus_appenders::{Appender, FileAppender, FileErrorKind, Operation};

#[test]
fn a_symlink_at_the_log_path_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let path = dir.path().join("app.log");
    symlink(&victim, &path).unwrap();

    let err = FileAppender::builder(&path).build().unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::Symlink);
    assert_eq!(err.path(), path);
    assert!(err.to_string().contains("symlink"), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn a_dangling_symlink_at_the_log_path_is_refused_and_nothing_created() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("would-be-created");
    let path = dir.path().join("app.log");
    symlink(&target, &path).unwrap();
    let err = FileAppender::builder(&path).build().unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::Symlink);
    assert!(!target.exists());
}

#[test]
fn a_symlink_at_a_rotation_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let path = dir.path().join("app.log");
    symlink(&victim, dir.path().join("app.log.2")).unwrap();

    let mut appender = FileAppender::builder(&path)
        .max_bytes(10)
        .keep(3)
        .layout(msg_layout())
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    let err = appender.append(&numbered(1)).unwrap_err();
    assert_eq!(err.operation(), Operation::Rotate);
    assert!(err.to_string().contains("symlink"), "{err}");
    // Nothing was renamed: the live file still holds the first record.
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
    assert!(!dir.path().join("app.log.1").exists());
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(fs::symlink_metadata(dir.path().join("app.log.2"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn an_unwritable_directory_is_a_typed_error_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    // Root ignores permission bits; a regular file where a directory should
    // be stops everyone.
    let err = FileAppender::builder(file.join("sub/app.log"))
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::CreateDir);
    assert!(std::error::Error::source(&err).is_some());

    // The path itself is a directory.
    let err = FileAppender::builder(dir.path()).build().unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::Open);
    assert_eq!(err.io_kind(), Some(io::ErrorKind::IsADirectory));
}

#[test]
fn a_full_disk_reaches_the_caller_as_storage_full() {
    let mut appender = FileAppender::builder("/dev/full")
        .layout(msg_layout())
        .build()
        .unwrap();
    // Reported by the append that lost the record, not by a later flush.
    let err = appender.append(&numbered(0)).unwrap_err();
    assert_eq!(err.operation(), Operation::Write, "{err}");
    assert_eq!(err.io_kind(), Some(io::ErrorKind::StorageFull));
    assert!(err.to_string().contains("/dev/full"), "{err}");
    // Still failing, still reported, never swallowed.
    assert_eq!(
        appender.append(&numbered(1)).unwrap_err().io_kind(),
        Some(io::ErrorKind::StorageFull)
    );
    // Nothing is left over for flush to fail on.
    appender.flush().unwrap();
}
