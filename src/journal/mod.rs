//! The journal: the broker's memory of recent records, under their `seq`
//! as offsets. The other half of the design's log-and-cursors: a new
//! subscription can start from an offset in it (`replay.rs`), a flight
//! recorder draws the context of a trigger from it (`recorder.rs`), and
//! programs read it themselves (`read.rs`).
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | [`Journal`] (the settings), the ring and its retention |
//! | `read.rs` | [`JournalReader`]: stats and an iterator from an offset |
//! | `replay.rs` | [`Replay`]: where a subscription starts, and the hand-over |
//! | `recorder.rs` | [`FlightRecorder`]: context before a trigger |
//!
//! # The ring and its order
//!
//! Retained records sit in one `VecDeque` behind a mutex, oldest first. A
//! publisher whose record the journal keeps takes the lock *after* the
//! record is built (user code, such as a `Display` impl, never runs under
//! it), takes the record's `seq` under it, appends and releases what the
//! limits no longer allow. Taking `seq` under the lock is what makes the
//! ring's order the `seq` order and makes "every journal record below
//! offset `h` is in the ring" true the moment a holder of the lock reads
//! the counter as `h`: replay's hand-over rests on it (`replay.rs`).
//!
//! # Memory
//!
//! Retention applies three limits together, at every append: at most
//! [`Journal::records`] records, at most [`Journal::bytes`] bytes (what
//! each record holds in memory: its allocation and every buffer it owns,
//! by capacity, with the allocator's headers), and, if set, nothing older
//! than [`Journal::max_age`] (an idle journal releases old records at its
//! next append or read). The journal's memory is therefore bounded by the
//! byte limit plus [`JOURNAL_SLACK_PER_RECORD`] per retained record,
//! whatever the age limit. (A review found the first version counting
//! lengths while recycled records kept 4 KiB buffers: 181 MiB held for
//! 8 MiB counted.)

mod read;
mod recorder;
mod replay;

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use log::LevelFilter;
use logbus_appenders::__private_api as produce;
use logbus_appenders::{Level, Record};

pub use self::read::{JournalIter, JournalQuery, JournalReader, JournalStats};
pub(crate) use self::recorder::{mark_context, Recorder};
pub use self::recorder::{FlightRecorder, CONTEXT_KEY, CONTEXT_SCAN};
pub(crate) use self::replay::{gap_notice, ReplaySet};
pub use self::replay::{Replay, ReplayGap, ReplayReport};

use crate::error::JournalError;
use crate::sync::{lock, Arc, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::topic::TopicPattern;
use crate::topic::{parse_patterns, PatternSource};

/// The default of [`Journal::records`].
pub const DEFAULT_JOURNAL_RECORDS: usize = 10_000;

/// The default of [`Journal::bytes`]: 4 MiB.
pub const DEFAULT_JOURNAL_BYTES: usize = 4 << 20;

/// The memory a retained record may take beyond what the byte limit
/// counts of it: the journal's slot, and the allocator's rounding beyond
/// the 16-byte header and granule the count assumes. The journal's
/// resident memory stays within [`Journal::bytes`] plus this much per
/// retained record (checked in `tests/journal_memory.rs`).
pub const JOURNAL_SLACK_PER_RECORD: usize = 32;

/// Settings of the broker's journal: what it keeps and for how long. Give
/// it to [`Builder::journal`](crate::Builder::journal) or
/// [`BrokerHandle::set_journal`](crate::BrokerHandle::set_journal).
///
/// | setting | default |
/// |---|---|
/// | records | [`DEFAULT_JOURNAL_RECORDS`] (10,000) |
/// | bytes | [`DEFAULT_JOURNAL_BYTES`] (4 MiB) |
/// | age | unlimited |
/// | level | `Info` (what it keeps of its own accord) |
/// | patterns | `#` |
/// | retention | [`Retention::Limits`] |
///
/// Flight recorders ([`FlightRecorder`]) add the records they need to
/// what the journal keeps, even below its level.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use logbus::{Journal, JournalQuery, LevelFilter, Memory, Subscription};
///
/// let broker = logbus::builder()
///     .journal(Journal::new().records(500).max_age(Duration::from_secs(600)))
///     .appender(Subscription::builder("errors", Memory::new().0).pattern("error.#"))
///     .build()?;
/// log::set_max_level(LevelFilter::Trace);
/// log::info!(logger: &broker, target: "app", "kept in the journal only");
/// log::error!(logger: &broker, target: "app", "kept, and written");
///
/// let journal = broker.journal().expect("configured above");
/// assert_eq!(journal.stats().records, 2);
/// let recent: Vec<String> = journal
///     .iter(JournalQuery::new().level(LevelFilter::Error))?
///     .map(|r| r.message().to_owned())
///     .collect();
/// assert_eq!(recent, ["kept, and written"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Journal {
    pub(crate) records: usize,
    pub(crate) bytes: usize,
    pub(crate) max_age: Option<Duration>,
    pub(crate) level: LevelFilter,
    pub(crate) patterns: Vec<PatternSource>,
    pub(crate) retention: Retention,
}

