//! Timestamp rendering with a per-second cache of the formatted text.
//!
//! Formatting a date with chrono walks the format items and does calendar
//! arithmetic: a few hundred nanoseconds. Records arrive many per second, so
//! each `{ts}` placeholder keeps the text of everything that changes at most
//! once a second (date, hours, minutes, seconds, offset) keyed on the unix
//! second, and per record writes only the sub-second digits by hand.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::format::{Fixed, Item, Numeric, Pad, StrftimeItems};
use chrono::{DateTime, FixedOffset, Local, Utc};

/// The strftime format of `{ts}`: RFC 3339, UTC, microseconds.
pub(crate) const DEFAULT_UTC_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";
/// The strftime format of `{ts_local}`: RFC 3339, local offset, microseconds.
pub(crate) const DEFAULT_LOCAL_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6f%:z";

/// Which clock face a timestamp is shown on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zone {
    Utc,
    Local,
}

/// One run of the format: either items whose output changes at most once a
/// second (rendered into the cache), or one item that depends on the
/// sub-second part (rendered per record).
#[derive(Debug, Clone)]
enum Part {
    /// Index into [`TimestampCache::texts`].
    PerSecond(usize, Vec<Item<'static>>),
    SubSecond(Item<'static>),
}

/// A parsed timestamp format plus its per-second cache.
#[derive(Debug, Clone)]
pub(crate) struct Timestamp {
    zone: Zone,
    parts: Vec<Part>,
    cache: TimestampCache,
}

/// The text of the per-second parts for one unix second.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimestampCache {
    second: Option<i64>,
    texts: Vec<String>,
}

/// Whether the output of `item` can change within one second.
fn is_sub_second(item: &Item<'_>) -> bool {
    match item {
        Item::Numeric(numeric, _) => !matches!(
            numeric,
            Numeric::Year
                | Numeric::YearDiv100
                | Numeric::YearMod100
                | Numeric::IsoYear
                | Numeric::IsoYearDiv100
                | Numeric::IsoYearMod100
                | Numeric::Quarter
                | Numeric::Month
                | Numeric::Day
                | Numeric::WeekFromSun
                | Numeric::WeekFromMon
                | Numeric::IsoWeek
                | Numeric::NumDaysFromSun
                | Numeric::WeekdayFromMon
                | Numeric::Ordinal
                | Numeric::Hour
                | Numeric::Hour12
                | Numeric::Minute
                | Numeric::Second
                | Numeric::Timestamp
        ),
        // Unknown or internal fixed items (`%3f`, `%+`) may carry a fraction:
        // conservatively rendered per record.
        Item::Fixed(fixed) => !matches!(
            fixed,
            Fixed::ShortMonthName
                | Fixed::LongMonthName
                | Fixed::ShortWeekdayName
                | Fixed::LongWeekdayName
                | Fixed::LowerAmPm
                | Fixed::UpperAmPm
                | Fixed::TimezoneName
                | Fixed::TimezoneOffsetColon
                | Fixed::TimezoneOffsetDoubleColon
                | Fixed::TimezoneOffsetTripleColon
                | Fixed::TimezoneOffsetColonZ
                | Fixed::TimezoneOffset
                | Fixed::TimezoneOffsetZ
                | Fixed::RFC2822
        ),
        _ => false,
    }
}

impl Timestamp {
    /// Parses a strftime format; `Err` carries nothing (the caller knows the
    /// position and the text).
    pub(crate) fn new(zone: Zone, format: &str) -> Result<Timestamp, ()> {
        let items = StrftimeItems::new(format)
            .parse_to_owned()
            .map_err(|_| ())?;
        let mut parts = Vec::new();
        let mut texts = 0;
        for item in items {
            if is_sub_second(&item) {
                parts.push(Part::SubSecond(item));
            } else if let Some(Part::PerSecond(_, run)) = parts.last_mut() {
                run.push(item);
            } else {
                parts.push(Part::PerSecond(texts, vec![item]));
                texts += 1;
            }
        }
        let timestamp = Timestamp {
            zone,
            parts,
            cache: TimestampCache {
                second: None,
                texts: vec![String::new(); texts],
            },
        };
        // Reject formats chrono cannot render (it reports them only when
        // formatting): try once with a fixed date.
        let mut probe = timestamp.clone();
        let mut out = Vec::new();
        if probe.try_render(SystemTime::UNIX_EPOCH, &mut out).is_err() {
            return Err(());
        }
        Ok(timestamp)
    }

    fn with_zone(&self, utc: DateTime<Utc>) -> DateTime<FixedOffset> {
        match self.zone {
            Zone::Utc => utc.fixed_offset(),
            Zone::Local => utc.with_timezone(&Local).fixed_offset(),
        }
    }

    /// Appends the formatted `time` to `out`.
    pub(crate) fn render(&mut self, time: SystemTime, out: &mut Vec<u8>) {
        if self.try_render(time, out).is_err() {
            // Unreachable for formats accepted by `new` (probed there); keep
            // the line well-formed rather than panic on a worker.
            out.push(b'?');
        }
    }

