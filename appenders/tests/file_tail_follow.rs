//! A reader following the live path the way `tail -F` does sees every
//! record exactly once across many rotations.

mod common;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::mpsc;
use std::thread;

use common::{msg_layout, numbered};
use logbus_appenders::{Appender, FileAppender};

/// Follows `path` like `tail -F`: reads the open file; when the path names
/// another inode, reads the old file to its end, then opens the new one.
struct Follower {
    file: File,
    ino: u64,
    pending: String,
    lines: Vec<String>,
    reopens: usize,
}

impl Follower {
    fn new(path: &Path) -> Follower {
        let file = File::open(path).unwrap();
        let ino = file.metadata().unwrap().ino();
        Follower {
            file,
            ino,
            pending: String::new(),
            lines: Vec::new(),
            reopens: 0,
        }
    }

    fn drain(&mut self) {
        let mut text = String::new();
        self.file.read_to_string(&mut text).unwrap();
        self.pending.push_str(&text);
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            self.lines.push(line.trim_end().to_owned());
        }
    }

    /// Reads until `want` lines are seen.
    fn catch_up(&mut self, path: &Path, want: usize) {
        loop {
            self.drain();
            if self.lines.len() >= want {
                return;
            }
            let ino = fs::metadata(path).unwrap().ino();
            assert_ne!(ino, self.ino, "data flushed but not visible at {path:?}");
            // Rotated: finish the old file, then follow the new one.
            self.drain();
            self.file = File::open(path).unwrap();
            self.ino = ino;
            self.reopens += 1;
        }
    }
}

#[test]
fn tail_follower_sees_every_record_once_across_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    // Lines are 9-12 bytes; a batch of 3 is under 40 bytes, far below
    // max_bytes, so a batch causes at most one rotation and the follower,
    // in lockstep, never misses a whole file.
    let mut appender = FileAppender::builder(&path)
        .max_bytes(120)
        .keep(2)
        .layout(msg_layout())
        .build()
        .unwrap();
    let batches = 150u64;
    let per_batch = 3u64;

    let (flushed_tx, flushed_rx) = mpsc::channel::<usize>();
    let (ack_tx, ack_rx) = mpsc::channel::<()>();
    let reader_path = path.clone();
    let reader = thread::spawn(move || {
        let mut follower = Follower::new(&reader_path);
        for want in flushed_rx {
            follower.catch_up(&reader_path, want);
            ack_tx.send(()).unwrap();
        }
        (follower.lines, follower.reopens)
    });

    let mut seq = 0;
    for _ in 0..batches {
        for _ in 0..per_batch {
            appender.append(&numbered(seq)).unwrap();
            seq += 1;
        }
        appender.flush().unwrap();
        flushed_tx.send(usize::try_from(seq).unwrap()).unwrap();
        ack_rx.recv().unwrap();
    }
    drop(flushed_tx);
    let (lines, reopens) = reader.join().unwrap();

    let expected: Vec<String> = (0..seq).map(|s| format!("record {s}")).collect();
    assert_eq!(lines, expected);
    assert!(reopens >= 20, "only {reopens} rotations followed");
}
