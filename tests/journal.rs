//! The journal: retention, reading, replay and its hand-over, loss-free
//! replacement, and the flight recorder. Local brokers only.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::thread;

use crossbeam_channel::bounded;
use logbus::{
    FlightRecorder, FlushError, Journal, JournalError, JournalQuery, Level, LevelFilter, Memory,
    MemoryHandle, OverflowPolicy, Record, ReplaceError, Replay, Retention, SubscribeError,
    Subscription, SubscriptionStats, Value, CONTEXT_KEY,
};

use common::{enable_all_levels, recv, scaled};

fn journal_broker(journal: Journal) -> logbus::Broker {
    enable_all_levels();
    logbus::builder().journal(journal).build().unwrap()
}

/// A lossless subscription: nothing it matches may be dropped.
fn lossless(name: &str, appender: Memory) -> logbus::SubscriptionBuilder {
    Subscription::builder(name, appender).overflow(OverflowPolicy::Block)
}

fn assert_accounted(stats: SubscriptionStats) {
    assert_eq!(
        stats.matched,
        stats.written + stats.dropped + stats.dead_lettered + stats.lost + stats.in_queue,
        "{stats:?}"
    );
}

/// The user records' seqs (logbus' own notices left out).
fn user_seqs(handle: &MemoryHandle) -> Vec<u64> {
    handle
        .records()
        .iter()
        .filter(|r| r.target() != "logbus")
        .map(|r| r.seq())
        .collect()
}

#[test]
fn retention_by_count_keeps_the_newest() {
    let broker = journal_broker(Journal::new().records(100));
    common::publish_n(&broker, "app", "m", 0..1000);
    let stats = broker.journal().unwrap().stats();
    assert_eq!(stats.records, 100);
    assert_eq!(stats.released, 900);
    assert_eq!((stats.oldest, stats.newest), (Some(900), Some(999)));
}

#[test]
fn retention_by_bytes_never_exceeds_the_limit() {
    let limit = 64 * 1024;
    let broker = journal_broker(Journal::new().bytes(limit));
    let journal = broker.journal().unwrap();
    let mut most = 0;
    for i in 0..5_000 {
        log::info!(logger: &broker, target: "app", "{i:>200}");
        let stats = journal.stats();
        assert!(stats.bytes <= limit, "{stats:?}");
        most = most.max(stats.records);
    }
    let stats = journal.stats();
    // Every record holds the same: the journal holds as many as fit.
    let one = stats.bytes / stats.records;
    assert_eq!(stats.bytes % stats.records, 0, "{stats:?}");
    assert_eq!(stats.records, limit / one);
    assert_eq!(most, stats.records);
    assert_eq!(stats.released, 5_000 - stats.records as u64);
}

#[test]
fn the_journal_keeps_its_level_and_topics_only() {
    let broker = journal_broker(
        Journal::new()
            .level(LevelFilter::Warn)
            .pattern("*.app.db.#"),
    );
    log::warn!(logger: &broker, target: "app::db", "kept");
    log::info!(logger: &broker, target: "app::db", "too verbose");
    log::error!(logger: &broker, target: "app::http", "other topic");
    log::error!(logger: &broker, target: "app::db::pool", "kept too");
    let messages: Vec<String> = broker
        .journal()
        .unwrap()
        .iter(JournalQuery::new())
        .unwrap()
        .map(|r| r.message().to_owned())
        .collect();
    assert_eq!(messages, ["kept", "kept too"]);
}

#[test]
fn the_reader_filters_by_offset_topic_and_level() {
    let broker = journal_broker(Journal::new().level(LevelFilter::Trace));
    for i in 0..600u64 {
        match i % 3 {
            0 => log::error!(logger: &broker, target: "app::db", "{i}"),
            1 => log::info!(logger: &broker, target: "app::db", "{i}"),
            _ => log::debug!(logger: &broker, target: "app::http", "{i}"),
        }
    }
    let journal = broker.journal().unwrap();
    let seqs = |query: JournalQuery| -> Vec<u64> {
        journal.iter(query).unwrap().map(|r| r.seq()).collect()
    };
    // More than one chunk of the iterator.
    assert_eq!(seqs(JournalQuery::new()), (0..600).collect::<Vec<_>>());
    assert_eq!(
        seqs(JournalQuery::new().from(590)),
        (590..600).collect::<Vec<_>>()
    );
    let db = seqs(JournalQuery::new().pattern("*.app.db"));
    assert_eq!(db, (0..600).filter(|i| i % 3 != 2).collect::<Vec<_>>());
    let errors = seqs(JournalQuery::new().level(LevelFilter::Error).from(300));
    assert_eq!(
        errors,
        (300..600).filter(|i| i % 3 == 0).collect::<Vec<_>>()
    );
    let both = seqs(JournalQuery::new().pattern("error.#").pattern("debug.#"));
    assert_eq!(both, (0..600).filter(|i| i % 3 != 1).collect::<Vec<_>>());
    let bad = journal.iter(JournalQuery::new().pattern("app..db"));
    assert!(bad.is_err());
}

