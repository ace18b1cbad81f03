//! The journal's memory stays within its byte limit in a long run: alone
//! in its test binary, since it reads the process's resident memory.

mod common;

use logbus::{Journal, JournalQuery};

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

/// The slack the journal's docs allow beyond its byte limit: the
/// allocator's overhead on each retained record (see `Journal`), plus a
/// fixed 2 MiB for what the run itself allocates (thread stacks, the
/// route cache, the recycled-record pool).
fn slack(records: usize) -> usize {
    records * logbus::JOURNAL_SLACK_PER_RECORD + (2 << 20)
}

#[test]
fn a_long_run_stays_within_the_byte_limit_plus_the_documented_slack() {
    let limit = 8 << 20;
    let total = common::scaled(600_000, 2_000);
    common::enable_all_levels();
    let broker = logbus::builder()
        .journal(Journal::new().records(1 << 30).bytes(limit))
        .build()
        .unwrap();
    let journal = broker.journal().unwrap();
    let before = resident();
    let mut peak = 0;
    let mut most = 0;
    for i in 0..total {
        log::info!(logger: &broker, target: "app::http", "request {i:>8} served in {} us with a message of some length", i % 1000);
        if i % 10_000 == 0 {
            let stats = journal.stats();
            assert!(stats.bytes <= limit, "{stats:?}");
            most = most.max(stats.records);
            peak = peak.max(resident());
        }
    }
    let stats = journal.stats();
    assert!(stats.bytes <= limit, "{stats:?}");
    assert_eq!(stats.released + stats.records as u64, total);
    let one = journal
        .iter(JournalQuery::new())
        .unwrap()
        .next()
        .unwrap()
        .approx_size();
    assert!(
        stats.bytes > limit - 2 * one,
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
