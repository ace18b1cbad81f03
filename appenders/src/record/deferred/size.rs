//! How long a placeholder of a deferred message can get, from its spec and
//! its argument, without formatting it: what a deferred record counts for
//! its message in a byte budget (`Record::approx_size`), the same before
//! and after it is formatted, and never less than what formatting writes
//! (the tests below check the longest values of each type, and random
//! ones, under every trait and flag).
//!
//! Per type and trait, the longest text std writes for any value, with a
//! sign or `+`, and `#`'s prefix; a precision adds its digits where it
//! can lengthen the text (floats, and the `e` forms of integers). A
//! float's `{}` is bounded from its value's binary exponent instead: the
//! longest `f64` text is 327 bytes (`-0.000…5`, the smallest subnormal,
//! with 323 zeros), where most values take under 25. Then a width: std
//! pads to it in chars, so a `char` or a string may be that many chars of
//! more than one byte each.

use super::format::{Spec, Trait};
use super::Arg;

/// The most bytes `spec` can write for `arg`.
pub(super) fn placeholder(spec: &Spec, arg: &Arg) -> usize {
    let precision = spec.precision.map(usize::from);
    let (longest, multibyte) = longest(arg, spec.trait_, precision);
    // Padded: `width` chars, of which the text's may be wider than a byte.
    let padded = usize::from(spec.width).saturating_add(multibyte);
    padded.max(longest)
}

/// The longest text of `arg` under `trait_` and `precision` (and any flag)
/// without a width, and how many more bytes than chars that text can have.
fn longest(arg: &Arg, trait_: Trait, precision: Option<usize>) -> (usize, usize) {
    let text = match *arg {
        Arg::U8(_) | Arg::I8(_) => integer(8, trait_, precision),
        Arg::U16(_) | Arg::I16(_) => integer(16, trait_, precision),
        Arg::U32(_) | Arg::I32(_) => integer(32, trait_, precision),
        Arg::U64(_) | Arg::I64(_) => integer(64, trait_, precision),
        Arg::U128(_) | Arg::I128(_) => integer(128, trait_, precision),
        Arg::Usize(_) | Arg::Isize(_) => integer(usize::BITS, trait_, precision),
        Arg::F32(v) => float(f64::from(v), F32_DEBUG, F32_EXP, trait_, precision),
        Arg::F64(v) => float(v, F64_DEBUG, F64_EXP, trait_, precision),
        // A precision only cuts these.
        Arg::Bool(_) => 5,
        Arg::Char(_) => {
            // `'\u{10ffff}'`; a char is one char of up to 4 bytes.
            let text = if trait_ == Trait::Debug { 12 } else { 4 };
            return (text, 3);
        }
        Arg::Str(text) => {
            let bytes = text.len();
            // `{:?}` escapes a byte into at most 6 (`\u{7f}`), and quotes.
            let escaped = bytes.saturating_mul(6).saturating_add(2);
            let text = if trait_ == Trait::Debug {
                escaped
            } else {
                bytes
            };
            return (text, bytes);
        }
    };
    (text, 0)
}

/// The most bytes an integer of `bits` bits writes: its digits in the
/// trait's base, a sign (`-`, or `+` under that flag) and `#`'s two-byte
/// prefix (`0x`, `0o`, `0b`). Integers ignore a precision, but for `{:e}`.
fn integer(bits: u32, trait_: Trait, precision: Option<usize>) -> usize {
    let decimal = match bits {
        8 => 3,
        16 => 5,
        32 => 10,
        64 => 20,
        _ => 39,
    };
    let sign = 1;
    match trait_ {
        Trait::Display | Trait::Debug => sign + decimal,
        Trait::LowerHex | Trait::UpperHex => sign + 2 + bits as usize / 4,
        Trait::Octal => sign + 2 + (bits as usize).div_ceil(3),
        Trait::Binary => sign + 2 + bits as usize,
        // `-1.70141183460469231731687303715884105728e38`: the digits, `.`,
        // `e` and at most 2 exponent digits; a precision is the digits
        // after the point (with trailing zeros).
        Trait::LowerExp | Trait::UpperExp => {
            (sign + decimal + 4).saturating_add(precision.unwrap_or(0))
        }
    }
}

