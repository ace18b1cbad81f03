//! The producer's side of a [`Record`]: building one in place and reusing
//! it, for the broker only.
//!
//! Appenders read records (`&Record`); they never write one. These
//! functions are what the `logbus` crate needs to fill a record on the
//! caller's thread without allocating, and they are exposed only through
//! the hidden `__private_api` module (as `log` keeps its macro plumbing in
//! `__private_api`): they are not part of the documented API and may change
//! in any release.

use std::borrow::Cow;
use std::sync::atomic::AtomicUsize;

pub use super::deferred::{parse, pieces, Arg, Piece, Plan, Template};
pub use super::time::{from_unix_nanos, unix_nanos, Stamp};
use super::{Json, Record, ThreadInfo, Topic, TopicRepr, Value};

/// Largest message capacity a reused record keeps; a record that carried a
/// huge message gives its buffer back instead of pinning it.
const MAX_SPARE_CAPACITY: usize = 4096;

/// Most key-value slots a reused record keeps, and the largest capacity of
/// a key's or a text value's string it keeps for the next ones
/// ([`kv_text`]).
const MAX_SPARE_KV: usize = 64;
const MAX_SPARE_KV_TEXT: usize = 256;

/// An empty string for a key or a text value of `record`'s next key-value:
/// one its earlier key-values left when it was reused (no allocation while
/// it has room), or a new one.
#[must_use]
#[inline]
pub fn kv_text(record: &mut Record) -> String {
    record.kv.take_text()
}

/// Converts the record's time now, if it is a counter's ticks not converted
/// yet, and keeps it without the compare-and-swap a first read makes: for a
/// record no other thread can read yet (a worker's own, rebuilt from a
/// lane's slot, before it hands it on). Another thread reading it
/// meanwhile could keep a conversion of its own, some nanoseconds apart.
#[inline]
pub fn settle_time(record: &Record) {
    record.time.settle();
}

/// How many consumers (the broker's subscriptions) have yet to finish with
/// this shared record. A producer sets it before sharing the record; each
/// consumer decrements it when done, and the one that takes it to zero may
/// reuse the record (see [`recycle`]) once it holds the only reference.
/// 1 for a new or cloned record.
#[must_use]
#[inline]
pub fn holders(record: &Record) -> &AtomicUsize {
    &record.holders.0
}

/// A new, empty record on `topic` with `seq`, made at `stamp` (the wall
/// clock is not read, unlike [`Record::builder`]).
#[must_use]
#[inline]
pub fn new_record(topic: Topic, seq: u64, stamp: Stamp) -> Record {
    let mut record = Record::stamped(topic, stamp);
    record.seq = seq;
    record
}

/// Turns `record` into a new, empty one on `topic` made at `stamp` (no
/// message, location, thread or key-values), keeping its allocations (the
/// message buffer, a deferred message's, the key-value vector and the
/// key-values' strings, [`kv_text`]) for reuse.
#[inline]
pub fn recycle(record: &mut Record, topic: Topic, seq: u64, stamp: Stamp) {
    record.deferred.clear();
    if let Cow::Owned(mut text) = std::mem::replace(&mut record.message, Cow::Borrowed("")) {
        if text.capacity() <= MAX_SPARE_CAPACITY && text.capacity() > record.spare.capacity() {
            text.clear();
            record.spare = text;
        }
    }
    record.seq = seq;
    record.time.set(stamp);
    record.topic = topic;
    record.module_path = None;
    record.file = None;
    record.line = None;
    record.thread = ThreadInfo { id: 0, name: None };
    *record.holders.0.get_mut() = 1;
    record.kv.clear(MAX_SPARE_KV, MAX_SPARE_KV_TEXT);
}

/// Sets the record's `seq` (a producer that takes it after the message is
/// formatted: logbus's journal, under its lock).
#[inline]
pub fn set_seq(record: &mut Record, seq: u64) {
    record.seq = seq;
}

