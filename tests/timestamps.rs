//! Record times: stamped on the caller's thread (on x86-64 Linux a raw counter, converted
//! when the time is first read), each within the documented accuracy of the wall clock read
//! around its log call, non-decreasing per thread (also where one thread's records take the
//! direct path and the shared one in turn), one time per record in every output and in a
//! clone; the wall-clock fallback (`LOGBUS_TSC=off`, in a child process) keeps the same
//! promises.
//!
//! The slack is the accuracy `src/clock/convert.rs` argues (under 0.1 µs here), rounded up
//! to 1 µs, not a timing threshold: `SystemTime::now()` read before and after a log call
//! bounds the moment of its stamp from both sides however long the call takes, so nothing
//! here depends on how fast anything runs.

#[path = "common/child.rs"]
mod child;
mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use logbus::appenders::{ColorMode, Console, Layout};
use logbus::{AppendError, Appender, Memory, Record, Subscription};

/// The documented accuracy, rounded up.
const SLACK: Duration = Duration::from_micros(1);
const THREADS: usize = 3;
const PER_THREAD: usize = 2_000;

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keeps a clone of each record (`Memory` shares them instead), made on its worker before
/// or after another worker's [`TimeReader`] read the same record's time.
#[derive(Clone, Default)]
struct Cloner(Arc<Mutex<Vec<Record>>>);

impl Appender for Cloner {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.0.lock().unwrap().push(record.clone());
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Reads each record's time on its worker, as a rendering appender does, and keeps it by
/// message.
#[derive(Clone, Default)]
struct TimeReader(Arc<Mutex<BTreeMap<String, SystemTime>>>);

impl Appender for TimeReader {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let time = record.time();
        self.0
            .lock()
            .unwrap()
            .insert(record.message().to_owned(), time);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// What `src/clock/tsc.rs` decides on this machine, from the same conditions: the counter
/// on x86-64 Linux when the CPU says it is invariant, the kernel's clock source is `tsc`,
/// `rdtsc` is allowed and `LOGBUS_TSC` does not turn it off; the wall clock otherwise.
fn expected_source() -> &'static str {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let opted_out = std::env::var("LOGBUS_TSC").is_ok_and(|value| {
            ["off", "0", "false", "no"]
                .iter()
                .any(|off| value.eq_ignore_ascii_case(off))
        });
        let clocksource = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default();
        #[allow(unused_unsafe)] // `__cpuid` is safe since Rust 1.87
        // SAFETY: every x86-64 CPU has CPUID and its extended leaf 0x8000_0000; 0x8000_0007
        // is read only if that says it exists.
        let invariant = unsafe {
            use std::arch::x86_64::__cpuid;
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
        };
        let mut mode: libc::c_int = 0;
        // SAFETY: `PR_GET_TSC` writes one `int` through the pointer, to a live `c_int`.
        let got = unsafe { libc::prctl(libc::PR_GET_TSC, &mut mode as *mut libc::c_int) };
        let allowed = got == 0 && mode == libc::PR_TSC_ENABLE;
        if !opted_out && clocksource.trim() == "tsc" && invariant && allowed {
            return "tsc";
        }
    }
    "wall clock"
}

/// Truncated to the microsecond, as `{ts}` prints it.
fn micros(time: SystemTime) -> u128 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

#[track_caller]
fn assert_within(time: SystemTime, before: SystemTime, after: SystemTime, what: &str) {
    assert!(
        time + SLACK >= before && time <= after + SLACK,
        "{what}: {time:?} outside [{before:?}, {after:?}] by more than {SLACK:?}"
    );
}

/// Both checks below.
fn check_record_times() {
    check_four_outputs(Route::Copies);
    check_four_outputs(Route::Shared);
    check_mixed_ways();
}

/// How [`check_four_outputs`]'s records reach its four subscriptions.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// As copies of their parts, one each, each worker converting the stamp with the
    /// anchor of its epoch.
    Copies,
    /// As one shared record (a predicate on the route keeps it off the direct path), whose
    /// time the first of the workers to read it converts: the cloner's clone and the
    /// reader's read race on it.
    Shared,
}

