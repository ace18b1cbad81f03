//! Writing a buffer of complete lines so that a failure loses nothing and
//! duplicates nothing.

use std::fmt;
use std::io::{self, Write};

use crate::appender::{AppendError, Operation};

/// Capacity at which an appender writes its buffered lines out without
/// waiting for a flush: large enough that a flood costs one `write(2)` per
/// few hundred records, small enough to stay in L2.
pub(crate) const BUFFER_LIMIT: usize = 64 * 1024;

/// Writes all of `buf` to `writer`, removing each written prefix from `buf`
/// as it goes.
///
/// On error `buf` holds exactly the bytes not yet written, so the next
/// attempt continues where this one stopped: a line the kernel took in part
/// is completed, never repeated. `Interrupted` is retried.
pub(crate) fn write_pending(writer: &mut dyn Write, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut written = 0;
    let result = loop {
        if written == buf.len() {
            break Ok(());
        }
        match writer.write(&buf[written..]) {
            Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    buf.drain(..written);
    result
}

/// A writer (stdout, stderr, a pipe) with a buffer of complete lines.
pub(crate) struct LineSink {
    /// Names the destination in errors (`stdout`).
    name: &'static str,
    writer: Box<dyn Write + Send>,
    pub(crate) buf: Vec<u8>,
}

impl LineSink {
    pub(crate) fn new(name: &'static str, writer: Box<dyn Write + Send>) -> LineSink {
        LineSink {
            name,
            writer,
            buf: Vec::new(),
        }
    }

    /// Makes room before a record is added: writes the buffer out once it
    /// passes [`BUFFER_LIMIT`], so on error nothing of the new record is
    /// buffered yet.
    pub(crate) fn reserve(&mut self) -> Result<(), AppendError> {
        if self.buf.len() >= BUFFER_LIMIT {
            self.write_out()?;
        }
        Ok(())
    }

    /// Writes the buffered lines.
    pub(crate) fn write_out(&mut self) -> Result<(), AppendError> {
        write_pending(&mut *self.writer, &mut self.buf)
            .map_err(|e| AppendError::io(Operation::Write, e).with_detail(self.name))
    }

    /// Writes the buffered lines and flushes the writer.
    pub(crate) fn flush(&mut self) -> Result<(), AppendError> {
        write_pending(&mut *self.writer, &mut self.buf)
            .and_then(|()| self.writer.flush())
            .map_err(|e| AppendError::io(Operation::Flush, e).with_detail(self.name))
    }
}

impl fmt::Debug for LineSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineSink")
            .field("name", &self.name)
            .field("pending", &self.buf.len())
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

    #[test]
    fn a_failed_write_keeps_exactly_the_unwritten_bytes() {
        let mut sink = Trickle {
            taken: Vec::new(),
            budget: 7,
        };
        let mut buf = b"line one\nline two\n".to_vec();
        let err = write_pending(&mut sink, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert_eq!(sink.taken, b"line on");
        assert_eq!(buf, b"e\nline two\n");
        sink.budget = usize::MAX;
        write_pending(&mut sink, &mut buf).unwrap();
        assert!(buf.is_empty());
        assert_eq!(sink.taken, b"line one\nline two\n");
    }
}
