//! Per-thread lanes (see `src/queue/lane.rs`): what they must not
//! change about delivery. Records of several threads still reach an
//! appender in `seq` order, the capacity still bounds the subscription as a
//! whole, records of threads that exited are delivered, an idle worker
//! wakes for a record without a flush, and a reconfiguration from inside a
//! log call does not wait for its own thread.

mod common;

use std::sync::{Arc, Mutex};

use logbus::{Broker, OverflowPolicy, Subscription};

use common::stalled;

/// Publishes `per` records from each of `threads` threads, and waits for
/// them.
fn publish_from_threads(broker: &Broker, threads: usize, per: usize) {
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for i in 0..per {
                    log::info!(logger: broker, target: "app", "{t}:{i}");
                }
            });
        }
    });
}

#[test]
fn records_of_several_threads_reach_the_appender_in_seq_order() {
    // Everything the threads publish is queued before the worker merges it.
    let (broker, gate) = stalled(|b| b.capacity(4096));
    publish_from_threads(&broker, 4, 500);
    gate.open();
    broker.flush().unwrap();
    let s = broker.stats().subscriptions["s"];
    assert_eq!((s.matched, s.written, s.dropped), (2001, 2001, 0), "{s:?}");
    let seqs: Vec<u64> = gate.captured.records().iter().map(|r| r.seq()).collect();
    assert_eq!(seqs.len(), 2001);
    let bad: Vec<_> = seqs
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] >= w[1])
        .take(5)
        .collect();
    assert!(bad.is_empty(), "records out of seq order: {bad:?}");
}

#[test]
fn the_capacity_bounds_all_threads_together() {
    // Under 128, places are taken one at a time: the bound is exact.
    let (broker, gate) = stalled(|b| b.capacity(64));
    publish_from_threads(&broker, 4, 100);
    // 64 queued in all, plus the one in the worker's hands; the other 336
    // were dropped, each counted once.
    let s = broker.stats().subscriptions["s"];
    assert_eq!(
        (s.matched, s.in_queue, s.dropped, s.written),
        (401, 65, 336, 0),
        "{s:?}"
    );
    gate.open();
    broker.flush().unwrap();
    let s = broker.stats().subscriptions["s"];
    assert_eq!(
        (s.matched, s.in_queue, s.dropped, s.written),
        (401, 0, 336, 65),
        "{s:?}"
    );
}

#[test]
fn drop_newest_and_block_keep_the_bound_across_threads() {
    for policy in [OverflowPolicy::DropNewest, OverflowPolicy::Block] {
        let (broker, gate) = stalled(|b| b.capacity(32).overflow(policy));
        // Under Block, 2 x 16 fill the 32 places exactly: a leaked place
        // would leave a publisher waiting for ever.
        let per = if policy == OverflowPolicy::Block {
            16
        } else {
            50
        };
        publish_from_threads(&broker, 2, per);
        let s = broker.stats().subscriptions["s"];
        let queued = 2 * per as u64;
        let expected = if policy == OverflowPolicy::Block {
            (1 + queued, 1 + queued, 0) // 32 fit exactly: nobody waited
        } else {
            (1 + queued, 1 + 32, queued - 32)
        };
        assert_eq!((s.matched, s.in_queue, s.dropped), expected, "{policy:?}");
        gate.open();
        broker.flush().unwrap();
        let s = broker.stats().subscriptions["s"];
        assert_eq!(s.written + s.dropped, s.matched, "{policy:?}: {s:?}");
        assert_eq!(s.in_queue, 0, "{policy:?}");
    }
}

#[test]
fn records_of_threads_that_exited_are_all_written() {
    let broker = common::broker();
    let (appender, captured) = logbus::Memory::new();
    broker
        .subscribe(Subscription::builder("mem", appender))
        .unwrap();
    for t in 0..50 {
        let handle = broker.handle();
        std::thread::spawn(move || {
            for i in 0..10 {
                log::info!(logger: &handle, target: "app", "{t}:{i}");
            }
        })
        .join()
        .unwrap();
    }
    broker.flush().unwrap();
    let s = broker.stats().subscriptions["mem"];
    assert_eq!((s.matched, s.written, s.in_queue), (500, 500, 0), "{s:?}");
    assert_eq!(common::user_messages(&captured).len(), 500);
}

/// Fails (by hanging until the safety net) only if an idle worker never
/// writes a record that no flush asks for. How *promptly* the publisher's
/// unpark wakes it is not tested: the worker's 10 s safety-net park would
/// deliver the record too, and telling the two apart would take a timing
/// threshold.
#[test]
fn an_idle_worker_wakes_for_a_record_without_a_flush() {
    let broker = common::broker();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (appender, _captured) = common::HookAppender::new(move |r: &logbus::Record| {
        let _ = tx.send(r.message().to_owned());
    });
    broker
        .subscribe(Subscription::builder("hook", appender))
        .unwrap();
    // Each record is published after the previous one was written, so the
    // worker has gone idle (dozing, or parked after its naps) in between.
    for i in 0..5 {
        log::info!(logger: &broker, target: "app", "ping {i}");
        assert_eq!(common::recv(&rx, "the record"), format!("ping {i}"));
    }
}

