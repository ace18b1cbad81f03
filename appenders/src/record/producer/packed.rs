//! Key-values packed as bytes, for a lane's slot (`src/queue/slot.rs` in
//! the logbus crate): the caller packs the key-values of a plain `log`
//! call after its message ([`KvPacker`]), and the worker unpacks them into
//! the record it rebuilds ([`unpack_into`]), typed as the usual path types
//! them. Only the value kinds that need no user code to capture (a number,
//! a boolean, a string, none) are packed; a key-value of any other kind
//! (`Display`, `Debug`, structured) keeps its record on the usual path.
//!
//! Each key-value: the key's length (one byte) and bytes, a tag byte (the
//! kind in its low three bits, a count in the next four), then the value:
//! nothing ([`NULL`], [`FALSE`], [`TRUE`]); an integer in groups of seven
//! bits, lowest first, up to its highest non-zero group, their count in
//! the tag ([`U64`], and [`I64`] zigzagged, so that a small negative
//! number is short too; [`F64`]: the float's bits); or a length byte and
//! the bytes ([`STR`]). A slot holds at most 56 bytes of text; a length is
//! one byte, at most [`MAX_LEN`]. Every byte but a key's or a text's is
//! below 0x80, ASCII, so the packed bytes are UTF-8 as a whole: the worker checks
//! them once, not each key and text (which `forbid(unsafe_code)` would
//! otherwise make it do).

use super::super::{Record, Value};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const U64: u8 = 3;
const I64: u8 = 4;
const F64: u8 = 5;
const STR: u8 = 6;

/// The longest key or text a key-value packs: its length byte stays ASCII.
const MAX_LEN: usize = 127;

/// The most groups of seven bits a 64-bit integer takes.
const MAX_GROUPS: usize = 10;

/// A value as a slot can carry it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Packable<'a> {
    /// None (`Value::Null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float.
    F64(f64),
    /// A string (copied).
    Str(&'a str),
}

/// Packs key-values into `buf`, up to its length.
#[derive(Debug)]
pub struct KvPacker<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> KvPacker<'b> {
    /// A packer filling `buf` from its start.
    #[must_use]
    pub fn new(buf: &'b mut [u8]) -> KvPacker<'b> {
        KvPacker { buf, len: 0 }
    }

    /// Packs `key` and `value`; `false`, packing nothing, if they do not
    /// fit what is left.
    pub fn pack(&mut self, key: &str, value: Packable<'_>) -> bool {
        // The value's tag and its bytes but a text's: at most a tag and
        // ten groups.
        let mut head = [0; 11];
        let (head_len, text) = match value {
            Packable::Null => (put_tag(&mut head, NULL), &[][..]),
            Packable::Bool(false) => (put_tag(&mut head, FALSE), &[][..]),
            Packable::Bool(true) => (put_tag(&mut head, TRUE), &[][..]),
            Packable::U64(v) => (put_int(&mut head, U64, v), &[][..]),
            // Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...
            Packable::I64(v) => (put_int(&mut head, I64, (v << 1 ^ v >> 63) as u64), &[][..]),
            Packable::F64(v) => (put_int(&mut head, F64, v.to_bits()), &[][..]),
            Packable::Str(s) => {
                if s.len() > MAX_LEN {
                    return false;
                }
                head[..2].copy_from_slice(&[STR, s.len() as u8]);
                (2, s.as_bytes())
            }
        };
        if key.len() > MAX_LEN {
            return false;
        }
        let key_len = key.len() as u8;
        let (key, head) = (key.as_bytes(), &head[..head_len]);
        let end = self.len + 1 + key.len() + head.len() + text.len();
        let Some(place) = self.buf.get_mut(self.len..end) else {
            return false;
        };
        let (first, rest) = place.split_at_mut(1 + key.len());
        first[0] = key_len;
        first[1..].copy_from_slice(key);
        let (middle, last) = rest.split_at_mut(head.len());
        middle.copy_from_slice(head);
        last.copy_from_slice(text);
        self.len = end;
        true
    }

    /// How many bytes are packed so far: a mark to [`rewind`](KvPacker::rewind) to.
    #[must_use]
    pub fn mark(&self) -> usize {
        self.len
    }

    /// Forgets what was packed after `mark` (a key-value packed, then found
    /// not to be one a slot carries after all).
    pub fn rewind(&mut self, mark: usize) {
        self.len = self.len.min(mark);
    }

    /// The key-values packed so far.
    #[must_use]
    pub fn packed(&self) -> Packed<'_> {
        Packed(&self.buf[..self.len])
    }
}

/// Key-values a [`KvPacker`] packed, as bytes (what a lane's slot
/// carries). Bytes of another origin are not trusted: what is not UTF-8
/// as a whole, or a malformed key-value, unpacks as nothing from there on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packed<'a>(&'a [u8]);

