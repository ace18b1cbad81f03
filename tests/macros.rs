//! logbus's own macros (`logbus::info!` ...) through local brokers
//! (`logger:`): the same text as the `log` crate's macros, byte for byte,
//! whether the call was deferred or not; which calls are deferred; each
//! argument evaluated once; what reads a deferred message early. Also
//! proves that the macros compile in a crate that forbids `unsafe`.

#![forbid(unsafe_code)]

mod common;

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::{Arc, Mutex};

use logbus::appenders::__private_api::{is_deferred, is_formatted};
use logbus::appenders::Layout;
use logbus::{
    Broker, Journal, JournalQuery, Level, LevelFilter, Memory, MemoryHandle, OverflowPolicy,
    Record, Redaction, Subscription,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// A broker with one `Memory` subscription taking everything.
struct Fixture {
    broker: Broker,
    memory: MemoryHandle,
    /// How many records were compared already.
    seen: Cell<usize>,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with(logbus::builder())
    }

    fn with(builder: logbus::Builder) -> Fixture {
        common::enable_all_levels();
        let (memory, handle) = Memory::new();
        let broker = builder
            .appender(Subscription::builder("memory", memory).level(LevelFilter::Trace))
            .build()
            .unwrap();
        Fixture {
            broker,
            memory: handle,
            seen: Cell::new(0),
        }
    }

    /// The records published since the last call.
    fn fresh(&self) -> Vec<Arc<Record>> {
        self.broker.flush().unwrap();
        let records = self.memory.records();
        let fresh = records[self.seen.get()..].to_vec();
        self.seen.set(records.len());
        fresh
    }

    /// [`fresh`](Fixture::fresh), each as its level, target, message and
    /// whether it was deferred.
    fn fresh_summaries(&self) -> Vec<(Level, String, String, bool)> {
        self.fresh()
            .iter()
            .map(|r| {
                (
                    r.level(),
                    r.target().to_owned(),
                    r.message().to_owned(),
                    is_deferred(r),
                )
            })
            .collect()
    }

    /// Checks the last two records (one by `logbus::`, one by `log::`, from
    /// the same source line): the same message and the same rendered line,
    /// and whether the first was deferred.
    #[track_caller]
    fn check(&self, call: &str, deferred: bool) {
        let records = self.fresh();
        let [ours, theirs] = records.as_slice() else {
            panic!("{call}: {} records", records.len());
        };
        assert_eq!(is_deferred(ours), deferred, "{call}: deferred");
        assert!(!is_deferred(theirs), "{call}");
        assert_eq!(ours.message(), theirs.message(), "{call}");
        assert_eq!(line(ours), line(theirs), "{call}");
        assert_eq!(
            (
                ours.level(),
                ours.target(),
                ours.module_path(),
                ours.file(),
                ours.line()
            ),
            (
                theirs.level(),
                theirs.target(),
                theirs.module_path(),
                theirs.file(),
                theirs.line()
            ),
            "{call}"
        );
    }
}

/// The record as a text appender writes it, without what differs between
/// two records (time, seq).
fn line(record: &Record) -> String {
    let mut layout =
        Layout::parse("{level} {target} {topic} {module} {file}:{line} {thread} {msg}{kv}")
            .unwrap();
    let mut out = Vec::new();
    layout.render(record, &mut out);
    String::from_utf8(out).unwrap()
}

/// Logs the same call with `logbus::info!` and `log::info!` (one source
/// line, so the same location) and checks them (see `Fixture::check`).
macro_rules! same {
    ($fx:expr, $deferred:expr; $($arg:tt)+) => {{
        let fx: &Fixture = $fx;
        logbus::info!(logger: &fx.broker, target: "app::same", $($arg)+); log::info!(logger: &fx.broker, target: "app::same", $($arg)+);
        fx.check(stringify!($($arg)+), $deferred);
    }};
}