#[test]
fn bad_settings_get_typed_errors() {
    let broker = journal_broker(Journal::new());
    assert!(matches!(
        broker.set_journal(Journal::new().records(0)),
        Err(JournalError::ZeroRecords)
    ));
    assert!(matches!(
        broker.set_journal(Journal::new().bytes(0)),
        Err(JournalError::ZeroBytes)
    ));
    let bad = broker.set_journal(Journal::new().pattern("a.#.#b"));
    assert!(matches!(bad, Err(JournalError::Pattern(_))), "{bad:?}");
    let built = logbus::builder().journal(Journal::new().records(0)).build();
    assert!(matches!(
        built,
        Err(logbus::InstallError::Journal(JournalError::ZeroRecords))
    ));

    let bare = common::broker();
    let replay = bare.subscribe(Subscription::builder("r", Memory::new().0).replay(Replay::Oldest));
    assert!(matches!(replay, Err(SubscribeError::NoJournal)));
    let recorder = bare.subscribe(
        Subscription::builder("f", Memory::new().0).flight_recorder(FlightRecorder::new()),
    );
    assert!(matches!(recorder, Err(SubscribeError::NoJournal)));
    assert!(bare.journal().is_none());
    let bad_trigger = broker.subscribe(
        Subscription::builder("f", Memory::new().0)
            .flight_recorder(FlightRecorder::new().trigger_pattern("*b")),
    );
    assert!(matches!(bad_trigger, Err(SubscribeError::Pattern(_))));
}

#[test]
fn limits_change_at_runtime_and_the_journal_can_go() {
    let broker = journal_broker(Journal::new());
    common::publish_n(&broker, "app", "m", 0..50);
    broker.set_journal(Journal::new().records(10)).unwrap();
    let stats = broker.journal().unwrap().stats();
    assert_eq!((stats.records, stats.oldest), (10, Some(40)));
    broker.remove_journal().unwrap();
    assert!(broker.journal().is_none());
    broker.shutdown();
    assert!(matches!(
        broker.set_journal(Journal::new()),
        Err(JournalError::ShutDown)
    ));
}

#[test]
fn replay_last_n_then_live() {
    let broker = journal_broker(Journal::new());
    common::publish_n(&broker, "app", "old", 0..20);
    log::info!(logger: &broker, target: "other", "not matched");
    let (memory, captured) = Memory::new();
    let handle = broker
        .subscribe(
            Subscription::builder("late", memory)
                .pattern("*.app")
                .filter(|r| !r.message().ends_with('7'))
                .replay(Replay::Last(5)),
        )
        .unwrap();
    common::publish_n(&broker, "app", "new", 0..3);
    broker.flush().unwrap();
    assert_eq!(
        captured.messages(),
        ["old14", "old15", "old16", "old18", "old19", "new0", "new1", "new2"]
    );
    let report = handle.replay_report().unwrap();
    assert_eq!(
        (report.first, report.live_from, report.records),
        (Some(14), 21, 5)
    );
    assert_eq!(report.gap, None);
    let stats = handle.stats();
    assert_eq!((stats.matched, stats.written), (8, 8));
    assert_accounted(stats);
}

#[test]
fn replay_from_the_oldest_and_from_an_offset() {
    let broker = journal_broker(Journal::new());
    common::publish_n(&broker, "app", "m", 0..10);
    let (oldest, from_oldest) = Memory::new();
    broker
        .subscribe(Subscription::builder("oldest", oldest).replay(Replay::Oldest))
        .unwrap();
    let (offset, from_offset) = Memory::new();
    broker
        .subscribe(Subscription::builder("offset", offset).replay(Replay::From(7)))
        .unwrap();
    // An offset not published yet skips live records until it.
    let (future, from_future) = Memory::new();
    let handle = broker
        .subscribe(Subscription::builder("future", future).replay(Replay::From(12)))
        .unwrap();
    common::publish_n(&broker, "app", "m", 10..14);
    broker.flush().unwrap();
    assert_eq!(from_oldest.seqs(), (0..14).collect::<Vec<_>>());
    assert_eq!(from_offset.seqs(), (7..14).collect::<Vec<_>>());
    assert_eq!(from_future.seqs(), [12, 13]);
    assert_eq!(handle.replay_report().unwrap().live_from, 12);
}

