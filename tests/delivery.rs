//! Delivery: every subscriber of a topic gets every record published on it, in publish
//! order, typed and uncopied; non-matching subscribers get none, also under 8 publishers.

mod common;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use log::Level;
use logbus::{
    AppendError, Appender, BatchError, LevelFilter, Memory, MemoryHandle, Record, Subscription,
    Value,
};

#[track_caller]
fn assert_messages(name: &str, handle: &MemoryHandle, expected: &[&str]) {
    assert_eq!(
        common::user_messages(handle),
        expected,
        "messages of subscription {name:?}"
    );
}

#[test]
fn each_subscriber_gets_exactly_its_topics_in_publish_order() {
    let broker = common::broker();
    let mut handles = Vec::new();
    for (name, pattern) in [
        ("all", "#"),
        ("errors", "error.#"),
        ("db", "*.app.db.#"),
        ("warn_one", "warn.*"),
    ] {
        let (appender, captured) = Memory::new();
        broker
            .subscribe(Subscription::builder(name, appender).pattern(pattern))
            .unwrap();
        handles.push((name, captured));
    }
    // Two patterns on one subscription: delivered once if either matches.
    let (appender, both) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("two", appender)
                .pattern("error.#")
                .pattern("*.app.db.#"),
        )
        .unwrap();

    #[rustfmt::skip]
    let table: &[(Level, &str)] = &[
        (Level::Error, "app::db"),       // m0: error.app.db
        (Level::Warn, "app"),            // m1: warn.app
        (Level::Info, "app::db::pool"),  // m2: info.app.db.pool
        (Level::Warn, "app::db"),        // m3: warn.app.db
        (Level::Debug, "app::http"),     // m4: debug.app.http
        (Level::Error, ""),              // m5: error
        (Level::Trace, "app::db"),       // m6: trace.app.db
        (Level::Warn, "db"),             // m7: warn.db
        (Level::Info, "app"),            // m8: info.app
        (Level::Error, "app::dbx"),      // m9: error.app.dbx
    ];
    for (i, &(level, target)) in table.iter().enumerate() {
        log::log!(logger: &broker, target: target, level, "m{i}");
    }
    broker.flush().unwrap();

    let expected: &[(&str, &[&str])] = &[
        (
            "all",
            &["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"],
        ),
        ("errors", &["m0", "m5", "m9"]),
        ("db", &["m0", "m2", "m3", "m6"]),
        ("warn_one", &["m1", "m7"]),
    ];
    for ((name, captured), &(expected_name, messages)) in handles.iter().zip(expected) {
        assert_eq!(*name, expected_name);
        assert_messages(name, captured, messages);
        let stats = broker.subscription(name).unwrap().stats();
        assert_eq!(stats.matched, messages.len() as u64, "{name}");
        assert_eq!(stats.written, messages.len() as u64, "{name}");
        assert_eq!(stats.in_queue, 0, "{name}");
    }
    assert_messages("two", &both, &["m0", "m2", "m3", "m5", "m6", "m9"]);

    // The `#` subscriber saw every record with its own level and topic.
    let all = handles[0].1.records();
    for (record, &(level, target)) in all.iter().zip(table) {
        assert_eq!(record.level(), level);
        assert_eq!(record.target(), target);
    }
    assert_eq!(all.len(), table.len());
}

