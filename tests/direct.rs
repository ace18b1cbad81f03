//! The direct path under stress: a plain record for one to four
//! subscriptions travels as its parts copied into each lane
//! (`src/broker/publish/direct.rs`, `src/queue/slot.rs`). Floods with a
//! byte bound (and, for several subscriptions, under each overflow
//! policy), reconfiguration and removal racing the publishers, and calls at
//! thread exit: every record whole, formatted once, and counted once per
//! subscription; copies carry one `seq`, one time and one call site. A
//! deferred message of logbus's macros takes the same path as its template
//! and arguments.

mod common;

use std::sync::{Arc, Mutex};

use logbus::{AppendError, Appender, OverflowPolicy, Record, Subscription};

/// Counts the records of the flood (not logbus's own) and keeps those
/// that `whole` says are not what their thread logged.
#[derive(Clone)]
struct Check(Arc<Tally>, fn(&Record) -> bool);

/// What a [`Check`] keeps: the records it saw, and the bad ones.
type Tally = Mutex<(u64, Vec<String>)>;

/// The check of plain records.
impl Default for Check {
    fn default() -> Check {
        Check(Arc::default(), plain_whole)
    }
}

impl Appender for Check {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let mut g = self.0.lock().unwrap();
        if record.target() == "logbus" {
            return Ok(());
        }
        g.0 += 1;
        if !(self.1)(record) {
            g.1.push(format!(
                "{:?} thread {:?} mod {:?}",
                record.message(),
                record.thread(),
                record.module_path()
            ));
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Whether a plain record is whole: "w<t> n<i> ..." on the thread `w<t>`
/// from this file, or a literal.
fn plain_whole(record: &Record) -> bool {
    let m = record.message();
    if let Some(rest) = m.strip_prefix('w') {
        let t: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let name = format!("w{t}");
        record.thread().name == Some(name.as_str())
            && record.module_path() == Some(module_path!())
            && record.file() == Some(file!())
    } else {
        m.starts_with("literal")
    }
}

/// One plain call of the flood: short, literal, long literal, spilled.
fn log_plain(broker: &logbus::BrokerHandle, t: u64, i: u64) {
    match i % 4 {
        0 => log::info!(logger: broker, target: "app", "w{t} n{i}"),
        1 => log::info!(logger: broker, target: "app", "literal short"),
        2 => {
            log::info!(logger: broker, target: "app", "literal a good deal longer than the fifty-six bytes that a slot holds inline")
        }
        _ => {
            log::info!(logger: broker, target: "app", "w{t} n{i} and a tail that makes it longer than a slot holds, spilled")
        }
    }
}

/// Six threads named `<prefix><t>` make 20,000 calls `log(broker, t, i)`
/// each into one drop-oldest subscription of 64 records and 20,000 bytes,
/// whose appender keeps `tally` (records seen, and the bad ones): no bad
/// record, the books balance, and afterwards the byte budget is whole
/// again (calls made one at a time, each written before the next, are
/// never dropped).
fn flood_balances(
    appender: impl logbus::Appender + 'static,
    tally: &Tally,
    prefix: &str,
    log: fn(&logbus::BrokerHandle, u64, u64),
) {
    let bounded = Subscription::builder("s", appender)
        .capacity(64)
        .max_bytes(20_000)
        .overflow(OverflowPolicy::DropOldest);
    flood_balances_into(vec![(bounded, tally)], prefix, log);
}

/// [`flood_balances`] into every subscription of `subs`, each with the
/// tally its appender keeps; returns each one's stats after the flood.
fn flood_balances_into(
    subs: Vec<(logbus::SubscriptionBuilder, &Tally)>,
    prefix: &str,
    log: fn(&logbus::BrokerHandle, u64, u64),
) -> Vec<logbus::SubscriptionStats> {
    let broker = common::broker();
    let subs: Vec<_> = subs
        .into_iter()
        .map(|(builder, tally)| (broker.subscribe(builder).unwrap(), tally))
        .collect();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let broker = broker.handle();
            std::thread::Builder::new()
                .name(format!("{prefix}{t}"))
                .spawn(move || {
                    for i in 0..20_000u64 {
                        log(&broker, t, i);
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    broker.flush().unwrap();
    let mut stats = Vec::new();
    for (handle, tally) in &subs {
        let s = handle.stats();
        let g = tally.lock().unwrap();
        assert!(
            g.1.is_empty(),
            "bad records: {:?}",
            &g.1[..g.1.len().min(5)]
        );
        assert_eq!(s.matched, 6 * 20_000);
        assert_eq!(s.written, g.0);
        assert_eq!(
            s.matched,
            s.written + s.dropped + s.dead_lettered + s.lost,
            "{s:?}"
        );
        assert_eq!(s.in_queue, 0);
        stats.push(s);
    }
    let dropped: Vec<_> = subs.iter().map(|(h, _)| h.stats().dropped).collect();
    for i in 0..1000u64 {
        log(&broker.handle(), 0, i);
        broker.flush().unwrap();
    }
    let after: Vec<_> = subs.iter().map(|(h, _)| h.stats().dropped).collect();
    assert_eq!(after, dropped);
    stats
}

/// Many threads flood one drop-oldest subscription with a byte bound through
/// the direct path (short, literal, long literal, spilled): the books
/// balance, every record is whole and names its own thread, and afterwards
/// the byte budget is all given back.
#[test]
fn direct_path_flood_with_byte_bound_balances() {
    let check = Check::default();
    flood_balances(check.clone(), &check.0, "w", log_plain);
}

/// One call with key-values of the flood: packed into the slot beside a
/// short message or a literal; too long for the slot beside its message,
/// or with a `Display` value, so shared.
fn log_kv(broker: &logbus::BrokerHandle, t: u64, i: u64) {
    match i % 4 {
        0 => log::info!(logger: broker, target: "app", i = i, ok = true, who = "w"; "w{t} k{i}"),
        1 => log::info!(logger: broker, target: "app", i = i, f = 0.5; "literal with key-values"),
        2 => log::info!(
            logger: broker,
            target: "app",
            i = i,
            long = "a text too long to share the slot with its message";
            "w{t} k{i}"
        ),
        _ => log::info!(logger: broker, target: "app", i = i, shown:% = i; "w{t} k{i}"),
    }
}

/// Whether a record of [`log_kv`] is whole: its key-values the ones its
/// `i` says, typed, and its message and thread its own.
fn kv_whole(record: &Record) -> bool {
    use logbus::Value;
    let Some(&Value::U64(i)) = record.get("i") else {
        return false;
    };
    let m = record.message();
    let own = || {
        let t: String = m
            .chars()
            .skip(1)
            .take_while(|c| c.is_ascii_digit())
            .collect();
        m == format!("w{t} k{i}") && record.thread().name == Some(format!("w{t}").as_str())
    };
    let text = |key: &str, text: &str| matches!(record.get(key), Some(Value::Str(s)) if s == text);
    let kv = record.key_values().len();
    match i % 4 {
        0 => own() && kv == 3 && record.get("ok") == Some(&Value::Bool(true)) && text("who", "w"),
        1 => m == "literal with key-values" && kv == 2 && record.get("f") == Some(&Value::F64(0.5)),
        2 => own() && kv == 2 && text("long", "a text too long to share the slot with its message"),
        _ => own() && kv == 2 && text("shown", &i.to_string()),
    }
}

/// Many threads flood one drop-oldest subscription with a byte bound with
/// calls with key-values, packed into the slot or, when they do not pack,
/// shared: the books balance, every record is whole, and afterwards the
/// byte budget is all given back.
#[test]
fn key_values_flood_with_byte_bound_balances() {
    let check = Check(Arc::default(), kv_whole);
    flood_balances(check.clone(), &check.0, "w", log_kv);
}

/// The same calls into two subscriptions, copies of the slot, and into
/// five, which share one record: each subscription balances its own books.
#[test]
fn key_values_fan_out_flood_balances() {
    for fan in [2, 5] {
        let checks: Vec<Check> = (0..fan).map(|_| Check(Arc::default(), kv_whole)).collect();
        let subs = checks
            .iter()
            .enumerate()
            .map(|(n, check)| {
                let builder = Subscription::builder(format!("s{n}"), check.clone())
                    .capacity(64)
                    .max_bytes(20_000)
                    .overflow(OverflowPolicy::DropOldest);
                (builder, &*check.0)
            })
            .collect();
        flood_balances_into(subs, "w", log_kv);
    }
}

struct Counted<'a>(&'a std::sync::atomic::AtomicU64, u64);

impl std::fmt::Display for Counted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.1 % 2 == 0 {
            write!(f, "v{}", self.1)
        } else {
            write!(f, "v{} {}", self.1, "z".repeat(80))
        }
    }
}

/// Runs `publish` on a thread named `name` while another thread
/// subscribes and unsubscribes another subscription (the generation
/// changes under the publisher), then flushes.
fn under_churn(broker: &logbus::Broker, name: &str, publish: impl FnOnce() + Send + 'static) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = broker.handle();
    let stopped = Arc::clone(&stop);
    let churn = std::thread::spawn(move || {
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            h.subscribe(Subscription::builder("other", Check::default()).pattern("warn.other"))
                .unwrap();
            h.unsubscribe("other").unwrap();
        }
    });
    std::thread::Builder::new()
        .name(name.into())
        .spawn(publish)
        .unwrap()
        .join()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    broker.flush().unwrap();
}

/// Under concurrent reconfiguration (generation changes), each message is
/// formatted exactly once and every record is counted once.
#[test]
fn direct_path_formats_once_under_reconfiguration() {
    let broker = common::broker();
    let check = Check::default();
    let handle = broker
        .subscribe(Subscription::builder("s", check.clone()).pattern("info.app"))
        .unwrap();
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = 20_000u64;
    let (b, counted) = (broker.handle(), Arc::clone(&calls));
    under_churn(&broker, "w0", move || {
        for i in 0..total {
            log::info!(logger: b, target: "app", "w0 {}", Counted(&counted, i));
        }
    });
    let s = handle.stats();
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), total);
    assert_eq!(s.matched, total);
    assert_eq!(s.written + s.dropped, total);
    let g = check.0.lock().unwrap();
    assert!(g.1.is_empty(), "{:?}", &g.1[..g.1.len().min(3)]);
}

