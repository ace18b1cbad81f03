//! One logging workload through logbus or one of its peers, in this process.
//!
//! ```text
//! logbus-peers --logger NAME --threads T --records N --out DIR [--gap-ns G]
//! ```
//!
//! Every thread logs `info!(target: "app::http", "request {} served in {} us", i, i % 1000)`
//! (its share of `N` records), timing each call with `Instant`; with
//! `--gap-ns G`, each thread starts a call every `G` ns at most (spinning
//! in between on its own clock, counted as the caller's CPU time, not the
//! logger's), for the worker's CPU time at a steady rate instead of a
//! flood. Then the
//! logger is flushed or shut down the way its documentation says, so that
//! every line it will ever write is in the file. Printed, as one
//! `RESULT key=value ...` line:
//!
//! - `timer_ns`: the median cost of an empty `Instant::now()`/`elapsed()`
//!   pair, included in every per-call figure;
//! - `p50`, `p99`, `p999`, `max`: caller latency per call, ns;
//! - `p50f`: the median finer than the clock's step (`median_fine`), ns,
//!   for comparing medians a few ns apart (last on the line, so that older
//!   parsers of the line read on);
//! - `secs`, `rate`: from the first call until the flush returned, and
//!   records per second over that time;
//! - `lines`, `ratio`: lines of the workload found in the files under `DIR`
//!   (each checked to be `request {i} served in {i % 1000} us` for an `i`
//!   logged, and counted once a file), and that divided by the records
//!   logged (1.0 = nothing lost);
//! - `rss_kb`: peak resident set (`VmHWM`), which includes the 4 bytes per
//!   record this harness keeps for the latencies;
//! - `mean`: mean caller latency per call, ns;
//! - `allocs`: heap allocations (and reallocations) made on the calling
//!   threads inside the timed calls, per call; a logger's own threads are
//!   not counted (a counting `#[global_allocator]` with a thread-local
//!   flag, set only around each call);
//! - `cpu_caller`, `cpu_bg`: CPU time per record, ns, that the calling
//!   threads spent in their loops (each its own thread's CPU clock), and
//!   that the rest of the process spent from the first call until the
//!   flush returned (the process's CPU clock, which counts threads that
//!   have exited, less the callers'): a logger's worker threads, mostly.
//!   Time a thread waits, for a lock, a core or the hypervisor, is not
//!   CPU time, so on a shared machine these vary less than `rate` does;
//! - `xcore_ns`: a cache line's round trip between two threads, ns,
//!   measured before the workload: the host's state (`crosscore_ns`);
//! - `bad_lines`, `dup_lines`: lines that say `served in` but are not a
//!   logged record's message, and records found twice in one file (both
//!   are 0 for a logger that writes what it was given once).
//!
//! Loggers that take a user format function get the same cached-second
//! timestamp writer the floors use (`write_ts`), so that they are compared on
//! their machinery and not on how fast chrono formats a date.

use std::cell::RefCell;
use std::fs::File;
use std::hint::black_box;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TARGET: &str = "app::http";

/// Every logger this binary can run.
const LOGGERS: &[&str] = &[
    "floor-format",
    "floor-bufwriter",
    "logbus",
    "logbus-block",
    "logbus-macro",
    "logbus-journal",
    "logbus-kv",
    "logbus-redact",
    "logbus-3",
    "logbus-3-block",
    "tracing-lossy",
    "tracing-blocking",
    "slog-async",
    "spdlog-async",
    "ftlog",
    "fast_log",
    "flexi_logger-async",
    "log4rs",
    "fern",
    "ladder-ring",
    "ladder-stack",
    "ladder-slot",
    "ladder-seq",
    "ladder-route",
    "ladder-gate",
    "ladder-light",
    "ladder-log",
    "ladder-args",
    "ladder-args-slot",
    "ladder-args-seq",
    "ladder-args-route",
    "ladder-args-gate",
    "ladder-args-light",
];

struct Args {
    logger: String,
    threads: usize,
    records: u64,
    out: PathBuf,
}