#[test]
fn predicate_filter_and_level_threshold() {
    let broker = common::broker();
    let (appender, kept) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("kept", appender).filter(|r| r.message().starts_with("keep")),
        )
        .unwrap();
    let (appender, info) = Memory::new();
    broker
        .subscribe(Subscription::builder("info", appender).level(LevelFilter::Info))
        .unwrap();
    let (appender, both) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("both", appender)
                .pattern("*.app.#")
                .level(LevelFilter::Warn)
                .filter(|r| r.message().contains('x')),
        )
        .unwrap();

    #[rustfmt::skip]
    let table: &[(Level, &str, &str)] = &[
        (Level::Error, "app", "keep-x1"),
        (Level::Warn, "app::db", "drop-x2"),
        (Level::Info, "app", "keep-3"),
        (Level::Debug, "app", "keep-x4"),
        (Level::Trace, "other", "drop-5"),
        (Level::Error, "other", "keep-x6"),
        (Level::Warn, "app", "drop-7"),
        (Level::Info, "app", "keep-x8"),
    ];
    for &(level, target, message) in table {
        log::log!(logger: &broker, target: target, level, "{message}");
    }
    broker.flush().unwrap();

    assert_messages(
        "kept",
        &kept,
        &["keep-x1", "keep-3", "keep-x4", "keep-x6", "keep-x8"],
    );
    assert_messages(
        "info",
        &info,
        &[
            "keep-x1", "drop-x2", "keep-3", "keep-x6", "drop-7", "keep-x8",
        ],
    );
    assert_messages("both", &both, &["keep-x1", "drop-x2"]);
    // Records a predicate or the level rejected are not `matched`.
    let stats = broker.stats();
    assert_eq!(stats.subscriptions["kept"].matched, 5);
    assert_eq!(stats.subscriptions["info"].matched, 6);
    assert_eq!(stats.subscriptions["both"].matched, 2);
    for (name, s) in &stats.subscriptions {
        assert_eq!(s.matched, s.written, "{name}");
        assert_eq!(s.dropped, 0, "{name}");
    }
}

#[test]
fn literal_messages_are_borrowed_and_formatted_ones_owned() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("mem", appender))
        .unwrap();
    let n = std::hint::black_box(7);
    log::info!(logger: &broker, target: "app", "literal");
    log::info!(logger: &broker, target: "app", "formatted {n}");
    broker.flush().unwrap();

    let records = captured.records();
    assert_eq!(records.len(), 2);
    assert!(
        matches!(records[0].message_cow(), Cow::Borrowed("literal")),
        "{:?}",
        records[0].message_cow()
    );
    assert!(
        matches!(records[1].message_cow(), Cow::Owned(m) if m == "formatted 7"),
        "{:?}",
        records[1].message_cow()
    );
}

#[test]
fn key_values_arrive_typed() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("mem", appender))
        .unwrap();
    log::info!(logger: &broker, target: "app", n = 5, u = 6u64, ok = true, s = "x"; "msg");
    log::info!(logger: &broker, target: "app", "no kv");
    broker.flush().unwrap();

    let records = captured.records();
    assert_eq!(records.len(), 2);
    let record = &records[0];
    assert_eq!(record.message(), "msg");
    let keys: Vec<&str> = record.key_values().iter().map(|(k, _)| &**k).collect();
    assert_eq!(keys, ["n", "u", "ok", "s"]);
    assert!(
        matches!(record.get("n"), Some(Value::I64(5) | Value::U64(5))),
        "{:?}",
        record.get("n")
    );
    assert_eq!(record.get("u"), Some(&Value::U64(6)));
    assert_eq!(record.get("ok"), Some(&Value::Bool(true)));
    assert!(
        matches!(record.get("s"), Some(Value::Str(s)) if s == "x"),
        "{:?}",
        record.get("s")
    );
    assert_eq!(record.get("missing"), None);
    assert!(records[1].key_values().is_empty());
}

/// Two brokers with a memory subscription each: the first's records take
/// the direct path; the second's a predicate that takes everything keeps
/// on the usual path.
fn direct_and_usual() -> [(logbus::Broker, MemoryHandle); 2] {
    [false, true].map(|usual| {
        let broker = common::broker();
        let (memory, seen) = Memory::new();
        let mut subscription = Subscription::builder("memory", memory);
        if usual {
            subscription = subscription.filter(|_: &Record| true);
        }
        broker.subscribe(subscription).unwrap();
        (broker, seen)
    })
}