/// Unsubscribing the only subscription while threads publish on the direct
/// path: each incarnation's books balance when it is removed (nothing is
/// enqueued after its final drain), and nothing hangs.
#[test]
fn direct_path_races_unsubscribe() {
    races_unsubscribe(None);
}

/// Subscribes and unsubscribes a subscription 200 times while three
/// threads publish, a third of their messages longer than a slot: each
/// incarnation's books balance when it is removed, and nothing hangs. With
/// `stay`, a `Block` subscription beside it gets every call (its copies,
/// and the long ones shared), whole.
fn races_unsubscribe(stay: Option<Check>) {
    let broker = common::broker();
    let stays = stay.as_ref().map(|stay| {
        let builder = Subscription::builder("stay", stay.clone()).overflow(OverflowPolicy::Block);
        broker.subscribe(builder).unwrap()
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pubs: Vec<_> = (0..3)
        .map(|t| {
            let b = broker.handle();
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("w{t}"))
                .spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        if i % 3 == 0 {
                            log::info!(logger: b, target: "app", "w{t} n{i} {}", "q".repeat(70));
                        } else {
                            log::info!(logger: b, target: "app", "w{t} n{i}");
                        }
                        i += 1;
                    }
                    i
                })
                .unwrap()
        })
        .collect();
    let mut total = 0;
    for round in 0..200 {
        let check = Check::default();
        broker
            .subscribe(Subscription::builder("s", check.clone()).capacity(16))
            .unwrap();
        broker.flush().unwrap();
        let s = broker.unsubscribe("s").unwrap();
        let g = check.0.lock().unwrap();
        assert!(g.1.is_empty(), "{:?}", &g.1[..g.1.len().min(3)]);
        assert_eq!(s.in_queue, 0, "round {round}: {s:?}");
        assert_eq!(
            s.matched,
            s.written + s.dropped + s.dead_lettered + s.lost,
            "round {round}: {s:?}"
        );
        assert_eq!(g.0, s.written, "round {round}: {s:?}");
        total += s.matched;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let calls: u64 = pubs.into_iter().map(|p| p.join().unwrap()).sum();
    assert!(total > 0, "the publishers reached the subscription");
    if let (Some(stay), Some(stays)) = (stay, stays) {
        broker.flush().unwrap();
        let s = stays.stats();
        let g = stay.0.lock().unwrap();
        assert!(g.1.is_empty(), "{:?}", &g.1[..g.1.len().min(3)]);
        assert_eq!((s.matched, s.written, g.0), (calls, calls, calls), "{s:?}");
    }
}

