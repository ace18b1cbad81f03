//! Helpers shared by the integration tests: records, clocks, file readers.

#![allow(dead_code, unreachable_pub)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use logbus_appenders::{Clock, Layout, Level, Record, Topic};

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
