//! The journal's memory stays within its byte limit plus the documented
//! slack in a long run, also when its records are built from recycled
//! records whose buffers grew on longer messages: alone in its test
//! binary, since it reads the process's resident memory.

mod common;

use logbus::{AppendError, Appender, Journal, LevelFilter, OverflowPolicy, Record, Subscription};

/// Resident memory now, from `/proc/self/status`, in bytes.
fn resident() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kib: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// The slack the journal's docs allow beyond its byte limit
/// (`JOURNAL_SLACK_PER_RECORD` per retained record), plus 4 MiB for what
/// the run itself holds (thread stacks, buffers, the debug subscription's
/// small queue and the recycled-record pool, whose records the journal's
/// path trims as it reuses them).
fn slack(records: usize) -> usize {
    records * logbus::JOURNAL_SLACK_PER_RECORD + (4 << 20)
}

/// Writes nothing and keeps no reference: its records are recycled.
struct Discard;

impl Appender for Discard {
    fn append(&mut self, _record: &Record) -> Result<(), AppendError> {
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Long debug messages go to an appender and are recycled, buffers and
/// all; short info messages are kept by the journal, formatted into those
/// recycled records (a review found 181 MiB resident against 8 MiB
/// counted before the journal gave up what it does not use).
#[test]
fn a_long_run_stays_within_the_byte_limit_plus_the_documented_slack() {
    let limit = 8 << 20;
    let pairs = common::scaled(150_000, 500);
    common::enable_all_levels();
    let broker = logbus::builder()
        // Info and more severe: the debug records are not kept.
        .journal(Journal::new().records(1 << 30).bytes(limit))
        .appender(
            // A small lossless queue: the 4 KiB records it holds are the
            // subscription's, not the journal's.
            Subscription::builder("debug-console", Discard)
                .pattern("debug.#")
                .level(LevelFilter::Debug)
                .capacity(256)
                .overflow(OverflowPolicy::Block),
        )
        .build()
        .unwrap();
    let journal = broker.journal().unwrap();
    let big = "x".repeat(4_000);
    let before = resident();
    let mut peak = 0;
    let mut most = 0;
    for i in 0..pairs {
        log::debug!(logger: &broker, target: "app", "{big}");
        log::info!(
            logger: &broker,
            target: "app::http",
            user = "ann", path = "/a/b/c", status = 200, took = 0.25;
            "request {i:>8} served in {} us", i % 1000
        );
        if i % 5_000 == 0 {
            let stats = journal.stats();
            assert!(stats.bytes <= limit, "{stats:?}");
            most = most.max(stats.records);
            peak = peak.max(resident());
        }
    }
    broker.flush().unwrap();
    peak = peak.max(resident());
    let stats = journal.stats();
    assert!(stats.bytes <= limit, "{stats:?}");
    assert_eq!(stats.released + stats.records as u64, pairs);
    assert!(
        stats.bytes > limit - 1024,
        "{stats:?}: the journal should be full"
    );
    let grown = peak.saturating_sub(before);
    println!(
        "journal: {} records, {} bytes counted; resident grew {} bytes (limit {limit}, slack {})",
        stats.records,
        stats.bytes,
        grown,
        slack(most)
    );
    assert!(
        grown <= limit + slack(most),
        "resident memory grew {grown} bytes: above {limit} + {}",
        slack(most)
    );
}
