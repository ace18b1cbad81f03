//! The typed errors of the broker's boundaries.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::directive::DirectiveError;
use crate::topic::TopicParseError;

/// Why a subscription could not be added.
///
/// # Examples
///
/// ```
/// use logbus::{Broker, Memory, Subscription, SubscribeError};
///
/// let broker = Broker::new();
/// let bad = broker.subscribe(Subscription::builder("db", Memory::new().0).pattern("app..db"));
/// assert!(matches!(bad, Err(SubscribeError::Pattern(_))));
///
/// broker.subscribe(Subscription::builder("db", Memory::new().0))?;
/// let dup = broker.subscribe(Subscription::builder("db", Memory::new().0));
/// assert!(matches!(dup, Err(SubscribeError::DuplicateName(name)) if name == "db"));
///
/// let zero = broker.subscribe(Subscription::builder("z", Memory::new().0).capacity(0));
/// assert!(matches!(zero, Err(SubscribeError::ZeroCapacity)));
///
/// let huge = broker.subscribe(Subscription::builder("h", Memory::new().0).capacity(usize::MAX));
/// assert!(matches!(huge, Err(SubscribeError::CapacityTooLarge { .. })));
///
/// let empty = broker.subscribe(Subscription::builder("", Memory::new().0));
/// assert!(matches!(empty, Err(SubscribeError::EmptyName)));
///
/// broker.set_dead_letter(Subscription::builder("dead", Memory::new().0))?;
/// let second = broker.set_dead_letter(Subscription::builder("dead2", Memory::new().0));
/// assert!(matches!(second, Err(SubscribeError::DeadLetterExists)));
///
/// broker.shutdown();
/// let late = broker.subscribe(Subscription::builder("late", Memory::new().0));
/// assert!(matches!(late, Err(SubscribeError::ShutDown)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscribeError {
    /// A topic pattern was malformed.
    Pattern(TopicParseError),
    /// A subscription with this name already exists.
    DuplicateName(String),
    /// The subscription name was empty.
    EmptyName,
    /// The queue capacity was zero.
    ZeroCapacity,
    /// The queue capacity was above [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: usize,
        /// The largest accepted.
        max: usize,
    },
    /// The broker has been shut down.
    ShutDown,
    /// The worker thread could not be spawned.
    Spawn(std::io::Error),
    /// A dead-letter route is already set.
    DeadLetterExists,
    /// A replay or a flight recorder needs the broker's journal:
    /// [`Builder::journal`](crate::Builder::journal) or
    /// [`BrokerHandle::set_journal`](crate::BrokerHandle::set_journal).
    NoJournal,
    /// A dead-letter subscription cannot replay or have a flight recorder.
    NotForDeadLetters,
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscribeError::Pattern(_) => f.write_str("invalid topic pattern"),
            SubscribeError::DuplicateName(name) => {
                write!(f, "a subscription named {name:?} already exists")
            }
            SubscribeError::EmptyName => f.write_str("subscription name is empty"),
            SubscribeError::ZeroCapacity => f.write_str("queue capacity must be at least 1"),
            SubscribeError::CapacityTooLarge { capacity, max } => {
                write!(f, "queue capacity {capacity} is above the maximum of {max}")
            }
            SubscribeError::ShutDown => f.write_str("the broker has been shut down"),
            SubscribeError::Spawn(_) => f.write_str("could not spawn the worker thread"),
            SubscribeError::DeadLetterExists => f.write_str("a dead-letter route is already set"),
            SubscribeError::NotForDeadLetters => {
                f.write_str("a dead-letter subscription cannot replay or have a flight recorder")
            }
            SubscribeError::NoJournal => f.write_str(
                "a replay or a flight recorder needs a journal: set one with Builder::journal or BrokerHandle::set_journal",
            ),
        }
    }
}

impl StdError for SubscribeError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            SubscribeError::Pattern(e) => Some(e),
            SubscribeError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TopicParseError> for SubscribeError {
    fn from(e: TopicParseError) -> SubscribeError {
        SubscribeError::Pattern(e)
    }
}

