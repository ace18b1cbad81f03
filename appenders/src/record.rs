//! The record type appenders consume: one immutable log event, owned.
//!
//! `Record` offers readers only. The broker's side (building a record in
//! place, reusing one, the holders count) is in [`producer`], which the
//! crate exposes only as the hidden `__private_api` module.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

pub use log::Level;

pub(crate) mod deferred;
mod json;
mod key_values;
pub(crate) mod producer;
mod time;

pub use self::json::{Json, JsonValueError};

use self::time::{Stamp, Time};

use deferred::Deferred;

/// A record's topic: `<level>.<target>`, with `::` in the target turned into `.`.
///
/// `Topic` is a cheap handle (`Copy`-like clone: a pointer, or one reference
/// count) shared by every record published on the same topic. The broker
/// interns topics, so building a record usually costs no allocation here.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Level, Topic};
///
/// let topic = Topic::new(Level::Warn, "app::db");
/// assert_eq!(topic.as_str(), "warn.app.db");
/// assert_eq!(topic.target(), "app::db");
/// assert_eq!(topic.level(), Level::Warn);
/// ```
#[derive(Clone)]
pub struct Topic(TopicRepr);

#[derive(Clone)]
enum TopicRepr {
    /// Interned for the life of the process: cloning costs nothing.
    Static(&'static TopicInner),
    /// Not interned (the intern table was full): one reference count.
    Shared(Arc<TopicInner>),
}

#[derive(Debug)]
struct TopicInner {
    level: Level,
    target: Box<str>,
    topic: Box<str>,
    /// Whether the target (and so the topic) is printable ASCII, which no
    /// layout escapes: looked at once here, not per record.
    printable: bool,
}

impl TopicInner {
    fn new(level: Level, target: &str) -> TopicInner {
        let mut topic = String::with_capacity(6 + target.len());
        topic.push_str(level_name(level));
        if !target.is_empty() {
            topic.push('.');
            topic.push_str(&target.replace("::", "."));
        }
        TopicInner {
            level,
            // Printable ASCII is written as it is in every multiline mode.
            printable: !crate::escape::has_unusual(target.as_bytes()),
            target: target.into(),
            topic: topic.into_boxed_str(),
        }
    }
}

/// The lower-case name of a level, as used in topics (`"warn"`).
#[must_use]
pub const fn level_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warn => "warn",
        Level::Info => "info",
        Level::Debug => "debug",
        Level::Trace => "trace",
    }
}

impl Topic {
    /// Builds the topic of `level` and `target` (allocates; see [`Topic::leak`]).
    #[must_use]
    pub fn new(level: Level, target: &str) -> Topic {
        Topic(TopicRepr::Shared(Arc::new(TopicInner::new(level, target))))
    }

    /// Builds the topic and leaks it, so clones cost nothing.
    ///
    /// Meant for interning tables whose size is bounded by their owner (the
    /// broker interns at most a fixed number of topics per process).
    #[must_use]
    pub fn leak(level: Level, target: &str) -> Topic {
        Topic(TopicRepr::Static(Box::leak(Box::new(TopicInner::new(
            level, target,
        )))))
    }

    #[inline]
    fn inner(&self) -> &TopicInner {
        match &self.0 {
            TopicRepr::Static(inner) => inner,
            TopicRepr::Shared(inner) => inner,
        }
    }

    /// The topic string, e.g. `warn.app.db`.
    #[must_use]
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.inner().topic
    }

    /// The target as the `log` crate gave it, e.g. `app::db`.
    #[must_use]
    #[inline]
    pub fn target(&self) -> &str {
        &self.inner().target
    }

    /// The level part of the topic.
    #[must_use]
    #[inline]
    pub fn level(&self) -> Level {
        self.inner().level
    }

    /// Whether the target and the topic are printable ASCII: a layout
    /// copies them as they are (`escape.rs`).
    #[inline]
    pub(crate) fn is_printable(&self) -> bool {
        self.inner().printable
    }
}

