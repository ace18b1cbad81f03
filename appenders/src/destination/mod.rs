//! Destinations: where a call's framed records go, and how they are framed.
//!
//! A [`Destination`] owns its writer(s) and says how records are delimited
//! ([`Framing`]); the render loop ([`crate::render`]) fills the call's
//! [`Lines`] and asks the destination to write them out. Two hooks around
//! each record let a destination decide between records without a loop of
//! its own: [`before_record`](Destination::before_record) (switch stream,
//! rotate by time) and [`before_commit`](Destination::before_commit) (rotate
//! by size, once the record's length is known).
//!
//! - [`stream`]: one writer (stdout, stderr, any `Write`), or the console's
//!   pair routed by level;
//! - [`file`]: the rolling file (rotation, reopening, symlink refusal,
//!   compression);
//! - [`socket`] (feature `syslog`): the syslog sockets, UDP, TCP, TLS and
//!   Unix, one file each, made and re-made on the worker.

pub(crate) mod file;
mod framing;
#[cfg(feature = "syslog")]
pub(crate) mod socket;
pub(crate) mod stream;

use std::fmt;

use crate::appender::{AppendError, BatchError};
use crate::format::Style;
use crate::record::Record;
use crate::render::Lines;

pub(crate) use self::framing::Framing;

/// Where the render loop writes, and how it frames records.
///
/// Every method that writes gets the call's [`Lines`] and must keep its
/// invariant: a [`BatchError`] names `lines.written()` records (as
/// [`WriteFailure::written`](crate::render::WriteFailure) does for a failed
/// write), so it counts exactly the records of the call on the OS side.
///
/// # For implementors
///
/// Write only with [`Lines::write_to`], which writes committed records whole
/// (or reports which ones were) and keeps the pending one. Called per
/// record: the hooks must be cheap when they do nothing (a comparison, no
/// system call, no allocation).
pub(crate) trait Destination: Send + fmt::Debug {
    /// How records are framed; read once per call.
    fn framing(&self) -> Framing;

    /// Upkeep before the first record of a call (the rolling file checks
    /// that its path still names the open file).
    ///
    /// Returning an error fails the call with no record written.
    fn start_call(&mut self) -> Result<(), AppendError> {
        Ok(())
    }

    /// Called before `record` is rendered, with the records committed so
    /// far in `lines`: may write them out (to switch streams, or rotate) and
    /// returns what the format may use for this record.
    fn before_record(&mut self, record: &Record, lines: &mut Lines) -> Result<Style, BatchError>;

    /// Called once the record is rendered and framed, still pending in
    /// `lines` ([`Lines::pending_len`] bytes): may write the committed
    /// records out and rotate before the record is placed.
    fn before_commit(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        let _ = lines;
        Ok(())
    }

    /// Writes the committed records out (to the current stream).
    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError>;

    /// Flushes what the writer buffers itself; see [`crate::Appender::flush`].
    fn flush(&mut self) -> Result<(), AppendError>;
}

impl<D: Destination + ?Sized> Destination for Box<D> {
    fn framing(&self) -> Framing {
        (**self).framing()
    }

    fn start_call(&mut self) -> Result<(), AppendError> {
        (**self).start_call()
    }

    fn before_record(&mut self, record: &Record, lines: &mut Lines) -> Result<Style, BatchError> {
        (**self).before_record(record, lines)
    }

    fn before_commit(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        (**self).before_commit(lines)
    }

    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        (**self).write_out(lines)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        (**self).flush()
    }
}
