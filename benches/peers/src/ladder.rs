//! The caller's ladder (issue 16): what each thing logbus's direct path does
//! costs a log call, measured one at a time in this harness, without logbus.
//! Every rung does what the rung before it does, plus one thing
//! `src/broker/publish/` does on the caller's thread:
//!
//! | logger | adds |
//! |---|---|
//! | `ladder-ring` | the experiment: the message formatted straight into the calling thread's ring of 128-byte slots, after a 16-byte header (its length, level and line, and the counter's ticks), published with one `Release` store of the tail |
//! | `ladder-stack` | the message formatted into a bounded buffer on the stack first, then copied into the slot (logbus's `SlotText`) |
//! | `ladder-slot` | the slot as logbus's: 16 atomic words (the `seq` first, with `Release`; the topic, module, file, converter, ticks, lengths and flags; 7 words of text), each stored on its own |
//! | `ladder-seq` | the `seq` taken from one counter for the process (`fetch_add`) |
//! | `ladder-route` | the route: the thread's view (a thread-local), the broker's generation (an `Acquire` load), the last route's level and target compared, the lane kept in the view |
//! | `ladder-gate` | the gate: the lane's busy flag set, a `SeqCst` fence, the generation and the closed flag read again, the flag cleared (`Release`), the worker's sleeping flag read |
//! | `ladder-light` | as `ladder-gate`, with a compiler fence where the gate has its `SeqCst` fence (logbus's publisher since `9f40a36`: the heavy side of the pair is the closer's `membarrier`, `src/sync/barrier.rs`) |
//! | `ladder-log` | `ladder-light` (logbus's gate; `ladder-gate` before the twentieth session), reached through `log::info!` and a `log::Log` (the `log` crate's `Record`, and a call through `dyn Log`) |
//!
//! `logbus-block` is the next rung: logbus itself, the same call.
//!
//! The deferred ladder does the same for `logbus::info!`, whose caller
//! formats nothing (as C++ quill's does): the message travels as a pointer
//! to its call site's `static` template and its arguments' bits, and the
//! consumer formats it. Its rungs are the formatted ladder's, less the
//! stack (there is no text to stage) and the `log` crate:
//!
//! | logger | adds |
//! |---|---|
//! | `ladder-args` | the deferred experiment: the 16-byte header (flags, level and line, and the ticks), the template's address and the two arguments as words, written straight into the thread's ring of 128-byte slots (40 bytes, one cache line), published with one `Release` store of the tail |
//! | `ladder-args-slot` | the slot as logbus's (`ladder-slot`'s words, the arguments' count and kinds and their words in the text words, the template in the word logbus calls `message`), each word stored on its own |
//! | `ladder-args-seq` | the `seq` taken from one counter for the process (`fetch_add`) |
//! | `ladder-args-route` | the route, as `ladder-route` |
//! | `ladder-args-gate` | the gate with its `SeqCst` fence, as `ladder-gate` |
//! | `ladder-args-light` | the gate with a compiler fence, as `ladder-light`: logbus's shape today |
//!
//! `logbus-macro` is the next rung: logbus itself, through `logbus::info!`.
//!
//! Every rung is lossless (a caller that finds its ring full waits, and
//! counts the wait). One consumer thread takes every lane's records in turn
//! and writes `{ts} INFO app::http: {message}` lines to one file, 32 KiB a
//! `write`, so the harness's `lines` check holds for every rung.
//! `benches/peers/ladder.sh` runs the rounds and counts each rung's
//! instructions (`LADDER=deferred` for the deferred ladder).

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use super::{done, drive, write_ts, Args, Outcome, TARGET};

/// The rungs, in order; each does what the ones before it do (the
/// deferred ladder skips `STACK`).
const RING: u8 = 0;
const STACK: u8 = 1;
const SLOT: u8 = 2;
const SEQ: u8 = 3;
const ROUTE: u8 = 4;
const GATE: u8 = 5;
const LIGHT: u8 = 6;

/// How a call's message travels: formatted by the caller, or as its
/// template and arguments, formatted by the consumer (the deferred ladder).
const FORMATTED: u8 = 0;
const DEFERRED: u8 = 1;