impl fmt::Debug for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Topic").field(&self.as_str()).finish()
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Topic {
    fn eq(&self, other: &Topic) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Topic {}

/// An owned key-value value, keeping the type `log`'s kv gave it where it can.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// A string.
    Str(Cow<'static, str>),
    /// A signed integer.
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A unit / none value.
    Null,
    /// A structured value (an array, an object, ...) as compact JSON text:
    /// what a `log` key-value captured with `:serde` becomes with the
    /// `serde` feature. The JSON appender writes it as JSON; text layouts
    /// and syslog write its text.
    Json(Json),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::I64(v) => write!(f, "{v}"),
            Value::U64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Null => f.write_str("null"),
            Value::Json(json) => f.write_str(json.as_str()),
        }
    }
}

impl From<Json> for Value {
    fn from(json: Json) -> Value {
        Value::Json(json)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(Cow::Owned(s.to_owned()))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(Cow::Owned(s))
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::I64(v)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::U64(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::F64(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

/// Identity of the thread that made a log call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The numeric id of the thread (`std::thread::ThreadId`'s number).
    pub id: u64,
    /// The thread's name, if it has one (interned).
    pub name: Option<&'static str>,
}

/// One log event, immutable once built and shared (`Arc`) by every appender
/// it reaches.
///
/// Appenders read it through accessors; the broker builds it with
/// [`Record::builder`]. Tests of appenders build records the same way.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Level, Record, Topic};
///
/// let record = Record::builder(Topic::new(Level::Info, "app::http"))
///     .seq(7)
///     .message("request served")
///     .kv("status", 200u64)
///     .build();
/// assert_eq!(record.seq(), 7);
/// assert_eq!(record.topic().as_str(), "info.app.http");
/// assert_eq!(record.message(), "request served");
/// assert_eq!(record.key_values()[0].0, "status");
/// ```
#[derive(Clone)]
// In this order: what rendering reads (the time, the topic, the message)
// comes first, next to the `Arc`'s counts, and what only building and
// reusing a record touch comes last. A worker's batch of records does not
// fit the core's first-level cache, so each cache line a record's render
// needs is a miss (about 1.6 a record fewer than the compiler's order,
// under callgrind's cache simulation).
#[repr(C)]
pub struct Record {
    seq: u64,
    /// A message the caller did not format (see [`deferred`]): formatted
    /// by its first reader, or at once into `message` by a worker
    /// rebuilding the record from a lane's slot.
    deferred: Deferred,
    topic: Topic,
    time: Time,
    /// The message, unless `deferred` holds it (a deferred message
    /// formatted at once is here).
    message: Cow<'static, str>,
    /// See [`producer::holders`].
    holders: Holders,
    /// The key-values, and the strings of a reused record's earlier ones
    /// (see [`producer::kv_text`]).
    kv: key_values::KeyValues,
    /// An empty string whose capacity is kept for the next formatted message
    /// when the record is reused (see [`producer::recycle`]).
    spare: String,
    module_path: Option<Cow<'static, str>>,
    file: Option<Cow<'static, str>>,
    line: Option<u32>,
    thread: ThreadInfo,
}

/// How many consumers have yet to finish with a shared record; 1 for a new
/// or cloned record.
struct Holders(AtomicUsize);

impl Clone for Holders {
    fn clone(&self) -> Holders {
        Holders(AtomicUsize::new(1))
    }
}

impl fmt::Debug for Holders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a reading for humans.
        fmt::Debug::fmt(&self.0.load(Ordering::Relaxed), f)
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As derived, but with the message as readers see it (a deferred
        // one formatted).
        f.debug_struct("Record")
            .field("seq", &self.seq)
            .field("time", &self.time)
            .field("topic", &self.topic)
            .field("message", &self.message())
            .field("module_path", &self.module_path)
            .field("file", &self.file)
            .field("line", &self.line)
            .field("thread", &self.thread)
            .field("kv", &self.kv.as_slice())
            .field("spare", &self.spare)
            .field("holders", &self.holders)
            .finish()
    }
}

impl Record {
    /// Starts a record on `topic`; every other field has a neutral default
    /// (seq 0, the current time, empty message, no location, thread id 0).
    #[must_use]
    #[allow(clippy::double_must_use)] // newer clippy: RecordBuilder is #[must_use] too
    #[inline]
    pub fn builder(topic: Topic) -> RecordBuilder {
        RecordBuilder {
            record: Record::stamped(topic, Stamp::Wall(SystemTime::now())),
        }
    }

    /// A new, empty record on `topic` made at `stamp` (see [`producer::new_record`]).
    #[inline]
    fn stamped(topic: Topic, stamp: Stamp) -> Record {
        Record {
            seq: 0,
            time: Time::new(stamp),
            topic,
            message: Cow::Borrowed(""),
            deferred: Deferred::default(),
            module_path: None,
            file: None,
            line: None,
            thread: ThreadInfo { id: 0, name: None },
            kv: key_values::KeyValues::default(),
            spare: String::new(),
            holders: Holders(AtomicUsize::new(1)),
        }
    }

    /// Broker-wide sequence number: unique, taken from one counter when the
    /// record is built on the caller's thread (after routing, before the
    /// message is formatted; for a record logbus' journal keeps, after,
    /// under the journal's lock), so it increases in the order log calls
    /// reach that point; the journal's offsets are these numbers. See the `logbus` crate docs, "Order", for what it
    /// promises about the order appenders see.
    #[must_use]
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// When the log call was made: read on the caller's thread as the
    /// record was built.
    ///
    /// A producer may read a cheaper clock there and leave the conversion
    /// to the wall clock to the first call of this method: logbus reads the
    /// CPU's time-stamp counter on x86-64 Linux where the kernel's clock
    /// source is that counter, and the conversion is within about 0.1 µs of
    /// what `SystemTime::now()` on the caller's thread would have read (the
    /// `logbus` crate docs, "Time", say what can make it worse). The first
    /// conversion is kept: every call, on any thread, returns the same time.
    /// A record built with [`RecordBuilder::time`] returns that time.
    #[must_use]
    #[inline]
    pub fn time(&self) -> SystemTime {
        self.time.get()
    }

    /// [`time`](Record::time) as signed nanoseconds since the Unix epoch,
    /// for this crate's renderers: the same instant, without the
    /// `SystemTime` arithmetic; `None` for a time built outside 1677-2262.
    #[inline]
    pub(crate) fn unix_nanos(&self) -> Option<i64> {
        self.time.nanos()
    }

    /// The record's level.
    #[must_use]
    #[inline]
    pub fn level(&self) -> Level {
        self.topic.level()
    }

    /// The target, as given to the `log` macro (`app::db`).
    #[must_use]
    #[inline]
    pub fn target(&self) -> &str {
        self.topic.target()
    }

    /// The topic (`warn.app.db`).
    #[must_use]
    #[inline]
    pub fn topic(&self) -> &Topic {
        &self.topic
    }

    /// The formatted message.
    ///
    /// A message logbus's own macros deferred (`logbus::info!` ...) was
    /// formatted by the worker that took the record from its queue, or, for
    /// a record that travelled shared, is formatted here, by its first
    /// reader (once, whichever thread that is), and kept.
    #[must_use]
    #[inline]
    pub fn message(&self) -> &str {
        self.message_cow()
    }

    /// The message, telling whether it was a literal (borrowed, not copied).
    /// A deferred message, once formatted, is owned.
    #[must_use]
    #[inline]
    pub fn message_cow(&self) -> &Cow<'static, str> {
        self.deferred.text().unwrap_or(&self.message)
    }

    /// The module path of the log call, if known.
    #[must_use]
    #[inline]
    pub fn module_path(&self) -> Option<&str> {
        self.module_path.as_deref()
    }

    /// The source file of the log call, if known.
    #[must_use]
    #[inline]
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The source line of the log call, if known.
    #[must_use]
    #[inline]
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// The thread that made the log call.
    #[must_use]
    #[inline]
    pub fn thread(&self) -> ThreadInfo {
        self.thread
    }

    /// The key-values attached to the record, in call order.
    #[must_use]
    #[inline]
    pub fn key_values(&self) -> &[(Cow<'static, str>, Value)] {
        self.kv.as_slice()
    }

    /// Whether the record has key-values (a renderer's check per record,
    /// cheaper than the slice's).
    #[inline]
    pub(crate) fn has_key_values(&self) -> bool {
        !self.kv.is_empty()
    }

    /// The first value under `key`, if any.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.key_values()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// A rough size of the record in bytes (message plus key-values plus the
    /// fixed part), used for byte-bounded queues. A deferred message counts
    /// as the longest its arguments can make it (per type and spec: 21
    /// bytes for a `u64`'s `{}`, its width if wider; a float's `{}` from
    /// its magnitude, at most 40 bytes from 1e-20 to 1e20), whether it was
    /// formatted yet or not, so the size never changes and is never less
    /// than the formatted message. Not counted, on either path: a buffer's
    /// capacity beyond its length, and a deferred message's copies of its
    /// arguments (32 bytes each) and their box.
    #[must_use]
    pub fn approx_size(&self) -> usize {
        let kv: usize = self
            .key_values()
            .iter()
            .map(|(k, v)| {
                k.len()
                    + match v {
                        Value::Str(s) => s.len(),
                        Value::Json(json) => json.as_str().len(),
                        _ => 8,
                    }
            })
            .sum();
        let message = self
            .deferred
            .approx_len()
            .unwrap_or_else(|| self.message.len());
        producer::parts_size(message) + kv
    }

    /// A copy of this record with extra key-values appended (used for
    /// dead-letter metadata).
    #[must_use]
    pub fn with_extra_kv(&self, extra: Vec<(Cow<'static, str>, Value)>) -> Record {
        let mut r = self.clone();
        r.kv.extend(extra);
        r
    }
}

/// Builds a [`Record`]. See [`Record::builder`].
#[derive(Debug)]
#[must_use]
pub struct RecordBuilder {
    record: Record,
}

impl RecordBuilder {
    /// Sets the sequence number.
    #[inline]
    pub fn seq(mut self, seq: u64) -> Self {
        self.record.seq = seq;
        self
    }

    /// Sets the time of the log call.
    #[inline]
    pub fn time(mut self, time: SystemTime) -> Self {
        self.record.time.set(Stamp::Wall(time));
        self
    }

    /// Sets the message. A `&'static str` is kept without copying.
    #[inline]
    pub fn message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.record.message = message.into();
        self
    }

    /// Sets the module path.
    #[inline]
    pub fn module_path(mut self, module_path: Option<Cow<'static, str>>) -> Self {
        self.record.module_path = module_path;
        self
    }

    /// Sets the source file.
    #[inline]
    pub fn file(mut self, file: Option<Cow<'static, str>>) -> Self {
        self.record.file = file;
        self
    }

    /// Sets the source line.
    #[inline]
    pub fn line(mut self, line: Option<u32>) -> Self {
        self.record.line = line;
        self
    }

    /// Sets the thread identity.
    #[inline]
    pub fn thread(mut self, thread: ThreadInfo) -> Self {
        self.record.thread = thread;
        self
    }

    /// Appends one key-value.
    pub fn kv(mut self, key: impl Into<Cow<'static, str>>, value: impl Into<Value>) -> Self {
        self.record.kv.push((key.into(), value.into()));
        self
    }

    /// Replaces all key-values.
    #[inline]
    pub fn key_values(mut self, kv: Vec<(Cow<'static, str>, Value)>) -> Self {
        self.record.kv = key_values::KeyValues::from_vec(kv);
        self
    }

    /// Finishes the record.
    #[must_use]
    #[inline]
    pub fn build(self) -> Record {
        self.record
    }
}
