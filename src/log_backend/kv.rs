//! A `log` call's key-values: collected into its record on the usual path
//! ([`collect_kv`]), or packed for its lane's slot on the direct path
//! ([`SlotKv`]), typed alike (a number, a boolean, a text, none; anything
//! else as its text, or with the `serde` feature a structured value as
//! JSON, on the usual path only).

use std::borrow::Cow;
use std::fmt;

use log::kv::{self, VisitSource, VisitValue};
use logbus_appenders::__private_api as produce;
use logbus_appenders::{Record, Value};

use crate::queue::INLINE_TEXT;
use crate::sanitize::{bound_str, Bounded};

/// Appends the call's key-values to `out`, each text within `max` bytes;
/// returns whether the bound cut one.
pub(super) fn collect_kv(out: &mut Record, record: &log::Record<'_>, max: usize) -> bool {
    collect_kv_after(out, record, max, 0, None)
}

/// [`collect_kv`] of the key-values after the first `skip` (which are not
/// visited: their values' code does not run), the next one's value
/// `stashed` if it is given (not visited either).
fn collect_kv_after(
    out: &mut Record,
    record: &log::Record<'_>,
    max: usize,
    skip: usize,
    stashed: Option<Stashed>,
) -> bool {
    let source = record.key_values();
    if source.count() == 0 {
        return false;
    }
    let truncated = stashed.as_ref().is_some_and(|s| s.truncated);
    let mut collect = CollectKv {
        out,
        max,
        truncated,
        skip,
        stashed: stashed.map(|s| s.value),
    };
    let _ = source.visit(&mut collect);
    collect.truncated
}

struct CollectKv<'a> {
    out: &'a mut Record,
    max: usize,
    truncated: bool,
    /// Key-values still to pass over.
    skip: usize,
    /// The value of the key-value after them, as found already.
    stashed: Option<StashedValue>,
}

/// A value's text within the bound (`sanitize.rs`): formatted through
/// [`Bounded`], so a huge `Display` value is not copied whole, into one of
/// `out`'s spare strings.
fn bounded_text(
    out: &mut Record,
    value: &kv::Value<'_>,
    max: usize,
    truncated: &mut bool,
) -> Value {
    let mut text = produce::kv_text(out);
    let mut bounded = Bounded::new(&mut text, max);
    let _ = fmt::Write::write_fmt(&mut bounded, format_args!("{value}"));
    *truncated |= bounded.finish();
    Value::Str(Cow::Owned(text))
}

impl<'kvs> VisitSource<'kvs> for CollectKv<'_> {
    fn visit_pair(&mut self, key: kv::Key<'kvs>, value: kv::Value<'kvs>) -> Result<(), kv::Error> {
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(());
        }
        if let Some(stashed) = self.stashed.take() {
            let key = owned_text(self.out, key.as_str());
            let value = match stashed {
                StashedValue::Value(value) => value,
                // As `bounded_text` writes it (40 digits at most: within
                // any bound).
                StashedValue::Wide(wide) => {
                    let mut text = produce::kv_text(self.out);
                    let _ = fmt::Write::write_fmt(&mut text, format_args!("{wide}"));
                    Value::Str(Cow::Owned(text))
                }
            };
            produce::push_kv(self.out, key, value);
            return Ok(());
        }
        let mut owned = OwnedValue {
            out: &mut *self.out,
            value: Value::Null,
            max: self.max,
            truncated: false,
        };
        if value.visit(&mut owned).is_err() {
            owned.value = bounded_text(owned.out, &value, self.max, &mut owned.truncated);
        }
        let (value, truncated) = (owned.value, owned.truncated);
        self.truncated |= truncated;
        let key = match bound_str(key.as_str(), self.max) {
            None => owned_text(self.out, key.as_str()),
            Some(bounded) => {
                self.truncated = true;
                Cow::Owned(bounded)
            }
        };
        produce::push_kv(self.out, key, value);
        Ok(())
    }
}

/// `text` copied into one of `out`'s spare strings (no allocation while
/// the spare is long enough).
fn owned_text(out: &mut Record, text: &str) -> Cow<'static, str> {
    let mut owned = produce::kv_text(out);
    owned.push_str(text);
    Cow::Owned(owned)
}

