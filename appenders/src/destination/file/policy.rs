//! The rolling file's policies, as values: when to rotate (`Rotation`),
//! which clock says so (`Clock`), what to do with rotated files
//! (`Compression`), and the validated configuration holding them with the
//! naming, zone and retention of the sibling modules.

use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

use super::naming::Naming;
use super::retention::Retention;
use super::zone::{Period, TimeZone};

/// How often a rolling file rotates by time: at each hour or day boundary
/// of its [`TimeZone`] (UTC by default).
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
    /// Rotate at the first record written after each full hour (of the
    /// appender's [`TimeZone`]).
    pub const HOURLY: Rotation = Rotation(RotationKind::Hourly);
    /// Rotate at the first record written after each midnight (of the
    /// appender's [`TimeZone`]).
    pub const DAILY: Rotation = Rotation(RotationKind::Daily);

    /// The period a file holds, if the rotation is by time.
    pub(crate) fn period(self) -> Option<Period> {
        match self.0 {
            RotationKind::Never => None,
            RotationKind::Hourly => Some(Period::Hour),
            RotationKind::Daily => Some(Period::Day),
        }
    }
}

/// Where a rolling file reads the time for time-based rotation.
///
/// The default is [`SystemClock`]; tests inject their own so they never
/// sleep.
///
/// # For implementors
///
/// `now` is called once per record when time rotation is on, and at each
/// rotation and when the file is opened (the dates of names, the age of
/// rotated files); make it cheap.
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
    /// Compress each rotated file to its name plus `.gz` (`app.log.1.gz`,
    /// `app.log.2026-12-01.gz`; feature `gzip`), on the appender's worker
    /// thread, right after the rotation.
    #[cfg(feature = "gzip")]
    Gzip,
}

/// The validated configuration of a rolling file.
#[derive(Debug, Clone)]
pub(crate) struct FileConfig {
    pub(crate) path: PathBuf,
    pub(crate) max_bytes: Option<u64>,
    pub(crate) rotation: Rotation,
    pub(crate) naming: Naming,
    pub(crate) zone: TimeZone,
    pub(crate) retention: Retention,
    /// Rotate a non-empty file found when opening, before the first record.
    pub(crate) rotate_on_start: bool,
    pub(crate) mode: u32,
    pub(crate) compression: Compression,
}