/// Gives up buffer capacity a record to be retained does not use: the
/// spare buffers (the message's and the earlier key-values' strings), and a message or key-value buffer much larger than its
/// content (a recycled record keeps its longest message's buffer, up to
/// 4 KiB). logbus' journal counts lengths, so what it keeps must not hold
/// more. A fresh exact buffer replaces a large one, which is freed whole
/// (shrinking in place leaves holes too small for the next large one).
///
/// A deferred message is formatted here (on the caller's thread: the
/// journal counts what it holds before holding it) and becomes the
/// message; its box and argument slots stay, inactive, for the record's
/// next life.
pub fn fit_for_retention(record: &mut Record) {
    record.spare = String::new();
    if let Some(text) = record.deferred.take_formatted() {
        record.message = Cow::Owned(text);
    }
    if let Cow::Owned(text) = &mut record.message {
        if text.capacity() > 2 * text.len() + 64 {
            *text = text.as_str().to_owned();
        }
    }
    record.kv.fit(4);
}

/// What `record` holds in memory, in bytes: its shared allocation and each
/// heap buffer it owns (message, spare buffer, key-value slots, owned keys
/// and strings, an owned location), each by capacity and with the
/// allocator's 16-byte header and rounding. What logbus' journal counts.
#[must_use]
pub fn held_bytes(record: &Record) -> usize {
    held(record, record.deferred.held_bytes(alloc))
}

/// [`held_bytes`] of a record no one else holds (the record pool's byte
/// bound): the same count, without taking the deferred message's lock.
#[must_use]
pub fn held_bytes_unique(record: &mut Record) -> usize {
    let deferred = record.deferred.held_bytes_mut(alloc);
    held(record, deferred)
}

/// Whether [`held_bytes_unique`] of `record` is at most `limit` (a worker
/// deciding whether to keep the record as a spare), without the count when
/// the record owns only its message buffers: no key-value slots, no
/// deferred message, a borrowed location, what a record rebuilt from a
/// lane slot is. Each of its two buffers then holds its capacity plus at
/// most 31 bytes (the allocator's header and rounding), which bounds the
/// count from above; a bound over `limit`, or any other record, is counted
/// exactly.
#[must_use]
#[inline]
pub fn held_bytes_unique_within(record: &mut Record, limit: usize) -> bool {
    let plain = record.kv.capacity() == 0
        && record.deferred.owns_nothing()
        && !matches!(record.module_path, Some(Cow::Owned(_)))
        && !matches!(record.file, Some(Cow::Owned(_)));
    if plain {
        let message = match &record.message {
            Cow::Owned(text) => text.capacity() + ALLOC_SLACK,
            Cow::Borrowed(_) => 0,
        };
        let bound = RECORD_HELD + message + record.spare.capacity() + ALLOC_SLACK;
        if bound <= limit {
            return true;
        }
    }
    held_bytes_unique(record) <= limit
}

/// What the record itself holds: its shared allocation (the `Arc`'s two
/// counts and the record), as [`alloc`] counts it.
const RECORD_HELD: usize = alloc(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Record>());

/// The most [`alloc`] adds to a buffer's capacity: its header and rounding.
const ALLOC_SLACK: usize = 16 + 15;

/// `bytes` as the allocator holds them: a 16-byte header, rounded up to 16.
const fn alloc(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        bytes.div_ceil(16) * 16 + 16
    }
}

