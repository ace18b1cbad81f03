//! The `Appender` trait: how a sink writes records, and its typed errors.

use std::any::Any;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::record::Record;

/// A sink that writes records: console, file, JSON, syslog, or your own.
///
/// An appender is owned by exactly one worker thread of the broker, which is
/// why every method takes `&mut self` and no locking is needed. The broker
/// calls [`append_batch`](Appender::append_batch) with the records it drained
/// from the queue (or, for an appender that offers [`Staged`], stages them a
/// run at a time as it takes them and commits the batch), then
/// [`flush`](Appender::flush) when the queue runs empty.
///
/// # The contract: `Ok` means written
///
/// The broker counts a record as written when
/// [`append`](Appender::append) or [`append_batch`](Appender::append_batch)
/// returns `Ok` for it; it never learns about a record again. So an
/// appender must have handed a record's bytes to its destination (for a
/// file or a stream, to the OS with `write(2)`) before returning `Ok` for
/// it. It may buffer only *within* one call, for example render a whole
/// batch into one buffer and write it with one system call, but it must not
/// carry records over to a later call or to [`flush`](Appender::flush):
/// an error there (a full disk) could then not be pinned on the records it
/// lost, which would stay counted as written.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{AppendError, Appender, Record};
///
/// /// Counts records; writes nothing.
/// #[derive(Debug, Default)]
/// struct Counter(u64);
///
/// impl Appender for Counter {
///     fn append(&mut self, _record: &Record) -> Result<(), AppendError> {
///         self.0 += 1;
///         Ok(())
///     }
///
///     fn flush(&mut self) -> Result<(), AppendError> {
///         Ok(())
///     }
/// }
/// ```
pub trait Appender: Send + 'static {
    /// Writes one record.
    ///
    /// # For implementors
    ///
    /// Return `Ok` only once the record reached its destination (see
    /// [the contract](Appender#the-contract-ok-means-written)): do not keep
    /// it in a buffer for a later call or for [`flush`](Appender::flush).
    /// Return an error rather than panicking or printing: the broker retries
    /// the record under the subscription's retry policy and then hands it to
    /// the dead-letter route. On error, keep nothing of the record: the
    /// retry renders it again. Do not log through the `log` crate from here:
    /// such calls are discarded (see the re-entrancy rule in the `logbus`
    /// docs).
    ///
    /// # Errors
    ///
    /// Whatever stopped the record from being written.
    fn append(&mut self, record: &Record) -> Result<(), AppendError>;

    /// Writes a batch of records, in order.
    ///
    /// # For implementors
    ///
    /// The default calls [`append`](Appender::append) for each record and
    /// turns a panic in it into an [`Operation::Panic`] error for that
    /// record, so the broker knows exactly which records were written.
    /// Override it to write a batch in one system call: render every record
    /// into one buffer, remembering where each record ends, and write the
    /// buffer out before returning (see
    /// [the contract](Appender#the-contract-ok-means-written)).
    ///
    /// On failure report in [`BatchError::written`] how many records of the
    /// batch were fully written before the failing one: when the
    /// destination took `n` bytes and then failed, those whose end is at or
    /// before `n`. Then discard the rest of the buffer: the broker retries
    /// the failing record alone with [`append`](Appender::append) and hands
    /// the records after it to a later `append_batch`, so keeping them would
    /// write them twice. If the failure left part of a line on the
    /// destination, write a line break before the next record, so a failed
    /// write (or a crash) leaves at most one partial line, and every later
    /// record starts on its own line.
    ///
    /// # Errors
    ///
    /// A [`BatchError`] naming the index of the first record not written.
    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), BatchError> {
        for (written, record) in records.iter().enumerate() {
            match catch_unwind(AssertUnwindSafe(|| self.append(record))) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Err(BatchError { written, error }),
                Err(payload) => {
                    return Err(BatchError {
                        written,
                        error: AppendError::panicked(payload.as_ref()),
                    })
                }
            }
        }
        Ok(())
    }

    /// This appender's way of taking a batch a run of records at a time,
    /// if it has one (see [`Staged`]): the broker then stages each run as
    /// it takes it off the queue and commits the batch, instead of calling
    /// [`append_batch`](Appender::append_batch) with the whole batch. The
    /// default has none. Every appender of this crate that renders into a
    /// buffer (console, file, JSON, syslog) has one.
    ///
    /// # For implementors
    ///
    /// Give the same answer every time: the broker asks when a batch
    /// begins, for each run and at the commit. An appender that stops
    /// offering staging in the middle of a batch has what it staged
    /// settled as far as it can be: as written, if it offers the batch
    /// again for the commit, else as a failure of the batch's first
    /// record (so what it wrote while staging is written again).
    fn staged(&mut self) -> Option<&mut dyn Staged> {
        None
    }

    /// Pushes what the destination itself buffers further (for example
    /// `fsync`, or a network client's send buffer), or does periodic upkeep.
    ///
    /// # For implementors
    ///
    /// Called when the subscription's queue runs empty, on an explicit
    /// flush, and before the worker exits. Make it cheap. It must not be
    /// where records are written: the broker already counted every record
    /// `append`/`append_batch` accepted, and can only report a flush error,
    /// not retry or dead-letter the records it concerns.
    ///
    /// # Errors
    ///
    /// Whatever stopped the flush.
    fn flush(&mut self) -> Result<(), AppendError>;
}

