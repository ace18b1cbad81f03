//! Writing one record's JSON object as its [`JsonSchema`] says: the tree
//! walked member by member into the render buffer. Strings and numbers go
//! through serde_json, so the object is valid JSON whatever the record
//! holds; [`Value::Json`] is already valid, compact JSON and is copied.

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::layout::Timestamp;
use crate::record::{Record, Value};

use super::schema::{
    FieldKind, JsonField, JsonSchema, LevelKind, Node, Object, Source, TimestampKind, Unknown,
};

/// What writing a record needs besides the schema: the timestamp renderers
/// (each keeps a per-second cache) and scratch buffers, reused.
#[derive(Debug)]
pub(super) struct Scratch {
    pub(super) utc: Timestamp,
    pub(super) local: Timestamp,
    pub(super) text: Vec<u8>,
    pub(super) key: String,
    pub(super) written: Written,
}

/// The keys the spread key-values of one record were written under, so
/// that no two share one; the strings are kept from record to record.
#[derive(Debug, Default)]
pub(super) struct Written {
    keys: Vec<String>,
    /// How many of `keys` belong to this record.
    len: usize,
}

impl Written {
    fn clear(&mut self) {
        self.len = 0;
    }

    fn contains(&self, key: &str) -> bool {
        self.keys[..self.len].iter().any(|k| k == key)
    }

    fn push(&mut self, key: &str) {
        match self.keys.get_mut(self.len) {
            Some(kept) => {
                kept.clear();
                kept.push_str(key);
            }
            None => self.keys.push(key.to_owned()),
        }
        self.len += 1;
    }
}

type Result = std::result::Result<(), serde_json::Error>;

/// Appends `record`'s object to `out`.
pub(super) fn object(
    schema: &JsonSchema,
    record: &Record,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) -> Result {
    write_object(schema, &schema.root, record, scratch, out).map(|_| ())
}

/// Appends `{...}`; returns whether any member was written.
fn write_object(
    schema: &JsonSchema,
    object: &Object,
    record: &Record,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) -> std::result::Result<bool, serde_json::Error> {
    out.push(b'{');
    let mut first = true;
    for node in &object.members {
        match node {
            Node::Leaf(key, source) => {
                if schema.unknown == Unknown::Omit && is_unknown(source, record) {
                    continue;
                }
                separate(out, &mut first);
                string(out, key)?;
                out.push(b':');
                match source {
                    Source::Field(field) => write_field(*field, record, scratch, out)?,
                    Source::Constant(value) => write_value(value, out)?,
                }
            }
            Node::Object(key, inner) => {
                let mark = out.len();
                let was_first = first;
                separate(out, &mut first);
                string(out, key)?;
                out.push(b':');
                if !write_object(schema, inner, record, scratch, out)? {
                    // Every member was unknown and left out: so is the object.
                    out.truncate(mark);
                    first = was_first;
                }
            }
            Node::FlatKv => {
                // One `FlatKv` per schema: `written` is this object's.
                scratch.written.clear();
                for (key, value) in record.key_values() {
                    separate(out, &mut first);
                    free_key(
                        &object.taken,
                        &mut scratch.written,
                        &schema.prefix,
                        key,
                        &mut scratch.key,
                    );
                    string(out, &scratch.key)?;
                    out.push(b':');
                    write_value(value, out)?;
                }
            }
        }
    }
    out.push(b'}');
    Ok(!first)
}

fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
}

/// `key`, with `prefix` put before it until it is neither in `taken` nor
/// in `written`, into `buf`; then noted in `written`.
fn free_key(taken: &[Box<str>], written: &mut Written, prefix: &str, key: &str, buf: &mut String) {
    buf.clear();
    buf.push_str(key);
    while taken.binary_search_by(|k| (**k).cmp(buf.as_str())).is_ok() || written.contains(buf) {
        buf.insert_str(0, prefix);
    }
    written.push(buf);
}

fn is_unknown(source: &Source, record: &Record) -> bool {
    match source {
        Source::Field(field) => match field.kind {
            FieldKind::Thread => record.thread().name.is_none(),
            FieldKind::Module => record.module_path().is_none(),
            FieldKind::File => record.file().is_none(),
            FieldKind::Line => record.line().is_none(),
            _ => false,
        },
        Source::Constant(_) => false,
    }
}

fn string(out: &mut Vec<u8>, text: &str) -> Result {
    serde_json::to_writer(&mut *out, text)
}

/// An integer, in quotes when the field asks for a string.
fn integer(out: &mut Vec<u8>, value: i128, quoted: bool) {
    // Writing into a `Vec<u8>` cannot fail.
    if quoted {
        let _ = write!(out, "\"{value}\"");
    } else {
        let _ = write!(out, "{value}");
    }
}