/// How the journal releases records, besides its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Retention {
    /// Keep records until a limit (count, bytes, age) releases them: for
    /// "the last N records", replay of history and flight recorders.
    #[default]
    Limits,
    /// Also release a record as soon as every subscription's worker has
    /// passed it (its cursor, the `seq` after the last record it wrote, or
    /// the broker's next `seq` when it is idle). The journal then holds
    /// about what the subscriptions have not written yet, at the least
    /// memory: for a journal that exists so that a subscription added at
    /// runtime ([`Replay::Oldest`]) can pick up what is in flight. The
    /// cursor is an approximation: a record whose `seq` was taken but
    /// which is still on its way into the queues when every worker is idle
    /// can be released before it is written, and a replay then misses it
    /// without a gap report; use [`Retention::Limits`] where that matters.
    /// Records only a flight recorder wants are released as soon as they
    /// are published: use [`Retention::Limits`] with a flight recorder.
    UntilWritten,
}

impl Default for Journal {
    fn default() -> Journal {
        Journal::new()
    }
}

impl Journal {
    /// The default settings (see the table above).
    pub fn new() -> Journal {
        Journal {
            records: DEFAULT_JOURNAL_RECORDS,
            bytes: DEFAULT_JOURNAL_BYTES,
            max_age: None,
            level: LevelFilter::Info,
            patterns: Vec::new(),
            retention: Retention::Limits,
        }
    }

    /// Keeps at most this many records (at least 1).
    pub fn records(mut self, records: usize) -> Journal {
        self.records = records;
        self
    }

    /// Keeps at most about this many bytes of records (at least 1).
    pub fn bytes(mut self, bytes: usize) -> Journal {
        self.bytes = bytes;
        self
    }

    /// Releases records older than `age` (by their timestamp).
    pub fn max_age(mut self, age: Duration) -> Journal {
        self.max_age = Some(age);
        self
    }

    /// Keeps records at this level or more severe (`Info` by default);
    /// `log::max_level` admits them even when no appender wants them.
    pub fn level(mut self, level: LevelFilter) -> Journal {
        self.level = level;
        self
    }

    /// Keeps only records whose topic matches one of these patterns
    /// (added up; `#` when none is given). Checked when the settings are
    /// applied.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Journal {
        self.patterns.push(PatternSource::Text(pattern.into()));
        self
    }

    /// Sets how records are released besides the limits.
    pub fn retention(mut self, retention: Retention) -> Journal {
        self.retention = retention;
        self
    }

    /// Checks the settings and parses the patterns.
    pub(crate) fn check(&self) -> Result<Vec<TopicPattern>, JournalError> {
        if self.records == 0 {
            return Err(JournalError::ZeroRecords);
        }
        if self.bytes == 0 {
            return Err(JournalError::ZeroBytes);
        }
        Ok(parse_patterns(&self.patterns)?)
    }
}

/// The limits the ring applies, changeable at runtime.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    records: usize,
    bytes: usize,
    max_age: Option<Duration>,
}

impl Limits {
    fn of(journal: &Journal) -> Limits {
        Limits {
            records: journal.records,
            bytes: journal.bytes,
            max_age: journal.max_age,
        }
    }
}

/// The last [`JournalCore::id`] given out.
static JOURNALS: AtomicU64 = AtomicU64::new(0);

/// The journal's records, shared by every snapshot that routes into it.
pub(crate) struct JournalCore {
    /// Which journal this is, unique in the process (from 1): a record
    /// routed again after the journal that kept it was replaced is not in
    /// a replay from the new one (`route::Entry::replayed`).
    pub(crate) id: u64,
    ring: Mutex<Ring>,
    /// The fork generation it was made in: in a forked child its lock may
    /// be held for ever, so readers there take it not (`fork.rs`).
    fork_generation: u64,
}

/// The retained records, oldest first, in `seq` order.
pub(crate) struct Ring {
    limits: Limits,
    records: VecDeque<Arc<Record>>,
    bytes: usize,
    /// Records released so far.
    released: u64,
    /// The `seq` of the newest record released, if any: an offset at or
    /// below it is no longer retained.
    released_through: Option<u64>,
}

impl JournalCore {
    pub(crate) fn new(journal: &Journal) -> JournalCore {
        JournalCore {
            // Relaxed: only its uniqueness is used.
            id: JOURNALS.fetch_add(1, Ordering::Relaxed) + 1,
            ring: Mutex::new(Ring {
                limits: Limits::of(journal),
                records: VecDeque::new(),
                bytes: 0,
                released: 0,
                released_through: None,
            }),
            fork_generation: crate::fork::generation(),
        }
    }

