//! Unsubscribe, flush and shutdown: what was queued is written, stuck appenders are
//! reported, late log calls are counted, and appenders may call back into the broker.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_channel::unbounded;
use logbus::{FlushError, Memory, OverflowPolicy, SubscribeError, Subscription, UnsubscribeError};

#[test]
fn unsubscribe_during_a_flood_writes_what_was_queued_then_nothing() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("flood", appender).capacity(64))
        .unwrap();
    let warm_up = common::scaled(1_000, 10);
    let stop = AtomicBool::new(false);
    let (started_tx, started_rx) = unbounded();

    std::thread::scope(|s| {
        let flooder = s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                log::info!(logger: &broker, target: "flood", "{i}");
                i += 1;
                if i == warm_up {
                    started_tx.send(()).unwrap();
                }
            }
            i
        });
        let _stop_on_panic = common::SetOnDrop(&stop);
        common::recv(&started_rx, "the flood to start");
        broker.flush().unwrap();
        let stats = broker.unsubscribe("flood").unwrap();

        // Everything routed to it was settled before unsubscribe returned.
        assert_eq!(stats.in_queue, 0, "{stats:?}");
        assert_eq!(stats.matched, stats.written + stats.dropped, "{stats:?}");
        assert!(stats.matched >= warm_up, "{stats:?}");
        assert_eq!((stats.lost, stats.dead_lettered), (0, 0), "{stats:?}");
        let written = common::user_messages(&captured);
        assert_eq!(written.len() as u64, stats.written);
        let summarised: u64 = common::summaries(&captured)
            .iter()
            .map(|r| match r.get("dropped") {
                Some(logbus::Value::U64(n)) => *n,
                other => panic!("summary without a dropped count: {other:?}"),
            })
            .sum();
        assert_eq!(summarised, stats.dropped, "every drop is reported");
        let numbers: Vec<u64> = written.iter().map(|m| m.parse().unwrap()).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "out of order");
        let len_after_unsubscribe = captured.len();

        // More publishes, from the flooder and from here, reach nothing.
        common::publish_n(&broker, "flood", "after", 0..100);
        stop.store(true, Ordering::Relaxed);
        let published = flooder.join().unwrap();
        assert!(published >= stats.matched);
        broker.flush().unwrap();
        assert_eq!(captured.len(), len_after_unsubscribe);
        assert!(broker.subscription("flood").is_none());
        assert!(broker.stats().subscriptions.is_empty());
        assert!(
            !common::thread_names().iter().any(|n| n == "logbus-flood"),
            "worker thread still alive: {:?}",
            common::thread_names()
        );
        assert!(matches!(
            broker.unsubscribe("flood"),
            Err(UnsubscribeError::NotFound(name)) if name == "flood"
        ));
    });
}

#[test]
fn shutdown_with_a_deadline_reports_the_stuck_appender() {
    let broker = common::broker();
    let (stuck, gate) = common::GatedAppender::new();
    broker
        .subscribe(Subscription::builder("stuck", stuck))
        .unwrap();
    let (healthy, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("healthy", healthy))
        .unwrap();
    let n = common::scaled(100, 10);
    common::publish_n(&broker, "app", "r", 0..n);
    common::recv(&gate.entered, "the stuck appender to take a record");
    broker
        .flush_subscription("healthy", common::SAFETY_NET)
        .unwrap();

    let report = broker.shutdown_timeout(Duration::from_millis(200));
    assert_eq!(report.unfinished, ["stuck"]);
    let s = report.subscriptions["stuck"];
    assert_eq!(
        (s.matched, s.written, s.dropped, s.in_queue),
        (n, 0, 0, n),
        "{s:?}"
    );
    assert_eq!(
        s.matched,
        s.written + s.dropped + s.dead_lettered + s.lost + s.in_queue
    );
    let h = report.subscriptions["healthy"];
    assert_eq!(
        (h.matched, h.written, h.dropped, h.in_queue),
        (n, n, 0, 0),
        "{h:?}"
    );
    assert_eq!(report.written(), n);
    assert_eq!(report.left(), n);
    assert_eq!(report.dropped_after_shutdown, 0);
    let expected: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    assert_eq!(common::user_messages(&captured), expected);
    assert!(gate.captured.is_empty());

    // Released, the stuck appender finishes; a second shutdown waits for it
    // (dropping the broker would not wait again after an explicit shutdown).
    gate.open();
    let report = broker.shutdown_timeout(common::SAFETY_NET);
    assert!(report.unfinished.is_empty(), "{report:?}");
    assert_eq!(common::user_messages(&gate.captured), expected);
}

