//! The render loop: the one place where a format and a destination meet.
//!
//! [`Pipeline::append`] renders each record of one `append`/`append_batch`
//! call (or of one staged batch: [`Pipeline::stage`] a run at a time, then
//! [`Pipeline::commit`]) with the [`Format`], frames it as the
//! [`Destination`] says, and buffers it in the call's [`Lines`] (a staged
//! batch is one call); the destination writes the buffer out
//! when it reaches [`BUFFER_LIMIT`], when one of its hooks needs it (a stream
//! switch, a rotation), and at the end of the call, so every record the call
//! returns `Ok` for was handed to the OS (the [`Appender`](crate::Appender)
//! contract). Per record: one format call and two destination hooks, no
//! allocation once the buffer has grown.
//!
//! A record that fails to render (or panics) is reported as the failing one
//! after the records before it are written; a failed write reports exactly
//! the records whose frames the OS took (see [`lines`]). Either way the
//! [`BatchError`] counts records of the call, and nothing of the failing or
//! later records is kept, so the broker's retry writes each exactly once.

mod lines;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::appender::{AppendError, BatchError, Operation};
use crate::destination::Destination;
use crate::format::{Format, Style};
use crate::record::Record;

pub(crate) use self::lines::{Lines, Output, BUFFER_LIMIT};

/// Implements [`Appender`](crate::Appender) for a named pairing whose
/// `pipeline` field is a [`Pipeline`]: every call goes through the one loop.
macro_rules! appender_through_pipeline {
    ($name:ty) => {
        impl $crate::Appender for $name {
            fn append(&mut self, record: &$crate::Record) -> Result<(), $crate::AppendError> {
                self.pipeline.append([record]).map_err(|e| e.error)
            }

            fn append_batch(
                &mut self,
                records: &[std::sync::Arc<$crate::Record>],
            ) -> Result<(), $crate::BatchError> {
                self.pipeline.append(records.iter().map(|r| &**r))
            }

            fn staged(&mut self) -> Option<&mut dyn $crate::Staged> {
                Some(self)
            }

            fn flush(&mut self) -> Result<(), $crate::AppendError> {
                self.pipeline.flush()
            }
        }

        impl $crate::Staged for $name {
            fn stage(
                &mut self,
                records: &[std::sync::Arc<$crate::Record>],
                from: usize,
            ) -> Result<(), $crate::BatchError> {
                self.pipeline.stage(records.iter().map(|r| &**r), from)
            }

            fn commit(&mut self) -> Result<(), $crate::BatchError> {
                self.pipeline.commit()
            }
        }
    };
}
pub(crate) use appender_through_pipeline;

/// A format writing to a destination through one reused buffer: the body of
/// every text and JSON appender.
#[derive(Debug)]
pub(crate) struct Pipeline<F, D> {
    pub(crate) format: F,
    pub(crate) destination: D,
    lines: Lines,
    /// How many records the batch being staged holds, if one is
    /// ([`Pipeline::stage`]).
    staged: Option<usize>,
}

impl<F: Format, D: Destination> Pipeline<F, D> {
    pub(crate) fn new(format: F, destination: D) -> Pipeline<F, D> {
        Pipeline {
            format,
            destination,
            lines: Lines::with_capacity(BUFFER_LIMIT),
            staged: None,
        }
    }

