//! A "stay open" circuit breaker (`CircuitBreaker::new(n, Duration::MAX)`)
//! must not overflow `Instant + cooldown` and kill the worker: the record is
//! settled (dead-lettered or lost), nothing stays `in_queue`, and flush works.

mod common;

use std::time::Duration;

use logbus::{AppendError, Appender, CircuitBreaker, Operation, Record, RetryPolicy, Subscription};

struct AlwaysFails;

impl Appender for AlwaysFails {
    fn append(&mut self, _: &Record) -> Result<(), AppendError> {
        Err(AppendError::new(Operation::Write, "disk gone"))
    }
    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

#[test]
fn breaker_with_max_cooldown_settles_every_record() {
    let broker = common::broker();
    let sub = broker
        .subscribe(
            Subscription::builder("fails", AlwaysFails)
                .retry(RetryPolicy::none())
                .circuit_breaker(CircuitBreaker::new(1, Duration::MAX)),
        )
        .unwrap();
    log::info!(logger: &broker, target: "app", "one");
    // First flush: its Flush message is stranded in the dead worker's control
    // channel (the sender in SubShared keeps the buffer alive): full timeout.
    let first = broker.flush_timeout(Duration::from_millis(200));
    // Second flush: Disconnected is read as "worker finished": Ok.
    let second = broker.flush_timeout(Duration::from_millis(200));
    let s = sub.stats();
    // Expected: the failed record counted as lost (no dead-letter route).
    assert_eq!(
        (s.matched, s.lost, s.in_queue),
        (1, 1, 0),
        "stats after flush: {s:?}; first flush {first:?}, second flush {second:?}"
    );
}