/// Slots a lane holds (logbus's default capacity), 128 bytes each.
const SLOTS: u64 = 8192;
/// The bytes of a ring slot after its 16-byte header.
const TEXT: usize = 112;
/// The message words of a logbus-shaped slot (`ladder-slot` and on).
const TEXT_WORDS: usize = 7;
/// The workload's arguments, each a `u64` word in a deferred slot.
const ARGS: usize = 2;
/// A header's flag (bit 24, free in both headers): the slot holds a
/// template and its arguments, not the message's bytes.
const ARGS_FLAG: u64 = 1 << 24;
/// The consumer writes its buffer out once it holds this much.
const FLUSH_AT: usize = 32 * 1024;

/// Runs the rung `name` names.
pub(crate) fn run(a: &Args, name: &str) -> Outcome {
    let consumer = thread::Builder::new()
        .name("ladder-consumer".into())
        .spawn({
            let path = a.out.join("ladder.log");
            move || consume(&path)
        })
        .expect("spawn the consumer");
    let (lat, start) = match name {
        "ladder-ring" => drive(a.threads, a.records, call::<RING, FORMATTED>),
        "ladder-stack" => drive(a.threads, a.records, call::<STACK, FORMATTED>),
        "ladder-slot" => drive(a.threads, a.records, call::<SLOT, FORMATTED>),
        "ladder-seq" => drive(a.threads, a.records, call::<SEQ, FORMATTED>),
        "ladder-route" => drive(a.threads, a.records, call::<ROUTE, FORMATTED>),
        "ladder-gate" => drive(a.threads, a.records, call::<GATE, FORMATTED>),
        "ladder-light" => drive(a.threads, a.records, call::<LIGHT, FORMATTED>),
        "ladder-args" => drive(a.threads, a.records, call::<RING, DEFERRED>),
        "ladder-args-slot" => drive(a.threads, a.records, call::<SLOT, DEFERRED>),
        "ladder-args-seq" => drive(a.threads, a.records, call::<SEQ, DEFERRED>),
        "ladder-args-route" => drive(a.threads, a.records, call::<ROUTE, DEFERRED>),
        "ladder-args-gate" => drive(a.threads, a.records, call::<GATE, DEFERRED>),
        "ladder-args-light" => drive(a.threads, a.records, call::<LIGHT, DEFERRED>),
        "ladder-log" => {
            log::set_logger(&LadderLog).expect("install the ladder's logger");
            log::set_max_level(log::LevelFilter::Info);
            drive(a.threads, a.records, call_log)
        }
        _ => unreachable!("not a rung: {name}"),
    };
    // Release: every producer's last tail store (joined by `drive`)
    // happens before the consumer's Acquire load that sees it.
    FINISHED.store(true, Ordering::Release);
    let written = consumer.join().expect("the consumer panicked");
    eprintln!(
        "ladder: written {written} waits {} dropped {}",
        WAITS.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed)
    );
    (lat, start, done())
}

/// The workload's call at rung `R`, its message `M` (`FORMATTED` or
/// `DEFERRED`). Out of line and named, so that `ladder.sh` can count it
/// under callgrind (`ladder::call`, whichever the rung).
#[inline(never)]
fn call<const R: u8, const M: u8>(i: u64) {
    if M == DEFERRED {
        // What `logbus::info!` hands over for the same call: its
        // template's address and its arguments' bits.
        let message = Deferred {
            template: &REQUEST,
            args: [i, i % 1000],
        };
        publish::<R, _>(
            log::Level::Info,
            TARGET,
            message,
            Some(module_path!()),
            Some(file!()),
            line!(),
        );
    } else {
        publish::<R, _>(
            log::Level::Info,
            TARGET,
            format_args!("request {} served in {} us", i, i % 1000),
            Some(module_path!()),
            Some(file!()),
            line!(),
        );
    }
}

/// The workload's template: the message's literal pieces, one before each
/// argument and one after the last.
static REQUEST: Template = Template {
    pieces: ["request ", " served in ", " us"],
};

