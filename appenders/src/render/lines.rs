//! `Lines`: the framed records of one `append`/`append_batch` call, written
//! so that a record counts as written only once all its bytes reached the OS.
//!
//! The render loop ([`super`]) renders the records of one call into
//! [`Lines`], remembering where each record's frame ends, and the
//! destination writes the buffer out with [`Lines::write_to`] before the
//! call returns: in the common case one `write(2)` per call. When the OS
//! takes only part of the buffer and then fails (a full disk), the records
//! whose frames it took completely are written; the rest of the buffer is
//! discarded, because the broker retries the failing record and hands the
//! following ones to a later call. A frame the OS took in part stays partial
//! on the destination: its [`Output`] remembers it, and the next write there
//! starts with the framing's terminator (`\n`), so later records begin on
//! their own line.
//!
//! Architecture Invariant: `written` counts exactly the records of the
//! current call whose bytes were all handed to the OS, so every
//! [`BatchError`](crate::BatchError) the loop or a destination builds from
//! it names them and no other.

use std::fmt;
use std::io::{self, Write};

use crate::destination::Framing;

/// Size at which the render loop writes the records framed so far in a call
/// without waiting for the end of the batch: bounds the buffer when records
/// are large, and stays in L2. A batch of ordinary lines is under it, so it
/// costs one `write(2)`.
pub(crate) const BUFFER_LIMIT: usize = 64 * 1024;

/// The framed records of one call not written yet, with the end offset of
/// each; see the module docs.
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// End offset in `buf` of each committed record's frame, ascending;
    /// bytes after the last end belong to the record being rendered.
    ends: Vec<usize>,
    /// Records of the current call handed to the OS completely.
    written: usize,
    framing: Framing,
}

/// A writer and whether it ends inside a frame, because a write failed
/// mid-record: the next write to it terminates that frame first.
#[derive(Debug)]
pub(crate) struct Output<W> {
    pub(crate) writer: W,
    partial: bool,
}

impl<W> Output<W> {
    pub(crate) fn new(writer: W) -> Output<W> {
        Output {
            writer,
            partial: false,
        }
    }

    /// An output whose last line was left unterminated (by a process killed
    /// mid-write): the next record starts on a fresh line.
    pub(crate) fn after_partial_line(writer: W) -> Output<W> {
        Output {
            writer,
            partial: true,
        }
    }
}

/// A failed [`Lines::write_to`].
#[derive(Debug)]
pub(crate) struct WriteFailure {
    /// Records of the call written completely, this write and earlier ones.
    pub(crate) written: usize,
    /// Bytes the OS took in this write.
    pub(crate) bytes: u64,
    pub(crate) error: io::Error,
}

impl Lines {
    pub(crate) fn with_capacity(capacity: usize) -> Lines {
        Lines {
            buf: Vec::with_capacity(capacity),
            ends: Vec::new(),
            written: 0,
            framing: Framing::Newline,
        }
    }

    /// Starts a call framed with `framing`: forgets whatever a previous call
    /// left (only a panic leaves anything), keeping the allocation.
    pub(crate) fn start_call(&mut self, framing: Framing) {
        self.buf.clear();
        self.ends.clear();
        self.written = 0;
        self.framing = framing;
    }

    /// Records of the call written completely so far.
    pub(crate) fn written(&self) -> usize {
        self.written
    }

    /// Starts a record: returns the offset its bytes start at.
    pub(crate) fn begin(&mut self) -> usize {
        self.buf.len()
    }

    /// The buffer the record started with [`begin`](Lines::begin) is
    /// rendered into.
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Frames the record rendered since `start` (bytes without framing);
    /// it stays pending until [`commit`](Lines::commit).
    pub(crate) fn frame(&mut self, start: usize) {
        self.framing.frame(&mut self.buf, start);
    }

    /// Commits the pending record: it is written with the next write.
    pub(crate) fn commit(&mut self) {
        self.ends.push(self.buf.len());
    }

    /// Drops the bytes of a record that could not be rendered.
    pub(crate) fn abandon(&mut self, start: usize) {
        self.buf.truncate(start);
    }