/// `--gap-ns`: the least time between the starts of one thread's calls (0:
/// back to back). A static, so that `drive` sees it without every logger's
/// function passing it on.
static GAP_NS: AtomicU64 = AtomicU64::new(0);

fn parse_args() -> Args {
    let mut args = Args {
        logger: String::new(),
        threads: 1,
        records: 1_000_000,
        out: PathBuf::from("peers-out"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--logger" => args.logger = value,
            "--threads" => args.threads = value.parse().unwrap_or_else(|_| usage("bad --threads")),
            "--records" => args.records = value.parse().unwrap_or_else(|_| usage("bad --records")),
            "--out" => args.out = PathBuf::from(value),
            "--gap-ns" => GAP_NS.store(
                value.parse().unwrap_or_else(|_| usage("bad --gap-ns")),
                Ordering::Relaxed,
            ),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if !LOGGERS.contains(&args.logger.as_str()) {
        usage(&format!("unknown logger {:?}", args.logger));
    }
    if args.threads == 0 {
        usage("--threads must be at least 1");
    }
    args
}

fn usage(why: &str) -> ! {
    eprintln!(
        "{why}\nusage: logbus-peers --logger NAME --threads T --records N --out DIR [--gap-ns G]\nloggers: {}",
        LOGGERS.join(" ")
    );
    std::process::exit(2);
}

// ---------------------------------------------------------------------------
// The timestamp every custom format uses: `2026-11-29T20:25:23.941824Z`,
// the date-and-seconds prefix cached per thread (as logbus's layout does).

thread_local! {
    static TS_CACHE: RefCell<(u64, [u8; 19])> = const { RefCell::new((u64::MAX, [0; 19])) };
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn write_ts_at(now: SystemTime, out: &mut Vec<u8>) {
    let d = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let micros = d.subsec_micros();
    TS_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            let (y, m, day) = civil_from_days((secs / 86_400) as i64);
            let s = secs % 86_400;
            let text = format!(
                "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}",
                s / 3600,
                s / 60 % 60,
                s % 60
            );
            c.1.copy_from_slice(text.as_bytes());
            c.0 = secs;
        }
        out.extend_from_slice(&c.1);
    });
    let mut frac = [b'.', 0, 0, 0, 0, 0, 0, b'Z'];
    let mut v = micros;
    for slot in frac[1..7].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&frac);
}

fn write_ts(out: &mut Vec<u8>) {
    write_ts_at(SystemTime::now(), out);
}

thread_local! {
    /// The harness's own buffers for the format functions it hands to
    /// loggers, reused so that the harness allocates nothing per call (the
    /// `allocs` figure is the logger's).
    static TS_BUF: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(32));
    static LINE_BUF: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(128));
}

/// The current timestamp as `write_ts` writes it, for `format_args!`.
struct Ts;

impl std::fmt::Display for Ts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        TS_BUF.with_borrow_mut(|v| {
            v.clear();
            write_ts(v);
            f.write_str(std::str::from_utf8(v).unwrap_or(""))
        })
    }
}

// ---------------------------------------------------------------------------
// Counting the callers' allocations.

#[path = "../../../tests/common/counting.rs"]
mod counting;
mod ladder;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// Every calling thread's count, added when the thread is done.
static CALLER_ALLOCS: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------
// CPU time.

/// The calling threads' CPU time in their loops, ns, added when each is done.
static CALLER_CPU: AtomicU64 = AtomicU64::new(0);
/// The process's CPU clock at the first call and when the flush returned
/// ([`done`]), ns.
static START_CPU: AtomicU64 = AtomicU64::new(0);
static END_CPU: AtomicU64 = AtomicU64::new(0);

/// `clock`'s reading (a CPU clock), ns.
fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid `timespec` to write to; the CPU clocks are
    // always there on Linux.
    let rc = unsafe { libc::clock_gettime(clock, &mut now) };
    assert_eq!(rc, 0, "clock_gettime");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The moment a logger's run ends (its flush returned): notes the
/// process's CPU clock too.
fn done() -> Instant {
    END_CPU.store(cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID), Ordering::Relaxed);
    Instant::now()
}

// ---------------------------------------------------------------------------
// The workload.

