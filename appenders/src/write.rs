//! Writing the lines of one `append`/`append_batch` call so that a record
//! counts as written only once its bytes were handed to the OS, and a
//! failure loses nothing that was counted and duplicates nothing.
//!
//! An appender renders the records of one call into [`Lines`], remembering
//! where each record's line ends, then writes the buffer out with
//! [`Lines::write_to`] before returning: in the common case one `write(2)`
//! per call. When the OS takes only part of the buffer and then fails (a
//! full disk), the records whose lines it took completely are written; the
//! rest of the buffer is discarded, because the broker retries the failing
//! record and hands the following ones to a later call. A line the OS took
//! in part stays partial on the destination: the next write starts with a
//! `\n`, so later records begin on their own line.

use std::fmt;
use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::appender::{AppendError, BatchError, Operation};
use crate::record::Record;

/// Size at which an appender writes the lines rendered so far in a call
/// without waiting for the end of the batch: bounds the buffer when records
/// are large, and stays in L2. A batch of ordinary lines is under it, so it
/// costs one `write(2)`.
pub(crate) const BUFFER_LIMIT: usize = 64 * 1024;

/// The lines rendered in one call and not written yet, with the end offset
/// of each record's line; see the module docs.
#[derive(Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// End offset in `buf` of each complete record's line(s), ascending.
    ends: Vec<usize>,
    /// Bytes at the start of `buf` terminating a partial line (0 or 1).
    prefix: usize,
    /// The destination ends with a partial line: a write failed mid-line.
    partial: bool,
}

/// A failed [`Lines::write_to`].
#[derive(Debug)]
pub(crate) struct WriteFailure {
    /// Records whose line(s) the OS took completely.
    pub(crate) records: usize,
    /// Bytes the OS took.
    pub(crate) bytes: u64,
    pub(crate) error: io::Error,
}

impl Lines {
    pub(crate) fn with_capacity(capacity: usize) -> Lines {
        Lines {
            buf: Vec::with_capacity(capacity),
            ..Lines::default()
        }
    }

    /// Forgets whatever a previous call left (only a panic leaves anything),
    /// keeping the allocation and the partial-line state.
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.ends.clear();
        self.prefix = 0;
    }

    /// Starts a record: returns the offset its bytes start at. The first
    /// record after a write that ended mid-line is preceded by a `\n`.
    pub(crate) fn begin(&mut self) -> usize {
        if self.buf.is_empty() && self.partial {
            self.buf.push(b'\n');
            self.prefix = 1;
        }
        self.buf.len()
    }

    /// The buffer the record started with [`begin`](Lines::begin) is
    /// rendered into.
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Ends the record started at the last [`begin`](Lines::begin); its
    /// bytes must end with `\n`.
    pub(crate) fn end(&mut self) {
        self.ends.push(self.buf.len());
    }

    /// Drops the bytes of a record that could not be rendered.
    pub(crate) fn abandon(&mut self, start: usize) {
        self.buf.truncate(start);
    }

    /// Takes the bytes of the record started at `start` out of the buffer
    /// (to write it after a rotation).
    pub(crate) fn take_from(&mut self, start: usize) -> Vec<u8> {
        self.buf.split_off(start)
    }

    /// Bytes buffered.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether complete records are buffered.
    pub(crate) fn has_records(&self) -> bool {
        !self.ends.is_empty()
    }

    /// The destination was replaced by a new file: no partial line to
    /// terminate any more.
    /// Called between writes, with the buffer empty.
    pub(crate) fn new_destination(&mut self) {
        debug_assert!(self.buf.is_empty(), "a new destination splits no call");
        self.partial = false;
    }

    /// Writes the whole buffer to `writer` (retrying `Interrupted`), then
    /// empties it, whatever the outcome: on failure the records not fully
    /// taken are the broker's to retry, never this buffer's.
    pub(crate) fn write_to(&mut self, writer: &mut dyn Write) -> Result<u64, WriteFailure> {
        if self.buf.is_empty() {
            return Ok(0);
        }
        let mut taken = 0;
        let result = loop {
            if taken == self.buf.len() {
                break Ok(());
            }
            match writer.write(&self.buf[taken..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => taken += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let outcome = match result {
            Ok(()) => {
                self.partial = false;
                Ok(taken as u64)
            }
            Err(error) => {
                let records = self.ends.partition_point(|&end| end <= taken);
                let boundary = match records {
                    0 => self.prefix,
                    n => self.ends[n - 1],
                };
                // Short of the terminator (`taken < prefix`) the old partial
                // line is still open; past a boundary a new one is.
                self.partial = taken != boundary;
                Err(WriteFailure {
                    records,
                    bytes: taken as u64,
                    error,
                })
            }
        };
        self.clear();
        outcome
    }
}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines")
            .field("pending", &self.buf.len())
            .field("records", &self.ends.len())
            .field("partial", &self.partial)
            .finish()
    }
}