/// Every supported spec that fits an integer, on one value (bound first:
/// a call of literals only is not deferred).
macro_rules! integers {
    ($fx:expr; $($value:expr),+ $(,)?) => {$(
        let value = $value;
        same!($fx, true; "{0} {0:?} {0:x} {0:X} {0:#x} {0:#X} {0:o} {0:#o} {0:b} {0:#b} {0:e} {0:E} \
            {0:.3e} {0:5} {0:<5} {0:^7} {0:>9} {0: >9} {0:+} {0:05} {0:+08} {0:#010x} {0:>+#12x} \
            {0:<#6b} {0:^+9} {0:.2} {0:#?} {0:12.4E} {0:<3}|{{}}", value);
        same!($fx, true; "{} {:x} {:>4}", value, value, value);
    )+};
}

/// Every supported spec that fits a float, on one value.
macro_rules! floats {
    ($fx:expr; $($value:expr),+ $(,)?) => {$(
        let value = $value;
        same!($fx, true; "{0} {0:?} {0:e} {0:E} {0:.0} {0:.1} {0:.3} {0:.17} {0:10} {0:<10} {0:^10} \
            {0:>10} {0:+} {0:+.2} {0:010.3} {0:+010.2} {0:#?} {0:.3?} {0:12.3e} {0:+.2E} {0:#} \
            {0:.0e} {0:08} {0:<+9.1} {0:>+#012.1?}|", value);
        same!($fx, true; "{} {:?}", value, value);
    )+};
}

/// Every supported spec that fits a `bool`, a `char` or a string, on one
/// value: a literal, so that a string is deferred too, and an argument
/// that is not, so that the call is.
macro_rules! plain {
    ($fx:expr; $($value:tt),+ $(,)?) => {$(
        let end = '|';
        same!($fx, true; "{0} {0:?} {0:5} {0:<5} {0:^5} {0:>5} {0:.1} {0:.0} {0:#?} {0:>8?} {0:+} \
            {0:05} {0:^+#7.2}{1}", $value, end);
        same!($fx, true; "[{}] [{:?}] {}", $value, $value, end);
    )+};
}

#[test]
fn integers_format_as_log_formats_them() {
    let fx = &Fixture::new();
    integers!(fx; 0u8, 1u8, u8::MAX, u16::MAX, 7u16, u32::MAX, 0u64, u64::MAX, u128::MAX, usize::MAX);
    integers!(fx; i8::MIN, -1i8, i8::MAX, i16::MIN, i32::MIN, 0i32, -42i32, i64::MIN, i64::MAX);
    integers!(fx; i128::MIN, i128::MAX, isize::MIN, 42);
}

#[test]
fn floats_format_as_log_formats_them() {
    let fx = &Fixture::new();
    floats!(fx; 0.0f32, -0.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MIN, f32::MAX);
    floats!(fx; f32::MIN_POSITIVE, 1e-45f32, 0.1f32, 1.0f32 / 3.0);
    floats!(fx; 0.0f64, -0.0f64, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300);
    floats!(fx; -1e-300, f64::MIN, f64::MAX, f64::MIN_POSITIVE, 5e-324, 0.1 + 0.2, 2.5, 1e15, 1e16);
    floats!(fx; 1e-5, 0.5, 1.5, 2.5);
}

#[test]
fn bools_chars_and_string_literals_format_as_log_formats_them() {
    let fx = &Fixture::new();
    plain!(fx; true, false, 'a', '\n', '"', '\'', '\\', '\0', 'é', '\u{7f}', '\u{10ffff}');
    plain!(fx; '\u{200b}', '\u{301}', '\u{feff}');
    plain!(fx; "", "a\"b", "tab\there", "line\nbreak", "é\u{0}\u{7f}", "\u{301}x", r"raw\n");
}

#[test]
fn references_implicit_and_explicit_positions_and_escapes() {
    let fx = &Fixture::new();
    let (n, x) = (5u64, 2.5f64);
    same!(fx, true; "{} {}", &n, &&x);
    same!(fx, true; "{1} {} {0} {} {1:?}", n, x);
    same!(fx, true; "{{{}}} }}{{ {{}}", n);
    same!(fx, true; "{}", n,);
    same!(fx, true; r#"raw "{}" \n"#, n);
    same!(fx, true; "{} {}", n + 1, { x * 2.0 });
    same!(fx, true; "{} {} {}", -3, 2.5, 'c');
    same!(fx, true; "{:?} {} {}", "lit", 7, n);
    same!(fx, true; "é {} ü {}", n, 'ß');
    // Literals only: `log`'s path, where `format_args!` folds `{}` of
    // string and integer literals into the format string (a borrowed
    // message, nothing formatted); others it formats as usual.
    same!(fx, false; "{} {}", "lit", 7);
    let records = fx.memory.records();
    let ours = &records[records.len() - 2];
    assert!(matches!(ours.message_cow(), Cow::Borrowed("lit 7")));
    same!(fx, false; "{:x} {:?} {}", 255, 'c', 2.5);
    same!(fx, false; "{0} {0:?}", "GET",);
    // One bound argument is enough to defer the call, literals and all.
    same!(fx, true; "{} {} {}", "lit", 7, n);
}

/// A value whose `Display` counts its calls.
struct Counted<'a>(&'a Cell<u32>);