/// Runs `log` for `records` values of `i` split among `threads`, timing each
/// call. Returns the latencies (ns) and when the first thread started.
fn drive<F: Fn(u64) + Sync>(threads: usize, records: u64, log: F) -> (Vec<u32>, Instant) {
    let barrier = Barrier::new(threads + 1);
    let start = Mutex::new(None::<Instant>);
    let lat = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (barrier, log) = (&barrier, &log);
                std::thread::Builder::new()
                    .name(format!("producer-{t}"))
                    .spawn_scoped(s, move || {
                        let mut lat = Vec::with_capacity((records / threads as u64 + 1) as usize);
                        barrier.wait();
                        let mut i = t;
                        let mut allocs = 0;
                        let cpu = cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                        let gap = Duration::from_nanos(GAP_NS.load(Ordering::Relaxed));
                        let mut next = Instant::now();
                        while i < records {
                            if !gap.is_zero() {
                                next += gap;
                                while Instant::now() < next {
                                    std::hint::spin_loop();
                                }
                            }
                            let t0 = Instant::now();
                            allocs += counting::count(|| log(i)).1;
                            lat.push(t0.elapsed().as_nanos().min(u128::from(u32::MAX)) as u32);
                            i += threads as u64;
                        }
                        let cpu = cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID) - cpu;
                        CALLER_CPU.fetch_add(cpu, Ordering::Relaxed);
                        CALLER_ALLOCS.fetch_add(allocs, Ordering::Relaxed);
                        lat
                    })
                    .expect("spawn producer")
            })
            .collect();
        START_CPU.store(cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID), Ordering::Relaxed);
        *start.lock().unwrap() = Some(Instant::now());
        barrier.wait();
        let mut all = Vec::with_capacity(records as usize);
        for h in handles {
            all.extend(h.join().expect("producer panicked"));
        }
        all
    });
    let start = start.into_inner().unwrap().expect("start");
    (lat, start)
}