/// Key-values travel in the slot beside their message on the direct path
/// (numbers, booleans, texts and none: `produce::Packable`), and come out
/// as the usual path makes them (a predicate that takes everything keeps
/// the record there): the same keys, in order, with the same types and
/// values; a `Display` value, or key-values too long for the slot beside
/// their message, keep the call on the usual path whole.
#[test]
fn the_direct_path_carries_key_values_as_the_usual_path_does() {
    let [(direct, direct_seen), (usual, usual_seen)] = direct_and_usual();
    for broker in [&direct, &usual] {
        let n = std::hint::black_box(42u64);
        let none: Option<u64> = None;
        log::info!(logger: broker, target: "app", u = n, i = -3i32, f = 0.1, ok = false, s = "x"; "short {n}");
        log::info!(logger: broker, target: "app", big = u64::MAX, min = i64::MIN, none = none; "literal");
        log::info!(logger: broker, target: "app", ключ = "значение ✓", nan = f64::NAN; "short {n}");
        log::info!(logger: broker, target: "app", shown:% = n, u = n; "a Display value");
        log::info!(logger: broker, target: "app", long = "a text that does not fit the slot beside the message"; "short {n} and more");
        log::info!(logger: broker, target: "app", empty = ""; "");
        broker.flush().unwrap();
    }
    let (d, u) = (direct_seen.records(), usual_seen.records());
    assert_eq!(d.len(), 6);
    assert_eq!(u.len(), 6);
    for (d, u) in d.iter().zip(&u) {
        assert_eq!(d.message(), u.message());
        assert_eq!(
            d.key_values().len(),
            u.key_values().len(),
            "{}",
            d.message()
        );
        for ((dk, dv), (uk, uv)) in d.key_values().iter().zip(u.key_values()) {
            assert_eq!(dk, uk);
            // NaN is not equal to itself: compare the bits.
            match (dv, uv) {
                (Value::F64(a), Value::F64(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{dk}"),
                _ => assert_eq!(dv, uv, "{dk}"),
            }
        }
        assert_eq!(d.approx_size(), u.approx_size(), "{}", d.message());
    }
    assert_eq!(d[0].get("i"), Some(&Value::I64(-3)));
    assert_eq!(d[1].get("big"), Some(&Value::U64(u64::MAX)));
    assert_eq!(d[1].get("none"), Some(&Value::Null));
    assert!(matches!(d[3].get("shown"), Some(Value::Str(s)) if s == "42"));
}

/// A key-value source that goes on after its visitor says stop (`log`'s
/// `Source` may stop then, need not).
struct Stubborn<'a>(&'a [(&'static str, log::kv::Value<'a>)]);

impl log::kv::Source for Stubborn<'_> {
    fn visit<'kvs>(
        &'kvs self,
        visitor: &mut dyn log::kv::VisitSource<'kvs>,
    ) -> Result<(), log::kv::Error> {
        for (key, value) in self.0 {
            let _ = visitor.visit_pair(log::kv::Key::from_str(key), value.clone());
        }
        Ok(())
    }
}

/// A source that visits every key-value whatever the visitor says gets the
/// same key-values on the direct path as on the usual one: the packing,
/// stopped at a `Display` value, packs none after it (a review found the
/// later ones packed and the `Display` one lost).
#[test]
fn a_source_that_does_not_stop_gets_every_key_value_once() {
    let shown = std::hint::black_box(5);
    let pairs = [
        ("a", log::kv::Value::from(1u64)),
        ("b", log::kv::Value::from_display(&shown)),
        ("c", log::kv::Value::from(3u64)),
    ];
    let source = Stubborn(&pairs);
    let mut keys = Vec::new();
    for (broker, seen) in direct_and_usual() {
        let record = log::Record::builder()
            .args(format_args!("msg"))
            .level(log::Level::Info)
            .target("app")
            .module_path_static(Some(module_path!()))
            .file_static(Some(file!()))
            .line(Some(line!()))
            .key_values(&source)
            .build();
        log::Log::log(&broker, &record);
        broker.flush().unwrap();
        let records = seen.records();
        keys.push(
            records[0]
                .key_values()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(keys[0], ["a=1", "b=5", "c=3"]);
    assert_eq!(keys[0], keys[1]);
}

#[test]
fn topic_is_level_then_target_with_dots() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("mem", appender))
        .unwrap();
    let line = line!() + 1;
    log::warn!(logger: &broker, target: "app::db", "retrying");
    log::error!(logger: &broker, target: "", "no target");
    broker.flush().unwrap();

    let records = captured.records();
    assert_eq!(records.len(), 2);
    let record = &records[0];
    assert_eq!(record.topic().as_str(), "warn.app.db");
    assert_eq!(record.target(), "app::db");
    assert_eq!(record.level(), Level::Warn);
    assert_eq!(record.file(), Some(file!()));
    assert_eq!(record.module_path(), Some(module_path!()));
    assert_eq!(record.line(), Some(line));
    assert_eq!(records[1].topic().as_str(), "error");
}

