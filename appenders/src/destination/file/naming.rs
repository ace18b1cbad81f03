//! How rotated files are named ([`Naming`]), and the one place that tells
//! this appender's rotated files from everything else in the directory:
//! rotation and retention touch only what [`present`] lists.
//!
//! A rotated file's name is the live file's name, a dot, and a *stamp*:
//! `3` (numbered), or `2026-12-01`, `2026-12-01T13`, `2026-12-01.2` (dated,
//! daily or hourly, with a counter from the second file of a period on);
//! then `.gz` when compressed. Only canonical stamps count: digits without
//! a leading zero, a real date and hour, written exactly as the appender
//! writes them, so `app.log.03`, `app.log.2026-13-01` or
//! `app.log.2026-12-01.bak` are someone else's.

use std::cmp::Ordering;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use chrono::{NaiveDate, NaiveDateTime};

use super::zone::Period;

/// How a rolling file names the files it rotates. The live file keeps its
/// configured name with either.
///
/// | Naming | Rotated files, newest first | A rotation |
/// |---|---|---|
/// | [`NUMBERED`](Naming::NUMBERED) (default) | `app.log.1`, `app.log.2`, … | shifts every rotated file up by one |
/// | [`DATED`](Naming::DATED), daily | `app.log.2026-12-02`, `app.log.2026-12-01.1`, `app.log.2026-12-01` | one rename |
/// | [`DATED`](Naming::DATED), hourly | `app.log.2026-12-01T14`, `app.log.2026-12-01T13`, … | one rename |
///
/// A dated name carries the period its file holds (in the appender's
/// [`TimeZone`](crate::TimeZone)): the day, or the day and hour, of
/// [`rotate_every`](crate::FileAppenderBuilder::rotate_every), which dated
/// naming therefore needs. When a period holds several files (size
/// rotation within it, or a restart that rotated at start), the first is
/// `app.log.2026-12-01`, the next `app.log.2026-12-01.1`, then `.2`: a
/// counter after the largest present, so a rotation never replaces a file
/// and the names sort as the files were written. Compressed files end in
/// `.gz` after all of it (`app.log.2026-12-01.1.gz`).
///
/// If the clock goes back (or a file of a later period is already there),
/// a rotated file is not named by an earlier period than the newest one
/// present: it takes that period's next counter (`app.log.2026-12-05.1`
/// for records written when the clock said 2026-12-01), so the names keep
/// sorting in writing order and retention removes the oldest files first.
/// The name then says when the file was rotated at the latest, not the
/// clock's time of its records.
///
/// Rotation and retention only know the names of the naming in use: files
/// named the other way (by an earlier configuration) are left alone, and
/// count toward no limit.
///
/// The live file keeps its plain name (`app.log`) rather than being written
/// under its dated name: `tail -F app.log` and `logbus tail -F app.log`
/// follow one path, other tools find the log where it was configured, and
/// no symlink is needed (the appender refuses to write through one).
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, FileAppender, Level, Naming, Record, Rotation, Topic};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("app.log");
/// let mut file = FileAppender::builder(&path)
///     .rotate_every(Rotation::DAILY)
///     .naming(Naming::DATED)
///     .max_bytes(64 * 1024 * 1024)
///     .keep(30)
///     .build()?;
/// file.append(&Record::builder(Topic::new(Level::Info, "app")).message("ready").build())?;
/// // At the first record after midnight (UTC), app.log becomes
/// // app.log.<that day> and a new app.log starts.
/// assert_eq!(file.path(), path);
/// assert_eq!(Naming::default(), Naming::NUMBERED);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Naming(NamingKind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum NamingKind {
    #[default]
    Numbered,
    Dated,
}

impl Naming {
    /// `app.log.1` is the newest rotated file, `app.log.2` the one before
    /// (default).
    pub const NUMBERED: Naming = Naming(NamingKind::Numbered);
    /// `app.log.<period>[.<counter>]`: the date (and hour) of the period
    /// each file holds.
    pub const DATED: Naming = Naming(NamingKind::Dated);

    pub(crate) fn is_dated(self) -> bool {
        self.0 == NamingKind::Dated
    }
}

/// What a rotated file's name says after the live file's name and a dot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// `3`: the third newest.
    Index(usize),
    /// `2026-12-01[.2]`: the period's local start, and the file's place
    /// among those of its period (0 for the first, written without one).
    Dated {
        period: Period,
        start: NaiveDateTime,
        counter: usize,
    },
}

