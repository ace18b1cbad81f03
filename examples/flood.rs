//! Floods two appenders, one healthy and one stalled until the flood ends,
//! then prints each appender's counters as one JSON line.
//!
//! ```text
//! cargo run --release --example flood -- --records 1000000 --capacity 1024
//! ```

use std::io::Write as _;
use std::sync::mpsc;

use logbus::{AppendError, Appender, OverflowPolicy, Record, Subscription};

/// Formats each record into a reused buffer and discards it: a stand-in for
/// a fast file appender.
struct Healthy {
    line: Vec<u8>,
}

impl Appender for Healthy {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{} {} {}",
            record.level(),
            record.target(),
            record.message()
        );
        std::hint::black_box(&self.line);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Blocks in its first append until the flood is over.
struct Stalled {
    release: Option<mpsc::Receiver<()>>,
}

impl Appender for Stalled {
    fn append(&mut self, _record: &Record) -> Result<(), AppendError> {
        if let Some(release) = self.release.take() {
            let _ = release.recv();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

fn arg(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .ok_or_else(|| format!("{name} needs a value"))?
            .parse()
            .map_err(|e| format!("{name}: {e}")),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let records = arg(&args, "--records", 1_000_000)?;
    let capacity = arg(&args, "--capacity", 1024)?;

    let (release_tx, release_rx) = mpsc::channel();
    let guard = logbus::builder()
        .appender(Subscription::builder(
            "healthy",
            Healthy { line: Vec::new() },
        ))
        .appender(
            Subscription::builder(
                "stalled",
                Stalled {
                    release: Some(release_rx),
                },
            )
            .capacity(capacity)
            .overflow(OverflowPolicy::DropOldest),
        )
        .install()?;
    let handle = guard.handle();

    for i in 0..records {
        log::info!(target: "app::http", "request {} served in {} us", i, i % 1000);
    }
    release_tx.send(())?;
    drop(guard); // drains every queue, flushes, joins the workers

    let stats = handle.stats();
    println!("{}", serde_json::to_string(&stats.subscriptions)?);
    Ok(())
}
