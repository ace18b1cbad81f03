//! The rolling file's policies, as values: when to rotate (`Rotation`),
//! which clock says so (`Clock`), what to do with rotated files
//! (`Compression`), and the validated configuration holding them.

use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

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
    pub(crate) fn next_boundary(self, now: u64) -> Option<u64> {
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
}
