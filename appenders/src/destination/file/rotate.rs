//! Rotation: moving the live file aside under its rotated name and opening
//! a new one, refusing symlinks, compressing the rotated file when asked,
//! then removing what the retention limits no longer allow.
//!
//! The live file is always at the configured path, so `tail -F` follows it.
//!
//! - Numbered: `app.log.1` is renamed to `app.log.2`, …, highest first, then
//!   `app.log` to `app.log.1`; files that would be shifted past `keep` are
//!   removed first.
//! - Dated: `app.log` is renamed to `app.log.<period>`, or
//!   `app.log.<period>.<n>` after the largest counter of that period present:
//!   one rename, nothing shifted, nothing replaced. The period is never
//!   earlier than the newest dated period present: after the clock went
//!   back, the file takes that newest period and its next counter, so the
//!   names still sort in writing order and retention removes the oldest.
//!
//! Neither renames onto something the listing left out (a FIFO, a
//! directory, a symlink it keeps, a number past the range it reads): a
//! dated rotation steps over it to the next counter, a numbered one is
//! refused with [`io::ErrorKind::AlreadyExists`] before anything is
//! renamed. (Something created at a target between that check and the
//! rename would still be replaced: closing that needs
//! `renameat2(RENAME_NOREPLACE)`, and the crate has no `unsafe`.) A
//! rotation that would need a number of `usize::MAX` or more (one
//! [`present`] would not read back) is refused the same way.
//!
//! Both work from the directory's listing, not from the limits: one
//! `readdir` finds the rotated files present (by the appender's own naming
//! only, [`naming`](super::naming)), and the rotation renames or removes
//! those, so its cost follows the files present, with `keep` at 10 or
//! unlimited alike. Retention ([`retention`](super::retention)) runs when
//! the file is opened and after each rotation, so files left past the
//! limits by an earlier run go too.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use chrono::NaiveDateTime;

use crate::appender::{AppendError, Operation};

use super::naming::{gz_path, present, rotated_path, Look, Rotated, Stamp};
#[cfg(feature = "gzip")]
use super::policy::Compression;
use super::policy::FileConfig;
use super::zone::Period;
use super::RollingFile;

/// Whether `e` is the error `O_NOFOLLOW` gives for a symlink.
pub(crate) fn is_symlink_refusal(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        e.kind() == io::ErrorKind::PermissionDenied
    }
}

/// Opens `path` for appending, creating it with `mode`, refusing a symlink.
///
/// The mode is given to `open(2)` itself (`O_CREAT` with a mode), so the
/// file never exists with looser permissions; the umask still applies, as
/// it does for every `open`. An existing file keeps its mode.
pub(crate) fn open_log_file(path: &Path, mode: u32, create_new: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    if create_new {
        options.write(true).create_new(true);
    } else {
        options.append(true).create(true);
    }
    // Readable too: opening checks whether the file ends mid-line.
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode).custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(not(unix))]
    {
        let _ = mode;
        if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
    }
    options.open(path)
}

/// Removes the rotated files the retention limits no longer allow (the
/// appender's own names only, and never a symlink: the appender writes no
/// file through one, so a link with such a name is someone else's and
/// counts toward no limit). Fails with the path it could not list or
/// remove.
pub(crate) fn retain(config: &FileConfig, now: i64) -> Result<(), (PathBuf, io::Error)> {
    let retention = config.retention;
    if retention.keeps_everything() {
        return Ok(());
    }
    let look = if retention.needs_metadata() {
        Look::Metadata
    } else {
        Look::Names
    };
    let mut listing =
        present(&config.path, config.naming, look).map_err(|e| (config.path.clone(), e))?;
    listing.retain(|r| !r.symlink);
    for r in retention.expired(listing, now, config.zone) {
        let at = rotated_path(&config.path, &r.stamp, r.gz);
        ignore_missing(fs::remove_file(&at)).map_err(|e| (at, e))?;
    }
    Ok(())
}