/// Why [`BrokerHandle::replace`](crate::BrokerHandle::replace) refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReplaceError {
    /// No subscription has this name.
    NotFound(String),
    /// The new subscription asked for a replay: the old one writes those
    /// records.
    Replay,
    /// The new subscription was refused, as by `subscribe`.
    Subscribe(SubscribeError),
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplaceError::NotFound(name) => write!(f, "no subscription named {name:?}"),
            ReplaceError::Replay => f.write_str(
                "a replacing subscription cannot replay: the old one writes those records",
            ),
            ReplaceError::Subscribe(_) => f.write_str("the new subscription was refused"),
        }
    }
}

impl StdError for ReplaceError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ReplaceError::Subscribe(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SubscribeError> for ReplaceError {
    fn from(e: SubscribeError) -> ReplaceError {
        ReplaceError::Subscribe(e)
    }
}

/// Why journal settings or a journal request were refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum JournalError {
    /// [`Journal::records`](crate::Journal::records) was zero.
    ZeroRecords,
    /// [`Journal::bytes`](crate::Journal::bytes) was zero.
    ZeroBytes,
    /// A topic pattern was malformed.
    Pattern(TopicParseError),
    /// The broker has been shut down.
    ShutDown,
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::ZeroRecords => f.write_str("journal record limit must be at least 1"),
            JournalError::ZeroBytes => f.write_str("journal byte limit must be at least 1"),
            JournalError::Pattern(_) => f.write_str("invalid journal topic pattern"),
            JournalError::ShutDown => f.write_str("the broker has been shut down"),
        }
    }
}

impl StdError for JournalError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            JournalError::Pattern(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TopicParseError> for JournalError {
    fn from(e: TopicParseError) -> JournalError {
        JournalError::Pattern(e)
    }
}

/// Why building a broker or installing it as the `log` backend failed.
///
/// # Examples
///
/// ```
/// use logbus::{InstallError, Memory, Subscription};
///
/// let _guard = logbus::builder()
///     .appender(Subscription::builder("memory", Memory::new().0))
///     .install()?;
/// let again = logbus::builder().install();
/// assert!(matches!(again, Err(InstallError::AlreadyInstalled)));
///
/// let bad = logbus::builder()
///     .appender(Subscription::builder("db", Memory::new().0).pattern("*b"))
///     .build();
/// assert!(matches!(bad, Err(InstallError::Subscribe(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum InstallError {
    /// One of the configured subscriptions was rejected.
    Subscribe(SubscribeError),
    /// A `log` backend is already installed in this process.
    AlreadyInstalled,
    /// The journal's settings were refused.
    Journal(JournalError),
    /// The environment variable given to
    /// [`Builder::env_directives`](crate::Builder::env_directives) held a
    /// malformed directive.
    ///
    /// ```
    /// use logbus::{DirectiveErrorKind, InstallError};
    ///
    /// std::env::set_var("MY_APP_LOG", "info,db=loud");
    /// match logbus::builder().env_directives("MY_APP_LOG").build() {
    ///     Err(InstallError::EnvDirectives { var, error }) => {
    ///         assert_eq!(var, "MY_APP_LOG");
    ///         assert_eq!((error.directive(), error.kind()), ("db=loud", DirectiveErrorKind::UnknownLevel));
    ///     }
    ///     other => panic!("unexpected: {other:?}"),
    /// }
    /// ```
    EnvDirectives {
        /// The variable's name.
        var: String,
        /// The first malformed directive in its value.
        error: DirectiveError,
    },
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Subscribe(_) => f.write_str("a subscription was rejected"),
            InstallError::AlreadyInstalled => {
                f.write_str("a logger is already installed as the `log` backend")
            }
            InstallError::Journal(_) => f.write_str("the journal's settings were refused"),
            InstallError::EnvDirectives { var, .. } => write!(f, "malformed directives in {var}"),
        }
    }
}

impl StdError for InstallError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            InstallError::Subscribe(e) => Some(e),
            InstallError::Journal(e) => Some(e),
            InstallError::EnvDirectives { error, .. } => Some(error),
            InstallError::AlreadyInstalled => None,
        }
    }
}

impl From<JournalError> for InstallError {
    fn from(e: JournalError) -> InstallError {
        InstallError::Journal(e)
    }
}

