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

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::format::TextFormat;
    use crate::layout::Layout;
    use crate::record::Topic;
    use crate::render::Pipeline;

    /// Both streams log `(stream, bytes)` per write into one journal, so a
    /// test sees the order of writes across them; `budget` bytes, then
    /// `StorageFull`.
    #[derive(Clone)]
    struct Journal {
        log: Arc<Mutex<Vec<(&'static str, String)>>>,
        name: &'static str,
        budget: Arc<Mutex<usize>>,
    }

    impl Write for Journal {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let mut budget = self.budget.lock().unwrap();
            if *budget == 0 {
                return Err(io::Error::from(io::ErrorKind::StorageFull));
            }
            let n = data.len().min(*budget);
            *budget -= n;
            let text = String::from_utf8_lossy(&data[..n]).into_owned();
            self.log.lock().unwrap().push((self.name, text));
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn split(budget: usize) -> (Pipeline<TextFormat, LevelSplit>, Journal) {
        let journal = Journal {
            log: Arc::default(),
            name: "out",
            budget: Arc::new(Mutex::new(budget)),
        };
        let err = Journal {
            name: "err",
            ..journal.clone()
        };
        let streams = LevelSplit::new(
            Stream::new("stdout", Box::new(journal.clone()), false),
            Stream::new("stderr", Box::new(err), false),
            Some(Level::Warn),
        );
        let format = TextFormat::new(Layout::parse("{msg}").unwrap());
        (Pipeline::new(format, streams), journal)
    }

    fn records(levels: &[(Level, &str)]) -> Vec<Record> {
        levels
            .iter()
            .map(|&(level, m)| {
                Record::builder(Topic::new(level, "t"))
                    .message(m.to_owned())
                    .build()
            })
            .collect()
    }

    fn log(journal: &Journal) -> Vec<(&'static str, String)> {
        journal.log.lock().unwrap().clone()
    }

    #[test]
    fn records_keep_their_order_across_the_two_streams() {
        let (mut p, journal) = split(usize::MAX);
        let batch = records(&[
            (Level::Info, "a"),
            (Level::Debug, "b"),
            (Level::Error, "c"),
            (Level::Warn, "d"),
            (Level::Info, "e"),
        ]);
        p.append(&batch).unwrap();
        // One write per run of records for the same stream.
        assert_eq!(
            log(&journal),
            [
                ("out", "a\nb\n".to_owned()),
                ("err", "c\nd\n".to_owned()),
                ("out", "e\n".to_owned())
            ]
        );
    }

    #[test]
    fn a_partial_line_is_terminated_on_its_own_stream_only() {
        // "a\n" to stdout, then "ca" of "cat\n" to stderr.
        let (mut p, journal) = split(4);
        let batch = records(&[
            (Level::Info, "a"),
            (Level::Error, "cat"),
            (Level::Info, "x"),
        ]);
        let err = p.append(&batch).unwrap_err();
        assert_eq!(err.written, 1);
        *journal.budget.lock().unwrap() = usize::MAX;
        p.append(&records(&[(Level::Info, "x"), (Level::Error, "cat")]))
            .unwrap();
        assert_eq!(
            log(&journal),
            [
                ("out", "a\n".to_owned()),
                ("err", "ca".to_owned()),
                ("out", "x\n".to_owned()),
                ("err", "\n".to_owned()),
                ("err", "cat\n".to_owned())
            ]
        );
    }
}
