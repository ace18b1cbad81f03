//! Where a rolling file's hour and day boundaries fall, and which local
//! date a dated name carries: [`TimeZone`], and the calendar arithmetic,
//! written once over chrono's `TimeZone` trait so that UTC, a fixed offset
//! and the local zone (with its daylight-saving changes) take one path,
//! and a test zone with a rule takes it too.
//!
//! A *period* is what a wall clock in the zone shows, truncated: a local
//! date (daily) or a local date and hour (hourly). It starts at the first
//! instant the wall clock shows its label (or a later time) and ends where
//! the next label starts, so its length comes from the zone, never from
//! adding 86,400 s: the day of a daylight-saving change lasts 23 or 25
//! hours. The hour a change repeats (02:00–03:00 twice in central Europe
//! in October) is one period of two hours; the hour it skips (02:00 in
//! March) has none.

use chrono::{DateTime, FixedOffset, Local, MappedLocalTime, NaiveDateTime, NaiveTime, Timelike};
use chrono::{TimeDelta, Utc};

/// The zone in which a rolling file's hour and day boundaries fall, and
/// in which a [dated](crate::Naming::DATED) name's date is written. (This
/// crate's own type, not chrono's trait of the same name.)
///
/// UTC is the default. [`TimeZone::LOCAL`] follows the machine's zone (the
/// `TZ` variable, else `/etc/localtime`) through chrono, including its
/// daylight-saving changes: a day boundary is local midnight, whether the
/// day lasts 23, 24 or 25 hours. [`TimeZone::fixed_offset`] is a zone with
/// no changes, a fixed distance from UTC: what a test uses so that it does
/// not depend on the machine's zone.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{FileAppender, Naming, Rotation, TimeZone};
///
/// let dir = tempfile::tempdir()?;
/// // Daily files cut at local midnight, named by the local date.
/// let file = FileAppender::builder(dir.path().join("app.log"))
///     .rotate_every(Rotation::DAILY)
///     .time_zone(TimeZone::LOCAL)
///     .naming(Naming::DATED)
///     .build()?;
/// assert_eq!(TimeZone::default(), TimeZone::UTC);
/// assert_ne!(TimeZone::fixed_offset(3600), TimeZone::UTC);
/// # drop(file);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TimeZone(ZoneKind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum ZoneKind {
    #[default]
    Utc,
    Local,
    /// Seconds east of UTC.
    Fixed(i32),
}

/// Offsets chrono accepts: strictly within a day of UTC.
const MAX_OFFSET_SECS: i32 = 86_399;

impl TimeZone {
    /// Coordinated Universal Time (default).
    pub const UTC: TimeZone = TimeZone(ZoneKind::Utc);

    /// The machine's local zone, with its daylight-saving changes, read
    /// through chrono: soundly from chrono 0.4.20 on, which reads the time
    /// zone database itself instead of calling libc's `localtime_r`
    /// (RUSTSEC-2020-0159; `deny.toml` bans older chrono).
    pub const LOCAL: TimeZone = TimeZone(ZoneKind::Local);

    /// A zone `seconds_east` seconds ahead of UTC (negative: behind), with
    /// no daylight-saving changes: `fixed_offset(-5 * 3600)` is UTC−05:00.
    ///
    /// An offset of a day or more is refused when the appender is built
    /// (a [`FileErrorKind::Config`](crate::FileErrorKind::Config) error).
    #[must_use]
    pub const fn fixed_offset(seconds_east: i32) -> TimeZone {
        TimeZone(ZoneKind::Fixed(seconds_east))
    }

    /// Why the zone cannot be used, if it cannot.
    pub(crate) fn check(self) -> Result<(), &'static str> {
        match self.0 {
            ZoneKind::Fixed(secs) if !(-MAX_OFFSET_SECS..=MAX_OFFSET_SECS).contains(&secs) => {
                Err("time_zone: a fixed offset must be less than a day (86,400 s) from UTC")
            }
            _ => Ok(()),
        }
    }
}

