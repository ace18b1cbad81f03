//! A record's time: the stamp its producer took, and the wall-clock time
//! that stamp converts to, kept once read.
//!
//! A producer may stamp a record with a counter cheaper to read than the
//! wall clock (logbus reads the CPU's time-stamp counter where the kernel
//! trusts it) and leave the conversion to whoever reads [`Record::time`]
//! first, usually a worker rendering it, off the caller's thread. The first
//! conversion is kept, so a record has one time: every later read, from any
//! thread, returns the same value, as a `SystemTime` field would.
//!
//! [`Record::time`]: super::Record::time

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// When a record was made, as its producer read the clock.
#[derive(Clone, Copy, Debug)]
pub enum Stamp {
    /// The wall clock itself.
    Wall(SystemTime),
    /// A raw tick count, and the producer's function that converts a tick
    /// count to the wall clock, as signed nanoseconds since the Unix epoch
    /// ([`unix_nanos`] of the time: the renderers need nothing else, and no
    /// `SystemTime` arithmetic). It travels with the stamp (one pointer) so
    /// that no global registration can be missing, and a forked child finds
    /// nothing half-initialised.
    Ticks(u64, fn(u64) -> i64),
}

/// A [`Stamp`] and, for ticks, the wall-clock time of its first conversion.
pub(crate) struct Time {
    stamp: Stamp,
    /// For a `Ticks` stamp: the first conversion, in nanoseconds from the
    /// Unix epoch (signed, as `i64` bits), or [`UNSET`] before it. A
    /// conversion beyond what the other values span (before 1677 or after
    /// 2262) is kept as the nearest one they do, so every conversion is
    /// kept. Relaxed: the value is the whole message, it guards no other
    /// memory; the compare-exchange from `UNSET` makes the first conversion
    /// stored the one every reader returns.
    wall: AtomicU64,
}

/// No conversion yet: `i64::MIN` nanoseconds, which no kept time is.
const UNSET: u64 = i64::MIN as u64;

/// `time` in signed nanoseconds from the Unix epoch, clamped to
/// `i64::MIN + 1 ..= i64::MAX` (before 1677 or after 2262: the nearest end).
#[must_use]
pub fn unix_nanos(time: SystemTime) -> i64 {
    let nanos = match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => {
            i64::try_from(before.duration().as_nanos()).map_or(i64::MIN + 1, |nanos| -nanos)
        }
    };
    nanos.max(i64::MIN + 1)
}

/// The time `nanos` nanoseconds from the Unix epoch (negative: before it),
/// as `unix_nanos` gives it.
#[must_use]
pub fn from_unix_nanos(nanos: i64) -> SystemTime {
    let offset = Duration::from_nanos(nanos.unsigned_abs());
    if nanos >= 0 {
        SystemTime::UNIX_EPOCH + offset
    } else {
        SystemTime::UNIX_EPOCH - offset
    }
}

/// What is kept of a conversion (nanoseconds from the epoch): `i64::MIN`
/// is [`UNSET`], so the nearest time that is not.
#[inline]
fn kept(converted: i64) -> u64 {
    converted.max(i64::MIN + 1) as u64
}

/// The time a kept value stands for.
fn from_kept(kept: u64) -> SystemTime {
    from_unix_nanos(kept as i64)
}

impl Time {
    pub(crate) const fn new(stamp: Stamp) -> Time {
        Time {
            stamp,
            wall: AtomicU64::new(UNSET),
        }
    }

    /// Replaces the stamp (a record being reused), forgetting the old
    /// conversion.
    pub(crate) fn set(&mut self, stamp: Stamp) {
        self.stamp = stamp;
        *self.wall.get_mut() = UNSET;
    }

    /// The wall-clock time: the stamp's own, or the conversion of its
    /// ticks, the first one made.
    #[inline]
    pub(crate) fn get(&self) -> SystemTime {
        match self.stamp {
            Stamp::Wall(time) => time,
            Stamp::Ticks(ticks, convert) => {
                let kept = self.wall.load(Ordering::Relaxed);
                if kept != UNSET {
                    return from_kept(kept);
                }
                from_kept(self.keep(convert(ticks)))
            }
        }
    }

    /// The time as signed nanoseconds since the Unix epoch (what is kept,
    /// so a renderer needs no `SystemTime` arithmetic), converted and kept
    /// on first read as [`get`](Time::get) does.
    /// `None` for a wall-clock stamp outside what 64-bit nanoseconds hold
    /// (before 1677 or after 2262), which only a record built with such a
    /// time has.
    #[inline]
    pub(crate) fn nanos(&self) -> Option<i64> {
        match self.stamp {
            Stamp::Wall(time) => {
                let nanos = unix_nanos(time);
                (nanos != i64::MAX && nanos != i64::MIN + 1).then_some(nanos)
            }
            Stamp::Ticks(ticks, convert) => {
                let kept = self.wall.load(Ordering::Relaxed);
                if kept != UNSET {
                    return Some(kept as i64);
                }
                Some(self.keep(convert(ticks)) as i64)
            }
        }
    }

    /// Converts a `Ticks` stamp not converted yet and keeps the result with
    /// a plain store, for a record no other thread can read yet (a worker's
    /// own, rebuilt from a lane's slot, before its appender gets it): with
    /// no other reader, the compare-and-swap that makes the first
    /// conversion the kept one is not needed (a read-modify-write a record,
    /// which on x86 waits for the thread's earlier stores to drain). On a
    /// record another thread reads meanwhile, each could keep its own
    /// conversion (a few nanoseconds apart, never a torn value: the cell is
    /// atomic), so that is the caller's to rule out.
    #[inline]
    pub(crate) fn settle(&self) {
        if let Stamp::Ticks(ticks, convert) = self.stamp {
            // Relaxed: as for every access to `wall`.
            if self.wall.load(Ordering::Relaxed) == UNSET {
                self.wall.store(kept(convert(ticks)), Ordering::Relaxed);
            }
        }
    }

