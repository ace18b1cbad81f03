//! Stream destinations: one writer (stdout, stderr, a pipe, any `Write`),
//! or the console's two streams with records routed between them by level.
//!
//! Nothing is buffered between calls: each call's records are handed to the
//! writer before it returns, so a writer that buffers itself (a
//! `BufWriter`) defers them to [`flush`](Destination::flush), errors too.

use std::fmt;
use std::io::Write;

use crate::appender::{AppendError, BatchError, Operation};
use crate::format::Style;
use crate::record::{Level, Record};
use crate::render::{Lines, Output};

use super::{Destination, Framing};

/// One writer, newline-framed, named in errors (`stdout`).
pub(crate) struct Stream {
    name: &'static str,
    out: Output<Box<dyn Write + Send>>,
    /// The stream shows colour: decided when the appender is built.
    color: bool,
}

impl Stream {
    pub(crate) fn new(name: &'static str, writer: Box<dyn Write + Send>, color: bool) -> Stream {
        Stream {
            name,
            out: Output::new(writer),
            color,
        }
    }
}

impl Destination for Stream {
    fn framing(&self) -> Framing {
        Framing::Newline
    }

    fn before_record(&mut self, _record: &Record, _lines: &mut Lines) -> Result<Style, BatchError> {
        Ok(Style { color: self.color })
    }

    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        lines
            .write_to(&mut self.out)
            .map(drop)
            .map_err(|failure| BatchError {
                written: failure.written,
                error: AppendError::io(Operation::Write, failure.error).with_detail(self.name),
            })
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.out
            .writer
            .flush()
            .map_err(|e| AppendError::io(Operation::Flush, e).with_detail(self.name))
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("name", &self.name)
            .field("color", &self.color)
            .finish_non_exhaustive()
    }
}

/// Two streams (stdout, stderr): records at or above a level go to the
/// second, the rest to the first.
///
/// Records keep their order across the two streams: before a record goes to
/// the other stream, the records buffered for the current one are written
/// out, so at most one stream has records buffered, and a terminator the
/// other owes (after a failed write) goes to that stream alone.
#[derive(Debug)]
pub(crate) struct LevelSplit {
    streams: [Stream; 2],
    /// Records this severe or more go to `streams[1]`; `None`: none do.
    second_from: Option<Level>,
    /// The stream the buffered records are for.
    current: usize,
}

impl LevelSplit {
    pub(crate) fn new(first: Stream, second: Stream, second_from: Option<Level>) -> LevelSplit {
        LevelSplit {
            streams: [first, second],
            second_from,
            current: 0,
        }
    }
}

impl Destination for LevelSplit {
    fn framing(&self) -> Framing {
        Framing::Newline
    }

    fn before_record(&mut self, record: &Record, lines: &mut Lines) -> Result<Style, BatchError> {
        // `Level` orders by verbosity: Error < Warn < ... < Trace.
        let target = usize::from(self.second_from.is_some_and(|from| record.level() <= from));
        if target != self.current {
            self.streams[self.current].write_out(lines)?;
            self.current = target;
        }
        self.streams[target].before_record(record, lines)
    }

    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        self.streams[self.current].write_out(lines)
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.streams[0].flush()?;
        self.streams[1].flush()
    }
}
