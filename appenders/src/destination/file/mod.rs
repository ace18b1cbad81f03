//! The rolling file destination: the open log file, its rotation policy and
//! clock, shared by the file and JSON appenders.
//!
//! The render loop hands it each call's records through the
//! [`Destination`] hooks; it writes them to the file before the call
//! returns, and rotates between records, never inside a line: by time in
//! [`before_record`](Destination::before_record) (the boundary passed), by
//! size in [`before_commit`](Destination::before_commit) (the record at hand
//! would overflow `max_bytes`). In both cases the records buffered so far go
//! to the old file first.
//!
//! The live file belongs to a *period* when rotation is by time: the one
//! holding the time it was started (a new file, or one found empty), or,
//! for a non-empty file found when opening, the time it was last written
//! (its modification time, even when later than the clock's time). A file
//! left by a run of an earlier period is therefore rotated at the first
//! record, under that period's name. Its next boundary is the one after
//! the earlier of its modification time and the clock's time, so a clock
//! behind the file's time still rotates on its own next boundary. With
//! `rotate_on_start`, a non-empty file found when opening is rotated at
//! the start of the first call, on the worker.
//!
//! A clock that goes back (or runs behind the files found) never makes a
//! rotated name sort before one already present: a dated rotation takes
//! the newest period present and its next counter when that is later than
//! the file's own (see [`rotate`]), so retention still removes the files
//! written first.
//!
//! - [`policy`]: `Rotation`, `Clock`, `Compression`, the validated config;
//! - [`zone`]: `TimeZone`, periods and their boundaries;
//! - [`naming`]: `Naming`, the names of rotated files, which files are ours;
//! - [`retention`]: which rotated files to remove;
//! - [`rotate`]: opening with `O_NOFOLLOW`, the renames, compression;
//! - [`error`]: `FileError`, what building one can fail with.

pub(crate) mod error;
pub(crate) mod naming;
pub(crate) mod policy;
pub(crate) mod retention;
mod rotate;
pub(crate) mod zone;

use std::fs::{self, File};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use chrono::NaiveDateTime;

use crate::appender::{AppendError, BatchError, Operation};
use crate::format::Style;
use crate::record::Record;
use crate::render::{Lines, Output};

use self::error::{FileError, FileErrorKind};
use self::policy::{Clock, FileConfig};
use self::rotate::{is_symlink_refusal, open_log_file};
use super::{Destination, Framing};

/// How often, at most, the path is compared with the open file while the
/// queue never runs empty: cheap (one `stat`), and logrotate works on
/// minutes.
const PATH_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// An open log file with rotation; see the module docs.
#[derive(Debug)]
pub(crate) struct RollingFile {
    config: FileConfig,
    clock: Box<dyn Clock>,
    /// The live file, and whether a failed write left a partial line in it.
    file: Output<File>,
    /// Device and inode of `file`, to notice it was moved or deleted.
    id: Option<(u64, u64)>,
    /// Bytes in the live file.
    size: u64,
    /// Unix second at which the next time rotation is due.
    next_rollover: Option<i64>,
    /// The local start of the period the live file holds (time rotation).
    period: Option<NaiveDateTime>,
    /// A non-empty file was found when opening and `rotate_on_start` is
    /// set: the first call rotates it.
    rotate_pending: bool,
    last_path_check: Instant,
    /// A flush came since the last check: the queue ran empty, so the
    /// next call compares the path with the open file before writing.
    check_path_next: bool,
}

/// Unix seconds (negative before 1970).
fn unix_secs(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
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

/// Whether the file has other hard links: records written to it would also
/// land in a file planted elsewhere (`ln /etc/something app.log`).
#[cfg(unix)]
fn has_other_links(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.nlink() > 1
}

#[cfg(not(unix))]
fn has_other_links(_meta: &fs::Metadata) -> bool {
    false
}

/// Whether the file's last byte is not a line feed: a process killed in the
/// middle of a write left a partial line, which the next record must not
/// be glued to. (A read error is taken as "terminated": the worst case is
/// the old behaviour.)
#[cfg(unix)]
fn ends_mid_line(file: &File, meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8];
    meta.len() > 0
        && file
            .read_at(&mut last, meta.len() - 1)
            .is_ok_and(|n| n == 1)
        && last[0] != b'\n'
}

