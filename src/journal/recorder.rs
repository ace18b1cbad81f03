//! The flight recorder: records too verbose for a subscription are kept in
//! the journal without reaching it; when a trigger record reaches it, the
//! few retained records that preceded the trigger are written first, as
//! context.
//!
//! Context is collected on the trigger's publishing thread, under the
//! journal's lock (a backwards scan that stops after `context` records, at
//! the previous trigger, or after [`CONTEXT_SCAN`] records), copied after
//! the lock is released, and pushed into the subscription's queue through
//! that thread's lane just before the trigger, so the appender receives
//! them in that order. The recorder's *watermark*, the `seq` of the latest
//! trigger, moves under the same lock: a record is context for at most one
//! trigger, however close triggers come.
//!
//! Context records are the one exception to "per thread, program order":
//! a debug record that preceded a warning of its own thread arrives after
//! that warning, just before the trigger (the crate docs' "Order"). Each
//! carries [`CONTEXT_KEY`], so a reader can tell.

use log::LevelFilter;
use logbus_appenders::{Level, Record, Value};

use super::Ring;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::topic::{parse_patterns, PatternSource};
use crate::topic::{TopicParseError, TopicPattern};

/// Most retained records a trigger's context scan looks at (under the
/// journal's lock, on the trigger's thread): with a narrow context pattern
/// or `same_thread`, fewer than `context` records may be found within it.
pub const CONTEXT_SCAN: usize = 4_096;

/// The key-value a context record carries: the `seq` of the trigger it
/// precedes. Live records never have it, so a reader can tell them apart
/// (the text layout prints it with the other key-values, the JSON appender
/// under `kv`).
pub const CONTEXT_KEY: &str = "logbus.context";

/// A flight recorder for one subscription: see
/// [`SubscriptionBuilder::flight_recorder`](crate::SubscriptionBuilder::flight_recorder).
///
/// | setting | default |
/// |---|---|
/// | context | 100 records |
/// | keep | `Debug`: debug records, too verbose for an `Info` subscription, are context |
/// | trigger | `Error` and more severe |
/// | trigger patterns | any topic |
/// | context patterns | any topic |
/// | same thread | no: context from every thread |
///
/// Context records are the retained records less severe than the
/// subscription's level, down to `keep`; the journal keeps them for the
/// recorder even below its own level (its limits still apply, shared with
/// every other record it keeps). Each carries the key-value
/// [`CONTEXT_KEY`] with the trigger's `seq`.
///
/// # Examples
///
/// ```
/// use logbus::{FlightRecorder, Journal, LevelFilter, Memory, Subscription};
///
/// let (appender, captured) = Memory::new();
/// let broker = logbus::builder()
///     .journal(Journal::new())
///     .appender(
///         Subscription::builder("errors", appender)
///             .level(LevelFilter::Warn)
///             .flight_recorder(FlightRecorder::new().context(2)),
///     )
///     .build()?;
/// log::set_max_level(LevelFilter::Trace);
/// for step in ["open", "read", "parse"] {
///     log::debug!(logger: &broker, target: "app", "{step}");
/// }
/// log::error!(logger: &broker, target: "app", "parse failed");
/// broker.flush()?;
/// assert_eq!(captured.messages(), ["read", "parse", "parse failed"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct FlightRecorder {
    context: usize,
    keep: LevelFilter,
    trigger: Level,
    trigger_patterns: Vec<PatternSource>,
    context_patterns: Vec<PatternSource>,
    same_thread: bool,
}

impl Default for FlightRecorder {
    fn default() -> FlightRecorder {
        FlightRecorder::new()
    }
}

impl FlightRecorder {
    /// The default settings (see the table above).
    pub fn new() -> FlightRecorder {
        FlightRecorder {
            context: 100,
            keep: LevelFilter::Debug,
            trigger: Level::Error,
            trigger_patterns: Vec::new(),
            context_patterns: Vec::new(),
            same_thread: false,
        }
    }

    /// Writes up to `records` preceding records before each trigger.
    pub fn context(mut self, records: usize) -> FlightRecorder {
        self.context = records;
        self
    }

    /// The most verbose level kept as context (`Debug` by default; `Trace`
    /// keeps trace records too, at the cost of building them all).
    pub fn keep(mut self, level: LevelFilter) -> FlightRecorder {
        self.keep = level;
        self
    }

