//! The time-stamp counter as a record's stamp, on x86-64 Linux: whether to
//! trust it (decided once per process), reading it, and converting it on
//! the thread that reads a record's time (`convert.rs` has the arithmetic
//! and its accuracy).
//!
//! The counter is trusted when all of these hold:
//! - the CPU says it is invariant (CPUID leaf `0x8000_0007`, EDX bit 8): one
//!   rate, whatever the core's frequency or sleep state;
//! - the kernel's clock source is `tsc`
//!   (`/sys/devices/system/clocksource/clocksource0/current_clocksource`):
//!   the kernel checked that the cores' counters agree and keep agreeing,
//!   and demotes the source when they do not. If the kernel does not trust
//!   the counter, neither do we;
//! - `rdtsc` is allowed (`prctl(PR_GET_TSC)`; a sandbox may make it fault);
//! - `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` can be read (the rate comes from
//!   them);
//! - `LOGBUS_TSC` is not `off`, `0`, `false` or `no` (in any case).
//!
//! Otherwise a record is stamped with `SystemTime::now()`.
//!
//! The clock source is read once, when the first broker is built. The
//! kernel's watchdog may demote `tsc` later (it found the counter drifting
//! against another clock, or the cores' counters apart); logbus does not
//! notice and goes on stamping the counter, whose conversion is then only as
//! good as the counter. Re-reading a sysfs file from whichever thread
//! converts is not worth it for so rare an event; `LOGBUS_TSC=off` is the
//! way out on a machine where it happens.
//!
//! Once a converting thread finds the counter went back (`convert.rs`:
//! a reset on resume from S3), logbus stops stamping it for the rest of the
//! process: `SOURCE` goes from `TICKS` to `WALL`, and each thread converts
//! the tick stamps still outstanding with its `Fallback`.

use std::cell::Cell;
use std::time::SystemTime;

use logbus_appenders::__private_api::{from_unix_nanos, unix_nanos, Stamp};

use super::convert::{Anchor, Converter, Fallback, Rate, Reading, WentBack, EPOCH_NANOS, WORDS};
use super::keyed::{Found, Seen, Slot, EPOCH_AT};
use crate::sync::{AtomicU64, CacheLine, Ordering};

/// The environment variable that turns the counter off: `LOGBUS_TSC=off`.
const OPT_OUT: &str = "LOGBUS_TSC";

/// The values of [`OPT_OUT`] that turn the counter off, in any case.
const OPT_OUT_VALUES: [&str; 4] = ["off", "0", "false", "no"];

/// How many brackets a reading tries; it keeps the narrowest. One is wide
/// when the thread was preempted or the kernel's clock data was being
/// updated inside it; four such in a row are rare (the narrowest is 130
/// ticks here, 99.9 % are under 420). About 0.2 µs per reading, at most
/// once per millisecond per converting thread.
const BRACKETS: usize = 4;

/// How many brackets a reading tries at most: after [`BRACKETS`], it goes
/// on while none is narrower than [`NARROW_TICKS`] or none was valid.
const MAX_BRACKETS: usize = 16;

/// A bracket narrower than this many ticks is good enough to stop at.
const NARROW_TICKS: u64 = 1_000;

/// The low bits of [`SOURCE`]: its state.
const STATE: u64 = 0b11;
const UNDECIDED: u64 = 0;
const DECIDING: u64 = 1;
const TICKS: u64 = 2;
const WALL: u64 = 3;

/// What records are stamped with, a state machine in the low two bits:
///
/// - `UNDECIDED` (the start) -> `DECIDING`: a thread's compare-exchange
///   claims the decision; the bits above hold the fork generation
///   (`fork.rs`) it was claimed in;
/// - `DECIDING` -> `TICKS` (after the origin is written) or `WALL`: the
///   claimant's store;
/// - `DECIDING` of an older fork generation -> `DECIDING`: a forked child
///   whose parent was deciding when it forked (the claimant did not come
///   along) claims the decision again;
/// - `TICKS` -> `WALL`: a converting thread found the counter went back
///   (`give_up`). No other transition leaves `TICKS`, and none leaves
///   `WALL`.
///
/// No thread waits: while another decides, a log call stamps the wall
/// clock. So no `Once` can be left running in a child.
static SOURCE: AtomicU64 = AtomicU64::new(UNDECIDED);

/// The origin (a `Reading`), written by the claimant before its Release
/// store of `TICKS`, and read by converters after their Acquire load of it
/// (`origin`); never written again. Relaxed: that pair orders them. The
/// wall clock is kept as signed nanoseconds from the epoch.
static ORIGIN_TICKS: AtomicU64 = AtomicU64::new(0);
static ORIGIN_WALL: AtomicU64 = AtomicU64::new(0);
static ORIGIN_BOOT: AtomicU64 = AtomicU64::new(0);
static ORIGIN_SLEPT: AtomicU64 = AtomicU64::new(0);

/// The latest rate a thread measured over a full baseline (`Rate::to_bits`,
/// 0 for none), for a thread without one of its own. Relaxed: one word, and
/// any recent one will do.
static LAST_RATE: AtomicU64 = AtomicU64::new(0);

/// log2 of the ticks in an epoch of keyed anchors (`keyed.rs`,
/// [`keyed_to_unix_nanos`]), measured by the claimant with the origin and
/// written like it, before the `Release` store of `TICKS` (again only by a
/// forked child that redoes the decision, before any tick is stamped).
static EPOCH_SHIFT: AtomicU64 = AtomicU64::new(0);

