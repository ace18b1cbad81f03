//! A stress run of everything at once, bounded in records and rounds:
//! eight producers, subscriptions under all four overflow policies with
//! capacities from 2 to 64, a failing appender feeding a dead-letter
//! route, and a churn thread subscribing, reconfiguring, flushing and
//! unsubscribing throughout. Checked: per-producer order in every appender,
//! no duplicate, exact accounting for every subscription, every flush a
//! barrier, nothing unfinished at shutdown. Larger in release builds.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use logbus::{
    AppendError, Appender, CircuitBreaker, LevelFilter, Memory, MemoryHandle, Operation,
    OverflowPolicy, Record, RetryPolicy, Subscription, SubscriptionStats, Value,
};

const PRODUCERS: u64 = 8;

fn per_producer() -> u64 {
    if cfg!(debug_assertions) {
        common::scaled(10_000, 50)
    } else {
        50_000
    }
}

/// The (producer, index) a stress record carries.
fn origin(record: &Record) -> Option<(u64, u64)> {
    let get = |key| match record.get(key) {
        Some(Value::U64(v)) => Some(*v),
        _ => None,
    };
    Some((get("p")?, get("i")?))
}

/// Checks that every producer's records are in strictly increasing order
/// (which also rules out duplicates); returns how many each has.
#[track_caller]
fn check_order(name: &str, records: &[Arc<Record>]) -> BTreeMap<u64, u64> {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for (p, i) in records.iter().filter_map(|r| origin(r)) {
        if let Some(&before) = last.get(&p) {
            assert!(i > before, "{name}: producer {p}'s {i} after {before}");
        }
        last.insert(p, i);
        *counts.entry(p).or_default() += 1;
    }
    counts
}

#[track_caller]
fn check_books(name: &str, s: &SubscriptionStats) {
    assert_eq!(
        s.matched,
        s.written + s.dropped + s.dead_lettered + s.lost + s.in_queue,
        "{name}: {s:?}"
    );
    assert_eq!(s.in_queue, 0, "{name}: {s:?}");
}

/// Fails every record whose index is a multiple of 3.
struct FailsSome(Memory);

impl Appender for FailsSome {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        if origin(record).is_some_and(|(_, i)| i % 3 == 0) {
            return Err(AppendError::io(
                Operation::Write,
                std::io::Error::other("every third fails"),
            ));
        }
        self.0.append(record)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

#[test]
fn everything_at_once_keeps_order_books_and_barriers() {
    let per = per_producer();
    let broker = logbus::builder()
        .shutdown_timeout(common::SAFETY_NET)
        .flush_timeout(common::SAFETY_NET)
        .build()
        .unwrap();
    common::enable_all_levels();
    let (dead, dead_handle) = Memory::new();
    broker
        .set_dead_letter(Subscription::builder("dead", dead).capacity(64))
        .unwrap();
    let policies = [
        ("oldest", OverflowPolicy::DropOldest, 2),
        ("newest", OverflowPolicy::DropNewest, 8),
        ("block", OverflowPolicy::Block, 16),
        (
            "timeout",
            OverflowPolicy::BlockTimeout(common::SAFETY_NET),
            64,
        ),
    ];
    let mut handles: Vec<(&str, MemoryHandle)> = Vec::new();
    for (name, policy, capacity) in policies {
        let (memory, handle) = Memory::new();
        broker
            .subscribe(
                Subscription::builder(name, memory)
                    .capacity(capacity)
                    .overflow(policy),
            )
            .unwrap();
        handles.push((name, handle));
    }
    let (memory, fails_handle) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("fails", FailsSome(memory))
                .capacity(32)
                .overflow(OverflowPolicy::Block)
                .retry(RetryPolicy::none())
                .circuit_breaker(CircuitBreaker::disabled()),
        )
        .unwrap();

