//! Logs `record <i>` N times into `DIR/app.log` with size rotation, for
//! watching with `tail -F` or checking retention.
//!
//! ```text
//! cargo run --release --example rotate -- --dir DIR --records N --max-bytes B --keep K [--rate R]
//! ```

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{flag, or_default, required};
use logbus::appenders::FileAppender;
use logbus::{OverflowPolicy, Subscription};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir: PathBuf = required(&args, "--dir")?;
    let records: u64 = or_default(&args, "--records", 100_000)?;
    let max_bytes: u64 = or_default(&args, "--max-bytes", 1024 * 1024)?;
    let keep: u64 = or_default(&args, "--keep", 5)?;
    let rate: Option<u64> = flag(&args, "--rate")?;

    let file = FileAppender::builder(dir.join("app.log"))
        .max_bytes(max_bytes)
        .keep(keep as usize)
        .build()?;
    // Block: this example is about what reaches the files, so nothing may be
    // dropped even when the disk is slower than the loop.
    let guard = logbus::builder()
        .appender(Subscription::builder("file", file).overflow(OverflowPolicy::Block))
        .install()?;

    let start = Instant::now();
    for i in 0..records {
        if let Some(rate) = rate.filter(|&r| r > 0) {
            // Pace the producer: record i is due at i / rate seconds.
            let due = start + Duration::from_secs_f64(i as f64 / rate as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        log::info!(target: "app", "record {i}");
    }
    let report = guard.shutdown();
    eprintln!("{}", serde_json::to_string(&report.subscriptions)?);
    Ok(())
}
