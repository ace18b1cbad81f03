//! The `serde` feature: a structured key-value value captured as JSON on
//! the caller's thread, within the record's size bound (see
//! [`super::structured_value`]).

use std::cell::Cell;
use std::fmt;
use std::io;

use serde::ser::{self, Impossible, Serialize, Serializer};

use crate::record::{Json, Value};

/// See [`super::structured_value`].
pub(super) fn structured_value(
    value: &log::kv::Value<'_>,
    max: usize,
    truncated: &mut bool,
) -> Option<Value> {
    let found = Cell::new(Found::Text);
    // The probe's answer is in `found`: the error itself does not survive
    // value-bag's type-erased serialisation.
    let _ = value.serialize(Probe(&found));
    if found.get() != Found::Structured {
        return None;
    }
    let mut out = Bounded {
        buf: Vec::new(),
        room: max,
        dropped: 0,
        stopped: false,
    };
    let result = serde_json::to_writer(&mut out, value);
    if out.dropped > 0 {
        // The cut JSON is no JSON: kept as text, marked as `sanitize.rs`
        // in the `logbus` crate marks a bounded string.
        *truncated = true;
        let mut text = String::from_utf8(out.buf).ok()?;
        let more = if out.stopped { "+" } else { "" };
        // Writing into a `String` cannot fail.
        let _ = fmt::Write::write_fmt(
            &mut text,
            format_args!("…[truncated {}{more} bytes]", out.dropped),
        );
        return Some(Value::Str(text.into()));
    }
    // A value serde_json cannot write (a map with keys that are not
    // strings, a failing `Serialize`): the caller keeps its text.
    result.ok()?;
    let text = String::from_utf8(out.buf).ok()?;
    // serde_json writes a `RawValue` (feature `raw_value`) as it is:
    // checked and compacted as `Json::parse` does; not JSON, the caller
    // keeps its text.
    let json = Json::checked(text).ok()?;
    Some(match json.as_str().as_bytes().first() {
        Some(b'[' | b'{') => Value::Json(json),
        _ => scalar(json.as_str())?,
    })
}

/// A scalar's JSON text as the value with its type.
fn scalar(text: &str) -> Option<Value> {
    Some(match text {
        "null" => Value::Null,
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ if text.starts_with('"') => Value::Str(serde_json::from_str::<String>(text).ok()?.into()),
        _ => {
            if let Ok(v) = text.parse::<u64>() {
                Value::U64(v)
            } else if let Ok(v) = text.parse::<i64>() {
                Value::I64(v)
            } else {
                // A number serde_json wrote: a float, or an integer past 64 bits.
                Value::F64(text.parse::<f64>().ok()?)
            }
        }
    })
}

/// An `io::Write` that keeps at most `room` bytes: the write that does not
/// fit is kept up to the room (at a character boundary) and measured, the
/// next one stops the serialisation.
struct Bounded {
    buf: Vec<u8>,
    room: usize,
    /// Bytes written and not kept.
    dropped: usize,
    /// Whether the serialisation was stopped with writes left.
    stopped: bool,
}

impl io::Write for Bounded {
    fn write(&mut self, chunk: &[u8]) -> io::Result<usize> {
        if chunk.len() <= self.room {
            self.room -= chunk.len();
            self.buf.extend_from_slice(chunk);
            return Ok(chunk.len());
        }
        if self.dropped > 0 {
            self.stopped = true;
            return Err(io::Error::new(io::ErrorKind::WriteZero, "bound reached"));
        }
        // serde_json writes whole `str` pieces; keep a prefix that ends on
        // a character boundary.
        let mut end = self.room;
        while end > 0 && std::str::from_utf8(&chunk[..end]).is_err() {
            end -= 1;
        }
        self.buf.extend_from_slice(&chunk[..end]);
        self.room = 0;
        // At least 1: the chunk was longer than the room.
        self.dropped = chunk.len() - end;
        Ok(chunk.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What [`Probe`] found at the top of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// A sequence, map, struct, tuple, newtype, enum variant, bytes.
    Structured,
    /// A scalar or text (`Debug`, `Display` and errors are serialised with
    /// `collect_str`, which the probe answers without formatting).
    Text,
}

/// The error that stops a [`Probe`] at a structured value's first call.
#[derive(Debug)]
struct Probed;

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Probed {}

impl ser::Error for Probed {
    fn custom<T: fmt::Display>(_: T) -> Probed {
        Probed
    }
}

/// A serializer that notes at the first call what kind of value it was
/// given: one dynamic call, no formatting, no allocation. A scalar or a
/// text is answered `Ok`; anything structured stops it with [`Probed`]
/// (the value is then serialised as JSON, which allocates anyway).
struct Probe<'a>(&'a Cell<Found>);

impl Probe<'_> {
    fn found<T>(self, found: Found) -> Result<T, Probed> {
        self.0.set(found);
        Err(Probed)
    }

    /// A scalar or a text: noted, and `Ok`, not an error, which the type
    /// erasing between `log`'s value and this probe would box (three
    /// allocations a key-value, `tests/allocations.rs`).
    fn text(self) -> Result<(), Probed> {
        self.0.set(Found::Text);
        Ok(())
    }
}

macro_rules! text {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Probed> {
            self.text()
        })*
    };
}