impl Stamp {
    fn suffix(&self) -> String {
        match *self {
            Stamp::Index(index) => index.to_string(),
            Stamp::Dated {
                period,
                start,
                counter: 0,
            } => period.label(start),
            Stamp::Dated {
                period,
                start,
                counter,
            } => format!("{}.{counter}", period.label(start)),
        }
    }

    /// Newest first: numbered by index, dated by period then counter,
    /// descending (dated before numbered, which one naming never mixes).
    pub(crate) fn newest_first(a: &Stamp, b: &Stamp) -> Ordering {
        match (a, b) {
            (Stamp::Index(a), Stamp::Index(b)) => a.cmp(b),
            (
                Stamp::Dated {
                    start: sa,
                    counter: ca,
                    period: pa,
                },
                Stamp::Dated {
                    start: sb,
                    counter: cb,
                    period: pb,
                },
            ) => (sb, cb, pb).cmp(&(sa, ca, pa)),
            (Stamp::Dated { .. }, Stamp::Index(_)) => Ordering::Less,
            (Stamp::Index(_), Stamp::Dated { .. }) => Ordering::Greater,
        }
    }
}

/// `app.log` + `.` + the stamp (+ `.gz`).
pub(crate) fn rotated_path(live: &Path, stamp: &Stamp, gz: bool) -> PathBuf {
    let mut name = live.as_os_str().to_owned();
    name.push(".");
    name.push(stamp.suffix());
    if gz {
        name.push(".gz");
    }
    PathBuf::from(name)
}

/// `path` + `.gz`.
pub(crate) fn gz_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    PathBuf::from(name)
}

/// A rotated file present beside the live one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rotated {
    pub(crate) stamp: Stamp,
    pub(crate) gz: bool,
    pub(crate) symlink: bool,
    /// Its size, when listed with [`Look::Metadata`] (else 0).
    pub(crate) len: u64,
    /// When it was last modified (unix seconds), when listed with
    /// [`Look::Metadata`] and the system says.
    pub(crate) modified: Option<i64>,
}

/// How much a listing reads of each rotated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// The names and file types, which `readdir` gives.
    Names,
    /// And size and modification time: one `lstat` per rotated file.
    Metadata,
}

/// A canonical positive number: digits without a leading zero, below
/// `usize::MAX` (so the next one can always be named).
fn parse_number(digits: &[u8]) -> Option<usize> {
    let canonical =
        !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) && digits[0] != b'0';
    canonical
        .then(|| std::str::from_utf8(digits).ok()?.parse().ok())
        .flatten()
        .filter(|&n| n < usize::MAX)
}

/// `2026-12-01`, `2026-12-01T13`, either followed by `.<counter>`.
fn parse_dated(rest: &[u8]) -> Option<Stamp> {
    let text = std::str::from_utf8(rest).ok()?;
    let (label, counter) = match text.split_once('.') {
        Some((label, counter)) => (label, parse_number(counter.as_bytes())?),
        None => (text, 0),
    };
    let (period, start) = match label.len() {
        10 => (
            Period::Day,
            NaiveDate::parse_from_str(label, "%Y-%m-%d")
                .ok()?
                .and_hms_opt(0, 0, 0)?,
        ),
        13 => (
            Period::Hour,
            NaiveDateTime::parse_from_str(&format!("{label}:00"), "%Y-%m-%dT%H:%M").ok()?,
        ),
        _ => return None,
    };
    // Exactly as the appender writes it (no `+2026`, no `2026-1-01`).
    (period.label(start) == label).then_some(Stamp::Dated {
        period,
        start,
        counter,
    })
}

/// The stamp (and `.gz`) of a file name after the live file's name and a
/// dot, if it is one the appender gives under `naming`.
fn parse_suffix(naming: Naming, rest: &[u8]) -> Option<(Stamp, bool)> {
    let (stamp, gz) = match rest.strip_suffix(b".gz") {
        Some(stamp) => (stamp, true),
        None => (rest, false),
    };
    let stamp = if naming.is_dated() {
        parse_dated(stamp)?
    } else {
        Stamp::Index(parse_number(stamp)?)
    };
    Some((stamp, gz))
}