/// The median cost of an empty timed region.
fn timer_overhead() -> u32 {
    let mut v: Vec<u32> = (0..200_000)
        .map(|_| {
            let t0 = Instant::now();
            black_box(());
            t0.elapsed().as_nanos() as u32
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// The median time, ns, for a cache line to go from this thread to another
/// one and back (`xcore_ns`): a probe of the host's state, taken before the
/// workload. On the two-vCPU VMs these figures come from, it reads about
/// 45-200 ns most of the time and about 400 ns for stretches of minutes, in
/// which every figure that moves a line between cores (a lane's slots, a
/// consumer's `head`) reads up to twice as slow, the stand-alone ladder's
/// too (`benches/README.md`, "Twentieth session"). Five bursts of 2,000
/// round trips; the median burst's mean.
fn crosscore_ns() -> f64 {
    const TRIPS: u64 = 2_000;
    const BURSTS: u64 = 5;
    let line = Arc::new(AtomicU64::new(0));
    let other = Arc::clone(&line);
    // The other side answers each odd value with the next even one.
    let echo = std::thread::spawn(move || {
        for i in 0..TRIPS * BURSTS {
            while other.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.store(2 * i + 2, Ordering::Release);
        }
    });
    let mut bursts: Vec<f64> = (0..BURSTS)
        .map(|b| {
            let start = Instant::now();
            for i in b * TRIPS..(b + 1) * TRIPS {
                line.store(2 * i + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            start.elapsed().as_nanos() as f64 / TRIPS as f64
        })
        .collect();
    echo.join().expect("the probe's other thread panicked");
    bursts.sort_by(f64::total_cmp);
    bursts[bursts.len() / 2]
}

/// The median of `sorted` finer than the clock's step: the readings come
/// in steps (this project's VMs read `Instant` in steps of 10 ns: 50, 51,
/// 60, 61, ...), so `p50` moves only in whole steps, and two medians 3 ns
/// apart can read the same or 10 ns apart. Each reading stands for the
/// times within half a step of it (a call of `d` ns reads as the step at
/// or below `d` or the one above, the nearer more often), so the median
/// is interpolated within its step as for grouped data: the step's lower
/// edge, plus the step times the share of the step's readings the median's
/// rank reaches into. Readings 1 ns apart are one step's (the clock's
/// rounding); the step is the commonest gap between steps.
fn median_fine(sorted: &[u32]) -> f64 {
    let Some(&first) = sorted.first() else {
        return f64::NAN;
    };
    // Each reading's step (its lowest reading), in order.
    let mut steps: Vec<(u32, usize)> = Vec::new();
    for &x in sorted {
        match steps.last_mut() {
            Some((low, count)) if x <= *low + 1 => *count += 1,
            _ => steps.push((x, 1)),
        }
    }
    let mut gaps: Vec<u32> = steps.windows(2).map(|w| w[1].0 - w[0].0).collect();
    gaps.sort_unstable();
    // The commonest gap (the smallest of the commonest).
    let mut step = 1;
    let mut best = 0;
    for run in gaps.chunk_by(|a, b| a == b) {
        if run.len() > best {
            best = run.len();
            step = run[0];
        }
    }
    let half = sorted.len() as f64 / 2.0;
    let mut below = 0;
    for &(low, count) in &steps {
        if (below + count) as f64 >= half {
            let into = (half - below as f64) / count as f64;
            return f64::from(low) - f64::from(step) / 2.0 + f64::from(step) * into;
        }
        below += count;
    }
    f64::from(first)
}

fn percentile(sorted: &[u32], q: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The workload's lines in the files under `dir`, checked one by one.
#[derive(Default)]
struct Lines {
    /// Lines whose message is one of the workload's (`request {i} served
    /// in {i % 1000} us`, `i` below the records logged).
    good: u64,
    /// Lines that say `served in` but are not such a message (garbled, cut
    /// or from another run).
    bad: u64,
    /// Good lines whose `i` was already in the same file: a record written
    /// twice (a file holds each record once, even with several appenders,
    /// which each write their own).
    dups: u64,
}

/// The workload's lines in every file under `dir` (recursively), for
/// `records` records logged.
fn count_lines(dir: &Path, records: u64, out: &mut Lines) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            count_lines(&path, records, out);
        } else if let Ok(f) = File::open(&path) {
            let mut seen = vec![0u64; records.div_ceil(64) as usize];
            for line in BufReader::with_capacity(1 << 20, f)
                .split(b'\n')
                .map_while(Result::ok)
            {
                if !line.windows(9).any(|w| w == b"served in") {
                    continue;
                }
                match workload_index(&line).filter(|&i| i < records) {
                    Some(i) => {
                        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
                        if seen[word] & bit != 0 {
                            out.dups += 1;
                        } else {
                            seen[word] |= bit;
                            out.good += 1;
                        }
                    }
                    None => out.bad += 1,
                }
            }
        }
    }
}

/// The `i` of a line holding `request {i} served in {i % 1000} us`, if it
/// holds exactly that.
fn workload_index(line: &[u8]) -> Option<u64> {
    let at = line.windows(8).position(|w| w == b"request ")?;
    let rest = &line[at + 8..];
    let (i, rest) = number(rest)?;
    let rest = rest.strip_prefix(b" served in ")?;
    let (j, rest) = number(rest)?;
    (rest.starts_with(b" us") && j == i % 1000).then_some(i)
}

/// The decimal number at the start of `text`, and what follows it.
fn number(text: &[u8]) -> Option<(u64, &[u8])> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let value = text[..digits]
        .iter()
        .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
    Some((value, &text[digits..]))
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Waits until no thread of this process has a name starting with `prefix`
/// (for loggers whose shutdown does not join their worker).
fn wait_thread_gone(prefix: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let alive = std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
            });
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---------------------------------------------------------------------------
// One function per logger: set up, drive, flush. Each returns the latencies,
// the start instant, and the instant its flush completed.

type Outcome = (Vec<u32>, Instant, Instant);

fn floor_format(a: &Args) -> Outcome {
    let (lat, start) = drive(a.threads, a.records, |i| {
        black_box(std::fmt::format(format_args!(
            "request {} served in {} us",
            black_box(i),
            i % 1000
        )));
    });
    (lat, start, done())
}

fn floor_bufwriter(a: &Args) -> Outcome {
    let file = File::create(a.out.join("bufwriter.log")).expect("create");
    let w = Mutex::new(BufWriter::with_capacity(64 * 1024, file));
    thread_local! {
        static LINE: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(128));
    }
    let (lat, start) = drive(a.threads, a.records, |i| {
        LINE.with(|line| {
            let mut line = line.borrow_mut();
            line.clear();
            write_ts(&mut line);
            let _ = writeln!(
                line,
                " INFO {TARGET}: request {} served in {} us",
                i,
                i % 1000
            );
            let _ = w.lock().unwrap().write_all(&line);
        });
    });
    w.lock().unwrap().flush().expect("flush");
    (lat, start, done())
}

/// How the workload's call is written: `log::info!`, or logbus's own
/// `logbus::info!` (whose two integers are copied and formatted on the
/// worker). Each is a function of its own, never inlined, so that
/// `callgrind.sh` with `SCOPE=call` can count the whole call.
#[derive(Clone, Copy, PartialEq)]
enum Call {
    Log,
    Macro,
    /// `log::info!` with two key-values (a text and a number) after the
    /// workload's message (`logbus-kv`).
    KeyValues,
}

#[inline(never)]
fn call_log(i: u64) {
    log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
}

#[inline(never)]
fn call_kv(i: u64) {
    log::info!(target: TARGET, user = "alice", took_us = i % 1000; "request {} served in {} us", i, i % 1000);
}

#[inline(never)]
fn call_macro(i: u64) {
    logbus::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
}

/// logbus with its file appender; `block`: the `Block` policy; `journal`:
/// with the default journal on (every record also kept there); `redact`:
/// with `Redaction::common()` and a message rewrite that looks for a
/// secret (and finds none); `files`: that many file appenders, each taking
/// every record (what an extra matching appender costs the caller); `call`:
/// which macro logs.
fn logbus(a: &Args, block: bool, journal: bool, redact: bool, files: usize, call: Call) -> Outcome {
    use logbus::appenders::{FileAppender, Layout};
    use logbus::{Journal, OverflowPolicy, Redaction, Subscription};
    let mut builder = logbus::builder();
    for n in 0..files {
        let name = if n == 0 {
            "logbus.log".to_owned()
        } else {
            format!("logbus-{n}.log")
        };
        let file = FileAppender::builder(a.out.join(name))
            .layout(Layout::parse("{ts} {level} {target}: {msg}{kv}").expect("layout"))
            .build()
            .expect("file appender");
        let mut sub = Subscription::builder(format!("file{n}"), file);
        if block {
            sub = sub.overflow(OverflowPolicy::Block);
        }
        builder = builder.appender(sub);
    }
    if journal {
        builder = builder.journal(Journal::new());
    }
    if redact {
        builder = builder.redact(
            Redaction::common()
                .message(|m| m.contains("hunter2").then(|| m.replace("hunter2", "***"))),
        );
    }
    let guard = builder.install().expect("install");
    let (lat, start) = match call {
        Call::Log => drive(a.threads, a.records, call_log),
        Call::Macro => drive(a.threads, a.records, call_macro),
        Call::KeyValues => drive(a.threads, a.records, call_kv),
    };
    let report = guard.shutdown();
    let end = done();
    eprintln!(
        "logbus: written {} dropped {} left {}",
        report.written(),
        report
            .subscriptions
            .values()
            .map(|s| s.dropped)
            .sum::<u64>(),
        report.left()
    );
    (lat, start, end)
}

struct TracingTimer;

impl tracing_subscriber::fmt::time::FormatTime for TracingTimer {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "{Ts}")
    }
}