/// How many epochs' anchors are kept: the slot of an epoch is taken by the
/// epoch this many later (1.6 s here, at 2^20 ticks an epoch; 1 to 2 s
/// with any counter).
const EPOCHS: usize = 4096;

/// The anchors of the latest epochs a copy was converted in, by epoch
/// modulo [`EPOCHS`] (256 KiB, a cache line a slot, touched as used).
static KEYED: [Slot<WORDS>; EPOCHS] = [const { Slot::new() }; EPOCHS];

/// A converting thread's state beyond its anchor.
#[derive(Clone, Copy)]
enum State {
    /// Converting ticks: the readings the next anchor is measured from.
    Ticks(Converter),
    /// The counter went back: how this thread converts the ticks still
    /// outstanding.
    GaveUp(Fallback),
}

thread_local! {
    /// This thread's anchor, once it has converted a tick.
    static ANCHOR: Cell<Option<Anchor>> = const { Cell::new(None) };
    /// This thread's state, read and written when it re-anchors.
    static CONVERTER: Cell<Option<State>> = const { Cell::new(None) };
    /// On a worker's thread, a counter reading made after every record the
    /// thread has taken off its queue was stamped ([`note_taken`]); 0 on
    /// other threads.
    static TAKEN: Cell<u64> = const { Cell::new(0) };
    /// The keyed anchor this thread last converted a copy with: the first
    /// and last tick of its epoch, and the anchor. On a cache line of its
    /// own, as [`STUCK`] is: the one-subscription workers' per-record
    /// thread-locals (`ANCHOR`, `TAKEN`) share none with them (without it,
    /// `logbus-macro`'s worker leaned 4-10 ns of CPU a record slower at the
    /// same instructions, not significantly: `benches/README.md`,
    /// "Twenty-eighth session").
    static KEYED_ANCHOR: CacheLine<Cell<Option<(u64, u64, Anchor)>>> =
        const { CacheLine(Cell::new(None)) };
    /// The slot (its index) this thread last waited for in vain, and what
    /// it held: a claim no thread finishes (its writer gone unseen, as in a
    /// child forked without the atfork handler) is not waited for again.
    static STUCK: CacheLine<Cell<Option<(usize, Seen)>>> = const { CacheLine(Cell::new(None)) };
}

/// Notes, on a worker's thread that has just taken records off its queue,
/// a counter reading made after each of them was stamped: it then converts
/// them without a counter read each (see [`to_unix_nanos`]). One read a
/// take, which takes up to a few hundred records.
pub(super) fn note_taken() {
    let _ = TAKEN.try_with(|cell| cell.set(read_ticks()));
}

/// Forgets [`note_taken`]'s reading, once the thread wrote what it took.
/// What it takes is converted with it; a tick it converts that it did not
/// take (from a journal an appender reads) may have been stamped after
/// it. Between a take and the worker going idle that can still happen,
/// and such a tick stamped after the counter went back in that time would
/// be converted as if stamped before the anchor: a narrower window than
/// the per-record read had (from the record's stamp to its conversion),
/// not none.
pub(super) fn forget_taken() {
    let _ = TAKEN.try_with(|cell| cell.set(0));
}

/// The stamp of a record built now.
#[inline]
pub(super) fn stamp() -> Stamp {
    stamp_with(to_unix_nanos)
}

/// The stamp of a record that travels as copies to several workers
/// (`clock::stamp_keyed`): the counter, as [`stamp`] reads it, converted
/// by whichever thread reads the time with the anchor of its epoch
/// ([`keyed_to_unix_nanos`]), which every thread converting a tick of that
/// epoch takes, so the copies have one time.
#[inline]
pub(super) fn stamp_keyed() -> Stamp {
    stamp_with(keyed_to_unix_nanos)
}

/// The counter with `convert`, its converter, or the wall clock.
#[inline(always)]
fn stamp_with(convert: fn(u64) -> i64) -> Stamp {
    // Relaxed: only the state's value is needed here; a converter orders
    // its own reads of the origin (`origin`).
    match SOURCE.load(Ordering::Relaxed) {
        TICKS => Stamp::Ticks(read_ticks(), convert),
        WALL => Stamp::Wall(SystemTime::now()),
        _ => first_stamp(convert),
    }
}

/// Decides the source if nobody has.
pub(super) fn prepare() {
    settle(&SOURCE, crate::fork::generation(), decide);
}

/// Whether records are stamped with the counter (`Some(true)`), the wall
/// clock (`Some(false)`), or that is not decided yet (`None`).
pub(super) fn ticks_decided() -> Option<bool> {
    match SOURCE.load(Ordering::Relaxed) & STATE {
        TICKS => Some(true),
        WALL => Some(false),
        _ => None,
    }
}

#[cold]
#[inline(never)]
fn first_stamp(convert: fn(u64) -> i64) -> Stamp {
    if settle(&SOURCE, crate::fork::generation(), decide) & STATE == TICKS {
        Stamp::Ticks(read_ticks(), convert)
    } else {
        Stamp::Wall(SystemTime::now())
    }
}