/// A call site's template (the deferred rungs): in a `static`, so that the
/// caller hands over its address and the consumer reads its pieces.
struct Template {
    pieces: [&'static str; ARGS + 1],
}

impl Template {
    /// The message: the pieces with the arguments, in decimal, between them.
    fn render(&self, args: [u64; ARGS], out: &mut Vec<u8>) {
        for (piece, arg) in self.pieces.iter().zip(args) {
            out.extend_from_slice(piece.as_bytes());
            write_u64(arg, out);
        }
        out.extend_from_slice(self.pieces[ARGS].as_bytes());
    }
}

/// Writes `v` in decimal: the consumer's integer formatting, by hand (what
/// `itoa` does, which this package does not depend on), so that the
/// deferred rungs' consumer keeps up without `fmt`'s machinery.
fn write_u64(mut v: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The workload's call through `log::info!` (`ladder-log`).
#[inline(never)]
fn call_log(i: u64) {
    log::info!(target: TARGET, "request {} served in {} us", i, i % 1000);
}

/// `ladder-gate`'s publish, as a `log` backend.
struct LadderLog;

impl log::Log for LadderLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        publish::<LIGHT, _>(
            record.level(),
            record.target(),
            *record.args(),
            record.module_path_static(),
            record.file_static(),
            record.line().unwrap_or(0),
        );
    }

    fn flush(&self) {}
}

// ---------------------------------------------------------------------------
// The caller's side.

/// The broker's state a publisher reads: its generation (bumped by a
/// reconfiguration; never here), whether it was shut down, and whether the
/// worker said it sleeps (never here: the consumer yields). Each on its own
/// line, as logbus keeps them.
static GENERATION: Line<AtomicU64> = Line(AtomicU64::new(1));
static CLOSED: Line<AtomicBool> = Line(AtomicBool::new(false));
static SLEEPING: Line<AtomicBool> = Line(AtomicBool::new(false));
/// The process's record counter (`ladder-seq` and on).
static SEQ_COUNTER: Line<AtomicU64> = Line(AtomicU64::new(0));
/// Records counted after shutdown (never, here), and calls that found
/// their ring full.
static DROPPED: AtomicU64 = AtomicU64::new(0);
static WAITS: AtomicU64 = AtomicU64::new(0);

/// The broker's id, which a view is checked against (logbus keeps one view
/// per broker a thread logged to).
const BROKER: u64 = 7;

thread_local! {
    /// The thread's lane, for the rungs without a route.
    static LANE: RefCell<Option<Producer>> = const { RefCell::new(None) };
    /// The thread's view of the broker, for the rungs with one.
    static VIEW: RefCell<View> = const { RefCell::new(View::EMPTY) };
}

/// One log call at rung `R`.
#[inline(always)]
fn publish<const R: u8, M: Message>(
    level: log::Level,
    target: &str,
    message: M,
    module: Option<&'static str>,
    file: Option<&'static str>,
    line: u32,
) {
    let call = Call {
        level,
        message,
        module,
        file,
        line,
    };
    if R < ROUTE {
        LANE.with_borrow_mut(|lane| {
            lane.get_or_insert_with(|| Producer::register(R))
                .push::<R, M>(call);
        });
        return;
    }
    VIEW.with_borrow_mut(|view| {
        if view.broker != BROKER {
            *view = View::new();
        }
        // Acquire: as logbus's view reads the generation.
        let generation = GENERATION.0.load(Ordering::Acquire);
        if generation != view.generation {
            view.refresh(generation);
        }
        let at = view.lookup(level, target);
        let lane = view.lanes[at].get_or_insert_with(|| Producer::register(R));
        if R >= GATE {
            lane.ring.busy.0.store(true, Ordering::Relaxed);
            if R == LIGHT {
                compiler_fence(Ordering::SeqCst);
            } else {
                fence(Ordering::SeqCst);
            }
            // Relaxed, after the fence (as logbus's gate re-check).
            if GENERATION.0.load(Ordering::Relaxed) != view.generation {
                unreachable!("the ladder never reconfigures");
            }
            if CLOSED.0.load(Ordering::Relaxed) {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                lane.ring.busy.0.store(false, Ordering::Release);
                return;
            }
        }
        lane.push::<R, M>(call);
        if R >= GATE {
            lane.ring.busy.0.store(false, Ordering::Release);
            if SLEEPING.0.load(Ordering::Relaxed) {
                unreachable!("the ladder's consumer never sleeps");
            }
        }
    });
}

/// What a call gives its publish.
struct Call<M> {
    level: log::Level,
    message: M,
    module: Option<&'static str>,
    file: Option<&'static str>,
    line: u32,
}

/// A deferred message (the deferred ladder): its call site's template and
/// its arguments' bits, as `logbus::info!` hands them over.
#[derive(Clone, Copy)]
struct Deferred {
    template: &'static Template,
    args: [u64; ARGS],
}

