//! Logs `record <i>` N times into `DIR/app.log` with size rotation, for
//! watching with `tail -F` or checking retention.
//!
//! ```text
//! cargo run --release --example rotate -- --dir DIR --records N --max-bytes B --keep K [--rate R]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use logbus::appenders::FileAppender;
use logbus::{OverflowPolicy, Subscription};

fn value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn number(args: &[String], name: &str, default: Option<u64>) -> Result<u64, String> {
    match value(args, name) {
        Some(v) => v.parse().map_err(|e| format!("{name} {v}: {e}")),
        None => default.ok_or_else(|| format!("{name} is required")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(value(&args, "--dir").ok_or("--dir is required")?);
    let records = number(&args, "--records", Some(100_000))?;
    let max_bytes = number(&args, "--max-bytes", Some(1024 * 1024))?;
    let keep = number(&args, "--keep", Some(5))?;
    let rate = value(&args, "--rate").map(str::parse::<u64>).transpose()?;

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