/// Renders one record, turning a panic into an [`Operation::Panic`] error,
/// as the default [`append_batch`](crate::Appender::append_batch) does, so a
/// batch still reports exactly which records were written.
pub(crate) fn render_guarded(
    render: &mut impl FnMut(&Record, &mut Vec<u8>) -> Result<(), AppendError>,
    record: &Record,
    out: &mut Vec<u8>,
) -> Result<(), AppendError> {
    catch_unwind(AssertUnwindSafe(|| render(record, out)))
        .unwrap_or_else(|payload| Err(AppendError::panicked(payload.as_ref())))
}

/// Something that renders a call's records into [`Lines`] and writes them
/// out: the stream sink and the rolling file. The render loop steps shared
/// by both are [`render_line`] and [`end_line`].
pub(crate) trait LineOutput {
    /// The lines of the current call.
    fn lines(&mut self) -> &mut Lines;

    /// Writes the lines out; `first` is the index (in the call) of the record
    /// whose line comes first, so a failure can name how many were written.
    fn write_out(&mut self, first: usize) -> Result<(), BatchError>;
}

/// Renders record `index` of the call into the output's lines and returns
/// where its line starts. If rendering fails (or panics), the lines before it
/// are written out and the record is reported as the failing one.
pub(crate) fn render_line<O: LineOutput>(
    out: &mut O,
    render: &mut impl FnMut(&Record, &mut Vec<u8>) -> Result<(), AppendError>,
    record: &Record,
    index: usize,
    first: usize,
) -> Result<usize, BatchError> {
    let start = out.lines().begin();
    if let Err(error) = render_guarded(render, record, out.lines().buf()) {
        out.lines().abandon(start);
        out.write_out(first)?;
        return Err(BatchError {
            written: index,
            error,
        });
    }
    Ok(start)
}

/// Ends record `index`'s line and writes the lines out once the buffer is
/// full; returns the index of the record whose line now comes first.
pub(crate) fn end_line<O: LineOutput>(
    out: &mut O,
    index: usize,
    first: usize,
) -> Result<usize, BatchError> {
    out.lines().end();
    if out.lines().len() >= BUFFER_LIMIT {
        out.write_out(first)?;
        return Ok(index + 1);
    }
    Ok(first)
}

/// A writer (stdout, stderr, a pipe) and the lines of the current call.
pub(crate) struct LineSink {
    /// Names the destination in errors (`stdout`).
    name: &'static str,
    writer: Box<dyn Write + Send>,
    pub(crate) lines: Lines,
}

impl LineSink {
    pub(crate) fn new(name: &'static str, writer: Box<dyn Write + Send>) -> LineSink {
        LineSink {
            name,
            writer,
            lines: Lines::default(),
        }
    }

    /// Appends `records` (every record ends up written or reported in the
    /// result); `render` appends one record's complete line(s).
    pub(crate) fn append<'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r Record>,
        mut render: impl FnMut(&Record, &mut Vec<u8>) -> Result<(), AppendError>,
    ) -> Result<(), BatchError> {
        self.lines.clear();
        // Index of the first record whose line is in `lines`.
        let mut first = 0;
        for (index, record) in records.into_iter().enumerate() {
            render_line(self, &mut render, record, index, first)?;
            first = end_line(self, index, first)?;
        }
        self.write_out(first)
    }

    /// Flushes the writer (lines were written by the calls that rendered
    /// them; this only matters for a writer that buffers itself).
    pub(crate) fn flush(&mut self) -> Result<(), AppendError> {
        self.writer
            .flush()
            .map_err(|e| AppendError::io(Operation::Flush, e).with_detail(self.name))
    }
}