impl From<SubscribeError> for InstallError {
    fn from(e: SubscribeError) -> InstallError {
        InstallError::Subscribe(e)
    }
}

/// Why a subscription could not be removed.
///
/// ```
/// use logbus::{Broker, UnsubscribeError};
///
/// let broker = Broker::new();
/// assert_eq!(broker.unsubscribe("nope"), Err(UnsubscribeError::NotFound("nope".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnsubscribeError {
    /// No subscription has this name.
    NotFound(String),
}

impl fmt::Display for UnsubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsubscribeError::NotFound(name) => write!(f, "no subscription named {name:?}"),
        }
    }
}

impl StdError for UnsubscribeError {}

/// Why a runtime reconfiguration was refused (nothing changed then).
///
/// ```
/// use logbus::{Broker, LevelFilter, Memory, ReconfigureError, Subscription};
///
/// let broker = Broker::new();
/// broker.subscribe(Subscription::builder("db", Memory::new().0))?;
/// let missing = broker.set_level("nope", LevelFilter::Warn);
/// assert_eq!(missing, Err(ReconfigureError::NotFound("nope".into())));
/// let bad = broker.set_patterns("db", &["app.#.", "ok"]);
/// assert!(matches!(bad, Err(ReconfigureError::Pattern(e)) if e.position() == 6));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconfigureError {
    /// No subscription has this name.
    NotFound(String),
    /// A topic pattern was malformed.
    Pattern(TopicParseError),
}

impl fmt::Display for ReconfigureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReconfigureError::NotFound(name) => write!(f, "no subscription named {name:?}"),
            ReconfigureError::Pattern(_) => f.write_str("invalid topic pattern"),
        }
    }
}

impl StdError for ReconfigureError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ReconfigureError::NotFound(_) => None,
            ReconfigureError::Pattern(e) => Some(e),
        }
    }
}

impl From<TopicParseError> for ReconfigureError {
    fn from(e: TopicParseError) -> ReconfigureError {
        ReconfigureError::Pattern(e)
    }
}

/// Why a flush did not complete.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use logbus::{AppendError, Appender, Broker, FlushError, Record, Subscription};
///
/// /// Blocks in `append` until released.
/// struct Stuck(mpsc::Receiver<()>);
///
/// impl Appender for Stuck {
///     fn append(&mut self, _: &Record) -> Result<(), AppendError> {
///         let _ = self.0.recv();
///         Ok(())
///     }
///     fn flush(&mut self) -> Result<(), AppendError> {
///         Ok(())
///     }
/// }
///
/// let (release, stuck) = mpsc::channel();
/// let broker = Broker::new();
/// broker.subscribe(Subscription::builder("stuck", Stuck(stuck)))?;
/// log::set_max_level(log::LevelFilter::Trace);
/// log::info!(logger: &broker, "hello");
/// let result = broker.flush_timeout(Duration::from_millis(10));
/// assert!(matches!(result, Err(FlushError::Timeout { ref pending, .. }) if pending == &["stuck"]));
/// release.send(())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`FlushError::OnWorkerThread`] is what a flush called from inside an
/// appender returns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushError {
    /// These subscriptions had not finished when the timeout expired.
    Timeout {
        /// How long the flush waited.
        waited: Duration,
        /// The subscriptions still busy.
        pending: Vec<String>,
    },
    /// Called on a logbus worker thread (from inside an appender), where
    /// waiting could deadlock: nothing was waited for.
    OnWorkerThread,
    /// Called from inside a replaying subscription's predicate while it
    /// filters the journal's records, where waiting could deadlock (the
    /// subscription's worker waits for the predicate to return): nothing
    /// was waited for. Other predicates may flush.
    InPredicate,
}

impl fmt::Display for FlushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlushError::Timeout { waited, pending } => write!(
                f,
                "flush timed out after {waited:?} waiting for {}",
                pending.join(", ")
            ),
            FlushError::OnWorkerThread => {
                f.write_str("flush called on a logbus worker thread; not waiting")
            }
            FlushError::InPredicate => {
                f.write_str("flush called from inside a replay's predicate; not waiting")
            }
        }
    }
}

impl StdError for FlushError {}