#[test]
fn unsubscribing_from_inside_a_predicate_does_not_wait_for_its_own_thread() {
    let broker = common::broker();
    let (a, a_captured) = logbus::Memory::new();
    let (b, _b_captured) = logbus::Memory::new();
    broker.subscribe(Subscription::builder("b", b)).unwrap();
    let handle = broker.handle();
    let removed = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&removed);
    broker
        .subscribe(Subscription::builder("a", a).filter(move |_| {
            // Runs on the publishing thread while it routes to "a" and "b".
            let mut slot = slot.lock().unwrap();
            if slot.is_none() {
                *slot = Some(handle.unsubscribe("b").is_ok());
            }
            true
        }))
        .unwrap();
    log::info!(logger: &broker, target: "app", "routes to a and b");
    broker.flush().unwrap();
    assert_eq!(*removed.lock().unwrap(), Some(true));
    // Routed again after the removal: "a" has it, "b" is gone.
    assert_eq!(common::user_messages(&a_captured), ["routes to a and b"]);
    assert!(!broker.stats().subscriptions.contains_key("b"));
}

/// Panics while formatting its message.
struct Boom;

impl std::fmt::Display for Boom {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        panic!("Display of Boom");
    }
}

#[test]
fn a_panicking_display_impl_does_not_hold_up_a_removal() {
    let broker = common::broker();
    let (appender, _captured) = logbus::Memory::new();
    broker
        .subscribe(Subscription::builder("s", appender))
        .unwrap();
    let (panicked_tx, panicked_rx) = crossbeam_channel::bounded(0);
    let (done_tx, done_rx) = crossbeam_channel::bounded(0);
    std::thread::scope(|s| {
        let broker = &broker;
        s.spawn(move || {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                log::info!(logger: broker, target: "app", "{}", Boom);
            }));
            panicked_tx.send(caught.is_err()).unwrap();
            // Stay alive (with this thread's lanes) until the removal is done.
            common::recv(&done_rx, "the removal");
        });
        assert!(
            common::recv(&panicked_rx, "the panic"),
            "Display did not run"
        );
        // Would wait for ever if the panic had left this thread inside the gate.
        broker.unsubscribe("s").unwrap();
        done_tx.send(()).unwrap();
    });
}

#[test]
fn idle_threads_do_not_starve_a_busy_one() {
    let broker = common::broker();
    let (appender, _captured) = logbus::Memory::new();
    broker
        .subscribe(
            Subscription::builder("s", appender)
                .capacity(2048)
                .overflow(OverflowPolicy::DropNewest),
        )
        .unwrap();
    let idle = 80;
    let logged = std::sync::Barrier::new(idle + 1);
    let finish = std::sync::Barrier::new(idle + 1);
    std::thread::scope(|s| {
        for t in 0..idle {
            let (broker, logged, finish) = (&broker, &logged, &finish);
            s.spawn(move || {
                log::info!(logger: broker, target: "app", "idle {t}");
                logged.wait();
                finish.wait(); // keeps the thread, and its reserved places, alive
            });
        }
        logged.wait();
        broker.flush().unwrap();
        // Every idle thread holds a few places; the busy one still finds room.
        for i in 0..1000 {
            log::info!(logger: &broker, target: "app", "busy {i}");
        }
        finish.wait();
    });
    broker.flush().unwrap();
    let s = broker.stats().subscriptions["s"];
    assert_eq!((s.matched, s.written, s.dropped), (1080, 1080, 0), "{s:?}");
}

#[test]
fn lanes_of_exited_threads_are_forgotten_while_the_worker_stays_busy() {
    let broker = common::broker();
    let (appender, _captured) = logbus::Memory::new();
    let sub = broker
        .subscribe(Subscription::builder("s", appender))
        .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        // Keeps the worker from ever finding its queue empty.
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                log::info!(logger: &broker, target: "app", "busy");
            }
        });
        let _stop = common::SetOnDrop(&stop);
        let broker = &broker;
        for batch in 0..30 {
            std::thread::scope(|s| {
                for t in 0..100 {
                    s.spawn(move || log::info!(logger: broker, target: "app", "{batch} {t}"));
                }
            });
        }
        // Everything the 3,000 threads queued is written past this barrier,
        // and the take that drained a lane forgot it.
        broker.flush().unwrap();
        assert!(
            sub.lanes_registered() < 8,
            "{} lanes still registered",
            sub.lanes_registered()
        );
    });
}
