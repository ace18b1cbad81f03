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

use super::convert::{Anchor, Converter, Fallback, Rate, Reading, WentBack};
use crate::sync::{AtomicU64, Ordering};

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
    /// The tick of this thread's last [`stamp_converted`] (0: none yet):
    /// whether it logs often enough to keep an anchor fresh.
    static LAST_CONVERTED: Cell<u64> = const { Cell::new(0) };
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
    // Relaxed: only the state's value is needed here; a converter orders
    // its own reads of the origin (`origin`).
    match SOURCE.load(Ordering::Relaxed) {
        TICKS => Stamp::Ticks(read_ticks(), to_unix_nanos),
        WALL => Stamp::Wall(SystemTime::now()),
        _ => first_stamp(),
    }
}

/// The stamp of a record that travels as copies to several workers,
/// converted here, on the caller's thread (`clock::stamp_converted`): the
/// counter read and converted with this thread's anchor, as a worker
/// converts. A thread with no anchor yet reads one (about 0.2 µs,
/// [`BRACKETS`]); one whose anchor does not reach the ticks reads a new one
/// only while it stamps such records often enough to pay for it, the
/// previous within an eighth of an anchor's reach (`min(1 ms, baseline)`,
/// [`Anchor::worth_converting`]), and stamps the wall clock (about 30 ns)
/// otherwise, so a sparse caller does not pay for readings it would use a
/// few times. Either way the result travels as ticks that are already
/// nanoseconds, converted by the identity ([`converted`]).
pub(super) fn stamp_converted() -> Stamp {
    // Relaxed: as in `stamp`.
    let nanos = match SOURCE.load(Ordering::Relaxed) {
        TICKS => converted_here(read_ticks()),
        // Undecided (no broker was built; one that was decided it) or the
        // wall clock.
        _ => None,
    };
    let nanos = nanos.unwrap_or_else(|| unix_nanos(SystemTime::now()));
    Stamp::Ticks(nanos as u64, converted)
}

/// `ticks`, just read, converted by this thread ([`to_unix_nanos`]), if it
/// has no anchor yet or its anchor is worth it
/// ([`Anchor::worth_converting`]); `None` (the wall clock) otherwise, or
/// once its thread-locals are gone.
fn converted_here(ticks: u64) -> Option<i64> {
    let last = LAST_CONVERTED.try_with(|cell| cell.replace(ticks)).ok()?;
    let anchor = ANCHOR.try_with(Cell::get).ok()?;
    match anchor {
        // The usual case, converted as `to_unix_nanos` converts it with
        // no second look at the thread-locals: the anchor reaches `ticks`,
        // which, read after the anchor, is newer than it (`in_order`).
        Some(anchor) if anchor.converts(ticks) && ticks > anchor.ticks() => {
            let nanos = anchor.unix_nanos_at(ticks);
            debug_assert_eq!(nanos, to_unix_nanos(ticks), "as the long way converts it");
            Some(nanos)
        }
        Some(anchor) if !anchor.worth_converting(ticks, last) => None,
        _ => Some(to_unix_nanos(ticks)),
    }
}

/// The converter of a stamp converted already ([`stamp_converted`]): its
/// ticks are the nanoseconds since the Unix epoch (as `u64` bits).
fn converted(nanos: u64) -> i64 {
    nanos as i64
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
fn first_stamp() -> Stamp {
    if settle(&SOURCE, crate::fork::generation(), decide) & STATE == TICKS {
        Stamp::Ticks(read_ticks(), to_unix_nanos)
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
/// time (or, for a record copied to several workers, by the caller's,
/// [`stamp_converted`]).
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
    let origin = origin();
    // A thread whose thread-locals are gone (at its exit) keeps nothing.
    let mut converter = match CONVERTER.try_with(Cell::get).ok().flatten() {
        Some(State::GaveUp(fallback)) => return fallback.unix_nanos_at(ticks),
        Some(State::Ticks(converter)) => converter,
        None => Converter::new(origin),
    };
    let known = Rate::from_bits(LAST_RATE.load(Ordering::Relaxed));
    // Relaxed: `origin` above ordered the reads of the origin.
    let given_up = SOURCE.load(Ordering::Relaxed) & STATE == WALL;
    let anchored = if given_up {
        Err(WentBack)
    } else {
        // Read after `ticks` was stamped: `ticks` is older than it.
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
            anchor.unix_nanos_at(ticks)
        }
        Err(WentBack) => {
            give_up(&SOURCE);
            // Read after no more ticks are stamped, but for a log call that
            // loaded `TICKS` just before.
            let fallback = converter.fallback(origin, rough_read(), known);
            let _ = ANCHOR.try_with(|cell| cell.set(None));
            let _ = CONVERTER.try_with(|cell| cell.set(Some(State::GaveUp(fallback))));
            fallback.unix_nanos_at(ticks)
        }
    }
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
