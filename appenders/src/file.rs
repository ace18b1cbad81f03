//! `FileAppender`: the text format × the rolling file destination, and the
//! builder that configures the file (for the JSON appender too).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::destination::file::error::FileError;
#[cfg(doc)]
use crate::destination::file::error::FileErrorKind;
use crate::destination::file::naming::Naming;
use crate::destination::file::policy::{Clock, Compression, FileConfig, Rotation, SystemClock};
use crate::destination::file::retention::Retention;
use crate::destination::file::zone::TimeZone;
use crate::destination::file::RollingFile;
use crate::format::TextFormat;
use crate::layout::Layout;
use crate::render::Pipeline;

/// Appends laid-out lines to a file, rotating it by size and/or time.
///
/// - The file is opened in append mode (never truncated) when the appender
///   is built, so a path that cannot be written is an error then, not at
///   the first record. Missing directories are created (mode `0o750`).
/// - A new file is created with mode `0o640` on Unix (see
///   [`mode`](FileAppenderBuilder::mode)), given to `open(2)` itself so the
///   file never exists with looser permissions; the umask still applies.
/// - A symlink at the log path is refused (`O_NOFOLLOW`), and so is one at a
///   rotation target: the appender never writes through a link someone
///   planted.
/// - The lines of a call are rendered into a buffer and written to the file
///   (one `write(2)` for an ordinary batch) before
///   [`append`](crate::Appender::append) or
///   [`append_batch`](crate::Appender::append_batch) returns, so a record counted
///   as written is in the file (in the OS's page cache: there is no
///   `fsync`), and an error such as a full disk is reported for the exact
///   records it hit. A crash or a failed write mid-line leaves at most one
///   partial line, which is terminated before the next record.
/// - Rotation renames `app.log` → `app.log.1` → `app.log.2` …, or, with
///   [`Naming::DATED`], `app.log` → `app.log.2026-12-01`; the live file is
///   always at the configured path, so `tail -F` follows it. Rotation
///   happens between records, never inside a line, on the thread calling
///   the appender (the broker's worker). Time rotation cuts at the hours
///   or days of a [`TimeZone`], UTC unless [`time_zone`](FileAppenderBuilder::time_zone)
///   says otherwise; a file left by a run in an earlier period is rotated
///   at the first record.
/// - Retention keeps rotated files by count, age and total size, every
///   limit at once, oldest removed first, when the file is opened and after
///   each rotation; it only ever removes files named as this appender names
///   them, never another file of the directory (nor a symlink with such
///   a name).
/// - Any file named like one of its rotated files is taken for one: two
///   appenders whose names collide (one at `app.log`, another at
///   `app.log.1` or `app.log.2026-12-01`) rename and remove each other's
///   files. Give each appender a name that is not another's name plus a
///   stamp (or a directory of its own).
/// - A file moved away or deleted by another tool (logrotate) is noticed
///   before the first write after a flush (the broker flushes when its
///   queue runs empty), and at most a second later during a flood, and the
///   path is reopened.
/// - Every I/O error is returned as an [`AppendError`](crate::AppendError) naming the operation
///   and the path.
///
/// | Builder method | Default |
/// |---|---|
/// | [`max_bytes`](FileAppenderBuilder::max_bytes) | none: no rotation by size |
/// | [`rotate_every`](FileAppenderBuilder::rotate_every) | [`Rotation::NEVER`] |
/// | [`time_zone`](FileAppenderBuilder::time_zone) | [`TimeZone::UTC`] |
/// | [`naming`](FileAppenderBuilder::naming) | [`Naming::NUMBERED`] |
/// | [`keep`](FileAppenderBuilder::keep) | 5 |
/// | [`keep_for`](FileAppenderBuilder::keep_for) | none: no limit by age |
/// | [`keep_total_bytes`](FileAppenderBuilder::keep_total_bytes) | none: no limit by total size |
/// | [`rotate_on_start`](FileAppenderBuilder::rotate_on_start) | off: a run appends to the file it finds |
/// | [`mode`](FileAppenderBuilder::mode) | `0o640` |
/// | [`layout`](FileAppenderBuilder::layout) | [`Layout::default()`] |
/// | [`compression`](FileAppenderBuilder::compression) | [`Compression::None`] |
/// | [`clock`](FileAppenderBuilder::clock) | [`SystemClock`] |
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, FileAppender, Layout, Level, Record, Rotation, Topic};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("logs/app.log");
/// let mut file = FileAppender::builder(&path)
///     .max_bytes(10 * 1024 * 1024)
///     .rotate_every(Rotation::DAILY)
///     .keep(7)
///     .layout(Layout::parse("{level} {target}: {msg}{kv}")?)
///     .build()?;
/// file.append(&Record::builder(Topic::new(Level::Info, "app")).message("started").build())?;
/// file.flush()?;
/// assert_eq!(std::fs::read_to_string(&path)?, "INFO app: started\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileAppender {
    pipeline: Pipeline<TextFormat, RollingFile>,
}