impl<'a> Packed<'a> {
    /// The packed bytes.
    #[must_use]
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Packed key-values as bytes, copied from [`bytes`](Packed::bytes).
    #[must_use]
    pub fn from_bytes(bytes: &'a [u8]) -> Packed<'a> {
        Packed(bytes)
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Writes a value's tag without bytes: its length, 1.
fn put_tag(head: &mut [u8; 11], kind: u8) -> usize {
    head[0] = kind;
    1
}

/// Writes integer `value`'s tag (`kind` and its count of groups) and its
/// groups of seven bits, lowest first, up to the highest non-zero one;
/// returns their length.
fn put_int(head: &mut [u8; 11], kind: u8, value: u64) -> usize {
    let count = (64 - value.leading_zeros()).div_ceil(7) as usize;
    head[0] = kind | (count as u8) << 3;
    for (i, group) in head[1..=count].iter_mut().enumerate() {
        *group = (value >> (7 * i) & 0x7f) as u8;
    }
    1 + count
}

/// The key-value at `*at` of `text` (packed key-values, checked to be
/// UTF-8), moving `at` past it; `None` at the end (or, which [`KvPacker`]
/// never writes, at a malformed key-value).
#[inline]
fn next<'t>(text: &'t str, at: &mut usize) -> Option<(&'t str, Packable<'t>)> {
    let bytes = text.as_bytes();
    // A key's or a text's bounds fall between whole characters: the bytes
    // around them are ASCII (`get` checks it all the same).
    let string = |at: &mut usize| -> Option<&'t str> {
        let len = usize::from(*bytes.get(*at)?);
        let string = text.get(*at + 1..*at + 1 + len)?;
        *at += 1 + len;
        Some(string)
    };
    let key = string(at)?;
    let tag = *bytes.get(*at)?;
    *at += 1;
    let count = usize::from(tag >> 3);
    if count > MAX_GROUPS {
        return None;
    }
    let int = |at: &mut usize| -> Option<u64> {
        let groups = bytes.get(*at..*at + count)?;
        *at += count;
        Some(
            groups
                .iter()
                .enumerate()
                .fold(0, |value, (i, &group)| value | u64::from(group) << (7 * i)),
        )
    };
    let value = match tag & 0b111 {
        NULL => Packable::Null,
        FALSE => Packable::Bool(false),
        TRUE => Packable::Bool(true),
        U64 => Packable::U64(int(at)?),
        I64 => {
            let zigzag = int(at)?;
            Packable::I64((zigzag >> 1) as i64 ^ -((zigzag & 1) as i64))
        }
        F64 => Packable::F64(f64::from_bits(int(at)?)),
        STR => Packable::Str(string(at)?),
        _ => return None,
    };
    Some((key, value))
}

/// The packed key-values, in order.
#[inline]
fn unpacked(packed: Packed<'_>) -> impl Iterator<Item = (&str, Packable<'_>)> {
    // One check for every key and text (see the module docs).
    let text = std::str::from_utf8(packed.0).unwrap_or_default();
    let mut at = 0;
    std::iter::from_fn(move || next(text, &mut at))
}

/// What the packed key-values add to [`Record::approx_size`], as the
/// record they are unpacked into counts them.
#[must_use]
pub fn packed_size(packed: Packed<'_>) -> usize {
    unpacked(packed)
        .map(|(key, value)| {
            key.len()
                + match value {
                    Packable::Str(s) => s.len(),
                    _ => 8,
                }
        })
        .sum()
}

/// Appends the packed key-values to `record`'s, their strings copied into
/// the record's spare ones (no allocation while they have room).
pub(super) fn unpack_into(record: &mut Record, packed: Packed<'_>) {
    for (key, value) in unpacked(packed) {
        let (value, text) = match value {
            Packable::Null => (Value::Null, None),
            Packable::Bool(v) => (Value::Bool(v), None),
            Packable::U64(v) => (Value::U64(v), None),
            Packable::I64(v) => (Value::I64(v), None),
            Packable::F64(v) => (Value::F64(v), None),
            Packable::Str(s) => (Value::Null, Some(s)),
        };
        record.kv.push_copied(key, value, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_key_values_unpack_as_they_went_in() {
        let values = [
            Packable::Null,
            Packable::Bool(false),
            Packable::Bool(true),
            Packable::U64(u64::MAX),
            Packable::U64(0),
            Packable::U64(255),
            Packable::U64(256),
            Packable::I64(-7),
            Packable::I64(i64::MIN),
            Packable::I64(i64::MAX),
            Packable::I64(0),
            Packable::F64(0.25),
            Packable::F64(f64::NEG_INFINITY),
            Packable::Str("alice"),
            Packable::Str(""),
        ];
        let mut buf = [0; 256];
        let mut packer = KvPacker::new(&mut buf);
        for (i, value) in values.iter().enumerate() {
            assert!(packer.pack(&format!("k{i}"), *value));
        }
        let back: Vec<_> = unpacked(packer.packed()).collect();
        let keys: Vec<String> = (0..values.len()).map(|i| format!("k{i}")).collect();
        let expected: Vec<_> = keys.iter().map(String::as_str).zip(values).collect();
        assert_eq!(back, expected);
        // Small numbers are short: a key of 2 bytes, its length, the tag,
        // and one byte of value.
        let mut packer = KvPacker::new(&mut buf);
        assert!(packer.pack("us", Packable::U64(17)));
        assert!(packer.pack("dx", Packable::I64(-3)));
        assert_eq!(packer.packed().bytes().len(), 2 * 5);
    }

    #[test]
    fn a_key_value_that_does_not_fit_is_not_packed() {
        let mut buf = [0; 16];
        let mut packer = KvPacker::new(&mut buf);
        assert!(packer.pack("id", Packable::U64(1 << 40))); // 1 + 2 + 1 + 6 bytes
        assert!(packer.pack("k", Packable::Bool(true))); // 3 more
        assert!(!packer.pack("s", Packable::Str("abc")), "6 bytes, 3 left");
        assert_eq!(packer.packed().bytes().len(), 13, "nothing of it packed");
        assert_eq!(unpacked(packer.packed()).count(), 2);
        let mark = packer.mark();
        packer.rewind(10);
        assert_eq!(unpacked(packer.packed()).count(), 1, "rewound to the first");
        assert!(mark > packer.mark());
        let long = "x".repeat(MAX_LEN + 1);
        let mut buf = [0; 1024];
        let mut packer = KvPacker::new(&mut buf);
        assert!(
            !packer.pack(&long, Packable::Null),
            "a length byte stays ASCII"
        );
        assert!(!packer.pack("k", Packable::Str(&long)));
        assert!(packer.packed().is_empty());
        assert!(packer.pack(&long[1..], Packable::Str(&long[1..])));
        assert_eq!(unpacked(packer.packed()).count(), 1);
    }

    /// Every byte but a key's or a text's is ASCII: the packed bytes are
    /// UTF-8 whatever the numbers, and a text with multi-byte characters
    /// comes back whole.
    #[test]
    fn packed_bytes_are_utf8_and_bytes_of_another_origin_unpack_as_nothing() {
        let mut buf = [0; 128];
        let mut packer = KvPacker::new(&mut buf);
        assert!(packer.pack("ключ", Packable::Str("значение ✓")));
        assert!(packer.pack("f", Packable::F64(-0.1)));
        assert!(packer.pack("u", Packable::U64(u64::MAX)));
        assert!(std::str::from_utf8(packer.packed().bytes()).is_ok());
        let back: Vec<_> = unpacked(packer.packed()).collect();
        assert_eq!(back[0], ("ключ", Packable::Str("значение ✓")));
        assert_eq!(back[1], ("f", Packable::F64(-0.1)));
        assert_eq!(back[2], ("u", Packable::U64(u64::MAX)));
        let mut bytes = packer.packed().bytes().to_vec();
        bytes[2] = 0xff;
        assert_eq!(unpacked(Packed::from_bytes(&bytes)).count(), 0, "not UTF-8");
        // A tag claiming more groups than an integer has.
        let bad = [
            1,
            b'k',
            U64 | 15 << 3,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
            1,
        ];
        assert_eq!(unpacked(Packed::from_bytes(&bad)).count(), 0);
        let cut = &packer.packed().bytes()[..5];
        assert_eq!(
            unpacked(Packed::from_bytes(cut)).count(),
            0,
            "a key cut short"
        );
    }

    #[test]
    fn the_packed_size_is_what_the_unpacked_record_counts() {
        use crate::record::Topic;
        use crate::Level;
        let mut buf = [0; 64];
        let mut packer = KvPacker::new(&mut buf);
        assert!(packer.pack("user", Packable::Str("alice")));
        assert!(packer.pack("took_us", Packable::U64(17)));
        assert!(packer.pack("ok", Packable::Bool(true)));
        let mut record = Record::builder(Topic::new(Level::Info, "t")).build();
        let before = record.approx_size();
        unpack_into(&mut record, packer.packed());
        assert_eq!(record.approx_size(), before + packed_size(packer.packed()));
        assert_eq!(
            record.get("user"),
            Some(&Value::Str(std::borrow::Cow::Borrowed("alice")))
        );
        assert_eq!(record.get("took_us"), Some(&Value::U64(17)));
        assert_eq!(record.get("ok"), Some(&Value::Bool(true)));
    }
}
