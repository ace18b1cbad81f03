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
/// wrapper: `write!` of the value itself.
fn plain_placeholder(out: &mut String, trait_: Trait, arg: &Arg) -> fmt::Result {
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