    /// Whether this process is a child forked after the journal was made.
    pub(crate) fn in_forked_child(&self) -> bool {
        crate::fork::forked_since(self.fork_generation)
    }

    /// Locks the ring. Held for an append, a few records' copy, or a scan
    /// of the ring (replay, a trigger's context); never while user code
    /// runs.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Ring> {
        lock(&self.ring)
    }
}

impl Ring {
    /// Appends `record` (its `seq` taken under this lock, so the newest)
    /// and releases what the limits, and `floor` (records below it, under
    /// [`Retention::UntilWritten`]), no longer allow; released records go
    /// to `release`.
    pub(crate) fn append(
        &mut self,
        record: Arc<Record>,
        floor: Option<u64>,
        release: impl FnMut(Arc<Record>),
    ) {
        // The newest record's time is the journal's clock, read only for an
        // age limit: reading it converts a tick stamp, here on the caller's
        // thread and under this lock.
        let now = self.limits.max_age.map(|_| record.time());
        self.bytes += produce::held_bytes(&record);
        self.records.push_back(record);
        self.trim(now, floor, release);
    }

    /// Applies new limits; returns what they no longer allow, for the
    /// caller to free once it let go of its locks (a million records take
    /// tens of milliseconds to free, which publishers waiting for the lock
    /// would wait too: a review found it).
    #[must_use = "the released records are to be dropped with no lock held"]
    pub(crate) fn set_limits(&mut self, journal: &Journal) -> Vec<Arc<Record>> {
        self.limits = Limits::of(journal);
        let mut released = Vec::new();
        self.trim(Some(SystemTime::now()), None, |r| released.push(r));
        released
    }

    /// Releases from the front while a limit is exceeded (by age only when
    /// `now` is given).
    fn trim(
        &mut self,
        now: Option<SystemTime>,
        floor: Option<u64>,
        mut release: impl FnMut(Arc<Record>),
    ) {
        let limits = self.limits;
        while let Some(oldest) = self.records.front() {
            let too_old = limits.max_age.zip(now).is_some_and(|(age, now)| {
                now.duration_since(oldest.time())
                    .is_ok_and(|elapsed| elapsed > age)
            });
            let over = self.records.len() > limits.records || self.bytes > limits.bytes;
            let passed = floor.is_some_and(|floor| oldest.seq() < floor);
            if !(over || too_old || passed) {
                break;
            }
            if let Some(oldest) = self.records.pop_front() {
                self.bytes -= produce::held_bytes(&oldest);
                self.released += 1;
                self.released_through = Some(oldest.seq());
                release(oldest);
            }
        }
    }

    /// Lets every record go (the journal is removed): returns them, for
    /// the caller to drop once its locks are released (freeing a million
    /// records takes tens of milliseconds).
    pub(crate) fn release_all(&mut self) -> VecDeque<Arc<Record>> {
        self.released += self.records.len() as u64;
        if let Some(newest) = self.records.back() {
            self.released_through = Some(newest.seq());
        }
        self.bytes = 0;
        std::mem::take(&mut self.records)
    }

    /// Releases what the age limit no longer allows (before a read), and
    /// returns it, to be dropped with no lock held (see `set_limits`).
    #[must_use = "the released records are to be dropped with no lock held"]
    pub(crate) fn expire(&mut self) -> Vec<Arc<Record>> {
        let mut released = Vec::new();
        if self.limits.max_age.is_some() {
            self.trim(Some(SystemTime::now()), None, |r| released.push(r));
        }
        released
    }

    /// The index of the first retained record whose `seq` is `from` or
    /// later.
    fn position(&self, from: u64) -> usize {
        self.records.partition_point(|r| r.seq() < from)
    }

    /// The oldest retained offset.
    fn oldest(&self) -> Option<u64> {
        self.records.front().map(|r| r.seq())
    }
}

/// What the journal keeps of its own accord, in a snapshot.
#[derive(Clone)]
pub(crate) struct JournalRoute {
    pub(crate) core: Arc<JournalCore>,
    pub(crate) level: LevelFilter,
    patterns: Vec<TopicPattern>,
    pub(crate) retention: Retention,
}

impl JournalRoute {
    pub(crate) fn new(
        core: Arc<JournalCore>,
        journal: &Journal,
        patterns: Vec<TopicPattern>,
    ) -> JournalRoute {
        JournalRoute {
            core,
            level: journal.level,
            patterns,
            retention: journal.retention,
        }
    }