struct LogOnDrop(logbus::BrokerHandle);

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        for i in 0..3u64 {
            log::info!(logger: self.0, target: "app", "w9 exit {i}");
            log::info!(logger: self.0, target: "app", "w9 exit {i} {}", "e".repeat(70));
        }
    }
}

thread_local! {
    static ON_EXIT: std::cell::RefCell<Option<LogOnDrop>> = const { std::cell::RefCell::new(None) };
}

/// Calls from a thread-local destructor, before and after the thread's
/// other thread-locals (the route view, the spill buffer) are gone.
#[test]
fn direct_path_at_thread_exit() {
    let broker = common::broker();
    let (mem, seen) = logbus::Memory::new();
    broker.subscribe(Subscription::builder("s", mem)).unwrap();
    let b = broker.handle();
    std::thread::Builder::new()
        .name("w9".into())
        .spawn(move || {
            // Registered first: destroyed last on most platforms.
            ON_EXIT.with(|c| *c.borrow_mut() = Some(LogOnDrop(b.clone())));
            for i in 0..3u64 {
                log::info!(logger: b, target: "app", "w9 live {i}");
            }
        })
        .unwrap()
        .join()
        .unwrap();
    broker.flush().unwrap();
    let records = seen.records();
    let msgs: Vec<_> = records.iter().map(|r| r.message().to_owned()).collect();
    assert_eq!(msgs.len(), 9, "{msgs:?}");
    assert!(records.windows(2).all(|w| w[0].seq() < w[1].seq()));
    assert!(
        records.iter().all(|r| r.thread().name == Some("w9")),
        "{:?}",
        records.iter().map(|r| r.thread()).collect::<Vec<_>>()
    );
}

/// Keeps each record's seq and message.
#[derive(Clone, Default)]
struct Seqs(Arc<Mutex<Vec<(u64, String)>>>);

