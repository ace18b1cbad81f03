//! What a record may hold, applied once on the caller's thread before
//! fan-out: the size bound on the message and on each value, and
//! redaction of configured keys and of the message.
//!
//! # The size bound
//!
//! The message is formatted through [`Bounded`], which keeps at most the
//! bound, cut at a UTF-8 boundary, and stops the formatting at the first
//! chunk after it: the caller formats and copies at most the bound plus
//! one chunk (a 64 MiB `String` argument is one chunk: it is measured, not
//! copied). The cut is marked `…[truncated N bytes]`, where N counts the
//! bytes of the chunks seen; when formatting was stopped with chunks left,
//! `…[truncated N+ bytes]`. String values of key-values are bounded the
//! same way, and so is a literal message. Each truncated record counts
//! once in [`BrokerStats::truncated`](crate::BrokerStats::truncated).
//!
//! The direct path (`broker/publish/`) formats through [`SlotText`]
//! instead: into the caller's stack while the message fits a lane slot
//! (and the bound), then, a longer one, on into the thread's spill buffer
//! through [`Bounded`], so the bound and its mark are the same.
//!
//! Memory: a record holds at most the bound per message and key-value
//! string (the target is not cut, since routing reads it whole; one
//! longer than 256 bytes is neither interned nor kept in a route cache,
//! `route.rs`), so logging one huge message raises the peak resident memory by at most about twice
//! the bound (the record, and an appender's render buffer) plus the few
//! MiB a broker's threads start with, and nothing stays (a recycled
//! record keeps at most 4 KiB of buffer; `tests/record_bound.rs` checks
//! both with a 64 MiB message).
//!
//! # Redaction
//!
//! [`Redaction`] replaces the values of configured keys (compared
//! without regard to ASCII case) with `[redacted]`, and runs an optional
//! function over the message. Both run before the record is queued
//! anywhere, so a secret reaches no appender: console, files, JSON,
//! syslog, and the dead-letter appender after retries, which receives the
//! record as it was queued. Without redaction configured, the cost is one
//! branch.

use std::borrow::Cow;
use std::fmt;

use logbus_appenders::__private_api as produce;
use logbus_appenders::{Record, Value};

use crate::queue::INLINE_TEXT;
use crate::sync::Arc;

/// The default of [`Builder::max_record_bytes`](crate::Builder::max_record_bytes):
/// 64 KiB of message, and as much per key-value.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024;

/// What a redacted value becomes.
pub const REDACTED: &str = "[redacted]";

/// [`REDACTED`] as a JSON string, for a member of a structured value.
const REDACTED_JSON: &str = "\"[redacted]\"";

/// A message rewriter: `Some(new)` replaces the message.
type MessageRewrite = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Secrets to keep out of every output: key names whose values are
/// replaced with [`REDACTED`] (compared without regard to ASCII case), as
/// key-values and as members of a structured value's objects at any depth
/// (`Value::Json`), and an optional function over the message. Give it to
/// [`Builder::redact`](crate::Builder::redact).
///
/// # Examples
///
/// ```
/// use logbus::{LevelFilter, Memory, Redaction, Subscription, Value};
///
/// let (memory, captured) = Memory::new();
/// let broker = logbus::builder()
///     .redact(
///         Redaction::new()
///             .keys(["password", "token"])
///             .message(|msg| msg.contains("Bearer ").then(|| "[redacted message]".to_owned())),
///     )
///     .appender(Subscription::builder("memory", memory))
///     .build()?;
/// log::set_max_level(LevelFilter::Trace);
/// log::info!(logger: &broker, user = "ann", Password = "hunter2"; "login");
/// log::info!(logger: &broker, "header Bearer abc.def");
/// broker.flush()?;
/// let records = captured.records();
/// assert_eq!(records[0].get("Password"), Some(&Value::from("[redacted]")));
/// assert_eq!(records[0].get("user"), Some(&Value::from("ann")));
/// assert_eq!(records[1].message(), "[redacted message]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct Redaction {
    keys: Vec<String>,
    message: Option<MessageRewrite>,
}

impl fmt::Debug for Redaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redaction")
            .field("keys", &self.keys)
            .field("message", &self.message.is_some())
            .finish()
    }
}

impl Redaction {
    /// Nothing redacted yet.
    pub fn new() -> Redaction {
        Redaction::default()
    }

    /// The keys that usually hold secrets: `password`, `passwd`, `secret`,
    /// `token`, `api_key`, `apikey`, `authorization`, `cookie`.
    pub fn common() -> Redaction {
        Redaction::new().keys([
            "password",
            "passwd",
            "secret",
            "token",
            "api_key",
            "apikey",
            "authorization",
            "cookie",
        ])
    }