/// A visitor turning a `log` value into ours, its text in a spare string of
/// the record it is for.
struct OwnedValue<'a> {
    out: &'a mut Record,
    value: Value,
    max: usize,
    truncated: bool,
}

impl<'v> VisitValue<'v> for OwnedValue<'_> {
    fn visit_any(&mut self, value: kv::Value<'_>) -> Result<(), kv::Error> {
        // A structured `:serde` value as JSON (feature `serde`; without it
        // this is `None` and costs nothing), else the value's text.
        self.value = match produce::structured_value(&value, self.max, &mut self.truncated) {
            Some(structured) => structured,
            None => bounded_text(self.out, &value, self.max, &mut self.truncated),
        };
        Ok(())
    }

    fn visit_null(&mut self) -> Result<(), kv::Error> {
        self.value = Value::Null;
        Ok(())
    }

    fn visit_u64(&mut self, value: u64) -> Result<(), kv::Error> {
        self.value = Value::U64(value);
        Ok(())
    }

    fn visit_i64(&mut self, value: i64) -> Result<(), kv::Error> {
        self.value = Value::I64(value);
        Ok(())
    }

    fn visit_f64(&mut self, value: f64) -> Result<(), kv::Error> {
        self.value = Value::F64(value);
        Ok(())
    }

    fn visit_bool(&mut self, value: bool) -> Result<(), kv::Error> {
        self.value = Value::Bool(value);
        Ok(())
    }

    fn visit_str(&mut self, value: &str) -> Result<(), kv::Error> {
        self.value = Value::Str(match bound_str(value, self.max) {
            None => owned_text(self.out, value),
            Some(bounded) => {
                self.truncated = true;
                Cow::Owned(bounded)
            }
        });
        Ok(())
    }
}

/// A direct call's key-values, packed for its slot after the message
/// (`produce::KvPacker`) when `text` is first called, into the room the
/// message leaves: a number, a boolean, a text within the size bound, or
/// none. The visit stops at the first key-value of another kind
/// (`Display`, `Debug`, structured) or that does not fit; the call then
/// takes the usual path, which takes the packed key-values as they are,
/// the value the packing stopped at as it found it if it had one
/// ([`Stashed`]: a `:serde` value's number or text, whose `Serialize`, and
/// the `Display` it may call, must not run again), and collects only the
/// rest ([`collect`](SlotKv::collect)): no value's code runs twice but a
/// structured `:serde` value's `Serialize` (or one that fails after a
/// number), which the usual path runs more than once in any case. A value
/// that visits more than once (an `sval` stream of several) is refused.
pub(super) struct SlotKv {
    bytes: [u8; INLINE_TEXT],
    /// What was packed, once it was.
    packing: Option<Packing>,
    /// The value of the key-value the packing stopped at, as found.
    stashed: Option<Stashed>,
}

/// What [`SlotKv::pack`] packed.
#[derive(Clone, Copy)]
struct Packing {
    /// The packed bytes' length.
    len: usize,
    /// How many key-values, the first ones.
    pairs: usize,
    /// Whether that is all of them.
    whole: bool,
}

/// The value a packing stopped at because it did not fit, as the usual
/// path makes it (`OwnedValue`): a number, a boolean or none as it is, a
/// text code made within the size bound (`truncated` if it was cut; a
/// text borrowed from the call is visited again, which runs no code).
struct Stashed {
    value: StashedValue,
    truncated: bool,
}

/// A [`Stashed`] value.
enum StashedValue {
    Value(Value),
    /// A 128-bit integer, which the usual path keeps as its text
    /// (`OwnedValue::visit_any`), written into the record's spare string
    /// when it is collected.
    Wide(Wide),
}

/// A 128-bit integer.
#[derive(Clone, Copy)]
enum Wide {
    Unsigned(u128),
    Signed(i128),
}

impl fmt::Display for Wide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wide::Unsigned(v) => fmt::Display::fmt(v, f),
            Wide::Signed(v) => fmt::Display::fmt(v, f),
        }
    }
}

impl SlotKv {
    pub(super) fn new() -> SlotKv {
        SlotKv {
            bytes: [0; INLINE_TEXT],
            packing: None,
            stashed: None,
        }
    }