/// Brings `source` out of `UNDECIDED` (or a stale `DECIDING`) with
/// `decide`, unless another thread of this generation is deciding; returns
/// the state as this thread left it.
fn settle(source: &AtomicU64, generation: u64, decide: impl FnOnce() -> u64) -> u64 {
    let mut state = source.load(Ordering::Acquire);
    loop {
        let stale = state & STATE == DECIDING && state >> 2 != generation;
        if state & STATE != UNDECIDED && !stale {
            return state;
        }
        // Relaxed: the claim publishes nothing; the decision's Release store
        // does.
        match source.compare_exchange(
            state,
            generation << 2 | DECIDING,
            Ordering::Relaxed,
            Ordering::Acquire,
        ) {
            Ok(_) => break,
            Err(now) => state = now,
        }
    }
    let decided = decide();
    // Release: pairs with the Acquire load in `origin` (and `settle`): the
    // origin, written by `decide`, is seen by whoever sees `TICKS`.
    source.store(decided, Ordering::Release);
    decided
}

/// Stops stamping the counter: `TICKS` -> `WALL`, if it is `TICKS`.
fn give_up(source: &AtomicU64) {
    // Release: a thread whose load in `origin` (Acquire) reads this `WALL`
    // sees the origin, which this thread saw.
    let _ = source.compare_exchange(TICKS, WALL, Ordering::Release, Ordering::Relaxed);
}

/// The decision, taken by the claimant: `TICKS` with the origin written,
/// or `WALL`.
fn decide() -> u64 {
    let opt_out = std::env::var_os(OPT_OUT);
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .ok();
    if !trusted(
        opt_out.as_deref().and_then(|v| v.to_str()),
        invariant_counter(),
        clocksource.as_deref(),
        rdtsc_allowed() && clocks_work(),
    ) {
        return WALL;
    }
    let Some(origin) = read() else {
        return WALL; // the counter went back inside every bracket
    };
    // The epochs of keyed anchors: measured over an epoch's length at
    // least, so that every anchor, at a rate measured from the origin or
    // over a longer baseline, reaches across one (`Rate::epoch_shift`).
    // Once per process, before any record is stamped with the counter.
    crate::sync::thread::sleep(std::time::Duration::from_nanos(EPOCH_NANOS));
    let Some(shift) = read()
        .and_then(|now| Rate::between(&origin, &now))
        .and_then(|rate| rate.epoch_shift())
    else {
        return WALL; // the counter did not advance as the clock did
    };
    EPOCH_SHIFT.store(u64::from(shift), Ordering::Relaxed);
    ORIGIN_TICKS.store(origin.ticks, Ordering::Relaxed);
    ORIGIN_WALL.store(unix_nanos(origin.wall) as u64, Ordering::Relaxed);
    ORIGIN_BOOT.store(origin.boot, Ordering::Relaxed);
    ORIGIN_SLEPT.store(origin.slept, Ordering::Relaxed);
    TICKS
}

/// Whether the counter is trusted, from what `decide` found.
fn trusted(
    opt_out: Option<&str>,
    invariant: bool,
    clocksource: Option<&str>,
    allowed: bool,
) -> bool {
    !opted_out(opt_out) && invariant && clocksource.map(str::trim) == Some("tsc") && allowed
}

/// Whether `LOGBUS_TSC`'s value turns the counter off.
fn opted_out(value: Option<&str>) -> bool {
    value.is_some_and(|value| {
        OPT_OUT_VALUES
            .iter()
            .any(|off| value.eq_ignore_ascii_case(off))
    })
}

/// CPUID leaf `0x8000_0007`, EDX bit 8: the invariant TSC.
fn invariant_counter() -> bool {
    use std::arch::x86_64::__cpuid;
    // `__cpuid` is safe to call since Rust 1.87; the MSRV needs the block.
    #[allow(unused_unsafe)]
    // SAFETY: every x86-64 CPU has CPUID, and the extended leaf
    // `0x8000_0000` (the highest extended leaf) is defined on all of them.
    let highest = unsafe { __cpuid(0x8000_0000) }.eax;
    if highest < 0x8000_0007 {
        return false;
    }
    #[allow(unused_unsafe)]
    // SAFETY: as above; the leaf exists, as `highest` says.
    let power = unsafe { __cpuid(0x8000_0007) };
    power.edx & (1 << 8) != 0
}

/// Whether `rdtsc` is allowed in user mode (a process may make it fault
/// with `prctl(PR_SET_TSC, PR_TSC_SIGSEGV)`).
fn rdtsc_allowed() -> bool {
    let mut mode: libc::c_int = 0;
    // SAFETY: `PR_GET_TSC` writes one `int` through the pointer given, which
    // points to a live `c_int`.
    let got = unsafe { libc::prctl(libc::PR_GET_TSC, &mut mode as *mut libc::c_int) };
    got == 0 && mode == libc::PR_TSC_ENABLE
}

/// Whether `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` can be read (a seccomp
/// filter or an old kernel could refuse one): the conversion's rate comes
/// from them, and `clock_nanos` does not look at its result again.
fn clocks_work() -> bool {
    [libc::CLOCK_MONOTONIC, libc::CLOCK_BOOTTIME]
        .into_iter()
        .all(|clock| {
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
            // which points to a live one.
            unsafe { libc::clock_gettime(clock, &mut now) == 0 }
        })
}