#[test]
fn a_log_call_after_shutdown_returns_and_is_counted_as_dropped() {
    let broker = common::broker();
    let (all, all_captured) = Memory::new();
    broker.subscribe(Subscription::builder("all", all)).unwrap();
    let (errors, errors_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("errors", errors).pattern("error.#"))
        .unwrap();
    log::info!(logger: &broker, target: "app", "before");
    let report = broker.shutdown();
    assert!(report.unfinished.is_empty());
    assert_eq!(report.dropped_after_shutdown, 0);

    log::info!(logger: &broker, target: "app", "late info");
    log::error!(logger: &broker, target: "app", "late error");
    log::info!(logger: &broker, target: "app", "late info 2");

    let stats = broker.stats();
    let all_stats = stats.subscriptions["all"];
    assert_eq!(
        (all_stats.matched, all_stats.written, all_stats.dropped),
        (4, 1, 3)
    );
    let error_stats = stats.subscriptions["errors"];
    assert_eq!(
        (
            error_stats.matched,
            error_stats.written,
            error_stats.dropped
        ),
        (1, 0, 1)
    );
    assert_eq!(all_captured.messages(), ["before"]);
    assert!(errors_captured.is_empty());
    // Calling shutdown again reports the current counters.
    let again = broker.shutdown();
    assert_eq!(again.subscriptions, stats.subscriptions);
    assert!(again.unfinished.is_empty());
}

/// BUG: `dropped_after_shutdown` is documented as "records published after
/// shutdown", but a record matching N subscriptions is counted N times.
#[test]
fn dropped_after_shutdown_counts_records_not_deliveries() {
    let broker = common::broker();
    broker
        .subscribe(Subscription::builder("all", Memory::new().0))
        .unwrap();
    broker
        .subscribe(Subscription::builder("errors", Memory::new().0).pattern("error.#"))
        .unwrap();
    broker.shutdown();
    // One record, matched by both subscriptions.
    log::error!(logger: &broker, target: "app", "late error");
    let stats = broker.stats();
    assert_eq!(stats.subscriptions["all"].dropped, 1);
    assert_eq!(stats.subscriptions["errors"].dropped, 1);
    assert_eq!(stats.dropped_after_shutdown, 1, "{stats:?}");
}

/// BUG: after shutdown `flush` waits for the whole flush timeout and then
/// reports every (finished) subscription as pending.
#[test]
fn flush_after_shutdown_has_nothing_to_wait_for() {
    let broker = common::broker();
    broker
        .subscribe(Subscription::builder("mem", Memory::new().0))
        .unwrap();
    common::publish_n(&broker, "app", "r", 0..10);
    broker.shutdown();
    assert_eq!(broker.flush_timeout(Duration::from_millis(500)), Ok(()));
}

