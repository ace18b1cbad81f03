//! Helpers shared by the integration tests: records, clocks, file readers.

#![allow(dead_code, unreachable_pub)]

use std::fs;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use logbus_appenders::{
    Appender, Clock, FileAppender, FileAppenderBuilder, Layout, Level, Record, Topic,
};
use tempfile::TempDir;

/// The record with sequence number `seq` and message `record <seq>`.
pub fn numbered(seq: u64) -> Record {
    Record::builder(Topic::new(Level::Info, "app"))
        .seq(seq)
        .message(format!("record {seq}"))
        .build()
}

/// A layout that makes each line exactly the record's message.
pub fn msg_layout() -> Layout {
    Layout::parse("{msg}").unwrap()
}

/// The lines `record <seq>` for each seq of `seqs`, as [`msg_layout`] writes
/// [`numbered`] records.
pub fn record_lines(seqs: Range<u64>) -> Vec<String> {
    seqs.map(|seq| format!("record {seq}")).collect()
}

/// A fresh temporary directory and `app.log` inside it (the directory is
/// deleted when the returned guard drops).
pub fn temp_log() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    (dir, path)
}

/// A file appender builder at `path` with [`msg_layout`].
pub fn msg_builder(path: &Path) -> FileAppenderBuilder {
    FileAppender::builder(path).layout(msg_layout())
}

/// A file appender at `path` with [`msg_layout`], no rotation.
pub fn msg_file(path: &Path) -> FileAppender {
    msg_builder(path).build().unwrap()
}

/// A file appender at `path` with [`msg_layout`], rotating at `max_bytes`
/// and keeping `keep` rotated files.
pub fn rotating_msg_file(path: &Path, max_bytes: u64, keep: usize) -> FileAppender {
    msg_builder(path)
        .max_bytes(max_bytes)
        .keep(keep)
        .build()
        .unwrap()
}

/// Appends [`numbered`] records for each seq of `seqs`.
pub fn append_numbered(appender: &mut impl Appender, seqs: Range<u64>) {
    for seq in seqs {
        appender.append(&numbered(seq)).unwrap();
    }
}

/// Appends the [`numbered`] record `seq`, then flushes.
pub fn append_flushed(appender: &mut impl Appender, seq: u64) {
    appender.append(&numbered(seq)).unwrap();
    appender.flush().unwrap();
}

/// A writer the test can read back.
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    /// Everything written so far, as UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Capture {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `app.log.<index>`.
pub fn rotated(path: &Path, index: usize) -> PathBuf {
    PathBuf::from(format!("{}.{index}", path.display()))
}

/// The lines of the rotated files, oldest (`.keep`) first, then the live file.
pub fn all_lines(path: &Path, keep: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for index in (1..=keep).rev() {
        if let Ok(text) = fs::read_to_string(rotated(path, index)) {
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines.extend(fs::read_to_string(path).unwrap().lines().map(str::to_owned));
    lines
}

/// A clock the test moves by hand; unix seconds.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn at(secs: u64) -> ManualClock {
        ManualClock(Arc::new(AtomicU64::new(secs)))
    }

    pub fn set(&self, secs: u64) {
        // Relaxed: the value publishes no other memory; the appender runs
        // on the test's thread.
        self.0.store(secs, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::Relaxed))
    }
}

/// The names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Unix seconds of an RFC 3339 time (`2026-12-01T00:00:00Z`).
pub fn at(text: &str) -> u64 {
    let secs = chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp();
    u64::try_from(secs).unwrap()
}

/// Sets the modification time of the file at `path` to `secs` (unix).
pub fn set_modified(path: &Path, secs: u64) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

/// The text of the file `name` in `dir`.
pub fn read_in(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}