impl Appender for Seqs {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let line = (record.seq(), record.message().to_owned());
        self.0.lock().unwrap().push(line);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Deferred calls whose arguments a slot holds take the direct path, the
/// others (a string argument, more words than a slot has) the usual one;
/// either way the message comes out whole, and no seq is left unused: the
/// direct path takes its seq only once the parts fit.
#[test]
fn deferred_calls_either_way_come_out_whole_and_leave_no_seq_unused() {
    let broker = common::broker();
    let seqs = Seqs::default();
    broker
        .subscribe(Subscription::builder("one", seqs.clone()))
        .unwrap();
    let (a, b, big, small, c) = (1u64, 2i8, u128::MAX, i128::MIN, 'c');
    logbus::info!(logger: &broker, target: "app", "{} {}", a, b);
    logbus::info!(logger: &broker, target: "app", "{} {}", a, "a string");
    logbus::info!(logger: &broker, target: "app", "{}{}{}{}{}{}{}", a, a, a, a, a, a, a);
    logbus::info!(logger: &broker, target: "app", "{} {} {:?}", big, small, c);
    logbus::info!(logger: &broker, target: "app", "{}{}{}{}{}{}", a, a, a, a, a, b);
    broker.flush().unwrap();
    let got = seqs.0.lock().unwrap().clone();
    let messages: Vec<_> = got.iter().map(|(_, m)| m.as_str()).collect();
    let wide = format!("{big} {small} 'c'");
    assert_eq!(
        messages,
        ["1 2", "1 a string", "1111111", wide.as_str(), "111112"]
    );
    let first = got[0].0;
    let seqs: Vec<_> = got.iter().map(|&(seq, _)| seq - first).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
}

/// Calls on a key whose direct route the thread's view remembers, whose
/// parts a slot does not hold (a message longer than a slot, a key-value
/// that does not pack, a deferred string argument), take the usual path,
/// between calls that take the remembered route: each comes out whole, in
/// order, counted once, and no seq is left unused.
#[test]
fn what_a_slot_does_not_hold_leaves_a_remembered_route_for_the_usual_path() {
    let broker = common::broker();
    let seqs = Seqs::default();
    broker
        .subscribe(Subscription::builder("one", seqs.clone()))
        .unwrap();
    let b = broker.handle();
    // One binding: the remembered key is the target's address and length.
    let target = "app";
    let long = "l".repeat(200);
    let shown = std::path::Path::new("/a/path");
    for i in 0..3u64 {
        log::info!(logger: b, target: target, "short {i}");
        log::info!(logger: b, target: target, "long {i} {long}");
        log::info!(logger: b, target: target, path:? = shown; "kv {i}");
        logbus::info!(logger: b, target: target, "macro {}", i);
        logbus::info!(logger: b, target: target, "macro {} {}", i, "a string");
    }
    broker.flush().unwrap();
    let got = seqs.0.lock().unwrap().clone();
    let messages: Vec<_> = got.iter().map(|(_, m)| m.clone()).collect();
    let expected: Vec<_> = (0..3)
        .flat_map(|i| {
            [
                format!("short {i}"),
                format!("long {i} {long}"),
                format!("kv {i}"),
                format!("macro {i}"),
                format!("macro {i} a string"),
            ]
        })
        .collect();
    assert_eq!(messages, expected);
    let first = got[0].0;
    let offsets: Vec<_> = got.iter().map(|&(seq, _)| seq - first).collect();
    assert_eq!(offsets, (0..15).collect::<Vec<_>>());
    all_written(&broker, &[("one", 15)]);
}

/// Whether a deferred record is what its thread logged: `d<t> <i> ...`
/// with the values that `i` gives, on the thread named `d<t>`.
fn decoded_whole(record: &Record) -> bool {
    let mut words = record.message().split(' ');
    let whole = || {
        let t: u64 = words.next()?.strip_prefix('d')?.parse().ok()?;
        let i: u64 = words.next()?.parse().ok()?;
        let rest: Vec<_> = words.collect();
        let name = format!("d{t}");
        Some(rest.join(" ") == expected(t, i) && record.thread().name == Some(name.as_str()))
    };
    whole() == Some(true)
}

/// What `d<t> <i>` is followed by (see `log_decoded`).
fn expected(t: u64, i: u64) -> String {
    match i % 4 {
        0 => format!(
            "{} {:?} {}",
            -(i as i64),
            f64::from(t as u32) / 4.0,
            i % 2 == 0
        ),
        1 => format!("{} {:x}", u128::from(i) << 70, -i128::from(i)),
        2 => format!("s {}", i as u8),
        _ => format!("{}{}{}{}{}{}", i, i, i, i, i, t),
    }
}

fn log_decoded(broker: &logbus::BrokerHandle, t: u64, i: u64) {
    match i % 4 {
        0 => {
            let (n, x, even) = (-(i as i64), f64::from(t as u32) / 4.0, i % 2 == 0);
            logbus::info!(logger: broker, target: "app", "d{} {} {} {:?} {}", t, i, n, x, even);
        }
        1 => {
            let (big, neg) = (u128::from(i) << 70, -i128::from(i));
            logbus::info!(logger: broker, target: "app", "d{} {} {} {:x}", t, i, big, neg);
        }
        // A string argument: the usual path.
        2 => logbus::info!(logger: broker, target: "app", "d{} {} {} {}", t, i, "s", i as u8),
        // Eight arguments: more than a slot holds, the usual path.
        _ => {
            logbus::info!(logger: broker, target: "app", "d{} {} {}{}{}{}{}{}", t, i, i, i, i, i, i, t)
        }
    }
}

/// Threads flood one drop-oldest subscription with a byte bound with
/// deferred calls, direct and not: every record that arrives is the one its
/// thread logged (its arguments decoded whole, with evictions racing the
/// worker), the books balance, and the byte budget comes back whole.
#[test]
fn deferred_records_flood_with_byte_bound_balances() {
    let check = Check(Arc::default(), decoded_whole);
    flood_balances(check.clone(), &check.0, "d", log_decoded);
}

/// A worker lets go of the records it wrote by the time a flush returns:
/// those a memory appender kept are then held by it alone, whether the
/// flush found the worker idle or still writing (which of the two varies
/// from round to round: a worker lets go when it goes idle, and when a
/// flush ends), and none was rewritten under the appender's feet
/// (`src/recycle.rs`, `Spares`).
#[test]
fn records_an_appender_keeps_are_its_alone_after_a_flush() {
    const ROUNDS: u64 = 20;
    const CALLS: u64 = 500;
    let broker = common::broker();
    let (memory, captured) = logbus::Memory::new();
    broker
        .subscribe(Subscription::builder("s", memory).overflow(OverflowPolicy::Block))
        .unwrap();
    for round in 0..ROUNDS {
        for i in 0..CALLS {
            log::info!(logger: broker.handle(), target: "app", "r{round} n{i}");
        }
        broker.flush().unwrap();
        let records = captured.records();
        assert_eq!(records.len() as u64, CALLS * (round + 1));
        for (k, record) in records.iter().enumerate() {
            // The appender's and the copy `records` returned.
            assert_eq!(Arc::strong_count(record), 2, "round {round}, record {k}");
            let (r, i) = (k as u64 / CALLS, k as u64 % CALLS);
            assert_eq!(record.message(), format!("r{r} n{i}"));
        }
    }
}

/// [`flood_balances_into`] three subscriptions, one per overflow policy,
/// each checking its records with its own `check()`: each subscription's
/// books balance on its own copies, and the `Block` one loses nothing.
fn fan_out_flood_balances(
    check: fn() -> Check,
    prefix: &str,
    log: fn(&logbus::BrokerHandle, u64, u64),
) {
    let checks = [check(), check(), check()];
    let subs = vec![
        (
            Subscription::builder("oldest", checks[0].clone())
                .capacity(64)
                .max_bytes(20_000)
                .overflow(OverflowPolicy::DropOldest),
            &*checks[0].0,
        ),
        (
            Subscription::builder("newest", checks[1].clone())
                .capacity(64)
                .overflow(OverflowPolicy::DropNewest),
            &*checks[1].0,
        ),
        (
            Subscription::builder("block", checks[2].clone())
                .capacity(64)
                .overflow(OverflowPolicy::Block),
            &*checks[2].0,
        ),
    ];
    let stats = flood_balances_into(subs, prefix, log);
    let block = &stats[2];
    assert_eq!((block.written, block.dropped), (6 * 20_000, 0), "{block:?}");
}

/// Plain calls routed to three subscriptions, one per overflow policy, take
/// the direct path as copies of their parts (the spilled ones, one shared
/// record): every record each gets is whole and names its own thread, each
/// subscription's books balance, and the byte budget comes back whole.
#[test]
fn fan_out_flood_balances_under_every_policy() {
    fan_out_flood_balances(Check::default, "w", log_plain);
}

/// The same with deferred calls of logbus's macros, direct and not.
#[test]
fn fan_out_deferred_flood_balances_under_every_policy() {
    fan_out_flood_balances(|| Check(Arc::default(), decoded_whole), "d", log_decoded);
}

/// A [`logbus::Memory`] that reads each record's time on its worker first,
/// as a rendering appender does (a memory appender alone would leave the
/// conversion to whoever reads the record later, the test's thread).
struct Timed(logbus::Memory);

impl Appender for Timed {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let _converted = record.time();
        self.0.append(record)
    }

    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), logbus::BatchError> {
        for record in records {
            let _converted = record.time();
        }
        self.0.append_batch(records)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.0.flush()
    }
}