#[test]
fn seq_strictly_increases_in_publish_order() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("mem", appender))
        .unwrap();
    let n = common::scaled(1_000, 50);
    for i in 0..n {
        match i % 3 {
            0 => log::info!(logger: &broker, target: "a", "{i}"),
            1 => log::error!(logger: &broker, target: "b::c", "{i}"),
            _ => log::trace!(logger: &broker, target: "d", "{i}"),
        }
    }
    broker.flush().unwrap();

    let expected: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    assert_eq!(common::user_messages(&captured), expected);
    let seqs = captured.seqs();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs not strictly increasing: {seqs:?}"
    );
}

/// Records `(thread, counter)` parsed from messages `"<thread>:<counter>"`,
/// and the `dropped` count of each synthetic summary record. Compact, so
/// that 800,000 records cost a few megabytes.
#[derive(Default)]
struct Tally {
    seen: Vec<(u8, u32)>,
    summarised_drops: u64,
}

struct TallyAppender(Arc<Mutex<Tally>>);

impl TallyAppender {
    fn new() -> (TallyAppender, Arc<Mutex<Tally>>) {
        let tally = Arc::new(Mutex::new(Tally::default()));
        (TallyAppender(Arc::clone(&tally)), tally)
    }
}

fn tally_one(tally: &mut Tally, record: &Record) {
    if record.target() == "logbus" {
        match record.get("dropped") {
            Some(Value::U64(n)) => tally.summarised_drops += n,
            other => panic!("summary without a dropped count: {other:?}"),
        }
        return;
    }
    let (thread, counter) = record
        .message()
        .split_once(':')
        .unwrap_or_else(|| panic!("unexpected message {:?}", record.message()));
    tally
        .seen
        .push((thread.parse().unwrap(), counter.parse().unwrap()));
}