/// [`held_bytes`] with the deferred message's part already counted.
fn held(record: &Record, deferred: usize) -> usize {
    #[allow(clippy::ptr_arg)] // it is the Cow's ownership that counts
    fn cow(text: &Cow<'static, str>) -> usize {
        match text {
            Cow::Owned(s) => alloc(s.capacity()),
            Cow::Borrowed(_) => 0,
        }
    }
    // The `Arc`'s two counts and the record.
    let mut bytes = RECORD_HELD;
    bytes += cow(&record.message) + alloc(record.spare.capacity()) + deferred;
    bytes += record.module_path.as_ref().map_or(0, cow) + record.file.as_ref().map_or(0, cow);
    bytes += alloc(record.kv.capacity() * std::mem::size_of::<(Cow<'static, str>, Value)>());
    // The spare key-values' strings too (`kv_text`).
    for (key, value) in record.kv.held() {
        bytes += cow(key);
        match value {
            Value::Str(text) => bytes += cow(text),
            Value::Json(json) => bytes += alloc(json.as_str().len()),
            _ => {}
        }
    }
    bytes
}

/// Sets a literal message (not copied).
#[inline]
pub fn set_message_literal(record: &mut Record, message: &'static str) {
    record.deferred.clear();
    if let Cow::Owned(text) = std::mem::replace(&mut record.message, Cow::Borrowed(message)) {
        if text.capacity() <= MAX_SPARE_CAPACITY && text.capacity() > record.spare.capacity() {
            record.spare = text;
        }
    }
}

/// Sets a message formatted when first read (`deferred.rs`): `template`,
/// which its plan found deferrable, with copies of `args`. Allocates only
/// the first time a record carries one; then the buffers are reused.
#[inline]
pub fn set_message_deferred(record: &mut Record, template: &'static Template, args: &[Arg]) {
    set_message_literal(record, "");
    record.deferred.set(template, args, &mut record.spare);
}

/// Whether the record's message is deferred (formatted or not yet).
#[must_use]
pub fn is_deferred(record: &Record) -> bool {
    record.deferred.is_active()
}

/// Whether the record's message is deferred and was formatted (read).
#[must_use]
pub fn is_formatted(record: &Record) -> bool {
    record.deferred.is_formatted()
}

/// An empty buffer that becomes the message: write the formatted message
/// into it. Reuses the capacity of earlier messages.
#[inline]
pub fn message_buffer(record: &mut Record) -> &mut String {
    record.deferred.clear();
    if let Cow::Borrowed(_) = record.message {
        record.message = Cow::Owned(std::mem::take(&mut record.spare));
    }
    let text = record.message.to_mut();
    text.clear();
    text
}

/// Sets where the log call was made.
#[inline]
pub fn set_location(
    record: &mut Record,
    module_path: Option<Cow<'static, str>>,
    file: Option<Cow<'static, str>>,
    line: Option<u32>,
) {
    record.module_path = module_path;
    record.file = file;
    record.line = line;
}

/// Sets the thread that made the log call.
#[inline]
pub fn set_thread(record: &mut Record, thread: ThreadInfo) {
    record.thread = thread;
}

/// `json` with the value of each member whose key `secret` names, at any
/// depth, replaced by `replacement` (JSON text): logbus's redaction of a
/// structured key-value. `None` when no key is secret.
#[must_use]
pub fn redact_json(json: &Json, secret: &dyn Fn(&str) -> bool, replacement: &str) -> Option<Json> {
    json.redacted(secret, replacement)
}

/// The key-values, to rewrite values in place (redaction).
#[inline]
pub fn key_values_mut(record: &mut Record) -> &mut [(Cow<'static, str>, Value)] {
    record.kv.as_mut_slice()
}

/// Appends one key-value.
#[inline]
pub fn push_kv(record: &mut Record, key: Cow<'static, str>, value: Value) {
    record.kv.push((key, value));
}

/// A `log` key-value's value that the `log` crate hands a visitor's
/// `visit_any` (neither a primitive nor a string), as logbus keeps it: with
/// the `serde` feature, a value captured with `:serde` that is structured
/// (a sequence, a map, a struct, an enum variant with data, ...) becomes
/// [`Value::Json`], serialised here, on the caller's thread, within `max`
/// bytes of JSON text. A value whose JSON is longer is cut at `max` (at a
/// UTF-8 boundary, serialisation stopped at the next write), kept as a
/// [`Value::Str`] marked `…[truncated N+ bytes]` (truncated JSON is not
/// JSON), and `truncated` is set, so the caller counts it. A structured
/// value whose JSON is a scalar (a newtype around a number, a unit variant)
/// keeps that scalar's type.
///
/// `None` for everything else (a `Debug`, `Display` or error value, which
/// the caller formats as text as before), and always without the `serde`
/// feature, where this costs nothing.
#[inline]
#[must_use]
pub fn structured_value(
    value: &log::kv::Value<'_>,
    max: usize,
    truncated: &mut bool,
) -> Option<Value> {
    #[cfg(feature = "serde")]
    {
        capture::structured_value(value, max, truncated)
    }
    #[cfg(not(feature = "serde"))]
    {
        let _ = (value, max, truncated);
        None
    }
}

#[cfg(feature = "serde")]
mod capture;
mod packed;

pub use self::packed::{packed_size, KvPacker, Packable, Packed};

/// Appends the packed key-values to `record`'s, typed as a `log` call's
/// are, their strings in the record's spare ones (the usual path's record
/// of a call whose key-values were packed and then did not fit its slot).
pub fn unpack_kv(record: &mut Record, packed: Packed<'_>) {
    packed::unpack_into(record, packed);
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::record::Level;

    /// A template as the macros make one, in `const`s.
    macro_rules! template {
        ($format:literal, $args:literal) => {{
            const PIECES: [Piece; pieces($format)] = parse($format);
            const TEMPLATE: Template = Template::new($format, &PIECES, $args);
            &TEMPLATE
        }};
    }

    #[test]
    fn a_recycled_record_is_new_but_keeps_its_buffers() {
        let mut record = Record::builder(Topic::new(Level::Info, "app"))
            .message(String::from("old"))
            .kv("k", 1u64)
            .build();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        recycle(
            &mut record,
            Topic::new(Level::Warn, "db"),
            8,
            Stamp::Wall(at),
        );
        assert_eq!(record.time(), at);
        assert!(record.key_values().is_empty());
        assert_eq!(record.message(), "");
        write!(message_buffer(&mut record), "new {}", 1).unwrap();
        assert_eq!(
            (record.seq(), record.message(), record.topic().as_str()),
            (8, "new 1", "warn.db")
        );
        set_message_literal(&mut record, "literal");
        assert!(matches!(record.message_cow(), Cow::Borrowed("literal")));
        // The formatted message's buffer was kept for the next one.
        assert!(message_buffer(&mut record).capacity() >= 5);
    }

    #[test]
    fn a_deferred_message_is_formatted_once_read_and_its_buffers_are_reused() {
        let mut record = Record::builder(Topic::new(Level::Info, "app")).build();
        set_message_deferred(
            &mut record,
            template!("{} of {:>4}", 2),
            &[Arg::U64(1), Arg::F64(2.5)],
        );
        assert!(is_deferred(&record) && !is_formatted(&record));
        let size = record.approx_size();
        assert_eq!(record.message(), "1 of  2.5");
        assert!(is_formatted(&record));
        assert_eq!(record.approx_size(), size, "stable across formatting");
        assert!(format!("{record:?}").contains("message: \"1 of  2.5\""));
        let copy = record.clone();
        assert_eq!((copy.message(), is_deferred(&copy)), ("1 of  2.5", true));

        recycle(
            &mut record,
            Topic::new(Level::Warn, "db"),
            9,
            Stamp::Wall(SystemTime::now()),
        );
        assert!(!is_deferred(&record));
        assert_eq!(record.message(), "");
        let held = held_bytes(&record);
        set_message_deferred(&mut record, template!("{}", 1), &[Arg::Bool(true)]);
        assert_eq!(record.message(), "true");
        assert_eq!(
            held_bytes(&record),
            held,
            "the same buffers, formatted again"
        );

        // A message written over a deferred one replaces it.
        message_buffer(&mut record).push_str("plain");
        assert_eq!((record.message(), is_deferred(&record)), ("plain", false));

        // Retained: formatted into the message, nothing deferred left but
        // the box, inactive; what it holds does not change while kept.
        set_message_deferred(&mut record, template!("{:?}", 1), &[Arg::Char('"')]);
        fit_for_retention(&mut record);
        let held = held_bytes(&record);
        assert_eq!((record.message(), is_deferred(&record)), ("'\"'", false));
        assert_eq!(held_bytes(&record), held, "reading it changes nothing");
        // Let go of and reused for another: the same box and buffers.
        recycle(
            &mut record,
            Topic::new(Level::Info, "app"),
            10,
            Stamp::Wall(SystemTime::now()),
        );
        set_message_deferred(&mut record, template!("{:?}", 1), &[Arg::Char('x')]);
        fit_for_retention(&mut record);
        assert_eq!((record.message(), is_deferred(&record)), ("'x'", false));
        assert_eq!(held_bytes(&record), held, "no new allocation");
    }

    #[test]
    fn the_spare_check_agrees_with_the_count_at_every_limit() {
        let topic = || Topic::new(Level::Info, "app");
        let message = |record: &mut Record, text: &str| message_buffer(record).push_str(text);
        let mut shapes: Vec<(&str, Record)> = Vec::new();
        shapes.push((
            "literal",
            Record::builder(topic()).message("literal").build(),
        ));
        for len in [0, 1, 15, 16, 17, 33, 200, 1000] {
            let mut record = Record::builder(topic()).build();
            message(&mut record, &"x".repeat(len));
            shapes.push(("owned message", record));
        }
        let mut spare = Record::builder(topic()).build();
        message(&mut spare, &"y".repeat(300));
        set_message_literal(&mut spare, "now a literal, the buffer kept as the spare");
        shapes.push(("a spare buffer", spare));
        // Both buffers where the allocator's rounding adds the most (a
        // capacity one past a multiple of 16), so that the bound is tight.
        for capacity in [1, 17, 33] {
            let mut record = Record::builder(topic()).build();
            record.message = Cow::Owned(String::with_capacity(capacity));
            record.spare = String::with_capacity(capacity);
            shapes.push(("both buffers, rounded up the most", record));
        }
        let mut kv = Record::builder(topic()).kv("k", "v".to_owned()).build();
        message(&mut kv, "with a key-value");
        kv.kv.clear(MAX_SPARE_KV, MAX_SPARE_KV_TEXT);
        shapes.push(("key-value slots, emptied, their strings kept", kv));
        let mut located = Record::builder(topic()).build();
        set_location(
            &mut located,
            None,
            Some(Cow::Owned("src/a.rs".into())),
            Some(1),
        );
        shapes.push(("an owned file", located));
        let mut module = Record::builder(topic()).build();
        set_location(&mut module, Some(Cow::Owned("app::a".into())), None, None);
        shapes.push(("an owned module", module));
        let mut deferred = Record::builder(topic()).build();
        set_message_deferred(&mut deferred, template!("{}", 1), &[Arg::U64(7)]);
        shapes.push(("a deferred message", deferred));

        for (shape, mut record) in shapes {
            let held = held_bytes_unique(&mut record);
            assert_eq!(held, held_bytes(&record), "{shape}");
            for limit in held.saturating_sub(80)..held + 80 {
                assert_eq!(
                    held_bytes_unique_within(&mut record, limit),
                    held <= limit,
                    "{shape}: {held} bytes held, limit {limit}"
                );
            }
        }
    }
}

/// An interned topic, as a pointer that can travel through an atomic slot
/// ([`Parts`]). Only a topic interned for the life of the process has one.
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct StaticTopic(&'static super::TopicInner);

impl StaticTopic {
    /// The interned topic's address. A `StaticTopic` is exactly this
    /// pointer (`repr(transparent)` over a `&'static`), never null.
    #[must_use]
    #[inline]
    pub fn as_ptr(self) -> *const () {
        std::ptr::from_ref(self.0).cast()
    }

    /// The topic itself (a clone costs nothing).
    #[must_use]
    #[inline]
    pub fn topic(self) -> Topic {
        Topic(super::TopicRepr::Static(self.0))
    }
}

/// Everything a plain record is made of, borrowed or `'static`: what a
/// lane slot copies instead of a shared record (`src/queue/slot.rs` in the
/// logbus crate), and what a record is built from on the other side
/// ([`set_parts`]): a record with an interned topic, a formatted message,
/// a literal or a deferred one, a `'static` location, and key-values packed as
/// bytes ([`KvPacker`]) or none.
#[derive(Clone, Copy, Debug)]
pub struct Parts<'a> {
    /// The record's `seq`.
    pub seq: u64,
    /// The record's topic.
    pub topic: StaticTopic,
    /// When it was made.
    pub stamp: Stamp,
    /// The module path.
    pub module_path: Option<&'static str>,
    /// The source file.
    pub file: Option<&'static str>,
    /// The source line.
    pub line: Option<u32>,
    /// The thread that made the log call.
    pub thread: ThreadInfo,
    /// The message text.
    pub message: &'a str,
    /// The message, if it is a literal (kept without copying: the same
    /// text as `message`).
    pub literal: Option<&'static str>,
    /// The message, if it is deferred (logbus's macros): its call site's
    /// template and copies of its arguments, formatted when first read, or
    /// at once by a worker that took the parts ([`set_taken_parts`]).
    /// `message` is then empty and `literal` `None`.
    pub deferred: Option<DeferredParts<'a>>,
    /// The key-values, packed ([`KvPacker`]; empty: none). Not with a
    /// deferred message.
    pub kv: Packed<'a>,
}

impl Parts<'_> {
    /// The length a byte budget counts for the message: the text's, or a
    /// deferred message's longest.
    #[must_use]
    #[inline]
    pub fn counted_len(&self) -> usize {
        match &self.deferred {
            Some(deferred) => deferred.longest(),
            None => self.message.len(),
        }
    }

    /// What a byte budget counts for the record the parts make
    /// ([`Record::approx_size`]): [`parts_size`] of the message's
    /// [`counted_len`](Parts::counted_len), and the key-values'
    /// ([`packed_size`]).
    #[must_use]
    #[inline]
    pub fn size(&self) -> usize {
        let kv = if self.kv.is_empty() {
            0
        } else {
            packed_size(self.kv)
        };
        parts_size(self.counted_len()) + kv
    }
}

/// A deferred message as parts: the call site's template and copies of
/// its arguments.
#[derive(Clone, Copy, Debug)]
pub struct DeferredParts<'a> {
    /// The call site's format string, read at compile time.
    pub template: &'static Template,
    /// The arguments, copied.
    pub args: &'a [Arg],
}

impl DeferredParts<'_> {
    /// The longest the message can be, as a record carrying it counts it
    /// ([`Record::approx_size`]).
    #[must_use]
    #[inline]
    pub fn longest(&self) -> usize {
        self.template.longest(self.args)
    }
}