impl<A: Appender + ?Sized> Appender for Box<A> {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        (**self).append(record)
    }

    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), BatchError> {
        (**self).append_batch(records)
    }

    fn staged(&mut self) -> Option<&mut dyn Staged> {
        (**self).staged()
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        (**self).flush()
    }
}

/// A batch written a run of records at a time: the broker hands each run to
/// [`stage`](Staged::stage) as it takes it off the queue, while the records
/// are still in the core's cache, then [`commit`](Staged::commit)s the
/// batch. A batch of a few hundred records does not fit that cache, so an
/// appender that renders the whole batch at once reads every record back
/// from further away. Get one from [`Appender::staged`].
///
/// Staging runs and then committing has the effect of one
/// [`append_batch`](Appender::append_batch) of all the runs' records, and
/// the same contract: `Ok` from `commit` means every staged record was
/// written, and on failure [`BatchError::written`] counts the records of
/// the batch (all its runs) written before the failing one. An
/// implementation may write part of the batch while staging (when its
/// buffer is full), never after a failure, and keeps nothing of the
/// failing record or those after it: the batch is over, and the broker
/// retries the failing record with [`append`](Appender::append) and
/// hands the records after it to later calls. A call of `append` or
/// `append_batch` while a batch is staged ends the batch too: what it had
/// not written is discarded, unwritten. Like those calls, staging and
/// committing happen on the broker's worker thread, never a caller's.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use logbus_appenders::{Appender, FileAppender, Level, Record, Topic};
///
/// let dir = std::env::temp_dir().join(format!("logbus-staged-doc-{}", std::process::id()));
/// let path = dir.join("app.log");
/// let mut file = FileAppender::builder(&path).build().unwrap();
/// let record = |message: &str| {
///     Arc::new(Record::builder(Topic::new(Level::Info, "app")).message(message.to_owned()).build())
/// };
/// let staged = file.staged().expect("a file appender stages");
/// staged.stage(&[record("one"), record("two")], 0).unwrap();
/// staged.stage(&[record("three")], 2).unwrap();
/// staged.commit().unwrap();
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert_eq!(text.lines().count(), 3);
/// assert!(text.lines().last().unwrap().ends_with("three"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub trait Staged {
    /// Adds `records` to the batch, after the `from` records staged in it
    /// before (`from` 0 begins a batch: what the one before had not
    /// written is discarded, unwritten).
    ///
    /// # Errors
    ///
    /// A [`BatchError`] whose `written` counts the batch's records, from
    /// its first run: those written before the failing one, which is the
    /// record at that index. It may be a record of an earlier run, whose
    /// write failed now. The batch is over: nothing of it is kept. When
    /// no batch of `from` records is being staged (it was ended), say so
    /// with `written` 0: a record may then be written twice, but none is
    /// counted written that was not.
    fn stage(&mut self, records: &[Arc<Record>], from: usize) -> Result<(), BatchError>;

    /// Writes what is left of the batch; `Ok` means every staged record
    /// was written. With no batch staged (none begun, or one ended by a
    /// failure or by `append`/`append_batch`), does nothing and returns
    /// `Ok`: the broker commits only a batch its last `stage` added to
    /// without an error.
    ///
    /// # Errors
    ///
    /// As [`stage`](Staged::stage)'s.
    fn commit(&mut self) -> Result<(), BatchError>;
}

