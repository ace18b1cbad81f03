//! Size rotation: exactly `keep` rotated files plus the live one, and every
//! record once, in order, across them.

mod common;

use std::fs;
use std::io;
use std::path::Path;

use common::{
    all_lines, append_numbered, msg_file, numbered, record_lines, rotated, rotating_msg_file,
    temp_log,
};
use logbus_appenders::{Appender, Operation};

/// Exactly `keep` rotated files, none empty or over `max_bytes`, and the
/// records `0..total` once, in order, across them and the live file.
#[track_caller]
fn assert_rotated_without_loss(path: &std::path::Path, keep: usize, max_bytes: u64, total: u64) {
    for index in 1..=keep {
        let size = fs::metadata(rotated(path, index)).unwrap().len();
        assert!(size > 0 && size <= max_bytes, ".{index} has {size} bytes");
    }
    assert!(!rotated(path, keep + 1).exists());
    assert_eq!(all_lines(path, keep), record_lines(0..total));
}

#[test]
fn size_rotation_keeps_k_files_and_every_line_once_in_order() {
    let (_dir, path) = temp_log();
    let keep = 4;
    let max_bytes = 200;
    let mut appender = rotating_msg_file(&path, max_bytes, keep);
    // "record N\n" is 9 or 10 bytes: 20 lines fill a rotated file, so 90
    // records make 4 rotated files and a live one, and nothing is deleted.
    let total = 90;
    for seq in 0..total {
        appender.append(&numbered(seq)).unwrap();
        if seq % 7 == 0 {
            appender.flush().unwrap();
        }
    }
    appender.flush().unwrap();
    assert_rotated_without_loss(&path, keep, max_bytes, total);
}

#[test]
fn old_files_beyond_keep_are_deleted_and_the_rest_is_a_suffix_in_order() {
    let (dir, path) = temp_log();
    let keep = 3;
    let mut appender = rotating_msg_file(&path, 100, keep);
    let total = 1000;
    append_numbered(&mut appender, 0..total);
    appender.flush().unwrap();
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), keep + 1, "{names:?}");
    for index in 1..=keep {
        assert!(rotated(&path, index).exists());
    }
    let lines = all_lines(&path, keep);
    let first = total - lines.len() as u64;
    assert_eq!(lines, record_lines(first..total));
    // Each rotated file was full: adding the next line would pass 100 bytes.
    for index in 1..=keep {
        let size = fs::metadata(rotated(&path, index)).unwrap().len();
        assert!((90..=100).contains(&size), ".{index}: {size}");
    }
}

#[test]
fn an_existing_file_is_appended_to_never_truncated() {
    let (_dir, path) = temp_log();
    fs::write(&path, "old line\n").unwrap();
    let mut appender = msg_file(&path);
    appender.append(&numbered(1)).unwrap();
    appender.flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "old line\nrecord 1\n");
}

#[test]
fn a_record_larger_than_max_bytes_gets_a_file_of_its_own() {
    let (_dir, path) = temp_log();
    let mut appender = rotating_msg_file(&path, 5, 5);
    append_numbered(&mut appender, 0..3);
    appender.flush().unwrap();
    assert_eq!(fs::read_to_string(rotated(&path, 2)).unwrap(), "record 0\n");
    assert_eq!(fs::read_to_string(rotated(&path, 1)).unwrap(), "record 1\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 2\n");
}

#[test]
fn keep_zero_deletes_instead_of_rotating() {
    let (dir, path) = temp_log();
    let mut appender = rotating_msg_file(&path, 20, 0);
    append_numbered(&mut appender, 0..5);
    appender.flush().unwrap();
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 4\n");
}

#[test]
fn directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/app.log");
    let mut appender = msg_file(&path);
    assert_eq!(appender.path(), path);
    appender.append(&numbered(0)).unwrap();
    appender.flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
}

#[test]
fn a_batch_rotates_between_its_records() {
    let (_dir, path) = temp_log();
    let keep = 4;
    let max_bytes = 200;
    let mut appender = rotating_msg_file(&path, max_bytes, keep);
    // As above, in three batches: rotations happen inside each batch, and
    // every line is in a file when `append_batch` returns.
    let total = 90;
    let records: Vec<_> = (0..total)
        .map(|s| std::sync::Arc::new(numbered(s)))
        .collect();
    for chunk in records.chunks(40) {
        appender.append_batch(chunk).unwrap();
    }
    assert_rotated_without_loss(&path, keep, max_bytes, total);
}

#[test]
fn a_shift_never_reaches_a_number_past_the_range_it_reads() {
    let (dir, path) = temp_log();
    // The last number a listing reads, and one past it: not a rotated file.
    let planted = dir.path().join(format!("app.log.{}", usize::MAX - 1));
    let users = dir.path().join(format!("app.log.{}", usize::MAX));
    fs::write(&planted, "planted\n").unwrap();
    fs::write(&users, "user's file\n").unwrap();
    let mut appender = common::msg_builder(&path)
        .max_bytes(10)
        .keep_all()
        .build()
        .unwrap();
    appender.append(&numbered(0)).unwrap();
    let err = appender.append(&numbered(1)).unwrap_err();
    assert_eq!(err.operation(), Operation::Rotate);
    assert_eq!(err.io_kind(), Some(io::ErrorKind::AlreadyExists));
    assert!(err.to_string().contains("no free name"), "{err}");
    // Refused before anything moved.
    assert_eq!(fs::read_to_string(&users).unwrap(), "user's file\n");
    assert_eq!(fs::read_to_string(&planted).unwrap(), "planted\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
    assert!(!rotated(&path, 1).exists());
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[track_caller]
fn assert_fifo(path: &Path) {
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(path).unwrap().file_type().is_fifo());
}

#[test]
fn a_fifo_at_a_numbered_target_is_refused_not_replaced() {
    // At `.1`: the live file's own target.
    let (_dir, path) = temp_log();
    mkfifo(&rotated(&path, 1));
    let mut appender = rotating_msg_file(&path, 10, 3);
    appender.append(&numbered(0)).unwrap();
    let err = appender.append(&numbered(1)).unwrap_err();
    assert_eq!(err.operation(), Operation::Rotate);
    assert_eq!(err.io_kind(), Some(io::ErrorKind::AlreadyExists));
    assert_fifo(&rotated(&path, 1));
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 0\n");
    drop(appender);

    // At `.2`: the target of a shift, refused before `.1` or the live file
    // move.
    let (_dir, path) = temp_log();
    mkfifo(&rotated(&path, 2));
    let mut appender = rotating_msg_file(&path, 10, 3);
    appender.append(&numbered(0)).unwrap();
    appender.append(&numbered(1)).unwrap();
    let err = appender.append(&numbered(2)).unwrap_err();
    assert_eq!(err.io_kind(), Some(io::ErrorKind::AlreadyExists), "{err}");
    assert!(err.to_string().contains(".2"), "{err}");
    assert_fifo(&rotated(&path, 2));
    assert_eq!(fs::read_to_string(rotated(&path, 1)).unwrap(), "record 0\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "record 1\n");
}