impl Appender for TallyAppender {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        tally_one(&mut self.0.lock().unwrap(), record);
        Ok(())
    }

    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), BatchError> {
        let mut tally = self.0.lock().unwrap();
        for record in records {
            tally_one(&mut tally, record);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

const THREADS: usize = 8;
const TARGETS: [&str; THREADS] = [
    "t0::w", "t1::w", "t2::w", "t3::w", "t4::w", "t5::w", "t6::w", "t7::w",
];

/// Splits `seen` per publishing thread, checking every counter is below `per_thread`.
fn per_thread(seen: &[(u8, u32)], per_thread: u64) -> Vec<Vec<u32>> {
    let mut split = vec![Vec::new(); THREADS];
    for &(thread, counter) in seen {
        assert!(
            u64::from(counter) < per_thread,
            "counter {counter} out of range"
        );
        split[usize::from(thread)].push(counter);
    }
    split
}

#[test]
fn eight_publishers_each_subscriber_sees_per_thread_program_order() {
    // 100_000 per thread in debug and release alike; only Miri is scaled down.
    let per: u64 = common::scaled(100_000, 200);
    assert_eq!(per % 4, 0, "every 4th record is a warning");
    let broker = common::broker();

    // `#` with a small DropOldest queue: drops happen, and must be counted.
    let (appender, all) = TallyAppender::new();
    broker
        .subscribe(Subscription::builder("all", appender).capacity(1024))
        .unwrap();
    // Thread 0 only, with room for everything: nothing may be dropped.
    let (appender, t0) = TallyAppender::new();
    broker
        .subscribe(
            Subscription::builder("t0", appender)
                .pattern("*.t0.#")
                .capacity(per as usize),
        )
        .unwrap();
    // Warnings of every thread, with room for all of them.
    let (appender, warn) = TallyAppender::new();
    broker
        .subscribe(
            Subscription::builder("warn", appender)
                .pattern("warn.#")
                .capacity((THREADS as u64 * per / 4) as usize),
        )
        .unwrap();

    std::thread::scope(|s| {
        for (t, target) in TARGETS.iter().enumerate() {
            let broker = &broker;
            s.spawn(move || {
                for i in 0..per {
                    let level = if i % 4 == 0 { Level::Warn } else { Level::Info };
                    log::log!(logger: broker, target: target, level, "{t}:{i}");
                }
            });
        }
    });
    broker.flush().unwrap();
    let stats = broker.stats();

    // all: exact matched, every record written or dropped, per-thread order.
    let s = stats.subscriptions["all"];
    assert_eq!(s.matched, THREADS as u64 * per);
    assert_eq!(s.matched, s.written + s.dropped, "{s:?}");
    assert_eq!((s.in_queue, s.lost, s.dead_lettered), (0, 0, 0), "{s:?}");
    let tally = all.lock().unwrap();
    assert_eq!(tally.seen.len() as u64, s.written);
    assert_eq!(
        tally.summarised_drops, s.dropped,
        "summaries report every drop"
    );
    for (thread, counters) in per_thread(&tally.seen, per).iter().enumerate() {
        assert!(
            counters.windows(2).all(|w| w[0] < w[1]),
            "thread {thread}: records out of program order"
        );
    }
    drop(tally);

    // t0: exactly thread 0's records, all of them, in order.
    let s = stats.subscriptions["t0"];
    assert_eq!(
        (s.matched, s.written, s.dropped, s.in_queue),
        (per, per, 0, 0),
        "{s:?}"
    );
    let tally = t0.lock().unwrap();
    let split = per_thread(&tally.seen, per);
    assert!(
        split[1..].iter().all(Vec::is_empty),
        "t0 got another thread's records"
    );
    assert!(
        split[0].iter().copied().eq(0..per as u32),
        "t0 lost or reordered records"
    );
    assert_eq!(tally.summarised_drops, 0);
    drop(tally);

    // warn: every 4th record of each thread, in order.
    let warnings = THREADS as u64 * per / 4;
    let s = stats.subscriptions["warn"];
    assert_eq!(
        (s.matched, s.written, s.dropped, s.in_queue),
        (warnings, warnings, 0, 0),
        "{s:?}"
    );
    let tally = warn.lock().unwrap();
    for (thread, counters) in per_thread(&tally.seen, per).iter().enumerate() {
        assert!(
            counters.iter().copied().eq((0..per as u32).step_by(4)),
            "thread {thread}: warnings lost or reordered"
        );
    }
    assert_eq!(tally.summarised_drops, 0);
}

/// Logs through `handle` when the thread's thread-locals are destroyed.
struct LogsOnExit(Option<logbus::BrokerHandle>);

impl Drop for LogsOnExit {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            log::info!(logger: &handle, target: "app", "from a destructor");
        }
    }
}

thread_local! {
    static ON_EXIT: std::cell::RefCell<LogsOnExit> = const { std::cell::RefCell::new(LogsOnExit(None)) };
}

