//! Formatting one placeholder of a deferred message with std's own
//! implementation of its trait (`format.rs`'s module docs say why the
//! bytes are std's).

use std::fmt::{self, Write as _};

use super::format::{Align, Spec, Trait};
use super::Arg;

/// `write!` with the spec's flags in a literal (std reads flags only from
/// the format string), one dimension at a time, and the width and
/// precision as arguments: 64 arms in all.
macro_rules! write_spec {
    ($out:ident, $spec:ident, $show:ident, [$($flag:literal)*] align $($rest:tt)*) => {
        match $spec.align {
            Align::None => write_spec!($out, $spec, $show, [$($flag)*] $($rest)*),
            Align::Left => write_spec!($out, $spec, $show, [$($flag)* "<"] $($rest)*),
            Align::Center => write_spec!($out, $spec, $show, [$($flag)* "^"] $($rest)*),
            Align::Right => write_spec!($out, $spec, $show, [$($flag)* ">"] $($rest)*),
        }
    };
    ($out:ident, $spec:ident, $show:ident, [$($flag:literal)*] $name:ident($field:ident, $text:literal) $($rest:tt)*) => {
        if $spec.$field {
            write_spec!($out, $spec, $show, [$($flag)* $text] $($rest)*)
        } else {
            write_spec!($out, $spec, $show, [$($flag)*] $($rest)*)
        }
    };
    ($out:ident, $spec:ident, $show:ident, [$($flag:literal)*] precision) => {
        match $spec.precision {
            None => write!($out, concat!("{:", $($flag,)* "1$}"), $show, usize::from($spec.width)),
            Some(precision) => write!(
                $out,
                concat!("{:", $($flag,)* "1$.2$}"),
                $show,
                usize::from($spec.width),
                usize::from(precision)
            ),
        }
    };
}

/// Formats one argument under `spec` (see the module docs).
pub(super) fn placeholder(out: &mut String, spec: &Spec, arg: &Arg) -> fmt::Result {
    if spec.plain {
        return plain_placeholder(out, spec.trait_, arg);
    }
    let show = Show(arg, spec.trait_);
    write_spec!(out, spec, show, [] align flag(plus, "+") flag(alternate, "#") flag(zero, "0") precision)
}

/// `{}` and `{:?}`, the common case, without the width argument and the
/// wrapper: `{}` of an integer, a string, a bool or a char is written by hand
/// (std's `Display` of these, with no flags, is exactly their decimal digits
/// after a `-`, the text, `true`/`false`, the character: the byte-identity
/// tests compare them with std's), the rest with `write!` of the value
/// itself.
fn plain_placeholder(out: &mut String, trait_: Trait, arg: &Arg) -> fmt::Result {
    if trait_ == Trait::Display {
        let (negative, magnitude) = match *arg {
            Arg::U8(v) => (false, u128::from(v)),
            Arg::U16(v) => (false, u128::from(v)),
            Arg::U32(v) => (false, u128::from(v)),
            Arg::U64(v) => (false, u128::from(v)),
            Arg::Usize(v) => (false, v as u128),
            Arg::I8(v) => (v < 0, u128::from(v.unsigned_abs())),
            Arg::I16(v) => (v < 0, u128::from(v.unsigned_abs())),
            Arg::I32(v) => (v < 0, u128::from(v.unsigned_abs())),
            Arg::I64(v) => (v < 0, u128::from(v.unsigned_abs())),
            Arg::Isize(v) => (v < 0, v.unsigned_abs() as u128),
            Arg::Str(v) => {
                out.push_str(v);
                return Ok(());
            }
            Arg::Bool(v) => {
                out.push_str(if v { "true" } else { "false" });
                return Ok(());
            }
            Arg::Char(v) => {
                out.push(v);
                return Ok(());
            }
            // 128-bit integers and floats: std's own.
            _ => (false, u128::MAX),
        };
        if magnitude <= u128::from(u64::MAX) {
            if negative {
                out.push('-');
            }
            push_decimal(out, magnitude as u64);
            return Ok(());
        }
    }
    macro_rules! by_type {
        ($($variant:ident),*) => {
            match (trait_, *arg) {
                $(
                    (Trait::Display, Arg::$variant(v)) => write!(out, "{}", v),
                    (Trait::Debug, Arg::$variant(v)) => write!(out, "{:?}", v),
                )*
                _ => write!(out, "{}", Show(arg, trait_)),
            }
        };
    }
    by_type!(
        U8, U16, U32, U64, U128, Usize, I8, I16, I32, I64, I128, Isize, F32, F64, Bool, Char, Str
    )
}

/// Appends `value`'s decimal digits, two per division.
fn push_decimal(out: &mut String, mut value: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    while value >= 100 {
        // `value % 100` is below 100, so the index is in the table.
        let pair = (value % 100) as usize * 2;
        value /= 100;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        start -= 1;
        // Below 10, so the cast cannot truncate.
        digits[start] = b'0' + value as u8;
    }
    // ASCII digits: pushed as chars, which needs no UTF-8 validation
    // (`str::from_utf8` of the slice cost more than the digits).
    out.extend(digits[start..].iter().map(|&digit| char::from(digit)));
}

