//! A deferred message's arguments in a slot's text words (`slot.rs`):
//! the first word holds their count (bits 0-7) and each one's kind
//! ([`KIND_BITS`] bits each, from bit 8), the others their bits, one word
//! each and two for a 128-bit integer. A string argument is not held: its
//! pointer would lose its provenance in an integer word, so such a
//! message travels as a shared record.

use logbus_appenders::__private_api::Arg;

use super::TEXT_WORDS;
use crate::sync::{AtomicU64, Ordering};

/// Words a deferred message's arguments may take in a slot: the text's
/// words but the first, which holds their count and kinds.
pub(super) const ARG_WORDS: usize = TEXT_WORDS - 1;

/// Bits of an argument's kind in the first text word, after the count's
/// eight.
const KIND_BITS: u32 = 5;

/// Whether a slot holds `args`: each takes a word, a 128-bit integer two,
/// and a string none (a string argument's pointer would lose its
/// provenance in an integer word: such a message travels shared).
#[inline]
pub(super) fn args_fit(args: &[Arg]) -> bool {
    let mut words = 0;
    for arg in args {
        words += match arg {
            Arg::U128(_) | Arg::I128(_) => 2,
            Arg::Str(_) => return false,
            _ => 1,
        };
    }
    words <= ARG_WORDS
}

/// An argument's kind and its bits: one word, or two (low, high).
#[inline]
fn encode(arg: Arg) -> (u64, u64, Option<u64>) {
    // `as` casts: the bits, sign-extended for signed integers (decoded
    // back with the same casts).
    match arg {
        Arg::U8(v) => (0, u64::from(v), None),
        Arg::U16(v) => (1, u64::from(v), None),
        Arg::U32(v) => (2, u64::from(v), None),
        Arg::U64(v) => (3, v, None),
        Arg::U128(v) => (4, v as u64, Some((v >> 64) as u64)),
        Arg::Usize(v) => (5, v as u64, None),
        Arg::I8(v) => (6, v as u64, None),
        Arg::I16(v) => (7, v as u64, None),
        Arg::I32(v) => (8, v as u64, None),
        Arg::I64(v) => (9, v as u64, None),
        Arg::I128(v) => (10, v as u64, Some((v >> 64) as u64)),
        Arg::Isize(v) => (11, v as u64, None),
        Arg::F32(v) => (12, u64::from(v.to_bits()), None),
        Arg::F64(v) => (13, v.to_bits(), None),
        Arg::Bool(v) => (14, u64::from(v), None),
        Arg::Char(v) => (15, u64::from(u32::from(v)), None),
        // Not in a slot (`args_fit`).
        Arg::Str(_) => (16, 0, None),
    }
}

/// Writes `args` (they fit: [`args_fit`]) into a slot's text words, for
/// [`decode`].
#[inline]
pub(super) fn put(text: &[AtomicU64; TEXT_WORDS], args: &[Arg]) {
    let mut kinds = args.len() as u64;
    let mut at = 1;
    for (k, &arg) in args.iter().enumerate() {
        let (kind, low, high) = encode(arg);
        kinds |= kind << (8 + KIND_BITS * k as u32);
        for word in std::iter::once(low).chain(high) {
            if let Some(slot) = text.get(at) {
                slot.store(word, Ordering::Relaxed);
            }
            at += 1;
        }
    }
    text[0].store(kinds, Ordering::Relaxed);
}

/// The arguments `words` hold (as [`put`] wrote them), into `out`;
/// how many. Only a trusted reading is decoded (`Reading::take`),
/// and a kind it does not know (none is written) reads as `false`.
pub(super) fn decode(words: &[u64; TEXT_WORDS], out: &mut [Arg; ARG_WORDS]) -> usize {
    let count = ((words[0] & 0xff) as usize).min(ARG_WORDS);
    let mut at = 1;
    for (k, slot) in out.iter_mut().enumerate().take(count) {
        let kind = (words[0] >> (8 + KIND_BITS * k as u32)) & ((1 << KIND_BITS) - 1);
        let word = words[at.min(TEXT_WORDS - 1)];
        let high = || u128::from(words[(at + 1).min(TEXT_WORDS - 1)]) << 64;
        // `as` casts: back from `encode`'s bits (truncating to the type's
        // width is the inverse of its widening).
        *slot = match kind {
            0 => Arg::U8(word as u8),
            1 => Arg::U16(word as u16),
            2 => Arg::U32(word as u32),
            3 => Arg::U64(word),
            4 => Arg::U128(high() | u128::from(word)),
            5 => Arg::Usize(word as usize),
            6 => Arg::I8(word as i8),
            7 => Arg::I16(word as i16),
            8 => Arg::I32(word as i32),
            9 => Arg::I64(word as i64),
            10 => Arg::I128((high() | u128::from(word)) as i128),
            11 => Arg::Isize(word as isize),
            12 => Arg::F32(f32::from_bits(word as u32)),
            13 => Arg::F64(f64::from_bits(word)),
            15 => Arg::Char(char::from_u32(word as u32).unwrap_or(char::REPLACEMENT_CHARACTER)),
            _ => Arg::Bool(word != 0),
        };
        at += if matches!(kind, 4 | 10) { 2 } else { 1 };
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(args: &[Arg]) -> Vec<Arg> {
        let text: [AtomicU64; TEXT_WORDS] = Default::default();
        put(&text, args);
        let words = text.map(|word| word.load(Ordering::Relaxed));
        let mut out = [Arg::Bool(false); ARG_WORDS];
        let count = decode(&words, &mut out);
        out[..count].to_vec()
    }

    #[test]
    fn every_kind_comes_back_as_it_went_in() {
        let kinds = [
            vec![Arg::U8(u8::MAX), Arg::U16(u16::MAX), Arg::U32(u32::MAX)],
            vec![
                Arg::U64(u64::MAX),
                Arg::Usize(usize::MAX),
                Arg::U128(u128::MAX),
            ],
            vec![Arg::I8(i8::MIN), Arg::I16(i16::MIN), Arg::I32(i32::MIN)],
            vec![
                Arg::I64(i64::MIN),
                Arg::Isize(isize::MIN),
                Arg::I128(i128::MIN),
            ],
            vec![
                Arg::I8(-1),
                Arg::I128(-1),
                Arg::I128(i128::MAX),
                Arg::I64(7),
            ],
            vec![
                Arg::F32(-0.0),
                Arg::F64(f64::NAN),
                Arg::F64(f64::MIN_POSITIVE),
            ],
            vec![Arg::Bool(true), Arg::Bool(false), Arg::Char('\u{10ffff}')],
            vec![Arg::Char('é'), Arg::F32(f32::INFINITY)],
            vec![Arg::U64(1); ARG_WORDS],
            vec![],
        ];
        for args in kinds {
            assert!(args_fit(&args), "{args:?}");
            let back = round_trip(&args);
            // NaN is not equal to itself: compare the bits' debug text.
            assert_eq!(format!("{back:?}"), format!("{args:?}"));
        }
    }

    #[test]
    fn a_string_or_more_words_than_a_slot_has_do_not_fit() {
        assert!(!args_fit(&[Arg::Str("a literal")]));
        assert!(!args_fit(&[Arg::U64(1); ARG_WORDS + 1]));
        assert!(!args_fit(&[
            Arg::U128(1),
            Arg::U128(2),
            Arg::I128(3),
            Arg::U8(4)
        ]));
        assert!(args_fit(&[Arg::U128(1), Arg::U128(2), Arg::I128(3)]));
    }
}
