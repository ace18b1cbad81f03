//! From a tick count to the wall clock: pure arithmetic on clock readings
//! taken elsewhere (`tsc.rs`), and the argument for its accuracy.
//!
//! # The scheme
//!
//! A [`Reading`] is the counter, the wall clock (`CLOCK_REALTIME`),
//! `CLOCK_BOOTTIME`, and how long the system has been suspended
//! (`CLOCK_BOOTTIME - CLOCK_MONOTONIC`), read together. Once per process,
//! the origin, a reading. Per converting thread, a [`Converter`]: its
//! latest reading, the *anchor*, and the rate it converts at, in
//! nanoseconds per tick, measured from an earlier reading `b`, the rate's
//! *baseline*:
//!
//! ```text
//! rate = (boot_a - boot_b) / (ticks_a - ticks_b)          (fixed point, 64 fraction bits)
//! wall(t) = wall_a + (t - ticks_a) * rate                 (signed: t may be older)
//! ```
//!
//! The baseline starts at the origin; once the thread's readings span a
//! second, at one of its own readings 1 to 2 s older than the anchor
//! while it keeps converting (older if it paused), so the rate follows a
//! change of NTP's correction within 2 s. The rate comes from a clock the
//! kernel never steps, so setting the wall clock does not skew it; the wall
//! clock enters only as the anchor's offset. An anchor converts every tick
//! older than itself and newer ones up to `min(1 ms, ticks_a - ticks_b)`
//! ticks past it ([`Anchor::converts`]); a newer tick makes the thread read
//! a new anchor, after the tick, so the tick is then older than its anchor.
//!
//! `CLOCK_BOOTTIME`, unlike `CLOCK_MONOTONIC`, advances through a suspend,
//! as an invariant counter does. But the kernel measures a suspend with the
//! RTC, to about a second, unless the counter runs through S3 (then with
//! the counter), so a baseline with a suspend in it is not used: a suspend
//! shows as `CLOCK_BOOTTIME - CLOCK_MONOTONIC` growing (by more than 1 ms;
//! it changes at no other time). The anchor then keeps the thread's
//! previous rate (the counter's does not change in a suspend) and the
//! baseline starts again at it. A thread with no rate of its own takes the
//! last one any thread measured over a full baseline, or, with none,
//! `CLOCK_BOOTTIME`'s count across the suspend.
//!
//! A thread's own anchor is its alone, so there is no protocol between
//! threads beyond the origin, written once before any tick is stamped, and
//! the last rate, one word. The one anchor threads share is the anchor of
//! an epoch that copies of a record are converted with (`keyed.rs`, its
//! protocol): one thread's anchor, published for the others to take.
//!
//! # Accuracy
//!
//! A reading pairs a tick count with clock values read between two tick
//! reads (a *bracket*, `tsc.rs`), and takes the bracket's midpoint: each
//! value is then off by at most `e`, half the bracket's width, in
//! nanoseconds (`e_a` for the anchor, `e_b` for the baseline's reading;
//! about 25 ns on the 2.6 GHz EPYC this was written on, whose narrowest of
//! four brackets is 130 ticks). Suppose the kernel's wall clock runs at
//! `CLOCK_BOOTTIME`'s rate and that rate is a constant number of ticks
//! (below, what breaks this). Then:
//!
//! - the rate's error, times the baseline `ticks_a - ticks_b` (`B`), is the
//!   error of `boot_a - boot_b`: at most `e_a + e_b`;
//! - converting `t` adds the offset's error `e_a` and the rate's error
//!   times the distance `d = |t - ticks_a|`, so `(e_a + e_b) * d / B`. A
//!   newer tick is at most `B` past the anchor (the re-anchor rule), and
//!   so is an older one as long as it is no older than the baseline;
//! - the fixed point rounds twice, less than 1 ns together.
//!
//! So `|wall(t) - the wall clock at t| <= 2 e_a + e_b + 1 ns`, about
//! 76 ns here, for every newer tick and every older one up to `B` (a
//! second or more) before its anchor: well under the microsecond that text
//! and JSON timestamps print. A record first read longer after it was made
//! (a stalled appender, a journal replay of a record nothing had read)
//! adds `e_a + e_b` per `B` of further age, about 50 ns per second here.
//! The error is mostly the same sign and size for every anchor (where in
//! the bracket the kernel reads the counter does not move), so two anchors
//! disagree by less than that.
//!
//! What breaks it:
//!
//! - **A wall-clock step** (`settimeofday`, NTP's step at boot) between
//!   a tick and its anchor: the record is placed on the timeline of the
//!   anchor, before or after the step. A thread re-anchors for the first
//!   tick more than 1 ms past its anchor, so a step reaches conversions
//!   of records made within 1 ms of ticks after it, and records made before
//!   it but first read after it (by an anchor read after it) land on the new
//!   timeline.
//! - **A change of the kernel's rate** (NTP's correction): the rate is the
//!   average over the baseline; the true one over `[t, ticks_a]` differs by
//!   the change `df` between them, which adds `d * df`. For a steady NTP
//!   (`df` under 1 ppm) and a record converted promptly that is under 1 ns.
//!   But the kernel lets NTP move the rate fast: the tick length
//!   (`ADJ_TICK`) by up to 10 %, the frequency by 500 ppm more, and chrony
//!   slews at up to 83,333 ppm. For up to 2 s after such a change, until
//!   the baseline is past it, a newer tick is off by up to `df` times 1 ms
//!   (83 µs at chrony's fastest slew); a record read `d` after it was made
//!   carries `d * df` for the part of `d` the change falls in.
//! - **A suspend**, for a record made before it and first read after it:
//!   it is placed by the counter's count across the suspend, while the
//!   wall clock crossed it by the kernel's measure (the RTC, to about a
//!   second, unless the counter runs through S3); it is off by their
//!   difference. Records made after the suspend are not affected.
//! - **The counter going back** (on resume from S3 on a CPU whose counter
//!   does not run through it; the kernel copes, reading it afresh): a
//!   thread notices when it converts after it, from a reading below its
//!   latest ([`WentBack`]) or, for a tick older than its anchor, from a
//!   counter reading made after the stamp below the anchor (a worker's
//!   reading after its take, else one read then; `tsc.rs`, which then
//!   stops stamping ticks for the rest of the process). The stamps still
//!   outstanding are converted by a [`Fallback`], which cannot always tell which side of
//!   the reset a stamp was made on: it takes every tick below the origin,
//!   or not past the reading after the reset, for after it. So it errs for
//!   a stamp made after the reset if the counter had climbed back past the
//!   origin before any conversion noticed, and for one made before it and
//!   first read after it that is not past that reading.
//!
//! The counter itself is trusted only where the kernel trusts it (`tsc.rs`),
//! so it is the same on every core and does not stop or change rate while
//! the system runs.