/// The counter.
#[inline]
fn read_ticks() -> u64 {
    // SAFETY: `rdtsc` reads a register; it touches no memory. Every x86-64
    // CPU has it, and `decide` checked that user mode may execute it (it
    // faults only under `PR_TSC_SIGSEGV`, which makes it a signal, not
    // undefined behaviour, were it set later).
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// `clock` (`CLOCK_MONOTONIC`, `CLOCK_BOOTTIME`) in nanoseconds.
fn clock_nanos(clock: libc::clockid_t) -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
    // which points to a live one; both clocks exist on every Linux logbus
    // builds for (BOOTTIME since 2.6.39).
    unsafe { libc::clock_gettime(clock, &mut now) };
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}

/// One bracket: the counter, the wall clock, `CLOCK_MONOTONIC`,
/// `CLOCK_BOOTTIME` and the counter again; the reading at a given tick.
fn bracket() -> (u64, u64, impl FnOnce(u64) -> Reading) {
    let before = read_ticks();
    let wall = SystemTime::now();
    let mono = clock_nanos(libc::CLOCK_MONOTONIC);
    let boot = clock_nanos(libc::CLOCK_BOOTTIME);
    let after = read_ticks();
    let reading = move |ticks| Reading {
        ticks,
        wall,
        boot,
        slept: boot.saturating_sub(mono),
    };
    (before, after, reading)
}

/// The counter and the clocks, read together: the narrowest valid bracket
/// ([`narrowest`]), paired with its midpoint; `None` if no bracket was
/// valid.
fn read() -> Option<Reading> {
    narrowest(bracket).map(|(ticks, reading)| reading(ticks))
}

/// Of the brackets `(before, after, value)` that `bracket` reads, the
/// narrowest valid one, with its midpoint. A bracket is valid when `after`
/// is not below `before` (it is, when the thread moved to a core whose
/// counter is behind: never where the kernel trusts the counter, but not
/// taken as width 0 if it happens). It reads [`BRACKETS`], then more while
/// none is narrower than [`NARROW_TICKS`], up to [`MAX_BRACKETS`].
fn narrowest<T>(mut bracket: impl FnMut() -> (u64, u64, T)) -> Option<(u64, T)> {
    let mut best: Option<(u64, u64, T)> = None;
    for tries in 1..=MAX_BRACKETS {
        let (before, after, value) = bracket();
        if let Some(width) = after.checked_sub(before) {
            if best
                .as_ref()
                .map_or(true, |&(narrowest, ..)| width < narrowest)
            {
                best = Some((width, before + width / 2, value));
            }
        }
        let narrow = best
            .as_ref()
            .is_some_and(|&(width, ..)| width < NARROW_TICKS);
        if tries >= BRACKETS && narrow {
            break;
        }
    }
    best.map(|(_, ticks, value)| (ticks, value))
}

/// A reading whatever the counter does (for a thread that found it going
/// back): the narrowest valid bracket, or else one bracket's start.
fn rough_read() -> Reading {
    read().unwrap_or_else(|| {
        let (before, _, reading) = bracket();
        reading(before)
    })
}

/// The process's origin.
fn origin() -> Reading {
    // Acquire: pairs with the Release store in `settle`. Whoever converts a
    // tick got it from a record stamped after a load of `TICKS`, so this
    // load reads `TICKS` or the `WALL` stored after it (coherence), and sees
    // the origin.
    let state = SOURCE.load(Ordering::Acquire);
    debug_assert!(matches!(state & STATE, TICKS | WALL));
    Reading {
        ticks: ORIGIN_TICKS.load(Ordering::Relaxed),
        wall: from_unix_nanos(ORIGIN_WALL.load(Ordering::Relaxed) as i64),
        boot: ORIGIN_BOOT.load(Ordering::Relaxed),
        slept: ORIGIN_SLEPT.load(Ordering::Relaxed),
    }
}

/// A record's ticks as wall-clock time, in nanoseconds from the Unix epoch:
/// the converter its stamp carries, run by the thread reading the record's
/// time, with that thread's anchor (a record copied to several workers
/// carries [`keyed_to_unix_nanos`] instead).
fn to_unix_nanos(ticks: u64) -> i64 {
    if let Some(anchor) = ANCHOR.try_with(Cell::get).ok().flatten() {
        // A tick older than the anchor was stamped before it, unless the
        // counter went back since: then every reading made after the stamp
        // is below the anchor (until the counter climbs past it again,
        // which `Converter::anchor` looks for). So one reading made after
        // the stamp at or past the anchor says it was stamped before:
        // `TAKEN`'s on a worker's thread, whose records were all stamped
        // before it took them (a worker converts the records it took, and
        // copies of them; see `forget_taken` for the others), else one
        // read now.
        let taken = TAKEN.try_with(Cell::get).unwrap_or(0);
        if anchor.converts(ticks) && in_order(ticks, anchor.ticks(), taken, read_ticks) {
            return anchor.unix_nanos_at(ticks);
        }
    }
    convert_slowly(ticks)
}

/// Whether `ticks` was stamped after the anchor read `anchor`, or before
/// it with the counter not gone back since: newer than the anchor, or a
/// reading made after the stamp (`taken`, else one from `read`) at or past
/// it (see `to_unix_nanos`).
#[inline]
fn in_order(ticks: u64, anchor: u64, taken: u64, read: impl FnOnce() -> u64) -> bool {
    ticks > anchor || taken >= anchor || read() >= anchor
}

/// `to_unix_nanos` with a new anchor, or once the counter went back.
#[cold]
#[inline(never)]
fn convert_slowly(ticks: u64) -> i64 {
    match new_anchor() {
        Ok(anchor) => anchor.unix_nanos_at(ticks),
        Err(fallback) => fallback.unix_nanos_at(ticks),
    }
}