    /// Writes `records`, in order, before returning; on error the records
    /// before [`BatchError::written`] were written and nothing of the others
    /// is kept. A batch being staged is discarded.
    pub(crate) fn append<'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r Record>,
    ) -> Result<(), BatchError> {
        self.staged = None;
        self.start_call()?;
        for (index, record) in records.into_iter().enumerate() {
            self.add(index, record)?;
        }
        self.destination.write_out(&mut self.lines)
    }

    /// Adds `records` to the batch being staged, after the `from` records
    /// staged in it before; `from` 0 begins a batch. On error the batch
    /// is over, as an [`append`](Pipeline::append) call's would be.
    pub(crate) fn stage<'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r Record>,
        from: usize,
    ) -> Result<(), BatchError> {
        match self.staged.take() {
            _ if from == 0 => self.start_call()?,
            Some(staged) if staged == from => {}
            // Not the batch being staged (it was discarded, or ended by a
            // failure): which of its records were written before is not
            // known here, so none is claimed (a repeat, not a loss).
            _ => {
                return Err(BatchError {
                    written: 0,
                    error: AppendError::new(Operation::Other, "no such batch staged"),
                })
            }
        }
        let mut index = from;
        for record in records {
            self.add(index, record)?;
            index += 1;
        }
        self.staged = Some(index);
        Ok(())
    }

    /// Writes what is left of the batch being staged, if one is.
    pub(crate) fn commit(&mut self) -> Result<(), BatchError> {
        if self.staged.take().is_none() {
            return Ok(());
        }
        self.destination.write_out(&mut self.lines)
    }

    /// Starts a call (or a staged batch): an empty buffer, and the
    /// destination's upkeep.
    fn start_call(&mut self) -> Result<(), BatchError> {
        self.lines.start_call(self.destination.framing());
        self.destination
            .start_call()
            .map_err(|error| BatchError { written: 0, error })
    }

    /// Renders, frames and buffers the call's record number `index`,
    /// writing the buffer out when it is full or a hook needs it. Inlined
    /// into both loops: a call a record costs more than it saves.
    #[inline(always)]
    fn add(&mut self, index: usize, record: &Record) -> Result<(), BatchError> {
        let Pipeline {
            format,
            destination,
            lines,
            ..
        } = self;
        let style = destination.before_record(record, lines)?;
        let start = lines.begin();
        if let Err(error) = render_guarded(format, record, style, lines.buf()) {
            lines.abandon(start);
            destination.write_out(lines)?;
            debug_assert_eq!(lines.written(), index);
            return Err(BatchError {
                written: index,
                error,
            });
        }
        lines.frame(start);
        destination.before_commit(lines)?;
        lines.commit();
        if lines.len() >= BUFFER_LIMIT {
            destination.write_out(lines)?;
        }
        Ok(())
    }

    /// Flushes the destination.
    pub(crate) fn flush(&mut self) -> Result<(), AppendError> {
        self.destination.flush()
    }
}