#[test]
fn an_offset_the_journal_no_longer_holds_reports_the_gap() {
    let broker = journal_broker(Journal::new().records(10));
    common::publish_n(&broker, "app", "m", 0..30);
    let (memory, captured) = Memory::new();
    let handle = broker
        .subscribe(Subscription::builder("late", memory).replay(Replay::From(5)))
        .unwrap();
    broker.flush().unwrap();
    let report = handle.replay_report().unwrap();
    let gap = report.gap.expect("a gap");
    assert_eq!((gap.requested, gap.oldest_retained), (5, Some(20)));
    assert_eq!((report.first, report.records), (Some(20), 10));
    let records = captured.records();
    assert_eq!(records.len(), 11);
    let notice = &records[0];
    assert_eq!(
        (notice.level(), notice.target(), notice.seq()),
        (Level::Warn, "logbus", 19)
    );
    assert!(
        notice.message().contains("offset 5"),
        "{}",
        notice.message()
    );
    assert_eq!(notice.get("oldest_retained"), Some(&Value::U64(20)));
    assert_eq!(user_seqs(&captured), (20..30).collect::<Vec<_>>());
    let stats = handle.stats();
    assert_eq!((stats.matched, stats.written), (11, 11));
    assert_accounted(stats);
}

/// The records each of `threads` publishing threads sends: `per_thread`
/// info records on `app::t<k>`; `signal` hears from thread 0 halfway.
fn flood(
    broker: &logbus::Broker,
    threads: usize,
    per_thread: u64,
    signal: crossbeam_channel::Sender<()>,
) -> Vec<thread::JoinHandle<()>> {
    let start = Arc::new(Barrier::new(threads));
    (0..threads)
        .map(|k| {
            let (broker, start, signal) = (broker.handle(), Arc::clone(&start), signal.clone());
            thread::spawn(move || {
                let target = format!("app::t{k}");
                start.wait();
                for i in 0..per_thread {
                    log::info!(logger: &broker, target: &target, "{k} {i}");
                    if k == 0 && i == per_thread / 2 {
                        let _ = signal.send(());
                    }
                }
            })
        })
        .collect()
}

/// Each thread's records arrive in the order it published them.
fn assert_per_thread_order(records: &[Arc<Record>]) {
    let mut last = std::collections::HashMap::new();
    for r in records.iter().filter(|r| r.target() != "logbus") {
        let previous = last.insert(r.target().to_owned(), r.seq());
        assert!(
            previous.map_or(true, |p| p < r.seq()),
            "{} out of order",
            r.seq()
        );
    }
}

#[test]
fn replay_hands_over_without_gap_or_duplicate_under_four_publishers() {
    let per_thread = scaled(20_000, 200);
    let broker = journal_broker(Journal::new().records(1 << 20).bytes(1 << 30));
    let (all, everything) = Memory::new();
    broker.subscribe(lossless("all", all)).unwrap();
    let (tx, rx) = bounded(1);
    let threads = flood(&broker, 4, per_thread, tx);
    recv(&rx, "the flood's halfway mark");
    let newest = broker.journal().unwrap().stats().newest.unwrap();
    let start = newest.saturating_sub(1_000);
    let (late, replayed) = Memory::new();
    let handle = broker
        .subscribe(
            lossless("late", late)
                .pattern("*.app.#")
                .replay(Replay::From(start)),
        )
        .unwrap();
    for t in threads {
        t.join().unwrap();
    }
    broker.flush().unwrap();
    let expected: Vec<u64> = everything
        .seqs()
        .into_iter()
        .filter(|&s| s >= start)
        .collect();
    let got = replayed.seqs();
    let unique: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(
        unique.len(),
        got.len(),
        "duplicates in the replaying subscription"
    );
    assert_eq!(unique, expected.iter().copied().collect::<BTreeSet<u64>>());
    assert_per_thread_order(&replayed.records());
    let report = handle.replay_report().unwrap();
    assert_eq!(report.gap, None);
    assert_eq!(report.first, Some(start));
    // Replayed first, in seq order, then live.
    assert!(got[..report.records].windows(2).all(|w| w[0] < w[1]));
    assert!(got[report.records..].iter().all(|&s| s >= report.live_from));
    let stats = handle.stats();
    assert_eq!(stats.written as usize, expected.len());
    assert_accounted(stats);
    assert_eq!(everything.len() as u64, 4 * per_thread);
}