    fn try_render(&mut self, time: SystemTime, out: &mut Vec<u8>) -> std::fmt::Result {
        // Seconds and nanoseconds straight from the epoch offset: building a
        // chrono date (calendar arithmetic) is only needed once per second.
        let (second, nanos) = match time.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
            Err(before) => {
                let d = before.duration();
                let nanos = d.subsec_nanos();
                if nanos == 0 {
                    (-(d.as_secs() as i64), 0)
                } else {
                    (-(d.as_secs() as i64) - 1, 1_000_000_000 - nanos)
                }
            }
        };
        if self.cache.second != Some(second) {
            self.cache.second = None;
            let utc: DateTime<Utc> = time.into();
            let zoned = self.with_zone(utc);
            for part in &self.parts {
                if let Part::PerSecond(index, items) = part {
                    let text = &mut self.cache.texts[*index];
                    text.clear();
                    write!(text, "{}", zoned.format_with_items(items.iter()))?;
                }
            }
            self.cache.second = Some(second);
        }
        for part in &self.parts {
            match part {
                Part::PerSecond(index, _) => {
                    out.extend_from_slice(self.cache.texts[*index].as_bytes());
                }
                Part::SubSecond(Item::Fixed(Fixed::Nanosecond3)) => {
                    out.push(b'.');
                    push_digits(out, nanos / 1_000_000, 3);
                }
                Part::SubSecond(Item::Fixed(Fixed::Nanosecond6)) => {
                    out.push(b'.');
                    push_digits(out, nanos / 1_000, 6);
                }
                Part::SubSecond(Item::Fixed(Fixed::Nanosecond9)) => {
                    out.push(b'.');
                    push_digits(out, nanos, 9);
                }
                Part::SubSecond(Item::Numeric(Numeric::Nanosecond, Pad::Zero)) => {
                    push_digits(out, nanos, 9);
                }
                Part::SubSecond(item) => {
                    let zoned = self.with_zone(time.into());
                    let mut text = String::new();
                    write!(text, "{}", zoned.format_with_items(std::iter::once(item)))?;
                    out.extend_from_slice(text.as_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Appends `value` as exactly `width` decimal digits (zero-padded).
fn push_digits(out: &mut Vec<u8>, mut value: u32, width: usize) {
    let mut digits = [b'0'; 10];
    for slot in digits[..width].iter_mut().rev() {
        // `value % 10` is below 10, so the cast cannot truncate.
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
    }

    #[track_caller]
    fn check(format: &str, time: SystemTime, expected: &str) {
        let mut ts = Timestamp::new(Zone::Utc, format).unwrap();
        let mut out = Vec::new();
        ts.render(time, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected,
            "format {format:?}"
        );
        // Rendered through chrono directly, for comparison.
        let direct = DateTime::<Utc>::from(time).format(format).to_string();
        assert_eq!(direct, expected, "chrono disagrees on {format:?}");
    }

    #[test]
    fn formats_match_chrono() {
        let t = at(1_795_983_923, 941_824_123);
        check(DEFAULT_UTC_FORMAT, t, "2026-11-29T20:25:23.941824Z");
        check("%Y-%m-%d %H:%M:%S%.3f", t, "2026-11-29 20:25:23.941");
        check("%H:%M:%S%.9f", t, "20:25:23.941824123");
        check("%s.%f", t, "1795983923.941824123");
        check(
            "%.f|%3f|%+",
            t,
            ".941824123|941|2026-11-29T20:25:23.941824123+00:00",
        );
        check("%a %b %e %p %z", t, "Sun Nov 29 PM +0000");
        check("%H:%M:%S%.6f", at(0, 5_000), "00:00:00.000005");
    }

    #[test]
    fn cache_is_refreshed_when_the_second_changes() {
        let mut ts = Timestamp::new(Zone::Utc, DEFAULT_UTC_FORMAT).unwrap();
        let mut out = Vec::new();
        for (secs, nanos, expected) in [
            (59, 999_999_000, "1970-01-01T00:00:59.999999Z"),
            (59, 1_000, "1970-01-01T00:00:59.000001Z"),
            (60, 0, "1970-01-01T00:01:00.000000Z"),
            (59, 0, "1970-01-01T00:00:59.000000Z"),
        ] {
            out.clear();
            ts.render(at(secs, nanos), &mut out);
            assert_eq!(String::from_utf8_lossy(&out), expected);
        }
    }

    #[test]
    fn local_zone_renders_an_offset() {
        let mut ts = Timestamp::new(Zone::Local, DEFAULT_LOCAL_FORMAT).unwrap();
        let mut out = Vec::new();
        ts.render(at(1_795_983_923, 0), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(DateTime::parse_from_rfc3339(&text).is_ok(), "{text}");
    }

    #[test]
    fn bad_formats_are_rejected() {
        assert!(Timestamp::new(Zone::Utc, "%Q").is_err());
        assert!(Timestamp::new(Zone::Utc, "%").is_err());
    }
}
