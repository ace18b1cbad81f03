//! Time as logbus takes and prints it: the stamp a record gets on the
//! caller's thread ([`stamp`]), and microseconds since the Unix epoch,
//! formatted as RFC 3339 UTC.
//!
//! On the ground floor: the caller's path stamps records with it, the queue
//! stamps drop bursts and the worker prints them; none reaches up for it.
//!
//! A record's stamp is the cheapest clock read that converts to the wall
//! clock within a small fraction of a microsecond: on x86-64 Linux, where
//! the kernel's own clock source is the CPU's time-stamp counter, the raw
//! counter (`rdtsc`, about 10 ns here, against 35 ns for
//! `SystemTime::now()`); the record converts it when its time is first
//! read, on that thread, usually a worker rendering it (`tsc.rs` decides
//! and reads; `convert.rs` converts, with the accuracy argument). A record
//! copied to several workers is converted by each of them with the anchor
//! of its ticks' epoch, which they share ([`stamp_keyed`], `keyed.rs`),
//! so that its copies have one time.
//! Elsewhere, under Miri, with `LOGBUS_TSC=off`, or once a converting
//! thread found the counter going back, the stamp is `SystemTime::now()`.

#[cfg(any(test, all(target_arch = "x86_64", target_os = "linux", not(miri))))]
mod convert;
#[cfg(any(test, all(target_arch = "x86_64", target_os = "linux", not(miri))))]
mod keyed;
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
mod tsc;

use logbus_appenders::__private_api::Stamp;

/// The stamp of a record built now, on the caller's thread: one load of
/// the decided source and one counter or clock read.
#[inline]
pub(crate) fn stamp() -> Stamp {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    {
        tsc::stamp()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
    {
        Stamp::Wall(std::time::SystemTime::now())
    }
}

/// The stamp of a record that travels as copies to several workers (the
/// direct path's fan-out, `broker/publish/direct.rs`): as [`stamp`] reads
/// it, but each worker converts it with the anchor of its ticks' epoch
/// (0.5 ms at most), which every thread converting a tick of that epoch
/// takes (`keyed.rs`), rather than with its own thread's: two anchors
/// disagree by nanoseconds (`convert.rs`, "Accuracy"), which one line
/// printed by two appenders would show. Elsewhere the wall clock, read
/// once for every copy.
#[inline]
pub(crate) fn stamp_keyed() -> Stamp {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    {
        tsc::stamp_keyed()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
    {
        Stamp::Wall(std::time::SystemTime::now())
    }
}

/// Notes, on a worker's thread, that it has just taken records off its
/// queue, so that it converts their stamps without a counter read each.
#[inline]
pub(crate) fn note_taken() {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    tsc::note_taken();
}

/// Forgets, on a worker's thread that has written what it took, the
/// reading [`note_taken`] made: what the thread converts until its next
/// take (a journal read from an appender, say) reads the counter again.
#[inline]
pub(crate) fn forget_taken() {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    tsc::forget_taken();
}

/// Decides what records are stamped with, if that is not decided yet (a
/// broker being built), so that no log call does.
pub(crate) fn prepare() {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    tsc::prepare();
}

/// What records are stamped with, as decided so far: `"tsc"` (the
/// counter), `"wall clock"` (`SystemTime::now()`), or `"undecided"` (no
/// broker built yet). For tests, through `logbus::testing`.
pub(crate) fn source() -> &'static str {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    {
        match tsc::ticks_decided() {
            Some(true) => "tsc",
            Some(false) => "wall clock",
            None => "undecided",
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
    {
        "wall clock"
    }
}

/// Now, in microseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Formats microseconds since the epoch as RFC 3339 UTC.
pub(crate) fn format_micros(micros: u64) -> String {
    chrono::DateTime::from_timestamp_micros(micros as i64).map_or_else(
        || micros.to_string(),
        |t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_utc_with_microseconds() {
        assert_eq!(
            format_micros(1_700_000_000_123_456),
            "2023-11-14T22:13:20.123456Z"
        );
        assert!(now_micros() > 1_700_000_000_000_000);
    }
}
