//! `FileAppender`: the text format × the rolling file destination, and the
//! builder that configures the file (for the JSON appender too).

use std::path::{Path, PathBuf};

use crate::destination::file::error::FileError;
#[cfg(doc)]
use crate::destination::file::error::FileErrorKind;
use crate::destination::file::policy::{Clock, Compression, FileConfig, Rotation, SystemClock};
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
/// - Rotation renames `app.log` → `app.log.1` → `app.log.2` …, keeping
///   [`keep`](FileAppenderBuilder::keep) rotated files; the live file is
///   always at the configured path, so `tail -F` follows it. Rotation
///   happens between records, never inside a line.
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
/// | [`keep`](FileAppenderBuilder::keep) | 5 |
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
                keep: 5,
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

    /// Rotates at each UTC hour or day boundary.
    pub fn rotate_every(mut self, rotation: Rotation) -> Self {
        self.config.rotation = rotation;
        self
    }

    /// Keeps `keep` rotated files (`app.log.1` … `app.log.<keep>`); older
    /// ones are deleted, at each rotation and when the file is opened
    /// (files above `keep` left by an earlier run too; only files named as
    /// this appender names them). With 0, rotation deletes the live file.
    /// A rotation's cost follows the rotated files present, not `keep`.
    pub fn keep(mut self, keep: usize) -> Self {
        self.config.keep = keep;
        self
    }

    /// Keeps every rotated file: nothing is ever deleted.
    pub fn keep_all(mut self) -> Self {
        self.config.keep = usize::MAX;
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

    /// Sets the clock read for time rotation (tests inject their own).
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
        Ok((RollingFile::open(config, self.clock)?, self.layout))
    }

    /// Opens the file and builds the appender.
    ///
    /// # Errors
    ///
    /// A [`FileError`]: the directory cannot be created
    /// ([`FileErrorKind::CreateDir`]), the file cannot be opened
    /// ([`FileErrorKind::Open`]), the path is a symlink
    /// ([`FileErrorKind::Symlink`]), or the configuration is invalid
    /// ([`FileErrorKind::Config`]).
    ///
    /// ```
    /// use logbus_appenders::{FileAppender, FileErrorKind};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let not_a_dir = dir.path().join("plain-file");
    /// std::fs::write(&not_a_dir, "")?;
    /// let err = FileAppender::builder(not_a_dir.join("app.log")).build().unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::CreateDir);
    ///
    /// let err = FileAppender::builder(dir.path().join("app.log")).max_bytes(0).build().unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::Config);
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

crate::render::appender_through_pipeline!(FileAppender);
