//! The direct path under stress: a plain record for one subscription
//! travels as its parts copied into the lane (`src/broker/publish.rs`,
//! `src/queue/slot.rs`). Floods with a byte bound, reconfiguration and
//! removal racing the publishers, and calls at thread exit: every record
//! whole, formatted once, and counted once. A deferred message of
//! logbus's macros takes the same path as its template and arguments.

mod common;

use std::sync::{Arc, Mutex};

use logbus::{AppendError, Appender, OverflowPolicy, Record, Subscription};

/// Counts the records of the flood (not logbus's own) and keeps those
/// that `whole` says are not what their thread logged.
#[derive(Clone)]
struct Check(Arc<Mutex<(u64, Vec<String>)>>, fn(&Record) -> bool);

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
    tally: &Mutex<(u64, Vec<String>)>,
    prefix: &str,
    log: fn(&logbus::BrokerHandle, u64, u64),
) {
    let broker = common::broker();
    let handle = broker
        .subscribe(
            Subscription::builder("s", appender)
                .capacity(64)
                .max_bytes(20_000)
                .overflow(OverflowPolicy::DropOldest),
        )
        .unwrap();
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
    drop(g);
    let dropped = handle.stats().dropped;
    for i in 0..1000u64 {
        log(&broker.handle(), 0, i);
        broker.flush().unwrap();
    }
    assert_eq!(handle.stats().dropped, dropped);
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

/// Under concurrent reconfiguration (generation changes), each message is
/// formatted exactly once and every record is counted once.
#[test]
fn direct_path_formats_once_under_reconfiguration() {
    let broker = common::broker();
    let check = Check::default();
    let handle = broker
        .subscribe(Subscription::builder("s", check.clone()).pattern("info.app"))
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let h = broker.handle();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                h.subscribe(Subscription::builder("other", Check::default()).pattern("warn.other"))
                    .unwrap();
                h.unsubscribe("other").unwrap();
                n += 1;
            }
            n
        })
    };
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = 20_000u64;
    {
        let b = broker.handle();
        let calls = Arc::clone(&calls);
        std::thread::Builder::new()
            .name("w0".into())
            .spawn(move || {
                for i in 0..total {
                    log::info!(logger: b, target: "app", "w0 {}", Counted(&calls, i));
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    broker.flush().unwrap();
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
    let broker = common::broker();
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
    for p in pubs {
        p.join().unwrap();
    }
    assert!(total > 0, "the publishers reached the subscription");
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