/// `{:?}` of an `f64` without a precision: `-1.2345678901234567e-100` (17
/// significant digits at most, exponential below 1e-4 and from 1e16).
const F64_DEBUG: usize = 24;
/// `{:e}` of an `f64` without a precision: the same 17 digits, `.`, `e-324`.
const F64_EXP: usize = 24;
/// The same for an `f32` (9 significant digits at most): `-1000000000000000.0`
/// (16 digits before the point) is its longest `{:?}`; its `{:e}` is a sign,
/// 9 digits, `.` and at most `e-45`.
const F32_DEBUG: usize = 19;
const F32_EXP: usize = 15;

/// The most bytes a float writes (an `f32` passed as the `f64` of the same
/// value, exactly converted).
fn float(v: f64, debug: usize, exp: usize, trait_: Trait, precision: Option<usize>) -> usize {
    match (trait_, precision) {
        (Trait::LowerExp | Trait::UpperExp, None) => exp,
        // A sign, one digit, `.`, the precision's digits, `e-324`.
        (Trait::LowerExp | Trait::UpperExp, Some(precision)) => precision.saturating_add(8),
        (Trait::Debug, None) => debug,
        // With a precision, `{:?}` writes what `{}` does.
        _ => decimal(v, precision),
    }
}

/// The most bytes `{}` (or `{:.N}`) writes for `v`: a sign, the integer
/// part's digits, `.` and the fraction's digits: `precision` of them, or
/// for the shortest text that reads back as `v`, at most 17 significant
/// digits after the zeros that follow `0.` in a value below 1.
fn decimal(v: f64, precision: Option<usize>) -> usize {
    if !v.is_finite() {
        // `-inf`, `NaN`, whatever the precision.
        return 4;
    }
    let biased = ((v.to_bits() >> 52) & 0x7ff) as u32;
    if biased == 0 {
        // Zero or subnormal: below 1, `0.` and the fraction.
        return match precision {
            Some(precision) => precision.saturating_add(3),
            None if v == 0.0 => 2,
            // `-0.` and 324 digits, the last a significant one.
            None => 327,
        };
    }
    // 2^exponent <= |v| < 2^(exponent + 1).
    let exponent = biased as i32 - 1023;
    // log10(2) < 0.30103: the integer part has at most this many digits
    // (one more than floor(log10(2^(exponent + 1)))), also once rounded up
    // to a precision (|v| rounds to at most 2^(exponent + 1)).
    let integer = if exponent < 0 {
        1
    } else {
        (exponent as usize + 1) * 30_103 / 100_000 + 1
    };
    match precision {
        Some(precision) => (integer + 2).saturating_add(precision),
        // Below 1: `0.`, at most floor(-exponent x log10(2)) zeros, the digits.
        None if exponent < 0 => 3 + exponent.unsigned_abs() as usize * 30_103 / 100_000 + 17,
        // From 1: at most 17 significant digits and the point, or only the
        // integer's digits (every value from 2^53 on is an integer).
        None => 1 + integer.max(18),
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{Align, Spec, Trait};
    use super::super::{write, Arg};
    use super::*;

    const TRAITS: [Trait; 8] = [
        Trait::Display,
        Trait::Debug,
        Trait::LowerHex,
        Trait::UpperHex,
        Trait::Octal,
        Trait::Binary,
        Trait::LowerExp,
        Trait::UpperExp,
    ];

    /// Whether `trait_` applies to `arg` (what `format_args!` accepts).
    fn applies(arg: &Arg, trait_: Trait) -> bool {
        match arg {
            Arg::F32(_) | Arg::F64(_) => !matches!(
                trait_,
                Trait::LowerHex | Trait::UpperHex | Trait::Octal | Trait::Binary
            ),
            Arg::Bool(_) | Arg::Char(_) | Arg::Str(_) => {
                matches!(trait_, Trait::Display | Trait::Debug)
            }
            _ => true,
        }
    }

    /// Formats `arg` under every trait, flag, a few widths and precisions,
    /// and checks the bound holds for each.
    fn check(arg: Arg) {
        for trait_ in TRAITS.into_iter().filter(|t| applies(&arg, *t)) {
            for flags in 0..8u8 {
                for width in [0u16, 1, 5, 30, 400] {
                    for precision in [None, Some(0), Some(1), Some(3), Some(17), Some(40)] {
                        let plain = flags == 0 && width == 0 && precision.is_none();
                        let spec = Spec {
                            index: 0,
                            plain,
                            align: if flags & 4 != 0 {
                                Align::Center
                            } else {
                                Align::None
                            },
                            plus: flags & 1 != 0,
                            alternate: flags & 2 != 0,
                            zero: flags & 4 == 0 && width > 0,
                            width,
                            precision,
                            trait_,
                        };
                        let mut out = String::new();
                        write::placeholder(&mut out, &spec, &arg).unwrap();
                        let bound = placeholder(&spec, &arg);
                        assert!(
                            out.len() <= bound,
                            "{arg:?} {spec:?}: {} > {bound}",
                            out.len()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_longest_values_of_each_type_fit() {
        for arg in [
            Arg::U8(u8::MAX),
            Arg::I8(i8::MIN),
            Arg::U16(u16::MAX),
            Arg::I16(i16::MIN),
            Arg::U32(u32::MAX),
            Arg::I32(i32::MIN),
            Arg::U64(u64::MAX),
            Arg::I64(i64::MIN),
            Arg::U128(u128::MAX),
            Arg::I128(i128::MIN),
            Arg::Usize(usize::MAX),
            Arg::Isize(isize::MIN),
            Arg::Bool(false),
            Arg::Char('\u{10ffff}'),
            Arg::Char('\u{1f600}'),
            Arg::Char('\''),
            Arg::Str("\u{7f}\u{0}é😀\u{200b}\"\\"),
            Arg::Str(""),
        ] {
            check(arg);
        }
        let doubles = [
            -f64::from_bits(1),
            f64::from_bits(1),
            -f64::from_bits(0x000f_ffff_ffff_ffff),
            -f64::MIN_POSITIVE,
            f64::MIN,
            f64::MAX,
            -1.234_567_890_123_456_7e-100,
            -0.000_123_456_789_012_345_67,
            -1_234_567_890_123_456.7,
            -9_999_999_999_999_998.0,
            -1e16,
            -0.999_999_999_999_999_9,
            9.999,
            0.0,
            -0.0,
            f64::NAN,
            f64::NEG_INFINITY,
        ];
        for v in doubles {
            check(Arg::F64(v));
        }
        let floats = [
            -f32::from_bits(1),
            -f32::from_bits(0x007f_ffff),
            f32::MIN,
            -1e15,
            -9_999_999_000_000_000.0,
            -1.234_567_8e-5,
            -0.000_123_456_78,
            -0.0,
            f32::NAN,
            f32::NEG_INFINITY,
        ];
        for v in floats {
            check(Arg::F32(v));
        }
    }

    #[test]
    fn a_float_of_a_usual_magnitude_counts_at_most_40_bytes() {
        let display = Spec {
            index: 0,
            plain: true,
            align: Align::None,
            plus: false,
            alternate: false,
            zero: false,
            width: 0,
            precision: None,
            trait_: Trait::Display,
        };
        for exponent in -20..20 {
            for v in [1.0f64, 2.5, 9.999_999_999_999_999] {
                let v = v * 10f64.powi(exponent);
                assert!(placeholder(&display, &Arg::F64(-v)) <= 40, "{v}");
            }
        }
        assert!(placeholder(&display, &Arg::F64(0.5)) <= 21);
    }

    #[test]
    fn random_floats_fit() {
        // A fixed xorshift: every exponent, varied digits, the same run
        // each time.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..300 {
            let bits = next();
            check(Arg::F64(f64::from_bits(bits)));
            check(Arg::F32(f32::from_bits(bits as u32)));
        }
    }
}
