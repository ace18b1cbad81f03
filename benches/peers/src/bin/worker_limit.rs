//! Stand-alone experiment for issue 16's 1-thread targets (item 6, "the
//! worker at least as fast as a caller-side `BufWriter`"): what a worker's
//! render and write cost per record once the record is in its hands, in
//! four shapes. The slots are already queued and in the worker's cache (one
//! batch of 512, read over and over), so nothing here is the drain, the
//! other core's cache lines or settling: what is left of logbus' worker
//! time a record beyond these shapes is theirs.
//!
//! - `bytes`: the slot's parts (seq, counter reading, level, a `'static`
//!   target, the message's bytes) rendered straight into the write buffer:
//!   the time's text cached per second and its six digits written, then
//!   ` INFO `, the target, `: ` and the message;
//! - `checked`: `bytes`, and the target and message checked for bytes to
//!   escape (none are found), as every logbus layout does;
//! - `owned`: `checked`, but from an owned record the parts are decoded
//!   into first (its `String` message reused, as logbus' spares are);
//! - `logbus`: the parts decoded into a `logbus_appenders::Record` with
//!   logbus' own `set_parts`, rendered by its `Layout` with the layout
//!   `benches/peers` gives logbus (`{ts} {level} {target}: {msg}{kv}`).
//!
//! Every shape converts each record's counter reading to the wall clock as
//! logbus' worker does (a counter read per record, to notice one that went
//! back, then a multiply from an anchor), and writes the buffer to a file
//! each 32 KiB. `CLOCK=batch` reads the counter once per batch instead;
//! `NOWRITE=1` discards the buffer instead of writing it.
//!
//!   worker_limit SHAPE RECORDS DIR      (SHAPE: bytes, checked, owned, logbus)
//!   SLOT=128 worker_limit live RECORDS DIR   (slots written on another core)
//!   benches/peers/worker.sh [ROUNDS]    (every shape and clock, alternating)
//!
//! prints the nanoseconds a record (the best of five passes). Every shape
//! writes lines of the same length and text, but for the date: `bytes`,
//! `checked` and `owned` write the day's number where `logbus` writes the
//! calendar date, computed once a second either way.

use std::fs::File;
use std::hint::black_box;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use logbus::appenders::__private_api::{new_record, set_parts, static_topic, Parts, Stamp};
use logbus::appenders::{Layout, Level, ThreadInfo, Topic};

const BATCH: usize = 512;
const TARGET: &str = "app::http";
const FLUSH_AT: usize = 32 * 1024;

/// A queued record as a lane's slot holds it (`src/queue/slot.rs`).
#[derive(Clone, Copy)]
struct Slot {
    seq: u64,
    ticks: u64,
    len: u8,
    text: [u8; 56],
}

/// The counter (`rdtsc`), and its conversion to the wall clock from one
/// anchor, as `src/clock` converts on the worker.
mod clock {
    use std::sync::OnceLock;
    use std::time::{Instant, SystemTime, UNIX_EPOCH};

    pub struct Anchor {
        ticks: u64,
        wall_nanos: i64,
        /// Nanoseconds per tick, times 2^32.
        rate: u64,
    }

    static ANCHOR: OnceLock<Anchor> = OnceLock::new();

    #[inline]
    pub fn read() -> u64 {
        // SAFETY: `rdtsc` has no preconditions on x86_64.
        #[cfg(target_arch = "x86_64")]
        return unsafe { core::arch::x86_64::_rdtsc() };
        #[cfg(not(target_arch = "x86_64"))]
        return Instant::now().elapsed().as_nanos() as u64;
    }

