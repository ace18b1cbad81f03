//! Overflow policies: drop-oldest, drop-newest, block, byte bounds, and
//! that a stalled appender delays neither the caller nor other appenders.

mod common;

use std::time::Duration;

use common::{broker, publish_n, summaries, user_messages, GatedAppender};
use logbus::{Memory, OverflowPolicy, Subscription};

const FLUSH: Duration = Duration::from_secs(30);

fn names(range: std::ops::RangeInclusive<u64>) -> Vec<String> {
    range.map(|i| format!("r{i}")).collect()
}

/// Stalls the worker on record 0, then publishes 1..=100 into a queue of 8.
fn overflow(policy: OverflowPolicy) -> (logbus::SubscriptionStats, Vec<String>, common::Gate) {
    let broker = broker();
    let (appender, gate) = GatedAppender::new();
    let sub = broker
        .subscribe(
            Subscription::builder("stalled", appender)
                .capacity(8)
                .overflow(policy),
        )
        .unwrap();
    publish_n(&broker, "app", "r", 0..1);
    // The worker has taken record 0 and is blocked inside the appender.
    gate.entered
        .recv_timeout(FLUSH)
        .expect("worker entered the appender");
    publish_n(&broker, "app", "r", 1..101);
    gate.open();
    broker.flush_timeout(FLUSH).unwrap();
    let stats = sub.stats();
    let written = user_messages(&gate.captured);
    (stats, written, gate)
}

#[test]
fn drop_oldest_keeps_the_newest_records_and_counts_the_rest() {
    let (stats, written, gate) = overflow(OverflowPolicy::DropOldest);
    let mut expected = names(0..=0);
    expected.extend(names(93..=100));
    assert_eq!(written, expected);
    assert_eq!(stats.matched, 101);
    assert_eq!(stats.written, 9);
    assert_eq!(stats.dropped, 92);
    assert_eq!(stats.in_queue, 0);
    assert_eq!(stats.matched, stats.written + stats.dropped);
    // One summary for the burst, saying how many.
    let summaries = summaries(&gate.captured);
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].level(), log::Level::Warn);
    assert!(summaries[0].message().starts_with("92 records dropped"));
}

#[test]
fn drop_newest_keeps_the_oldest_records_and_counts_the_rest() {
    let (stats, written, gate) = overflow(OverflowPolicy::DropNewest);
    assert_eq!(written, names(0..=8));
    assert_eq!(stats.matched, 101);
    assert_eq!(stats.written, 9);
    assert_eq!(stats.dropped, 92);
    assert_eq!(summaries(&gate.captured).len(), 1);
}

#[test]
fn block_timeout_drops_after_waiting_and_counts() {
    let (stats, written, _gate) = overflow(OverflowPolicy::BlockTimeout(Duration::ZERO));
    assert_eq!(written, names(0..=8));
    assert_eq!(stats.dropped, 92);
    assert_eq!(stats.matched, stats.written + stats.dropped);
}

#[test]
fn block_makes_the_caller_wait_and_loses_nothing() {
    let broker = broker();
    let (appender, gate) = GatedAppender::new();
    let sub = broker
        .subscribe(
            Subscription::builder("blocking", appender)
                .capacity(2)
                .overflow(OverflowPolicy::Block),
        )
        .unwrap();
    publish_n(&broker, "app", "r", 0..1);
    gate.entered.recv_timeout(FLUSH).unwrap();
    let (progress_tx, progress_rx) = crossbeam_channel::unbounded();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=10 {
                publish_n(&broker, "app", "r", i..i + 1);
                progress_tx.send(i).unwrap();
            }
        });
        // Two records fit in the queue. The third cannot be queued, and is
        // not dropped either: the caller holds it, waiting for the worker.
        assert_eq!(progress_rx.recv_timeout(FLUSH), Ok(1));
        assert_eq!(progress_rx.recv_timeout(FLUSH), Ok(2));
        let held = sub.stats();
        assert_eq!((held.matched, held.in_queue, held.dropped), (3, 3, 0));
        gate.open();
    });
    broker.flush_timeout(FLUSH).unwrap();
    assert_eq!(user_messages(&gate.captured), names(0..=10));
    let stats = sub.stats();
    assert_eq!((stats.matched, stats.written, stats.dropped), (11, 11, 0));
    assert!(summaries(&gate.captured).is_empty());
}

#[test]
fn a_stalled_subscriber_delays_neither_the_caller_nor_the_others() {
    let broker = broker();
    let (stalled, gate) = GatedAppender::new();
    let (healthy, healthy_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("stalled", stalled).capacity(4))
        .unwrap();
    let healthy_sub = broker
        .subscribe(Subscription::builder("healthy", healthy))
        .unwrap();
    publish_n(&broker, "app", "r", 0..1);
    gate.entered.recv_timeout(FLUSH).unwrap();
    // The caller publishes everything while the stalled worker is blocked.
    publish_n(&broker, "app", "r", 1..1000);
    broker.flush_subscription("healthy", FLUSH).unwrap();
    assert_eq!(healthy_captured.messages(), names(0..=999));
    assert_eq!(healthy_sub.stats().written, 1000);
    // Still stalled: only record 0 is in its hands.
    assert!(gate.captured.is_empty());
    let stalled_stats = broker.stats().subscriptions["stalled"];
    assert_eq!(stalled_stats.matched, 1000);
    assert_eq!(stalled_stats.in_queue, 5);
    assert_eq!(stalled_stats.dropped, 995);
    gate.open();
    broker.flush_timeout(FLUSH).unwrap();
    let stats = broker.stats().subscriptions["stalled"];
    assert_eq!(stats.written, 5);
    assert_eq!(stats.matched, stats.written + stats.dropped);
}

#[test]
fn byte_bound_evicts_oldest_to_fit() {
    let broker = broker();
    let (appender, gate) = GatedAppender::new();
    let one = {
        let r = logbus::Record::builder(logbus::Topic::new(log::Level::Info, "app"))
            .message(format!("r{:03}", 1))
            .build();
        r.approx_size()
    };
    let sub = broker
        .subscribe(
            Subscription::builder("bytes", appender)
                .capacity(1000)
                .max_bytes(one * 3),
        )
        .unwrap();
    log::info!(logger: &broker, target: "app", "r{:03}", 0);
    gate.entered.recv_timeout(FLUSH).unwrap();
    for i in 1..=20 {
        log::info!(logger: &broker, target: "app", "r{i:03}");
    }
    gate.open();
    broker.flush_timeout(FLUSH).unwrap();
    assert_eq!(
        user_messages(&gate.captured),
        ["r000", "r018", "r019", "r020"]
    );
    let stats = sub.stats();
    assert_eq!((stats.matched, stats.written, stats.dropped), (21, 4, 17));
}