use std::time::SystemTime;

use logbus_appenders::__private_api::unix_nanos;

/// The most a newer tick may be past its anchor, in nanoseconds: bounds
/// how long a wall-clock step goes unnoticed.
const MAX_AHEAD_NANOS: u64 = 1_000_000;

/// The longest an epoch of keyed anchors lasts (`keyed.rs`), in
/// nanoseconds: half of [`MAX_AHEAD_NANOS`], so that an anchor read in an
/// epoch reaches its last tick at a rate that drifted.
pub(crate) const EPOCH_NANOS: u64 = MAX_AHEAD_NANOS / 2;

/// How old, in nanoseconds of `CLOCK_BOOTTIME`, a thread's reading must be
/// to become the start of its rates' baseline: the baseline is 1 to 2 s
/// long while the thread keeps converting.
pub(crate) const BASELINE_NANOS: u64 = 1_000_000_000;

/// How much more `CLOCK_BOOTTIME` must gain than `CLOCK_MONOTONIC` between
/// two readings for a suspend to be taken to lie between them. The kernel
/// adds a suspend's length to the difference and changes it at no other
/// time; two readings of it differ otherwise only by the moment between
/// the two clock reads in each, nanoseconds in a narrow bracket.
const SUSPEND_NANOS: u64 = 1_000_000;

/// Words in an [`Anchor`] as `keyed.rs` keeps it.
pub(crate) const WORDS: usize = 5;

/// The counter and the clocks, read together (`tsc.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) ticks: u64,
    pub(crate) wall: SystemTime,
    /// `CLOCK_BOOTTIME`, in nanoseconds.
    pub(crate) boot: u64,
    /// `CLOCK_BOOTTIME` minus `CLOCK_MONOTONIC` (read just before it), in
    /// nanoseconds: how long the system has been suspended since boot.
    pub(crate) slept: u64,
}

/// Nanoseconds per tick, and the baseline they were measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Nanoseconds per tick, times 2^64; 0 when nothing was measured.
    per_tick: u128,
    /// The baseline in ticks: an anchor at this rate converts ticks at
    /// most this far past it (and at most 1 ms).
    ticks: u64,
    /// The baseline in nanoseconds of `CLOCK_BOOTTIME`.
    nanos: u64,
}

impl Rate {
    /// No rate: an anchor converts only its own tick.
    const NONE: Rate = Rate {
        per_tick: 0,
        ticks: 0,
        nanos: 0,
    };

    /// The rate from `from` to `to`, by `CLOCK_BOOTTIME`; `None` unless the
    /// counter advanced.
    pub(crate) fn between(from: &Reading, to: &Reading) -> Option<Rate> {
        let ticks = to
            .ticks
            .checked_sub(from.ticks)
            .filter(|&ticks| ticks > 0)?;
        let nanos = to.boot.saturating_sub(from.boot);
        // Rounded to the nearest; below 2^128, as `nanos` < 2^64.
        let per_tick = ((u128::from(nanos) << 64) + u128::from(ticks / 2)) / u128::from(ticks);
        Some(Rate {
            per_tick,
            ticks,
            nanos,
        })
    }

    /// How many nanoseconds `ticks` take at this rate (saturating).
    fn nanos_for(&self, ticks: u64) -> u64 {
        let nanos = u128::from(ticks)
            .checked_mul(self.per_tick)
            .map_or(u128::MAX, |n| n >> 64);
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }

    /// log2 of the ticks in an epoch of keyed anchors (`keyed.rs`): the
    /// largest power of two of ticks no longer than [`EPOCH_NANOS`] at this
    /// rate, nor than its baseline (so that an anchor converting at a rate
    /// measured over as long reaches across an epoch); `None` for a rate
    /// measured over less than [`EPOCH_NANOS`].
    pub(crate) fn epoch_shift(&self) -> Option<u32> {
        if self.nanos < EPOCH_NANOS || self.per_tick == 0 {
            return None;
        }
        let ticks = (u128::from(EPOCH_NANOS) << 64) / self.per_tick;
        let ticks = u64::try_from(ticks).unwrap_or(u64::MAX).min(self.ticks);
        // At least 2, so that an epoch (`ticks >> shift`) is below 2^62;
        // a slot's tag holds those below 2^46 (`keyed.rs`, `EPOCH_AT`),
        // which `tsc::keyed_in` checks.
        (ticks >= 4).then(|| 63 - ticks.leading_zeros())
    }

    /// A rate another thread measured over a full baseline (`to_bits`).
    pub(crate) fn from_bits(bits: u64) -> Option<Rate> {
        (bits != 0).then(|| Rate {
            per_tick: u128::from(bits) << 16,
            ticks: u64::MAX,
            nanos: BASELINE_NANOS,
        })
    }

    /// The rate in one word, for other threads, if it was measured over a
    /// full baseline: nanoseconds per tick times 2^48 (a counter of at
    /// least 16 kHz fits).
    pub(crate) fn to_bits(self) -> Option<u64> {
        let bits = u64::try_from(self.per_tick >> 16).ok()?;
        (self.nanos >= BASELINE_NANOS && bits != 0).then_some(bits)
    }
}

/// A reading and the rate to convert around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    ticks: u64,
    /// The reading's wall-clock time, in nanoseconds from the Unix epoch
    /// (`unix_nanos`).
    wall_nanos: i64,
    /// Nanoseconds per tick, times 2^64.
    rate: u128,
    /// The newest tick this anchor converts.
    ahead_until: u64,
}

impl Anchor {
    /// The anchor at `now`, converting at `rate`.
    fn at(now: &Reading, rate: Rate) -> Anchor {
        let max_ahead = match rate.per_tick {
            0 => 0,
            per_tick => {
                u64::try_from((u128::from(MAX_AHEAD_NANOS) << 64) / per_tick).unwrap_or(u64::MAX)
            }
        };
        Anchor {
            ticks: now.ticks,
            wall_nanos: unix_nanos(now.wall),
            rate: rate.per_tick,
            ahead_until: now.ticks.saturating_add(max_ahead.min(rate.ticks)),
        }
    }