impl LineOutput for LineSink {
    fn lines(&mut self) -> &mut Lines {
        &mut self.lines
    }

    /// Writes the buffered lines, whose first record is record `first` of
    /// the call: on failure the error names how many records of the call
    /// were written.
    fn write_out(&mut self, first: usize) -> Result<(), BatchError> {
        self.lines
            .write_to(&mut *self.writer)
            .map(drop)
            .map_err(|failure| BatchError {
                written: first + failure.records,
                error: AppendError::io(Operation::Write, failure.error).with_detail(self.name),
            })
    }
}

impl fmt::Debug for LineSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineSink")
            .field("name", &self.name)
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `budget` bytes, three at a time, then fails.
    struct Trickle {
        taken: Vec<u8>,
        budget: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::Error::from(io::ErrorKind::StorageFull));
            }
            let n = data.len().min(3).min(self.budget);
            self.budget -= n;
            self.taken.extend_from_slice(&data[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn push(lines: &mut Lines, text: &str) {
        lines.begin();
        lines.buf().extend_from_slice(text.as_bytes());
        lines.end();
    }

    #[test]
    fn a_failed_write_counts_whole_lines_and_keeps_nothing() {
        let mut sink = Trickle {
            taken: Vec::new(),
            budget: 12,
        };
        let mut lines = Lines::default();
        push(&mut lines, "line one\n");
        push(&mut lines, "line two\n");
        let failure = lines.write_to(&mut sink).unwrap_err();
        assert_eq!(failure.error.kind(), io::ErrorKind::StorageFull);
        assert_eq!((failure.records, failure.bytes), (1, 12));
        assert_eq!(sink.taken, b"line one\nlin");
        assert_eq!(lines.len(), 0);
        // The partial line is terminated before the next record.
        sink.budget = usize::MAX;
        push(&mut lines, "line two\n");
        assert_eq!(lines.write_to(&mut sink).unwrap(), 10);
        assert_eq!(sink.taken, b"line one\nlin\nline two\n");
        // And only once.
        push(&mut lines, "line three\n");
        lines.write_to(&mut sink).unwrap();
        assert_eq!(sink.taken, b"line one\nlin\nline two\nline three\n");
    }

    #[test]
    fn a_failure_at_a_line_boundary_leaves_no_partial_line() {
        let mut sink = Trickle {
            taken: Vec::new(),
            budget: 9,
        };
        let mut lines = Lines::default();
        push(&mut lines, "line one\n");
        push(&mut lines, "line two\n");
        let failure = lines.write_to(&mut sink).unwrap_err();
        assert_eq!((failure.records, failure.bytes), (1, 9));
        sink.budget = usize::MAX;
        push(&mut lines, "line two\n");
        lines.write_to(&mut sink).unwrap();
        assert_eq!(sink.taken, b"line one\nline two\n");
    }

    #[test]
    fn a_terminator_that_fails_again_is_still_owed() {
        let mut sink = Trickle {
            taken: b"par".to_vec(),
            budget: 0,
        };
        let mut lines = Lines {
            partial: true,
            ..Lines::default()
        };
        push(&mut lines, "x\n");
        let failure = lines.write_to(&mut sink).unwrap_err();
        assert_eq!((failure.records, failure.bytes), (0, 0));
        sink.budget = 1;
        push(&mut lines, "x\n");
        // Only the terminator got through: no partial line any more.
        assert_eq!(lines.write_to(&mut sink).unwrap_err().records, 0);
        sink.budget = usize::MAX;
        push(&mut lines, "x\n");
        lines.write_to(&mut sink).unwrap();
        assert_eq!(sink.taken, b"par\nx\n");
    }
}
