//! Logs N records to a healthy appender and to one that fails every M-th record on
//! every attempt, with a JSON file as the dead-letter route; prints the counters.
//!
//! ```text
//! cargo run --release --example faults -- --records 100000 --fail-every 1000 --dead-letters dead.ndjson
//! ```
//!
//! The last line of output is one JSON object:
//! `{"healthy":{...},"faulty":{...},"dead_letters":{...}}`.

use std::io::Write as _;
use std::time::Duration;

use logbus::appenders::{FileAppender, JsonAppender};
use logbus::{
    AppendError, Appender, CircuitBreaker, Operation, OverflowPolicy, Record, RetryPolicy,
    Subscription,
};

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

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let i = args
        .iter()
        .position(|a| a == name)
        .ok_or_else(|| format!("missing {name}"))?;
    args.get(i + 1)
        .ok_or_else(|| format!("{name} needs a value"))?
        .parse()
        .map_err(|e| format!("{name}: {e}"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let records: u64 = arg(&args, "--records")?;
    let every: u64 = arg(&args, "--fail-every")?;
    let dead_letters: String = arg(&args, "--dead-letters")?;
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
            Subscription::builder("healthy", Healthy { line: Vec::new() })
                .overflow(OverflowPolicy::Block),
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
    drop(guard); // drains every queue (dead letters last), flushes, joins

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