    /// The anchor's tick: a tick older than it was stamped before it was
    /// read, unless the counter went back since.
    pub(crate) fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Whether this anchor converts `ticks` within the bound: every tick
    /// older than the anchor, and newer ones up to `min(1 ms, baseline)`
    /// past it. `false` means: read a new anchor first.
    pub(crate) fn converts(&self, ticks: u64) -> bool {
        ticks <= self.ahead_until
    }

    /// The anchor as [`WORDS`] words, as `keyed.rs` keeps it.
    pub(crate) fn to_words(self) -> [u64; WORDS] {
        [
            self.ticks,
            self.wall_nanos as u64,
            self.rate as u64,
            (self.rate >> 64) as u64,
            self.ahead_until,
        ]
    }

    /// The anchor [`to_words`](Anchor::to_words) made `words` of.
    pub(crate) fn from_words(words: [u64; WORDS]) -> Anchor {
        Anchor {
            ticks: words[0],
            wall_nanos: words[1] as i64,
            rate: u128::from(words[2]) | u128::from(words[3]) << 64,
            ahead_until: words[4],
        }
    }

    /// The wall-clock time of `ticks`, in nanoseconds from the Unix epoch
    /// as a record keeps it (`unix_nanos`: clamped to `i64::MIN + 1 ..=
    /// i64::MAX`, 1677 to 2262), with no `SystemTime` arithmetic (what the
    /// worker converts every record with): non-decreasing in `ticks`.
    pub(crate) fn unix_nanos_at(&self, ticks: u64) -> i64 {
        // The worker's case: the same clamp, in 64 bits.
        if let Some(from) = self.nanos_within(ticks) {
            return self.wall_nanos.saturating_add(from).max(i64::MIN + 1);
        }
        // Saturating: the floating-point distance can be any `i128`.
        let delta = i128::from(ticks) - i128::from(self.ticks);
        let nanos = i128::from(self.wall_nanos).saturating_add(self.nanos_checked(delta));
        i64::try_from(nanos)
            .unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
            .max(i64::MIN + 1)
    }

    /// Nanoseconds from the anchor's reading to `ticks`, by whichever of
    /// the two ways `unix_nanos_at` takes (what the tests compare).
    #[cfg(test)]
    fn nanos_from_anchor(&self, ticks: u64) -> i128 {
        match self.nanos_within(ticks) {
            Some(nanos) => i128::from(nanos),
            None => self.nanos_checked(i128::from(ticks) - i128::from(self.ticks)),
        }
    }

    /// Nanoseconds from the anchor's reading to `ticks` in the worker's
    /// case, per record: a counter above 1 GHz (a rate under 2^64) and a
    /// distance under 2^63 ticks; `None` otherwise. The product of two
    /// 64-bit factors is then at most 2^127 - 2^63 in size, and adding
    /// 2^63 stays below 2^127: no checked 128-bit multiply (about 50
    /// instructions a record, `SIDE=worker benches/peers/callgrind.sh`).
    /// The quotient fits an `i64`: from `(2^63 - 1)(2^64 - 1) + 2^63`, below
    /// 2^127, it is at most 2^63 - 1, and from `-2^63 (2^64 - 1) + 2^63`,
    /// `-2^127 + 2^64`, at least `-2^63 + 1`. The same arithmetic as
    /// `nanos_checked`, which the tests compare.
    #[inline]
    fn nanos_within(&self, ticks: u64) -> Option<i64> {
        let delta = i64::try_from(i128::from(ticks) - i128::from(self.ticks)).ok()?;
        let rate = u64::try_from(self.rate).ok()?;
        // In `i64` range (above), so the cast cannot truncate.
        Some(((i128::from(delta) * i128::from(rate) + (1 << 63)) >> 64) as i64)
    }

    /// Nanoseconds from the anchor's reading to a tick `delta` ticks from
    /// it, for any distance and rate. Out of line: inlined, its registers
    /// made the worker's per-record conversion save and restore six more.
    #[cold]
    #[inline(never)]
    fn nanos_checked(&self, delta: i128) -> i128 {
        // Rounded to the nearest nanosecond, the same way either side of
        // the anchor (`>> 64` rounds a negative product down too), so the
        // map is monotonic across it. The product stays below 2^127 for
        // distances under 2^63 / (nanoseconds per tick) ticks: every
        // distance (under 2^64) for a counter above 2 GHz, 2^62 ticks
        // (292 years) at 500 MHz; beyond, floating point, saturating (and
        // `unix_nanos_at` clamps to what a record keeps, 1677 to 2262).
        i128::try_from(self.rate)
            .ok()
            .and_then(|rate| delta.checked_mul(rate)?.checked_add(1 << 63))
            .map_or_else(
                || (delta as f64 * self.rate as f64 / 2f64.powi(64)) as i128,
                |product| product >> 64,
            )
    }
}

/// The counter went back: a reading below an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WentBack;

/// A converting thread's readings: the latest, with the rate its anchor
/// converts at, and where the next rate's baseline starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Converter {
    latest: Option<(Reading, Rate)>,
    /// The origin, then a reading of this thread's at least
    /// [`BASELINE_NANOS`] older than the latest, or the first after a
    /// suspend.
    base: Reading,
    /// The next `base`, once it is [`BASELINE_NANOS`] old.
    pending: Option<Reading>,
}

impl Converter {
    /// A thread's converter before its first anchor.
    pub(crate) fn new(origin: Reading) -> Converter {
        Converter {
            latest: None,
            base: origin,
            pending: None,
        }
    }