    /// Records at this level or more severe trigger (`Error` by default).
    pub fn trigger(mut self, level: Level) -> FlightRecorder {
        self.trigger = level;
        self
    }

    /// Only records whose topic matches one of these patterns trigger
    /// (added up; any topic when none is given).
    pub fn trigger_pattern(mut self, pattern: impl Into<String>) -> FlightRecorder {
        self.trigger_patterns
            .push(PatternSource::Text(pattern.into()));
        self
    }

    /// Only records whose topic matches one of these patterns are context
    /// (added up; any topic when none is given).
    pub fn context_pattern(mut self, pattern: impl Into<String>) -> FlightRecorder {
        self.context_patterns
            .push(PatternSource::Text(pattern.into()));
        self
    }

    /// Only records from the trigger's own thread are context.
    pub fn same_thread(mut self, same_thread: bool) -> FlightRecorder {
        self.same_thread = same_thread;
        self
    }

    /// Parses the patterns: the recorder a subscription runs.
    pub(crate) fn build(&self) -> Result<Recorder, TopicParseError> {
        let trigger_patterns = if self.trigger_patterns.is_empty() {
            None
        } else {
            Some(parse_patterns(&self.trigger_patterns)?)
        };
        Ok(Recorder {
            context: self.context,
            keep: self.keep,
            trigger: self.trigger,
            trigger_patterns,
            context_patterns: parse_patterns(&self.context_patterns)?,
            same_thread: self.same_thread,
            watermark: AtomicU64::new(0),
        })
    }
}

/// A subscription's flight recorder, as routing and publishing use it.
pub(crate) struct Recorder {
    context: usize,
    pub(crate) keep: LevelFilter,
    trigger: Level,
    trigger_patterns: Option<Vec<TopicPattern>>,
    context_patterns: Vec<TopicPattern>,
    same_thread: bool,
    /// One past the `seq` of the latest trigger: older records are never
    /// context again. Changed only under the journal's lock; Relaxed, the
    /// lock orders it.
    watermark: AtomicU64,
}

impl Recorder {
    /// Whether the journal keeps a record of `level` on `topic` for this
    /// recorder, whose subscription has level `own` (routing's slow path).
    pub(crate) fn keeps(&self, level: Level, topic: &str, own: LevelFilter) -> bool {
        level <= self.keep && level > own && self.context_patterns.iter().any(|p| p.matches(topic))
    }

    /// Whether `record`, which reached the subscription, is a trigger.
    #[inline]
    pub(crate) fn triggers(&self, record: &Record) -> bool {
        record.level() <= self.trigger
            && self.trigger_patterns.as_ref().map_or(true, |patterns| {
                patterns.iter().any(|p| p.matches(record.topic().as_str()))
            })
    }
}

impl Ring {
    /// The context of `trigger` for `recorder` (subscription level `own`):
    /// up to `context` retained records before it and after the previous
    /// trigger, oldest first, among the [`CONTEXT_SCAN`] before it. The
    /// caller marks them ([`mark_context`]) once the lock is released.
    pub(crate) fn context(
        &self,
        recorder: &Recorder,
        trigger: &Record,
        own: LevelFilter,
    ) -> Vec<Arc<Record>> {
        // Relaxed: under the journal's lock (see `watermark`).
        let floor = recorder.watermark.load(Ordering::Relaxed);
        let thread = trigger.thread().id;
        let before = self.position(trigger.seq());
        let mut picked: Vec<Arc<Record>> = self
            .records
            .range(..before)
            .rev()
            .take(CONTEXT_SCAN)
            .take_while(|r| r.seq() >= floor)
            .filter(|r| {
                recorder.keeps(r.level(), r.topic().as_str(), own)
                    && (!recorder.same_thread || r.thread().id == thread)
            })
            .take(recorder.context)
            .cloned()
            .collect();
        picked.reverse();
        recorder
            .watermark
            .fetch_max(trigger.seq() + 1, Ordering::Relaxed);
        picked
    }
}

/// Copies of `context` marked with [`CONTEXT_KEY`]: the `seq` of the
/// trigger they precede.
pub(crate) fn mark_context(context: Vec<Arc<Record>>, trigger: &Record) -> Vec<Arc<Record>> {
    let mark = vec![(CONTEXT_KEY.into(), Value::U64(trigger.seq()))];
    context
        .into_iter()
        .map(|r| Arc::new(r.with_extra_kv(mark.clone())))
        .collect()
}
