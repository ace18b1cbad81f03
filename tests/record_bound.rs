//! The record size bound: a 64 MiB message is cut to the bound on the
//! caller's thread, marked and counted, and costs no more memory than the
//! bound plus a slack, then nothing stays resident. Alone in its test
//! binary: it reads the process's resident memory.

mod common;

use logbus::appenders::{FileAppender, Layout};
use logbus::{Memory, Subscription, Value, DEFAULT_MAX_RECORD_BYTES};

/// `VmHWM` (peak) and `VmRSS` (now) from `/proc/self/status`, in bytes.
fn memory() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| -> usize {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in /proc/self/status"));
        line.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse::<usize>().ok())
            .expect("kB")
            * 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// What logging one huge record may add to the peak: the bound, copied
/// once into the record and once into the file appender's buffer, plus
/// 4 MiB for the broker's own start-up (thread stacks, buffers).
const SLACK: usize = 4 << 20;

#[test]
fn a_64_mib_message_and_value_are_cut_marked_counted_and_cost_no_memory() {
    common::enable_all_levels();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let (memory_appender, captured) = Memory::new();
    let broker = logbus::builder()
        .appender(Subscription::builder(
            "file",
            FileAppender::builder(&path)
                .layout(Layout::parse("{msg}{kv}").unwrap())
                .build()
                .unwrap(),
        ))
        .appender(Subscription::builder("memory", memory_appender))
        .build()
        .unwrap();
    log::info!(logger: &broker, "warm-up");
    broker.flush().unwrap();

    let huge = "é".repeat(32 << 20); // 64 MiB, two bytes a char
    let (peak_before, _) = memory();
    let (_, resident_before) = memory();
    log::info!(logger: &broker, blob = huge.as_str(); "{huge}");
    log::info!(logger: &broker, "{} and {}", huge, "more");
    broker.flush().unwrap();
    let (peak_after, _) = memory();
    drop(huge);
    let _ = captured.take();
    let (_, resident_after) = memory();

    let bound = DEFAULT_MAX_RECORD_BYTES;
    assert!(
        peak_after.saturating_sub(peak_before) <= 2 * bound + SLACK,
        "the peak grew {} bytes",
        peak_after - peak_before
    );
    assert!(
        resident_after <= resident_before + SLACK,
        "{} bytes stayed resident",
        resident_after.saturating_sub(resident_before)
    );
    assert_eq!(broker.stats().truncated, 2);

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let dropped = (64 << 20) - bound;
    // The message: the bound, then the marker; the value likewise.
    let first = lines[1];
    let message_end = first.find("…[truncated").unwrap();
    assert_eq!(message_end, bound);
    assert!(first[..message_end].chars().all(|c| c == 'é'));
    assert!(
        first.contains(&format!("…[truncated {dropped} bytes]")),
        "{}",
        &first[bound..bound + 60]
    );
    assert!(first.contains(" blob="), "the value is kept, bounded");
    assert!(first.len() < 2 * bound + 200);
    // Formatting stopped at the chunk after the bound: " and more" was
    // never formatted.
    let second = lines[2];
    assert!(
        second.ends_with(&format!("…[truncated {dropped}+ bytes]")),
        "{}",
        &second[bound..]
    );
}

#[test]
fn records_within_the_bound_are_untouched() {
    let broker = common::broker();
    let (memory, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("m", memory))
        .unwrap();
    let fits = "x".repeat(DEFAULT_MAX_RECORD_BYTES);
    log::info!(logger: &broker, v = fits.as_str(); "{fits}");
    broker.flush().unwrap();
    let records = captured.records();
    assert_eq!(records[0].message(), fits);
    assert_eq!(records[0].get("v"), Some(&Value::from(fits.as_str())));
    assert_eq!(broker.stats().truncated, 0);
}