/// Configures a [`FileAppender`] (or the file of a
/// [`JsonAppender`](crate::JsonAppender)); see [`FileAppender::builder`].
#[derive(Debug)]
#[must_use]
pub struct FileAppenderBuilder {
    config: FileConfig,
    layout: Option<Layout>,
    clock: Box<dyn Clock>,
}

impl FileAppender {
    /// Starts configuring an appender writing to `path` (defaults in the
    /// [type docs](FileAppender)).
    pub fn builder(path: impl Into<PathBuf>) -> FileAppenderBuilder {
        FileAppenderBuilder {
            config: FileConfig {
                path: path.into(),
                max_bytes: None,
                rotation: Rotation::NEVER,
                naming: Naming::NUMBERED,
                zone: TimeZone::UTC,
                retention: Retention {
                    keep: 5,
                    keep_for: None,
                    keep_total_bytes: None,
                },
                rotate_on_start: false,
                mode: 0o640,
                compression: Compression::None,
            },
            layout: None,
            clock: Box::new(SystemClock),
        }
    }

    /// The path of the live file.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.pipeline.destination.path()
    }
}

impl FileAppenderBuilder {
    /// Rotates when writing a record would make the file larger than
    /// `max_bytes` (a record larger than that gets a file of its own).
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.config.max_bytes = Some(max_bytes);
        self
    }

    /// Rotates at each hour or day boundary of the
    /// [`time_zone`](Self::time_zone) (UTC by default), at the first record
    /// written after it.
    pub fn rotate_every(mut self, rotation: Rotation) -> Self {
        self.config.rotation = rotation;
        self
    }

    /// Sets the zone of time rotation's boundaries and of dated names:
    /// [`TimeZone::LOCAL`] cuts daily files at local midnight (a day of a
    /// daylight-saving change lasts 23 or 25 hours), and names them by the
    /// local date.
    ///
    /// ```
    /// use logbus_appenders::{FileAppender, Naming, Rotation, TimeZone};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let file = FileAppender::builder(dir.path().join("app.log"))
    ///     .rotate_every(Rotation::HOURLY)
    ///     .time_zone(TimeZone::fixed_offset(5 * 3600 + 1800)) // UTC+05:30
    ///     .naming(Naming::DATED) // app.log.2026-12-01T13, in UTC+05:30
    ///     .build()?;
    /// # drop(file);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn time_zone(mut self, zone: TimeZone) -> Self {
        self.config.zone = zone;
        self
    }

    /// Sets how rotated files are named: [`Naming::DATED`] names each by
    /// the period it holds (`app.log.2026-12-01`), which needs a time
    /// rotation ([`rotate_every`](Self::rotate_every)). The live file keeps
    /// its name either way.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.config.naming = naming;
        self
    }

    /// Keeps at most `keep` rotated files (`app.log.1` … `app.log.<keep>`,
    /// or the `keep` newest dated ones); older ones are deleted, at each
    /// rotation and when the file is opened (files above `keep` left by an
    /// earlier run too; only files named as this appender names them).
    /// With 0, rotation deletes the live file. A rotation's cost follows
    /// the rotated files present, not `keep`.
    pub fn keep(mut self, keep: usize) -> Self {
        self.config.retention.keep = keep;
        self
    }

    /// Lifts the limit on the number of rotated files: with no
    /// [`keep_for`](Self::keep_for) or
    /// [`keep_total_bytes`](Self::keep_total_bytes) either, nothing is ever
    /// deleted.
    pub fn keep_all(mut self) -> Self {
        self.config.retention.keep = usize::MAX;
        self
    }

    /// Deletes rotated files whose newest record is older than `age`, by
    /// the appender's [`clock`](Self::clock), when the file is opened and
    /// after each rotation.
    ///
    /// A file's newest record dates from the end of the period its dated
    /// name gives ([`Naming::DATED`]: `app.log.2026-12-01` from the next
    /// midnight of the [`time_zone`](Self::time_zone)), so a copy or a
    /// restore that resets files' times changes nothing; a numbered name
    /// has no date, so there it is the file's modification time. Applies
    /// with the other limits (the count of [`keep`](Self::keep), 5 by
    /// default: [`keep_all`](Self::keep_all) lifts it).
    ///
    /// ```
    /// use logbus_appenders::{FileAppender, Naming, Rotation};
    /// use std::time::Duration;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let file = FileAppender::builder(dir.path().join("app.log"))
    ///     .rotate_every(Rotation::DAILY)
    ///     .naming(Naming::DATED)
    ///     .keep_all()
    ///     .keep_for(Duration::from_secs(30 * 86_400)) // a month of days
    ///     .keep_total_bytes(10 << 30) // and never more than 10 GiB
    ///     .build()?;
    /// # drop(file);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keep_for(mut self, age: Duration) -> Self {
        self.config.retention.keep_for = Some(age);
        self
    }

    /// Keeps the rotated files under `total` bytes together (as stored:
    /// compressed ones count compressed), deleting the oldest first, when
    /// the file is opened and after each rotation. A rotated file larger
    /// than `total` is deleted, and so is every older one. Applies with
    /// the other limits. The live file does not count:
    /// [`max_bytes`](Self::max_bytes) bounds it.
    pub fn keep_total_bytes(mut self, total: u64) -> Self {
        self.config.retention.keep_total_bytes = Some(total);
        self
    }

    /// Rotates a non-empty file found at the path when the appender is
    /// built, so each run starts a file of its own. The rotation happens
    /// at the first call (on the broker's worker, not where the appender
    /// is built), under the name of the period the file was last written
    /// in with [`Naming::DATED`] (a counter keeps it from replacing one of
    /// that period). An empty or new file is simply used.
    pub fn rotate_on_start(mut self) -> Self {
        self.config.rotate_on_start = true;
        self
    }

    /// Sets the permission bits of newly created files (Unix; ignored
    /// elsewhere).
    pub fn mode(mut self, mode: u32) -> Self {
        self.config.mode = mode;
        self
    }

    /// Sets the layout of each line. A JSON appender has no layout:
    /// [`JsonAppender::file`](crate::JsonAppender::file) refuses a builder
    /// with one.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Sets what happens to rotated files.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.config.compression = compression;
        self
    }

    /// Sets the clock read for time rotation, the dates of names and the
    /// age of rotated files (tests inject their own).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Opens the live file for a format that has no layout, such as JSON:
    /// a layout set on the builder is refused with `contradiction` as the
    /// detail of a [`FileErrorKind::Config`] error, before anything is
    /// created on disk, rather than silently ignored.
    pub(crate) fn open_without_layout(
        self,
        contradiction: &'static str,
    ) -> Result<RollingFile, FileError> {
        if self.layout.is_some() {
            return Err(FileError::config(&self.config.path, contradiction));
        }
        Ok(self.open()?.0)
    }

    /// Validates the configuration and opens the live file.
    fn open(self) -> Result<(RollingFile, Option<Layout>), FileError> {
        let config = self.config;
        if config.path.as_os_str().is_empty() {
            return Err(FileError::config(&config.path, "the path is empty"));
        }
        if config.max_bytes == Some(0) {
            return Err(FileError::config(
                &config.path,
                "max_bytes must be at least 1",
            ));
        }
        if config.mode & !0o7777 != 0 {
            return Err(FileError::config(
                &config.path,
                "mode has bits beyond 0o7777",
            ));
        }
        check_rotation(&config).map_err(|detail| FileError::config(&config.path, detail))?;
        Ok((RollingFile::open(config, self.clock)?, self.layout))
    }

    /// Opens the file and builds the appender.
    ///
    /// # Errors
    ///
    /// A [`FileError`]: the directory cannot be created
    /// ([`FileErrorKind::CreateDir`]), the file cannot be opened
    /// ([`FileErrorKind::Open`]), the path is a symlink
    /// ([`FileErrorKind::Symlink`]) or has other hard links
    /// ([`FileErrorKind::Hardlink`]), old rotated files cannot be removed
    /// ([`FileErrorKind::Retention`]), or the configuration is invalid
    /// ([`FileErrorKind::Config`], checked before anything is created,
    /// its message naming the setting): an empty path, `max_bytes(0)`,
    /// mode bits beyond `0o7777`, `keep_for(Duration::ZERO)`,
    /// `keep_total_bytes(0)`, `keep(0)` with `keep_for` or
    /// `keep_total_bytes` (nothing is kept for them to limit), dated names
    /// without [`rotate_every`](Self::rotate_every), a fixed offset of a
    /// day or more.
    ///
    /// ```
    /// use logbus_appenders::{FileAppender, FileErrorKind, Naming};
    /// use std::time::Duration;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let not_a_dir = dir.path().join("plain-file");
    /// std::fs::write(&not_a_dir, "")?;
    /// let err = FileAppender::builder(not_a_dir.join("app.log")).build().unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::CreateDir);
    ///
    /// let err = FileAppender::builder(dir.path().join("app.log")).max_bytes(0).build().unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::Config);
    ///
    /// // Contradictions too, before anything is created.
    /// let path = dir.path().join("dated.log");
    /// let err = FileAppender::builder(&path).naming(Naming::DATED).build().unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::Config);
    /// assert!(err.to_string().contains("rotate_every"), "{err}");
    /// let err = FileAppender::builder(&path).keep_for(Duration::ZERO).build().unwrap_err();
    /// assert!(err.to_string().contains("keep_for"), "{err}");
    /// assert!(!path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<FileAppender, FileError> {
        let (file, layout) = self.open()?;
        let format = TextFormat::new(layout.unwrap_or_default());
        Ok(FileAppender {
            pipeline: Pipeline::new(format, file),
        })
    }
}

/// Why the rotation settings cannot work together, naming the setting.
fn check_rotation(config: &FileConfig) -> Result<(), &'static str> {
    let retention = config.retention;
    if retention.keep_for == Some(Duration::ZERO) {
        return Err("keep_for must be longer than zero");
    }
    if retention.keep_total_bytes == Some(0) {
        return Err("keep_total_bytes must be at least 1 (keep(0) keeps no rotated file)");
    }
    if retention.keep == 0 && retention.needs_metadata() {
        return Err(
            "keep(0) keeps no rotated file: keep_for and keep_total_bytes have nothing to limit",
        );
    }
    if config.naming.is_dated() && config.rotation.period().is_none() {
        return Err("naming(Naming::DATED) needs rotate_every(HOURLY or DAILY): the date names the period a file holds");
    }
    config.zone.check()
}

crate::render::appender_through_pipeline!(FileAppender);
