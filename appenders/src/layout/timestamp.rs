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
    /// The fraction of the second as `digits` decimal digits (3, 6 or 9),
    /// after a `.` if `dot`: `%.3f`, `%.6f`, `%.9f` and `%f`, written by
    /// hand per record.
    Fraction { dot: bool, digits: usize },
    /// Any other sub-second item, rendered through chrono per record.
    SubSecond(Item<'static>),
}

impl Part {
    fn sub_second(item: Item<'static>) -> Part {
        let (dot, digits) = match item {
            Item::Fixed(Fixed::Nanosecond3) => (true, 3),
            Item::Fixed(Fixed::Nanosecond6) => (true, 6),
            Item::Fixed(Fixed::Nanosecond9) => (true, 9),
            Item::Numeric(Numeric::Nanosecond, Pad::Zero) => (false, 9),
            item => return Part::SubSecond(item),
        };
        Part::Fraction { dot, digits }
    }
}

/// Nanoseconds per unit of the last of `digits` fraction digits.
const UNIT: [u32; 10] = [
    1_000_000_000,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];

/// The fraction of the second `nanos` in units of its last of `digits`
/// digits. The common widths multiply by a constant, not divide by a
/// table's entry (a hardware division of some 25 cycles). The multiplies
/// are written out: as `nanos / 1_000` and `nanos / 1_000_000`, LLVM
/// merged the two arms into one hardware division by the constant the arm
/// picked.
#[inline]
fn in_units(nanos: u32, digits: usize) -> u32 {
    let n = u64::from(nanos);
    // ⌊n / 10^6⌋ = ⌊n · 1,125,899,907 / 2^50⌋ and ⌊n / 10^3⌋ =
    // ⌊n · 274,877,907 / 2^38⌋ for every `n` below 2^32 (each constant is
    // 2^s / d rounded up, and its error times 2^32 stays below 2^s); the
    // products stay below 2^63, and the quotients fit a `u32`.
    match digits {
        3 => ((n * 1_125_899_907) >> 50) as u32,
        6 => ((n * 274_877_907) >> 38) as u32,
        9 => nanos,
        _ => nanos / UNIT[digits.min(9)],
    }
}

/// Appends the fraction of the second, `nanos`, as `digits` (at most 9)
/// decimal digits, after a `.` if `dot`: one copy into `out`.
fn push_fraction(out: &mut Vec<u8>, nanos: u32, dot: bool, digits: usize) {
    let mut text = [b'.'; 10];
    let digits = digits.min(9);
    write_digits(&mut text[1..=digits], in_units(nanos, digits));
    out.extend_from_slice(&text[usize::from(!dot)..=digits]);
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
    /// `second` in nanoseconds from the epoch, if an `i64` holds it.
    start: Option<i64>,
    texts: Vec<String>,
    /// When every sub-second part is a [`Part::Fraction`] (the default
    /// formats): the whole timestamp of this second with each fraction's
    /// digits as a hole, so a record costs one copy and the digits.
    template: Option<Template>,
}

/// A second's timestamp text with fixed-width holes for the fractions.
#[derive(Debug, Clone, Default)]
struct Template {
    text: Vec<u8>,
    /// Where each fraction's digits start in `text`, and how many.
    holes: Vec<(usize, usize)>,
    /// The template again as a [`Short`], when its text is at most
    /// [`SHORT`] bytes and has one hole (the default formats): a record's
    /// copy then has a constant length.
    short: Option<Short>,
}

/// The longest template text copied with a constant length ([`Short`]).
const SHORT: usize = 40;

/// A [`Template`] of at most [`SHORT`] bytes with one hole, padded to
/// [`SHORT`] bytes: a record's timestamp is one copy of constant length
/// (inline stores, no `memcpy` call), cut back to `len`, and the digits.
#[derive(Debug, Clone)]
struct Short {
    text: [u8; SHORT],
    len: usize,
    at: usize,
    digits: usize,
}

impl Short {
    fn of(template: &Template) -> Option<Short> {
        let [(at, digits)] = *template.holes.as_slice() else {
            return None;
        };
        let mut text = [0; SHORT];
        text.get_mut(..template.text.len())?
            .copy_from_slice(&template.text);
        Some(Short {
            text,
            len: template.text.len(),
            at,
            digits,
        })
    }

    /// Appends the text with `nanos`'s digits in the hole.
    #[inline]
    fn render(&self, nanos: u32, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.text);
        out.truncate(start + self.len);
        let hole = &mut out[start + self.at..start + self.at + self.digits];
        // The common widths with a constant length, so that the digit loop
        // is unrolled.
        match self.digits {
            3 => write_fixed::<3>(hole, in_units(nanos, 3)),
            6 => write_fixed::<6>(hole, in_units(nanos, 6)),
            9 => write_fixed::<9>(hole, nanos),
            digits => write_digits(hole, in_units(nanos, digits)),
        }
    }
}