impl Serializer for Probe<'_> {
    type Ok = ();
    type Error = Probed;
    type SerializeSeq = Impossible<(), Probed>;
    type SerializeTuple = Impossible<(), Probed>;
    type SerializeTupleStruct = Impossible<(), Probed>;
    type SerializeTupleVariant = Impossible<(), Probed>;
    type SerializeMap = Impossible<(), Probed>;
    type SerializeStruct = Impossible<(), Probed>;
    type SerializeStructVariant = Impossible<(), Probed>;

    text!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_none(),
        serialize_unit(),
    );

    fn collect_str<T: fmt::Display + ?Sized>(self, _: &T) -> Result<(), Probed> {
        self.text()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Probed> {
        value.serialize(self)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), Probed> {
        self.found(Found::Structured)
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Probed> {
        self.found(Found::Structured)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Probed> {
        self.found(Found::Structured)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Probed> {
        self.found(Found::Structured)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Probed> {
        self.found(Found::Structured)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Probed> {
        self.found(Found::Structured)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Probed> {
        self.found(Found::Structured)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn capture(value: log::kv::Value<'_>, max: usize) -> (Option<Value>, bool) {
        let mut truncated = false;
        (structured_value(&value, max, &mut truncated), truncated)
    }

    #[test]
    fn a_sequence_and_a_map_become_json() {
        let list = vec![1, 2, 3];
        assert_eq!(
            capture(log::kv::Value::from_serde(&list), 100),
            (Some(Value::Json(Json::parse("[1,2,3]").unwrap())), false)
        );
        let map = BTreeMap::from([("a", vec!["x"]), ("b", vec![])]);
        assert_eq!(
            capture(log::kv::Value::from_serde(&map), 100).0,
            Some(Value::Json(Json::parse(r#"{"a":["x"],"b":[]}"#).unwrap()))
        );
    }

    #[test]
    fn debug_and_display_values_are_left_to_the_caller() {
        let list = vec![1, 2, 3];
        assert_eq!(
            capture(log::kv::Value::from_debug(&list), 100),
            (None, false)
        );
        assert_eq!(
            capture(log::kv::Value::from_display(&"x"), 100),
            (None, false)
        );
    }

    #[test]
    fn a_huge_value_is_cut_at_the_bound_and_reported() {
        let list: Vec<u32> = (0..100_000).collect();
        let (value, truncated) = capture(log::kv::Value::from_serde(&list), 16);
        assert!(truncated);
        assert_eq!(
            value,
            Some(Value::from("[0,1,2,3,4,5,6,7…[truncated 1+ bytes]"))
        );
    }

    #[test]
    fn a_cut_keeps_whole_characters() {
        let list = vec!["ééé"];
        let (value, truncated) = capture(log::kv::Value::from_serde(&list), 5);
        assert!(truncated);
        // `["` then 1.5 characters of room: one `é` kept; `"]` never written.
        assert_eq!(value, Some(Value::from("[\"é…[truncated 4+ bytes]")));
    }

    #[test]
    fn scalars_in_structure_keep_their_type() {
        #[derive(Debug)]
        struct Id(u64);
        impl Serialize for Id {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct("Id", &self.0)
            }
        }
        assert_eq!(
            capture(log::kv::Value::from_serde(&Id(7)), 100).0,
            Some(Value::U64(7))
        );
        struct Unit;
        impl Serialize for Unit {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_unit_variant("E", 0, "Red")
            }
        }
        assert_eq!(
            capture(log::kv::Value::from_serde(&Unit), 100).0,
            Some(Value::from("Red"))
        );
    }

    #[test]
    fn a_raw_value_is_checked_and_compacted() {
        // serde_json writes a `RawValue` as it is: here over two lines.
        let raw =
            serde_json::value::RawValue::from_string("[1,\n 2, {\"a\": \"b c\"}]".into()).unwrap();
        assert_eq!(
            capture(log::kv::Value::from_serde(&raw), 100),
            (
                Some(Value::Json(Json::parse(r#"[1,2,{"a":"b c"}]"#).unwrap())),
                false
            )
        );
        let raw = serde_json::value::RawValue::from_string(" \"x\" ".into()).unwrap();
        assert_eq!(
            capture(log::kv::Value::from_serde(&vec![raw]), 100).0,
            Some(Value::Json(Json::parse(r#"["x"]"#).unwrap()))
        );
    }

    /// Serialises as serde_json's raw value marker: `text` is written as it
    /// is, JSON or not.
    struct Forged(&'static str);

    impl Serialize for Forged {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct as _;
            const TOKEN: &str = "$serde_json::private::RawValue";
            let mut raw = s.serialize_struct(TOKEN, 1)?;
            raw.serialize_field(TOKEN, self.0)?;
            raw.end()
        }
    }

    #[test]
    fn a_raw_value_that_is_not_json_is_left_to_the_caller() {
        for text in ["[1]\n{\"forged\":true}", "[1", "nope", "1e400"] {
            assert_eq!(
                capture(log::kv::Value::from_serde(&Forged(text)), 100),
                (None, false),
                "{text}"
            );
        }
        // `RawValue::from_string` skips escapes: a lone surrogate gets in.
        let raw = serde_json::value::RawValue::from_string(r#"["\ud800"]"#.into()).unwrap();
        assert_eq!(
            capture(log::kv::Value::from_serde(&raw), 100),
            (None, false)
        );
    }

    #[test]
    fn a_raw_value_past_the_bound_is_still_cut_and_reported() {
        let raw = serde_json::value::RawValue::from_string("[1,\n2,\n3,\n4]".into()).unwrap();
        let (value, truncated) = capture(log::kv::Value::from_serde(&raw), 4);
        assert!(truncated);
        assert_eq!(value, Some(Value::from("[1,\n…[truncated 8 bytes]")));
    }

    #[test]
    fn a_map_with_non_string_keys_is_left_to_the_caller() {
        let map = BTreeMap::from([((1, 2), 3)]);
        assert_eq!(
            capture(log::kv::Value::from_serde(&map), 100),
            (None, false)
        );
    }
}
