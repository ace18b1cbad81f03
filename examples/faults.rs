//! Logs N records to a healthy appender and to one that fails every M-th record on
//! every attempt, with a JSON file as the dead-letter route; prints the counters.
//!
//! ```text
//! cargo run --release --example faults -- --records 100000 --fail-every 1000 --dead-letters dead.ndjson
//! ```
//!
//! The last line of output is one JSON object:
//! `{"healthy":{...},"faulty":{...},"dead_letters":{...}}`.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::{required, Healthy};
use logbus::appenders::{FileAppender, JsonAppender};
use logbus::{
    AppendError, Appender, CircuitBreaker, Operation, OverflowPolicy, Record, RetryPolicy,
    Subscription,
};

/// Fails, on every attempt, the records whose index (the number after
/// `record ` in the message) is a multiple of `every`; accepts the others.
struct Faulty {
    every: u64,
}

impl Appender for Faulty {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let index = record
            .message()
            .strip_prefix("record ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok());
        match index {
            Some(i) if i % self.every == 0 => Err(AppendError::new(
                Operation::Write,
                format!("injected failure of record {i}"),
            )),
            _ => Ok(()),
        }
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let records: u64 = required(&args, "--records")?;
    let every: u64 = required(&args, "--fail-every")?;
    let dead_letters: String = required(&args, "--dead-letters")?;
    if every == 0 {
        return Err("--fail-every must be at least 1".into());
    }

    // Three attempts 100 us apart, and no circuit breaker: every failing
    // record gets all its attempts, so exactly records / every of them are
    // dead-lettered.
    let retry = RetryPolicy::new()
        .initial_backoff(Duration::from_micros(100))
        .max_backoff(Duration::from_millis(1));
    let guard = logbus::builder()
        // `Block` on every queue: the caller waits rather than drop, so
        // nothing is lost to overflow and the counts are exact.
        .appender(
            Subscription::builder("healthy", Healthy::default()).overflow(OverflowPolicy::Block),
        )
        .appender(
            Subscription::builder("faulty", Faulty { every })
                .overflow(OverflowPolicy::Block)
                .retry(retry)
                .circuit_breaker(CircuitBreaker::disabled()),
        )
        .dead_letter(
            Subscription::builder(
                "dead_letters",
                JsonAppender::file(FileAppender::builder(&dead_letters))?,
            )
            .overflow(OverflowPolicy::Block),
        )
        .install()?;
    let handle = guard.handle();

    for i in 0..records {
        log::info!(target: "app::http", "record {} served in {} us", i, i % 1000);
    }
    drop(guard); // flushes every queue (dead letters last) and every appender

    let stats = handle.stats();
    let sub = |name: &str| serde_json::to_string(&stats.subscriptions[name]);
    println!(
        "{{\"healthy\":{},\"faulty\":{},\"dead_letters\":{}}}",
        sub("healthy")?,
        sub("faulty")?,
        sub("dead_letters")?
    );
    Ok(())
}