#[test]
fn replacement_under_load_delivers_every_record_exactly_once() {
    let per_thread = scaled(20_000, 200);
    let broker = journal_broker(Journal::new());
    let (all, everything) = Memory::new();
    broker.subscribe(lossless("all", all)).unwrap();
    let (old, old_records) = Memory::new();
    broker.subscribe(lossless("app", old)).unwrap();
    let (tx, rx) = bounded(1);
    let threads = flood(&broker, 4, per_thread, tx);
    recv(&rx, "the flood's halfway mark");
    let (new, new_records) = Memory::new();
    let (handle, old_stats) = broker.replace("app", lossless("app", new)).unwrap();
    for t in threads {
        t.join().unwrap();
    }
    broker.flush().unwrap();
    let old_seqs: BTreeSet<u64> = old_records.seqs().into_iter().collect();
    let new_seqs: BTreeSet<u64> = new_records.seqs().into_iter().collect();
    assert_eq!(old_seqs.len(), old_records.len());
    assert_eq!(new_seqs.len(), new_records.len());
    assert!(old_seqs.is_disjoint(&new_seqs));
    let union: BTreeSet<u64> = old_seqs.union(&new_seqs).copied().collect();
    assert_eq!(
        union,
        everything.seqs().into_iter().collect::<BTreeSet<u64>>()
    );
    assert_eq!(union.len() as u64, 4 * per_thread);
    assert_eq!(old_stats.written as usize, old_seqs.len());
    assert_accounted(old_stats);
    assert_accounted(handle.stats());
    assert_per_thread_order(&old_records.records());
    assert_per_thread_order(&new_records.records());
    // The new subscription took the old one's name; the old one is gone.
    assert_eq!(broker.stats().subscriptions.len(), 2);
}

#[test]
fn replacing_refuses_what_it_cannot_do() {
    let broker = journal_broker(Journal::new());
    broker
        .subscribe(Subscription::builder("a", Memory::new().0))
        .unwrap();
    broker
        .subscribe(Subscription::builder("b", Memory::new().0))
        .unwrap();
    let missing = broker.replace("nope", Subscription::builder("x", Memory::new().0));
    assert!(matches!(missing, Err(ReplaceError::NotFound(name)) if name == "nope"));
    let taken = broker.replace("a", Subscription::builder("b", Memory::new().0));
    assert!(matches!(
        taken,
        Err(ReplaceError::Subscribe(SubscribeError::DuplicateName(_)))
    ));
    let replay = broker.replace(
        "a",
        Subscription::builder("a", Memory::new().0).replay(Replay::Oldest),
    );
    assert!(matches!(replay, Err(ReplaceError::Replay)));
    // Nothing changed.
    assert!(broker.subscription("a").is_some());
}

#[test]
fn until_written_releases_what_every_subscription_wrote() {
    let broker = journal_broker(Journal::new().retention(Retention::UntilWritten));
    let (memory, _captured) = Memory::new();
    broker.subscribe(lossless("mem", memory)).unwrap();
    common::publish_n(&broker, "app", "m", 0..100);
    broker.flush().unwrap();
    // The next append releases everything the worker has passed.
    log::info!(logger: &broker, target: "app", "next");
    let stats = broker.journal().unwrap().stats();
    assert_eq!((stats.records, stats.oldest), (1, Some(100)));
    assert_eq!(stats.released, 100);
}

/// A subscription at `Info` with a flight recorder, and a plain one at
/// `Info` beside it.
fn recorder_broker(recorder: FlightRecorder) -> (logbus::Broker, MemoryHandle, MemoryHandle) {
    let broker = journal_broker(Journal::new());
    let (errors, captured) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("errors", errors)
                .level(LevelFilter::Info)
                .flight_recorder(recorder),
        )
        .unwrap();
    let (plain, plain_captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("plain", plain).level(LevelFilter::Info))
        .unwrap();
    (broker, captured, plain_captured)
}