/// Renders one record, turning a panic into an
/// [`Operation::Panic`](crate::Operation::Panic) error, as the default
/// [`append_batch`](crate::Appender::append_batch) does, so a batch still
/// reports exactly which records were written.
fn render_guarded(
    format: &mut impl Format,
    record: &Record,
    style: Style,
    out: &mut Vec<u8>,
) -> Result<(), AppendError> {
    catch_unwind(AssertUnwindSafe(|| format.render(record, style, out)))
        .unwrap_or_else(|payload| Err(AppendError::panicked(payload.as_ref())))
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::lines::tests::Trickle;
    use super::*;
    use crate::appender::Operation;
    use crate::destination::Framing;
    use crate::record::{Level, Topic};

    /// Renders the message; fails on `fail`, panics on `panic`.
    #[derive(Debug)]
    struct Msg;

    impl Format for Msg {
        fn render(
            &mut self,
            record: &Record,
            _style: Style,
            out: &mut Vec<u8>,
        ) -> Result<(), AppendError> {
            out.extend_from_slice(record.message().as_bytes());
            match record.message() {
                "fail" => Err(AppendError::new(Operation::Format, "unrenderable")),
                "panic" => panic!("format bug"),
                _ => Ok(()),
            }
        }
    }

    /// A destination over a [`Trickle`], counting hook calls.
    #[derive(Debug)]
    struct Test {
        out: Output<Trickle>,
        framing: Framing,
        hooks: usize,
    }

    impl Destination for Test {
        fn framing(&self) -> Framing {
            self.framing
        }

        fn before_record(&mut self, _: &Record, _: &mut Lines) -> Result<Style, BatchError> {
            self.hooks += 1;
            Ok(Style::default())
        }

        fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
            lines
                .write_to(&mut self.out)
                .map(drop)
                .map_err(|f| BatchError {
                    written: f.written,
                    error: AppendError::io(Operation::Write, f.error),
                })
        }

        fn flush(&mut self) -> Result<(), AppendError> {
            Ok(())
        }
    }

    fn pipeline(framing: Framing, budget: usize) -> Pipeline<Msg, Test> {
        Pipeline::new(
            Msg,
            Test {
                out: Output::new(Trickle::new(budget)),
                framing,
                hooks: 0,
            },
        )
    }

    fn records(messages: &[&str]) -> Vec<Record> {
        messages
            .iter()
            .map(|m| {
                Record::builder(Topic::new(Level::Info, "t"))
                    .message((*m).to_owned())
                    .build()
            })
            .collect()
    }

    fn taken(p: &Pipeline<Msg, Test>) -> &str {
        std::str::from_utf8(&p.destination.out.writer.taken).unwrap()
    }

    #[test]
    fn a_batch_is_framed_and_written_whole() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        p.append(&records(&["a", "b", "c"])).unwrap();
        assert_eq!(taken(&p), "a\nb\nc\n");
        assert_eq!(p.destination.hooks, 3);
    }

    #[test]
    fn a_failing_render_mid_batch_writes_the_records_before_it() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        let err = p.append(&records(&["a", "b", "fail", "d"])).unwrap_err();
        assert_eq!(err.written, 2);
        assert_eq!(err.error.operation(), Operation::Format);
        assert_eq!(taken(&p), "a\nb\n");
        // Nothing of the failing record or those after it was kept.
        p.append(&records(&["d"])).unwrap();
        assert_eq!(taken(&p), "a\nb\nd\n");
    }

    #[test]
    fn a_panicking_render_is_a_failure_of_that_record() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        let err = p.append(&records(&["a", "panic", "c"])).unwrap_err();
        assert_eq!(err.written, 1);
        assert_eq!(err.error.operation(), Operation::Panic);
        assert!(
            err.error.to_string().contains("format bug"),
            "{}",
            err.error
        );
        assert_eq!(taken(&p), "a\n");
    }

    #[test]
    fn a_failing_write_mid_batch_names_the_records_it_took() {
        // "one\n" (4) + "two\n" (4) + "th": the third record is cut.
        let mut p = pipeline(Framing::Newline, 10);
        let err = p
            .append(&records(&["one", "two", "three", "four"]))
            .unwrap_err();
        assert_eq!(err.written, 2);
        assert_eq!(err.error.io_kind(), Some(io::ErrorKind::StorageFull));
        p.destination.out.writer.budget = usize::MAX;
        p.append(&records(&["three", "four"])).unwrap();
        // The cut line is terminated; nothing is written twice.
        assert_eq!(taken(&p), "one\ntwo\nth\nthree\nfour\n");
    }

    #[test]
    fn a_write_failure_after_a_full_buffer_counts_what_was_written_before() {
        let big = "x".repeat(BUFFER_LIMIT / 2);
        let messages = [big.as_str(), &big, &big, &big];
        // The first write-out (two records) succeeds; the second is cut.
        let mut p = pipeline(Framing::Newline, BUFFER_LIMIT + 10);
        let err = p.append(&records(&messages)).unwrap_err();
        assert_eq!(err.written, 2);
        assert_eq!(p.destination.out.writer.taken.len(), BUFFER_LIMIT + 10);
    }

    /// Runs staged and then committed come out as one call of all their
    /// records would: framed, in order, written once at the commit.
    #[test]
    fn staged_runs_are_written_as_one_batch_at_the_commit() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        p.stage(&records(&["a", "b"]), 0).unwrap();
        p.stage(&records(&["c"]), 2).unwrap();
        assert_eq!(taken(&p), "", "nothing written before the commit");
        p.commit().unwrap();
        assert_eq!(taken(&p), "a\nb\nc\n");
        assert_eq!(p.destination.hooks, 3);
        p.commit().unwrap();
        assert_eq!(
            taken(&p),
            "a\nb\nc\n",
            "a second commit has nothing to write"
        );
    }

    /// A failure in a later run counts the batch's records from its first
    /// run, writes those before it, keeps nothing after it and ends the
    /// batch; a run for a batch that is not being staged is refused, with
    /// none of its batch claimed written.
    #[test]
    fn a_failure_while_staging_ends_the_batch() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        p.stage(&records(&["a", "b"]), 0).unwrap();
        let err = p.stage(&records(&["c", "fail", "e"]), 2).unwrap_err();
        assert_eq!((err.written, err.error.operation()), (3, Operation::Format));
        assert_eq!(taken(&p), "a\nb\nc\n");
        p.commit().unwrap();
        assert_eq!(taken(&p), "a\nb\nc\n");
        let err = p.stage(&records(&["e"]), 4).unwrap_err();
        assert_eq!((err.written, err.error.operation()), (0, Operation::Other));
        // A new batch, and a call, as usual.
        p.stage(&records(&["e"]), 0).unwrap();
        p.commit().unwrap();
        assert_eq!(taken(&p), "a\nb\nc\ne\n");
    }

    /// A buffer that fills while staging is written then; a write that
    /// fails there names the batch's records it took, an earlier run's
    /// included, and ends the batch.
    #[test]
    fn a_write_failure_while_staging_counts_the_earlier_runs() {
        let big = "x".repeat(BUFFER_LIMIT / 2);
        let mut p = pipeline(Framing::Newline, BUFFER_LIMIT / 2 + 5);
        p.stage(&records(&[&big]), 0).unwrap();
        let err = p.stage(&records(&[&big, "c"]), 1).unwrap_err();
        assert_eq!(err.written, 1);
        assert_eq!(err.error.io_kind(), Some(io::ErrorKind::StorageFull));
        p.destination.out.writer.budget = usize::MAX;
        p.commit().unwrap();
        assert_eq!(taken(&p).len(), BUFFER_LIMIT / 2 + 5, "the batch was over");
    }

    /// A call while a batch is staged ends the batch, what it had not
    /// written unwritten; so does a new batch; a run after either is
    /// refused.
    #[test]
    fn a_call_or_a_new_batch_discards_a_staged_batch() {
        let mut p = pipeline(Framing::Newline, usize::MAX);
        p.stage(&records(&["a", "b"]), 0).unwrap();
        p.append(&records(&["c"])).unwrap();
        let err = p.stage(&records(&["d"]), 2).unwrap_err();
        assert_eq!(err.written, 0, "none of a discarded batch claimed written");
        p.commit().unwrap();
        p.stage(&records(&["e"]), 0).unwrap();
        p.stage(&records(&["f"]), 0).unwrap();
        p.commit().unwrap();
        assert_eq!(taken(&p), "c\nf\n");
    }

    #[test]
    fn octet_counted_frames() {
        let mut p = pipeline(Framing::OctetCount, usize::MAX);
        p.append(&records(&["<14>1 a", "", "é\nb"])).unwrap();
        assert_eq!(taken(&p), "7 <14>1 a0 4 é\nb");
    }

    #[test]
    fn a_cut_octet_counted_frame_is_not_terminated_in_band() {
        let mut p = pipeline(Framing::OctetCount, 5);
        let err = p.append(&records(&["abc", "def"])).unwrap_err();
        assert_eq!(err.written, 1);
        p.destination.out.writer.budget = usize::MAX;
        p.append(&records(&["def"])).unwrap();
        // The reconnect a socket destination does is what repairs this.
        assert_eq!(taken(&p), "3 abc3 def");
    }
}