/// Rewrites `record` (one being reused, or new) into the record `parts`
/// describe, copying the message into its buffer: what [`recycle`] and
/// the setters do, in one pass. A deferred message is left to its first
/// reader to format (see [`set_taken_parts`]).
#[inline(always)]
pub fn set_parts(record: &mut Record, parts: &Parts<'_>) {
    fill_parts(record, parts, false);
}

/// [`set_parts`] for a worker rebuilding a record it took from a lane (it
/// does so for every record that travelled as parts), which it alone holds
/// and its appender reads next: a deferred message is formatted at once,
/// without the synchronisation a first read of a shared record needs.
#[inline(always)]
pub fn set_taken_parts(record: &mut Record, parts: &Parts<'_>) {
    fill_parts(record, parts, true);
}

/// [`set_parts`], formatting a deferred message now if `format_now`.
#[inline(always)]
fn fill_parts(record: &mut Record, parts: &Parts<'_>, format_now: bool) {
    record.deferred.clear();
    // A deferred message left to its reader: an empty literal, then the
    // template and arguments (as `set_message_deferred` does). Formatted
    // now, it is written into the message's buffer, as a copied one is.
    let literal = match parts.deferred {
        Some(_) if format_now => None,
        Some(_) => Some(""),
        None => parts.literal,
    };
    match literal {
        Some(literal) => {
            if let Cow::Owned(text) = std::mem::replace(&mut record.message, Cow::Borrowed(literal))
            {
                if text.capacity() <= MAX_SPARE_CAPACITY
                    && text.capacity() > record.spare.capacity()
                {
                    record.spare = text;
                }
            }
        }
        None => {
            if let Cow::Borrowed(_) = record.message {
                record.message = Cow::Owned(std::mem::take(&mut record.spare));
            }
            let text = record.message.to_mut();
            if text.capacity() > MAX_SPARE_CAPACITY {
                *text = String::new();
            }
            match parts.deferred {
                Some(deferred) => {
                    record
                        .deferred
                        .set_formatted(deferred.template, deferred.args, text);
                }
                None => {
                    text.clear();
                    text.push_str(parts.message);
                }
            }
        }
    }
    if let (Some(deferred), false) = (parts.deferred, format_now) {
        record
            .deferred
            .set(deferred.template, deferred.args, &mut record.spare);
    }
    record.seq = parts.seq;
    record.time.set(parts.stamp);
    record.topic = parts.topic.topic();
    record.module_path = parts.module_path.map(Cow::Borrowed);
    record.file = parts.file.map(Cow::Borrowed);
    record.line = parts.line;
    record.thread = parts.thread;
    *record.holders.0.get_mut() = 1;
    record.kv.clear(MAX_SPARE_KV, MAX_SPARE_KV_TEXT);
    if !parts.kv.is_empty() {
        packed::unpack_into(record, parts.kv);
    }
}

/// [`Record::approx_size`] of the record whose message is `message_len`
/// bytes long and which has no key-values (what a record with [`Parts`]
/// counts in a byte budget).
#[must_use]
#[inline]
pub const fn parts_size(message_len: usize) -> usize {
    std::mem::size_of::<Record>() + message_len
}

/// The topic's [`StaticTopic`], if it is interned.
#[must_use]
#[inline]
pub fn static_topic(topic: &Topic) -> Option<StaticTopic> {
    match topic.0 {
        TopicRepr::Static(inner) => Some(StaticTopic(inner)),
        TopicRepr::Shared(_) => None,
    }
}
