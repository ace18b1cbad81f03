//! The typed errors of the broker's boundaries.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

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
    /// The broker has been shut down.
    ShutDown,
    /// The worker thread could not be spawned.
    Spawn(std::io::Error),
    /// A dead-letter route is already set.
    DeadLetterExists,
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
            SubscribeError::ShutDown => f.write_str("the broker has been shut down"),
            SubscribeError::Spawn(_) => f.write_str("could not spawn the worker thread"),
            SubscribeError::DeadLetterExists => f.write_str("a dead-letter route is already set"),
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

/// Why building a broker or installing it as the `log` backend failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum InstallError {
    /// One of the configured subscriptions was rejected.
    Subscribe(SubscribeError),
    /// A `log` backend is already installed in this process.
    AlreadyInstalled,
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Subscribe(_) => f.write_str("a subscription was rejected"),
            InstallError::AlreadyInstalled => {
                f.write_str("a logger is already installed as the `log` backend")
            }
        }
    }
}

impl StdError for InstallError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            InstallError::Subscribe(e) => Some(e),
            InstallError::AlreadyInstalled => None,
        }
    }
}

impl From<SubscribeError> for InstallError {
    fn from(e: SubscribeError) -> InstallError {
        InstallError::Subscribe(e)
    }
}

/// Why a subscription could not be removed.
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
        }
    }
}

impl StdError for FlushError {}
