//! Delivery at the seams of the per-thread lanes: drop-oldest evicts the
//! queue's oldest record whoever published it, `Block` waits for the byte
//! bound too, and a record logged at thread exit comes after the thread's
//! other records. Each of these failed before the delivery issue.

mod common;

use std::sync::Barrier;

use std::sync::Arc;

use logbus::{OverflowPolicy, Record, Subscription};

use common::stalled;

/// The published records written after the stalling record (drop
/// summaries aside).
fn written_after_stall(gate: &common::Gate) -> Vec<Arc<Record>> {
    let mut records = gate.captured.records();
    records.retain(|r| r.target() != "logbus");
    records.split_off(1)
}

fn messages(records: &[Arc<Record>]) -> Vec<&str> {
    records.iter().map(|r| r.message()).collect()
}

#[test]
fn drop_oldest_evicts_another_threads_older_records() {
    let (broker, gate) = stalled(|b| b.capacity(8));
    let publish = |who: &'static str, n: usize| {
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    log::info!(logger: &broker, target: "app", "{who} {i}");
                }
            });
        });
    };
    publish("quiet", 8); // fills the queue, then goes quiet
    publish("noisy", 100);
    gate.open();
    broker.flush().unwrap();
    let expected: Vec<String> = (92..100).map(|i| format!("noisy {i}")).collect();
    assert_eq!(messages(&written_after_stall(&gate)), expected);
    let s = broker.stats().subscriptions["s"];
    assert_eq!(
        (s.matched, s.written, s.dropped, s.in_queue),
        (109, 9, 100, 0),
        "{s:?}"
    );
}

#[test]
fn a_flood_from_four_threads_keeps_the_newest_records_queue_wide() {
    const THREADS: usize = 4;
    const PER: usize = 2000;
    let (broker, gate) = stalled(|b| b.capacity(1024));
    // Rounds: every thread logs its i-th record before any logs its next,
    // so the newest records queue-wide are well defined.
    let round = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (broker, round) = (&broker, &round);
            s.spawn(move || {
                for i in 0..PER {
                    log::info!(logger: broker, target: "app", "{t} {i}");
                    round.wait();
                }
            });
        }
    });
    gate.open();
    broker.flush().unwrap();
    let records = written_after_stall(&gate);
    let kept: Vec<u64> = records.iter().map(|r| r.seq()).collect();
    let s = broker.stats().subscriptions["s"];
    assert_eq!(s.matched, 1 + (THREADS * PER) as u64);
    assert_eq!(s.written + s.dropped, s.matched, "{s:?}");
    assert_eq!(s.written, 1 + kept.len() as u64);
    // Kept: exactly the newest, a contiguous run of seqs up to the last.
    let last = records.iter().map(|r| r.seq()).max().unwrap();
    let newest: Vec<u64> = (last + 1 - kept.len() as u64..=last).collect();
    assert_eq!(kept, newest, "the kept records are not the newest");
    // Every producer's last record is there.
    for t in 0..THREADS {
        let last = format!("{t} {}", PER - 1);
        assert!(
            records.iter().any(|r| r.message() == last),
            "{last:?} missing"
        );
    }
    // Place reservations a thread has not used yet count against the
    // capacity (a few per thread): most of the queue is kept.
    assert!(kept.len() > 1024 - 4 * 32, "only {} kept", kept.len());
}

#[test]
fn block_waits_for_the_byte_bound_instead_of_dropping() {
    for policy in [
        OverflowPolicy::Block,
        OverflowPolicy::BlockTimeout(common::SAFETY_NET),
    ] {
        let record_size = 200; // bytes a short record counts for, roughly
        let (broker, gate) = stalled(|b| b.max_bytes(4 * record_size).overflow(policy));
        std::thread::scope(|s| {
            let publisher = s.spawn(|| {
                for i in 0..10 {
                    log::info!(logger: &broker, target: "app", "r{i}");
                }
            });
            // The publisher blocks on the byte bound until the worker runs.
            gate.open();
            publisher.join().unwrap();
        });
        broker.flush().unwrap();
        let s = broker.stats().subscriptions["s"];
        assert_eq!(
            (s.matched, s.written, s.dropped),
            (11, 11, 0),
            "{policy:?}: {s:?}"
        );
    }
}