    /// Bytes buffered, committed and pending.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of the committed records.
    pub(crate) fn committed_len(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Bytes of the pending record.
    pub(crate) fn pending_len(&self) -> usize {
        self.buf.len() - self.committed_len()
    }

    /// Writes the committed records to `out` (retrying `Interrupted`), and
    /// empties the buffer of them whatever the outcome: on failure the
    /// records not fully taken are the broker's to retry, never this
    /// buffer's. A pending record is kept on success (a destination writes
    /// out before placing it, to rotate) and dropped on failure.
    pub(crate) fn write_to<W: Write>(&mut self, out: &mut Output<W>) -> Result<u64, WriteFailure> {
        if self.ends.is_empty() {
            return Ok(0);
        }
        let mut bytes = 0;
        if out.partial {
            let terminator = self.framing.terminator();
            if let Err(error) = write_all(&mut out.writer, terminator, &mut bytes) {
                // The old frame is still open if the terminator did not
                // get through whole.
                out.partial = bytes != terminator.len() as u64;
                return Err(self.fail(bytes, error));
            }
            out.partial = false;
        }
        let end = self.committed_len();
        let mut taken = 0;
        let result = match self.framing {
            Framing::Datagram => self.send_each(&mut out.writer, &mut taken),
            Framing::Newline | Framing::OctetCount => {
                let mut n = 0;
                let result = write_all(&mut out.writer, &self.buf[..end], &mut n);
                taken = n as usize;
                result
            }
        };
        bytes += taken as u64;
        match result {
            Ok(()) => {
                self.written += self.ends.len();
                self.ends.clear();
                self.buf.drain(..end);
                Ok(bytes)
            }
            Err(error) => {
                let records = self.ends.partition_point(|&e| e <= taken);
                let boundary = match records {
                    0 => 0,
                    n => self.ends[n - 1],
                };
                // Past a boundary a new frame is open on the destination.
                out.partial = taken != boundary;
                self.written += records;
                Err(self.fail(bytes, error))
            }
        }
    }

    /// Sends each committed record with one `write`: a datagram is taken
    /// whole or not at all, so a short count is an error.
    fn send_each(&self, writer: &mut impl Write, taken: &mut usize) -> io::Result<()> {
        let mut start = 0;
        for &end in &self.ends {
            loop {
                match writer.write(&self.buf[start..end]) {
                    Ok(n) if n == end - start => break,
                    Ok(_) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            *taken = end;
            start = end;
        }
        Ok(())
    }

    fn fail(&mut self, bytes: u64, error: io::Error) -> WriteFailure {
        self.buf.clear();
        self.ends.clear();
        WriteFailure {
            written: self.written,
            bytes,
            error,
        }
    }
}

/// Writes `data` whole, retrying `Interrupted`, counting in `taken` the
/// bytes the writer took even when it then fails.
fn write_all(writer: &mut impl Write, data: &[u8], taken: &mut u64) -> io::Result<()> {
    let mut done = 0;
    while done < data.len() {
        match writer.write(&data[done..]) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => {
                done += n;
                *taken += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines")
            .field("pending", &self.buf.len())
            .field("records", &self.ends.len())
            .field("written", &self.written)
            .field("framing", &self.framing)
            .finish()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Accepts `budget` bytes, three at a time, then fails.
    #[derive(Debug)]
    pub(crate) struct Trickle {
        pub(crate) taken: Vec<u8>,
        pub(crate) budget: usize,
        pub(crate) writes: usize,
    }

    impl Trickle {
        pub(crate) fn new(budget: usize) -> Trickle {
            Trickle {
                taken: Vec::new(),
                budget,
                writes: 0,
            }
        }
    }

    impl Write for Trickle {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            self.writes += 1;
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
        let start = lines.begin();
        lines.buf().extend_from_slice(text.as_bytes());
        lines.frame(start);
        lines.commit();
    }

    fn newline_lines() -> Lines {
        let mut lines = Lines::with_capacity(0);
        lines.start_call(Framing::Newline);
        lines
    }

    #[test]
    fn a_failed_write_counts_whole_lines_and_keeps_nothing() {
        let mut out = Output::new(Trickle::new(12));
        let mut lines = newline_lines();
        push(&mut lines, "line one");
        push(&mut lines, "line two");
        let failure = lines.write_to(&mut out).unwrap_err();
        assert_eq!(failure.error.kind(), io::ErrorKind::StorageFull);
        assert_eq!((failure.written, failure.bytes), (1, 12));
        assert_eq!(out.writer.taken, b"line one\nlin");
        assert_eq!(lines.len(), 0);
        // The partial line is terminated before the next record.
        out.writer.budget = usize::MAX;
        lines.start_call(Framing::Newline);
        push(&mut lines, "line two");
        assert_eq!(lines.write_to(&mut out).unwrap(), 10);
        assert_eq!(out.writer.taken, b"line one\nlin\nline two\n");
        // And only once.
        push(&mut lines, "line three");
        lines.write_to(&mut out).unwrap();
        assert_eq!(out.writer.taken, b"line one\nlin\nline two\nline three\n");
        assert_eq!(lines.written(), 2);
    }

    #[test]
    fn a_failure_at_a_line_boundary_leaves_no_partial_line() {
        let mut out = Output::new(Trickle::new(9));
        let mut lines = newline_lines();
        push(&mut lines, "line one");
        push(&mut lines, "line two");
        let failure = lines.write_to(&mut out).unwrap_err();
        assert_eq!((failure.written, failure.bytes), (1, 9));
        out.writer.budget = usize::MAX;
        push(&mut lines, "line two");
        lines.write_to(&mut out).unwrap();
        assert_eq!(out.writer.taken, b"line one\nline two\n");
    }

    #[test]
    fn a_terminator_that_fails_again_is_still_owed() {
        let mut out = Output {
            writer: Trickle {
                taken: b"par".to_vec(),
                budget: 0,
                writes: 0,
            },
            partial: true,
        };
        let mut lines = newline_lines();
        push(&mut lines, "x");
        let failure = lines.write_to(&mut out).unwrap_err();
        assert_eq!((failure.written, failure.bytes), (0, 0));
        out.writer.budget = 1;
        push(&mut lines, "x");
        // Only the terminator got through: no partial line any more.
        assert_eq!(lines.write_to(&mut out).unwrap_err().written, 0);
        out.writer.budget = usize::MAX;
        push(&mut lines, "x");
        lines.write_to(&mut out).unwrap();
        assert_eq!(out.writer.taken, b"par\nx\n");
    }

    #[test]
    fn a_pending_record_survives_a_write_out() {
        let mut out = Output::new(Vec::new());
        let mut lines = newline_lines();
        push(&mut lines, "one");
        let start = lines.begin();
        lines.buf().extend_from_slice(b"two");
        lines.frame(start);
        assert_eq!((lines.committed_len(), lines.pending_len()), (4, 4));
        lines.write_to(&mut out).unwrap();
        assert_eq!(out.writer, b"one\n");
        assert_eq!((lines.committed_len(), lines.pending_len()), (0, 4));
        lines.commit();
        lines.write_to(&mut out).unwrap();
        assert_eq!(out.writer, b"one\ntwo\n");
        assert_eq!(lines.written(), 2);
    }

    #[test]
    fn datagrams_are_one_write_each_and_never_split() {
        let mut out = Output::new(Trickle::new(usize::MAX));
        let mut lines = Lines::with_capacity(0);
        lines.start_call(Framing::Datagram);
        push(&mut lines, "ab");
        push(&mut lines, "cde");
        lines.write_to(&mut out).unwrap();
        assert_eq!(
            (out.writer.taken.as_slice(), out.writer.writes),
            (&b"abcde"[..], 2)
        );
        // A writer that would take part of a datagram fails it.
        push(&mut lines, "fghij");
        let failure = lines.write_to(&mut out).unwrap_err();
        assert_eq!(failure.error.kind(), io::ErrorKind::WriteZero);
        assert_eq!(failure.written, 2);
    }
}