#[test]
fn a_log_call_from_a_thread_local_destructor_is_delivered() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("all", appender))
        .unwrap();
    let handle = broker.handle();
    std::thread::spawn(move || {
        // Registered before logbus' own thread-locals, so (destructors run
        // in reverse order on Linux) it runs after logbus' route cache is
        // gone: the call must take the uncached path, not vanish.
        ON_EXIT.with(|cell| cell.borrow_mut().0 = Some(handle.clone()));
        log::info!(logger: &handle, target: "app", "from the thread");
    })
    .join()
    .unwrap();
    broker.flush().unwrap();
    assert_eq!(
        captured.messages(),
        ["from the thread", "from a destructor"]
    );
    let stats = broker.stats();
    assert_eq!(stats.suppressed, 0);
    assert_eq!(stats.subscriptions["all"].written, 2);
}

/// Each subscription's predicate runs once per record, also when another
/// one rejects it (a review found the predicates before the first
/// rejection run twice: a sampling predicate would have sampled twice).
#[test]
fn each_predicate_runs_once_per_record() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let broker = common::broker();
    let calls: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    for (i, count) in calls.iter().enumerate() {
        let count = Arc::clone(count);
        broker
            .subscribe(
                logbus::Subscription::builder(format!("s{i}"), logbus::Memory::new().0).filter(
                    move |_| {
                        count.fetch_add(1, Ordering::Relaxed);
                        i != 1 // the middle one rejects
                    },
                ),
            )
            .unwrap();
    }
    log::info!(logger: &broker, "one record");
    broker.flush().unwrap();
    let runs: Vec<usize> = calls.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    assert_eq!(runs, [1, 1, 1]);
    let stats = broker.stats();
    let matched: Vec<u64> = (0..3)
        .map(|i| stats.subscriptions[&format!("s{i}")].matched)
        .collect();
    assert_eq!(matched, [1, 0, 1]);
}

/// A record on the direct path (one subscription, no predicate: the caller
/// builds no record, the worker builds it from the lane slot's copy) reads
/// exactly as the same call's record on the usual path (a predicate that
/// takes everything keeps it there): message, how it is held, location,
/// thread, topic; for short, literal, long and cut messages.
#[test]
fn the_direct_path_makes_the_records_the_usual_path_makes() {
    let [(direct, direct_seen), (usual, usual_seen)] = direct_and_usual();
    let long = "x".repeat(300);
    let huge = "y".repeat(100_000);
    let before = std::time::SystemTime::now();
    for broker in [&direct, &usual] {
        let n = std::hint::black_box(42);
        log::info!(logger: broker, target: "app::db", "short {n}");
        log::warn!(logger: broker, target: "app::db", "a literal longer than the fifty-six bytes a slot holds, not copied");
        log::error!(logger: broker, target: "app::db", "long {n} {long}");
        log::info!(logger: broker, target: "app::db", "cut {n} {huge}");
        broker.flush().unwrap();
    }
    let after = std::time::SystemTime::now();
    let (direct_records, usual_records) = (direct_seen.records(), usual_seen.records());
    assert_eq!(direct_records.len(), 4);
    assert_eq!(usual_records.len(), 4);
    for (d, u) in direct_records.iter().zip(&usual_records) {
        assert_eq!(d.message(), u.message());
        assert_eq!(
            matches!(d.message_cow(), Cow::Borrowed(_)),
            matches!(u.message_cow(), Cow::Borrowed(_)),
            "{}",
            d.message()
        );
        assert_eq!(d.topic(), u.topic());
        assert_eq!(d.module_path(), u.module_path());
        assert_eq!(d.file(), u.file());
        assert_eq!(d.thread(), u.thread());
        assert!(d.key_values().is_empty() && u.key_values().is_empty());
        assert!(d.time() >= before && d.time() <= after);
    }
    assert!(matches!(direct_records[1].message_cow(), Cow::Borrowed(_)));
    assert!(
        direct_records[3].message().len() < huge.len(),
        "cut by the size bound"
    );
    for broker in [&direct, &usual] {
        assert_eq!(broker.stats().truncated, 1);
    }
}