/// This thread's new anchor, read now (after every tick it is to
/// convert), kept as its own; or, once the counter went back, how it
/// converts the ticks still outstanding.
fn new_anchor() -> Result<Anchor, Fallback> {
    let origin = origin();
    // A thread whose thread-locals are gone (at its exit) keeps nothing.
    let mut converter = match CONVERTER.try_with(Cell::get).ok().flatten() {
        Some(State::GaveUp(fallback)) => return Err(fallback),
        Some(State::Ticks(converter)) => converter,
        None => Converter::new(origin),
    };
    let known = Rate::from_bits(LAST_RATE.load(Ordering::Relaxed));
    // Relaxed: `origin` above ordered the reads of the origin.
    let given_up = SOURCE.load(Ordering::Relaxed) & STATE == WALL;
    let anchored = if given_up {
        Err(WentBack)
    } else {
        // Read after every tick to convert was stamped: they are older.
        read()
            .ok_or(WentBack)
            .and_then(|now| converter.anchor(now, known))
    };
    match anchored {
        Ok(anchor) => {
            if let Some(bits) = converter.rate().and_then(Rate::to_bits) {
                LAST_RATE.store(bits, Ordering::Relaxed);
            }
            let _ = ANCHOR.try_with(|cell| cell.set(Some(anchor)));
            let _ = CONVERTER.try_with(|cell| cell.set(Some(State::Ticks(converter))));
            // A worker's thread converts only records it has already taken
            // (`TAKEN`), so this reading, made after the take, was made
            // after each of them was stamped too, and the anchor it made
            // does not send the rest of the batch to a read each.
            let _ = TAKEN.try_with(|cell| {
                if cell.get() != 0 {
                    cell.set(anchor.ticks());
                }
            });
            Ok(anchor)
        }
        Err(WentBack) => {
            give_up(&SOURCE);
            // Read after no more ticks are stamped, but for a log call that
            // loaded `TICKS` just before.
            let fallback = converter.fallback(origin, rough_read(), known);
            let _ = ANCHOR.try_with(|cell| cell.set(None));
            let _ = KEYED_ANCHOR.try_with(|cell| cell.set(None));
            let _ = CONVERTER.try_with(|cell| cell.set(Some(State::GaveUp(fallback))));
            Err(fallback)
        }
    }
}

/// The ticks of a record copied to several workers as wall-clock time, in
/// nanoseconds from the Unix epoch: converted with the anchor of their
/// epoch (`ticks >> EPOCH_SHIFT`), the one the first thread to convert a
/// tick of that epoch published (`keyed.rs`), so that every worker
/// converting a copy obtains one time. The anchor converts the epoch's
/// ticks within the accuracy bound (`convert.rs`): one read after a tick
/// of the epoch reaches its last tick (`Rate::epoch_shift`). A thread keeps
/// the last one it used ([`KEYED_ANCHOR`]), so a flood's conversions read
/// no slot; the rest is [`keyed_slowly`].
fn keyed_to_unix_nanos(ticks: u64) -> i64 {
    if let Some((first, last, anchor)) = KEYED_ANCHOR.try_with(|cell| cell.get()).ok().flatten() {
        // As in `to_unix_nanos`: a tick older than the anchor needs a
        // reading made after its stamp at or past the anchor.
        let taken = TAKEN.try_with(Cell::get).unwrap_or(0);
        if (first..=last).contains(&ticks) && in_order(ticks, anchor.ticks(), taken, read_ticks) {
            return anchor.unix_nanos_at(ticks);
        }
    }
    keyed_slowly(ticks)
}

/// [`keyed_to_unix_nanos`] with the epoch's anchor found in its slot of
/// [`KEYED`], or published there ([`keyed_in`]).
#[cold]
#[inline(never)]
fn keyed_slowly(ticks: u64) -> i64 {
    // Acquire: as in `origin`, for `EPOCH_SHIFT`, written before `TICKS`.
    if SOURCE.load(Ordering::Acquire) & STATE != TICKS {
        return to_unix_nanos(ticks); // given up (or, if undecided, a bug)
    }
    keyed_in(&KEYED, EPOCH_SHIFT.load(Ordering::Relaxed), ticks)
}