/// Logs from this thread (each call bracketed by clock reads) and from others into four
/// subscriptions, then checks every record's time, per thread order, one time in every
/// output (a clone's too), and the console's rendering of it.
fn check_four_outputs(route: Route) {
    let broker = common::broker();
    // Decided as the broker was built: which of the two paths this run takes.
    assert_eq!(logbus::testing::__stamp_source(), expected_source());
    let (memory, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("memory", memory))
        .unwrap();
    let text = Shared::default();
    let console = Console::builder()
        .layout(Layout::parse("{ts} {msg}").unwrap())
        .color(ColorMode::Never)
        .build_with_writers(text.clone(), text.clone());
    broker
        .subscribe(Subscription::builder("console", console))
        .unwrap();
    let (cloner, reader) = (Cloner::default(), TimeReader::default());
    let cloning = Subscription::builder("cloner", cloner.clone());
    let cloning = match route {
        Route::Copies => cloning,
        Route::Shared => cloning.filter(|_| true),
    };
    broker.subscribe(cloning).unwrap();
    broker
        .subscribe(Subscription::builder("reader", reader.clone()))
        .unwrap();

    let start = SystemTime::now();
    // This thread: the clock read right before and right after each call.
    let mut brackets = BTreeMap::new();
    for i in 0..PER_THREAD {
        let before = SystemTime::now();
        log::info!(logger: &broker, "main:{i}");
        brackets.insert(format!("main:{i}"), (before, SystemTime::now()));
    }
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let broker = &broker;
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    log::info!(logger: broker, "{thread}:{i}");
                }
            });
        }
    });
    broker.flush().unwrap();
    let end = SystemTime::now();

    let records = captured.records();
    assert_eq!(records.len(), (THREADS + 1) * PER_THREAD);
    let mut last: BTreeMap<String, SystemTime> = BTreeMap::new();
    for record in &records {
        let time = record.time();
        assert_within(time, start, end, record.message());
        if let Some(&(before, after)) = brackets.get(record.message()) {
            assert_within(time, before, after, record.message());
        }
        // Memory keeps each thread's records in its program order.
        let thread = record.message().split(':').next().unwrap().to_owned();
        if let Some(previous) = last.insert(thread, time) {
            assert!(
                previous <= time,
                "{}: {time:?} before its thread's previous record's {previous:?}",
                record.message()
            );
        }
        assert_eq!(record.time(), time, "{route:?}: a record has one time");
    }
    // A clone, made whether or not the reader's worker had read the time yet, has the time
    // the reader read, to the nanosecond.
    let clones = cloner.0.lock().unwrap();
    let read = reader.0.lock().unwrap();
    assert_eq!(clones.len(), records.len());
    for clone in clones.iter() {
        assert_eq!(
            clone.time(),
            read[clone.message()],
            "{route:?}, {}: a clone has the original's time",
            clone.message()
        );
    }

    // The console rendered the same records: their time, truncated to the microsecond.
    let text = String::from_utf8(text.0.lock().unwrap().clone()).unwrap();
    let rendered: BTreeMap<&str, &str> = text
        .lines()
        .map(|line| {
            let (ts, message) = line.split_once(' ').unwrap();
            (message, ts)
        })
        .collect();
    assert_eq!(rendered.len(), records.len());
    for record in &records {
        let ts = rendered[record.message()];
        let printed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
        let printed = printed.timestamp_micros() as u128;
        assert!(
            micros(start - SLACK) <= printed && printed <= micros(end + SLACK),
            "{}: printed {ts} outside the window",
            record.message()
        );
        assert_eq!(printed, micros(record.time()), "{}: {ts}", record.message());
    }
}

/// One thread rotates records for one subscription (the direct path: the worker builds the
/// record from the slot and converts its ticks), for two (copies of the parts, each worker
/// converting the stamp with its epoch's anchor) and for two of which one has a predicate (one shared
/// record, converted by its first reader). Every output reads each time on its worker, as a
/// rendering appender does: each time is within the clock reads around its call, a record
/// has one time in both its outputs, and the thread's times in the output that has every
/// kind (converted by that output's worker with its own or its epoch's anchor, or by the
/// other's) never go back.
fn check_mixed_ways() {
    let broker = common::broker();
    let (all, copies, shared) = (
        TimeReader::default(),
        TimeReader::default(),
        TimeReader::default(),
    );
    broker
        .subscribe(Subscription::builder("all", all.clone()))
        .unwrap();
    broker
        .subscribe(Subscription::builder("copies", copies.clone()).pattern("*.copies.#"))
        .unwrap();
    broker
        .subscribe(
            Subscription::builder("shared", shared.clone())
                .pattern("*.shared.#")
                .filter(|_| true),
        )
        .unwrap();
    let kind = |i: usize| ["shared", "copies", "alone"][i % 3];
    let mut brackets = Vec::new();
    for i in 0..PER_THREAD {
        let target = kind(i);
        let before = SystemTime::now();
        log::info!(logger: &broker, target: target, "{target}:{i}");
        brackets.push((format!("{target}:{i}"), before, SystemTime::now()));
    }
    broker.flush().unwrap();

    let all = all.0.lock().unwrap();
    assert_eq!(all.len(), PER_THREAD);
    let mut previous: Option<SystemTime> = None;
    for (message, before, after) in &brackets {
        let time = all[message];
        assert_within(time, *before, *after, message);
        // Converted by different anchors (an epoch's, either worker's), two times agree
        // to within the accuracy, not to the nanosecond: the order holds within it.
        if let Some(previous) = previous {
            assert!(
                previous <= time + SLACK,
                "{message}: {time:?} before the previous record's {previous:?}"
            );
        }
        previous = Some(time);
    }
    for (output, name) in [(&copies, "copies"), (&shared, "shared")] {
        let got = output.0.lock().unwrap();
        assert_eq!(
            got.len(),
            (0..PER_THREAD).filter(|&i| kind(i) == name).count()
        );
        for (message, time) in got.iter() {
            assert_eq!(*time, all[message], "{message}: one time in both outputs");
        }
    }
}

#[test]
fn record_times_lie_between_the_clock_reads_around_the_log_calls() {
    check_record_times();
}

#[test]
fn child_wall_clock_fallback() {
    if child::role("child_wall_clock_fallback").is_none() {
        return;
    }
    check_record_times();
    assert_eq!(logbus::testing::__stamp_source(), "wall clock");
}

#[test]
fn the_wall_clock_fallback_keeps_the_same_promises() {
    let output = child::run("child_wall_clock_fallback", "", &[("LOGBUS_TSC", "off")]);
    child::assert_success(&output, "LOGBUS_TSC=off");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "the child ran its test"
    );
}