/// The captured records as `(message, context mark)`.
fn marked(handle: &MemoryHandle) -> Vec<(String, Option<u64>)> {
    handle
        .records()
        .iter()
        .map(|r| {
            let mark = match r.get(CONTEXT_KEY) {
                Some(Value::U64(seq)) => Some(*seq),
                None => None,
                other => panic!("unexpected mark {other:?}"),
            };
            (r.message().to_owned(), mark)
        })
        .collect()
}

fn owned(expected: &[(&str, Option<u64>)]) -> Vec<(String, Option<u64>)> {
    expected
        .iter()
        .map(|(m, s)| ((*m).to_owned(), *s))
        .collect()
}

#[test]
fn a_trigger_is_preceded_by_exactly_its_context_once() {
    let (broker, captured, plain) = recorder_broker(FlightRecorder::new().context(3));
    for i in 0..10 {
        log::debug!(logger: &broker, target: "app", "d{i}"); // seqs 0..=9
    }
    log::info!(logger: &broker, target: "app", "i"); // 10
    log::error!(logger: &broker, target: "app", "e1"); // 11
                                                       // Clustered: the next triggers draw only on what came after the last.
    log::debug!(logger: &broker, target: "app", "d10"); // 12
    log::error!(logger: &broker, target: "app", "e2"); // 13
    log::error!(logger: &broker, target: "app", "e3"); // 14
    log::debug!(logger: &broker, target: "app", "d11"); // 15
    log::trace!(logger: &broker, target: "app", "t0"); // not built: keep is Debug
    log::debug!(logger: &broker, target: "app", "d12"); // 16
    log::warn!(logger: &broker, target: "app", "w"); // 17: not a trigger
    log::error!(logger: &broker, target: "app", "e4"); // 18
    broker.flush().unwrap();
    // Context comes right before its trigger; live records published in
    // between were written when they came.
    let expected = owned(&[
        ("i", None),
        ("d7", Some(11)),
        ("d8", Some(11)),
        ("d9", Some(11)),
        ("e1", None),
        ("d10", Some(13)),
        ("e2", None),
        ("e3", None),
        ("w", None),
        ("d11", Some(18)),
        ("d12", Some(18)),
        ("e4", None),
    ]);
    assert_eq!(marked(&captured), expected);
    assert_eq!(plain.messages(), ["i", "e1", "e2", "e3", "w", "e4"]);
    let stats = broker.subscription("errors").unwrap().stats();
    assert_eq!((stats.matched, stats.written), (12, 12));
    assert_accounted(stats);
    assert_eq!(broker.max_level(), LevelFilter::Debug);
}

#[test]
fn context_can_be_limited_to_a_topic_and_the_triggering_thread() {
    let (broker, captured, _plain) = recorder_broker(
        FlightRecorder::new()
            .context(10)
            .trigger(Level::Warn)
            .trigger_pattern("*.app.db.#")
            .context_pattern("*.app.#")
            .same_thread(true),
    );
    let other = broker.handle();
    thread::spawn(move || {
        log::debug!(logger: &other, target: "app::db", "other thread");
    })
    .join()
    .unwrap();
    log::debug!(logger: &broker, target: "app::db", "mine");
    log::debug!(logger: &broker, target: "lib", "other topic");
    log::warn!(logger: &broker, target: "app::http", "not a trigger topic");
    log::warn!(logger: &broker, target: "app::db", "trigger");
    broker.flush().unwrap();
    let messages: Vec<String> = marked(&captured).into_iter().map(|(m, _)| m).collect();
    assert_eq!(messages, ["not a trigger topic", "mine", "trigger"]);
}

#[test]
fn without_a_trigger_debug_records_reach_no_appender() {
    let (broker, captured, plain) = recorder_broker(FlightRecorder::new());
    for i in 0..100 {
        log::debug!(logger: &broker, target: "app", "d{i}");
    }
    broker.flush().unwrap();
    assert!(captured.is_empty());
    assert!(plain.is_empty());
    assert_eq!(broker.journal().unwrap().stats().records, 100);
    let stats = broker.subscription("errors").unwrap().stats();
    assert_eq!(stats.matched, 0);
}