/// 10 threads flush repeatedly while `flooders` threads overflow a
/// capacity-2 DropOldest queue. After each flush, every record whose log call
/// returned before the flush started must be written or counted as dropped.
fn flushes_are_barriers_during_a_flood(flooders: usize) {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("tiny", appender)
                .capacity(2)
                .overflow(OverflowPolicy::DropOldest),
        )
        .unwrap();
    let published = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let rounds = common::scaled(200, 3);

    std::thread::scope(|s| {
        let flooders: Vec<_> = (0..flooders)
            .map(|_| {
                s.spawn(|| {
                    let mut i = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        log::info!(logger: &broker, target: "flood", "{i}");
                        i += 1;
                        published.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let _stop_on_panic = common::SetOnDrop(&stop);
        let flushers: Vec<_> = (0..10)
            .map(|_| {
                s.spawn(|| {
                    let tiny = broker.subscription("tiny").unwrap();
                    for _ in 0..rounds {
                        let before = published.load(Ordering::SeqCst);
                        assert_eq!(broker.flush(), Ok(()));
                        let s = tiny.stats();
                        assert!(
                            s.written + s.dropped >= before,
                            "flush returned before {before} records were settled: {s:?}"
                        );
                    }
                })
            })
            .collect();
        for flusher in flushers {
            flusher.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        for flooder in flooders {
            flooder.join().unwrap();
        }
    });
    broker.flush().unwrap();
    let s = broker.subscription("tiny").unwrap().stats();
    assert_eq!(s.matched, published.load(Ordering::SeqCst));
    assert_eq!(s.matched, s.written + s.dropped, "{s:?}");
    assert_eq!(s.in_queue, 0);
    assert_eq!(common::user_messages(&captured).len() as u64, s.written);
}

/// BUG (intermittent, about 1 run in 6 on 2 cores): a drop-oldest publisher
/// pops the oldest record and counts it as dropped only afterwards; a flush
/// finishing in between sees that record nowhere.
#[test]
fn concurrent_flushes_during_an_overflowing_flood_are_barriers() {
    flushes_are_barriers_during_a_flood(1);
}

/// The same race as above, more likely with several evicting publishers.
#[test]
fn concurrent_flushes_during_a_flood_from_four_threads_are_barriers() {
    flushes_are_barriers_during_a_flood(4);
}

#[test]
fn an_appender_may_subscribe_and_unsubscribe_others() {
    let broker = common::broker();
    let handle = broker.handle();
    let (victim, victim_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("victim", victim).pattern("*.app"))
        .unwrap();
    let (child, child_captured) = Memory::new();
    let mut child = Some(child);
    let (done_tx, done_rx) = unbounded();
    let (meta, meta_captured) = common::HookAppender::new(move |_| {
        if let Some(child) = child.take() {
            let subscribed = handle
                .subscribe(Subscription::builder("child", child).pattern("*.app"))
                .map(|h| h.name().to_owned());
            let unsubscribed = handle.unsubscribe("victim");
            done_tx.send((subscribed, unsubscribed)).unwrap();
        }
    });
    broker
        .subscribe(Subscription::builder("meta", meta).pattern("*.meta"))
        .unwrap();

    log::info!(logger: &broker, target: "app", "pre");
    broker.flush().unwrap();
    log::info!(logger: &broker, target: "meta", "go");
    let (subscribed, unsubscribed) = common::recv(&done_rx, "the appender's reconfiguration");
    assert_eq!(subscribed.unwrap(), "child");
    let victim_stats = unsubscribed.unwrap();
    assert_eq!(victim_stats.matched, 1);

    common::publish_n(&broker, "app", "later", 0..10);
    broker.flush().unwrap();
    let later: Vec<String> = (0..10).map(|i| format!("later{i}")).collect();
    assert_eq!(common::user_messages(&child_captured), later);
    assert_eq!(common::user_messages(&victim_captured), ["pre"]);
    assert_eq!(common::user_messages(&meta_captured), ["go"]);

    let report = broker.shutdown();
    assert!(report.unfinished.is_empty());
    let names: Vec<&str> = report.subscriptions.keys().map(String::as_str).collect();
    assert_eq!(names, ["child", "meta"]);
    assert_eq!(report.subscriptions["child"].written, 10);
    assert_eq!(common::user_messages(&victim_captured), ["pre"]);
}

#[test]
fn an_appender_may_unsubscribe_itself() {
    let broker = common::broker();
    let handle = broker.handle();
    let (done_tx, done_rx) = unbounded();
    let mut first = true;
    let (selfish, captured) = common::HookAppender::new(move |_| {
        if std::mem::take(&mut first) {
            done_tx.send(handle.unsubscribe("self")).unwrap();
        }
    });
    broker
        .subscribe(Subscription::builder("self", selfish))
        .unwrap();
    let (other, other_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("other", other))
        .unwrap();

    log::info!(logger: &broker, target: "app", "first");
    let stats = common::recv(&done_rx, "the appender to unsubscribe itself").unwrap();
    assert_eq!(stats.matched, 1);
    log::info!(logger: &broker, target: "app", "second");
    broker.flush().unwrap();
    assert!(broker.subscription("self").is_none());
    assert_eq!(common::user_messages(&other_captured), ["first", "second"]);

    let report = broker.shutdown();
    assert!(report.unfinished.is_empty());
    assert_eq!(report.subscriptions.keys().collect::<Vec<_>>(), ["other"]);
    assert_eq!(common::user_messages(&captured), ["first"]);
}

/// BUG: a subscription an appender unsubscribed finishes in a background
/// thread; shutdown is meant to join it ("joined by shutdown"), but returns
/// while its worker is still writing what it had queued.
#[test]
fn shutdown_waits_for_a_subscription_an_appender_unsubscribed() {
    let broker = common::broker();
    let handle = broker.handle();
    // Enough queued records that writing them takes longer than a shutdown
    // that does not wait.
    let n = common::scaled(100_000, 20);
    let (victim, gate) = common::GatedAppender::new();
    broker
        .subscribe(
            Subscription::builder("victim", victim)
                .pattern("*.app")
                .capacity(n as usize),
        )
        .unwrap();
    let (done_tx, done_rx) = unbounded();
    let mut first = true;
    let (meta, _) = common::HookAppender::new(move |_| {
        if std::mem::take(&mut first) {
            done_tx.send(handle.unsubscribe("victim")).unwrap();
        }
    });
    broker
        .subscribe(Subscription::builder("meta", meta).pattern("*.meta"))
        .unwrap();

    common::publish_n(&broker, "app", "v", 0..n);
    common::recv(&gate.entered, "the victim to take its first record");
    log::info!(logger: &broker, target: "meta", "go");
    let stats = common::recv(&done_rx, "the appender to unsubscribe the victim").unwrap();
    assert_eq!(stats.matched, n);
    // A round trip to the remaining worker gives the background unsubscribe
    // time to start joining the victim (the bug shows only when it has). A
    // whole flush would wait for the victim too: it still holds records
    // enqueued before the flush.
    broker
        .flush_subscription("meta", std::time::Duration::from_secs(30))
        .unwrap();

    gate.open();
    let report = broker.shutdown();
    assert!(report.unfinished.is_empty());
    assert_eq!(
        common::user_messages(&gate.captured).len() as u64,
        n,
        "shutdown returned before the unsubscribed victim wrote its queue"
    );
}

#[test]
fn flush_from_inside_an_appender_is_refused() {
    let broker = common::broker();
    let handle = broker.handle();
    let (result_tx, result_rx) = unbounded();
    let (appender, captured) = common::HookAppender::new(move |_| {
        let all = handle.flush();
        let one = handle.flush_subscription("flusher", Duration::from_secs(1));
        result_tx.send((all, one)).unwrap();
    });
    broker
        .subscribe(Subscription::builder("flusher", appender))
        .unwrap();
    log::info!(logger: &broker, target: "app", "hello");
    let (all, one) = common::recv(&result_rx, "the appender's flush result");
    assert_eq!(all, Err(FlushError::OnWorkerThread));
    assert_eq!(one, Err(FlushError::OnWorkerThread));
    broker.flush().unwrap();
    assert_eq!(captured.messages(), ["hello"]);
}

#[test]
fn a_log_call_from_inside_an_appender_is_suppressed_and_counted() {
    let broker = common::broker();
    let handle = broker.handle();
    let (appender, captured) = common::HookAppender::new(move |record| {
        log::info!(logger: &handle, target: "inner", "echo {}", record.message());
    });
    broker
        .subscribe(Subscription::builder("echo", appender))
        .unwrap();
    common::publish_n(&broker, "app", "r", 0..3);
    broker.flush().unwrap();
    assert_eq!(captured.messages(), ["r0", "r1", "r2"]);
    let stats = broker.stats();
    assert_eq!(stats.suppressed, 3);
    assert_eq!(stats.subscriptions["echo"].matched, 3);
    assert_eq!(stats.subscriptions["echo"].written, 3);
}

#[test]
fn subscription_names_must_be_unique_and_non_empty() {
    let broker = common::broker();
    let (first, captured) = Memory::new();
    broker.subscribe(Subscription::builder("a", first)).unwrap();
    let duplicate = broker.subscribe(Subscription::builder("a", Memory::new().0));
    assert!(
        matches!(&duplicate, Err(SubscribeError::DuplicateName(name)) if name == "a"),
        "{duplicate:?}"
    );
    assert!(matches!(
        broker.subscribe(Subscription::builder("", Memory::new().0)),
        Err(SubscribeError::EmptyName)
    ));
    assert!(matches!(
        broker.subscribe(Subscription::builder("z", Memory::new().0).capacity(0)),
        Err(SubscribeError::ZeroCapacity)
    ));
    // The first "a" is untouched.
    log::info!(logger: &broker, target: "app", "to the first");
    broker.flush().unwrap();
    assert_eq!(captured.messages(), ["to the first"]);
    assert_eq!(broker.stats().subscriptions.len(), 1);

    // Once removed, the name is free again.
    broker.unsubscribe("a").unwrap();
    let (second, second_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("a", second))
        .unwrap();
    log::info!(logger: &broker, target: "app", "to the second");
    broker.flush().unwrap();
    assert_eq!(second_captured.messages(), ["to the second"]);
    assert_eq!(captured.messages(), ["to the first"]);

    broker.shutdown();
    assert!(matches!(
        broker.subscribe(Subscription::builder("late", Memory::new().0)),
        Err(SubscribeError::ShutDown)
    ));
}

#[test]
fn dropping_a_broker_writes_everything_queued() {
    let broker = common::broker();
    let (gated, gate) = common::GatedAppender::new();
    broker
        .subscribe(Subscription::builder("gated", gated).capacity(100_000))
        .unwrap();
    let n = common::scaled(5_000, 20);
    common::publish_n(&broker, "app", "r", 0..n);
    common::recv(&gate.entered, "the appender to take its first record");
    let stats = broker.subscription("gated").unwrap().stats();
    assert_eq!((stats.matched, stats.in_queue, stats.written), (n, n, 0));
    gate.open();
    drop(broker);
    let expected: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    assert_eq!(common::user_messages(&gate.captured), expected);
}
