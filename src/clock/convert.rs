//! From a tick count to the wall clock: pure arithmetic on clock readings
//! taken elsewhere (`tsc.rs`), and the argument for its accuracy.
//!
//! # The scheme
//!
//! Once per process, the [`Origin`]: a tick count and `CLOCK_MONOTONIC`
//! read together. Per converting thread, an [`Anchor`]: a tick count, the
//! wall clock (`CLOCK_REALTIME`) and `CLOCK_MONOTONIC` read together, and
//! the rate from the origin to it, in nanoseconds per tick:
//!
//! ```text
//! rate = (mono_a - mono_0) / (ticks_a - ticks_0)          (fixed point, 64 fraction bits)
//! wall(t) = wall_a + (t - ticks_a) * rate                 (signed: t may be older)
//! ```
//!
//! The rate comes from the monotonic clock, which the kernel never steps,
//! so setting the wall clock does not skew it; the wall clock enters only
//! as the anchor's offset. An anchor converts every tick older than itself
//! and newer ones up to `min(1 ms, ticks_a - ticks_0)` ticks past it
//! ([`Anchor::converts`]); a newer tick makes the thread read a new anchor,
//! after the tick, so the tick is then older than its anchor.
//!
//! No thread shares an anchor, so there is no protocol between threads
//! beyond the origin, written once before any tick is stamped.
//!
//! # Accuracy
//!
//! A reading pairs a tick count with clock values read between two tick
//! reads (a *bracket*, `tsc.rs`), and takes the bracket's midpoint: each
//! value is then off by at most `e`, half the bracket's width, in
//! nanoseconds (`e_a` for the anchor, `e_0` for the origin; about 25 ns on
//! the 2.6 GHz EPYC this was written on, whose narrowest of four brackets
//! is 130 ticks). Suppose the kernel's wall clock runs at its monotonic
//! clock's rate and that rate is a constant number of ticks (below, what
//! breaks this). Then:
//!
//! - the rate's error, times the baseline `ticks_a - ticks_0`, is the
//!   error of `mono_a - mono_0`: at most `e_a + e_0`;
//! - converting `t` adds the offset's error `e_a` and the rate's error
//!   times the distance `|t - ticks_a|`. For a tick older than the anchor,
//!   `|t - ticks_a| <= ticks_a - ticks_0` (every tick was stamped after
//!   the origin); for a newer one, the re-anchor rule keeps
//!   `t - ticks_a <= ticks_a - ticks_0`. Either way the distance is at
//!   most the baseline, so the rate contributes at most `e_a + e_0`;
//! - the fixed point rounds twice, less than 1 ns together.
//!
//! So `|wall(t) - the wall clock at t| <= 2 e_a + e_0 + 1 ns`, about
//! 76 ns here: well under the microsecond that text and JSON timestamps
//! print. The error is mostly the same sign and size for every anchor
//! (where in the bracket the kernel reads the counter does not move), so
//! two anchors disagree by less than that.
//!
//! What breaks it:
//!
//! - **A wall-clock step** (`settimeofday`, NTP's step at boot) between
//!   a tick and its anchor: the record is placed on the timeline of the
//!   anchor, before or after the step. A thread re-anchors for the first
//!   tick more than 1 ms past its anchor, so a step reaches conversions
//!   of records made within 1 ms of ticks after it.
//! - **A change of NTP's frequency correction.** The rate is the average
//!   over the process's life; the true one over `[t, ticks_a]` differs by
//!   the change in the kernel's correction, `df`, which adds
//!   `|t - ticks_a| * df`: for a record converted promptly (its age, or
//!   1 ms for a newer tick) and a steady NTP (`df` under 1 ppm) under
//!   1 ns; at the kernel's largest correction (500 ppm) 0.5 µs per
//!   millisecond of age. A record first read long after it was made (a
//!   stalled appender, a journal replay of a record nothing had read)
//!   carries its age times `df`.
//! - **A system suspend** stops `CLOCK_MONOTONIC` but not necessarily the
//!   counter, which lowers the rate by the suspended share of the
//!   process's life (for the 1 ms a newer tick may be ahead: 0.5 ms after
//!   a suspend as long as the process had run). `LOGBUS_TSC=off` stamps
//!   the wall clock instead.
//!
//! The counter itself is trusted only where the kernel trusts it (`tsc.rs`),
//! so it is the same on every core and does not stop or change rate.

