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
//!   one rename, nothing shifted, nothing replaced.
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
/// appender's own names only). Fails with the path it could not list or
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
    let listing =
        present(&config.path, config.naming, look).map_err(|e| (config.path.clone(), e))?;
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

/// The numbered index of a rotated file (dated ones never reach here).
fn index(r: &Rotated) -> usize {
    match r.stamp {
        Stamp::Index(index) => index,
        Stamp::Dated { .. } => usize::MAX,
    }
}

/// What one numbered rotation does to the rotated files present: remove
/// those that would be shifted past `keep` (every one with `keep` 0), then
/// rename the others one up, highest first. `None` if it would rename a
/// symlink or rename onto one (removing a link never follows it).
fn plan(mut present: Vec<Rotated>, keep: usize) -> Option<(Vec<Rotated>, Vec<Rotated>)> {
    present.sort_by_key(|r| std::cmp::Reverse(index(r)));
    let (shifted, removed): (Vec<Rotated>, Vec<Rotated>) =
        present.into_iter().partition(|r| index(r) < keep);
    if shifted.iter().any(|r| r.symlink) {
        return None;
    }
    Some((removed, shifted))
}

/// The dated stamp for the live file of the period starting at `start`:
/// after the largest counter of that period present (a counter of 0, no
/// counter, when none is).
fn dated_stamp(period: Period, start: NaiveDateTime, present: &[Rotated]) -> Stamp {
    let counter = present
        .iter()
        .filter_map(|r| match r.stamp {
            Stamp::Dated {
                period: p,
                start: s,
                counter,
            } if p == period && s == start => Some(counter.saturating_add(1)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    Stamp::Dated {
        period,
        start,
        counter,
    }
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
        for r in &removed {
            let at = rotated_path(path, &r.stamp, r.gz);
            ignore_missing(fs::remove_file(&at)).map_err(|e| rotate_error(e, &at))?;
        }
        for r in &shifted {
            let from = rotated_path(path, &r.stamp, r.gz);
            let to = rotated_path(path, &Stamp::Index(index(r).saturating_add(1)), r.gz);
            ignore_missing(fs::rename(&from, to)).map_err(|e| rotate_error(e, &from))?;
        }
        let first = rotated_path(path, &Stamp::Index(1), false);
        ignore_missing(fs::rename(path, &first)).map_err(|e| rotate_error(e, path))?;
        Ok(first)
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
        let mut stamp = dated_stamp(period, start, &listing);
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
                Stamp::Dated { counter, .. } => counter.checked_add(1).map(|n| *counter = n),
                Stamp::Index(_) => None,
            };
            if next.is_none() {
                return Err(AppendError::new(
                    Operation::Rotate,
                    format!("{}: no free name for the rotated file", path.display()),
                ));
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
        // A symlink that would be renamed refuses the rotation; one that
        // would only be removed does not (unlinking never follows).
        let link = Rotated {
            symlink: true,
            ..rotated(1, false)
        };
        assert!(plan(vec![link], 2).is_none());
        let far = Rotated {
            stamp: Stamp::Index(5),
            ..link
        };
        assert!(plan(vec![far], 2).is_some());
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
        let counter = |present: &[Rotated]| match dated_stamp(Period::Day, day(2), present) {
            Stamp::Dated { counter, .. } => counter,
            Stamp::Index(_) => unreachable!(),
        };
        assert_eq!(counter(&[]), 0);
        assert_eq!(counter(&[file(1, 0), file(1, 4), file(3, 0)]), 0);
        assert_eq!(counter(&[file(2, 0)]), 1);
        // After the largest, not in the first gap: the order of names stays
        // the order of writing.
        assert_eq!(counter(&[file(2, 0), file(2, 3), file(1, 7)]), 4);
    }
}