/// With no other subscription, the journal alone routes the flood's
/// records: a replay's hand-over must still miss none (a publisher with no
/// gate to pass re-checks the generation instead).
#[test]
fn replay_hands_over_when_only_the_journal_takes_the_records() {
    let per_thread = scaled(20_000, 200);
    let broker = journal_broker(Journal::new().records(1 << 20).bytes(1 << 30));
    let (tx, rx) = bounded(1);
    let threads = flood(&broker, 4, per_thread, tx);
    recv(&rx, "the flood's halfway mark");
    let (late, replayed) = Memory::new();
    let handle = broker
        .subscribe(lossless("late", late).replay(Replay::Oldest))
        .unwrap();
    for t in threads {
        t.join().unwrap();
    }
    broker.flush().unwrap();
    let journal = broker.journal().unwrap();
    let kept: BTreeSet<u64> = journal
        .iter(JournalQuery::new())
        .unwrap()
        .map(|r| r.seq())
        .collect();
    assert_eq!(kept.len() as u64, 4 * per_thread);
    let got = replayed.seqs();
    let unique: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "duplicates");
    assert_eq!(unique, kept);
    assert_per_thread_order(&replayed.records());
    assert_accounted(handle.stats());
}

/// A trigger its subscription's predicate rejects never reaches it: it
/// draws no context, and leaves the context to the next trigger (a review
/// found the rejected trigger used it up).
#[test]
fn a_trigger_the_predicate_rejects_leaves_the_context_to_the_next() {
    let broker = journal_broker(Journal::new());
    let (memory, captured) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("errors", memory)
                .level(LevelFilter::Warn)
                .filter(|r| !r.message().contains("ignored"))
                .flight_recorder(FlightRecorder::new().context(10)),
        )
        .unwrap();
    log::debug!(logger: &broker, target: "app", "step 1");
    log::debug!(logger: &broker, target: "app", "step 2");
    log::error!(logger: &broker, target: "app", "ignored error");
    log::error!(logger: &broker, target: "app", "real error");
    broker.flush().unwrap();
    assert_eq!(captured.messages(), ["step 1", "step 2", "real error"]);
}

/// A replay's predicate runs in the routing state, as on a publisher: a
/// log call from it is discarded, so it cannot fill the held queue and
/// wait for itself (a review found `subscribe` deadlocked under `Block`).
#[test]
fn a_replay_predicate_that_logs_does_not_deadlock_subscribe() {
    let broker = journal_broker(Journal::new());
    for i in 0..4 {
        log::info!(logger: &broker, target: "app", "old {i}");
    }
    let in_predicate = broker.handle();
    let (done_tx, done_rx) = bounded(1);
    let subscriber = broker.handle();
    thread::spawn(move || {
        let builder = Subscription::builder("late", Memory::new().0)
            .overflow(OverflowPolicy::Block)
            .capacity(1)
            .replay(Replay::Oldest)
            .filter(move |r| {
                log::info!(logger: &in_predicate, target: "pred", "looked at {}", r.seq());
                true
            });
        let _ = done_tx.send(subscriber.subscribe(builder));
    });
    let handle = recv(&done_rx, "subscribe to return").unwrap();
    // Read once the replay is written: `matched` is exact at quiescent
    // points, and a worker between taking a run and counting it has it in
    // neither the queue nor `taken` (read at once, it read 0 about once in
    // a thousand runs).
    broker.flush().unwrap();
    assert_eq!(handle.stats().matched, 4);
    assert_eq!(broker.stats().suppressed, 4);
}

/// A flush during `replace` waits for the old subscription's drain too:
/// records logged before the flush are in it (a review found flush
/// returning at once).
#[test]
fn a_flush_during_a_replace_waits_for_the_old_subscription() {
    let broker = common::broker();
    let (gated, gate) = common::GatedAppender::new();
    broker
        .subscribe(Subscription::builder("app", gated))
        .unwrap();
    log::info!(logger: &broker, target: "app", "first");
    recv(&gate.entered, "the old worker to stall");
    log::info!(logger: &broker, target: "app", "second");
    let replacer = {
        let handle = broker.handle();
        thread::spawn(move || handle.replace("app", Subscription::builder("app", Memory::new().0)))
    };
    // The swap is visible once "app" is the new, empty subscription; the
    // replace then waits for the old one, which the gate holds.
    let deadline = std::time::Instant::now() + common::SAFETY_NET;
    while broker.subscription("app").unwrap().stats().matched != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the swap never showed"
        );
        thread::yield_now();
    }
    let stalled = broker.flush_timeout(std::time::Duration::from_millis(50));
    assert!(
        matches!(&stalled, Err(logbus::FlushError::Timeout { pending, .. }) if pending == &["app"]),
        "{stalled:?}"
    );
    gate.open();
    let (_, old_stats) = replacer.join().unwrap().unwrap();
    broker.flush().unwrap();
    assert_eq!(gate.captured.messages(), ["first", "second"]);
    assert_eq!(old_stats.written, 2);
}