impl std::fmt::Display for Counted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.set(self.0.get() + 1);
        f.write_str("counted")
    }
}

#[test]
fn calls_that_cannot_be_deferred_take_the_log_path_with_the_same_text() {
    let fx = &Fixture::new();
    let (n, text, owned) = (7i64, "borrowed", String::from("owned"));
    same!(fx, false; "{} {}", n, owned);
    same!(fx, false; "{}", text);
    same!(fx, false; "{n}");
    same!(fx, false; "{} {n}", n);
    same!(fx, false; "{a} {b}", a = n, b = 2.5);
    same!(fx, false; "{:*<5}", n);
    same!(fx, false; "{:-}", n);
    same!(fx, false; "{:1$}", n, 6);
    same!(fx, false; "{:.*}", 2, 1.5);
    same!(fx, false; "{:x?}", n);
    same!(fx, false; "{:?}", b"bytes");
    same!(fx, false; "{:?}", Some(3));
    same!(fx, false; concat!("{}", "-", "{}"), n, n);
    same!(fx, false; "no arguments {{}}");
    same!(fx, false; "{:p}", &n);
    same!(fx, false; "{}", std::num::NonZeroU8::new(3).unwrap());
    let calls = Cell::new(0);
    same!(fx, false; "{} {}", Counted(&calls), n);
    assert_eq!(calls.get(), 2, "formatted once by each call, on the caller");

    // Key-values: the log crate's path, key-values kept.
    logbus::info!(logger: &fx.broker, k = 1, s:? = "x"; "kv {}", n);
    let records = fx.fresh();
    assert!(!is_deferred(&records[0]));
    assert_eq!(line(&records[0]).rsplit_once(' ').unwrap().1, "s=\"x\"");
    assert_eq!(records[0].message(), "kv 7");
}