thread_local! {
    /// Logs one record from this thread's thread-local destructors, after
    /// the route view is gone (it goes through the shared channel).
    static AT_EXIT: ExitLogger = const { ExitLogger(std::cell::RefCell::new(None)) };
}

struct ExitLogger(std::cell::RefCell<Option<logbus::BrokerHandle>>);

impl Drop for ExitLogger {
    fn drop(&mut self) {
        if let Some(broker) = self.0.borrow_mut().take() {
            log::info!(logger: &broker, target: "app", "exit");
        }
    }
}

#[test]
fn a_record_logged_at_thread_exit_comes_after_the_threads_others() {
    let (broker, gate) = stalled(|b| b.capacity(4096).overflow(OverflowPolicy::Block));
    let handle = broker.handle();
    std::thread::spawn(move || {
        // Registered first, so destroyed after the route views.
        AT_EXIT.with(|exit| *exit.0.borrow_mut() = Some(handle.clone()));
        for i in 0..600 {
            log::info!(logger: &handle, target: "app", "{i}");
        }
    })
    .join()
    .unwrap();
    gate.open();
    broker.flush().unwrap();
    let mut expected: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    expected.push("exit".into());
    assert_eq!(messages(&written_after_stall(&gate)), expected);
    let s = broker.stats().subscriptions["s"];
    assert_eq!((s.matched, s.written, s.dropped), (602, 602, 0), "{s:?}");
}

/// Fails every record; stalls inside its first `append` until released.
struct GatedFailing {
    entered: crossbeam_channel::Sender<()>,
    release: crossbeam_channel::Receiver<()>,
    released: bool,
}

impl logbus::Appender for GatedFailing {
    fn append(&mut self, _record: &Record) -> Result<(), logbus::AppendError> {
        if !self.released {
            let _ = self.entered.send(());
            let _ = self.release.recv();
            self.released = true;
        }
        Err(logbus::AppendError::io(
            logbus::Operation::Write,
            std::io::Error::other("disk gone"),
        ))
    }

    fn flush(&mut self) -> Result<(), logbus::AppendError> {
        Ok(())
    }
}

#[test]
fn a_removal_in_progress_finishes_before_shutdown_stops_the_dead_letter_route() {
    let broker = common::broker();
    let (dead, dead_captured) = logbus::Memory::new();
    broker
        .set_dead_letter(Subscription::builder("dead", dead))
        .unwrap();
    let (entered_tx, entered) = crossbeam_channel::unbounded();
    let (release, release_rx) = crossbeam_channel::bounded(1);
    let failing = GatedFailing {
        entered: entered_tx,
        release: release_rx,
        released: false,
    };
    broker
        .subscribe(
            Subscription::builder("fails", failing)
                .retry(logbus::RetryPolicy::none())
                .circuit_breaker(logbus::CircuitBreaker::disabled()),
        )
        .unwrap();
    common::publish_n(&broker, "app", "r", 0..200);
    common::recv(&entered, "the failing worker to stall");
    std::thread::scope(|s| {
        // A removal from an ordinary thread: it waits for the stalled worker.
        let removal = s.spawn(|| broker.unsubscribe("fails").unwrap());
        while broker.subscription("fails").is_some() {
            std::thread::yield_now(); // until the removal has begun
        }
        // A shutdown while the removal is in progress: it must not stop the
        // dead-letter route while the removed worker can still feed it.
        let report = broker.shutdown_timeout(std::time::Duration::from_millis(1));
        assert!(report.unfinished.contains(&"dead".to_owned()), "{report:?}");
        let _ = release.send(());
        let fails = removal.join().unwrap();
        assert_eq!(
            (fails.matched, fails.dead_lettered, fails.lost),
            (200, 200, 0)
        );
    });
    // Shutting down again waits for the dead-letter route to drain.
    let report = broker.shutdown();
    assert!(report.unfinished.is_empty(), "{report:?}");
    let d = report.subscriptions["dead"];
    assert_eq!((d.matched, d.written, d.lost), (200, 200, 0), "{d:?}");
    assert_eq!(dead_captured.records().len(), 200);
}