/// Removing the journal lets its records go at once, though idle threads'
/// stale views still hold the journal itself.
#[test]
fn removing_the_journal_lets_its_records_go() {
    let broker = journal_broker(Journal::new());
    let (logged_tx, logged_rx) = bounded(1);
    let (end_tx, end_rx) = bounded::<()>(1);
    let idle = {
        let handle = broker.handle();
        thread::spawn(move || {
            log::info!(logger: &handle, target: "app", "from an idle thread");
            logged_tx.send(()).unwrap();
            let _ = end_rx.recv();
        })
    };
    recv(&logged_rx, "the idle thread's record");
    let record = broker
        .journal()
        .unwrap()
        .iter(JournalQuery::new())
        .unwrap()
        .next()
        .unwrap();
    let weak = Arc::downgrade(&record);
    drop(record);
    broker.remove_journal().unwrap();
    assert!(
        weak.upgrade().is_none(),
        "the removed journal still holds its records"
    );
    end_tx.send(()).unwrap();
    idle.join().unwrap();
}

#[test]
fn a_dead_letter_subscription_cannot_replay_or_record() {
    let broker = journal_broker(Journal::new());
    let replay = broker
        .set_dead_letter(Subscription::builder("dead", Memory::new().0).replay(Replay::Oldest));
    assert!(matches!(replay, Err(SubscribeError::NotForDeadLetters)));
    let recorder = broker.set_dead_letter(
        Subscription::builder("dead", Memory::new().0).flight_recorder(FlightRecorder::new()),
    );
    assert!(matches!(recorder, Err(SubscribeError::NotForDeadLetters)));
    broker
        .set_dead_letter(Subscription::builder("dead", Memory::new().0))
        .unwrap();
}

/// A replay's predicate may unsubscribe the subscription it filters for:
/// the removal completes once the predicate has returned (it waited for
/// ever for the worker, which waited for the predicate: a review found it),
/// and the subscription's records are all accounted for.
#[test]
fn a_replay_predicate_may_unsubscribe_its_own_subscription() {
    let broker = journal_broker(Journal::new());
    for i in 0..3 {
        log::info!(logger: &broker, target: "app", "old {i}");
    }
    let (in_predicate, subscriber) = (broker.handle(), broker.handle());
    let (done_tx, done_rx) = bounded(1);
    thread::spawn(move || {
        let removed = Arc::new(std::sync::Mutex::new(None));
        let seen = Arc::clone(&removed);
        let builder = Subscription::builder("late", Memory::new().0)
            .replay(Replay::Oldest)
            .filter(move |_| {
                let mut removed = seen.lock().unwrap();
                if removed.is_none() {
                    *removed = Some(in_predicate.unsubscribe("late").is_ok());
                }
                true
            });
        let subscribed = subscriber.subscribe(builder).is_ok();
        let removed = removed.lock().unwrap().take();
        let _ = done_tx.send((subscribed, removed));
    });
    let (subscribed, removed) = recv(&done_rx, "subscribe, its predicate unsubscribing");
    assert!(subscribed);
    assert_eq!(removed, Some(true), "the predicate's unsubscribe found it");
    assert!(!broker.stats().subscriptions.contains_key("late"));
    // Shutdown joins the removal finishing in the background.
    let report = broker.shutdown();
    assert!(report.unfinished.is_empty(), "{report:?}");
}

/// A flush from inside a replay's predicate returns `InPredicate` at once:
/// it would wait for the worker its own return releases (it waited out its
/// timeout). From a publisher's predicate, the same predicate, it flushes.
#[test]
fn a_flush_from_inside_a_replays_predicate_returns_at_once() {
    let broker = journal_broker(Journal::new());
    log::info!(logger: &broker, target: "app", "old");
    let in_predicate = broker.handle();
    let flushed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&flushed);
    let builder = Subscription::builder("late", Memory::new().0)
        .replay(Replay::Oldest)
        .filter(move |_| {
            seen.lock().unwrap().push(in_predicate.flush());
            true
        });
    broker.subscribe(builder).unwrap();
    log::info!(logger: &broker, target: "app", "live");
    broker.flush().unwrap();
    let flushed = flushed.lock().unwrap().clone();
    assert_eq!(flushed, [Err(FlushError::InPredicate), Ok(())]);
}

