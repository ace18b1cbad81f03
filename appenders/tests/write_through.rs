//! `Ok` means written: the file, JSON and console appenders hand a call's
//! lines to the OS before returning, report a failed write for exactly the
//! records it lost, keep nothing of them, and terminate a partial line.

mod common;

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use common::{msg_layout, numbered};
use logbus_appenders::{
    Appender, BatchError, ColorMode, Console, ConsoleTarget, FileAppender, JsonAppender, Level,
    Operation, Record, Topic,
};

/// A writer that takes at most `budget` more bytes (all of them when
/// `None`), then fails with `StorageFull`, like a disk filling up.
#[derive(Clone, Default)]
struct Disk(Arc<Mutex<DiskState>>);

#[derive(Default)]
struct DiskState {
    data: Vec<u8>,
    budget: Option<usize>,
    writes: usize,
}

impl Disk {
    fn with_budget(budget: usize) -> Disk {
        let disk = Disk::default();
        disk.set_budget(Some(budget));
        disk
    }

    fn set_budget(&self, budget: Option<usize>) {
        self.0.lock().unwrap().budget = budget;
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().data.clone()).unwrap()
    }

    fn writes(&self) -> usize {
        self.0.lock().unwrap().writes
    }
}

impl Write for Disk {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut state = self.0.lock().unwrap();
        state.writes += 1;
        let n = match state.budget {
            // ENOSPC: what a full disk answers.
            Some(0) => return Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            Some(budget) => {
                let n = data.len().min(budget);
                state.budget = Some(budget - n);
                n
            }
            None => data.len(),
        };
        state.data.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn batch(seqs: std::ops::Range<u64>) -> Vec<Arc<Record>> {
    seqs.map(|seq| Arc::new(numbered(seq))).collect()
}

fn msgs(seqs: std::ops::Range<u64>) -> String {
    seqs.map(|seq| format!("record {seq}\n")).collect()
}

fn console_on(disk: &Disk) -> Console {
    Console::builder()
        .layout(msg_layout())
        .color(ColorMode::Never)
        .target(ConsoleTarget::Stdout)
        .build_with_writers(disk.clone(), io::sink())
}

/// Does what the broker's worker does with a batch: counts the records
/// `append_batch` reports written, retries the failing one with `append`
/// (once), and goes on with the rest in a new `append_batch`.
fn deliver(appender: &mut dyn Appender, records: &[Arc<Record>]) -> (usize, Vec<u64>) {
    let (mut written, mut failed) = (0, Vec::new());
    let mut start = 0;
    while start < records.len() {
        match appender.append_batch(&records[start..]) {
            Ok(()) => {
                written += records.len() - start;
                break;
            }
            Err(BatchError { written: n, .. }) => {
                written += n;
                let record = &records[start + n];
                match appender.append(record) {
                    Ok(()) => written += 1,
                    Err(_) => failed.push(record.seq()),
                }
                start += n + 1;
            }
        }
    }
    (written, failed)
}

#[test]
fn json_on_dev_full_reports_the_whole_batch_unwritten() {
    let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut json = JsonAppender::writer(full);
    let BatchError { written, error } = json.append_batch(&batch(0..5)).unwrap_err();
    assert_eq!(written, 0);
    assert_eq!(error.operation(), Operation::Write);
    assert_eq!(error.io_kind(), Some(io::ErrorKind::StorageFull));
    let err = json.append(&numbered(0)).unwrap_err();
    assert_eq!(err.io_kind(), Some(io::ErrorKind::StorageFull));
    // Nothing was kept for flush to write (or fail on).
    json.flush().unwrap();
}

#[test]
fn file_on_dev_full_reports_the_whole_batch_unwritten() {
    let mut file = FileAppender::builder("/dev/full")
        .layout(msg_layout())
        .build()
        .unwrap();
    let BatchError { written, error } = file.append_batch(&batch(0..5)).unwrap_err();
    assert_eq!(written, 0);
    assert_eq!(error.io_kind(), Some(io::ErrorKind::StorageFull));
    assert!(error.to_string().contains("/dev/full"), "{error}");
    file.flush().unwrap();
}

#[test]
fn json_to_a_real_file_is_written_by_append_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.ndjson");
    let mut json = JsonAppender::writer(File::create(&path).unwrap());
    json.append_batch(&batch(0..3)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn a_full_disk_that_frees_up_gets_each_record_once() {
    for make in [json_on as fn(&Disk) -> Box<dyn Appender>, boxed_console] {
        let disk = Disk::with_budget(0);
        let mut appender = make(&disk);
        let records = batch(0..4);
        let err = appender.append_batch(&records).unwrap_err();
        assert_eq!(err.written, 0);
        assert_eq!(err.error.io_kind(), Some(io::ErrorKind::StorageFull));
        assert_eq!(disk.text(), "");
        // Space again: the retry and the rest of the batch, each once.
        disk.set_budget(None);
        appender.append(&records[0]).unwrap();
        appender.append_batch(&records[1..]).unwrap();
        appender.flush().unwrap();
        let seqs = seqs_of(&disk.text());
        assert_eq!(seqs, vec![0, 1, 2, 3]);
    }
}

#[test]
fn a_write_cut_short_counts_only_whole_lines_and_terminates_the_partial_one() {
    // "record N\n" is 9 bytes: 22 bytes hold two lines and 4 bytes of the
    // third.
    let disk = Disk::with_budget(22);
    let mut console = console_on(&disk);
    let records = batch(0..5);
    let BatchError { written, error } = console.append_batch(&records).unwrap_err();
    assert_eq!(written, 2);
    assert_eq!(error.io_kind(), Some(io::ErrorKind::StorageFull));
    assert_eq!(disk.text(), "record 0\nrecord 1\nreco");

    // The broker retries record 2 alone: it is written once, on its own line.
    disk.set_budget(None);
    console.append(&records[2]).unwrap();
    assert_eq!(disk.text(), "record 0\nrecord 1\nreco\nrecord 2\n");
    // Then the rest, with no stray line break and nothing repeated.
    console.append_batch(&records[3..]).unwrap();
    assert_eq!(
        disk.text(),
        format!("record 0\nrecord 1\nreco\n{}", msgs(2..5))
    );
}

#[test]
fn json_cut_short_mid_line_is_retried_once_and_every_whole_line_parses() {
    let records = batch(0..6);
    // The exact lines, from a writer with no limit.
    let reference = Disk::default();
    let mut json = JsonAppender::writer(reference.clone());
    json.append_batch(&records).unwrap();
    let lines: Vec<String> = reference.text().lines().map(str::to_owned).collect();
    let budget = lines[0].len() + 1 + lines[1].len() + 1 + lines[2].len() / 2;

    let disk = Disk::with_budget(budget);
    let mut json = JsonAppender::writer(disk.clone());
    let err = json.append_batch(&records).unwrap_err();
    assert_eq!(err.written, 2);
    disk.set_budget(None);
    json.append(&records[2]).unwrap();
    json.append_batch(&records[3..]).unwrap();
    let text = disk.text();
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got.len(), 7, "{text}");
    // One partial line, terminated; every other line whole, each once.
    assert_eq!(got[2], &lines[2][..lines[2].len() / 2]);
    let mut whole: Vec<&str> = got.clone();
    whole.remove(2);
    assert_eq!(whole, lines.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn the_broker_loop_counts_exactly_what_reached_the_disk() {
    // "record N\n" is 9 bytes below 10, 10 bytes from 10 to 99: room for
    // 20 whole lines and part of the 21st, then full for good.
    let disk = Disk::with_budget(10 * 9 + 10 * 10 + 5);
    let mut console = console_on(&disk);
    let records = batch(0..60);
    let (written, failed) = deliver(&mut console, &records);
    assert_eq!(written, 20);
    assert_eq!(disk.text(), format!("{}recor", msgs(0..20)));
    assert_eq!(failed, (20..60).collect::<Vec<_>>());
}

#[test]
fn a_batch_is_one_write() {
    let disk = Disk::default();
    let mut console = console_on(&disk);
    console.append_batch(&batch(0..100)).unwrap();
    assert_eq!(disk.writes(), 1);
    assert_eq!(disk.text(), msgs(0..100));
    console.flush().unwrap();
    assert_eq!(disk.writes(), 1);
}

#[test]
fn split_console_keeps_order_and_counts_across_streams() {
    let (out, err) = (Disk::default(), Disk::with_budget(0));
    let mut console = Console::builder()
        .layout(msg_layout())
        .color(ColorMode::Never)
        .target(ConsoleTarget::Split)
        .build_with_writers(out.clone(), err.clone());
    let record = |level, msg: &str| {
        Arc::new(
            Record::builder(Topic::new(level, "app"))
                .message(msg.to_owned())
                .build(),
        )
    };
    let records = vec![
        record(Level::Info, "1"),
        record(Level::Info, "2"),
        record(Level::Warn, "3"),
        record(Level::Info, "4"),
    ];
    let BatchError { written, .. } = console.append_batch(&records).unwrap_err();
    // The two info lines went out before the warning was tried.
    assert_eq!(written, 2);
    assert_eq!(out.text(), "1\n2\n");
    err.set_budget(None);
    console.append(&records[2]).unwrap();
    console.append_batch(&records[3..]).unwrap();
    assert_eq!(out.text(), "1\n2\n4\n");
    assert_eq!(err.text(), "3\n");
}

fn json_on(disk: &Disk) -> Box<dyn Appender> {
    Box::new(JsonAppender::writer(disk.clone()))
}

fn boxed_console(disk: &Disk) -> Box<dyn Appender> {
    Box::new(console_on(disk))
}

/// The `seq` of each line, JSON or `record N`.
fn seqs_of(text: &str) -> Vec<u64> {
    text.lines()
        .map(
            |line| match serde_json::from_str::<serde_json::Value>(line) {
                Ok(value) => value["seq"].as_u64().unwrap(),
                Err(_) => line.trim_start_matches("record ").parse().unwrap(),
            },
        )
        .collect()
}