    /// Whether the journal keeps a record of `level` on `topic` (routing's
    /// slow path).
    pub(crate) fn keeps(&self, level: Level, topic: &str) -> bool {
        level <= self.level && self.patterns.iter().any(|p| p.matches(topic))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use logbus_appenders::__private_api::{new_record, Stamp};
    use logbus_appenders::{Level, Record, Topic};

    use super::{Journal, JournalCore};
    use crate::sync::{Arc, AtomicUsize, Ordering};

    /// A record published at `at` seconds after `start`, as a publisher
    /// stamps it (the journal's clock is the records' own time).
    fn at(seq: u64, start: SystemTime, secs: u64) -> Arc<Record> {
        let record = Record::builder(Topic::new(Level::Info, "app"))
            .seq(seq)
            .time(start + Duration::from_secs(secs))
            .message("m")
            .build();
        Arc::new(record)
    }

    /// Tighter limits hand back what they release, oldest first, for the
    /// caller to free once it let go of its locks; so does a read's expiry.
    #[test]
    fn new_limits_and_expiry_hand_back_what_they_release() {
        let core = JournalCore::new(&Journal::new());
        let now = SystemTime::now();
        let mut ring = core.lock();
        for seq in 0..5 {
            ring.append(at(seq, now, 0), None, drop);
        }
        let released = ring.set_limits(&Journal::new().records(2));
        let seqs: Vec<u64> = released.iter().map(|r| r.seq()).collect();
        assert_eq!((seqs, ring.records.len()), (vec![0, 1, 2], 2));
        drop(ring);
        // Records two minutes old, kept at their append (the journal's clock
        // is the records' own time), expire at a read a minute's age allows.
        let core = JournalCore::new(&Journal::new().max_age(Duration::from_secs(60)));
        let mut ring = core.lock();
        for seq in 0..3 {
            ring.append(at(seq, now - Duration::from_secs(120), 0), None, drop);
        }
        let expired: Vec<u64> = ring.expire().iter().map(|r| r.seq()).collect();
        assert_eq!((expired, ring.records.len()), (vec![0, 1, 2], 0));
    }

    #[test]
    fn retention_by_age_releases_what_is_older_than_the_newest_by_more() {
        let core = JournalCore::new(&Journal::new().max_age(Duration::from_secs(60)));
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut released = Vec::new();
        let mut ring = core.lock();
        for (seq, secs) in [(0, 0), (1, 10), (2, 30), (3, 60)] {
            ring.append(at(seq, start, secs), None, |r| released.push(r.seq()));
        }
        // 60 s old is not older than 60 s.
        assert!(released.is_empty());
        ring.append(at(4, start, 75), None, |r| released.push(r.seq()));
        assert_eq!(released, [0, 1]);
        assert_eq!(ring.oldest(), Some(2));
        // A clock that stepped back releases nothing by age.
        ring.append(at(5, start, 5), None, |r| released.push(r.seq()));
        assert_eq!(released, [0, 1]);
        assert_eq!((ring.records.len(), ring.released), (4, 2));
    }

    static CONVERSIONS: AtomicUsize = AtomicUsize::new(0);

    /// A tick stamp's converter that counts its calls.
    fn counted(ticks: u64) -> i64 {
        CONVERSIONS.fetch_add(1, Ordering::Relaxed);
        ticks as i64 * 1_000_000_000
    }

    #[test]
    fn only_an_age_limit_reads_the_time_of_an_appended_record() {
        // Appending runs on the caller's thread under the journal's lock:
        // without an age limit it must not convert a tick stamp there.
        let ticked = |seq: u64| {
            let topic = Topic::new(Level::Info, "app");
            Arc::new(new_record(
                topic,
                seq,
                Stamp::Ticks(1_000_000 + seq, counted),
            ))
        };
        let core = JournalCore::new(&Journal::new().records(2));
        for seq in 0..4 {
            core.lock().append(ticked(seq), None, drop);
        }
        assert_eq!(CONVERSIONS.load(Ordering::Relaxed), 0, "no age limit");
        let core = JournalCore::new(&Journal::new().max_age(Duration::from_secs(60)));
        core.lock().append(ticked(4), None, drop);
        assert!(CONVERSIONS.load(Ordering::Relaxed) > 0, "an age limit");
    }

    #[test]
    fn the_limits_apply_together() {
        let core = JournalCore::new(&Journal::new().records(3).max_age(Duration::from_secs(5)));
        let start = SystemTime::UNIX_EPOCH;
        let mut ring = core.lock();
        for seq in 0..5 {
            ring.append(at(seq, start, 0), None, drop);
        }
        assert_eq!(ring.oldest(), Some(2), "by count");
        ring.append(at(5, start, 6), None, drop);
        assert_eq!(ring.oldest(), Some(5), "by age");
        ring.append(at(6, start, 6), Some(6), drop);
        assert_eq!(ring.oldest(), Some(6), "below the floor");
        assert_eq!(ring.released_through, Some(5));
    }
}