/// Each record of `handle`, by message.
fn by_message(handle: &logbus::MemoryHandle) -> std::collections::BTreeMap<String, Arc<Record>> {
    handle
        .records()
        .into_iter()
        .map(|r| (r.message().to_owned(), r))
        .collect()
}

/// Subscribes `count` memory appenders (the first with `first`'s settings
/// on top), logs a plain, a literal, a deferred and a spilled call from a
/// named thread, and returns what each appender got, by message.
fn fan_out(
    count: usize,
    first: impl FnOnce(logbus::SubscriptionBuilder) -> logbus::SubscriptionBuilder,
) -> Vec<std::collections::BTreeMap<String, Arc<Record>>> {
    let broker = common::broker();
    let mut first = Some(first);
    let handles: Vec<_> = (0..count)
        .map(|k| {
            let (memory, handle) = logbus::Memory::new();
            let builder = Subscription::builder(format!("m{k}"), Timed(memory));
            let builder = match first.take() {
                Some(first) => first(builder),
                None => builder,
            };
            broker.subscribe(builder).unwrap();
            handle
        })
        .collect();
    let b = broker.handle();
    std::thread::Builder::new()
        .name("fan".into())
        .spawn(move || {
            for i in 0..50u64 {
                log::info!(logger: b, target: "app", "plain {i}");
                log::info!(logger: b, target: "app", "literal");
                logbus::info!(logger: b, target: "app", "deferred {} {}", i, i % 7);
                log::info!(logger: b, target: "app", "spilled {i} {}", "s".repeat(70));
            }
        })
        .unwrap()
        .join()
        .unwrap();
    broker.flush().unwrap();
    handles.iter().map(by_message).collect()
}