fn write_field(
    field: JsonField,
    record: &Record,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) -> Result {
    let quoted = field.quoted;
    match field.kind {
        FieldKind::Ts(format) => {
            let kind = format.map_or(TimestampKind::Rfc3339Utc, |f| f.0);
            write_time(kind, record.time(), quoted, scratch, out);
        }
        FieldKind::Level(format) => {
            let kind = format.map_or(LevelKind::Upper, |f| f.0);
            write_level(kind, record.level(), quoted, out)?;
        }
        FieldKind::Target => string(out, record.target())?,
        FieldKind::Topic => string(out, record.topic().as_str())?,
        FieldKind::Seq => integer(out, i128::from(record.seq()), quoted),
        FieldKind::Msg => string(out, record.message())?,
        FieldKind::Thread => {
            let thread = record.thread();
            match thread.name {
                Some(name) => string(out, name)?,
                None => integer(out, i128::from(thread.id), true),
            }
        }
        FieldKind::ThreadId => integer(out, i128::from(record.thread().id), quoted),
        FieldKind::Module => optional_string(out, record.module_path())?,
        FieldKind::File => optional_string(out, record.file())?,
        FieldKind::Line => match record.line() {
            Some(line) => integer(out, i128::from(line), quoted),
            None => out.extend_from_slice(b"null"),
        },
        FieldKind::Kv => {
            out.push(b'{');
            let mut first = true;
            for (key, value) in record.key_values() {
                separate(out, &mut first);
                string(out, key)?;
                out.push(b':');
                write_value(value, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn optional_string(out: &mut Vec<u8>, text: Option<&str>) -> Result {
    match text {
        Some(text) => string(out, text),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }
}

fn write_level(kind: LevelKind, level: log::Level, quoted: bool, out: &mut Vec<u8>) -> Result {
    use log::Level::{Debug, Error, Info, Trace, Warn};
    let name = match (kind, level) {
        (LevelKind::Upper, _) => level.as_str(),
        (LevelKind::Lower, _) => crate::record::level_name(level),
        (LevelKind::GoogleCloud, Error) => "ERROR",
        (LevelKind::GoogleCloud, Warn) => "WARNING",
        (LevelKind::GoogleCloud, Info) => "INFO",
        (LevelKind::GoogleCloud, Debug | Trace) => "DEBUG",
        (LevelKind::OtelNumber, _) => {
            let number = match level {
                Trace => 1,
                Debug => 5,
                Info => 9,
                Warn => 13,
                Error => 17,
            };
            integer(out, number, quoted);
            return Ok(());
        }
    };
    string(out, name)
}

fn write_time(
    kind: TimestampKind,
    time: SystemTime,
    quoted: bool,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let rfc3339 = match kind {
        TimestampKind::Rfc3339Utc => &mut scratch.utc,
        TimestampKind::Rfc3339Local => &mut scratch.local,
        TimestampKind::UnixNanos => return integer(out, unix_nanos(time), quoted),
        TimestampKind::UnixNanosString => return integer(out, unix_nanos(time), true),
        TimestampKind::UnixMillis => {
            return integer(out, unix_nanos(time).div_euclid(1_000_000), quoted)
        }
    };
    scratch.text.clear();
    rfc3339.render(time, &mut scratch.text);
    // RFC 3339 text is ASCII digits and punctuation: nothing to escape.
    out.push(b'"');
    out.extend_from_slice(&scratch.text);
    out.push(b'"');
}

/// Nanoseconds since the epoch, negative before it.
fn unix_nanos(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// A key-value's or a constant's value, with its type.
fn write_value(value: &Value, out: &mut Vec<u8>) -> Result {
    match value {
        Value::Str(s) => string(out, s)?,
        Value::I64(v) => integer(out, i128::from(*v), false),
        Value::U64(v) => integer(out, i128::from(*v), false),
        // serde_json writes a non-finite float as `null`.
        Value::F64(v) => serde_json::to_writer(&mut *out, v)?,
        Value::Bool(v) => out.extend_from_slice(if *v { b"true" } else { b"false" }),
        Value::Null => out.extend_from_slice(b"null"),
        // Valid and compact by construction (`Json`'s constructors).
        Value::Json(json) => out.extend_from_slice(json.as_str().as_bytes()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_key_gets_the_prefix_until_it_is_free() {
        let taken: Vec<Box<str>> = vec!["kv.msg".into(), "msg".into()];
        let mut written = Written::default();
        let mut buf = String::new();
        free_key(&taken, &mut written, "kv.", "msg", &mut buf);
        assert_eq!(buf, "kv.kv.msg");
        free_key(&taken, &mut written, "kv.", "other", &mut buf);
        assert_eq!(buf, "other");
    }

    #[test]
    fn a_key_already_written_for_the_record_is_taken_too() {
        let taken: Vec<Box<str>> = vec!["message".into()];
        let mut written = Written::default();
        let mut buf = String::new();
        let mut keys = Vec::new();
        for key in ["message", "kv.message", "a", "a", "kv.a"] {
            free_key(&taken, &mut written, "kv.", key, &mut buf);
            keys.push(buf.clone());
        }
        assert_eq!(
            keys,
            ["kv.message", "kv.kv.message", "a", "kv.a", "kv.kv.a"]
        );
        // The next record starts afresh, reusing the strings.
        written.clear();
        free_key(&taken, &mut written, "kv.", "a", &mut buf);
        assert_eq!(buf, "a");
        assert_eq!(written.keys.len(), 5);
    }

    #[test]
    fn unix_times_before_the_epoch_are_negative() {
        let before = UNIX_EPOCH - std::time::Duration::new(1, 500_000_000);
        assert_eq!(unix_nanos(before), -1_500_000_000);
        assert_eq!(unix_nanos(before).div_euclid(1_000_000), -1_500);
    }
}