    /// Redacts the values of these keys (added up).
    pub fn keys<I, S>(mut self, keys: I) -> Redaction
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keys.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Runs `rewrite` over every message on the caller's thread; a `Some`
    /// replaces the message, held to the size bound
    /// ([`max_record_bytes`](crate::Builder::max_record_bytes)) as any
    /// message is. Keep it cheap; a log call from inside it is discarded
    /// (the re-entrancy rule).
    pub fn message(
        mut self,
        rewrite: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Redaction {
        self.message = Some(Arc::new(rewrite));
        self
    }

    /// Redacts `record` in place; a rewritten message is held to
    /// `max_bytes`, as any message is (a review found it was not). Returns
    /// whether the bound cut the rewrite.
    pub(crate) fn apply(&self, record: &mut Record, max_bytes: usize) -> bool {
        if !self.keys.is_empty() {
            let secret = |key: &str| self.keys.iter().any(|k| k.eq_ignore_ascii_case(key));
            for (key, value) in produce::key_values_mut(record) {
                if secret(key) {
                    *value = Value::Str(Cow::Borrowed(REDACTED));
                } else if let Value::Json(json) = value {
                    // A structured value's own members, at any depth (a
                    // review found `{"password": ...}` inside one written).
                    if let Some(redacted) = produce::redact_json(json, &secret, REDACTED_JSON) {
                        *value = Value::Json(redacted);
                    }
                }
            }
        }
        let Some(new) = self
            .message
            .as_ref()
            .and_then(|rewrite| rewrite(record.message()))
        else {
            return false;
        };
        let buffer = produce::message_buffer(record);
        match bound_str(&new, max_bytes) {
            None => {
                buffer.push_str(&new);
                false
            }
            Some(cut) => {
                buffer.push_str(&cut);
                true
            }
        }
    }
}

/// The size bound and redaction of a broker.
#[derive(Debug, Clone)]
pub(crate) struct Intake {
    pub(crate) max_bytes: usize,
    pub(crate) redaction: Option<Redaction>,
}

impl Default for Intake {
    fn default() -> Intake {
        Intake {
            max_bytes: DEFAULT_MAX_RECORD_BYTES,
            redaction: None,
        }
    }
}

/// A `fmt::Write` into a message buffer that keeps at most `limit` bytes
/// (see the module docs). The common case, a chunk that fits, is one
/// compare and the push.
pub(crate) struct Bounded<'a> {
    buffer: &'a mut String,
    /// Bytes still allowed; 0 once a chunk was cut.
    room: usize,
    /// Bytes of the chunks seen that were not kept.
    dropped: usize,
    /// Whether formatting was stopped with chunks left.
    stopped: bool,
}

impl<'a> Bounded<'a> {
    pub(crate) fn new(buffer: &'a mut String, limit: usize) -> Bounded<'a> {
        let room = limit.saturating_sub(buffer.len());
        Bounded {
            buffer,
            room,
            dropped: 0,
            stopped: false,
        }
    }

    /// Appends the marker if anything was cut; returns whether it was.
    #[inline]
    pub(crate) fn finish(self) -> bool {
        self.finish_buffer().0
    }

    /// [`finish`](Bounded::finish), giving the buffer back too.
    #[inline]
    pub(crate) fn finish_buffer(self) -> (bool, &'a mut String) {
        if self.dropped == 0 {
            return (false, self.buffer);
        }
        mark(self.buffer, self.dropped, self.stopped);
        (true, self.buffer)
    }

    /// A chunk that does not fit: keep what does, or stop the formatting
    /// once something was cut.
    #[cold]
    fn overflow(&mut self, s: &str) -> fmt::Result {
        if self.dropped > 0 {
            self.stopped = true;
            return Err(fmt::Error);
        }
        let end = floor_char_boundary(s, self.room);
        self.buffer.push_str(&s[..end]);
        self.room = 0;
        // At least 1: the chunk was longer than the room.
        self.dropped = s.len() - end;
        Ok(())
    }
}

impl fmt::Write for Bounded<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.len() <= self.room {
            self.room -= s.len();
            self.buffer.push_str(s);
            Ok(())
        } else {
            self.overflow(s)
        }
    }
}

/// Most capacity the direct path's spill buffer keeps between calls.
const SPILL_CAPACITY: usize = 4096;

/// A direct log call's message (`broker/publish/`): formatted into the
/// stack while it fits a slot (`queue/slot.rs`) and the size bound, then,
/// a longer one, into the spill buffer within the bound ([`Bounded`]).
pub(crate) struct SlotText<'s> {
    stack: [u8; INLINE_TEXT],
    len: usize,
    /// The stack's limit: the slot's, or the size bound if smaller.
    limit: usize,
    max: usize,
    spill: Option<&'s mut String>,
    spilled: Option<Bounded<'s>>,
}

