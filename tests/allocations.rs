//! A warm log call allocates nothing on the caller's thread, through
//! `log::info!` (the caller formats into a reused record) and through
//! `logbus::info!` (deferred: the worker formats), with key-values (packed
//! into the slot, or, with a `Display` value, into the reused record's
//! strings), also for two
//! subscriptions (the parts copied to each), and when the journal
//! keeps its records (which makes the caller format the message: the
//! journal counts what it holds). Alone in its test binary: a
//! `#[global_allocator]` is the whole binary's. The count is of the calling
//! thread's allocations only (a thread-local flag), so the workers' do not
//! blur it, and nothing in it depends on timing: after each batch the test
//! flushes (not counted), so every record the journal lets go of has been
//! written and can be reused. Matching a topic against a pattern (per
//! record in a journal read, the flight recorder and a route's miss)
//! allocates nothing either.

mod common;
// Not a module of `common`: it holds `unsafe` code, which some test
// binaries forbid.
#[path = "common/counting.rs"]
mod counting;

use std::sync::mpsc;

use counting::{count, Counting};
use logbus::{AppendError, Appender, Broker, Journal, LevelFilter, Record, Subscription};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// How many allocations the calling thread makes in `f`.
fn allocations(f: impl FnOnce()) -> u64 {
    count(f).1
}

/// Reads each record's message (formatting it, when nobody did), keeps
/// nothing: its records go back for reuse. Its first `append` waits for
/// the test's word (`Gate`), so that a burst queues whole.
struct Reader {
    read: usize,
    entered: Option<mpsc::Sender<()>>,
    release: mpsc::Receiver<()>,
}

/// The test's side of a [`Reader`].
struct Gate {
    entered: mpsc::Receiver<()>,
    release: mpsc::Sender<()>,
}

fn reader() -> (Reader, Gate) {
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let reader = Reader {
        read: 0,
        entered: Some(entered_tx),
        release: release_rx,
    };
    (reader, Gate { entered, release })
}

impl Appender for Reader {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        if let Some(entered) = self.entered.take() {
            let _ = entered.send(());
            // Ok or disconnected: either way, go on.
            let _ = self.release.recv();
        }
        self.read += record.message().len();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Which macro a test's calls go through.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// `log::info!`: formatted on the caller.
    Log,
    /// `logbus::info!`: deferred.
    Deferred,
    /// `log::info!` with a message longer than a lane slot holds (56
    /// bytes): formatted into the caller's spill buffer, which the record
    /// then takes in exchange for its old one.
    LongLog,
    /// `log::info!` with key-values a slot carries (a number, a text, a
    /// boolean): packed into the slot beside the message, no record made.
    KeyValues,
    /// `log::info!` with a `Display` key-value too: the record is made on
    /// the caller's thread, its keys and texts in strings the reused record
    /// kept from its last key-values.
    SharedKeyValues,
}

/// The workload's call, `i` its number.
fn call(broker: &Broker, path: Path, i: u64) {
    match path {
        Path::Log => {
            log::info!(logger: broker, target: "app::http", "request {} served in {} us", i, i % 1000)
        }
        Path::Deferred => {
            logbus::info!(logger: broker, target: "app::http", "request {} served in {} us", i, i % 1000)
        }
        Path::LongLog => log::info!(
            logger: broker,
            target: "app::http",
            "request {} served in {} us to a client that sent a header much too long for a slot",
            i,
            i % 1000
        ),
        Path::KeyValues => log::info!(
            logger: broker,
            target: "app::http",
            id = i,
            user = "alice",
            ok = true;
            "request served"
        ),
        Path::SharedKeyValues => log::info!(
            logger: broker,
            target: "app::http",
            id = i,
            user = "alice",
            took:% = format_args!("{} us", i % 1000);
            "request served"
        ),
    }
}

/// Logs `batches` batches of 100 calls, flushing after each (the flush not
/// counted), and returns the calling thread's allocations during the calls.
/// Every message here is 27 to 30 bytes long (108 to 111 for the long
/// one), and a record's buffer, grown by doubling as the message is written
/// piece by piece, holds 32 (128) after its first: no reused record needs
/// to grow (deterministic, not timing).
fn log_batches(broker: &Broker, path: Path, batches: u64) -> u64 {
    let mut total = 0;
    for batch in 0..batches {
        total += allocations(|| {
            for i in batch * 100..(batch + 1) * 100 {
                call(broker, path, i);
            }
        });
        broker.flush().unwrap();
    }
    total
}