/// An argument whose `Display` is the placeholder's trait of the value,
/// with the caller's `Formatter` (so its flags, width and precision).
struct Show<'a>(&'a Arg, Trait);

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let trait_ = self.1;
        match *self.0 {
            Arg::U8(v) => integer(&v, trait_, f),
            Arg::U16(v) => integer(&v, trait_, f),
            Arg::U32(v) => integer(&v, trait_, f),
            Arg::U64(v) => integer(&v, trait_, f),
            Arg::U128(v) => integer(&v, trait_, f),
            Arg::Usize(v) => integer(&v, trait_, f),
            Arg::I8(v) => integer(&v, trait_, f),
            Arg::I16(v) => integer(&v, trait_, f),
            Arg::I32(v) => integer(&v, trait_, f),
            Arg::I64(v) => integer(&v, trait_, f),
            Arg::I128(v) => integer(&v, trait_, f),
            Arg::Isize(v) => integer(&v, trait_, f),
            Arg::F32(v) => float(&v, trait_, f),
            Arg::F64(v) => float(&v, trait_, f),
            Arg::Bool(v) => plain(&v, trait_, f),
            Arg::Char(v) => plain(&v, trait_, f),
            Arg::Str(v) => plain(v, trait_, f),
        }
    }
}

fn integer<T>(v: &T, trait_: Trait, f: &mut fmt::Formatter<'_>) -> fmt::Result
where
    T: fmt::Display
        + fmt::Debug
        + fmt::LowerHex
        + fmt::UpperHex
        + fmt::Octal
        + fmt::Binary
        + fmt::LowerExp
        + fmt::UpperExp,
{
    match trait_ {
        Trait::Display => fmt::Display::fmt(v, f),
        Trait::Debug => fmt::Debug::fmt(v, f),
        Trait::LowerHex => fmt::LowerHex::fmt(v, f),
        Trait::UpperHex => fmt::UpperHex::fmt(v, f),
        Trait::Octal => fmt::Octal::fmt(v, f),
        Trait::Binary => fmt::Binary::fmt(v, f),
        Trait::LowerExp => fmt::LowerExp::fmt(v, f),
        Trait::UpperExp => fmt::UpperExp::fmt(v, f),
    }
}

/// The other pairs never get here: the call site's `format_args!` refused
/// them at compile time.
fn float<T>(v: &T, trait_: Trait, f: &mut fmt::Formatter<'_>) -> fmt::Result
where
    T: fmt::Display + fmt::Debug + fmt::LowerExp + fmt::UpperExp,
{
    match trait_ {
        Trait::Display => fmt::Display::fmt(v, f),
        Trait::Debug => fmt::Debug::fmt(v, f),
        Trait::LowerExp => fmt::LowerExp::fmt(v, f),
        Trait::UpperExp => fmt::UpperExp::fmt(v, f),
        _ => Err(fmt::Error),
    }
}

fn plain<T>(v: &T, trait_: Trait, f: &mut fmt::Formatter<'_>) -> fmt::Result
where
    T: fmt::Display + fmt::Debug + ?Sized,
{
    match trait_ {
        Trait::Display => fmt::Display::fmt(v, f),
        Trait::Debug => fmt::Debug::fmt(v, f),
        _ => Err(fmt::Error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits_are_std_display() {
        let mut values = vec![
            0,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1_000,
            65_535,
            u64::MAX,
            u64::MAX - 1,
        ];
        values.extend((0..64).map(|bit| 1u64 << bit));
        values.extend((1..20).map(|digits| 10u64.pow(digits) - 1));
        for value in values {
            let mut out = String::new();
            push_decimal(&mut out, value);
            assert_eq!(out, value.to_string());
        }
    }

    #[test]
    fn plain_display_of_every_narrow_type_is_std_display() {
        let cases = [
            (Arg::I8(i8::MIN), i8::MIN.to_string()),
            (Arg::I16(i16::MIN), i16::MIN.to_string()),
            (Arg::I32(i32::MIN), i32::MIN.to_string()),
            (Arg::I64(i64::MIN), i64::MIN.to_string()),
            (Arg::I64(-1), "-1".to_owned()),
            (Arg::Isize(isize::MIN), isize::MIN.to_string()),
            (Arg::Usize(usize::MAX), usize::MAX.to_string()),
            (Arg::U128(u128::MAX), u128::MAX.to_string()),
            (Arg::I128(i128::MIN), i128::MIN.to_string()),
            (Arg::U128(7), "7".to_owned()),
            (Arg::Bool(false), "false".to_owned()),
            (Arg::Char('\n'), "\n".to_owned()),
            (Arg::Str("a {} b"), "a {} b".to_owned()),
            (Arg::F64(-0.0), "-0".to_owned()),
        ];
        for (arg, expected) in cases {
            let mut out = String::new();
            plain_placeholder(&mut out, Trait::Display, &arg).unwrap();
            assert_eq!(out, expected, "{arg:?}");
        }
    }
}