    // Per producer, the index of the last record whose log call returned.
    let published: Vec<AtomicU64> = (0..PRODUCERS).map(|_| AtomicU64::new(u64::MAX)).collect();
    let done = AtomicBool::new(false);
    let mut churned: Vec<(String, SubscriptionStats, Vec<Arc<Record>>)> = Vec::new();
    std::thread::scope(|s| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (broker, published) = (&broker, &published);
                s.spawn(move || {
                    for i in 0..per {
                        log::info!(logger: broker, target: "stress", p = p, i = i; "{p} {i}");
                        published[p as usize].store(i, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        // Flushes are barriers: what was published before one is written
        // (the `block` subscription drops nothing) once it returns.
        s.spawn(|| {
            let _stop = common::SetOnDrop(&done);
            for _ in 0..20 {
                let marks: Vec<u64> = published.iter().map(|m| m.load(Ordering::SeqCst)).collect();
                broker.flush().unwrap();
                let counts = check_order("block", &handles[2].1.records());
                for (p, &mark) in marks.iter().enumerate() {
                    if mark != u64::MAX {
                        let have = counts.get(&(p as u64)).copied().unwrap_or(0);
                        assert!(have > mark, "flush returned before producer {p}'s {mark}");
                    }
                }
            }
        });
        // Churn: subscriptions come and go, reconfigured while they live.
        let churn = s.spawn(|| {
            let mut out = Vec::new();
            for round in 0..30u64 {
                let name = format!("churn{round}");
                let (memory, handle) = Memory::new();
                let (policy, capacity) = match round % 4 {
                    0 => (OverflowPolicy::DropOldest, 2),
                    1 => (OverflowPolicy::DropNewest, 5),
                    2 => (OverflowPolicy::Block, 17),
                    _ => (OverflowPolicy::BlockTimeout(Duration::ZERO), 64),
                };
                broker
                    .subscribe(
                        Subscription::builder(name.clone(), memory)
                            .capacity(capacity)
                            .overflow(policy),
                    )
                    .unwrap();
                broker.set_level(&name, LevelFilter::Debug).unwrap();
                broker
                    .set_patterns(&name, &["info.stress", "warn.#"])
                    .unwrap();
                broker
                    .set_filter(&name, move |r| {
                        origin(r).is_some_and(|(p, _)| p != round % 8)
                    })
                    .unwrap();
                broker
                    .flush_subscription(&name, common::SAFETY_NET)
                    .unwrap();
                broker.clear_filter(&name).unwrap();
                let stats = broker.unsubscribe(&name).unwrap();
                out.push((name, stats, handle.records()));
            }
            out
        });
        for producer in producers {
            producer.join().unwrap();
        }
        churned = churn.join().unwrap();
    });
    assert!(done.load(Ordering::SeqCst));

    let report = broker.shutdown();
    assert!(report.unfinished.is_empty(), "{report:?}");
    let total = PRODUCERS * per;
    for (name, handle) in &handles {
        let s = report.subscriptions[*name];
        check_books(name, &s);
        assert_eq!(s.matched, total, "{name}: {s:?}");
        let records = handle.records();
        let counts = check_order(name, &records);
        let delivered: u64 = counts.values().sum();
        assert_eq!(delivered, s.written, "{name}: {s:?}");
        if matches!(*name, "block" | "timeout") {
            assert_eq!(s.dropped, 0, "{name}: {s:?}");
        }
    }
    let fails = report.subscriptions["fails"];
    check_books("fails", &fails);
    assert_eq!(fails.matched, total);
    assert_eq!(fails.dead_lettered, PRODUCERS * per.div_ceil(3));
    let fails_written: u64 = check_order("fails", &fails_handle.records()).values().sum();
    assert_eq!(fails.written, fails_written);
    let dead = report.subscriptions["dead"];
    check_books("dead", &dead);
    assert_eq!(dead.matched, fails.dead_lettered, "{dead:?}");
    assert_eq!(dead.written + dead.dropped, dead.matched, "{dead:?}");
    check_order("dead", &dead_handle.records());
    for (name, stats, records) in &churned {
        check_books(name, stats);
        let delivered: u64 = check_order(name, records).values().sum();
        assert_eq!(delivered, stats.written, "{name}: {stats:?}");
    }
}