/// Whether every output got every record with one `seq`, one time and one
/// call site, and whether they share one record (`Arc::ptr_eq`) or each has
/// its own copy, by message.
fn same_records(
    outputs: &[std::collections::BTreeMap<String, Arc<Record>>],
) -> Vec<(String, bool)> {
    let first = &outputs[0];
    assert_eq!(first.len(), 50 * 3 + 1, "the literal comes once per output");
    first
        .iter()
        .map(|(message, record)| {
            let mut shared = true;
            for other in &outputs[1..] {
                let copy = &other[message];
                let site = |r: &Record| (r.seq(), r.time(), r.level(), r.target().to_owned());
                assert_eq!(site(copy), site(record), "{message}");
                let place = |r: &Record| {
                    (
                        r.module_path().map(str::to_owned),
                        r.file().map(str::to_owned),
                        r.line(),
                    )
                };
                assert_eq!(place(copy), place(record), "{message}");
                assert_eq!(copy.thread().name, Some("fan"), "{message}");
                assert_eq!(copy.topic().as_str(), record.topic().as_str(), "{message}");
                shared &= Arc::ptr_eq(copy, record);
            }
            (message.clone(), shared)
        })
        .collect()
}

/// A plain or deferred call routed to two to four subscriptions reaches
/// each as its own copy, with one `seq`, one time (each worker converts
/// it with the anchor of its epoch) and one call site; a spilled message travels as one
/// shared record.
#[test]
fn copies_carry_one_seq_one_time_and_one_call_site() {
    for count in 2..=4 {
        for (message, shared) in same_records(&fan_out(count, |b| b)) {
            let expect_shared = message.starts_with("spilled");
            assert_eq!(shared, expect_shared, "{count} subscriptions: {message}");
        }
    }
}

/// Past four subscriptions, or with a predicate on the route, every call
/// travels as one shared record, as before copies.
#[test]
fn five_subscriptions_or_a_predicate_share_one_record() {
    for outputs in [fan_out(5, |b| b), fan_out(2, |b| b.filter(|_| true))] {
        for (message, shared) in same_records(&outputs) {
            assert!(shared, "{message}");
        }
    }
}

/// A subscription replaying from an offset ahead of the journal skips the
/// live records below it, also when they reach it as copies (the journal
/// keeps only warnings here, so an info record takes the direct path).
#[test]
fn copies_skip_what_a_replay_from_ahead_has_not_reached() {
    common::enable_all_levels();
    let broker = logbus::builder()
        .journal(logbus::Journal::new().level(logbus::LevelFilter::Warn))
        .build()
        .unwrap();
    let (now, from_now) = logbus::Memory::new();
    broker.subscribe(Subscription::builder("now", now)).unwrap();
    let (ahead, from_ahead) = logbus::Memory::new();
    broker
        .subscribe(Subscription::builder("ahead", ahead).replay(logbus::Replay::From(5)))
        .unwrap();
    for i in 0..10u64 {
        log::info!(logger: broker.handle(), target: "app", "m{i}");
    }
    broker.flush().unwrap();
    let first = from_now.seqs()[0];
    let seqs = |h: &logbus::MemoryHandle| h.seqs().iter().map(|s| s - first).collect::<Vec<_>>();
    assert_eq!(seqs(&from_now), (0..10).collect::<Vec<_>>());
    assert_eq!(first, 0, "no record was published before");
    assert_eq!(from_ahead.seqs(), (5..10).collect::<Vec<_>>());
}

/// Unsubscribing one of two subscriptions while threads publish copies to
/// both: each incarnation's books balance when it is removed, and the one
/// that stays gets every call.
#[test]
fn copies_race_unsubscribe() {
    races_unsubscribe(Some(Check::default()));
}

/// Copies to subscriptions that sit between others the route does not
/// reach (the first, a middle and the last of the broker's, with others
/// around them): each one the route reaches gets every call, once and in
/// order, and the others none.
#[test]
fn copies_reach_the_routes_subscriptions_among_others() {
    common::enable_all_levels();
    let broker = logbus::builder().build().unwrap();
    let mut reached = Vec::new();
    let mut others = Vec::new();
    for (i, topic) in [
        "info.app.#",
        "info.other",
        "info.app.#",
        "warn.#",
        "info.app.#",
    ]
    .into_iter()
    .enumerate()
    {
        let (memory, handle) = logbus::Memory::new();
        let builder = Subscription::builder(format!("s{i}"), memory).pattern(topic);
        broker.subscribe(builder).unwrap();
        if topic == "info.app.#" {
            reached.push(handle);
        } else {
            others.push(handle);
        }
    }
    for i in 0..100u64 {
        log::info!(logger: broker.handle(), target: "app::db", "m{i}");
    }
    broker.flush().unwrap();
    let expected: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
    for handle in &reached {
        let messages: Vec<String> = handle
            .records()
            .iter()
            .map(|r| r.message().to_owned())
            .collect();
        assert_eq!(messages, expected);
    }
    for handle in &others {
        assert!(handle.records().is_empty());
    }
}