/// A call's message, as it goes into a slot: formatted by the caller
/// (`fmt::Arguments`, the formatted ladder) or `Deferred`. A type rather
/// than an enum's variant, so that each rung's code (and the thread-local's
/// `with` it runs in, out of line) holds one kind and no branch on it.
trait Message: Copy {
    /// Writes `call`'s record into `slot` the way rung `R` does, with
    /// `ticks`; `tail` is the lane's count (`seq` takes it below `SEQ`).
    fn put<const R: u8>(call: &Call<Self>, slot: &Slot, ticks: u64, tail: u64);
}

/// A thread's view: the generation it was made at, the last route it
/// used, the routes it looked up before, and its lanes (one per
/// subscription; one here).
struct View {
    broker: u64,
    generation: u64,
    last: Option<(log::Level, String, usize)>,
    routes: Vec<(log::Level, String, usize)>,
    lanes: Vec<Option<Producer>>,
}

impl View {
    const EMPTY: View = View {
        broker: 0,
        generation: 0,
        last: None,
        routes: Vec::new(),
        lanes: Vec::new(),
    };

    fn new() -> View {
        View {
            broker: BROKER,
            lanes: vec![None],
            ..View::EMPTY
        }
    }

    #[cold]
    fn refresh(&mut self, generation: u64) {
        self.generation = generation;
        self.last = None;
        self.routes.clear();
    }

    /// The lane index of the route of (`level`, `target`): the last
    /// route's if it is that one (its key and text compared), else looked
    /// up and kept.
    #[inline]
    fn lookup(&mut self, level: log::Level, target: &str) -> usize {
        if let Some((l, t, at)) = &self.last {
            if *l == level && t == target {
                return *at;
            }
        }
        self.lookup_slowly(level, target)
    }

    #[cold]
    fn lookup_slowly(&mut self, level: log::Level, target: &str) -> usize {
        let found = self
            .routes
            .iter()
            .find(|(l, t, _)| *l == level && t == target)
            .cloned();
        let route = found.unwrap_or_else(|| {
            let route = (level, target.to_owned(), 0);
            self.routes.push(route.clone());
            route
        });
        let at = route.2;
        self.last = Some(route);
        at
    }
}

/// A padded value: the lines of the ring that the two sides write.
#[repr(align(128))]
struct Line<T>(T);

/// One slot: 16 words. The rings' rungs write a header and bytes into it;
/// the slot rungs store each word atomically, as logbus's `Slot` does.
#[repr(C, align(128))]
struct Slot([AtomicU64; 16]);

/// A lane: one thread's ring of slots, read by the consumer.
struct Ring {
    slots: Box<[Slot]>,
    tail: Line<AtomicU64>,
    head: Line<AtomicU64>,
    busy: Line<AtomicBool>,
    /// Which rung wrote it, so the consumer reads each slot the way it was
    /// written.
    rung: u8,
}

/// The lanes made so far, and how many.
static LANES: Mutex<Vec<Arc<Ring>>> = Mutex::new(Vec::new());
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

/// The caller's end of its lane.
struct Producer {
    ring: Arc<Ring>,
    tail: u64,
    head_seen: u64,
}