fn tracing(a: &Args, lossy: bool) -> Outcome {
    let appender = tracing_appender::rolling::never(&a.out, "tracing.log");
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(lossy)
        .thread_name("tracing-worker")
        .finish(appender);
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_timer(TracingTimer)
        .with_target(true)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("set subscriber");
    let (lat, start) = drive(a.threads, a.records, |i| {
        tracing::info!(target: "app::http", "request {} served in {} us", i, i % 1000);
    });
    drop(guard);
    // The guard waits at most one second for the worker; wait for it to exit.
    wait_thread_gone("tracing-worker", Duration::from_secs(60));
    (lat, start, done())
}

/// slog's drain behind slog-async: one line per record into a `BufWriter`.
struct SlogFile(RefCell<BufWriter<File>>);

impl slog::Drain for SlogFile {
    type Ok = ();
    type Err = slog::Never;

    fn log(
        &self,
        record: &slog::Record<'_>,
        _values: &slog::OwnedKVList,
    ) -> Result<(), slog::Never> {
        let mut line = Vec::with_capacity(96);
        write_ts(&mut line);
        let _ = writeln!(
            line,
            " {} {TARGET}: {}",
            record.level().as_str(),
            record.msg()
        );
        let _ = self.0.borrow_mut().write_all(&line);
        Ok(())
    }
}