    /// The anchor at `now`, a reading taken after every tick it is to
    /// convert. `known` is a rate another thread measured, for a thread
    /// with none of its own whose baseline holds a suspend.
    pub(crate) fn anchor(&mut self, now: Reading, known: Option<Rate>) -> Result<Anchor, WentBack> {
        let latest = self.latest.map_or(self.base, |(reading, _)| reading);
        if now.ticks < latest.ticks {
            return Err(WentBack);
        }
        let carried = self.latest.map(|(_, rate)| rate).or(known);
        // Across a suspend, a counter that went back may have climbed past
        // `latest` again; but it counted less than the time the system was
        // awake since (MONOTONIC's), which one that ran, stopped or not,
        // never does: less than half of it is taken for going back.
        if let Some(rate) = carried.filter(|rate| rate.per_tick != 0) {
            if now.slept > latest.slept.saturating_add(SUSPEND_NANOS) {
                let mono = |reading: Reading| reading.boot.saturating_sub(reading.slept);
                let awake = mono(now).saturating_sub(mono(latest));
                if rate.nanos_for(now.ticks - latest.ticks) < awake / 2 {
                    return Err(WentBack);
                }
            }
        }
        if let Some(pending) = self.pending {
            if now.boot.saturating_sub(pending.boot) >= BASELINE_NANOS {
                self.base = pending;
                self.pending = None;
            }
        }
        let suspended = now.slept > self.base.slept.saturating_add(SUSPEND_NANOS);
        let measured = if suspended {
            None
        } else {
            Rate::between(&self.base, &now)
        };
        let rate = match (measured, carried) {
            // A young baseline (the process's first second, or the one
            // after a suspend) gives way to a longer one carried over.
            (Some(measured), Some(carried))
                if measured.nanos < BASELINE_NANOS && measured.nanos < carried.nanos =>
            {
                carried
            }
            (Some(measured), _) => measured,
            (None, Some(carried)) => carried,
            // Across a suspend with no rate known: BOOTTIME's count of it.
            (None, None) => Rate::between(&self.base, &now).unwrap_or(Rate::NONE),
        };
        if suspended {
            self.base = now;
            self.pending = None;
        } else if self.pending.is_none()
            && now.boot.saturating_sub(self.base.boot) >= BASELINE_NANOS
        {
            self.pending = Some(now);
        }
        self.latest = Some((now, rate));
        Ok(Anchor::at(&now, rate))
    }

    /// The rate of the latest anchor.
    pub(crate) fn rate(&self) -> Option<Rate> {
        self.latest.map(|(_, rate)| rate)
    }

    /// How to convert the ticks still outstanding once the counter went
    /// back, with `now` read after it (and after ticks stopped being
    /// stamped), `origin` the process's origin and `known` as for
    /// [`anchor`](Converter::anchor).
    pub(crate) fn fallback(&self, origin: Reading, now: Reading, known: Option<Rate>) -> Fallback {
        let (last, rate) = match self.latest {
            Some((reading, rate)) => (reading, rate),
            None => (origin, known.unwrap_or(Rate::NONE)),
        };
        // Both convert any distance: the bound is gone anyway.
        let unbounded = Rate {
            ticks: u64::MAX,
            ..rate
        };
        Fallback {
            before: Anchor::at(&last, unbounded),
            after: Anchor::at(&now, unbounded),
            origin: origin.ticks,
        }
    }
}

/// The conversion of ticks stamped around the counter going back: each is
/// taken as stamped after it if below the origin (every earlier stamp is at
/// or past it) or not past the reading after it, and converted from that
/// reading; otherwise as stamped before, converted from the thread's last
/// anchor before it (or the origin). Both at the last rate known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fallback {
    before: Anchor,
    after: Anchor,
    origin: u64,
}

impl Fallback {
    /// The wall-clock time of `ticks`, as well as can be told, in
    /// nanoseconds from the Unix epoch ([`Anchor::unix_nanos_at`]).
    pub(crate) fn unix_nanos_at(&self, ticks: u64) -> i64 {
        self.anchor_for(ticks).unix_nanos_at(ticks)
    }

