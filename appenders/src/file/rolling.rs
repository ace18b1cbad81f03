//! The rolling file: the mechanism shared by the file and JSON appenders.
//!
//! It owns the open log file, the lines of the current call, the rotation
//! policy and the clock. Appenders hand the records of one call to
//! [`RollingFile::append`] with a function rendering one record; the lines
//! are written to the file before it returns (see [`crate::write`]).
//! Rotation happens between records, never inside a line.
//!
//! Rotation renames `app.log` to `app.log.1`, `app.log.1` to `app.log.2`, …,
//! keeps `keep` rotated files and opens a new `app.log`, so the live file is
//! always at the configured path and `tail -F` follows it.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::appender::{AppendError, BatchError, Operation};
use crate::record::Record;
use crate::write::{end_line, render_line, LineOutput, Lines, BUFFER_LIMIT};

use super::{FileError, FileErrorKind};

/// How often a rolling file rotates by time, in UTC.
///
/// A struct with associated constants rather than an enum, so that policies
/// with parameters (every N minutes) can be added without breaking users.
///
/// # Examples
///
/// ```
/// use logbus_appenders::Rotation;
///
/// assert_ne!(Rotation::HOURLY, Rotation::DAILY);
/// assert_eq!(Rotation::default(), Rotation::NEVER);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rotation(RotationKind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum RotationKind {
    #[default]
    Never,
    Hourly,
    Daily,
}

impl Rotation {
    /// No rotation by time (default).
    pub const NEVER: Rotation = Rotation(RotationKind::Never);
    /// Rotate at the first record written after each full UTC hour.
    pub const HOURLY: Rotation = Rotation(RotationKind::Hourly);
    /// Rotate at the first record written after each UTC midnight.
    pub const DAILY: Rotation = Rotation(RotationKind::Daily);

    fn period_secs(self) -> Option<u64> {
        match self.0 {
            RotationKind::Never => None,
            RotationKind::Hourly => Some(3600),
            RotationKind::Daily => Some(86_400),
        }
    }

    /// The first boundary strictly after `now` (unix seconds).
    fn next_boundary(self, now: u64) -> Option<u64> {
        self.period_secs().map(|p| (now / p + 1) * p)
    }
}

/// Where a rolling file reads the time for time-based rotation.
///
/// The default is [`SystemClock`]; tests inject their own so they never
/// sleep.
///
/// # For implementors
///
/// `now` is called once per record when time rotation is on; make it cheap.
///
/// # Examples
///
/// ```
/// use logbus_appenders::Clock;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use std::time::{Duration, SystemTime};
///
/// /// A clock the test moves by hand.
/// #[derive(Debug, Clone, Default)]
/// struct ManualClock(Arc<AtomicU64>);
///
/// impl Clock for ManualClock {
///     fn now(&self) -> SystemTime {
///         // Relaxed: the value publishes no other memory.
///         SystemTime::UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::Relaxed))
///     }
/// }
/// ```
pub trait Clock: Send + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// What to do with rotated files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Keep rotated files as they are (default).
    #[default]
    None,
    /// Compress each rotated file to `app.log.1.gz` (feature `gzip`), on the
    /// appender's worker thread, right after the rotation.
    #[cfg(feature = "gzip")]
    Gzip,
}

/// The validated configuration of a rolling file.
#[derive(Debug, Clone)]
pub(crate) struct FileConfig {
    pub(crate) path: PathBuf,
    pub(crate) max_bytes: Option<u64>,
    pub(crate) rotation: Rotation,
    pub(crate) keep: usize,
    pub(crate) mode: u32,
    pub(crate) compression: Compression,
}

/// How often, at most, the path is compared with the open file while the
/// queue never runs empty: cheap (one `stat`), and logrotate works on
/// minutes.
const PATH_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// An open log file with rotation; see the module docs.
#[derive(Debug)]
pub(crate) struct RollingFile {
    config: FileConfig,
    clock: Box<dyn Clock>,
    file: File,
    /// Device and inode of `file`, to notice it was moved or deleted.
    id: Option<(u64, u64)>,
    /// Bytes in the live file.
    size: u64,
    /// The lines of the current call.
    lines: Lines,
    /// Unix second at which the next time rotation is due.
    next_rollover: Option<u64>,
    last_path_check: Instant,
    /// A flush came since the last check: the queue ran empty, so the
    /// next call compares the path with the open file before writing.
    check_path_next: bool,
}

fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(unix)]
fn file_id(meta: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_meta: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Whether `e` is the error `O_NOFOLLOW` gives for a symlink.
fn is_symlink_refusal(e: &io::Error) -> bool {
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

impl LineOutput for RollingFile {
    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    fn write_out(&mut self, first: usize) -> Result<(), BatchError> {
        self.write_lines_out(first)
    }
}

impl RollingFile {
    /// Creates the directories and opens the live file.
    pub(crate) fn open(
        config: FileConfig,
        clock: Box<dyn Clock>,
    ) -> Result<RollingFile, FileError> {
        let path = config.path.clone();
        let fail = |kind, e| FileError::io(kind, &path, e);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            let mut dirs = fs::DirBuilder::new();
            dirs.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o750);
            dirs.create(parent)
                .map_err(|e| fail(FileErrorKind::CreateDir, e))?;
        }
        let file = open_log_file(&path, config.mode, false).map_err(|e| {
            if is_symlink_refusal(&e) {
                fail(FileErrorKind::Symlink, e)
            } else {
                fail(FileErrorKind::Open, e)
            }
        })?;
        let meta = file.metadata().map_err(|e| fail(FileErrorKind::Open, e))?;
        let next_rollover = config.rotation.next_boundary(unix_secs(clock.now()));
        Ok(RollingFile {
            config,
            clock,
            file,
            id: file_id(&meta),
            size: meta.len(),
            lines: Lines::with_capacity(BUFFER_LIMIT),
            next_rollover,
            last_path_check: Instant::now(),
            check_path_next: false,
        })
    }

    /// The configured path of the live file.
    pub(crate) fn path(&self) -> &Path {
        &self.config.path
    }

    fn detail(&self) -> String {
        self.config.path.display().to_string()
    }

    /// Appends `records`, in order, writing their lines to the file before
    /// returning; `render` appends one record's complete line(s) to the
    /// buffer it is given.
    ///
    /// On error, the records before [`BatchError::written`] are in the file
    /// and nothing of the others is kept, so the broker's retry writes each
    /// exactly once.
    pub(crate) fn append<'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r Record>,
        mut render: impl FnMut(&Record, &mut Vec<u8>) -> Result<(), AppendError>,
    ) -> Result<(), BatchError> {
        self.lines.clear();
        if self.check_path_next || self.last_path_check.elapsed() >= PATH_CHECK_INTERVAL {
            self.check_path()
                .map_err(|error| BatchError { written: 0, error })?;
        }
        // Index of the first record whose line is in `lines`.
        let mut first = 0;
        for (index, record) in records.into_iter().enumerate() {
            let rotate_err = |error| BatchError {
                written: index,
                error,
            };
            if let Some(due) = self.next_rollover {
                let now = unix_secs(self.clock.now());
                if now >= due {
                    self.write_out(first)?;
                    first = index;
                    // An empty file is not rotated: it would push a useful
                    // file out of the retention window for nothing.
                    if self.size > 0 {
                        self.rotate().map_err(rotate_err)?;
                    }
                    self.next_rollover = self.config.rotation.next_boundary(now);
                }
            }
            let start = render_line(self, &mut render, record, index, first)?;
            if let Some(max) = self.config.max_bytes {
                let before = self.size + start as u64;
                let len = (self.lines.len() - start) as u64;
                // A record larger than `max_bytes` gets a file of its own.
                if before > 0 && before + len > max {
                    let line = self.lines.take_from(start);
                    self.write_out(first)?;
                    first = index;
                    self.rotate().map_err(rotate_err)?;
                    self.lines.begin();
                    self.lines.buf().extend_from_slice(&line);
                }
            }
            first = end_line(self, index, first)?;
        }
        self.write_out(first)
    }

    /// Nothing is buffered between calls: notes that the queue ran empty,
    /// so the next call first checks the path still names the open file
    /// (and reopens it if logrotate moved or deleted it).
    pub(crate) fn flush(&mut self) -> Result<(), AppendError> {
        self.check_path_next = true;
        Ok(())
    }

    /// Writes the lines of the call, whose first record is record `first`,
    /// counting the bytes that reached the file.
    fn write_lines_out(&mut self, first: usize) -> Result<(), BatchError> {
        match self.lines.write_to(&mut self.file) {
            Ok(bytes) => {
                self.size += bytes;
                Ok(())
            }
            Err(failure) => {
                self.size += failure.bytes;
                Err(BatchError {
                    written: first + failure.records,
                    error: AppendError::io(Operation::Write, failure.error)
                        .with_detail(self.detail()),
                })
            }
        }
    }

    /// Reopens the path if the open file was moved or deleted (logrotate).
    fn check_path(&mut self) -> Result<(), AppendError> {
        self.last_path_check = Instant::now();
        self.check_path_next = false;
        let Some(id) = self.id else { return Ok(()) };
        match fs::symlink_metadata(&self.config.path) {
            Ok(meta) if file_id(&meta) == Some(id) => {
                // Someone may have truncated it (copytruncate).
                if let Ok(meta) = self.file.metadata() {
                    self.size = meta.len();
                }
                Ok(())
            }
            Ok(_) => self.reopen(Operation::Open),
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.reopen(Operation::Open),
            Err(e) => Err(AppendError::io(Operation::Open, e).with_detail(self.detail())),
        }
    }

    fn reopen(&mut self, operation: Operation) -> Result<(), AppendError> {
        let path = &self.config.path;
        let file = open_log_file(path, self.config.mode, false).map_err(|e| {
            let detail = if is_symlink_refusal(&e) {
                format!("{}: refusing to follow a symlink", path.display())
            } else {
                path.display().to_string()
            };
            AppendError::io(operation, e).with_detail(detail)
        })?;
        let meta = file
            .metadata()
            .map_err(|e| AppendError::io(operation, e).with_detail(self.detail()))?;
        self.file = file;
        self.id = file_id(&meta);
        self.size = meta.len();
        // A partial line left by a failed write stays in the old file.
        self.lines.new_destination();
        Ok(())
    }

    /// Shifts the rotated files, moves the live file to `.1` and opens a
    /// new live file. Called between writes, so it splits no line.
    fn rotate(&mut self) -> Result<(), AppendError> {
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
    fn boundaries() {
        assert_eq!(Rotation::NEVER.next_boundary(5), None);
        assert_eq!(Rotation::HOURLY.next_boundary(0), Some(3600));
        assert_eq!(Rotation::HOURLY.next_boundary(3599), Some(3600));
        assert_eq!(Rotation::HOURLY.next_boundary(3600), Some(7200));
        assert_eq!(Rotation::DAILY.next_boundary(86_399), Some(86_400));
        assert_eq!(Rotation::DAILY.next_boundary(86_400), Some(172_800));
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