/// [`keyed_slowly`] on `table`, with epochs of `2^shift` ticks. The thread
/// converts with its own anchor ([`to_unix_nanos`]), within the accuracy
/// bound but maybe a few nanoseconds from its copies' time, where the
/// epoch's anchor
/// - is gone: its slot holds one [`EPOCHS`] epochs later (the copy is
///   converted 1 to 2 s after another copy of a tick of its epoch, the last
///   one to look, by a worker that lagged that far behind);
/// - is being published by a thread that does not run ([`Found::Busy`]);
/// - cannot be published: it would not reach the epoch's last tick (a rate
///   measured over less than an epoch, which the decision rules out);
/// - was read by another thread past a bracketed reading of this one's
///   (the counter went back, or the cores' counters are that far apart);
/// - would be past what a tag holds: an epoch at or above 2^46 (a counter
///   past 2^64 ticks at 2^18 ticks an epoch; centuries at any rate).
fn keyed_in(table: &[Slot<WORDS>], shift: u64, ticks: u64) -> i64 {
    debug_assert!((2..64).contains(&shift), "decided with the origin");
    let epoch = ticks >> shift;
    if epoch >> (64 - EPOCH_AT) != 0 {
        return to_unix_nanos(ticks);
    }
    let (first, last) = (epoch << shift, epoch << shift | ((1 << shift) - 1));
    let index = (epoch % table.len() as u64) as usize;
    let slot = &table[index];
    let stuck = STUCK.try_with(|cell| cell.get()).ok().flatten();
    if let Some((_, seen)) = stuck.filter(|&(stuck, _)| stuck == index) {
        if slot.holds(seen) {
            return to_unix_nanos(ticks);
        }
    }
    let generation = crate::fork::generation();
    let anchor = match slot.find(epoch, generation) {
        Found::Anchor(words) => Anchor::from_words(words),
        Found::Vacant(seen) => {
            let own = match new_anchor() {
                Ok(anchor) => anchor,
                Err(fallback) => return fallback.unix_nanos_at(ticks),
            };
            // Read after `ticks`: it converts the epoch's older ticks, and
            // its newer ones if it reaches the last.
            if !own.converts(last) {
                return own.unix_nanos_at(ticks);
            }
            match slot.publish(epoch, generation, seen, own.to_words()) {
                Found::Anchor(words) => Anchor::from_words(words),
                _ => return own.unix_nanos_at(ticks),
            }
        }
        Found::Busy(seen) => {
            let _ = STUCK.try_with(|cell| cell.set(Some((index, seen))));
            return to_unix_nanos(ticks);
        }
        Found::Gone => return to_unix_nanos(ticks),
    };
    // Another thread's anchor may be newer than this worker's reading
    // after its take: one reading now, made after the take too, spares the
    // rest of the take a read each (as `new_anchor` does).
    let taken = TAKEN.try_with(Cell::get).unwrap_or(0);
    let taken = if taken != 0 && taken < anchor.ticks() {
        let now = read_ticks();
        let _ = TAKEN.try_with(|cell| cell.set(now));
        now
    } else {
        taken
    };
    if !in_order(ticks, anchor.ticks(), taken, read_ticks) {
        // No counter reading past the anchor, which another thread may
        // have read a moment ago: a bracketed reading of this thread's
        // tells whether the counter went back (then its own conversion, or
        // its fallback once it gave up), or whether the bare read above
        // merely ran ahead of the anchor's load.
        match new_anchor() {
            Err(fallback) => return fallback.unix_nanos_at(ticks),
            Ok(own) if own.ticks() < anchor.ticks() => return own.unix_nanos_at(ticks),
            Ok(_) => {}
        }
    }
    let _ = KEYED_ANCHOR.try_with(|cell| cell.set(Some((first, last, anchor))));
    anchor.unix_nanos_at(ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_trusted_only_when_cpu_kernel_and_environment_agree() {
        #[rustfmt::skip]
        let table = [
            // (LOGBUS_TSC, invariant, clocksource, rdtsc allowed) -> trusted
            ((None,          true,  Some("tsc\n"),   true),  true),
            ((Some("on"),    true,  Some("tsc\n"),   true),  true),
            ((Some("1"),     true,  Some("tsc\n"),   true),  true),
            ((Some(""),      true,  Some("tsc\n"),   true),  true),
            ((Some("offf"),  true,  Some("tsc\n"),   true),  true),
            ((Some("off"),   true,  Some("tsc\n"),   true),  false),
            ((Some("OFF"),   true,  Some("tsc\n"),   true),  false),
            ((Some("0"),     true,  Some("tsc\n"),   true),  false),
            ((Some("False"), true,  Some("tsc\n"),   true),  false),
            ((Some("no"),    true,  Some("tsc\n"),   true),  false),
            ((None,          false, Some("tsc\n"),   true),  false),
            ((None,          true,  Some("hpet\n"),  true),  false),
            ((None,          true,  Some("kvm-clock\n"), true), false),
            ((None,          true,  None,            true),  false),
            ((None,          true,  Some("tsc\n"),   false), false),
        ];
        for ((opt_out, invariant, clocksource, allowed), expected) in table {
            assert_eq!(
                trusted(opt_out, invariant, clocksource, allowed),
                expected,
                "{opt_out:?} {invariant} {clocksource:?} {allowed}"
            );
        }
    }

    #[test]
    fn the_source_is_decided_once() {
        let source = AtomicU64::new(UNDECIDED);
        assert_eq!(settle(&source, 0, || WALL), WALL);
        assert_eq!(settle(&source, 0, || unreachable!("decided")), WALL);
        // A forked child keeps the decision.
        assert_eq!(settle(&source, 1, || unreachable!("decided")), WALL);
    }

    #[test]
    fn a_decision_under_way_is_not_waited_for_but_redone_in_a_forked_child() {
        // Another thread of this process (generation 3) is deciding: the
        // caller goes on without waiting (and stamps the wall clock).
        let source = AtomicU64::new(3 << 2 | DECIDING);
        let state = settle(&source, 3, || unreachable!("someone else decides"));
        assert_eq!(state & STATE, DECIDING);
        // In a child forked meanwhile (generation 4) the claimant is gone:
        // the child claims the decision and takes it.
        assert_eq!(settle(&source, 4, || TICKS), TICKS);
        assert_eq!(source.load(Ordering::Relaxed), TICKS);
    }

    #[test]
    fn giving_up_turns_ticks_to_the_wall_clock_and_nothing_else() {
        for (from, to) in [
            (TICKS, WALL),
            (WALL, WALL),
            (UNDECIDED, UNDECIDED),
            (5 << 2 | DECIDING, 5 << 2 | DECIDING),
        ] {
            let source = AtomicU64::new(from);
            give_up(&source);
            assert_eq!(source.load(Ordering::Relaxed), to, "from {from}");
        }
        let source = AtomicU64::new(TICKS);
        give_up(&source);
        assert_eq!(settle(&source, 0, || unreachable!("decided")), WALL);
    }

    /// Scripted brackets `(before, after)`, counting how many were read.
    fn script(brackets: &[(u64, u64)]) -> (Option<(u64, usize)>, usize) {
        let mut read = 0;
        let best = narrowest(|| {
            let (before, after) = brackets[read];
            read += 1;
            (before, after, read - 1)
        });
        (best, read)
    }

    #[test]
    fn a_bracket_whose_end_is_before_its_start_is_never_taken() {
        // The second would be width 0 by a saturating subtraction, and win.
        let (best, _) = script(&[
            (1_000, 1_500),
            (2_000, 1_900),
            (3_000, 3_200),
            (4_000, 4_600),
        ]);
        assert_eq!(best, Some((3_100, 2)));
        // None valid in all the tries: no reading.
        let (best, read) = script(&[(2_000, 1_000); MAX_BRACKETS]);
        assert_eq!((best, read), (None, MAX_BRACKETS));
    }

    #[test]
    fn brackets_are_read_until_one_is_narrow_and_the_narrowest_kept() {
        // A narrow one among the first four: four reads.
        let (best, read) = script(&[
            (0, 5_000),
            (10_000, 10_130),
            (20_000, 20_400),
            (30_000, 35_000),
        ]);
        assert_eq!((best, read), (Some((10_065, 1)), BRACKETS));
        // Four wide ones (a preempted thread): more, up to the first narrow.
        let mut brackets = [(0, 50_000); MAX_BRACKETS];
        brackets[1] = (100_000, 120_000);
        brackets[6] = (200_000, 200_900);
        brackets[7] = (300_000, 300_100);
        let (best, read) = script(&brackets);
        assert_eq!((best, read), (Some((200_450, 6)), 7));
        // None narrow: all of them, the narrowest kept.
        brackets[6] = (200_000, 203_000);
        brackets[7] = (300_000, 302_000);
        let (best, read) = script(&brackets);
        assert_eq!((best, read), (Some((301_000, 7)), MAX_BRACKETS));
    }

    /// The decision `decide` takes on this machine, from the same inputs.
    fn expected_source() -> u64 {
        let opt_out = std::env::var(OPT_OUT).ok();
        let clocksource = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok();
        let trusted = trusted(
            opt_out.as_deref(),
            invariant_counter(),
            clocksource.as_deref(),
            rdtsc_allowed(),
        );
        if trusted {
            TICKS
        } else {
            WALL
        }
    }

    /// A tick older than the anchor counts as stamped before it on a
    /// reading made after the stamp at or past the anchor: a worker's
    /// reading after its take, with no read of its own, else one read
    /// now; a counter gone back fails both.
    #[test]
    fn an_older_tick_is_checked_against_a_reading_made_after_it() {
        let reads = Cell::new(0);
        let read = |value: u64| {
            let reads = &reads;
            move || {
                reads.set(reads.get() + 1);
                value
            }
        };
        assert!(in_order(1_001, 1_000, 0, read(0)), "newer");
        assert!(in_order(900, 1_000, 1_000, read(0)), "taken at the anchor");
        assert!(in_order(900, 1_000, 5_000, read(0)), "taken after it");
        assert_eq!(reads.get(), 0);
        assert!(
            in_order(900, 1_000, 0, read(1_200)),
            "not a worker: read now"
        );
        assert!(
            in_order(900, 1_000, 950, read(1_200)),
            "taken before the anchor"
        );
        assert_eq!(reads.get(), 2);
        assert!(!in_order(900, 1_000, 0, read(950)), "went back");
        assert!(
            !in_order(900, 1_000, 300, read(950)),
            "went back before the take"
        );
    }

    /// A worker's thread converts the records it took, stamped before
    /// its take, to between the wall-clock reads around their stamps,
    /// with the reading of its take and across a new anchor; idle, it
    /// forgets the reading.
    #[test]
    fn a_worker_converts_what_it_took_to_between_the_clock_reads_around_it() {
        prepare();
        if SOURCE.load(Ordering::Relaxed) & STATE != TICKS {
            return; // stamped with the wall clock: nothing to convert
        }
        crate::sync::thread::spawn(|| {
            let slack = std::time::Duration::from_micros(1);
            for _ in 0..100 {
                let stamped: Vec<(SystemTime, u64, SystemTime)> = (0..100)
                    .map(|_| (SystemTime::now(), read_ticks(), SystemTime::now()))
                    .collect();
                note_taken();
                assert_ne!(TAKEN.with(Cell::get), 0);
                for (before, ticks, after) in stamped {
                    let time = from_unix_nanos(to_unix_nanos(ticks));
                    assert!(time + slack >= before && time <= after + slack);
                }
                // Idle: what it converts next reads the counter again.
                forget_taken();
                assert_eq!(TAKEN.with(Cell::get), 0);
            }
        })
        .join()
        .unwrap();
    }

    /// The length of an epoch (log2 of its ticks), once the source is
    /// decided, if records are stamped with the counter.
    fn epoch_shift() -> Option<u64> {
        prepare();
        if SOURCE.load(Ordering::Relaxed) & STATE != TICKS {
            return None;
        }
        let shift = EPOCH_SHIFT.load(Ordering::Relaxed);
        assert!((2..64).contains(&shift));
        Some(shift)
    }

    /// Copies of records, converted on three threads at once (a worker's
    /// with its take noted, two without), have one time each, between the
    /// wall-clock reads around their stamp, across epochs: each thread
    /// takes its epoch's anchor from the first to publish it.
    #[test]
    fn copies_converted_on_several_threads_have_one_time() {
        let Some(shift) = epoch_shift() else {
            return; // stamped with the wall clock: nothing to convert
        };
        let slack = std::time::Duration::from_micros(1);
        for round in 0..4 {
            // Stamps spanning four epochs: converted in each by the
            // anchor of its own, published by whichever thread came first.
            let mut stamped = Vec::new();
            let first = read_ticks() >> shift;
            while stamped.len() < 10_000_000 {
                let (before, stamp, after) = (SystemTime::now(), stamp_keyed(), SystemTime::now());
                let Stamp::Ticks(ticks, convert) = stamp else {
                    panic!("stamped with the counter");
                };
                assert_eq!(convert as *const (), keyed_to_unix_nanos as *const ());
                stamped.push((before, ticks, after));
                if ticks >> shift > first + 2 {
                    break;
                }
            }
            let stamped = crate::sync::Arc::new(stamped);
            let barrier = crate::sync::Arc::new(crate::sync::Barrier::new(3));
            let threads: Vec<_> = (0..3)
                .map(|thread| {
                    let (stamped, barrier) = (stamped.clone(), barrier.clone());
                    crate::sync::thread::spawn(move || {
                        if thread == 0 {
                            note_taken();
                        }
                        barrier.wait();
                        // Each in its own order, so that none converts a
                        // tick with an anchor another's order left it.
                        let mut order: Vec<usize> = (0..stamped.len()).collect();
                        match thread {
                            0 => {}
                            1 => order.reverse(),
                            _ => order.sort_by_key(|&i| (i % 7, i)),
                        }
                        let mut times = vec![0; stamped.len()];
                        for i in order {
                            times[i] = keyed_to_unix_nanos(stamped[i].1);
                        }
                        forget_taken();
                        times
                    })
                })
                .collect();
            let times: Vec<Vec<i64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            for (i, &(before, _, after)) in stamped.iter().enumerate() {
                let time = times[0][i];
                assert!(
                    times.iter().all(|t| t[i] == time),
                    "round {round}, stamp {i}: one time, not {:?}",
                    times.iter().map(|t| t[i]).collect::<Vec<_>>()
                );
                let time = from_unix_nanos(time);
                assert!(time + slack >= before && time <= after + slack);
            }
        }
    }

    /// A copy converted once a later epoch took its epoch's slot (on a
    /// table of four, here) is converted with its thread's own anchor,
    /// still between the wall-clock reads around its stamp.
    #[test]
    fn a_copy_whose_epochs_anchor_is_gone_is_converted_with_its_threads_own() {
        let Some(shift) = epoch_shift() else {
            return; // stamped with the wall clock: nothing to convert
        };
        let table = crate::sync::Arc::new([const { Slot::<WORDS>::new() }; 4]);
        let (before, ticks, after) = (SystemTime::now(), read_ticks(), SystemTime::now());
        let epoch = ticks >> shift;
        let slack = std::time::Duration::from_micros(1);
        let within = |nanos: i64| {
            let time = from_unix_nanos(nanos);
            time + slack >= before && time <= after + slack
        };
        let on_a_thread = |table: crate::sync::Arc<[Slot<WORDS>; 4]>| {
            crate::sync::thread::spawn(move || keyed_in(&*table, shift, ticks))
                .join()
                .unwrap()
        };
        assert!(within(on_a_thread(table.clone())));
        let slot = &table[(epoch % 4) as usize];
        let published = slot.find(epoch, crate::fork::generation());
        let Found::Anchor(words) = published else {
            panic!("published: {published:?}");
        };
        // Four epochs later, the same slot.
        let later = epoch + 4;
        let Found::Vacant(seen) = slot.find(later, crate::fork::generation()) else {
            panic!("the later epoch's slot is the earlier one's");
        };
        let moved = slot.publish(later, crate::fork::generation(), seen, words);
        assert_eq!(moved, Found::Anchor(words));
        assert_eq!(slot.find(epoch, crate::fork::generation()), Found::Gone);
        assert!(within(on_a_thread(table)));
    }

    #[test]
    fn a_tick_converts_to_between_the_wall_clock_reads_around_it() {
        // The 1 µs either side is the documented accuracy (`convert.rs`,
        // well under it), not a timing threshold: the clock reads bound the
        // moment of the tick from both sides, however long they take.
        prepare();
        let source = SOURCE.load(Ordering::Relaxed) & STATE;
        assert_eq!(source, expected_source(), "the decision on this machine");
        if source != TICKS {
            return; // stamped with the wall clock: nothing to convert
        }
        let slack = std::time::Duration::from_micros(1);
        for _ in 0..1_000 {
            let before = SystemTime::now();
            let ticks = read_ticks();
            let after = SystemTime::now();
            let time = from_unix_nanos(to_unix_nanos(ticks));
            assert!(time + slack >= before && time <= after + slack);
        }
        assert_eq!(ticks_decided(), Some(true));
    }
}