    fn anchor_for(&self, ticks: u64) -> &Anchor {
        if ticks < self.origin || ticks <= self.after.ticks {
            &self.after
        } else {
            &self.before
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logbus_appenders::__private_api::from_unix_nanos;
    use std::time::Duration;

    impl Anchor {
        fn wall_at(&self, ticks: u64) -> SystemTime {
            from_unix_nanos(self.unix_nanos_at(ticks))
        }
    }

    impl Fallback {
        fn wall_at(&self, ticks: u64) -> SystemTime {
            from_unix_nanos(self.unix_nanos_at(ticks))
        }
    }

    /// A 2.5 GHz counter: 0.4 ns per tick.
    const TICKS_PER_SECOND: u64 = 2_500_000_000;
    const SECOND: u64 = 1_000_000_000;
    const ORIGIN: Reading = Reading {
        ticks: 1_000_000,
        wall: SystemTime::UNIX_EPOCH,
        boot: 7_000_000_000,
        slept: 0,
    };

    fn origin() -> Reading {
        Reading {
            wall: wall(0),
            ..ORIGIN
        }
    }

    fn wall(nanos: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_nanos(nanos)
    }

    /// An exact reading `ticks_after` the origin's tick.
    fn reading(ticks_after: u64) -> Reading {
        reading_after(ORIGIN, ticks_after)
    }

    /// An exact reading `ticks_after` `origin`'s tick (at 2.5 GHz, with
    /// the wall clock counted from the test's epoch).
    fn reading_after(origin: Reading, ticks_after: u64) -> Reading {
        let nanos = ticks_after * 2 / 5;
        Reading {
            ticks: origin.ticks + ticks_after,
            wall: wall(nanos),
            boot: origin.boot + nanos,
            slept: 0,
        }
    }

    /// A thread's first anchor.
    fn first_anchor(now: Reading) -> Anchor {
        Converter::new(origin()).anchor(now, None).unwrap()
    }

    /// The signed distance from `b` to `a`, in nanoseconds.
    fn nanos_between(a: SystemTime, b: SystemTime) -> i128 {
        match a.duration_since(b) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        }
    }

    /// The newest tick `anchor` converts (binary search up to `limit`).
    fn newest_converted(anchor: &Anchor, limit: u64) -> u64 {
        let (mut newest, mut beyond) = (anchor.ticks, limit);
        while beyond - newest > 1 {
            let mid = newest + (beyond - newest) / 2;
            if anchor.converts(mid) {
                newest = mid;
            } else {
                beyond = mid;
            }
        }
        newest
    }

    #[test]
    fn ticks_older_and_newer_than_the_anchor_convert_along_the_rate() {
        let anchor = first_anchor(reading(TICKS_PER_SECOND));
        let at = |ticks_after: u64| anchor.wall_at(ORIGIN.ticks + ticks_after);
        // Older: 100 µs before the anchor, and the origin itself.
        assert_eq!(
            at(TICKS_PER_SECOND - 250_000),
            wall(1_000_000_000 - 100_000)
        );
        assert_eq!(at(0), wall(0));
        // The anchor, and newer: 1 µs after it, and 0.4 and 1.2 ns after
        // it, rounded to the nearest nanosecond.
        assert_eq!(at(TICKS_PER_SECOND), wall(1_000_000_000));
        assert_eq!(at(TICKS_PER_SECOND + 2_500), wall(1_000_001_000));
        assert_eq!(at(TICKS_PER_SECOND + 1), wall(1_000_000_000));
        assert_eq!(at(TICKS_PER_SECOND + 3), wall(1_000_000_001));
        // Before the anchor the same way: 0.4 ns and 0.8 ns before it.
        assert_eq!(at(TICKS_PER_SECOND - 1), wall(1_000_000_000));
        assert_eq!(at(TICKS_PER_SECOND - 2), wall(999_999_999));
    }

    #[test]
    fn the_map_never_decreases_across_the_anchor() {
        let anchor = first_anchor(reading(TICKS_PER_SECOND));
        let mut last = SystemTime::UNIX_EPOCH;
        for ticks in (TICKS_PER_SECOND - 5_000..TICKS_PER_SECOND + 5_000).step_by(7) {
            let time = anchor.wall_at(ORIGIN.ticks + ticks);
            assert!(time >= last, "at {ticks}");
            last = time;
        }
    }

    #[test]
    fn a_newer_tick_is_converted_up_to_one_millisecond_past_the_anchor() {
        let anchor = first_anchor(reading(TICKS_PER_SECOND));
        let past = |ticks_after: u64| ORIGIN.ticks + TICKS_PER_SECOND + ticks_after;
        // Every older tick.
        assert!(anchor.converts(ORIGIN.ticks));
        assert!(anchor.converts(0));
        // 1 ms is 2,500,000 ticks.
        assert!(anchor.converts(past(2_500_000)));
        assert!(!anchor.converts(past(2_500_001)));
    }

    #[test]
    fn a_young_anchor_converts_newer_ticks_only_as_far_as_its_baseline() {
        // 1,000 ticks (400 ns) after the origin: its rate is only as good as
        // 400 ns allow, so it converts only 1,000 ticks ahead.
        let anchor = first_anchor(reading(1_000));
        assert!(anchor.converts(ORIGIN.ticks + 2_000));
        assert!(!anchor.converts(ORIGIN.ticks + 2_001));
        // At the origin itself there is no rate: nothing newer, the anchor's own tick exactly.
        let anchor = first_anchor(reading(0));
        assert!(anchor.converts(ORIGIN.ticks));
        assert!(!anchor.converts(ORIGIN.ticks + 1));
        assert_eq!(anchor.wall_at(ORIGIN.ticks), wall(0));
    }

    /// `exact` with its wall clock off by `wall_error` and BOOTTIME by
    /// `boot_error` nanoseconds.
    fn off(exact: Reading, wall_error: i64, boot_error: i64) -> Reading {
        let wall_off = Duration::from_nanos(wall_error.unsigned_abs());
        Reading {
            wall: if wall_error >= 0 {
                exact.wall + wall_off
            } else {
                exact.wall - wall_off
            },
            boot: exact.boot.checked_add_signed(boot_error).unwrap(),
            ..exact
        }
    }

    #[test]
    fn reading_errors_stay_within_the_documented_bound() {
        // The truth: 0.4 ns per tick from the origin. Readings paired off by
        // up to `e` (the baseline's BOOTTIME, the anchor's wall and
        // BOOTTIME, each either way); every tick from the baseline to the
        // newest the anchor converts must be within 2 e_a + e_b + 1 ns of
        // the truth, and an older one within e_a + (e_a + e_b) d / B + 1 ns.
        let truth = |ticks_after: u64| wall(ticks_after * 2 / 5);
        let (e_b, e_a) = (20_i64, 30_i64);
        let signs = [
            (1, 1, 1),
            (-1, -1, -1),
            (1, -1, 1),
            (-1, 1, -1),
            (1, 1, -1),
            (-1, -1, 1),
        ];
        // As a thread's first anchor, measured from the origin ...
        for baseline in [1_000, 250_000, TICKS_PER_SECOND, 3_600 * TICKS_PER_SECOND] {
            for (base_sign, wall_sign, boot_sign) in signs {
                let base = off(origin(), 0, base_sign * e_b);
                let now = off(reading(baseline), wall_sign * e_a, boot_sign * e_a);
                let anchor = Converter::new(base).anchor(now, None).unwrap();
                let bound = i128::from(2 * e_a + e_b + 1);
                let newest =
                    newest_converted(&anchor, ORIGIN.ticks + 2 * baseline + 1) - ORIGIN.ticks;
                for t in [
                    0,
                    1,
                    baseline / 3,
                    baseline - 1,
                    baseline,
                    baseline + 1,
                    newest,
                ] {
                    let error = nanos_between(anchor.wall_at(ORIGIN.ticks + t), truth(t));
                    assert!(
                        error.abs() <= bound,
                        "baseline {baseline}, signs {base_sign}/{wall_sign}/{boot_sign}, \
                         tick {t}: off by {error} ns"
                    );
                }
            }
        }
        // ... and later from one of its own readings, a second or two old:
        // a tick older than that carries the rate's error times its age.
        for (base_sign, wall_sign, boot_sign) in signs {
            let mut converter = Converter::new(origin());
            for second in 1..=3 {
                converter
                    .anchor(
                        off(reading(second * TICKS_PER_SECOND), 0, base_sign * e_b),
                        None,
                    )
                    .unwrap();
            }
            let at = 4 * TICKS_PER_SECOND;
            let now = off(reading(at), wall_sign * e_a, boot_sign * e_a);
            let anchor = converter.anchor(now, None).unwrap();
            let baseline = converter.rate().unwrap().ticks;
            assert!(
                [TICKS_PER_SECOND, 2 * TICKS_PER_SECOND].contains(&baseline),
                "from a reading 1 or 2 s old, not the origin: {baseline}"
            );
            let newest = newest_converted(&anchor, ORIGIN.ticks + 2 * at) - ORIGIN.ticks;
            for t in [
                0,
                1,
                TICKS_PER_SECOND,
                2 * TICKS_PER_SECOND,
                at - 1,
                at,
                newest,
            ] {
                let age = (at - t.min(at)) as f64 / baseline as f64;
                let bound = (e_a + 1) as f64 + (e_a + e_b) as f64 * age.max(1.0);
                let error = nanos_between(anchor.wall_at(ORIGIN.ticks + t), truth(t));
                assert!(
                    error.abs() as f64 <= bound,
                    "signs {base_sign}/{wall_sign}/{boot_sign}, tick {t}: off by {error} ns"
                );
            }
        }
    }

    /// The kernel's clock (BOOTTIME, and the wall clock with it) as a
    /// function of the counter, by pieces: `(from tick, nanoseconds per
    /// tick)`, starting at the origin.
    fn kernel_nanos(pieces: &[(u64, f64)], ticks: u64) -> u64 {
        let mut nanos = 0.0;
        for (i, &(from, per_tick)) in pieces.iter().enumerate() {
            let to = pieces.get(i + 1).map_or(u64::MAX, |next| next.0);
            if ticks > from {
                nanos += (ticks.min(to) - from) as f64 * per_tick;
            }
        }
        nanos.round() as u64
    }

    #[test]
    fn a_slew_is_followed_within_two_seconds() {
        // The review's case: 10 s unslewed, then the kernel's clock runs
        // 8.3 % slow (chrony's fastest slew), for 10 s. A thread anchoring
        // every 10 ms; with the rate averaged since the origin, the newest
        // tick an anchor converts was off by 43 µs at the end.
        let slewed = 10 * TICKS_PER_SECOND;
        let pieces = [(0, 0.4), (slewed, 0.4 * 0.917)];
        let at = |ticks_after: u64| {
            let nanos = kernel_nanos(&pieces, ticks_after);
            Reading {
                ticks: ORIGIN.ticks + ticks_after,
                wall: wall(nanos),
                boot: ORIGIN.boot + nanos,
                slept: 0,
            }
        };
        let mut converter = Converter::new(origin());
        let step = TICKS_PER_SECOND / 100;
        for i in 1..=2_000 {
            let now = i * step;
            let anchor = converter.anchor(at(now), None).unwrap();
            let newest =
                newest_converted(&anchor, ORIGIN.ticks + now + TICKS_PER_SECOND) - ORIGIN.ticks;
            let error = nanos_between(anchor.wall_at(ORIGIN.ticks + newest), at(newest).wall);
            // The bound: df times 1 ms while the baseline straddles the
            // change (83 µs), rounding once it is past it.
            let bound = if now < slewed || now >= slewed + 2 * TICKS_PER_SECOND {
                2
            } else {
                83_000
            };
            assert!(error.abs() <= bound, "{now} ticks: off by {error} ns");
            // Older ticks: 100 µs, 10 ms and 1 s before the anchor.
            if now >= slewed + 2 * TICKS_PER_SECOND {
                for age in [250_000, step, TICKS_PER_SECOND] {
                    let t = now - age;
                    let error = nanos_between(anchor.wall_at(ORIGIN.ticks + t), at(t).wall);
                    assert!(
                        error.abs() <= 2,
                        "{now} ticks, {age} before: off by {error} ns"
                    );
                }
            }
        }
    }

    /// One hour up, anchoring every second; then a 10 h suspend through
    /// which the counter runs, which the kernel measured 0.7 s long.
    struct Suspend {
        converter: Converter,
        /// The readings at suspend and just after resume.
        resumed: Reading,
        /// The truth after the resume: the kernel's clock at a tick.
        after: fn(u64) -> SystemTime,
    }

    const HOUR: u64 = 3_600 * TICKS_PER_SECOND;
    const RTC_ERROR: u64 = 700_000_000;

    fn suspend() -> Suspend {
        let mut converter = Converter::new(origin());
        for second in 1..=3_600 {
            converter
                .anchor(reading(second * TICKS_PER_SECOND), None)
                .unwrap();
        }
        // The kernel's clocks after the resume: BOOTTIME and the wall clock
        // gained 10 h + 0.7 s while the counter counted 10 h; MONOTONIC did
        // not move.
        fn after(ticks: u64) -> SystemTime {
            let nanos = (ticks - ORIGIN.ticks) * 2 / 5 + RTC_ERROR;
            wall(nanos)
        }
        let ticks = 11 * HOUR + TICKS_PER_SECOND / 1_000;
        let nanos = (ticks * 2 / 5) + RTC_ERROR;
        let resumed = Reading {
            ticks: ORIGIN.ticks + ticks,
            wall: wall(nanos),
            boot: ORIGIN.boot + nanos,
            slept: 10 * 3_600 * SECOND + RTC_ERROR,
        };
        Suspend {
            converter,
            resumed,
            after,
        }
    }

    #[test]
    fn after_a_suspend_a_thread_keeps_its_rate() {
        // The review's case: with the rate from MONOTONIC since the origin,
        // a record 100 µs old was off by 91 µs, the newest tick by 10 ms.
        let Suspend {
            mut converter,
            resumed,
            after,
        } = suspend();
        let anchor = converter.anchor(resumed, None).unwrap();
        let made = resumed.ticks - 250_000;
        let error = nanos_between(anchor.wall_at(made), after(made));
        assert!(error.abs() <= 1, "100 µs old: off by {error} ns");
        let newest = newest_converted(&anchor, resumed.ticks + TICKS_PER_SECOND);
        assert_eq!(newest, resumed.ticks + 2_500_000, "1 ms ahead");
        let error = nanos_between(anchor.wall_at(newest), after(newest));
        assert!(error.abs() <= 1, "the newest: off by {error} ns");
        // The baseline starts again after the suspend: the rate is carried
        // until it is a second long, then measured from it, exact in both.
        for ms in 1..=3_000 {
            let ticks = resumed.ticks + ms * 2_500_000;
            let nanos = (ticks - ORIGIN.ticks) * 2 / 5 + RTC_ERROR;
            let now = Reading {
                ticks,
                wall: wall(nanos),
                boot: ORIGIN.boot + nanos,
                slept: resumed.slept,
            };
            let anchor = converter.anchor(now, None).unwrap();
            let nanos = converter.rate().unwrap().nanos;
            assert!(
                nanos == 3_600 * SECOND - SECOND || nanos >= SECOND,
                "{ms} ms: a baseline of {nanos} ns"
            );
            let newest = newest_converted(&anchor, ticks + TICKS_PER_SECOND);
            let error = nanos_between(anchor.wall_at(newest), after(newest));
            assert!(error.abs() <= 1, "{ms} ms after: off by {error} ns");
        }
    }

    #[test]
    fn after_a_suspend_a_new_thread_takes_the_last_rate_known() {
        let Suspend {
            converter,
            resumed,
            after,
        } = suspend();
        let known = converter
            .rate()
            .and_then(Rate::to_bits)
            .and_then(Rate::from_bits);
        assert!(known.is_some(), "an hour's rate is worth sharing");
        let anchor = Converter::new(origin()).anchor(resumed, known).unwrap();
        for t in [
            resumed.ticks - 250_000,
            newest_converted(&anchor, resumed.ticks + HOUR),
        ] {
            let error = nanos_between(anchor.wall_at(t), after(t));
            assert!(error.abs() <= 1, "tick {t}: off by {error} ns");
        }
        // With none known, BOOTTIME's count across the suspend: off by the
        // RTC's error over the baseline, 0.7 s in 11 h, 18 ppm.
        let anchor = Converter::new(origin()).anchor(resumed, None).unwrap();
        let t = newest_converted(&anchor, resumed.ticks + HOUR);
        let error = nanos_between(anchor.wall_at(t), after(t));
        assert!(error.abs() <= 18, "the newest: off by {error} ns");
    }

    /// A process started an hour after boot, and an exact reading of the
    /// counter's timeline before a reset, `ticks_after` its origin.
    const LATE_ORIGIN: Reading = Reading {
        ticks: HOUR,
        wall: SystemTime::UNIX_EPOCH,
        boot: 3_600 * SECOND,
        slept: 0,
    };

    fn late(ticks_after: u64) -> Reading {
        reading_after(LATE_ORIGIN, ticks_after)
    }

    #[test]
    fn the_counter_going_back_is_noticed_and_both_sides_converted() {
        // The review's case: the counter reset by a resume from S3, below
        // the origin; the rate was 0 and every newer tick re-anchored.
        let origin = late(0);
        let mut converter = Converter::new(origin);
        converter.anchor(late(HOUR), None).unwrap();
        let before = late(2 * HOUR);
        let anchor = converter.anchor(before, None).unwrap();
        // A 5 h suspend, and 10 s of counting after the reset.
        let nanos = 7 * 3_600 * SECOND + 10 * SECOND;
        let now = Reading {
            ticks: 10 * TICKS_PER_SECOND,
            wall: wall(nanos),
            boot: LATE_ORIGIN.boot + nanos,
            slept: 5 * 3_600 * SECOND,
        };
        assert_eq!(converter.anchor(now, None), Err(WentBack));
        assert_eq!(Converter::new(origin).anchor(now, None), Err(WentBack));
        let fallback = converter.fallback(origin, now, None);
        // After the reset: 50 µs before the reading, and 1 µs after it.
        let made = now.ticks - 125_000;
        assert_eq!(fallback.wall_at(made), now.wall - Duration::from_micros(50));
        let made = now.ticks + 2_500;
        assert_eq!(fallback.wall_at(made), now.wall + Duration::from_micros(1));
        // Before it: 1 µs before the last anchor, and 1 µs past it.
        let made = before.ticks - 2_500;
        assert_eq!(fallback.wall_at(made), anchor.wall_at(made));
        assert_eq!(
            fallback.wall_at(made),
            before.wall - Duration::from_micros(1)
        );
        let made = before.ticks + 2_500;
        assert_eq!(
            fallback.wall_at(made),
            before.wall + Duration::from_micros(1)
        );
        // A thread that had no anchor converts the older side from the
        // origin, at the rate another thread knew.
        let known = converter
            .rate()
            .and_then(Rate::to_bits)
            .and_then(Rate::from_bits);
        let fallback = Converter::new(origin).fallback(origin, now, known);
        assert_eq!(fallback.wall_at(before.ticks), before.wall);
        let made = now.ticks - 125_000;
        assert_eq!(fallback.wall_at(made), now.wall - Duration::from_micros(50));
    }

    #[test]
    fn a_counter_that_went_back_and_climbed_past_the_latest_reading_is_noticed() {
        // The latest reading 10 min after the origin, 1 min before a
        // suspend that reset the counter; the first conversion after it
        // comes 2 h later, the counter well past that reading again.
        let mut converter = Converter::new(late(0));
        let latest = late(10 * 60 * TICKS_PER_SECOND);
        converter.anchor(latest, None).unwrap();
        let awake = (10 + 1) * 60 * SECOND + 7_200 * SECOND;
        let nanos = awake + 3_600 * SECOND;
        let now = Reading {
            ticks: 7_200 * TICKS_PER_SECOND,
            wall: wall(nanos),
            boot: LATE_ORIGIN.boot + nanos,
            slept: 3_600 * SECOND,
        };
        assert!(now.ticks > latest.ticks);
        assert_eq!(converter.anchor(now, None), Err(WentBack));
        // A counter that ran through the suspend, or stopped in it, did not.
        for counted in [nanos - 10 * 60 * SECOND, awake - 10 * 60 * SECOND] {
            let mut converter = Converter::new(late(0));
            converter.anchor(latest, None).unwrap();
            let ran = Reading {
                ticks: latest.ticks + counted / 2 * 5,
                ..now
            };
            assert!(converter.anchor(ran, None).is_ok(), "counted {counted} ns");
        }
    }

    #[test]
    fn a_rate_shared_in_one_word_keeps_its_precision() {
        let mut converter = Converter::new(origin());
        converter
            .anchor(reading(TICKS_PER_SECOND / 2), None)
            .unwrap();
        let young = converter.rate().unwrap();
        assert_eq!(young.to_bits(), None, "half a second: not shared");
        converter.anchor(reading(HOUR), None).unwrap();
        let rate = converter.rate().unwrap();
        let shared = Rate::from_bits(rate.to_bits().unwrap()).unwrap();
        assert!(rate.per_tick - shared.per_tick < 1 << 16);
        assert_eq!(Rate::from_bits(0), None);
    }

    #[test]
    fn a_distance_too_large_for_the_fixed_point_saturates_instead_of_wrapping() {
        // A 500 MHz counter (2 ns per tick): exact up to 2^62 ticks from
        // the anchor; 2^64 overflow the product.
        let now = Reading {
            ticks: ORIGIN.ticks + 1_000_000,
            wall: wall(2_000_000),
            boot: ORIGIN.boot + 2_000_000,
            slept: 0,
        };
        let anchor = first_anchor(now);
        assert_eq!(anchor.wall_at(ORIGIN.ticks + 2_000_000), wall(4_000_000));
        // The last exact distance, at the product's limit.
        let exact: u64 = (1 << 62) - 1;
        assert_eq!(
            anchor.nanos_from_anchor(now.ticks + exact),
            i128::from(exact) * 2
        );
        // Past it, floating point: the distance still at least doubles.
        let far = u64::MAX - now.ticks;
        assert!(anchor.nanos_from_anchor(u64::MAX) >= i128::from(far) * 2 - (1 << 20));
        // 2^61 ticks past the anchor: 2^62 ns (146 years), in range.
        assert_eq!(
            anchor.unix_nanos_at(now.ticks + (1 << 61)),
            unix_nanos(wall(2_000_000)) + (1 << 62)
        );
        // The farthest tick is beyond 2262: the latest time a record
        // keeps, not a wrapped one.
        assert_eq!(anchor.unix_nanos_at(u64::MAX), i64::MAX);
        assert!(anchor.wall_at(0) <= wall(0));
    }

    #[test]
    fn an_anchor_is_kept_as_words_whole() {
        let anchor = Anchor {
            ticks: u64::MAX - 1,
            wall_nanos: -5,
            rate: (3 << 64) + 7,
            ahead_until: u64::MAX,
        };
        assert_eq!(Anchor::from_words(anchor.to_words()), anchor);
        let rate = Rate::between(&reading(0), &reading(TICKS_PER_SECOND)).unwrap();
        let at = Anchor::at(&reading(2 * TICKS_PER_SECOND), rate);
        assert_eq!(Anchor::from_words(at.to_words()), at);
    }

    /// An epoch is the largest power of two of ticks within 0.5 ms and the
    /// rate's baseline, so that every anchor with a baseline as long
    /// reaches across one.
    #[test]
    fn an_epoch_is_a_power_of_two_of_ticks_within_half_a_millisecond() {
        // 2.5 GHz: 0.5 ms is 1,250,000 ticks; 2^20 = 1,048,576.
        let rate = Rate::between(&reading(0), &reading(TICKS_PER_SECOND / 1000)).unwrap();
        assert_eq!(rate.epoch_shift(), Some(20));
        let anchor = Anchor::at(&reading(5 * TICKS_PER_SECOND), rate);
        assert!(anchor.converts(anchor.ticks() + (1 << 20)));
        // Measured over exactly 0.5 ms: the same epoch, within it.
        let half = Rate::between(&reading(0), &reading(TICKS_PER_SECOND / 2000)).unwrap();
        assert_eq!(half.epoch_shift(), Some(20));
        // A rate measured over less than 0.5 ms makes no epoch, and no
        // rate none.
        let short = Rate::between(&reading(0), &reading(TICKS_PER_SECOND / 4000)).unwrap();
        assert_eq!(short.epoch_shift(), None);
        assert_eq!(Rate::NONE.epoch_shift(), None);
        // A 1 GHz counter: 500,000 ticks; 2^18 = 262,144.
        let later = Reading {
            ticks: ORIGIN.ticks + 1_000_000,
            boot: ORIGIN.boot + 1_000_000,
            ..ORIGIN
        };
        let slow = Rate::between(&ORIGIN, &later).unwrap();
        assert_eq!(slow.epoch_shift(), Some(18));
    }

    #[test]
    fn conversions_clamp_to_what_a_record_keeps_at_both_ends() {
        // An anchor 1 ns after the earliest time kept: tick 0, a second
        // before it, converts to the earliest time, not before it.
        let early = Anchor {
            ticks: 1_000_000_000,
            wall_nanos: i64::MIN + 2,
            rate: 1 << 64, // 1 ns per tick
            ahead_until: u64::MAX,
        };
        assert_eq!(early.unix_nanos_at(999_999_999), i64::MIN + 1);
        assert_eq!(early.unix_nanos_at(0), i64::MIN + 1);
        // A rate no real counter has (2^64 ns per tick), far from the
        // anchor: the floating-point distance saturates the sum instead of
        // overflowing it (a panic in a debug build, a wrap to 1677 in a
        // release one).
        let absurd = Anchor {
            ticks: 54_906_773_099,
            wall_nanos: 4_359_591_138_665_871_449,
            rate: u128::MAX,
            ahead_until: u64::MAX,
        };
        assert_eq!(absurd.unix_nanos_at(11_905_767_739_756_892_008), i64::MAX);
        assert_eq!(absurd.unix_nanos_at(0), i64::MIN + 1);
    }

    #[test]
    fn above_2_ghz_every_distance_is_exact_and_the_map_monotonic() {
        // 4 GHz: 0.25 ns per tick; the farthest tick, 2^64 - 1, exact.
        let now = Reading {
            ticks: 4_000_000_000,
            wall: wall(SECOND),
            boot: ORIGIN.boot + SECOND,
            slept: 0,
        };
        let origin = Reading {
            ticks: 0,
            wall: wall(0),
            ..ORIGIN
        };
        let anchor = Converter::new(origin).anchor(now, None).unwrap();
        let expected = wall(SECOND) + Duration::from_nanos((u64::MAX - now.ticks).div_ceil(4));
        assert_eq!(anchor.wall_at(u64::MAX), expected);
        let mut last = anchor.wall_at(0);
        for k in 0..=64 {
            let tick = 1u64.checked_shl(k).unwrap_or(u64::MAX);
            let time = anchor.wall_at(tick);
            assert!(time >= last, "at 2^{k}");
            last = time;
        }
    }

    /// The worker's unchecked product is the checked one wherever it is
    /// taken: distances either side of the anchor up to 2^63 ticks, rates
    /// up to 2^64 - 1 (a counter just above 1 GHz).
    #[test]
    fn the_unchecked_product_is_the_checked_one() {
        let rates = [
            1u128,
            3,
            1 << 32,
            (1 << 64) / 3,
            (1 << 63) + 12_345,
            u64::MAX as u128,
        ];
        let distances = [
            0i128,
            1,
            -1,
            999,
            -1_000_001,
            1 << 40,
            -(1 << 40),
            i64::MAX as i128,
            i64::MIN as i128,
        ];
        for &rate in &rates {
            for &anchor_ticks in &[0u64, 1 << 62, u64::MAX - 5, 1 << 63] {
                let anchor = Anchor {
                    ticks: anchor_ticks,
                    wall_nanos: 0,
                    rate,
                    ahead_until: u64::MAX,
                };
                for &delta in &distances {
                    let Ok(ticks) = u64::try_from(i128::from(anchor_ticks) + delta) else {
                        continue;
                    };
                    let delta = i128::from(ticks) - i128::from(anchor_ticks);
                    assert_eq!(
                        anchor.nanos_from_anchor(ticks),
                        anchor.nanos_checked(delta),
                        "rate {rate}, anchor {anchor_ticks}, delta {delta}"
                    );
                }
            }
        }
    }
}
