//! Floods two appenders, one healthy and one stalled until the flood ends,
//! then prints each appender's counters as one JSON line.
//!
//! ```text
//! cargo run --release --example flood -- --records 1000000 --capacity 1024
//! ```

#[path = "common/mod.rs"]
mod common;

use std::sync::mpsc;

use common::{or_default, Healthy};
use logbus::{AppendError, Appender, OverflowPolicy, Record, Subscription};

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let records: usize = or_default(&args, "--records", 1_000_000)?;
    let capacity: usize = or_default(&args, "--capacity", 1024)?;

    let (release_tx, release_rx) = mpsc::channel();
    let guard = logbus::builder()
        .appender(Subscription::builder("healthy", Healthy::default()))
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
    drop(guard); // flushes: drains every queue and flushes every appender

    let stats = handle.stats();
    println!("{}", serde_json::to_string(&stats.subscriptions)?);
    Ok(())
}