impl<'s> SlotText<'s> {
    pub(crate) fn new(max: usize, spill: &'s mut String) -> SlotText<'s> {
        SlotText {
            stack: [0; INLINE_TEXT],
            len: 0,
            limit: INLINE_TEXT.min(max),
            max,
            spill: Some(spill),
            spilled: None,
        }
    }

    /// The message, if it stayed in the stack.
    pub(crate) fn in_slot(&self) -> Option<&str> {
        if self.spilled.is_some() {
            return None;
        }
        Some(self.stacked())
    }

    /// The text in the stack.
    fn stacked(&self) -> &str {
        // SAFETY: `write_str` copies in only whole `&str`s, so the first
        // `len` bytes are UTF-8 (checking would cost as much as the copy).
        unsafe { std::str::from_utf8_unchecked(&self.stack[..self.len]) }
    }

    /// Moves the message into `buffer` (a record's message buffer);
    /// returns whether the bound cut it.
    pub(crate) fn finish(&mut self, buffer: &mut String) -> bool {
        match self.spilled.take() {
            Some(bounded) => {
                let (truncated, spill) = bounded.finish_buffer();
                // The record takes the message; its old buffer is kept.
                std::mem::swap(buffer, spill);
                spill.clear();
                if spill.capacity() > SPILL_CAPACITY {
                    *spill = String::new();
                }
                truncated
            }
            None => {
                buffer.push_str(self.stacked());
                false
            }
        }
    }

    /// A chunk that does not fit the stack: the message moves to the spill
    /// buffer, and formatting goes on there within the bound.
    #[cold]
    fn spill_over(&mut self, s: &str) -> fmt::Result {
        let Some(spill) = self.spill.take() else {
            return Err(fmt::Error);
        };
        spill.clear();
        spill.push_str(self.stacked());
        let mut bounded = Bounded::new(spill, self.max);
        let result = fmt::Write::write_str(&mut bounded, s);
        self.spilled = Some(bounded);
        result
    }
}

impl fmt::Write for SlotText<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(spilled) = &mut self.spilled {
            return spilled.write_str(s);
        }
        let end = self.len + s.len();
        if end > self.limit {
            return self.spill_over(s);
        }
        copy_small(&mut self.stack[self.len..end], s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// `dst.copy_from_slice(src)`, inline for up to 16 bytes (most of what
/// `format_args!` writes: literal pieces and numbers), where a `memcpy`
/// call costs more than the copy. `dst` and `src` have the same length.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    let n = src.len();
    // Two loads and two stores that overlap when `n` is under twice their
    // size; every index stays below `n`.
    macro_rules! halves {
        ($ty:ty, $size:expr) => {{
            let head = <$ty>::from_ne_bytes(src[..$size].try_into().unwrap_or([0; $size]));
            let tail = <$ty>::from_ne_bytes(src[n - $size..].try_into().unwrap_or([0; $size]));
            dst[..$size].copy_from_slice(&head.to_ne_bytes());
            dst[n - $size..].copy_from_slice(&tail.to_ne_bytes());
        }};
    }
    match n {
        8..=16 => halves!(u64, 8),
        4..=7 => halves!(u32, 4),
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        0 => {}
        _ => dst.copy_from_slice(src),
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut end = at.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Appends the truncation marker.
fn mark(buffer: &mut String, dropped: usize, stopped: bool) {
    use fmt::Write as _;
    let more = if stopped { "+" } else { "" };
    let _ = write!(buffer, "…[truncated {dropped}{more} bytes]");
}

/// `s` bounded to `limit` bytes as an owned string with the marker, or
/// `None` if it fits.
pub(crate) fn bound_str(s: &str, limit: usize) -> Option<String> {
    if s.len() <= limit {
        return None;
    }
    let end = floor_char_boundary(s, limit);
    let mut out = String::with_capacity(end + 32);
    out.push_str(&s[..end]);
    mark(&mut out, s.len() - end, false);
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// A secret member of a structured key-value is redacted at any
    /// depth, its key however escaped; the rest keeps its text and order.
    #[test]
    fn secret_members_of_a_structured_value_are_redacted_at_any_depth() {
        use logbus_appenders::{Json, Level, Topic};
        let json = |text: &str| Value::Json(Json::parse(text).unwrap());
        let record = Record::builder(Topic::new(Level::Info, "app"))
            .kv(
                "request",
                json(
                    r#"{"user":"bob","Password":"hunter2","nested":[{"token":{"a":[1,"}"]},"n":1}],"pass\u0077ord":"x","note":"password"}"#,
                ),
            )
            .kv("plain", json(r#"{"user":"bob","list":[1,2]}"#))
            .kv("cookie", json(r#"{"a":1}"#));
        let mut record = record.build();
        assert!(!Redaction::common().apply(&mut record, 1024));
        let values: Vec<String> = record
            .key_values()
            .iter()
            .map(|(_, v)| v.to_string())
            .collect();
        assert_eq!(
            values,
            [
                r#"{"user":"bob","Password":"[redacted]","nested":[{"token":"[redacted]","n":1}],"pass\u0077ord":"[redacted]","note":"password"}"#,
                r#"{"user":"bob","list":[1,2]}"#,
                "[redacted]",
            ]
        );
        // Still one valid JSON value.
        assert!(Json::parse(&values[0]).is_ok());
    }

    /// What writing `chunks` through a bound of `limit` must give: the
    /// text cut at the last char boundary within the bound, marked with the
    /// bytes the cut chunk lost (and `+` when a later chunk was refused).
    fn expected(chunks: &[String], limit: usize) -> (String, bool) {
        let whole: String = chunks.concat();
        if whole.len() <= limit {
            return (whole, false);
        }
        let kept = floor_char_boundary(&whole, limit);
        let mut end = 0;
        let mut cut_at = chunks.len();
        for (i, chunk) in chunks.iter().enumerate() {
            end += chunk.len();
            if end > limit {
                cut_at = i;
                break;
            }
        }
        let more = chunks[cut_at + 1..].iter().any(|c| !c.is_empty());
        let mut text = whole[..kept].to_owned();
        mark(&mut text, end - kept, more);
        (text, true)
    }

    proptest::proptest! {
        /// `Bounded`, and `SlotText` (the stack, then the spill through
        /// `Bounded`), give that for any UTF-8 in any chunks at any bound,
        /// and `SlotText` keeps in its slot exactly what fits it.
        #[test]
        fn any_chunks_are_cut_alike_at_a_char_boundary(
            chunks in proptest::collection::vec(".{0,12}", 0..8),
            limit in 0usize..80,
        ) {
            let (text, cut) = expected(&chunks, limit);
            let mut buffer = String::new();
            let mut bounded = Bounded::new(&mut buffer, limit);
            for chunk in &chunks {
                if bounded.write_str(chunk).is_err() {
                    break;
                }
            }
            proptest::prop_assert_eq!(bounded.finish(), cut);
            proptest::prop_assert_eq!(&buffer, &text);

            let mut spill = String::new();
            let mut slot = SlotText::new(limit, &mut spill);
            for chunk in &chunks {
                if slot.write_str(chunk).is_err() {
                    break;
                }
            }
            let whole: String = chunks.concat();
            let fits_slot = whole.len() <= INLINE_TEXT.min(limit);
            proptest::prop_assert_eq!(slot.in_slot(), fits_slot.then_some(whole.as_str()));
            let mut message = String::new();
            proptest::prop_assert_eq!(slot.finish(&mut message), cut);
            proptest::prop_assert_eq!(&message, &text);
        }
    }

    #[test]
    fn small_copies_copy_every_byte_at_every_length() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=src.len() {
            let mut dst = [0u8; 40];
            copy_small(&mut dst[..n], &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0),
                "length {n} wrote past its end"
            );
        }
    }

    #[test]
    fn a_long_chunk_is_cut_at_a_char_boundary_and_measured() {
        let mut buffer = String::new();
        let mut bounded = Bounded::new(&mut buffer, 5);
        // "é" is two bytes: the cut backs off to a boundary.
        let text = "abcdé and more";
        write!(bounded, "{text}").unwrap();
        assert!(bounded.finish());
        assert_eq!(buffer, "abcd…[truncated 11 bytes]");
    }

    #[test]
    fn formatting_stops_at_the_first_chunk_after_the_bound() {
        let mut buffer = String::new();
        let mut bounded = Bounded::new(&mut buffer, 4);
        let (a, b, c) = ("abc", "defg", "hij");
        let result = write!(bounded, "{a}{b}{c}");
        assert!(result.is_err(), "stopped");
        assert!(bounded.finish());
        assert_eq!(buffer, "abcd…[truncated 3+ bytes]");
    }

    #[test]
    fn what_fits_is_untouched() {
        let mut buffer = String::new();
        let mut bounded = Bounded::new(&mut buffer, 10);
        let (n, t) = (12, "ab");
        write!(bounded, "{n}-{t}").unwrap();
        assert!(!bounded.finish());
        assert_eq!(buffer, "12-ab");
        assert_eq!(bound_str("short", 10), None);
        assert_eq!(
            bound_str("ééé", 3).as_deref(),
            Some("é…[truncated 4 bytes]")
        );
    }
}