/// Calls `$f(&zone, args..)` with the chrono zone `$zone` stands for.
macro_rules! in_zone {
    ($zone:expr, $f:ident($($arg:expr),*)) => {
        match $zone.0 {
            ZoneKind::Utc => $f(&Utc, $($arg),*),
            ZoneKind::Local => $f(&Local, $($arg),*),
            ZoneKind::Fixed(secs) => FixedOffset::east_opt(secs).and_then(|tz| $f(&tz, $($arg),*)),
        }
    };
}

impl TimeZone {
    /// The local start of the period holding the instant `at` (unix
    /// seconds): its label.
    pub(crate) fn period_of(self, period: Period, at: i64) -> Option<NaiveDateTime> {
        in_zone!(self, period_of(period, at))
    }

    /// The instant (unix seconds) at which the period starting at `start`
    /// (local) ends.
    pub(crate) fn period_end(self, period: Period, start: NaiveDateTime) -> Option<i64> {
        in_zone!(self, period_end(period, start))
    }

    /// The first period boundary strictly after `now` (unix seconds).
    pub(crate) fn next_boundary(self, period: Period, now: i64) -> Option<i64> {
        in_zone!(self, next_boundary(period, now))
    }
}

/// How long a period lasts on the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Period {
    Hour,
    Day,
}

impl Period {
    /// The start of the period holding the wall time `wall`.
    pub(crate) fn truncate(self, wall: NaiveDateTime) -> NaiveDateTime {
        match self {
            Period::Hour => wall.date().and_hms_opt(wall.hour(), 0, 0).unwrap_or(wall),
            Period::Day => wall.date().and_time(NaiveTime::MIN),
        }
    }

    /// The start of the period after the one starting at `start`.
    pub(crate) fn next(self, start: NaiveDateTime) -> Option<NaiveDateTime> {
        match self {
            Period::Hour => start.checked_add_signed(TimeDelta::try_hours(1)?),
            Period::Day => Some(start.date().succ_opt()?.and_time(NaiveTime::MIN)),
        }
    }

    /// The period as a dated name writes it: `2026-12-01` or `2026-12-01T13`.
    pub(crate) fn label(self, start: NaiveDateTime) -> String {
        let format = match self {
            Period::Hour => "%Y-%m-%dT%H",
            Period::Day => "%Y-%m-%d",
        };
        start.format(format).to_string()
    }
}

/// The wall time in `tz` at the instant `at` (unix seconds).
fn wall<Tz: chrono::TimeZone>(tz: &Tz, at: i64) -> Option<NaiveDateTime> {
    let utc = DateTime::from_timestamp(at, 0)?.naive_utc();
    Some(tz.from_utc_datetime(&utc).naive_local())
}