/// A file gone already is what removing or moving it was for (another
/// process's retention, or a rotation racing ours).
fn ignore_missing(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn rotate_error(e: io::Error, path: &Path) -> AppendError {
    AppendError::io(Operation::Rotate, e).with_detail(path.display().to_string())
}

/// The rotation of `path` would need a number of `usize::MAX` or more,
/// which the listing would not read back: refused, typed as
/// [`io::ErrorKind::AlreadyExists`] (every name it can give is taken).
fn no_free_name(path: &Path) -> AppendError {
    AppendError::io(
        Operation::Rotate,
        io::Error::from(io::ErrorKind::AlreadyExists),
    )
    .with_detail(format!(
        "{}: no free name for the rotated file",
        path.display()
    ))
}

/// Something the listing left out (not a file or a link: a FIFO, a
/// directory) is at the rotation target `at`: refused, never replaced.
fn obstructed(at: &Path) -> AppendError {
    AppendError::io(
        Operation::Rotate,
        io::Error::from(io::ErrorKind::AlreadyExists),
    )
    .with_detail(format!(
        "{}: refusing to rotate onto something that is not a rotated file",
        at.display()
    ))
}

/// The next number after `n` that a listing reads back (below
/// `usize::MAX`, as [`present`] reads them).
fn next_number(n: usize) -> Option<usize> {
    n.checked_add(1).filter(|&next| next < usize::MAX)
}

/// The numbered index of a rotated file (dated ones never reach here).
fn index(r: &Rotated) -> usize {
    match r.stamp {
        Stamp::Index(index) => index,
        Stamp::Dated { .. } => usize::MAX,
    }
}

/// What one numbered rotation does to the rotated files present: remove
/// those that would be shifted past `keep` (every one with `keep` 0), then
/// rename the others one up, highest first. Symlinks past `keep` are not
/// the appender's and stay (retention never removes a link). `None` if it
/// would rename a symlink.
fn plan(mut present: Vec<Rotated>, keep: usize) -> Option<(Vec<Rotated>, Vec<Rotated>)> {
    present.sort_by_key(|r| std::cmp::Reverse(index(r)));
    let (shifted, removed): (Vec<Rotated>, Vec<Rotated>) =
        present.into_iter().partition(|r| index(r) < keep);
    if shifted.iter().any(|r| r.symlink) {
        return None;
    }
    Some((
        removed.into_iter().filter(|r| !r.symlink).collect(),
        shifted,
    ))
}

/// The dated stamp for the live file of the period starting at `start`:
/// after the largest counter of that period present (a counter of 0, no
/// counter, when none is). When a later period of the same length is
/// present (the clock went back), that period and its next counter
/// instead: a rotated name never sorts before one already there. `None`
/// when the counter would reach `usize::MAX`, which the listing would not
/// read back.
fn dated_stamp(period: Period, start: NaiveDateTime, present: &[Rotated]) -> Option<Stamp> {
    let newest = present
        .iter()
        .filter_map(|r| match r.stamp {
            Stamp::Dated {
                period: p,
                start: s,
                counter,
            } if p == period && s >= start => Some((s, counter)),
            _ => None,
        })
        .max();
    let (start, counter) = match newest {
        Some((s, counter)) => (s, next_number(counter)?),
        None => (start, 0),
    };
    Some(Stamp::Dated {
        period,
        start,
        counter,
    })
}

/// Whether anything (a file, a link, a directory) is at `path`.
fn taken(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl RollingFile {
    /// Moves the live file aside under its rotated name (or removes it,
    /// with `keep` 0), opens a new live file, compresses the rotated one
    /// when asked, and applies retention; `now` is the clock's time (unix
    /// seconds). Called between writes, so it splits no line.
    pub(crate) fn rotate(&mut self, now: i64) -> Result<(), AppendError> {
        let path = self.config.path.clone();
        let rotated = if self.config.retention.keep == 0 {
            ignore_missing(fs::remove_file(&path)).map_err(|e| rotate_error(e, &path))?;
            None
        } else if self.config.naming.is_dated() {
            Some(self.move_dated(now)?)
        } else {
            Some(self.shift_numbered()?)
        };
        self.reopen(Operation::Rotate)?;
        self.start_period(now);
        if let Some(rotated) = rotated {
            self.compress(&rotated)?;
        }
        // A numbered rotation kept the count already; the other limits,
        // and every limit of dated names, need a look at what is left.
        let keep = self.config.retention.keep;
        if keep == 0 || self.config.naming.is_dated() || self.config.retention.needs_metadata() {
            retain(&self.config, now).map_err(|(at, e)| rotate_error(e, &at))?;
        }
        Ok(())
    }

    /// Shifts the numbered files up by one and moves the live file to
    /// `.1`; returns that path.
    fn shift_numbered(&self) -> Result<PathBuf, AppendError> {
        let path = &self.config.path;
        let listing =
            present(path, self.config.naming, Look::Names).map_err(|e| rotate_error(e, path))?;
        // Refuse before touching anything, so a refusal leaves no half-done
        // rotation behind. A rename onto a symlink would replace the link,
        // not follow it, but a link where a log should be is an attack or
        // a mistake either way.
        let Some((removed, shifted)) = plan(listing, self.config.retention.keep) else {
            return Err(AppendError::new(
                Operation::Rotate,
                format!("{}: refusing to rotate onto a symlink", path.display()),
            ));
        };
        // Every target is a name the rotation empties first, or nothing
        // is there: the listing leaves out what is not a file or a link
        // (a FIFO), and numbers past its range (`usize::MAX`).
        let vacated = |index: usize, gz: bool| {
            removed
                .iter()
                .chain(&shifted)
                .any(|r| r.stamp == Stamp::Index(index) && r.gz == gz)
        };
        let mut renames = Vec::with_capacity(shifted.len() + 1);
        for (from, gz, to) in shifted
            .iter()
            .map(|r| {
                (
                    rotated_path(path, &r.stamp, r.gz),
                    r.gz,
                    next_number(index(r)),
                )
            })
            .chain([(path.clone(), false, Some(1))])
        {
            let to = to.ok_or_else(|| no_free_name(path))?;
            let target = rotated_path(path, &Stamp::Index(to), gz);
            if !vacated(to, gz) && taken(&target).map_err(|e| rotate_error(e, &target))? {
                return Err(obstructed(&target));
            }
            renames.push((from, target));
        }
        for r in &removed {
            let at = rotated_path(path, &r.stamp, r.gz);
            ignore_missing(fs::remove_file(&at)).map_err(|e| rotate_error(e, &at))?;
        }
        for (from, to) in &renames {
            ignore_missing(fs::rename(from, to)).map_err(|e| rotate_error(e, from))?;
        }
        Ok(rotated_path(path, &Stamp::Index(1), false))
    }

    /// Moves the live file to its dated name, one no file has (plain or
    /// compressed); returns that path.
    fn move_dated(&self, now: i64) -> Result<PathBuf, AppendError> {
        let path = &self.config.path;
        let (Some(period), Some(start)) = (
            self.config.rotation.period(),
            self.period.or_else(|| self.current_period(now)),
        ) else {
            // Building refuses dated names without a time rotation.
            return Err(AppendError::new(
                Operation::Rotate,
                format!("{}: no period to name the rotated file by", path.display()),
            ));
        };
        let listing =
            present(path, self.config.naming, Look::Names).map_err(|e| rotate_error(e, path))?;
        let mut stamp = dated_stamp(period, start, &listing).ok_or_else(|| no_free_name(path))?;
        // The listing leaves out what is not a file or a link (a directory
        // with that name): step over it too, never onto it.
        loop {
            let target = rotated_path(path, &stamp, false);
            let taken = |p: &Path| taken(p).map_err(|e| rotate_error(e, p));
            if !taken(&target)? && !taken(&gz_path(&target))? {
                ignore_missing(fs::rename(path, &target)).map_err(|e| rotate_error(e, path))?;
                return Ok(target);
            }
            let next = match &mut stamp {
                Stamp::Dated { counter, .. } => next_number(*counter).map(|n| *counter = n),
                Stamp::Index(_) => None,
            };
            if next.is_none() {
                return Err(no_free_name(path));
            }
        }
    }

    #[cfg(feature = "gzip")]
    fn compress(&self, rotated: &Path) -> Result<(), AppendError> {
        if self.config.compression != Compression::Gzip {
            return Ok(());
        }
        let target = gz_path(rotated);
        let result = (|| {
            let mut input = OpenOptions::new();
            input.read(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut input, libc::O_NOFOLLOW);
            let mut input = input.open(rotated)?;
            let output = open_log_file(&target, self.config.mode, true)?;
            let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
            io::copy(&mut input, &mut encoder)?;
            encoder.finish()?.sync_all()?;
            fs::remove_file(rotated)
        })();
        result.map_err(|e| rotate_error(e, &target))
    }

    #[cfg(not(feature = "gzip"))]
    #[allow(clippy::unnecessary_wraps, clippy::unused_self)]
    fn compress(&self, _rotated: &Path) -> Result<(), AppendError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotated(index: usize, gz: bool) -> Rotated {
        Rotated {
            stamp: Stamp::Index(index),
            gz,
            symlink: false,
            len: 0,
            modified: None,
        }
    }

    /// The plan touches the files present and nothing else, whatever `keep`:
    /// a rotation's cost follows the directory, not the setting.
    #[test]
    fn a_rotation_plans_one_step_per_file_present() {
        let present = vec![rotated(1, false), rotated(2, true), rotated(3, false)];
        for keep in [10, 100_000, usize::MAX] {
            let (removed, shifted) = plan(present.clone(), keep).unwrap();
            assert!(removed.is_empty());
            let order: Vec<usize> = shifted.iter().map(index).collect();
            assert_eq!(order, [3, 2, 1], "highest first");
        }
        // Files that would be shifted past `keep` go; an earlier run's too.
        let (removed, shifted) = plan(
            vec![rotated(1, false), rotated(2, false), rotated(4, false)],
            2,
        )
        .unwrap();
        let removed: Vec<usize> = removed.iter().map(index).collect();
        assert_eq!(removed, [4, 2]);
        assert_eq!(shifted, [rotated(1, false)]);
        // A symlink that would be renamed refuses the rotation.
        let link = Rotated {
            symlink: true,
            ..rotated(1, false)
        };
        assert!(plan(vec![link], 2).is_none());
        let far = Rotated {
            stamp: Stamp::Index(5),
            ..link
        };
        // One past `keep` is not the appender's either: left, not removed.
        let (removed, shifted) = plan(vec![far, rotated(4, false)], 2).unwrap();
        assert_eq!(removed, [rotated(4, false)]);
        assert!(shifted.is_empty());
    }

    #[test]
    fn a_dated_stamp_comes_after_the_largest_counter_of_its_period() {
        let day = |d: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 12, d)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
        };
        let file = |d: u32, counter: usize| Rotated {
            stamp: Stamp::Dated {
                period: Period::Day,
                start: day(d),
                counter,
            },
            ..rotated(1, false)
        };
        let stamp = |present: &[Rotated]| match dated_stamp(Period::Day, day(2), present) {
            Some(Stamp::Dated { start, counter, .. }) => Some((start, counter)),
            _ => None,
        };
        assert_eq!(stamp(&[]), Some((day(2), 0)));
        assert_eq!(stamp(&[file(1, 0), file(1, 4)]), Some((day(2), 0)));
        assert_eq!(stamp(&[file(2, 0)]), Some((day(2), 1)));
        // After the largest, not in the first gap: the order of names stays
        // the order of writing.
        assert_eq!(
            stamp(&[file(2, 0), file(2, 3), file(1, 7)]),
            Some((day(2), 4))
        );
        // A later day present (the clock went back): its next counter.
        assert_eq!(
            stamp(&[file(1, 0), file(3, 0), file(2, 5)]),
            Some((day(3), 1))
        );
        assert_eq!(stamp(&[file(3, 2), file(4, 0)]), Some((day(4), 1)));
        // An hourly name of a later hour is another period's: not followed.
        let hour = Rotated {
            stamp: Stamp::Dated {
                period: Period::Hour,
                start: day(3),
                counter: 0,
            },
            ..file(1, 0)
        };
        assert_eq!(stamp(&[hour]), Some((day(2), 0)));
        // The last counter a listing reads back is taken: no name left.
        assert_eq!(stamp(&[file(2, usize::MAX - 1)]), None);
        assert_eq!(stamp(&[file(3, usize::MAX - 1)]), None);
        assert_eq!(
            stamp(&[file(2, usize::MAX - 2)]),
            Some((day(2), usize::MAX - 1))
        );
    }

    #[test]
    fn numbers_stop_below_the_last_the_listing_reads() {
        assert_eq!(next_number(1), Some(2));
        assert_eq!(next_number(usize::MAX - 2), Some(usize::MAX - 1));
        assert_eq!(next_number(usize::MAX - 1), None);
        assert_eq!(next_number(usize::MAX), None);
    }
}
