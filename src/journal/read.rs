//! Reading the journal from a program: its stats, and an iterator over the
//! retained records from an offset, filtered by topic and level.

use std::collections::VecDeque;
use std::fmt;

use log::LevelFilter;
use logbus_appenders::Record;

use super::JournalCore;
use crate::sync::Arc;
use crate::topic::{parse_patterns, PatternSource};
use crate::topic::{TopicParseError, TopicPattern};

/// Records an iterator copies out of the journal per lock, at most.
const CHUNK: usize = 256;

/// Records an iterator looks at per lock, at most: the lock is held for
/// tens of microseconds at a time, whatever the journal's size and however
/// few records the query selects (a review measured 96 ms for a selective
/// query over a million records when only the copies were bounded).
const SCAN: usize = 1024;

/// A snapshot of the journal's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct JournalStats {
    /// Records retained.
    pub records: usize,
    /// What they hold in memory, in bytes (see [`Journal`](crate::Journal)'s
    /// memory bound).
    pub bytes: usize,
    /// The offset (`seq`) of the oldest retained record.
    pub oldest: Option<u64>,
    /// The offset of the newest retained record.
    pub newest: Option<u64>,
    /// Records released so far by the limits or the retention mode.
    pub released: u64,
}

/// A handle on the broker's journal, from
/// [`BrokerHandle::journal`](crate::BrokerHandle::journal): cheap to clone,
/// it keeps the records it reads alive, not the broker.
#[derive(Clone)]
pub struct JournalReader {
    pub(crate) core: Arc<JournalCore>,
}

impl fmt::Debug for JournalReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JournalReader")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Which retained records [`JournalReader::iter`] yields.
///
/// | setting | default |
/// |---|---|
/// | from | the oldest retained record |
/// | patterns | `#` |
/// | level | `Trace` |
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct JournalQuery {
    from: u64,
    patterns: Vec<PatternSource>,
    level: Option<LevelFilter>,
}

impl JournalQuery {
    /// Every retained record.
    pub fn new() -> JournalQuery {
        JournalQuery::default()
    }

    /// Starts at offset `from` (a record's `seq`): the first record yielded
    /// is the oldest retained one at or after it.
    pub fn from(mut self, from: u64) -> JournalQuery {
        self.from = from;
        self
    }

    /// Keeps records whose topic matches a pattern (added up; checked by
    /// [`JournalReader::iter`]).
    pub fn pattern(mut self, pattern: impl Into<String>) -> JournalQuery {
        self.patterns.push(PatternSource::Text(pattern.into()));
        self
    }

    /// Keeps records at this level or more severe.
    pub fn level(mut self, level: LevelFilter) -> JournalQuery {
        self.level = Some(level);
        self
    }
}

impl JournalReader {
    /// The journal's size and offsets now.
    #[must_use]
    pub fn stats(&self) -> JournalStats {
        if self.core.in_forked_child() {
            // The lock may be held for ever here (`fork.rs`).
            return JournalStats::default();
        }
        let mut ring = self.core.lock();
        let expired = ring.expire();
        let stats = JournalStats {
            records: ring.records.len(),
            bytes: ring.bytes,
            oldest: ring.oldest(),
            newest: ring.records.back().map(|r| r.seq()),
            released: ring.released,
        };
        // The expired records are freed after the lock.
        drop(ring);
        drop(expired);
        stats
    }

    /// The retained records that `query` selects, oldest first. The
    /// iterator copies them out a few hundred at a time; records released
    /// meanwhile are skipped, records appended before it reaches the end
    /// are included. In a child forked after the journal was made it
    /// yields nothing (the journal's lock may be held for ever there).
    ///
    /// # Errors
    ///
    /// [`TopicParseError`] naming a malformed pattern of the query.
    pub fn iter(&self, query: JournalQuery) -> Result<JournalIter, TopicParseError> {
        Ok(JournalIter {
            core: Arc::clone(&self.core),
            next: query.from,
            patterns: parse_patterns(&query.patterns)?,
            level: query.level.unwrap_or(LevelFilter::Trace),
            chunk: VecDeque::new(),
            done: self.core.in_forked_child(),
        })
    }
}

/// The records a [`JournalQuery`] selects; see [`JournalReader::iter`].
pub struct JournalIter {
    core: Arc<JournalCore>,
    /// The offset to read from next.
    next: u64,
    patterns: Vec<TopicPattern>,
    level: LevelFilter,
    chunk: VecDeque<Arc<Record>>,
    done: bool,
}

impl fmt::Debug for JournalIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JournalIter")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl JournalIter {
    fn wanted(&self, record: &Record) -> bool {
        record.level() <= self.level
            && self
                .patterns
                .iter()
                .any(|p| p.matches(record.topic().as_str()))
    }

    /// Copies the next chunk of wanted records out of the ring.
    fn refill(&mut self) {
        if self.core.in_forked_child() {
            // An iterator made before the fork: the lock may be held for
            // ever here (a review found it hung).
            self.done = true;
            return;
        }
        let mut ring = self.core.lock();
        let expired = ring.expire();
        let start = ring.position(self.next);
        let mut scanned = 0;
        for record in ring.records.range(start..).take(SCAN) {
            scanned += 1;
            self.next = record.seq() + 1;
            if self.wanted(record) {
                self.chunk.push_back(Arc::clone(record));
                if self.chunk.len() == CHUNK {
                    break;
                }
            }
        }
        if start + scanned == ring.records.len() {
            self.done = true;
        }
        // The expired records are freed after the lock.
        drop(ring);
        drop(expired);
    }
}

impl Iterator for JournalIter {
    type Item = Arc<Record>;

    fn next(&mut self) -> Option<Arc<Record>> {
        while self.chunk.is_empty() && !self.done {
            self.refill();
        }
        self.chunk.pop_front()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::JournalReader;
    use crate::journal::{Journal, JournalCore};
    use crate::sync::Arc;

    /// A child forked while the journal's lock is held (here by the forking
    /// thread itself, so the child's lock would never be released) reads
    /// nothing and takes no lock (a review found it hung), also through an
    /// iterator made before the fork.
    #[test]
    #[cfg_attr(miri, ignore)] // fork
    fn a_reader_in_a_forked_child_takes_no_lock() {
        let core = Arc::new(JournalCore::new(&Journal::new()));
        let reader = JournalReader {
            core: Arc::clone(&core),
        };
        let mut iter = reader.iter(super::JournalQuery::new()).unwrap();
        let held = core.lock();
        // SAFETY: the child only reads the reader (no allocation needed on
        // the early-return paths) and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: plain libc calls in the child: a hang ends by SIGALRM.
            unsafe { libc::alarm(10) };
            // Nothing that allocates: another test's thread may have held
            // the allocator's lock at the fork.
            let empty = reader.stats() == super::JournalStats::default() && iter.next().is_none();
            // SAFETY: leaves without running the harness's exit path.
            unsafe { libc::_exit(if empty { 0 } else { 1 }) };
        }
        drop(held);
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child hung on the journal's lock or read something: {status}"
        );
    }
}
