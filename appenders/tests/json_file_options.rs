//! A JSON file takes every file option but the layout: rotation by time and
//! size with its clock, retention, mode; a layout is refused, not ignored.

mod common;

use std::fs;

use common::{numbered, rotated, ManualClock};
use logbus_appenders::{Appender, FileAppender, FileErrorKind, JsonAppender, Layout, Rotation};

/// 2026-11-29T00:00:00Z.
const MIDNIGHT: u64 = 1_795_910_400;

fn seqs(path: &std::path::Path) -> Vec<u64> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn time_rotation_with_an_injected_clock_and_retention() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let clock = ManualClock::at(MIDNIGHT - 1);
    let builder = FileAppender::builder(&path)
        .rotate_every(Rotation::DAILY)
        .keep(1)
        .mode(0o600)
        .clock(clock.clone());
    let mut json = JsonAppender::file(builder).unwrap();
    json.append(&numbered(0)).unwrap();
    clock.set(MIDNIGHT);
    json.append(&numbered(1)).unwrap();
    clock.set(MIDNIGHT + 86_400);
    json.append(&numbered(2)).unwrap();
    json.flush().unwrap();
    assert_eq!(seqs(&path), [2]);
    assert_eq!(seqs(&rotated(&path, 1)), [1]);
    // keep(1): the first day's file is gone.
    assert!(!rotated(&path, 2).exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn size_rotation_keeps_whole_objects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let mut json =
        JsonAppender::file(FileAppender::builder(&path).max_bytes(400).keep(20)).unwrap();
    let batch: Vec<_> = (0..20)
        .map(|seq| std::sync::Arc::new(numbered(seq)))
        .collect();
    json.append_batch(&batch).unwrap();
    let mut all = Vec::new();
    for index in (1..=20).rev() {
        if rotated(&path, index).exists() {
            assert!(fs::metadata(rotated(&path, index)).unwrap().len() <= 400);
            all.extend(seqs(&rotated(&path, index)));
        }
    }
    all.extend(seqs(&path));
    assert_eq!(all, (0..20).collect::<Vec<_>>());
}

#[test]
fn a_layout_is_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/app.ndjson");
    let builder = FileAppender::builder(&path).layout(Layout::parse("{msg}").unwrap());
    let err = JsonAppender::file(builder).unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::Config);
    assert_eq!(err.path(), path);
    assert!(
        err.to_string()
            .contains("a layout has no effect on a JSON appender"),
        "{err}"
    );
    assert!(!path.parent().unwrap().exists());
}
