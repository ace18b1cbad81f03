//! Rotated files compressed to `.gz` (feature `gzip`).

#![cfg(feature = "gzip")]

mod common;

use std::fs::{self, File};
use std::io::Read;

use common::{msg_layout, numbered};
use logbus_appenders::{Appender, Compression, FileAppender};

fn gunzip(path: &std::path::Path) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn rotated_files_are_gzipped_and_shifted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let keep = 3;
    let mut appender = FileAppender::builder(&path)
        .max_bytes(20)
        .keep(keep)
        .compression(Compression::Gzip)
        .layout(msg_layout())
        .build()
        .unwrap();
    let total = 10;
    for seq in 0..total {
        appender.append(&numbered(seq)).unwrap();
    }
    appender.flush().unwrap();
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["app.log", "app.log.1.gz", "app.log.2.gz", "app.log.3.gz"]
    );
    let mut lines = String::new();
    for index in (1..=keep).rev() {
        lines.push_str(&gunzip(&dir.path().join(format!("app.log.{index}.gz"))));
    }
    lines.push_str(&fs::read_to_string(&path).unwrap());
    // Two records per file: the last 8 records remain.
    let expected: String = (2..total).map(|s| format!("record {s}\n")).collect();
    assert_eq!(lines, expected);
}