/// What each memory appender got: its records' topics and messages.
/// Each named subscription matched and wrote `count` records, and
/// dropped, dead-lettered and lost none.
fn all_written(broker: &logbus::Broker, expected: &[(&str, u64)]) {
    let stats = broker.stats();
    for &(name, count) in expected {
        let s = &stats.subscriptions[name];
        let counts = (s.matched, s.written, s.dropped, s.dead_lettered, s.lost);
        assert_eq!(counts, (count, count, 0, 0, 0), "{name}: {s:?}");
    }
}

/// A memory appender subscribed to `pattern` as `name`, and its handle.
fn memory_on(broker: &logbus::Broker, name: &str, pattern: &str) -> logbus::MemoryHandle {
    let (memory, handle) = logbus::Memory::new();
    let builder = Subscription::builder(name, memory).pattern(pattern);
    broker.subscribe(builder).unwrap();
    handle
}

fn topics(handle: &logbus::MemoryHandle) -> Vec<(String, String)> {
    handle
        .records()
        .into_iter()
        .map(|r| (r.topic().as_str().to_owned(), r.message().to_owned()))
        .collect()
}

/// A thread's view remembers the direct route its last call took (its
/// level and target), for the next call with that key, and gives way to
/// whatever changed: another level, another text at the same address, a
/// subscription added (the route now fans out) and removed again. Each
/// change is met first by a deferred call of logbus's macros (its own
/// pass through the view) and then by a `log::info!` call (inside its
/// pass), and the other way round.
#[test]
fn a_remembered_route_gives_way_to_what_changed() {
    let broker = common::broker();
    let subscribe = |name: &str, pattern: &str| memory_on(&broker, name, pattern);
    let db = subscribe("db", "info.app.db");
    let warn = subscribe("warn", "warn.app.db");
    let dc = subscribe("dc", "info.app.dc");
    let b = broker.handle();
    // A target made at run time, so that its text can change in place.
    let mut target = String::from("app::db");
    for i in 0..3u64 {
        log::info!(logger: b, target: &target, "log {i}");
        logbus::info!(logger: b, target: &target, "macro {}", i);
        logbus::info!(logger: b, target: &target, "macro again {}", i);
    }
    // Another level: the deferred call first, then the other way round.
    logbus::warn!(logger: b, target: &target, "macro warn {}", 1);
    log::warn!(logger: b, target: &target, "log warn");
    logbus::info!(logger: b, target: &target, "macro back {}", 1);
    log::warn!(logger: b, target: &target, "log warn again");
    logbus::warn!(logger: b, target: &target, "macro warn {}", 2);
    log::info!(logger: b, target: &target, "log back");
    logbus::info!(logger: b, target: &target, "macro remembered {}", 1);
    // Same address, same length, other text.
    let at = target.as_ptr();
    target.replace_range(6..7, "c");
    assert_eq!((target.as_str(), target.as_ptr()), ("app::dc", at));
    logbus::info!(logger: b, target: &target, "macro dc {}", 1);
    log::info!(logger: b, target: &target, "log dc");
    target.replace_range(6..7, "b");
    log::info!(logger: b, target: &target, "log db again");
    target.replace_range(6..7, "c");
    log::info!(logger: b, target: &target, "log dc again");
    target.replace_range(6..7, "b");
    logbus::info!(logger: b, target: &target, "macro db again {}", 1);
    // A subscription added: the route fans out; removed: it is direct again.
    let also = subscribe("also", "info.app.db");
    logbus::info!(logger: b, target: &target, "macro fan-out {}", 1);
    log::info!(logger: b, target: &target, "log fan-out");
    broker.flush().unwrap();
    let removed = broker.unsubscribe("also").unwrap();
    assert_eq!((removed.matched, removed.written), (2, 2), "{removed:?}");
    logbus::info!(logger: b, target: &target, "macro after {}", 1);
    log::info!(logger: b, target: &target, "log after");
    logbus::info!(logger: b, target: &target, "macro after {}", 2);
    broker.flush().unwrap();
    let pairs = |topic: &str, messages: &[&str]| -> Vec<(String, String)> {
        messages
            .iter()
            .map(|m| (topic.to_owned(), (*m).to_owned()))
            .collect()
    };
    let db_messages = [
        "log 0",
        "macro 0",
        "macro again 0",
        "log 1",
        "macro 1",
        "macro again 1",
        "log 2",
        "macro 2",
        "macro again 2",
        "macro back 1",
        "log back",
        "macro remembered 1",
        "log db again",
        "macro db again 1",
        "macro fan-out 1",
        "log fan-out",
        "macro after 1",
        "log after",
        "macro after 2",
    ];
    assert_eq!(topics(&db), pairs("info.app.db", &db_messages));
    let warn_messages = ["macro warn 1", "log warn", "log warn again", "macro warn 2"];
    assert_eq!(topics(&warn), pairs("warn.app.db", &warn_messages));
    let dc_messages = ["macro dc 1", "log dc", "log dc again"];
    assert_eq!(topics(&dc), pairs("info.app.dc", &dc_messages));
    assert_eq!(
        topics(&also),
        pairs("info.app.db", &["macro fan-out 1", "log fan-out"])
    );
    all_written(&broker, &[("db", 19), ("warn", 4), ("dc", 3)]);
}