/// Logs `message` to `target: "app"` on `broker`, and while it is routed
/// (after the journal kept it, before it reaches a queue) runs `meanwhile`
/// on another thread, with a handle to the broker: a filter of a first
/// subscription (returned, lossless, `*.app`) waits for it, once.
fn while_routed<T: Send + 'static>(
    broker: &logbus::Broker,
    message: &'static str,
    meanwhile: impl FnOnce(logbus::BrokerHandle) -> T + Send + 'static,
) -> (T, MemoryHandle) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (go_tx, go_rx) = bounded::<()>(0);
    let (done_tx, done_rx) = bounded::<()>(0);
    let armed = AtomicBool::new(true);
    let (first, first_captured) = Memory::new();
    broker
        .subscribe(lossless("first", first).pattern("*.app").filter(move |r| {
            if r.message() == message && armed.swap(false, Ordering::Relaxed) {
                go_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            }
            true
        }))
        .unwrap();
    let handle = broker.handle();
    let thread = thread::spawn(move || {
        go_rx.recv().unwrap();
        let result = meanwhile(handle);
        done_tx.send(()).unwrap();
        result
    });
    log::info!(logger: broker, target: "app", "{message}");
    (thread.join().unwrap(), first_captured)
}

/// A lossless subscription "late" to `*.app` that replays from the oldest
/// record the journal holds.
fn replaying(broker: &logbus::BrokerHandle) -> (logbus::SubscriptionHandle, MemoryHandle) {
    let (late, captured) = Memory::new();
    let builder = lossless("late", late)
        .pattern("*.app")
        .replay(Replay::Oldest);
    (broker.subscribe(builder).unwrap(), captured)
}

/// A record the journal kept while it was being routed, then the journal
/// replaced (removed and set again) and a subscription made that replays
/// from the new one: the new journal never held the record, so its replay
/// did not deliver it, and the record reaches the subscription live (it
/// was taken to be replayed, and lost with no gap reported).
#[test]
fn a_record_the_old_journal_kept_reaches_a_replay_from_the_new_one() {
    let broker = journal_broker(Journal::new());
    let ((handle, captured), first) = while_routed(&broker, "swap", |broker| {
        broker.remove_journal().unwrap();
        broker.set_journal(Journal::new()).unwrap();
        let (handle, captured) = replaying(&broker);
        (handle, captured)
    });
    log::info!(logger: &broker, target: "app", "after");
    broker.flush().unwrap();
    assert_eq!(first.messages(), ["swap", "after"]);
    assert_eq!(captured.messages(), ["swap", "after"]);
    let report = handle.replay_report().unwrap();
    assert_eq!((report.records, report.gap), (0, None));
    let stats = handle.stats();
    assert_eq!((stats.matched, stats.written), (2, 2));
    assert_accounted(stats);
}

/// The other way: a subscription replays from the journal that kept the
/// record, then the journal is replaced, while the record is routed. Its
/// replay delivered the record: the re-route skips it, once only.
#[test]
fn a_record_replayed_from_a_journal_since_replaced_is_not_written_again() {
    let broker = journal_broker(Journal::new());
    let ((handle, captured), _) = while_routed(&broker, "swap", |broker| {
        let (handle, captured) = replaying(&broker);
        broker.remove_journal().unwrap();
        broker.set_journal(Journal::new()).unwrap();
        (handle, captured)
    });
    log::info!(logger: &broker, target: "app", "after");
    broker.flush().unwrap();
    assert_eq!(captured.messages(), ["swap", "after"]);
    assert_eq!(handle.replay_report().unwrap().records, 1);
    assert_accounted(handle.stats());
}

/// A replaying subscription replaced while a record its replay delivered
/// is still routed: the replacement takes the old one's hand-over, so the
/// pair writes the record once (a review found both writing it).
#[test]
fn a_replacement_skips_what_the_old_subscriptions_replay_delivered() {
    let broker = journal_broker(Journal::new());
    let ((old_captured, new_captured), _) = while_routed(&broker, "x", |broker| {
        let (_, old_captured) = replaying(&broker);
        let (new, new_captured) = Memory::new();
        broker
            .replace("late", lossless("late", new).pattern("*.app"))
            .unwrap();
        (old_captured, new_captured)
    });
    log::info!(logger: &broker, target: "app", "after");
    broker.flush().unwrap();
    assert_eq!(old_captured.messages(), ["x"]);
    assert_eq!(new_captured.messages(), ["after"]);
}