    /// `record`'s key-values packed, if all of them pack into at most
    /// `room` bytes, each text within `max`; the first call packs them, a
    /// later one (after a re-route, with the same message and so the same
    /// room) gives the same answer. Out of line: most calls have no
    /// key-values.
    #[inline(never)]
    pub(super) fn packed(
        &mut self,
        record: &log::Record<'_>,
        room: usize,
        max: usize,
    ) -> Option<produce::Packed<'_>> {
        let packing = match self.packing {
            Some(packing) => packing,
            None => self.pack(record, room, max),
        };
        packing.whole.then(|| self.packed_bytes(packing))
    }

    fn pack(&mut self, record: &log::Record<'_>, room: usize, max: usize) -> Packing {
        let bytes = &mut self.bytes[..room.min(INLINE_TEXT)];
        let mut packer = produce::KvPacker::new(bytes);
        let mut pack = Pack {
            packer: &mut packer,
            max,
            pairs: 0,
            stopped: false,
            stashed: None,
        };
        let whole = record.key_values().visit(&mut pack).is_ok() && !pack.stopped;
        let pairs = pack.pairs;
        self.stashed = pack.stashed.take();
        let packing = Packing {
            len: packer.packed().bytes().len(),
            pairs,
            whole,
        };
        self.packing = Some(packing);
        packing
    }

    fn packed_bytes(&self, packing: Packing) -> produce::Packed<'_> {
        produce::Packed::from_bytes(&self.bytes[..packing.len])
    }

    /// The call's key-values into `out` on the usual path: the ones packed
    /// as they are, then the one the packing stopped at, as stashed if it
    /// was, then the rest collected ([`collect_kv`]); returns whether the
    /// bound cut one.
    pub(super) fn collect(
        &mut self,
        out: &mut Record,
        record: &log::Record<'_>,
        max: usize,
    ) -> bool {
        let Some(packing) = self.packing else {
            return collect_kv(out, record, max);
        };
        produce::unpack_kv(out, self.packed_bytes(packing));
        if packing.whole {
            return false;
        }
        collect_kv_after(out, record, max, packing.pairs, self.stashed.take())
    }
}

/// Packs each key-value ([`SlotKv`]), counting them; an error stops the
/// visit at the first one that does not pack.
struct Pack<'p, 'b> {
    packer: &'p mut produce::KvPacker<'b>,
    max: usize,
    pairs: usize,
    /// Set at the first key-value that did not pack: a source may go on
    /// after the error (`log`'s `Source` may, not must, stop), and the
    /// later ones must then not be packed either (`pairs` counts the first
    /// ones only).
    stopped: bool,
    /// The value of the one it stopped at, if it did not fit.
    stashed: Option<Stashed>,
}

impl<'kvs> VisitSource<'kvs> for Pack<'_, '_> {
    fn visit_pair(&mut self, key: kv::Key<'kvs>, value: kv::Value<'kvs>) -> Result<(), kv::Error> {
        let stop = Err(kv::Error::msg("a key-value that does not pack"));
        let key = key.as_str();
        if self.stopped || key.len() > self.max {
            self.stopped = true;
            return stop;
        }
        let mark = self.packer.mark();
        let mut value_packer = PackValue {
            packer: &mut *self.packer,
            key,
            max: self.max,
            packed: false,
            refused: false,
            stashed: &mut self.stashed,
            visited: false,
        };
        let visited = value.visit(&mut value_packer).is_ok();
        let (packed, refused) = (value_packer.packed, value_packer.refused);
        if visited && packed && !refused {
            self.pairs += 1;
            self.stashed = None;
            return Ok(());
        }
        // A value that packed a scalar and then refused or failed (a
        // `:serde` value whose `Serialize` went on after it) is not kept:
        // the usual path collects it, after the packed ones.
        self.packer.rewind(mark);
        self.stopped = true;
        if !visited || refused {
            self.stashed = None;
        }
        stop
    }
}

/// Packs one value of a kind a slot carries, under `key`; any other kind
/// (`visit_any`, before any user code runs) is refused, and a value that
/// does not fit is stashed ([`Stashed`]). Never an error: the `log` crate's
/// value type would box one, an allocation a key-value with the `serde`
/// feature (`tests/allocations.rs`); [`Pack`] reads `packed`.
struct PackValue<'p, 'b, 'k> {
    packer: &'p mut produce::KvPacker<'b>,
    key: &'k str,
    max: usize,
    packed: bool,
    /// A kind it does not pack came (`visit_any`), packed or not before.
    refused: bool,
    /// Where a value that does not fit goes ([`Pack::stashed`]).
    stashed: &'p mut Option<Stashed>,
    /// Whether a visit came already: a value visits once (`serde`'s
    /// serializer is consumed by its first call); one that visits again
    /// (an `sval` stream that is not one value) is refused.
    visited: bool,
}