#[test]
fn a_deferred_message_is_formatted_by_the_worker_that_takes_it() {
    let fx = &Fixture::new();
    let (n, x) = (1u64, 2.5f64);
    logbus::info!(logger: &fx.broker, "{} {}", n, x);
    let records = fx.fresh();
    // The `Memory` appender keeps records without reading their message:
    // the worker formatted it as it rebuilt the record from the lane's slot
    // (the caller copied the template's address and the arguments' bits,
    // `queue::slot`'s tests). It is still deferred: its size is its
    // arguments' longest.
    assert!(is_deferred(&records[0]) && is_formatted(&records[0]));
    assert_eq!(records[0].message(), "1 2.5");
    // A record that travels shared (a string argument does not fit a
    // slot's words) is formatted by its first reader: here, the test.
    logbus::info!(logger: &fx.broker, "{} {}", "lit", n);
    let shared = &fx.fresh()[0];
    assert!(is_deferred(shared) && !is_formatted(shared));
    assert_eq!(shared.message(), "lit 1");
    assert!(is_formatted(shared));
    // Formatted into the record's buffer: owned, as on `log`'s path.
    assert!(matches!(records[0].message_cow(), Cow::Owned(m) if m == "1 2.5"));
    assert!(format!("{:?}", records[0]).contains(r#"message: "1 2.5""#));
    let copy = Record::clone(&records[0]);
    assert_eq!(copy.message(), "1 2.5");
}

#[test]
fn each_argument_is_evaluated_once_on_either_path() {
    let fx = &Fixture::new();
    let calls = Cell::new(0u32);
    let next = || {
        calls.set(calls.get() + 1);
        calls.get()
    };
    let next_string = || {
        calls.set(calls.get() + 1);
        calls.get().to_string()
    };
    // Deferred.
    logbus::info!(logger: &fx.broker, "{} {}", next(), next());
    assert_eq!(calls.get(), 2);
    // Not deferred: a `String`, a named argument, a capture, key-values.
    logbus::info!(logger: &fx.broker, "{} {}", next(), next_string());
    assert_eq!(calls.get(), 4);
    logbus::info!(logger: &fx.broker, "{a} {}", next(), a = next());
    assert_eq!(calls.get(), 6);
    let c = 0;
    logbus::info!(logger: &fx.broker, "{} {c}", next());
    assert_eq!(calls.get(), 7);
    logbus::info!(logger: &fx.broker, k = next(); "{}", next());
    assert_eq!(calls.get(), 9);
    // The logger and the target too.
    let targets = Cell::new(0);
    let target = || {
        targets.set(targets.get() + 1);
        "app::once"
    };
    let loggers = Cell::new(0);
    let logger = || {
        loggers.set(loggers.get() + 1);
        &fx.broker
    };
    logbus::info!(logger: logger(), target: target(), "{}", next());
    logbus::info!(logger: logger(), target: target(), "{}", next_string());
    assert_eq!((calls.get(), targets.get(), loggers.get()), (11, 2, 2));
    let messages: Vec<_> = fx.fresh().iter().map(|r| r.message().to_owned()).collect();
    // `log` evaluates the message's arguments before the key-values.
    assert_eq!(messages, ["1 2", "3 4", "6 5", "7 0", "8", "10", "11"]);
}

#[test]
fn every_level_and_target_and_log_with_a_level() {
    let fx = &Fixture::new();
    let b = &fx.broker;
    // Bound values: a call of literals only takes `log`'s path.
    let n: [u8; 9] = std::array::from_fn(|i| i as u8);
    logbus::error!(logger: b, "{}", n[1]);
    logbus::warn!(logger: b, target: "app::w", "{}", n[2]);
    logbus::info!(logger: b, "{}", n[3]);
    logbus::debug!(logger: b, target: "app::d", "{}", n[4]);
    logbus::trace!(logger: b, "{}", n[5]);
    logbus::log!(logger: b, Level::Warn, "{}", n[6]);
    logbus::log!(logger: b, target: "app::l", Level::Error, "{}", n[7]);
    let level = Level::Debug;
    logbus::log!(logger: b, level, "{}", n[8]);
    let here = module_path!();
    let got = fx.fresh_summaries();
    let expected = [
        (Level::Error, here, "1"),
        (Level::Warn, "app::w", "2"),
        (Level::Info, here, "3"),
        (Level::Debug, "app::d", "4"),
        (Level::Trace, here, "5"),
        (Level::Warn, here, "6"),
        (Level::Error, "app::l", "7"),
        (Level::Debug, here, "8"),
    ]
    .map(|(level, target, message)| (level, target.to_owned(), message.to_owned(), true));
    assert_eq!(got, expected);
}

#[test]
fn a_message_that_could_exceed_the_size_bound_takes_the_log_path() {
    // The bound counts 400 bytes per placeholder (more than any value's
    // text) or its width, a string literal 6 times per placeholder (`{:?}`
    // escapes) and a char 3 bytes per placeholder (padding counts chars):
    // under 1,024 bytes (the least `max_record_bytes` takes), "{:>1025}"
    // may not be deferred.
    let fx = &Fixture::with(logbus::builder().max_record_bytes(1024));
    let (one, two) = (1, 2);
    same!(fx, true; "{} {}", one, two);
    same!(fx, true; "{:>1024}", one);
    same!(fx, false; "{:>1025}", one);
    // With a string literal, 2 placeholders: 800, plus 2 x (6 x 18 + 2) = 1,020 fit;
    // 2 x (6 x 19 + 2) = 1,032 do not.
    same!(fx, true; "{}{}", "xxxxxxxxxxxxxxxxxx", one);
    same!(fx, false; "{}{}", "yyyyyyyyyyyyyyyyyyy", one);
    // Cut by the bound, identically.
    same!(fx, false; "{:>1100}|{}", one, two);
    assert!(fx.memory.messages().last().unwrap().contains("…[truncated"));
    // std pads to a width in chars: a 4-byte char at width 1,024 is 1,027
    // bytes, so a char counts 3 bytes more per placeholder. The `log` path
    // cuts it; 1,021 + 3 fit.
    let smile = '\u{1f600}';
    same!(fx, false; "{:1024}", smile);
    let messages = fx.memory.messages();
    assert!(messages[messages.len() - 1].ends_with("…[truncated 1+ bytes]"));
    same!(fx, true; "{:1021}", smile);
    let messages = fx.memory.messages();
    assert_eq!(messages[messages.len() - 1].len(), 1024);
    // An integer is ASCII: its width is its length.
    same!(fx, true; "{:>1024}", one);
}

#[test]
fn reading_the_message_on_the_callers_thread_formats_it_there() {
    // A predicate that reads the message.
    common::enable_all_levels();
    let (memory, captured) = Memory::new();
    let broker = logbus::builder()
        .appender(
            Subscription::builder("memory", memory).filter(|r: &Record| r.message().ends_with('2')),
        )
        .build()
        .unwrap();
    let (one, two, three) = (1, 2, 3);
    logbus::info!(logger: &broker, "{} {}", one, two);
    logbus::info!(logger: &broker, "{} {}", one, three);
    broker.flush().unwrap();
    let records = captured.records();
    assert_eq!(records.len(), 1);
    assert!(is_deferred(&records[0]) && is_formatted(&records[0]));

    // A redaction's message rewrite: the rewritten message replaces it.
    let fx = Fixture::with(
        logbus::builder()
            .redact(Redaction::new().message(|m| m.contains("1234").then(|| "[card]".to_owned()))),
    );
    let (card, count) = (1234, 5);
    logbus::info!(logger: &fx.broker, "card {}", card);
    logbus::info!(logger: &fx.broker, "count {}", count);
    let records = fx.fresh();
    assert_eq!(
        (records[0].message(), is_deferred(&records[0])),
        ("[card]", false)
    );
    assert_eq!(
        (records[1].message(), is_formatted(&records[1])),
        ("count 5", true)
    );

    // The journal counts what it keeps: it keeps the text.
    let fx = Fixture::with(logbus::builder().journal(Journal::new()));
    let k = 'k';
    logbus::info!(logger: &fx.broker, "kept {:?}", k);
    let records = fx.fresh();
    assert_eq!(
        (records[0].message(), is_deferred(&records[0])),
        ("kept 'k'", false)
    );
    let kept: Vec<_> = fx
        .broker
        .journal()
        .unwrap()
        .iter(JournalQuery::new())
        .unwrap()
        .map(|r| r.message().to_owned())
        .collect();
    assert_eq!(kept, ["kept 'k'"]);
}

#[test]
fn a_byte_budget_bounds_deferred_records_formatted_while_queued() {
    // A predicate reads the message, so each deferred record is formatted
    // on the caller's thread, then queued behind a stalled worker: the
    // budget must count what its message can be (1,000 bytes here), not
    // its format string (7), or it would hold several times its bytes.
    const BUDGET: usize = 256 * 1024;
    common::enable_all_levels();
    let queued = |deferred: bool| {
        let (broker, gate) = common::stalled(|s| {
            s.level(LevelFilter::Trace)
                .max_bytes(BUDGET)
                .capacity(100_000)
                .overflow(OverflowPolicy::DropNewest)
                .filter(|r: &Record| !r.message().is_empty())
        });
        for i in 0..2_000u32 {
            if deferred {
                logbus::info!(logger: &broker, "{:1000}", i);
            } else {
                log::info!(logger: &broker, "{:1000}", i);
            }
        }
        gate.open();
        broker.flush().unwrap();
        // Not the one the worker stalled on, nor the drop summary.
        let mut records = gate.captured.records();
        records.retain(|r| r.target() == module_path!());
        assert!(records
            .iter()
            .all(|r| is_deferred(r) == deferred && (!deferred || is_formatted(r))));
        let bytes: usize = records.iter().map(|r| r.message().len()).sum();
        assert!(bytes <= BUDGET, "{bytes} message bytes queued");
        records.len()
    };
    // `{:1000}` of a `u32` is 1,000 bytes at most, as on the `log` path.
    let (log_path, deferred) = (queued(false), queued(true));
    assert!(log_path > 100, "{log_path}");
    assert_eq!(deferred, log_path);
}

/// A `log` backend that is not logbus, used as `logger:`.
#[derive(Default)]
struct Other(Mutex<Vec<(String, Option<&'static str>)>>);

impl log::Log for Other {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let args = record.args();
        self.0
            .lock()
            .unwrap()
            .push((args.to_string(), args.as_str()));
    }

    fn flush(&self) {}
}

#[test]
fn another_logger_gets_what_log_would_give_it() {
    common::enable_all_levels();
    let other = Other::default();
    logbus::info!(logger: &other, "{} {}", 1u64, 2.5);
    log::info!(logger: &other, "{} {}", 1u64, 2.5);
    // Literal arguments reach `format_args!` as they are: it inlines them.
    logbus::info!(logger: &other, "{} {}", "GET", 5);
    log::info!(logger: &other, "{} {}", "GET", 5);
    let got = other.0.lock().unwrap().clone();
    assert_eq!(got[0], got[1]);
    assert_eq!(got[2], got[3]);
    assert_eq!(got[2], ("GET 5".to_owned(), Some("GET 5")));
}

#[test]
fn the_callers_items_do_not_meet_the_expansions() {
    // Items are not hygienic: the expansion's `const`s (`PIECES`, `SITE`)
    // must not be in scope where the caller's target is evaluated, nor the
    // caller's consts of those names where the expansion reads its own.
    const SITE: &str = "app::site";
    const PIECES: &str = "app::pieces";
    const TARGET: &str = "app::target";
    const TEMPLATE: &str = "app::template";
    const LEVEL: Level = Level::Warn;
    #[allow(dead_code)]
    struct Site;
    #[allow(dead_code)]
    struct Piece;
    #[allow(dead_code)]
    struct Template;
    let fx = &Fixture::new();
    let n = 1u8;
    logbus::info!(logger: &fx.broker, target: SITE, "{}", n);
    logbus::info!(logger: &fx.broker, target: PIECES, "{} {}", n, 2);
    logbus::log!(logger: &fx.broker, target: TARGET, LEVEL, "{}", n);
    logbus::warn!(logger: &fx.broker, target: TEMPLATE, "{:>3}", n);
    // Without `logger:` (no logbus installed in this binary: `log`'s path).
    logbus::info!(target: SITE, "{}", n);
    logbus::log!(target: PIECES, LEVEL, "{}", n);
    let got = fx.fresh_summaries();
    let expected = [
        (Level::Info, SITE, "1"),
        (Level::Info, PIECES, "1 2"),
        (Level::Warn, TARGET, "1"),
        (Level::Warn, TEMPLATE, "  1"),
    ]
    .map(|(level, target, message)| (level, target.to_owned(), message.to_owned(), true));
    assert_eq!(got, expected);
}

/// A library's macro that forwards to logbus's.
macro_rules! forward_tokens {
    ($($t:tt)*) => { logbus::info!(logger: &common::broker(), $($t)*) };
}

macro_rules! forward_expr {
    ($fmt:expr, $value:expr) => {
        logbus::info!(logger: &common::broker(), $fmt, $value)
    };
}

#[test]
fn macros_that_forward_to_ours_compile() {
    forward_tokens!("{} {}", 1, 2);
    forward_expr!("{}", 3);
    forward_expr!(concat!("{", "}"), 4);
}

#[test]
fn any_value_formats_as_log_formats_it() {
    let fx = &Fixture::new();
    let values = (
        any::<i64>(),
        any::<u128>(),
        any::<u64>(),
        any::<f32>(),
        any::<char>(),
        any::<bool>(),
        0usize..20,
    );
    TestRunner::default()
        .run(&values, |(int, uint, bits, float, c, b, width)| {
            let double = f64::from_bits(bits);
            integers!(fx; int, uint);
            floats!(fx; double, float);
            plain!(fx; c, b);
            same!(fx, true; "{} {:?} {:e} {} {}", int, double, float, c, b);
            same!(fx, false; "{:1$}", int, width);
            Ok(())
        })
        .unwrap();
}