#[cfg(not(unix))]
fn ends_mid_line(_file: &File, _meta: &fs::Metadata) -> bool {
    false
}

/// The live file as opened: refused if it has other hard links, and owing a
/// line feed if it ends mid-line.
fn live_output(file: File, meta: &fs::Metadata) -> Option<Output<File>> {
    if has_other_links(meta) {
        return None;
    }
    Some(if ends_mid_line(&file, meta) {
        Output::after_partial_line(file)
    } else {
        Output::new(file)
    })
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
        let file = live_output(file, &meta)
            .ok_or_else(|| FileError::kind_only(FileErrorKind::Hardlink, &path))?;
        let now = unix_secs(clock.now());
        rotate::retain(&config, now)
            .map_err(|(at, e)| FileError::io(FileErrorKind::Retention, &path, e).with_file(at))?;
        // A file with records belongs to the period it was last written
        // in, even one the clock has not reached (a clock behind): its
        // name must not sort before the files it came after. The next
        // boundary follows from the earlier of the two times.
        let (written, started) = match meta.modified() {
            Ok(modified) if meta.len() > 0 => {
                let modified = unix_secs(modified);
                (modified, modified.min(now))
            }
            _ => (now, now),
        };
        let rotate_pending = config.rotate_on_start && meta.len() > 0;
        let mut rolling = RollingFile {
            config,
            clock,
            file,
            id: file_id(&meta),
            size: meta.len(),
            next_rollover: None,
            period: None,
            rotate_pending,
            last_path_check: Instant::now(),
            check_path_next: false,
        };
        rolling.hold_period(written, started);
        Ok(rolling)
    }

    /// The local start of the period holding `at`, with time rotation.
    pub(crate) fn current_period(&self, at: i64) -> Option<NaiveDateTime> {
        let period = self.config.rotation.period()?;
        self.config.zone.period_of(period, at)
    }

    /// The live file now holds the period of `at`: the next rotation is
    /// due at its end.
    pub(crate) fn start_period(&mut self, at: i64) {
        self.hold_period(at, at);
    }

    /// The live file holds the period of `label` (what its rotated name
    /// says), and rotates at the first boundary after `from`.
    fn hold_period(&mut self, label: i64, from: i64) {
        let period = self.config.rotation.period();
        self.period = self.current_period(label);
        self.next_rollover = period.and_then(|p| self.config.zone.next_boundary(p, from));
    }

    /// The configured path of the live file.
    pub(crate) fn path(&self) -> &Path {
        &self.config.path
    }

    fn detail(&self) -> String {
        self.config.path.display().to_string()
    }

    /// Rotates, failing the record at hand (all before it were written).
    fn rotate_between(&mut self, lines: &Lines, now: i64) -> Result<(), BatchError> {
        self.rotate(now).map_err(|error| BatchError {
            written: lines.written(),
            error,
        })
    }

    /// `before_record`'s rotation by time, once `due` is known: the clock
    /// is read only under a time rotation.
    #[inline(never)]
    fn rotate_if_due(&mut self, lines: &mut Lines, due: i64) -> Result<(), BatchError> {
        let now = unix_secs(self.clock.now());
        if now >= due {
            self.write_out(lines)?;
            // An empty file is not rotated: it would push a useful file out
            // of the retention window for nothing. It holds the new period
            // from now on.
            if self.size > 0 {
                self.rotate_between(lines, now)?;
            } else {
                self.start_period(now);
            }
        }
        Ok(())
    }

    /// `before_commit`'s rotation by size: the committed records written
    /// out, then the file rotated.
    #[cold]
    #[inline(never)]
    fn rotate_by_size(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        self.write_out(lines)?;
        let now = unix_secs(self.clock.now());
        self.rotate_between(lines, now)
    }

    /// Reopens the path if the open file was moved or deleted (logrotate).
    fn check_path(&mut self) -> Result<(), AppendError> {
        self.last_path_check = Instant::now();
        self.check_path_next = false;
        let Some(id) = self.id else { return Ok(()) };
        match fs::symlink_metadata(&self.config.path) {
            Ok(meta) if file_id(&meta) == Some(id) => {
                // Someone may have truncated it (copytruncate).
                if let Ok(meta) = self.file.writer.metadata() {
                    self.size = meta.len();
                }
                Ok(())
            }
            Ok(_) => self.reopen(Operation::Open),
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.reopen(Operation::Open),
            Err(e) => Err(AppendError::io(Operation::Open, e).with_detail(self.detail())),
        }
    }

    /// Opens the path anew (after a rotation, or when logrotate moved the
    /// file). Called between writes, with nothing buffered.
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
        // A partial line left by a failed write stays in the old file; the
        // new one owes a terminator only if it ends mid-line itself.
        self.file = live_output(file, &meta).ok_or_else(|| {
            AppendError::new(
                operation,
                format!(
                    "{}: refusing to write to a file with other hard links",
                    self.detail()
                ),
            )
        })?;
        self.id = file_id(&meta);
        self.size = meta.len();
        Ok(())
    }
}