impl PackValue<'_, '_, '_> {
    /// Whether this is the value's first visit; a second one refuses it.
    fn first(&mut self) -> bool {
        if std::mem::replace(&mut self.visited, true) {
            self.refused = true;
            return false;
        }
        true
    }

    /// Packs `value`, or stashes `or` (the value as the usual path makes
    /// it) if it does not fit.
    fn pack(
        &mut self,
        value: produce::Packable<'_>,
        or: impl FnOnce() -> Option<Stashed>,
    ) -> Result<(), kv::Error> {
        self.packed = self.packer.pack(self.key, value);
        if !self.packed {
            *self.stashed = or();
        }
        Ok(())
    }

    fn scalar(&mut self, value: produce::Packable<'_>, as_value: Value) -> Result<(), kv::Error> {
        if !self.first() {
            return Ok(());
        }
        self.pack(value, || {
            Some(Stashed {
                value: StashedValue::Value(as_value),
                truncated: false,
            })
        })
    }

    /// A 128-bit integer: never packed, stashed.
    fn wide(&mut self, value: Wide) -> Result<(), kv::Error> {
        if self.first() {
            *self.stashed = Some(Stashed {
                value: StashedValue::Wide(value),
                truncated: false,
            });
        }
        Ok(())
    }

    /// A text value, `borrowed` from the call (visited again if it does
    /// not pack: no code runs), or made by code (a `:serde` value's
    /// `Display`), stashed within the size bound if it does not pack.
    fn text(&mut self, value: &str, borrowed: bool) -> Result<(), kv::Error> {
        if !self.first() {
            return Ok(());
        }
        let max = self.max;
        let made = || {
            (!borrowed).then(|| match bound_str(value, max) {
                None => Stashed {
                    value: StashedValue::Value(Value::Str(Cow::Owned(value.to_owned()))),
                    truncated: false,
                },
                Some(bounded) => Stashed {
                    value: StashedValue::Value(Value::Str(Cow::Owned(bounded))),
                    truncated: true,
                },
            })
        };
        if value.len() > max {
            *self.stashed = made();
            return Ok(());
        }
        self.pack(produce::Packable::Str(value), made)
    }
}

impl<'v> VisitValue<'v> for PackValue<'_, '_, '_> {
    fn visit_any(&mut self, _: kv::Value<'_>) -> Result<(), kv::Error> {
        self.refused = true;
        Ok(())
    }

    // Not a slot's: stashed, so that a `:serde` value's `Serialize` that
    // made it does not run again (`log`'s default refers them to
    // `visit_any`, which runs no code for a plain one).
    fn visit_u128(&mut self, value: u128) -> Result<(), kv::Error> {
        self.wide(Wide::Unsigned(value))
    }

    fn visit_i128(&mut self, value: i128) -> Result<(), kv::Error> {
        self.wide(Wide::Signed(value))
    }

    fn visit_null(&mut self) -> Result<(), kv::Error> {
        self.scalar(produce::Packable::Null, Value::Null)
    }

    fn visit_u64(&mut self, value: u64) -> Result<(), kv::Error> {
        self.scalar(produce::Packable::U64(value), Value::U64(value))
    }

    fn visit_i64(&mut self, value: i64) -> Result<(), kv::Error> {
        self.scalar(produce::Packable::I64(value), Value::I64(value))
    }

    fn visit_f64(&mut self, value: f64) -> Result<(), kv::Error> {
        self.scalar(produce::Packable::F64(value), Value::F64(value))
    }

    fn visit_bool(&mut self, value: bool) -> Result<(), kv::Error> {
        self.scalar(produce::Packable::Bool(value), Value::Bool(value))
    }

    fn visit_borrowed_str(&mut self, value: &'v str) -> Result<(), kv::Error> {
        self.text(value, true)
    }

    fn visit_str(&mut self, value: &str) -> Result<(), kv::Error> {
        self.text(value, false)
    }
}