/// The operation an appender was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Opening or creating the destination.
    Open,
    /// Writing a record.
    Write,
    /// Flushing buffered output.
    Flush,
    /// Rotating a file.
    Rotate,
    /// Formatting a record.
    Format,
    /// Connecting to a remote destination.
    Connect,
    /// The appender panicked (caught by the broker).
    Panic,
    /// Anything else.
    Other,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Open => "open",
            Operation::Write => "write",
            Operation::Flush => "flush",
            Operation::Rotate => "rotate",
            Operation::Format => "format",
            Operation::Connect => "connect",
            Operation::Panic => "panic",
            Operation::Other => "append",
        })
    }
}

/// Why an appender could not write or flush.
///
/// It names the [`Operation`] that failed, an optional detail (such as the
/// path), and the underlying error as its [`source`](StdError::source).
///
/// # Examples
///
/// ```
/// use logbus_appenders::{AppendError, Operation};
/// use std::io;
///
/// let err = AppendError::io(Operation::Write, io::Error::from(io::ErrorKind::StorageFull))
///     .with_detail("/var/log/app.log");
/// assert_eq!(err.operation(), Operation::Write);
/// assert_eq!(err.to_string(), "write failed: /var/log/app.log");
/// assert!(std::error::Error::source(&err).is_some());
/// ```
#[derive(Debug)]
pub struct AppendError {
    operation: Operation,
    detail: Option<String>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl AppendError {
    /// An error of `operation` caused by an I/O error.
    #[must_use]
    pub fn io(operation: Operation, source: io::Error) -> AppendError {
        AppendError {
            operation,
            detail: None,
            source: Some(Box::new(source)),
        }
    }

    /// An error of `operation` with a text and no underlying cause.
    #[must_use]
    pub fn new(operation: Operation, detail: impl Into<String>) -> AppendError {
        AppendError {
            operation,
            detail: Some(detail.into()),
            source: None,
        }
    }

    /// An error of `operation` caused by any error.
    #[must_use]
    pub fn from_source(
        operation: Operation,
        source: impl StdError + Send + Sync + 'static,
    ) -> AppendError {
        AppendError {
            operation,
            detail: None,
            source: Some(Box::new(source)),
        }
    }

    /// An [`Operation::Panic`] error carrying the panic's message, from a
    /// payload caught with `catch_unwind`.
    #[must_use]
    pub fn panicked(payload: &(dyn Any + Send)) -> AppendError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_owned());
        AppendError::new(Operation::Panic, format!("appender panicked: {message}"))
    }

    /// Adds a detail (for example the path) shown in `Display`.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> AppendError {
        self.detail = Some(detail.into());
        self
    }

    /// The operation that failed.
    #[must_use]
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// The I/O error kind, when the cause is an I/O error.
    #[must_use]
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.source
            .as_ref()
            .and_then(|s| s.downcast_ref::<io::Error>())
            .map(io::Error::kind)
    }

    /// The error with its chain of causes on one line, for records and
    /// reports (`write failed: /var/log/app.log: No space left on device`).
    #[must_use]
    pub fn chain_text(&self) -> String {
        let mut text = self.to_string();
        let mut cause: Option<&(dyn StdError + 'static)> = self.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.operation)?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl StdError for AppendError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_ref()
            .map(|s| &**s as &(dyn StdError + 'static))
    }
}

/// A failed [`Appender::append_batch`]: how many records were written before
/// the failing one, and why it failed.
#[derive(Debug)]
pub struct BatchError {
    /// Records of the batch fully written before the failure; the record at
    /// this index is the one that failed.
    pub written: usize,
    /// Why the record at index `written` failed.
    pub error: AppendError,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "batch failed at record {}", self.written)
    }
}

impl StdError for BatchError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.error)
    }
}