impl Producer {
    /// A lane for this thread, written at rung `rung`, registered with the
    /// consumer.
    #[cold]
    fn register(rung: u8) -> Producer {
        let ring = Arc::new(Ring {
            slots: (0..SLOTS)
                .map(|_| Slot(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            tail: Line(AtomicU64::new(0)),
            head: Line(AtomicU64::new(0)),
            busy: Line(AtomicBool::new(false)),
            rung,
        });
        let mut lanes = LANES.lock().expect("lanes");
        lanes.push(Arc::clone(&ring));
        REGISTERED.store(lanes.len(), Ordering::Release);
        Producer {
            ring,
            tail: 0,
            head_seen: 0,
        }
    }

    /// Writes `call` into the next slot, the way rung `R` does, and
    /// publishes it.
    #[inline(always)]
    fn push<const R: u8, M: Message>(&mut self, call: Call<M>) {
        if self.tail - self.head_seen >= SLOTS {
            self.wait_for_room();
        }
        let slot = &self.ring.slots[(self.tail % SLOTS) as usize];
        M::put::<R>(&call, slot, ticks(), self.tail);
        self.tail += 1;
        // Release: the slot's words, written above, happen before the
        // consumer's Acquire load of the tail that sees this record.
        self.ring.tail.0.store(self.tail, Ordering::Release);
    }

    /// Waits (spinning, then yielding) until the consumer has freed a slot.
    #[cold]
    #[inline(never)]
    fn wait_for_room(&mut self) {
        WAITS.fetch_add(1, Ordering::Relaxed);
        let mut spins = 0u32;
        loop {
            self.head_seen = self.ring.head.0.load(Ordering::Acquire);
            if self.tail - self.head_seen < SLOTS {
                return;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
    }
}

impl Message for fmt::Arguments<'_> {
    #[inline(always)]
    fn put<const R: u8>(call: &Call<Self>, slot: &Slot, ticks: u64, tail: u64) {
        let base = slot.0.as_ptr().cast::<u8>().cast_mut();
        if R == RING {
            // The message straight into the slot's bytes.
            // SAFETY: the slot is the producer's until its tail store (the
            // consumer read it and stored `head` past it, which we loaded
            // with Acquire); it is 128 bytes, and the writer stays within
            // bytes 16..128.
            let mut text = unsafe { RawText::new(base.add(16)) };
            let _ = text.write_fmt(call.message);
            let word = text.len as u64 | (call.level as u64) << 16 | u64::from(call.line) << 32;
            // SAFETY: as above; both words are the slot's first 16 bytes.
            unsafe {
                base.cast::<u64>().write(word);
                base.cast::<u64>().add(1).write(ticks);
            }
            return;
        }
        let mut text = StackText::new();
        let _ = text.write_fmt(call.message);
        if R == STACK {
            let word = text.len as u64 | (call.level as u64) << 16 | u64::from(call.line) << 32;
            // SAFETY: as for `RING`; `text.len` is at most `TEXT`.
            unsafe {
                base.cast::<u64>().write(word);
                base.cast::<u64>().add(1).write(ticks);
                std::ptr::copy_nonoverlapping(
                    text.buf.as_ptr().cast::<u8>(),
                    base.add(16),
                    text.len,
                );
            }
            return;
        }
        let message = text.text();
        let seq = next_seq::<R>(tail);
        store_header(slot, seq, ticks, call, (message.len() as u64) << 8);
        store_text(slot, message);
    }
}

impl Message for Deferred {
    #[inline(always)]
    fn put<const R: u8>(call: &Call<Self>, slot: &Slot, ticks: u64, tail: u64) {
        let Deferred { template, args } = call.message;
        if R == RING {
            // The header as `ladder-ring`'s (the flag where the length
            // was), then the template's address and the arguments: 40
            // bytes, in the slot's first cache line.
            let base = slot.0.as_ptr().cast::<u8>().cast_mut();
            let word = ARGS_FLAG | (call.level as u64) << 16 | u64::from(call.line) << 32;
            // SAFETY: as for the formatted `RING`; the writes are bytes
            // 0..40, each at an 8-byte boundary of the 128-byte aligned
            // slot. The template's address is written as a pointer, so
            // that the consumer reads it back with its provenance.
            unsafe {
                base.cast::<u64>().write(word);
                base.cast::<u64>().add(1).write(ticks);
                base.add(16).cast::<*const Template>().write(template);
                base.add(24).cast::<[u64; ARGS]>().write(args);
            }
            return;
        }
        let seq = next_seq::<R>(tail);
        store_header(slot, seq, ticks, call, ARGS_FLAG);
        store_args(slot, template, args);
    }
}

/// A record's `seq` at rung `R`: the lane's count `tail`, or from `SEQ`
/// on, one counter's for the process, as logbus's.
#[inline(always)]
fn next_seq<const R: u8>(tail: u64) -> u64 {
    if R >= SEQ {
        // Relaxed: the number only orders records; the slot's words are
        // published by the tail's Release store.
        SEQ_COUNTER.0.fetch_add(1, Ordering::Relaxed)
    } else {
        tail
    }
}

/// logbus's slot words (`src/queue/slot.rs`), the header's: the `seq`
/// first with `Release`, then the rest, each `Relaxed`. `message` is what
/// the flags word says of the message: its length (shifted to bits 8-15)
/// or `ARGS_FLAG`. The text words follow (`store_text`, `store_args`).
#[inline(always)]
fn store_header<M>(slot: &Slot, seq: u64, ticks: u64, call: &Call<M>, message: u64) {
    let w = &slot.0;
    let text = |t: Option<&'static str>| t.map_or(0, |t| t.as_ptr() as u64);
    let len = |t: Option<&'static str>| t.map_or(0, str::len) as u64;
    // Release: as logbus's slot stores its `seq` (for its reader's reread
    // of `head`; the consumer here reads after the tail's Release store).
    w[0].store(seq, Ordering::Release);
    w[1].store(TARGET.as_ptr() as u64, Ordering::Relaxed);
    w[2].store(text(call.module), Ordering::Relaxed);
    w[3].store(text(call.file), Ordering::Relaxed);
    // The converter: a function's address, as logbus's slot keeps one.
    w[4].store(
        self::ticks as fn() -> u64 as usize as u64,
        Ordering::Relaxed,
    );
    w[5].store(ticks, Ordering::Relaxed);
    w[6].store(len(call.module) | len(call.file) << 32, Ordering::Relaxed);
    let meta = (call.level as u64) | message | u64::from(call.line) << 32;
    w[7].store(meta, Ordering::Relaxed);
}

/// A formatted message's bytes in the text words, little-endian, the last
/// word zero-padded.
#[inline(always)]
fn store_text(slot: &Slot, message: &[u8]) {
    let w = &slot.0;
    let mut words = message.chunks_exact(8);
    let mut at = 8;
    for chunk in &mut words {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        w[at].store(word, Ordering::Relaxed);
        at += 1;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        w[at].store(u64::from_le_bytes(last), Ordering::Relaxed);
    }
}

/// The arguments' count and kinds as logbus's `args::put` writes them in
/// its first text word (the count, then 5 bits a kind from bit 8; `U64`
/// is kind 3). A constant here: logbus's caller encodes each argument's
/// kind, and the consumer here takes the count from the template.
const KINDS: u64 = ARGS as u64 | 3 << 8 | 3 << 13;

/// A deferred message's words, as logbus's slot holds them: the template's
/// address in the word logbus calls `message` (the last here, which the
/// formatted rungs leave out), the count and kinds in the first text word,
/// and each argument in a text word after it.
#[inline(always)]
fn store_args(slot: &Slot, template: &'static Template, args: [u64; ARGS]) {
    let w = &slot.0;
    // `expose_provenance`: the consumer takes the pointer back from the
    // integer (`with_exposed_provenance`).
    w[15].store(
        std::ptr::from_ref(template).expose_provenance() as u64,
        Ordering::Relaxed,
    );
    for (word, arg) in w[9..9 + ARGS].iter().zip(args) {
        word.store(arg, Ordering::Relaxed);
    }
    w[8].store(KINDS, Ordering::Relaxed);
}

/// The counter's ticks (`rdtsc`), as logbus's clock reads them.
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 processor and reads a
        // counter; it touches no memory.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// A bounded writer straight into a slot's bytes (`ladder-ring`): what does
/// not fit is cut off.
struct RawText {
    at: *mut u8,
    len: usize,
}

impl RawText {
    /// # Safety
    ///
    /// `at` must be valid for writes of `TEXT` bytes, which nothing else
    /// reads or writes while the writer lives.
    unsafe fn new(at: *mut u8) -> RawText {
        RawText { at, len: 0 }
    }
}

impl fmt::Write for RawText {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(TEXT - self.len);
        // SAFETY: `len + n <= TEXT`, within what `new` was given.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), self.at.add(self.len), n) };
        self.len += n;
        if n < s.len() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// A bounded writer on the stack (`ladder-stack` and on), its buffer left
/// uninitialised as logbus's `SlotText` leaves it (no `memset` a call).
struct StackText {
    buf: [std::mem::MaybeUninit<u8>; TEXT],
    len: usize,
}

impl StackText {
    #[inline(always)]
    fn new() -> StackText {
        StackText {
            buf: [std::mem::MaybeUninit::uninit(); TEXT],
            len: 0,
        }
    }

    /// What was written, cut to a slot's words from `ladder-slot` on.
    fn text(&self) -> &[u8] {
        let len = self.len.min(TEXT_WORDS * 8);
        // SAFETY: the first `self.len` bytes were written by `write_str`.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), len) }
    }
}

impl fmt::Write for StackText {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(TEXT - self.len);
        // SAFETY: `len + n <= TEXT`, within the buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                s.as_ptr(),
                self.buf.as_mut_ptr().add(self.len).cast::<u8>(),
                n,
            );
        }
        self.len += n;
        if n < s.len() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The consumer.

/// Set once every producer is done.
static FINISHED: AtomicBool = AtomicBool::new(false);

/// Takes every lane's records in turn and writes them as lines to `path`
/// until the producers are done and every lane is empty. Returns the lines
/// written.
fn consume(path: &std::path::Path) -> u64 {
    let mut file = File::create(path).expect("create the ladder's file");
    let mut out = Vec::with_capacity(FLUSH_AT + 256);
    let mut lanes: Vec<(Arc<Ring>, u64)> = Vec::new();
    let mut written = 0u64;
    // A consumer that takes in runs (`benches/README.md`, "Fifteenth
    // session: a consumer that takes in runs"): after a take of fewer than
    // LADDER_BATCH records, it spins LADDER_SPIN spin-loop hints before it
    // looks again. Unset: it looks again at once. A value that is not a
    // number stops the run, so that a typo does not measure the default.
    let knob = |name: &str| match std::env::var(name) {
        Ok(value) => value
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")),
        Err(_) => 0,
    };
    let (min_batch, spin) = (knob("LADDER_BATCH"), knob("LADDER_SPIN"));
    loop {
        // Acquire: the producers' last tail stores happen before it.
        let finished = FINISHED.load(Ordering::Acquire);
        if REGISTERED.load(Ordering::Acquire) != lanes.len() {
            let registered = LANES.lock().expect("lanes");
            for ring in &registered[lanes.len()..] {
                lanes.push((Arc::clone(ring), 0));
            }
        }
        let mut took = 0;
        for (ring, head) in &mut lanes {
            let tail = ring.tail.0.load(Ordering::Acquire);
            while *head < tail {
                render(ring, &ring.slots[(*head % SLOTS) as usize], &mut out);
                *head += 1;
                took += 1;
                if out.len() >= FLUSH_AT {
                    file.write_all(&out).expect("write the ladder's file");
                    out.clear();
                }
            }
            // Release: our reads of the slots happen before the producer
            // reuses them.
            ring.head.0.store(*head, Ordering::Release);
        }
        written += took;
        if took < min_batch && !finished {
            for _ in 0..spin {
                std::hint::spin_loop();
            }
        }
        if took == 0 {
            if finished {
                break;
            }
            thread::yield_now();
        }
    }
    file.write_all(&out).expect("write the ladder's file");
    written
}

/// Renders one slot as a line into `out`.
fn render(ring: &Ring, slot: &Slot, out: &mut Vec<u8>) {
    write_ts(out);
    out.extend_from_slice(b" INFO ");
    out.extend_from_slice(TARGET.as_bytes());
    out.extend_from_slice(b": ");
    if ring.rung < SLOT {
        let base = slot.0.as_ptr().cast::<u8>();
        // SAFETY (each read of the slot's bytes): the producer wrote the
        // slot before its Release store of the tail we loaded with
        // Acquire, and does not write it again until our Release store of
        // `head` past it.
        let header = unsafe { base.cast::<u64>().read() };
        if header & ARGS_FLAG != 0 {
            // SAFETY: as above; `ladder-args` wrote a `&'static Template`
            // as a pointer at byte 16 and the arguments at byte 24.
            let (template, args) = unsafe {
                (
                    &*base.add(16).cast::<*const Template>().read(),
                    base.add(24).cast::<[u64; ARGS]>().read(),
                )
            };
            template.render(args, out);
        } else {
            // SAFETY: as above; the header's low 16 bits are the
            // message's length, at most `TEXT`.
            let message = unsafe {
                std::slice::from_raw_parts(base.add(16), ((header & 0xffff) as usize).min(TEXT))
            };
            out.extend_from_slice(message);
        }
    } else {
        // Relaxed, each word: the tail's Acquire load ordered them all.
        let meta = slot.0[7].load(Ordering::Relaxed);
        if meta & ARGS_FLAG != 0 {
            let address = slot.0[15].load(Ordering::Relaxed) as usize;
            // SAFETY: `store_args` stored a `&'static Template`'s exposed
            // address in word 15 (published as above).
            let template = unsafe { &*std::ptr::with_exposed_provenance::<Template>(address) };
            let args = std::array::from_fn(|k| slot.0[9 + k].load(Ordering::Relaxed));
            template.render(args, out);
        } else {
            let len = ((meta >> 8) & 0xff) as usize;
            let mut bytes = [0u8; TEXT_WORDS * 8];
            for (chunk, word) in bytes.chunks_exact_mut(8).zip(&slot.0[8..]) {
                chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
            }
            out.extend_from_slice(&bytes[..len.min(bytes.len())]);
        }
    }
    out.push(b'\n');
}