/// The first instant (unix seconds) at which the wall clock in `tz` shows
/// `wall` or a later time: the earlier of the two in an hour a change
/// repeats, the moment of the jump when a change skips `wall`.
fn first_instant<Tz: chrono::TimeZone>(tz: &Tz, wall_time: NaiveDateTime) -> Option<i64> {
    let (a, b) = match tz.from_local_datetime(&wall_time) {
        MappedLocalTime::Single(a) => (Some(a.timestamp()), None),
        MappedLocalTime::Ambiguous(a, b) => (Some(a.timestamp()), Some(b.timestamp())),
        MappedLocalTime::None => (None, None),
    };
    // Only instants whose wall time is `wall_time` indeed: a zone's rules
    // may count the instant of a change on both sides (chrono's local zone
    // maps 03:00 on the day summer time ends to the change itself, where
    // the clock already shows 02:00), and may give the later one first.
    let shows = |at: &i64| wall(tz, *at) == Some(wall_time);
    let found = [a, b].into_iter().flatten().filter(shows).min();
    if found.is_some() {
        return found;
    }
    // Skipped: the clock jumps from before `wall_time` to after it.
    // Offsets are under a day, so the jump lies within a day of
    // `wall_time` read as UTC; bisect for it. Invariant: the wall clock
    // shows less than `wall_time` at `lo`, as much or more at `hi`.
    const TWO_DAYS: i64 = 2 * 86_400;
    let guess = wall_time.and_utc().timestamp();
    let (mut lo, mut hi) = (guess - TWO_DAYS, guess + TWO_DAYS);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if wall(tz, mid)? >= wall_time {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

fn period_of<Tz: chrono::TimeZone>(tz: &Tz, period: Period, at: i64) -> Option<NaiveDateTime> {
    Some(period.truncate(wall(tz, at)?))
}

fn period_end<Tz: chrono::TimeZone>(tz: &Tz, period: Period, start: NaiveDateTime) -> Option<i64> {
    first_instant(tz, period.next(start)?)
}

fn next_boundary<Tz: chrono::TimeZone>(tz: &Tz, period: Period, now: i64) -> Option<i64> {
    let end = period_end(tz, period, period_of(tz, period, now)?)?;
    // Always forward, whatever a zone's rules say.
    Some(end.max(now.saturating_add(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, Offset};

    const HOUR: i64 = 3_600;
    /// 2026-03-29T01:00:00Z: central Europe moves from UTC+1 to UTC+2.
    const SUMMER_START: i64 = 1_774_746_000;
    /// 2026-10-25T01:00:00Z: and back.
    const SUMMER_END: i64 = 1_792_890_000;

    /// Central European time in 2026, a zone with a rule: UTC+2 between
    /// the two changes, UTC+1 otherwise.
    #[derive(Debug, Clone, Copy)]
    struct Cet2026;

    fn offset_at(at: i64) -> FixedOffset {
        let hours = if (SUMMER_START..SUMMER_END).contains(&at) {
            2
        } else {
            1
        };
        FixedOffset::east_opt(hours * 3600).unwrap()
    }

    impl chrono::TimeZone for Cet2026 {
        type Offset = FixedOffset;

        fn from_offset(_: &FixedOffset) -> Cet2026 {
            Cet2026
        }

        fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<FixedOffset> {
            self.offset_from_local_datetime(&local.and_time(NaiveTime::MIN))
        }

        fn offset_from_local_datetime(
            &self,
            local: &NaiveDateTime,
        ) -> MappedLocalTime<FixedOffset> {
            // Each offset the zone uses that maps back to `local`; the
            // larger offset is the earlier instant.
            let fits = |hours: i32| {
                let offset = FixedOffset::east_opt(hours * 3600).unwrap();
                let at = (*local - offset).and_utc().timestamp();
                (offset_at(at) == offset).then_some(offset)
            };
            match (fits(2), fits(1)) {
                (Some(a), Some(b)) => MappedLocalTime::Ambiguous(a, b),
                (Some(o), None) | (None, Some(o)) => MappedLocalTime::Single(o),
                (None, None) => MappedLocalTime::None,
            }
        }

        fn offset_from_utc_date(&self, utc: &NaiveDate) -> FixedOffset {
            self.offset_from_utc_datetime(&utc.and_time(NaiveTime::MIN))
        }

        fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> FixedOffset {
            offset_at(utc.and_utc().timestamp()).fix()
        }
    }

    fn at(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text).unwrap().timestamp()
    }

    fn naive(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").unwrap()
    }

    /// The boundaries after `from`, one after the other.
    fn boundaries(tz: &impl chrono::TimeZone, period: Period, from: i64, n: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut now = from;
        for _ in 0..n {
            now = next_boundary(tz, period, now).unwrap();
            out.push(now);
        }
        out
    }

    #[test]
    fn utc_boundaries_are_whole_hours_and_days() {
        assert_eq!(next_boundary(&Utc, Period::Hour, 0), Some(3600));
        assert_eq!(next_boundary(&Utc, Period::Hour, 3599), Some(3600));
        assert_eq!(next_boundary(&Utc, Period::Hour, 3600), Some(7200));
        assert_eq!(next_boundary(&Utc, Period::Day, 86_399), Some(86_400));
        assert_eq!(next_boundary(&Utc, Period::Day, 86_400), Some(172_800));
    }

    #[test]
    fn a_fixed_offset_moves_the_boundaries() {
        let ny = FixedOffset::west_opt(5 * 3600).unwrap();
        // Local midnight in UTC−05:00 is 05:00Z.
        let day = next_boundary(&ny, Period::Day, at("2026-12-01T04:59:59Z"));
        assert_eq!(day, Some(at("2026-12-01T05:00:00Z")));
        let india = FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
        // Local hours in UTC+05:30 start at half past, UTC.
        let hour = next_boundary(&india, Period::Hour, at("2026-12-01T10:00:00Z"));
        assert_eq!(hour, Some(at("2026-12-01T10:30:00Z")));
        assert_eq!(
            period_of(&india, Period::Day, at("2026-11-30T18:30:00Z")),
            Some(naive("2026-12-01T00:00"))
        );
    }

    #[test]
    fn days_of_a_daylight_saving_change_last_23_and_25_hours() {
        // From noon the day before each change: local midnights.
        let march = boundaries(&Cet2026, Period::Day, at("2026-03-28T12:00:00+01:00"), 3);
        assert_eq!(
            march,
            [
                at("2026-03-29T00:00:00+01:00"),
                at("2026-03-30T00:00:00+02:00"),
                at("2026-03-31T00:00:00+02:00"),
            ]
        );
        assert_eq!(march[1] - march[0], 23 * HOUR);
        assert_eq!(march[2] - march[1], 24 * HOUR);
        let october = boundaries(&Cet2026, Period::Day, at("2026-10-24T12:00:00+02:00"), 2);
        assert_eq!(october[1] - october[0], 25 * HOUR);
        assert_eq!(october[1], at("2026-10-26T00:00:00+01:00"));
        // The periods' labels and ends agree with the boundaries.
        let day = period_of(&Cet2026, Period::Day, october[0]).unwrap();
        assert_eq!(day, naive("2026-10-25T00:00"));
        assert_eq!(period_end(&Cet2026, Period::Day, day), Some(october[1]));
    }

    #[test]
    fn the_repeated_hour_is_one_period_and_the_skipped_hour_none() {
        // October: 02:00–03:00 happens twice (at 00:00Z and 01:00Z).
        let october = boundaries(&Cet2026, Period::Hour, at("2026-10-25T01:30:00+02:00"), 3);
        assert_eq!(
            october,
            [
                at("2026-10-25T02:00:00+02:00"),
                at("2026-10-25T03:00:00+01:00"),
                at("2026-10-25T04:00:00+01:00"),
            ]
        );
        assert_eq!(october[1] - october[0], 2 * HOUR);
        let label = |t| Period::Hour.label(period_of(&Cet2026, Period::Hour, t).unwrap());
        assert_eq!(label(october[0]), "2026-10-25T02");
        assert_eq!(label(october[0] + HOUR), "2026-10-25T02");
        // March: 02:00 never shows; after 01:00 comes 03:00, an hour later.
        let march = boundaries(&Cet2026, Period::Hour, at("2026-03-29T00:30:00+01:00"), 2);
        assert_eq!(
            march,
            [
                at("2026-03-29T01:00:00+01:00"),
                at("2026-03-29T03:00:00+02:00")
            ]
        );
        assert_eq!(march[1] - march[0], HOUR);
        assert_eq!(label(march[1]), "2026-03-29T03");
        // The end of the skipped hour's label is found at the jump.
        assert_eq!(
            first_instant(&Cet2026, naive("2026-03-29T02:00")),
            Some(SUMMER_START)
        );
        assert_eq!(
            first_instant(&Cet2026, naive("2026-03-29T02:30")),
            Some(SUMMER_START)
        );
    }

    #[test]
    fn labels() {
        let start = naive("2026-12-01T13:00");
        assert_eq!(Period::Hour.label(start), "2026-12-01T13");
        assert_eq!(Period::Day.label(Period::Day.truncate(start)), "2026-12-01");
        assert_eq!(Period::Day.next(start), Some(naive("2026-12-02T00:00")));
    }

    #[test]
    fn offsets_of_a_day_or_more_are_refused() {
        assert!(TimeZone::fixed_offset(86_399).check().is_ok());
        assert!(TimeZone::fixed_offset(-86_399).check().is_ok());
        assert!(TimeZone::fixed_offset(86_400).check().is_err());
        assert!(TimeZone::fixed_offset(i32::MIN).check().is_err());
        assert!(TimeZone::LOCAL.check().is_ok());
    }
}