    /// The anchor, calibrated over 20 ms on first use: called before any
    /// timing starts, so that no figure includes it.
    pub fn anchor() -> &'static Anchor {
        ANCHOR.get_or_init(|| {
            let (t0, i0) = (read(), Instant::now());
            while i0.elapsed().as_millis() < 20 {}
            let (t1, i1) = (read(), Instant::now());
            let nanos = (i1 - i0).as_nanos() as u64;
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            Anchor {
                ticks: t1,
                wall_nanos: wall.as_nanos() as i64,
                rate: ((u128::from(nanos) << 32) / u128::from((t1 - t0).max(1))) as u64,
            }
        })
    }

    /// `ticks` as nanoseconds since the epoch; `checked`: read the counter
    /// too, as logbus does for a tick older than its anchor.
    #[inline]
    pub fn to_unix_nanos(ticks: u64, checked: bool) -> i64 {
        let anchor = anchor();
        if checked && read() < anchor.ticks {
            return 0; // the counter went back: not here
        }
        let delta = i128::from(ticks) - i128::from(anchor.ticks);
        anchor.wall_nanos + ((delta * i128::from(anchor.rate)) >> 32) as i64
    }

    /// For a `Stamp::Ticks`: per record, checked.
    pub fn convert(ticks: u64) -> i64 {
        to_unix_nanos(ticks, true)
    }
}

/// The time's text for one second, `%Y-%m-%dT%H:%M:%S.`, cached.
struct Prefix {
    second: i64,
    text: Vec<u8>,
}

impl Prefix {
    fn render(&mut self, nanos: i64, out: &mut Vec<u8>) {
        let second = nanos.div_euclid(1_000_000_000);
        if second != self.second {
            self.second = second;
            let days = second.div_euclid(86_400);
            let s = second.rem_euclid(86_400);
            self.text.clear();
            // The date's digits do not matter here (the day number): the
            // shape of the text, its length and a per-second refresh do.
            let _ = write!(
                self.text,
                "{days:010}T{:02}:{:02}:{:02}.",
                s / 3600,
                s / 60 % 60,
                s % 60
            );
        }
        out.extend_from_slice(&self.text);
        let micros = (nanos.rem_euclid(1_000_000_000) / 1000) as u32;
        let mut digits = [b'0'; 6];
        let mut v = micros;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&digits);
        out.push(b'Z');
    }
}

/// Whether `text` is printable ASCII, the test before a layout's escaping:
/// eight bytes a word (a byte under 0x20 borrows into its top bit, one of
/// 0x7f or more has it set, itself or plus one), the tail as the last
/// eight bytes again, or byte by byte when shorter.
#[inline]
fn plain(text: &[u8]) -> bool {
    const LOW: u64 = u64::from_ne_bytes([1; 8]);
    let bad = |x: u64| (x | x.wrapping_add(LOW) | (x.wrapping_sub(0x20 * LOW) & !x)) & (LOW << 7);
    let word = |at: usize| u64::from_le_bytes(text[at..at + 8].try_into().unwrap_or([b' '; 8]));
    if text.len() < 8 {
        return text.iter().all(|&b| (0x20..0x7f).contains(&b));
    }
    (0..text.len() / 8).fold(bad(word(text.len() - 8)), |acc, i| acc | bad(word(i * 8))) == 0
}

/// An owned record, decoded from a slot (`owned`).
#[derive(Default)]
struct Owned {
    seq: u64,
    nanos: i64,
    target: &'static str,
    message: String,
}

struct Worker {
    out: Vec<u8>,
    file: File,
    prefix: Prefix,
    checked_clock: bool,
    /// `NOWRITE=1`: the buffer is discarded instead of written.
    write: bool,
}

impl Worker {
    fn line(&mut self, nanos: i64, target: &str, message: &[u8], check: bool) {
        if check && !(plain(target.as_bytes()) && plain(message)) {
            panic!("nothing to escape in this workload");
        }
        self.prefix.render(nanos, &mut self.out);
        self.out.extend_from_slice(b" INFO ");
        self.out.extend_from_slice(target.as_bytes());
        self.out.extend_from_slice(b": ");
        self.out.extend_from_slice(message);
        self.out.push(b'\n');
    }

    fn flush_if_full(&mut self) {
        if self.out.len() >= FLUSH_AT {
            if self.write {
                self.file.write_all(&self.out).expect("write");
            }
            self.out.clear();
        }
    }
}

/// Slots in the live ring: the default queue capacity.
const LIVE_SLOTS: usize = 8192;