fn slog_async(a: &Args) -> Outcome {
    use slog::Drain as _;
    let file = File::create(a.out.join("slog.log")).expect("create");
    let drain = SlogFile(RefCell::new(BufWriter::with_capacity(64 * 1024, file)));
    let (drain, guard) = slog_async::Async::new(drain.fuse()).build_with_guard();
    let logger = slog::Logger::root(drain.fuse(), slog::o!());
    let (lat, start) = drive(a.threads, a.records, |i| {
        slog::info!(logger, "request {} served in {} us", i, i % 1000);
    });
    drop(logger);
    drop(guard); // joins the worker, which drops (flushes) the BufWriter
    (lat, start, done())
}

fn spdlog_async(a: &Args) -> Outcome {
    use spdlog::formatter::{pattern, PatternFormatter};
    use spdlog::sink::{AsyncPoolSink, FileSink, Sink};
    let file_sink = Arc::new(
        FileSink::builder()
            .path(a.out.join("spdlog.log"))
            .truncate(true)
            .formatter(Box::new(PatternFormatter::new(pattern!(
                "{date}T{time}.{microsecond}Z {level} {logger}: {payload}{eol}"
            ))))
            .build()
            .expect("file sink"),
    );
    // Our own pool, so that dropping it joins the worker (the default pool is
    // a global that lives until exit).
    let pool = Arc::new(spdlog::ThreadPool::new().expect("pool"));
    let async_sink = Arc::new(
        AsyncPoolSink::builder()
            .sink(file_sink.clone())
            .thread_pool(pool.clone())
            .build()
            .expect("async sink"),
    );
    let logger = Arc::new(
        spdlog::Logger::builder()
            .name(TARGET)
            .sink(async_sink.clone())
            .build()
            .expect("logger"),
    );
    let (lat, start) = drive(a.threads, a.records, |i| {
        spdlog::info!(logger: logger, "request {} served in {} us", i, i % 1000);
    });
    drop(logger);
    drop(async_sink);
    drop(pool); // the last reference: joins the worker after its queue
    file_sink.flush().expect("flush");
    (lat, start, done())
}

/// ftlog writes `{time} {delay}ms {msg}`; `msg` is ours.
struct FtFormat;

struct FtMsg(String);

impl std::fmt::Display for FtMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl ftlog::FtLogFormat for FtFormat {
    fn msg(&self, record: &log::Record<'_>) -> Box<dyn Send + Sync + std::fmt::Display> {
        Box::new(FtMsg(format!(
            "{} {}: {}",
            record.level(),
            record.target(),
            record.args()
        )))
    }
}

fn ftlog(a: &Args) -> Outcome {
    let time_format = time::format_description::parse_owned::<2>(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z",
    )
    .expect("time format");
    let guard = ftlog::builder()
        .format(FtFormat)
        .time_format(time_format)
        .utc()
        .root(ftlog::appender::FileAppender::new(a.out.join("ftlog.log")))
        .try_init()
        .expect("ftlog");
    let (lat, start) = drive(a.threads, a.records, |i| {
        log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
    });
    drop(guard); // sends Flush and waits for the worker's answer
    (lat, start, done())
}

struct FastLogFormat;