/// Records the warm-up burst queues while the worker waits: all are new
/// (nothing has been handed back yet), and afterwards they go round, more
/// than a batch of 100 needs even with the worker's part-filled hand-back
/// batch (up to 63) away; fewer than a lane's first ring (256 slots), which
/// so never grows (a ring that grew shrinks back later, and allocates its
/// new ring then). With a warm-up that let the worker keep pace, how many
/// records go round would depend on timing, and a slow moment of the worker
/// later would make the caller allocate new ones.
const BURST: u64 = 200;

#[test]
fn a_warm_log_call_allocates_nothing_on_the_caller_with_or_without_a_journal() {
    common::enable_all_levels();
    for path in [
        Path::Log,
        Path::Deferred,
        Path::LongLog,
        Path::KeyValues,
        Path::SharedKeyValues,
    ] {
        warm_calls_allocate_nothing(path);
    }
}

fn warm_calls_allocate_nothing(path: Path) {
    // A deferred call without a journal is formatted by the worker; with
    // one, by the caller (for the journal, or earlier for a predicate that
    // reads the message); a `log::info!` call always by the caller, into
    // the reused record's buffer. A second subscription makes the call's
    // parts go to both as copies (the direct path's fan-out), key-values
    // packed beside the message; not with a long message or a `Display`
    // key-value, which two subscriptions share as one pooled record, and
    // whose return to the pool from two workers' part-filled hand-back
    // batches this burst does not cover (24 allocations in 20,000 calls).
    // With the `serde` feature, a `Display` key-value is probed for a
    // structured value first, without allocating (`capture.rs`).
    let cases = [
        (false, false, false),
        (false, false, true),
        (true, false, false),
        (true, true, false),
    ];
    let cases = cases.into_iter().filter(|&(_, _, second)| match path {
        Path::LongLog | Path::SharedKeyValues => !second,
        _ => true,
    });
    for (journal, predicate, second) in cases {
        let (reader, gate) = reader();
        let mut subscription = Subscription::builder("reader", reader).level(LevelFilter::Trace);
        if predicate {
            subscription = subscription.filter(|r: &Record| r.message().starts_with("request"));
        }
        let mut builder = logbus::builder().appender(subscription);
        if second {
            // Its gate dropped: its first append does not wait.
            let second =
                Subscription::builder("second", crate::reader().0).level(LevelFilter::Trace);
            builder = builder.appender(second);
        }
        if journal {
            builder = builder.journal(Journal::new());
        }
        let broker = builder.build().unwrap();
        logbus::info!(logger: &broker, target: "app::http", "request {} served", 0);
        gate.entered.recv().unwrap();
        for i in 0..BURST {
            call(&broker, path, i);
        }
        gate.release.send(()).unwrap();
        broker.flush().unwrap();
        // Then past the journal's default 10,000 records, so that it lets
        // go of one record per append, and the caller reuses those.
        let warm_up = log_batches(&broker, path, 100);
        let measured = log_batches(&broker, path, 200);
        println!(
            "{path:?}, journal {journal}, predicate {predicate}, second {second}: {warm_up} allocations in \
             10,000 warm-up calls after the burst, {measured} in the next 20,000"
        );
        assert_eq!(
            measured, 0,
            "{path:?}, journal {journal}, predicate {predicate}, second {second}: allocations on the caller \
             in 20,000 calls"
        );
        // Every call was delivered: nothing here passes with nothing logged.
        let stats = broker.subscription("reader").unwrap().stats();
        let calls = 1 + BURST + 30_000;
        assert_eq!(
            (stats.matched, stats.written, stats.dropped),
            (calls, calls, 0),
            "{path:?}, journal {journal}, predicate {predicate}, second {second}"
        );
        if journal {
            let stats = broker.journal().unwrap().stats();
            assert_eq!(stats.released + stats.records as u64, calls);
        }
    }
}

/// Matching a topic against a pattern (what a journal read, the flight
/// recorder and a route's miss do per record) allocates nothing.
#[test]
fn matching_a_topic_allocates_nothing() {
    let patterns: Vec<logbus::TopicPattern> = ["#", "*.app.db.#", "warn.#.db", "a.#.b.#.c"]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    let topics = [
        "warn.app.db",
        "info.app.db.pool",
        "a.x.b.y.z.c",
        "a.c.b",
        "",
    ];
    let mut matched = 0;
    let made = allocations(|| {
        for pattern in &patterns {
            for topic in topics {
                matched += usize::from(pattern.matches(topic));
            }
        }
    });
    assert_eq!(made, 0);
    // "#" matches all 5; "*.app.db.#" 2; "warn.#.db" 1; "a.#.b.#.c" 1.
    assert_eq!(matched, 9);
}
