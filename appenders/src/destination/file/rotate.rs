//! Rotation: shifting `app.log.N` to `app.log.N+1`, moving the live file to
//! `app.log.1` and opening a new one, refusing symlinks at every target,
//! then compressing `app.log.1` when asked.
//!
//! Rotation renames `app.log` to `app.log.1`, `app.log.1` to `app.log.2`, …,
//! keeps `keep` rotated files and opens a new `app.log`, so the live file is
//! always at the configured path and `tail -F` follows it.

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

impl RollingFile {
    /// Shifts the rotated files, moves the live file to `.1` and opens a
    /// new live file. Called between writes, so it splits no line.
    pub(crate) fn rotate(&mut self) -> Result<(), AppendError> {
        let path = self.config.path.clone();
        let keep = self.config.keep;
        // Refuse before touching anything, so a refusal leaves no half-done
        // rotation behind. A rename onto a symlink would replace the link,
        // not follow it, but a link where a log should be is an attack or
        // a mistake either way.
        for index in 1..=keep {
            for gz in [false, true] {
                let target = numbered(&path, index, gz);
                if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(AppendError::new(
                        Operation::Rotate,
                        format!("{}: refusing to rotate onto a symlink", target.display()),
                    ));
                }
            }
        }
        let ignore_missing = |result: io::Result<()>, at: &Path| match result {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(rotate_error(e, at)),
            _ => Ok(()),
        };
        if keep == 0 {
            ignore_missing(fs::remove_file(&path), &path)?;
        } else {
            for gz in [false, true] {
                let oldest = numbered(&path, keep, gz);
                ignore_missing(fs::remove_file(&oldest), &oldest)?;
                for index in (1..keep).rev() {
                    let from = numbered(&path, index, gz);
                    ignore_missing(fs::rename(&from, numbered(&path, index + 1, gz)), &from)?;
                }
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