impl fast_log::appender::RecordFormat for FastLogFormat {
    fn do_format(&self, arg: &mut fast_log::appender::FastLogRecord) {
        if let fast_log::appender::Command::CommandRecord = arg.command {
            let mut line = Vec::with_capacity(96);
            write_ts_at(arg.now, &mut line);
            let _ = writeln!(line, " {} {}: {}", arg.level, arg.target, arg.args);
            arg.formated = String::from_utf8(line).unwrap_or_default();
        }
    }
}

fn fast_log(a: &Args) -> Outcome {
    let path = a.out.join("fast_log.log");
    fast_log::init(
        fast_log::Config::new()
            .file(path.to_str().expect("utf-8 path"))
            .format(FastLogFormat)
            .level(log::LevelFilter::Info),
    )
    .expect("fast_log");
    let (lat, start) = drive(a.threads, a.records, |i| {
        log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
    });
    fast_log::flush().expect("flush").wait();
    (lat, start, done())
}

fn flexi_format(
    w: &mut dyn std::io::Write,
    _now: &mut flexi_logger::DeferredNow,
    record: &log::Record<'_>,
) -> std::io::Result<()> {
    LINE_BUF.with_borrow_mut(|line| {
        line.clear();
        write_ts(line);
        let _ = write!(
            line,
            " {} {}: {}",
            record.level(),
            record.target(),
            record.args()
        );
        w.write_all(line)
    })
}

fn flexi(a: &Args) -> Outcome {
    use flexi_logger::{FileSpec, Logger, WriteMode};
    let handle = Logger::try_with_str("info")
        .expect("spec")
        .log_to_file(
            FileSpec::default()
                .directory(&a.out)
                .basename("flexi")
                .suppress_timestamp()
                .suffix("log"),
        )
        .write_mode(WriteMode::Async)
        .format(flexi_format)
        .start()
        .expect("flexi_logger");
    let (lat, start) = drive(a.threads, a.records, |i| {
        log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
    });
    handle.flush();
    handle.shutdown(); // joins the async writer thread
    (lat, start, done())
}

fn log4rs(a: &Args) -> Outcome {
    use log4rs::append::file::FileAppender;
    use log4rs::config::{Appender, Config, Root};
    use log4rs::encode::pattern::PatternEncoder;
    let file = FileAppender::builder()
        .append(false)
        .encoder(Box::new(PatternEncoder::new(
            "{d(%Y-%m-%dT%H:%M:%S%.6fZ)(utc)} {l} {t}: {m}{n}",
        )))
        .build(a.out.join("log4rs.log"))
        .expect("log4rs file");
    let config = Config::builder()
        .appender(Appender::builder().build("file", Box::new(file)))
        .build(
            Root::builder()
                .appender("file")
                .build(log::LevelFilter::Info),
        )
        .expect("config");
    let _handle = log4rs::init_config(config).expect("log4rs");
    let (lat, start) = drive(a.threads, a.records, |i| {
        log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
    });
    log::logger().flush();
    (lat, start, done())
}

fn fern(a: &Args) -> Outcome {
    fern::Dispatch::new()
        .format(|out, message, record| {
            out.finish(format_args!(
                "{} {} {}: {}",
                Ts,
                record.level(),
                record.target(),
                message
            ));
        })
        .level(log::LevelFilter::Info)
        .chain(fern::log_file(a.out.join("fern.log")).expect("fern file"))
        .apply()
        .expect("fern");
    let (lat, start) = drive(a.threads, a.records, |i| {
        log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
    });
    log::logger().flush();
    (lat, start, done())
}