/// A route to several subscriptions, remembered by the thread's view as
/// the one-subscription route is (its copies taken before the lookup),
/// gives way to a one-subscription route, to another level, to another
/// text at the same address, and to a subscription added and removed:
/// every subscription gets its records in order, each counted once.
#[test]
fn a_remembered_copies_route_gives_way_to_what_changed() {
    let broker = common::broker();
    let subscribe = |name: &str, pattern: &str| memory_on(&broker, name, pattern);
    let db = subscribe("db", "info.app.db");
    let any = subscribe("any", "*.app.db");
    let dc = subscribe("dc", "info.app.dc");
    let b = broker.handle();
    let mut target = String::from("app::db");
    for i in 0..2u64 {
        // Copies (db and any), twice each way, then one subscription (any).
        log::info!(logger: b, target: &target, "log {i}");
        log::info!(logger: b, target: &target, "log again {i}");
        logbus::info!(logger: b, target: &target, "macro {}", i);
        logbus::info!(logger: b, target: &target, "macro again {}", i);
        log::warn!(logger: b, target: &target, "warn {i}");
        logbus::warn!(logger: b, target: &target, "macro warn {}", i);
    }
    // The copies' route remembered, then the same address and length with
    // other text (one subscription, dc), the deferred call first; then the
    // first text again.
    log::info!(logger: b, target: &target, "log db before");
    let at = target.as_ptr();
    target.replace_range(6..7, "c");
    assert_eq!((target.as_str(), target.as_ptr()), ("app::dc", at));
    logbus::info!(logger: b, target: &target, "macro dc {}", 1);
    log::info!(logger: b, target: &target, "log dc");
    target.replace_range(6..7, "b");
    log::info!(logger: b, target: &target, "log db");
    // A third copy, then back to two.
    let all = subscribe("all", "info.#");
    log::info!(logger: b, target: &target, "three");
    logbus::info!(logger: b, target: &target, "three {}", 1);
    broker.flush().unwrap();
    let removed = broker.unsubscribe("all").unwrap();
    assert_eq!((removed.matched, removed.written), (2, 2), "{removed:?}");
    logbus::info!(logger: b, target: &target, "two {}", 1);
    log::info!(logger: b, target: &target, "two");
    broker.flush().unwrap();
    let messages = |handle: &logbus::MemoryHandle| -> Vec<String> {
        topics(handle).into_iter().map(|(_, m)| m).collect()
    };
    let info = [
        "log 0",
        "log again 0",
        "macro 0",
        "macro again 0",
        "log 1",
        "log again 1",
        "macro 1",
        "macro again 1",
        "log db before",
        "log db",
        "three",
        "three 1",
        "two 1",
        "two",
    ];
    assert_eq!(messages(&db), info);
    let mut both = info.to_vec();
    both.splice(4..4, ["warn 0", "macro warn 0"]);
    both.splice(10..10, ["warn 1", "macro warn 1"]);
    assert_eq!(messages(&any), both);
    assert_eq!(messages(&dc), ["macro dc 1", "log dc"]);
    for (handle, topic) in [(&db, "info.app.db"), (&dc, "info.app.dc")] {
        assert!(topics(handle).iter().all(|(t, _)| t == topic), "{topic}");
    }
    assert_eq!(messages(&all), ["three", "three 1"]);
    all_written(&broker, &[("db", 14), ("any", 18), ("dc", 2)]);
}

/// Deferred calls of logbus's macros, direct and not (a string argument,
/// too many arguments), under concurrent reconfiguration (generation
/// changes, so the remembered route goes stale under the calls and
/// re-routes under the gate): every record arrives whole and is counted
/// once.
#[test]
fn deferred_calls_balance_under_reconfiguration() {
    let broker = common::broker();
    let check = Check(Arc::default(), decoded_whole);
    let handle = broker
        .subscribe(Subscription::builder("s", check.clone()).pattern("info.app"))
        .unwrap();
    let total = 20_000u64;
    let b = broker.handle();
    under_churn(&broker, "d0", move || {
        for i in 0..total {
            log_decoded(&b, 0, i);
        }
    });
    let s = handle.stats();
    assert_eq!(s.matched, total);
    assert_eq!(s.written + s.dropped, total);
    let g = check.0.lock().unwrap();
    assert_eq!(g.0, s.written);
    assert!(g.1.is_empty(), "{:?}", &g.1[..g.1.len().min(3)]);
}