impl Destination for RollingFile {
    fn framing(&self) -> Framing {
        Framing::Newline
    }

    /// Checks the path (after a flush, or every second), and rotates a file
    /// found when opening under `rotate_on_start`: on the worker, before
    /// anything of the call is written.
    fn start_call(&mut self) -> Result<(), AppendError> {
        if self.check_path_next || self.last_path_check.elapsed() >= PATH_CHECK_INTERVAL {
            self.check_path()?;
        }
        if self.rotate_pending {
            // Emptied meanwhile (copytruncate): nothing to rotate.
            if self.size > 0 {
                self.rotate(unix_secs(self.clock.now()))?;
            }
            self.rotate_pending = false;
        }
        Ok(())
    }

    /// Rotates by time: at the first record after the boundary.
    ///
    /// Inlined into the render loop with `before_commit`: a call to each
    /// per record cost more than their checks (about 20 instructions of
    /// saved registers, `SIDE=worker benches/peers/callgrind.sh`); what
    /// rotates is out of line.
    #[inline]
    fn before_record(&mut self, _record: &Record, lines: &mut Lines) -> Result<Style, BatchError> {
        if let Some(due) = self.next_rollover {
            self.rotate_if_due(lines, due)?;
        }
        Ok(Style::default())
    }

    /// Rotates by size: when the pending record would take the file past
    /// `max_bytes`. A record larger than `max_bytes` gets a file of its own.
    #[inline]
    fn before_commit(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        if let Some(max) = self.config.max_bytes {
            let before = self.size + lines.committed_len() as u64;
            let len = lines.pending_len() as u64;
            if before > 0 && before + len > max {
                self.rotate_by_size(lines)?;
            }
        }
        Ok(())
    }

    /// Writes the committed records, counting the bytes that reached the
    /// file.
    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        match lines.write_to(&mut self.file) {
            Ok(bytes) => {
                self.size += bytes;
                Ok(())
            }
            Err(failure) => {
                self.size += failure.bytes;
                Err(BatchError {
                    written: failure.written,
                    error: AppendError::io(Operation::Write, failure.error)
                        .with_detail(self.detail()),
                })
            }
        }
    }

    /// Nothing is buffered between calls: notes that the queue ran empty,
    /// so the next call first checks the path still names the open file
    /// (and reopens it if logrotate moved or deleted it).
    fn flush(&mut self) -> Result<(), AppendError> {
        self.check_path_next = true;
        Ok(())
    }
}