fn main() {
    let args = parse_args();
    std::fs::create_dir_all(&args.out).expect("create --out");
    let timer_ns = timer_overhead();
    // `callgrind.sh` skips the probe: under valgrind its echo thread shares
    // a thread number (and so a profile) with the logger's worker.
    let xcore_ns = if std::env::var_os("PEERS_NO_PROBE").is_some() {
        0.0
    } else {
        crosscore_ns()
    };
    let (mut lat, start, end) = match args.logger.as_str() {
        "floor-format" => floor_format(&args),
        "floor-bufwriter" => floor_bufwriter(&args),
        "logbus" => logbus(&args, false, false, false, 1, Call::Log),
        "logbus-block" => logbus(&args, true, false, false, 1, Call::Log),
        // As logbus-block, through `logbus::info!`.
        "logbus-macro" => logbus(&args, true, false, false, 1, Call::Macro),
        "logbus-journal" => logbus(&args, false, true, false, 1, Call::Log),
        // As logbus-block, with two key-values (` user=alice took_us=N`
        // after the message): a record with key-values is built on the
        // caller's thread and shared, not copied into a lane's slot.
        "logbus-kv" => logbus(&args, true, false, false, 1, Call::KeyValues),
        "logbus-redact" => logbus(&args, false, false, true, 1, Call::Log),
        "logbus-3" => logbus(&args, false, false, false, 3, Call::Log),
        // As logbus-3 with `Block`: no eviction, so its instructions
        // (`callgrind.sh`, which runs one thread at a time) are the pushes'.
        "logbus-3-block" => logbus(&args, true, false, false, 3, Call::Log),
        "tracing-lossy" => tracing(&args, true),
        "tracing-blocking" => tracing(&args, false),
        "slog-async" => slog_async(&args),
        "spdlog-async" => spdlog_async(&args),
        "ftlog" => ftlog(&args),
        "fast_log" => fast_log(&args),
        "flexi_logger-async" => flexi(&args),
        "log4rs" => log4rs(&args),
        "fern" => fern(&args),
        // The caller's ladder (`ladder.rs`): no peer, no logbus.
        name if name.starts_with("ladder-") => ladder::run(&args, name),
        _ => unreachable!(),
    };
    let rss_kb = vm_hwm_kb();
    let secs = (end - start).as_secs_f64();
    let mean = lat.iter().map(|&l| u64::from(l)).sum::<u64>() as f64 / lat.len().max(1) as f64;
    let allocs = CALLER_ALLOCS.load(Ordering::Relaxed) as f64 / args.records as f64;
    let caller_cpu = CALLER_CPU.load(Ordering::Relaxed);
    let process_cpu = END_CPU.load(Ordering::Relaxed) - START_CPU.load(Ordering::Relaxed);
    let per_record = |ns: u64| ns as f64 / args.records as f64;
    lat.sort_unstable();
    let mut counted = Lines::default();
    count_lines(&args.out, args.records, &mut counted);
    let lines = counted.good;
    let ratio = if args.logger == "floor-format" {
        f64::NAN
    } else {
        lines as f64 / args.records as f64
    };
    println!(
        "RESULT logger={} threads={} records={} timer_ns={} p50={} p99={} p999={} max={} secs={:.4} rate={:.0} lines={} ratio={:.4} rss_kb={} mean={:.1} allocs={:.4} cpu_caller={:.1} cpu_bg={:.1} xcore_ns={:.0} bad_lines={} dup_lines={} p50f={:.1}",
        args.logger,
        args.threads,
        args.records,
        timer_ns,
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999),
        lat.last().copied().unwrap_or(0),
        secs,
        args.records as f64 / secs,
        lines,
        ratio,
        rss_kb,
        mean,
        allocs,
        per_record(caller_cpu),
        per_record(process_cpu.saturating_sub(caller_cpu)),
        xcore_ns,
        counted.bad,
        counted.dups,
        median_fine(&lat),
    );
}

#[cfg(test)]
mod tests {
    use super::median_fine;

    #[test]
    fn the_fine_median_reads_within_the_clocks_step() {
        // Steps of 10 ns, with the clock's 1 ns rounding: 50 and 51 are
        // one step's. Rank 3.5 of 7 reaches a sixth into the step of 60
        // (55 to 65).
        let fine = median_fine(&[50, 50, 51, 60, 60, 61, 70]);
        assert!((fine - (55.0 + 10.0 / 6.0)).abs() < 1e-9, "{fine}");
        // Half the calls at 100 and half at 110 read the steps' edge.
        let fine = median_fine(&[100, 100, 110, 110]);
        assert!((fine - 105.0).abs() < 1e-9, "{fine}");
        assert!(median_fine(&[]).is_nan());
        // One step: its width is not known, and the reading stands.
        assert_eq!(median_fine(&[80]), 80.0);
    }
}