use std::time::{Duration, SystemTime};

/// The most a newer tick may be past its anchor, in nanoseconds: bounds
/// how long a wall-clock step goes unnoticed.
const MAX_AHEAD_NANOS: u64 = 1_000_000;

/// The process's first reading: the start of every rate's baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) ticks: u64,
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    pub(crate) mono: u64,
}

/// The counter and both clocks, read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) ticks: u64,
    pub(crate) wall: SystemTime,
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    pub(crate) mono: u64,
}

/// A converting thread's reading and the rate from the origin to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    ticks: u64,
    wall: SystemTime,
    /// Nanoseconds per tick, times 2^64; 0 when the baseline is empty.
    rate: u128,
    /// The newest tick this anchor converts.
    ahead_until: u64,
}

impl Anchor {
    /// The anchor at `now`, with its rate measured from `origin`.
    pub(crate) fn new(origin: Origin, now: Reading) -> Anchor {
        let baseline = now.ticks.saturating_sub(origin.ticks);
        let elapsed = now.mono.saturating_sub(origin.mono);
        // Rounded to the nearest; below 2^128, as `elapsed` < 2^64.
        let rate = match baseline {
            0 => 0,
            ticks => ((u128::from(elapsed) << 64) + u128::from(ticks / 2)) / u128::from(ticks),
        };
        let max_ahead = match rate {
            0 => 0,
            rate => u64::try_from((u128::from(MAX_AHEAD_NANOS) << 64) / rate).unwrap_or(u64::MAX),
        };
        Anchor {
            ticks: now.ticks,
            wall: now.wall,
            rate,
            ahead_until: now.ticks.saturating_add(max_ahead.min(baseline)),
        }
    }

    /// Whether this anchor converts `ticks` within the bound: every tick
    /// older than the anchor, and newer ones up to `min(1 ms, baseline)`
    /// past it. `false` means: read a new anchor first.
    pub(crate) fn converts(&self, ticks: u64) -> bool {
        ticks <= self.ahead_until
    }

