//! The plumbing of logbus's own macros (`macros.rs`): not part of the
//! public API, exempt from semver (as `log` keeps its macros' plumbing in
//! `__private_api`).
//!
//! Each argument is probed by *autoref specialisation*: the macro calls
//! `(&Probe(arg)).__logbus_arg()`, and method resolution picks
//! [`ViaArg`] (on `Probe<T>` itself) when `T` is one of the copied types,
//! else [`ViaOther`] (on `&Probe<T>`, one autoref further), which answers
//! `None`. It compiles for any type, decides at compile time (the answer
//! is a constant after inlining), and looks at types only: lifetimes play
//! no part in choosing an implementation. A string literal gets
//! [`LitProbe`] instead, which only the macro, seeing the token, uses: a
//! `&'static str` cannot be told from a borrowed `&str` by its type. The
//! logger of `logger:` is probed the same way ([`LoggerProbe`]): a logbus
//! [`Broker`] or [`BrokerHandle`] takes the deferred path, any other
//! `log::Log` the `log` crate's.

use std::panic::Location;

pub use log;
pub use logbus_appenders::__private_api::{
    is_deferred, is_formatted, parse, pieces, Arg, Piece, Template,
};

use crate::broker::{Broker, BrokerHandle};
pub use crate::log_backend::Site;

/// The caller's location, as the `log` crate's macros take it.
#[track_caller]
#[inline]
#[must_use]
pub fn loc() -> &'static Location<'static> {
    Location::caller()
}

/// Counts one of a macro's arguments in a `const`.
#[must_use]
pub const fn one(_: &str) -> usize {
    1
}

/// Publishes a deferred message through the installed broker; `false`
/// (nothing done) when logbus is not the `log` backend or the message
/// could exceed the size bound: the macro then takes the `log` path.
#[inline(never)]
pub fn log_deferred(
    level: log::Level,
    target: &str,
    site: &'static Site,
    loc: &'static Location<'static>,
    args: &[Arg],
) -> bool {
    match crate::log_backend::installed() {
        Some(shared) => shared.log_deferred(level, target, site, loc, args),
        None => false,
    }
}

/// As [`log_deferred`], through `broker` (the `logger:` argument).
#[inline(never)]
pub fn log_deferred_to(
    broker: &BrokerHandle,
    level: log::Level,
    target: &str,
    site: &'static Site,
    loc: &'static Location<'static>,
    args: &[Arg],
) -> bool {
    broker.shared.log_deferred(level, target, site, loc, args)
}

mod sealed {
    pub trait Arg {}
    pub trait Logger {}
}

/// A type whose values a deferred message copies.
pub trait ToArg: Copy + sealed::Arg {
    /// The copy.
    fn to_arg(self) -> Arg;
}

macro_rules! to_arg {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl sealed::Arg for $ty {}
        impl ToArg for $ty {
            #[inline]
            fn to_arg(self) -> Arg {
                Arg::$variant(self)
            }
        }
    )*};
}

to_arg! {
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, u128 => U128, usize => Usize,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, i128 => I128, isize => Isize,
    f32 => F32, f64 => F64, bool => Bool, char => Char,
}

impl<T: ToArg> sealed::Arg for &T {}

/// A reference formats as what it points to.
impl<T: ToArg> ToArg for &T {
    #[inline]
    fn to_arg(self) -> Arg {
        (*self).to_arg()
    }
}

/// An argument, probed (see the module docs).
#[derive(Debug)]
pub struct Probe<'a, T: ?Sized>(pub &'a T);

/// A literal argument, probed: a string literal is copied too.
#[derive(Debug)]
pub struct LitProbe<T>(pub T);

/// The probe's answer for the copied types.
pub trait ViaArg {
    /// The copy.
    fn __logbus_arg(&self) -> Option<Arg>;
}

/// The probe's answer for every other type: `None`.
pub trait ViaOther {
    /// `None`.
    fn __logbus_arg(&self) -> Option<Arg>;
}

impl<T: ToArg> ViaArg for Probe<'_, T> {
    #[inline]
    fn __logbus_arg(&self) -> Option<Arg> {
        Some(self.0.to_arg())
    }
}

impl<T: ?Sized> ViaOther for &Probe<'_, T> {
    #[inline]
    fn __logbus_arg(&self) -> Option<Arg> {
        None
    }
}

impl ViaArg for LitProbe<&'static str> {
    #[inline]
    fn __logbus_arg(&self) -> Option<Arg> {
        Some(Arg::Str(self.0))
    }
}

impl<T: ToArg> ViaArg for LitProbe<T> {
    #[inline]
    fn __logbus_arg(&self) -> Option<Arg> {
        Some(self.0.to_arg())
    }
}

/// Byte strings, C strings.
impl<T> ViaOther for &LitProbe<T> {
    #[inline]
    fn __logbus_arg(&self) -> Option<Arg> {
        None
    }
}

/// A logbus broker, as a `logger:` argument.
pub trait AsBroker: sealed::Logger {
    /// Its handle.
    fn as_broker(&self) -> &BrokerHandle;
}

impl sealed::Logger for Broker {}
impl sealed::Logger for BrokerHandle {}
impl<T: AsBroker + ?Sized> sealed::Logger for &T {}

impl AsBroker for Broker {
    fn as_broker(&self) -> &BrokerHandle {
        self
    }
}

impl AsBroker for BrokerHandle {
    fn as_broker(&self) -> &BrokerHandle {
        self
    }
}

impl<T: AsBroker + ?Sized> AsBroker for &T {
    fn as_broker(&self) -> &BrokerHandle {
        (**self).as_broker()
    }
}

/// The `logger:` argument, probed.
#[derive(Debug)]
pub struct LoggerProbe<'a, T: ?Sized>(pub &'a T);

/// The probe's answer for a logbus broker.
pub trait ViaBroker {
    /// Its handle.
    fn __logbus_broker(&self) -> Option<&BrokerHandle>;
}

/// The probe's answer for any other logger: `None`.
pub trait ViaOtherLogger {
    /// `None`.
    fn __logbus_broker(&self) -> Option<&BrokerHandle>;
}

impl<T: AsBroker + ?Sized> ViaBroker for LoggerProbe<'_, T> {
    #[inline]
    fn __logbus_broker(&self) -> Option<&BrokerHandle> {
        Some(self.0.as_broker())
    }
}

impl<T: ?Sized> ViaOtherLogger for &LoggerProbe<'_, T> {
    #[inline]
    fn __logbus_broker(&self) -> Option<&BrokerHandle> {
        None
    }
}
