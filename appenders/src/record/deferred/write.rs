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
/// wrapper: `{}` of an integer (by `itoa`), a string, a bool or a char is
/// written without `core::fmt` (std's `Display` of these, with no flags, is
/// exactly their decimal digits after a `-`, the text, `true`/`false`, the
/// character: the byte-identity tests compare them with std's), the rest
/// with `write!` of the value itself.
fn plain_placeholder(out: &mut String, trait_: Trait, arg: &Arg) -> fmt::Result {
    if trait_ == Trait::Display {
        if let Arg::Char(v) = *arg {
            out.push(v);
            return Ok(());
        }
        let mut digits = itoa::Buffer::new();
        if let Some(text) = display_text(&mut digits, arg) {
            out.push_str(text);
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

/// `{}` of `arg` as text, where std's `Display` with no flags is exactly
/// that: an integer's decimal digits (`itoa`, into `digits`), a string, a
/// bool. `None` for a float or a char.
fn display_text<'a>(digits: &'a mut itoa::Buffer, arg: &Arg) -> Option<&'a str> {
    Some(match *arg {
        Arg::U8(v) => digits.format(v),
        Arg::U16(v) => digits.format(v),
        Arg::U32(v) => digits.format(v),
        Arg::U64(v) => digits.format(v),
        Arg::U128(v) => digits.format(v),
        Arg::Usize(v) => digits.format(v),
        Arg::I8(v) => digits.format(v),
        Arg::I16(v) => digits.format(v),
        Arg::I32(v) => digits.format(v),
        Arg::I64(v) => digits.format(v),
        Arg::I128(v) => digits.format(v),
        Arg::Isize(v) => digits.format(v),
        Arg::Str(v) => v,
        Arg::Bool(v) => {
            if v {
                "true"
            } else {
                "false"
            }
        }
        Arg::F32(_) | Arg::F64(_) | Arg::Char(_) => return None,
    })
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
            plain_placeholder(&mut out, Trait::Display, &Arg::U64(value)).unwrap();
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