    /// The wall-clock time of `ticks`: non-decreasing in `ticks`.
    pub(crate) fn wall_at(&self, ticks: u64) -> SystemTime {
        let delta = i128::from(ticks) - i128::from(self.ticks);
        // Rounded to the nearest nanosecond, the same way either side of
        // the anchor (`>> 64` rounds a negative product down too), so the
        // map is monotonic across it. The product overflows only 2^61 ticks
        // (24 years at 3 GHz) from the anchor.
        let nanos = i128::try_from(self.rate)
            .ok()
            .and_then(|rate| delta.checked_mul(rate)?.checked_add(1 << 63))
            .map_or_else(
                || (delta as f64 * self.rate as f64 / 2f64.powi(64)) as i128,
                |product| product >> 64,
            );
        let offset = Duration::from_nanos(u64::try_from(nanos.unsigned_abs()).unwrap_or(u64::MAX));
        let wall = if nanos >= 0 {
            self.wall.checked_add(offset)
        } else {
            self.wall.checked_sub(offset)
        };
        wall.unwrap_or(self.wall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2.5 GHz counter: 0.4 ns per tick.
    const TICKS_PER_SECOND: u64 = 2_500_000_000;
    const ORIGIN: Origin = Origin {
        ticks: 1_000_000,
        mono: 7_000_000_000,
    };

    fn wall(nanos: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_nanos(nanos)
    }

    /// A reading `seconds` after the origin, exact.
    fn reading(ticks_after: u64) -> Reading {
        let nanos = ticks_after * 2 / 5;
        Reading {
            ticks: ORIGIN.ticks + ticks_after,
            wall: wall(nanos),
            mono: ORIGIN.mono + nanos,
        }
    }

    /// The signed distance from `b` to `a`, in nanoseconds.
    fn nanos_between(a: SystemTime, b: SystemTime) -> i128 {
        match a.duration_since(b) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        }
    }

    #[test]
    fn ticks_older_and_newer_than_the_anchor_convert_along_the_rate() {
        let anchor = Anchor::new(ORIGIN, reading(TICKS_PER_SECOND));
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
        let anchor = Anchor::new(ORIGIN, reading(TICKS_PER_SECOND));
        let mut last = SystemTime::UNIX_EPOCH;
        for ticks in (TICKS_PER_SECOND - 5_000..TICKS_PER_SECOND + 5_000).step_by(7) {
            let time = anchor.wall_at(ORIGIN.ticks + ticks);
            assert!(time >= last, "at {ticks}");
            last = time;
        }
    }

    #[test]
    fn a_newer_tick_is_converted_up_to_one_millisecond_past_the_anchor() {
        let anchor = Anchor::new(ORIGIN, reading(TICKS_PER_SECOND));
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
        let anchor = Anchor::new(ORIGIN, reading(1_000));
        assert!(anchor.converts(ORIGIN.ticks + 2_000));
        assert!(!anchor.converts(ORIGIN.ticks + 2_001));
        // At the origin itself there is no rate: nothing newer, the anchor's own tick exactly.
        let anchor = Anchor::new(ORIGIN, reading(0));
        assert!(anchor.converts(ORIGIN.ticks));
        assert!(!anchor.converts(ORIGIN.ticks + 1));
        assert_eq!(anchor.wall_at(ORIGIN.ticks), wall(0));
    }

    #[test]
    fn reading_errors_stay_within_the_documented_bound() {
        // The truth: 0.4 ns per tick from the origin. Readings paired off by
        // up to `e` (the origin's mono, the anchor's wall and mono, each
        // either way); every tick from the origin to 1 ms past the anchor
        // must convert within 2 e_a + e_0 + 1 ns of the truth.
        let truth = |ticks_after: u64| wall(ticks_after * 2 / 5);
        let (e_0, e_a) = (20_i64, 30_i64);
        let shift = |value: u64, by: i64| value.checked_add_signed(by).unwrap();
        for baseline in [1_000, 250_000, TICKS_PER_SECOND, 3_600 * TICKS_PER_SECOND] {
            for (origin_error, wall_error, mono_error) in [
                (e_0, e_a, e_a),
                (-e_0, -e_a, -e_a),
                (e_0, -e_a, e_a),
                (-e_0, e_a, -e_a),
                (e_0, e_a, -e_a),
                (-e_0, -e_a, e_a),
            ] {
                let origin = Origin {
                    mono: shift(ORIGIN.mono, origin_error),
                    ..ORIGIN
                };
                let exact = reading(baseline);
                let wall_off = Duration::from_nanos(wall_error.unsigned_abs());
                let now = Reading {
                    wall: if wall_error >= 0 {
                        exact.wall + wall_off
                    } else {
                        exact.wall - wall_off
                    },
                    mono: shift(exact.mono, mono_error),
                    ..exact
                };
                let anchor = Anchor::new(origin, now);
                let bound = i128::from(2 * e_a + e_0 + 1);
                // The newest tick the anchor converts (binary search).
                let (mut newest, mut beyond) = (baseline, 2 * baseline + 1);
                while beyond - newest > 1 {
                    let mid = newest + (beyond - newest) / 2;
                    if anchor.converts(ORIGIN.ticks + mid) {
                        newest = mid;
                    } else {
                        beyond = mid;
                    }
                }
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
                        "baseline {baseline}, errors {origin_error}/{wall_error}/{mono_error}, \
                         tick {t}: off by {error} ns"
                    );
                }
            }
        }
    }

    #[test]
    fn a_distance_too_large_for_the_fixed_point_saturates_instead_of_wrapping() {
        // A 500 MHz counter (2 ns per tick): 2^64 ticks overflow the product.
        let now = Reading {
            ticks: ORIGIN.ticks + 1_000_000,
            wall: wall(2_000_000),
            mono: ORIGIN.mono + 2_000_000,
        };
        let anchor = Anchor::new(ORIGIN, now);
        assert_eq!(anchor.wall_at(ORIGIN.ticks + 2_000_000), wall(4_000_000));
        let far = anchor.wall_at(u64::MAX);
        let years = far.duration_since(wall(0)).unwrap().as_secs() / (365 * 24 * 3600);
        assert!(
            years >= 584,
            "{years} years: the offset saturates at u64::MAX ns"
        );
        assert!(anchor.wall_at(0) <= wall(0));
    }
}