/// A single-producer ring of fixed slots of `words` words each: a header
/// word of `seq`, one of the counter reading, one of the length, then the
/// message; the slot's words are atomics (plain moves), published by the
/// `Release` store of `tail`, as a lane's are.
struct Ring {
    words: usize,
    data: Vec<AtomicU64>,
    head: AtomicUsize,
    tail: AtomicUsize,
}

/// `live`: a producer thread formats each record into a ring of `slot`-byte
/// slots (64, 128 as logbus' wide slots, 256) and this thread takes them and
/// renders them as `checked` does. What it adds to the resident batch is
/// what a worker pays for slots written on the other core. Prints the
/// worker's busy time a record, from its first record to its last, less
/// the time it waited for the producer (printed apart).
fn live(records: usize, slot: usize, worker: &mut Worker) {
    let words = slot / 8;
    assert!(
        words >= 4,
        "a slot holds its three header words and some text"
    );
    let ring = Arc::new(Ring {
        words,
        data: (0..words * LIVE_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        head: AtomicUsize::new(0),
        tail: AtomicUsize::new(0),
    });
    let producer = {
        let ring = Arc::clone(&ring);
        std::thread::spawn(move || {
            let mut text = Vec::with_capacity(64);
            for i in 0..records {
                while i - ring.head.load(Ordering::Acquire) >= LIVE_SLOTS {
                    std::hint::spin_loop();
                }
                text.clear();
                let _ = write!(text, "request {i} served in {} us", i % 1000);
                let at = (i % LIVE_SLOTS) * ring.words;
                let slot = &ring.data[at..at + ring.words];
                slot[0].store(i as u64, Ordering::Relaxed);
                slot[1].store(clock::read(), Ordering::Relaxed);
                let len = text.len().min((ring.words - 3) * 8);
                slot[2].store(len as u64, Ordering::Relaxed);
                for (word, chunk) in slot[3..].iter().zip(text[..len].chunks(8)) {
                    let mut bytes = [0u8; 8];
                    bytes[..chunk.len()].copy_from_slice(chunk);
                    word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
                }
                ring.tail.store(i + 1, Ordering::Release);
            }
        })
    };
    let mut head = 0;
    let mut start = None;
    let mut idle = std::time::Duration::ZERO;
    let mut text = [0u8; 256];
    while head < records {
        let mut tail = ring.tail.load(Ordering::Acquire);
        if tail == head {
            // Waiting for the producer: timed apart, so that the figure is
            // the worker's own time a record, not the producer's.
            let waited = Instant::now();
            while tail == head {
                std::hint::spin_loop();
                tail = ring.tail.load(Ordering::Acquire);
            }
            if start.is_some() {
                idle += waited.elapsed();
            }
        }
        start.get_or_insert_with(Instant::now);
        while head < tail {
            let at = (head % LIVE_SLOTS) * ring.words;
            let slot = &ring.data[at..at + ring.words];
            let ticks = slot[1].load(Ordering::Relaxed);
            let len = slot[2].load(Ordering::Relaxed) as usize;
            for (chunk, word) in text
                .chunks_exact_mut(8)
                .zip(&slot[3..])
                .take(len.div_ceil(8))
            {
                chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
            }
            let nanos = clock::to_unix_nanos(ticks, worker.checked_clock);
            worker.line(nanos, TARGET, &text[..len], true);
            worker.flush_if_full();
            head += 1;
            if head % 32 == 0 || head == tail {
                ring.head.store(head, Ordering::Release);
            }
        }
    }
    if worker.write {
        worker.file.write_all(&worker.out).expect("write");
    }
    let secs = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    producer.join().expect("producer");
    println!(
        "RESULT shape=live slot={slot} write={} records={records} ns_per_record={:.1} idle_ns_per_record={:.1}",
        if worker.write { "yes" } else { "no" },
        (secs - idle.as_secs_f64()) * 1e9 / records as f64,
        idle.as_secs_f64() * 1e9 / records as f64
    );
}

fn slots() -> Vec<Slot> {
    (0..BATCH as u64)
        .map(|i| {
            let message = format!("request {i} served in {} us", i % 1000);
            let mut text = [0u8; 56];
            text[..message.len()].copy_from_slice(message.as_bytes());
            Slot {
                seq: i,
                ticks: clock::read(),
                len: message.len() as u8,
                text,
            }
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, shape, records, dir] = &args[..] else {
        eprintln!("usage: worker_limit SHAPE RECORDS DIR (SHAPE: bytes, checked, owned, logbus)");
        std::process::exit(2);
    };
    let records: usize = records.parse().expect("RECORDS is a number");
    let batch_clock = std::env::var("CLOCK").is_ok_and(|c| c == "batch");
    clock::anchor();
    let slots = slots();
    let topic = Topic::leak(Level::Info, TARGET);
    let static_topic = static_topic(&topic).expect("a leaked topic is static");
    let mut layout = Layout::parse("{ts} {level} {target}: {msg}{kv}").expect("layout");
    let mut record = new_record(topic.clone(), 0, Stamp::Wall(SystemTime::now()));
    let mut owned = Owned::default();
    let mut worker = Worker {
        out: Vec::with_capacity(FLUSH_AT + 4096),
        file: File::create(std::path::Path::new(dir).join(format!("{shape}.log"))).expect("create"),
        prefix: Prefix {
            second: i64::MIN,
            text: Vec::new(),
        },
        checked_clock: !batch_clock,
        write: std::env::var_os("NOWRITE").is_none_or(|v| v.is_empty()),
    };
    if shape == "live" {
        let slot = std::env::var("SLOT")
            .map_or(Ok(128), |s| s.parse())
            .expect("SLOT is a number");
        live(records, slot, &mut worker);
        return;
    }
    let mut best = f64::MAX;
    for _pass in 0..5 {
        let start = Instant::now();
        let mut done = 0;
        while done < records {
            if batch_clock {
                black_box(clock::read());
            }
            for slot in &slots {
                let message = &slot.text[..usize::from(slot.len)];
                match shape.as_str() {
                    "bytes" | "checked" => {
                        let nanos = clock::to_unix_nanos(slot.ticks, worker.checked_clock);
                        worker.line(nanos, TARGET, message, shape == "checked");
                    }
                    "owned" => {
                        owned.seq = slot.seq;
                        owned.nanos = clock::to_unix_nanos(slot.ticks, worker.checked_clock);
                        owned.target = TARGET;
                        owned.message.clear();
                        // The slot's bytes are a `str`'s (`slots`).
                        owned
                            .message
                            .push_str(std::str::from_utf8(message).unwrap_or(""));
                        black_box(owned.seq);
                        let Owned { nanos, target, .. } = owned;
                        let text = std::mem::take(&mut owned.message);
                        worker.line(nanos, target, text.as_bytes(), true);
                        owned.message = text;
                    }
                    "logbus" => {
                        let text = std::str::from_utf8(message).unwrap_or("");
                        let parts = Parts {
                            seq: slot.seq,
                            topic: static_topic,
                            stamp: if batch_clock {
                                Stamp::Ticks(slot.ticks, |t| clock::to_unix_nanos(t, false))
                            } else {
                                Stamp::Ticks(slot.ticks, clock::convert)
                            },
                            module_path: Some("peers"),
                            file: Some("worker_limit.rs"),
                            line: Some(1),
                            thread: ThreadInfo { id: 1, name: None },
                            message: text,
                            literal: None,
                            deferred: None,
                            kv: Default::default(),
                        };
                        set_parts(&mut record, &parts);
                        layout.render(&record, &mut worker.out);
                        worker.out.push(b'\n');
                    }
                    other => {
                        eprintln!("unknown shape {other}");
                        std::process::exit(2);
                    }
                }
                worker.flush_if_full();
            }
            done += slots.len();
        }
        if worker.write {
            worker.file.write_all(&worker.out).expect("write");
        }
        worker.out.clear();
        let ns = start.elapsed().as_nanos() as f64 / done as f64;
        best = best.min(ns);
    }
    println!(
        "RESULT shape={shape} clock={} write={} records={records} ns_per_record={best:.1}",
        if batch_clock { "batch" } else { "record" },
        if worker.write { "yes" } else { "no" }
    );
}