/// The rotated files of `path` under `naming` present in its directory
/// (one `readdir`), in no particular order. Directories and other
/// non-files with such names are not the appender's and are left out;
/// symlinks are listed, marked, so a rotation can refuse them, and
/// retention leaves them alone.
pub(crate) fn present(path: &Path, naming: Naming, look: Look) -> io::Result<Vec<Rotated>> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Ok(Vec::new());
    };
    let mut prefix = name.as_encoded_bytes().to_vec();
    prefix.push(b'.');
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(rest) = file_name.as_encoded_bytes().strip_prefix(prefix.as_slice()) else {
            continue;
        };
        let Some((stamp, gz)) = parse_suffix(naming, rest) else {
            continue;
        };
        let file_type = entry.file_type()?;
        if !file_type.is_file() && !file_type.is_symlink() {
            continue;
        }
        let mut rotated = Rotated {
            stamp,
            gz,
            symlink: file_type.is_symlink(),
            len: 0,
            modified: None,
        };
        if look == Look::Metadata {
            // Not following a symlink: its own size and time.
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                // Removed since the listing: not present.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            rotated.len = meta.len();
            rotated.modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .and_then(|d| i64::try_from(d.as_secs()).ok());
        }
        found.push(rotated);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str, counter: usize) -> Stamp {
        Stamp::Dated {
            period: Period::Day,
            start: NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap(),
            counter,
        }
    }

    #[track_caller]
    fn check(naming: Naming, suffix: &str, expected: Option<(Stamp, bool)>) {
        assert_eq!(
            parse_suffix(naming, suffix.as_bytes()),
            expected,
            "{suffix:?}"
        );
        if let Some((stamp, gz)) = expected {
            let path = rotated_path(Path::new("d/app.log"), &stamp, gz);
            assert_eq!(
                path,
                Path::new(&format!("d/app.log.{suffix}")),
                "round trip"
            );
        }
    }

    #[test]
    fn numbered_names() {
        check(Naming::NUMBERED, "3", Some((Stamp::Index(3), false)));
        check(Naming::NUMBERED, "12.gz", Some((Stamp::Index(12), true)));
        for other in [
            "",
            "03",
            "0",
            "3.bak",
            "x",
            ".gz",
            "3.gz.gz",
            "-1",
            "2026-12-01",
        ] {
            check(Naming::NUMBERED, other, None);
        }
    }

    #[test]
    fn dated_names() {
        check(
            Naming::DATED,
            "2026-12-01",
            Some((day("2026-12-01", 0), false)),
        );
        check(
            Naming::DATED,
            "2026-12-01.2",
            Some((day("2026-12-01", 2), false)),
        );
        check(
            Naming::DATED,
            "2026-12-01.2.gz",
            Some((day("2026-12-01", 2), true)),
        );
        let hour = Stamp::Dated {
            period: Period::Hour,
            start: NaiveDateTime::parse_from_str("2026-12-01T13:00", "%Y-%m-%dT%H:%M").unwrap(),
            counter: 0,
        };
        check(Naming::DATED, "2026-12-01T13", Some((hour, false)));
        check(Naming::DATED, "2026-12-01T13.gz", Some((hour, true)));
        for other in [
            "",
            "3",
            "2026-12-1",
            "2026-13-01",
            "2026-02-30",
            "2026-12-01T24",
            "2026-12-01T1",
            "2026-12-01T13:00",
            "2026-12-01.0",
            "2026-12-01.01",
            "2026-12-01.bak",
            "2026-12-01.1.2",
            "2026-12-01.gz.gz",
            "+2026-12-01",
            " 2026-12-01",
            "2026-12-01 ",
            "20261201",
        ] {
            check(Naming::DATED, other, None);
        }
    }

    #[test]
    fn newest_first() {
        let mut stamps = [
            day("2026-12-01", 1),
            day("2026-11-30", 0),
            day("2026-12-02", 0),
            day("2026-12-01", 0),
            day("2026-12-01", 10),
            day("2026-12-01", 2),
        ];
        stamps.sort_by(Stamp::newest_first);
        let names: Vec<String> = stamps.iter().map(Stamp::suffix).collect();
        assert_eq!(
            names,
            [
                "2026-12-02",
                "2026-12-01.10",
                "2026-12-01.2",
                "2026-12-01.1",
                "2026-12-01",
                "2026-11-30"
            ]
        );
        let mut numbered = [Stamp::Index(3), Stamp::Index(1), Stamp::Index(2)];
        numbered.sort_by(Stamp::newest_first);
        assert_eq!(
            numbered,
            [Stamp::Index(1), Stamp::Index(2), Stamp::Index(3)]
        );
    }
}
