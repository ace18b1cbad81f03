//! Replay and loss-free replacement: a debug console attached while the
//! program runs starts with the last records it would have seen, then
//! continues live; an appender replaced under load loses and repeats
//! nothing. Prints the numbers as JSON on its last line.
//!
//! ```text
//! cargo run --example replay
//! ```

use std::thread;

use logbus::{Journal, JournalQuery, LevelFilter, Memory, Replay, Subscription};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (file, written_before) = Memory::new();
    let broker = logbus::builder()
        .journal(Journal::new().records(10_000))
        .appender(Subscription::builder("file", file))
        .build()?;
    log::set_max_level(LevelFilter::Trace);

    // Four threads publish 10,000 records each.
    let publishers: Vec<_> = (0..4)
        .map(|t| {
            let broker = broker.handle();
            thread::spawn(move || {
                for i in 0..10_000 {
                    log::info!(logger: &broker, target: "app::worker", "thread {t} record {i}");
                }
            })
        })
        .collect();

    // Meanwhile: a debug console that starts with the last 5 records, and
    // the file appender replaced by another.
    let (console, console_records) = Memory::new();
    let late =
        broker.subscribe(Subscription::builder("console", console).replay(Replay::Last(5)))?;
    let (file2, written_after) = Memory::new();
    let (_, old_stats) = broker.replace("file", Subscription::builder("file", file2))?;

    for p in publishers {
        p.join().expect("a publisher panicked");
    }
    broker.flush()?;

    let report = late.replay_report().expect("a replaying subscription");
    println!("the console's first records (replayed):");
    for record in console_records.records().iter().take(report.records) {
        println!("  #{} {}", record.seq(), record.message());
    }
    let journal = broker.journal().expect("configured above");
    let last = journal.iter(JournalQuery::new().from(journal.stats().newest.unwrap_or(0)))?;
    for record in last {
        println!(
            "the journal's newest record: #{} {}",
            record.seq(),
            record.message()
        );
    }
    let summary = serde_json::json!({
        "replayed": report.records,
        "live_from": report.live_from,
        "console_written": late.stats().written,
        "file_before_replace": old_stats.written,
        "file_after_replace": written_after.len(),
        "file_total": old_stats.written as usize + written_after.len(),
        "published": 40_000,
        "journal": journal.stats(),
    });
    assert_eq!(written_before.len() + written_after.len(), 40_000);
    println!("{summary}");
    Ok(())
}
