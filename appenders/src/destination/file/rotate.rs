//! Rotation: shifting `app.log.N` to `app.log.N+1`, moving the live file to
//! `app.log.1` and opening a new one, refusing symlinks, then compressing
//! `app.log.1` when asked.
//!
//! Rotation renames `app.log` to `app.log.1`, `app.log.1` to `app.log.2`, …,
//! keeps `keep` rotated files and opens a new `app.log`, so the live file is
//! always at the configured path and `tail -F` follows it.
//!
//! It works from the directory's listing, not from `keep`: one `readdir`
//! finds the rotated files present (by the appender's own naming only,
//! `<name>.<N>` and `<name>.<N>.gz` with `N` written without leading
//! zeros), and the rotation renames or removes those, so its cost follows
//! the files present, with `keep` at 10 or unlimited alike. Files above
//! `keep` (left by an earlier run with a larger one) are removed when the
//! file is opened and at each rotation.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::appender::{AppendError, Operation};

#[cfg(feature = "gzip")]
use super::policy::Compression;
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

/// Removes the rotated files above `keep` (an earlier run's, with a larger
/// `keep`), by the appender's own naming only; called when the file is
/// opened.
pub(crate) fn prune(config: &super::policy::FileConfig) -> io::Result<()> {
    if config.keep == usize::MAX {
        return Ok(());
    }
    for r in present(&config.path)? {
        if r.index > config.keep {
            match fs::remove_file(numbered(&config.path, r.index, r.gz)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// `app.log` + `.3` (+ `.gz`).
fn numbered(path: &Path, index: usize, gz: bool) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{index}"));
    if gz {
        name.push(".gz");
    }
    PathBuf::from(name)
}

fn rotate_error(e: io::Error, path: &Path) -> AppendError {
    AppendError::io(Operation::Rotate, e).with_detail(path.display().to_string())
}

/// A rotated file present beside the live one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rotated {
    index: usize,
    gz: bool,
    symlink: bool,
}

/// The index (and `.gz`) of a file name after the live file's name and a
/// dot: `3` or `3.gz`, digits without a leading zero.
fn parse_suffix(rest: &[u8]) -> Option<(usize, bool)> {
    let (digits, gz) = match rest.strip_suffix(b".gz") {
        Some(digits) => (digits, true),
        None => (rest, false),
    };
    let canonical =
        !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) && (digits[0] != b'0');
    if !canonical {
        return None;
    }
    let index: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((index, gz))
}

/// The rotated files of `path` present in its directory (one `readdir`).
fn present(path: &Path) -> io::Result<Vec<Rotated>> {
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
        if let Some((index, gz)) = parse_suffix(rest) {
            found.push(Rotated {
                index,
                gz,
                symlink: entry.file_type()?.is_symlink(),
            });
        }
    }
    Ok(found)
}

/// What one rotation does to the rotated files present: remove those that
/// would be shifted past `keep` (every one with `keep` 0), then rename the
/// others one up, highest first. `None` if it would rename a symlink or
/// rename onto one (removing a link never follows it).
fn plan(mut present: Vec<Rotated>, keep: usize) -> Option<(Vec<Rotated>, Vec<Rotated>)> {
    present.sort_by_key(|r| std::cmp::Reverse(r.index));
    let (shifted, removed): (Vec<Rotated>, Vec<Rotated>) =
        present.into_iter().partition(|r| r.index < keep);
    if shifted.iter().any(|r| r.symlink) {
        return None;
    }
    Some((removed, shifted))
}

impl RollingFile {
    /// Shifts the rotated files, moves the live file to `.1` and opens a
    /// new live file. Called between writes, so it splits no line.
    pub(crate) fn rotate(&mut self) -> Result<(), AppendError> {
        let path = self.config.path.clone();
        let keep = self.config.keep;
        let listing = present(&path).map_err(|e| rotate_error(e, &path))?;
        // Refuse before touching anything, so a refusal leaves no half-done
        // rotation behind. A rename onto a symlink would replace the link,
        // not follow it, but a link where a log should be is an attack or
        // a mistake either way.
        let Some((removed, shifted)) = plan(listing, keep) else {
            return Err(AppendError::new(
                Operation::Rotate,
                format!("{}: refusing to rotate onto a symlink", path.display()),
            ));
        };
        let ignore_missing = |result: io::Result<()>, at: &Path| match result {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(rotate_error(e, at)),
            _ => Ok(()),
        };
        for r in &removed {
            let at = numbered(&path, r.index, r.gz);
            ignore_missing(fs::remove_file(&at), &at)?;
        }
        if keep == 0 {
            ignore_missing(fs::remove_file(&path), &path)?;
        } else {
            for r in &shifted {
                let from = numbered(&path, r.index, r.gz);
                ignore_missing(fs::rename(&from, numbered(&path, r.index + 1, r.gz)), &from)?;
            }
            ignore_missing(fs::rename(&path, numbered(&path, 1, false)), &path)?;
        }
        self.reopen(Operation::Rotate)?;
        if keep > 0 {
            self.compress(&numbered(&path, 1, false))?;
        }
        Ok(())
    }

    #[cfg(feature = "gzip")]
    fn compress(&self, rotated: &Path) -> Result<(), AppendError> {
        if self.config.compression != Compression::Gzip {
            return Ok(());
        }
        let target = numbered(&self.config.path, 1, true);
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
            index,
            gz,
            symlink: false,
        }
    }

    #[test]
    fn only_our_own_names_are_rotated_files() {
        assert_eq!(parse_suffix(b"3"), Some((3, false)));
        assert_eq!(parse_suffix(b"12.gz"), Some((12, true)));
        for other in [
            &b""[..],
            b"03",
            b"0",
            b"3.bak",
            b"x",
            b".gz",
            b"3.gz.gz",
            b"-1",
        ] {
            assert_eq!(
                parse_suffix(other),
                None,
                "{:?}",
                String::from_utf8_lossy(other)
            );
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
            let order: Vec<usize> = shifted.iter().map(|r| r.index).collect();
            assert_eq!(order, [3, 2, 1], "highest first");
        }
        // Files that would be shifted past `keep` go; an earlier run's too.
        let (removed, shifted) = plan(
            vec![rotated(1, false), rotated(2, false), rotated(4, false)],
            2,
        )
        .unwrap();
        let removed: Vec<usize> = removed.iter().map(|r| r.index).collect();
        assert_eq!(removed, [4, 2]);
        assert_eq!(shifted, [rotated(1, false)]);
        // A symlink that would be renamed refuses the rotation; one that
        // would only be removed does not (unlinking never follows).
        let link = Rotated {
            symlink: true,
            ..rotated(1, false)
        };
        assert!(plan(vec![link], 2).is_none());
        assert!(plan(vec![Rotated { index: 5, ..link }], 2).is_some());
    }

    #[test]
    fn numbered_names() {
        assert_eq!(
            numbered(Path::new("/x/app.log"), 3, false),
            Path::new("/x/app.log.3")
        );
        assert_eq!(
            numbered(Path::new("app.log"), 1, true),
            Path::new("app.log.1.gz")
        );
    }
}
