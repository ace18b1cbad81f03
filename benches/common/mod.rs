//! Helpers shared by the criterion benches (not a bench target itself).

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::time::Duration;

use criterion::Criterion;
use logbus::{AppendError, Appender, Record};

/// An appender that does nothing: isolates the broker's own cost.
#[derive(Debug, Default)]
pub struct NullAppender;

impl Appender for NullAppender {
    fn append(&mut self, _record: &Record) -> Result<(), AppendError> {
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Short runs: the bench machine has 2 cores shared with builds. Command-line
/// flags (`--warm-up-time`, `--measurement-time`, `--sample-size`) still
/// override these.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args()
}

/// The target.
pub const TARGET: &str = "app::http";

/// Prints what the broker did with the records (drops matter when reading a
/// caller-cost number: a dropped record costs the caller an eviction).
pub fn report(label: &str, broker: &logbus::Broker) {
    let totals = broker.stats().totals;
    eprintln!(
        "    [{label}] matched {} written {} dropped {} in_queue {}",
        totals.matched, totals.written, totals.dropped, totals.in_queue
    );
}