/// [`write_digits`] into `out` of `N` bytes (it always is, from
/// [`Short::render`]), with a constant length.
#[inline]
fn write_fixed<const N: usize>(out: &mut [u8], value: u32) {
    debug_assert_eq!(out.len(), N, "a hole of {N} digits");
    if let Ok(digits) = <&mut [u8; N]>::try_from(out) {
        write_digits(digits, value);
    }
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
                parts.push(Part::sub_second(item));
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
                start: None,
                texts: vec![String::new(); texts],
                template: None,
            },
        };
        // Reject formats chrono cannot render (it reports them only when
        // formatting): try once with a fixed date.
        let mut probe = timestamp.clone();
        let mut out = Vec::new();
        if probe.try_render(0, 0, &mut out).is_err() {
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

    /// This second's [`Template`], from the cached texts; `None` if some
    /// sub-second part is rendered through chrono.
    fn template(&self) -> Option<Template> {
        let mut template = Template::default();
        for part in &self.parts {
            match *part {
                Part::PerSecond(index, _) => {
                    template
                        .text
                        .extend_from_slice(self.cache.texts[index].as_bytes());
                }
                Part::Fraction { dot, digits } => {
                    if dot {
                        template.text.push(b'.');
                    }
                    let digits = digits.min(9);
                    template.holes.push((template.text.len(), digits));
                    template.text.resize(template.text.len() + digits, b'0');
                }
                Part::SubSecond(_) => return None,
            }
        }
        template.short = Short::of(&template);
        Some(template)
    }

    /// Appends the formatted `time` to `out`.
    /// A time whose seconds an `i64` does not hold (which a
    /// `SystemTime` can be) is written `?`, as one chrono cannot format.
    pub(crate) fn render(&mut self, time: SystemTime, out: &mut Vec<u8>) {
        let seconds = |d: std::time::Duration| i64::try_from(d.as_secs()).ok();
        let split = match time.duration_since(UNIX_EPOCH) {
            Ok(d) => seconds(d).map(|second| (second, d.subsec_nanos())),
            Err(before) => {
                let d = before.duration();
                let nanos = d.subsec_nanos();
                seconds(d).and_then(|second| match nanos {
                    0 => Some((-second, 0)),
                    _ => (-second).checked_sub(1).map(|s| (s, 1_000_000_000 - nanos)),
                })
            }
        };
        let rendered = split.map(|(second, nanos)| self.try_render(second, nanos, out));
        if !matches!(rendered, Some(Ok(_))) {
            out.push(b'?');
        }
    }

    /// Appends `record`'s time to `out`, from its nanoseconds since the
    /// epoch when it has them.
    pub(crate) fn render_record(&mut self, record: &crate::Record, out: &mut Vec<u8>) {
        match record.unix_nanos() {
            Some(nanos) => self.render_nanos(nanos, out),
            None => self.render(record.time(), out),
        }
    }

    /// Appends the time `nanos` (signed nanoseconds since the Unix epoch)
    /// to `out`.
    pub(crate) fn render_nanos(&mut self, nanos: i64, out: &mut Vec<u8>) {
        // Within the cached second (the usual case): no division.
        if let (Some(start), Some(template)) = (self.cache.start, &self.cache.template) {
            // Not a wrapping difference: from the last second an `i64`
            // holds, the first one's times are a few wraps "within".
            let into = nanos.checked_sub(start).and_then(|d| u32::try_from(d).ok());
            if let (Some(into @ 0..=999_999_999), Some(short)) = (into, &template.short) {
                short.render(into, out);
                return;
            }
        }
        let second = nanos.div_euclid(1_000_000_000);
        // Below 10^9, so the cast cannot truncate.
        let nanos = nanos.rem_euclid(1_000_000_000) as u32;
        if self.try_render(second, nanos, out).is_err() {
            // Unreachable for formats accepted by `new` (probed there); keep
            // the line well-formed rather than panic on a worker.
            out.push(b'?');
        }
    }

    /// Renders the time `second` (since the epoch) and `nanos` into it:
    /// seconds and nanoseconds straight from the epoch offset, as building a
    /// chrono date (calendar arithmetic) is only needed once per second.
    #[inline]
    fn try_render(&mut self, second: i64, nanos: u32, out: &mut Vec<u8>) -> std::fmt::Result {
        if self.cache.second != Some(second) {
            self.refresh(second, nanos)?;
        }
        if let Some(template) = &self.cache.template {
            if let Some(short) = &template.short {
                short.render(nanos, out);
                return Ok(());
            }
            let start = out.len();
            out.extend_from_slice(&template.text);
            for &(at, digits) in &template.holes {
                let at = start + at;
                write_digits(&mut out[at..at + digits], in_units(nanos, digits));
            }
            return Ok(());
        }
        self.render_parts(second, nanos, out)
    }

    /// The texts of `second` (through chrono), once a second: out of line,
    /// so that the per-record path above keeps a small frame.
    #[cold]
    #[inline(never)]
    fn refresh(&mut self, second: i64, nanos: u32) -> std::fmt::Result {
        self.cache.second = None;
        self.cache.start = None;
        // Beyond chrono's range (about 262,000 years either way): `?`, not
        // the epoch's text.
        let time = DateTime::<Utc>::from_timestamp(second, nanos).ok_or(std::fmt::Error)?;
        let zoned = self.with_zone(time);
        for part in &self.parts {
            if let Part::PerSecond(index, items) = part {
                let text = &mut self.cache.texts[*index];
                text.clear();
                write!(text, "{}", zoned.format_with_items(items.iter()))?;
            }
        }
        self.cache.template = self.template();
        self.cache.second = Some(second);
        self.cache.start = second.checked_mul(1_000_000_000);
        Ok(())
    }

    /// A format with a sub-second part chrono renders (no template): each
    /// part in turn.
    #[inline(never)]
    fn render_parts(&self, second: i64, nanos: u32, out: &mut Vec<u8>) -> std::fmt::Result {
        let time = || DateTime::<Utc>::from_timestamp(second, nanos).ok_or(std::fmt::Error);
        for part in &self.parts {
            match part {
                Part::PerSecond(index, _) => {
                    out.extend_from_slice(self.cache.texts[*index].as_bytes());
                }
                &Part::Fraction { dot, digits } => push_fraction(out, nanos, dot, digits),
                Part::SubSecond(item) => {
                    let zoned = self.with_zone(time()?);
                    let mut text = String::new();
                    write!(text, "{}", zoned.format_with_items(std::iter::once(item)))?;
                    out.extend_from_slice(text.as_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Writes the last `out.len()` decimal digits of `value` into `out`,
/// zero-padded; two digits per division.
#[inline]
fn write_digits(out: &mut [u8], mut value: u32) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut end = out.len();
    while end >= 2 {
        // `value % 100` is below 100, so the index is in the table.
        let pair = (value % 100) as usize * 2;
        out[end - 2..end].copy_from_slice(&PAIRS[pair..pair + 2]);
        value /= 100;
        end -= 2;
    }
    if end == 1 {
        // `value % 10` is below 10, so the cast cannot truncate.
        out[0] = b'0' + (value % 10) as u8;
    }
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

    /// The written-out multiplies agree with the divisions they stand for,
    /// at every multiple of the divisor below 2^32 and either side of it,
    /// and at the ends.
    #[test]
    fn the_fraction_s_multiplies_divide_exactly() {
        for (digits, divisor) in [(3, 1_000_000u32), (6, 1_000)] {
            let edges = (0..=u32::MAX / divisor).flat_map(|k| {
                let at = k * divisor;
                [at.saturating_sub(1), at, at.saturating_add(1)]
            });
            for nanos in edges.chain([u32::MAX, u32::MAX - 1, 999_999_999]) {
                assert_eq!(
                    in_units(nanos, digits),
                    nanos / divisor,
                    "{nanos} / {divisor}"
                );
            }
        }
    }

    #[test]
    fn fractions_are_zero_padded_to_their_digits() {
        let nanos = [
            0,
            1,
            9,
            10,
            99,
            100,
            941,
            941_824,
            999_999,
            941_824_123,
            999_999_999,
        ];
        for nanos in nanos {
            for digits in [3, 6, 9] {
                for dot in [false, true] {
                    let mut out = Vec::new();
                    push_fraction(&mut out, nanos, dot, digits);
                    let value = nanos / 10u32.pow(9 - digits as u32);
                    let dot = if dot { "." } else { "" };
                    let expected = format!("{dot}{value:0digits$}");
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        expected,
                        "{nanos} in {digits}"
                    );
                }
            }
        }
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
        // Templates copied with a constant length ([`Short`]), and the
        // ones that are not: over [`SHORT`] bytes, or two holes.
        check("%.6f", t, ".941824");
        check(
            "%Y-%m-%dT%H:%M:%S%.9f+00:00 (UTC)",
            t,
            "2026-11-29T20:25:23.941824123+00:00 (UTC)",
        );
        check(
            "%A %d %B %Y, %H:%M:%S%.3f, the UTC day",
            t,
            "Sunday 29 November 2026, 20:25:23.941, the UTC day",
        );
        check("%H:%M:%S%.3f/%.6f", t, "20:25:23.941/.941824");
    }

    #[test]
    fn nanoseconds_render_as_the_time_they_stand_for_in_and_out_of_the_cached_second() {
        // In turn on one timestamp, so that each is rendered with the cache
        // the one before left: within its second, the next one, the one
        // before, before the epoch, and the ends of what `i64` holds.
        let times = [
            1_795_983_923_941_824_123,
            1_795_983_923_000_000_000,
            1_795_983_923_999_999_999,
            1_795_983_924_000_000_000,
            1_795_983_922_999_999_999,
            0,
            -1,
            -999_999_999,
            -1_000_000_000,
            -1_000_000_001,
            i64::MAX,
            i64::MIN + 1,
            1_795_983_923_500_000_000,
        ];
        for format in [
            DEFAULT_UTC_FORMAT,
            "%H:%M:%S%.3f",
            "%s.%f",
            "%H:%M:%S%.3f/%.6f",
        ] {
            let mut ts = Timestamp::new(Zone::Utc, format).unwrap();
            for nanos in times {
                let mut out = Vec::new();
                ts.render_nanos(nanos, &mut out);
                // chrono's own rendering, not this module's.
                let expected = DateTime::<Utc>::from_timestamp_nanos(nanos)
                    .format(format)
                    .to_string();
                assert_eq!(
                    String::from_utf8_lossy(&out),
                    expected,
                    "{format:?} at {nanos}"
                );
            }
        }
    }

    #[test]
    fn short_templates_are_the_ones_of_one_hole_and_a_few_bytes() {
        let short = |format: &str| {
            let mut ts = Timestamp::new(Zone::Utc, format).expect("format");
            ts.render(at(1_795_983_923, 941_824_123), &mut Vec::new());
            ts.cache.template.expect("a template").short.is_some()
        };
        assert!(short(DEFAULT_UTC_FORMAT));
        assert!(short("%.3f"));
        // 40 bytes exactly, and one more.
        assert!(short("%Y-%m-%dT%H:%M:%S%.9f+00:00 (UTC"));
        assert!(!short("%Y-%m-%dT%H:%M:%S%.9f+00:00 (UTC)"));
        assert!(!short("%A %d %B %Y, %H:%M:%S%.3f, the UTC day"));
        assert!(!short("%H:%M:%S%.3f/%.6f"));
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
        // After other text: the fraction lands after the line so far.
        let mut out = b"x ".to_vec();
        ts.render(at(59, 123_456_789), &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "x 1970-01-01T00:00:59.123456Z"
        );
    }

    #[test]
    fn local_zone_renders_an_offset() {
        let mut ts = Timestamp::new(Zone::Local, DEFAULT_LOCAL_FORMAT).unwrap();
        let mut out = Vec::new();
        ts.render(at(1_795_983_923, 0), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(DateTime::parse_from_rfc3339(&text).is_ok(), "{text}");
    }

    /// A time beyond what an `i64` of seconds holds (a `SystemTime` can
    /// be, on Linux) is written `?`, not a panic (a review's record
    /// built 2^63 seconds before the epoch negated past `i64::MIN`), and
    /// so is one an `i64` holds but chrono's range does not (it was
    /// written as the epoch).
    #[test]
    fn times_beyond_an_i64_of_seconds_render_a_question_mark() {
        let far = Duration::from_secs(1 << 63);
        let edge = Duration::from_secs(i64::MAX as u64);
        let mut ts = Timestamp::new(Zone::Utc, DEFAULT_UTC_FORMAT).unwrap();
        for time in [
            UNIX_EPOCH.checked_sub(far),
            UNIX_EPOCH.checked_sub(far + Duration::from_nanos(1)),
            UNIX_EPOCH.checked_add(far),
            UNIX_EPOCH.checked_sub(edge + Duration::from_nanos(1)),
            UNIX_EPOCH.checked_sub(edge),
            UNIX_EPOCH.checked_add(edge),
        ]
        .into_iter()
        .flatten()
        {
            let mut out = Vec::new();
            ts.render(time, &mut out);
            assert_eq!(out, b"?", "{time:?}");
        }
    }

    #[test]
    fn bad_formats_are_rejected() {
        assert!(Timestamp::new(Zone::Utc, "%Q").is_err());
        assert!(Timestamp::new(Zone::Utc, "%").is_err());
    }
}