    /// Keeps `converted` (nanoseconds from the epoch) unless another reader
    /// kept its conversion first, and returns the kept one.
    #[cold]
    fn keep(&self, converted: i64) -> u64 {
        let nanos = kept(converted);
        match self
            .wall
            .compare_exchange(UNSET, nanos, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => nanos,
            Err(first) => first,
        }
    }
}

/// A clone has the original's time: the stamp is converted first (and the
/// conversion kept in the original), then copied. Copying an unset cache
/// would let the clone convert on its own, on another thread with another
/// anchor, and print a time some nanoseconds off the original's.
impl Clone for Time {
    fn clone(&self) -> Time {
        self.get();
        Time {
            stamp: self.stamp,
            // Relaxed: as for every access to `wall`; `get` above kept the
            // conversion, and this thread reads its own store or a later one.
            wall: AtomicU64::new(self.wall.load(Ordering::Relaxed)),
        }
    }
}

/// The converted time, not the raw ticks.
impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    static CONVERSIONS: AtomicUsize = AtomicUsize::new(0);

    /// One tick is one second after the epoch, plus a counter of calls.
    fn seconds(ticks: u64) -> i64 {
        CONVERSIONS.fetch_add(1, Ordering::Relaxed);
        ticks as i64 * 1_000_000_000
    }

    /// Each call a nanosecond later, as a conversion of the same ticks on
    /// another thread (another anchor) may be.
    fn drifting(ticks: u64) -> i64 {
        let calls = CONVERSIONS.fetch_add(1, Ordering::Relaxed) as i64;
        ticks as i64 * 1_000_000_000 + calls
    }

    #[test]
    fn a_wall_stamp_is_its_own_time() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_234);
        assert_eq!(Time::new(Stamp::Wall(at)).get(), at);
    }

    #[test]
    fn ticks_are_converted_once_and_the_first_conversion_kept() {
        let time = Time::new(Stamp::Ticks(1_700_000_000, drifting));
        let first = time.get();
        assert_eq!(time.get(), first);
        assert_eq!(time.clone().get(), first, "a clone keeps the conversion");
        assert_eq!(format!("{time:?}"), format!("{first:?}"), "Debug prints it");
        let mut reused = time.clone();
        reused.set(Stamp::Ticks(1_800_000_000, seconds));
        assert_eq!(
            reused.get(),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
        );
    }

    #[test]
    fn a_clone_made_before_the_first_read_has_the_original_time() {
        // Cloned before any read, then the original and the clone read on
        // two threads: each thread's conversion would differ (`drifting`),
        // so they agree only if the clone carries the original's.
        let original = Time::new(Stamp::Ticks(1_700_000_000, drifting));
        let clone = original.clone();
        let (a, b) = std::thread::scope(|scope| {
            let a = scope.spawn(|| original.get());
            let b = scope.spawn(|| clone.get());
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!(a, b);
    }

    /// 400 years: beyond what 64 bits of nanoseconds span either way.
    const FAR: Duration = Duration::from_secs(400 * 365 * 24 * 3600);

    static SPECIAL: AtomicUsize = AtomicUsize::new(0);

    /// Times a kept conversion could collide with or not fit, by tick: as a
    /// converter returns them (`unix_nanos`), and `i64::MIN` (`UNSET`
    /// itself), which none does but `keep` must not store.
    fn special(ticks: u64) -> i64 {
        SPECIAL.fetch_add(1, Ordering::Relaxed);
        match ticks {
            0 => unix_nanos(SystemTime::UNIX_EPOCH),
            1 => unix_nanos(SystemTime::UNIX_EPOCH - Duration::from_nanos(1)),
            2 => unix_nanos(SystemTime::UNIX_EPOCH - Duration::from_secs(3)),
            3 => unix_nanos(SystemTime::UNIX_EPOCH + FAR),
            4 => unix_nanos(SystemTime::UNIX_EPOCH - FAR),
            _ => i64::MIN,
        }
    }

    #[test]
    fn every_conversion_is_kept_even_at_the_epoch_and_beyond_the_range() {
        // At the epoch, before it, and beyond the range (kept as the nearest
        // time in it): each is converted once, and every read, the first
        // too, returns the kept time.
        let latest = from_kept(i64::MAX as u64);
        let earliest = from_kept((i64::MIN + 1) as u64);
        assert!(SystemTime::UNIX_EPOCH - FAR < earliest && latest < SystemTime::UNIX_EPOCH + FAR);
        for (ticks, expected) in [
            (0, SystemTime::UNIX_EPOCH),
            (1, SystemTime::UNIX_EPOCH - Duration::from_nanos(1)),
            (2, SystemTime::UNIX_EPOCH - Duration::from_secs(3)),
            (3, latest),
            (4, earliest),
            (5, earliest),
        ] {
            let time = Time::new(Stamp::Ticks(ticks, special));
            let before = SPECIAL.load(Ordering::Relaxed);
            assert_eq!(time.get(), expected, "tick {ticks}");
            assert_eq!(time.get(), expected, "tick {ticks}");
            assert_eq!(time.nanos(), Some(unix_nanos(expected)), "tick {ticks}");
            assert_eq!(time.clone().get(), expected, "tick {ticks}");
            assert_eq!(
                SPECIAL.load(Ordering::Relaxed),
                before + 1,
                "tick {ticks}: converted once"
            );
        }
    }
}
