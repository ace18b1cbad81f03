//! logbus's own logging macros: `error!`, `warn!`, `info!`, `debug!`,
//! `trace!` and `log!`, with the `log` crate's syntax, that leave the
//! formatting of a message of plain values to the worker. Their plumbing
//! is in `__private.rs`, the broker's side in `log_backend.rs`
//! (`BrokerShared::log_deferred`), the deferred message in
//! `logbus-appenders`' `record/deferred.rs`.

/// Logs a message at `level`, as [`log::log!`] does and with its syntax
/// (`logger:`, `target:`, key-values before `;`, `format_args!`'s
/// arguments), leaving the formatting to the worker when it can.
///
/// A call is **deferred** when all of these hold:
///
/// - it has no key-values;
/// - the format string is a literal whose placeholders are `{}` or `{N}`
///   (no names, no inline captures such as `{x}`) with specs among `<` `^`
///   `>` (the default fill), `+`, `#`, `0`, a literal width and precision
///   (no `$`, no `*`), and `?`, `x`, `X`, `o`, `b`, `e`, `E` (decided at
///   compile time, by a `const`);
/// - every argument is an integer, `f32`, `f64`, `bool` or `char` (or a
///   reference to one), or a string literal (decided per type at compile
///   time), and at least one is not a literal: a call of literals only
///   takes `log`'s path, where `format_args!` folds `{}` of string and
///   integer literals into the format string (`info!("{} {}", "GET", 5)`
///   costs the caller nothing there);
/// - the `log` backend is logbus (installed, or given as `logger:` as a
///   [`Broker`](crate::Broker) or [`BrokerHandle`](crate::BrokerHandle));
/// - the message cannot be longer than the size bound
///   ([`Builder::max_record_bytes`](crate::Builder::max_record_bytes)),
///   so formatting it later never cuts it.
///
/// Then the caller copies the arguments and the format string into the
/// record and formats nothing. Where the call's route is one to four
/// subscriptions (no filter, journal, flight recorder or redaction) and
/// its arguments take at most six words (one each, two for a 128-bit
/// integer; no string literal), not even a record is made on the caller's
/// thread: the format string's pointer and the arguments' bits go straight
/// into each subscription's queue, and its worker builds the record and
/// formats the message as it does. Otherwise the message is formatted when
/// first read, usually by the appender on the worker. Either way each
/// argument is formatted by std's own implementation: the text is the one
/// `log::log!` would have made, byte for byte. Reading it on the caller's
/// thread formats it there: a predicate
/// ([`SubscriptionBuilder::filter`](crate::SubscriptionBuilder::filter))
/// that reads the message, a [`Redaction`](crate::Redaction) with a
/// message rewrite, and the [`Journal`](crate::Journal) (which counts what
/// it keeps) do. A deferred message is formatted into a buffer of the
/// record's, so its [`Record::message_cow`](crate::Record::message_cow) is
/// `Cow::Owned`, as `log`'s path makes it for any call with an argument
/// that is not a literal; a call of literals only takes `log`'s path, where
/// `format_args!` may fold them into a borrowed `&'static str`.
///
/// Any other call expands to `log::log!` with the same arguments, each
/// evaluated once, as `format_args!` does: the `log` crate's own path.
/// `log::info!` and friends keep working as before; these macros are for
/// hot call sites that log numbers.
///
/// # An argument's type must be known at the call
///
/// The choice between copying an argument and the `log` path is made from
/// its type where the macro is, before later statements are read. An
/// argument whose type is only inferred from a later use does not compile
/// (`E0277`, `String: ToArg` is not satisfied, below), where `log::info!`
/// would: annotate the type (`let mut v: String = ...`), or use `log`'s
/// macro there.
///
/// ```compile_fail,E0277
/// let mut v = Default::default();
/// logbus::info!("{}", v); // `v`'s type is not known yet
/// v = String::from("x");
/// # let _ = v;
/// ```
///
/// ```
/// let mut v: String = Default::default();
/// logbus::info!("{}", v); // a `String`: `log`'s path
/// v = String::from("x");
/// log::info!("{}", v);
/// ```
///
/// # Examples
///
/// ```
/// use logbus::{Broker, Level, LevelFilter, Memory, Subscription};
///
/// let broker = Broker::new();
/// let (memory, captured) = Memory::new();
/// broker.subscribe(Subscription::builder("memory", memory))?;
/// log::set_max_level(LevelFilter::Trace);
///
/// let (status, ms) = (503u16, 2.25f64);
/// logbus::log!(logger: &broker, target: "app::http", Level::Warn, "status {} after {:.1} ms", status, ms);
/// let user = "ann"; // not deferred: an inline capture (and a borrowed `&str`)
/// logbus::log!(logger: &broker, Level::Info, "user {user}");
/// broker.flush()?;
/// assert_eq!(captured.messages(), ["status 503 after 2.2 ms", "user ann"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! log {
    (logger: $logger:expr, target: $target:expr, $lvl:expr, $($arg:tt)+) => {
        $crate::__logbus_log!(@call [logger ($logger)] ($target) ($lvl) $($arg)+)
    };
    (logger: $logger:expr, $lvl:expr, $($arg:tt)+) => {
        $crate::__logbus_log!(@call [logger ($logger)] (::core::module_path!()) ($lvl) $($arg)+)
    };
    (target: $target:expr, $lvl:expr, $($arg:tt)+) => {
        $crate::__logbus_log!(@call [global] ($target) ($lvl) $($arg)+)
    };
    ($lvl:expr, $($arg:tt)+) => {
        $crate::__logbus_log!(@call [global] (::core::module_path!()) ($lvl) $($arg)+)
    };
}

/// Logs a message at the error level, as [`log::error!`] does; see
/// [`log!`](crate::log!) for what is deferred.
///
/// # Examples
///
/// ```
/// let code = 7i32;
/// // With no logger installed this goes to `log`'s (none): it still compiles and runs.
/// logbus::error!(target: "app::db", "connection lost (code {})", code);
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! error {
    (logger: $logger:expr, target: $target:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, target: $target, $crate::Level::Error, $($arg)+)
    };
    (logger: $logger:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, $crate::Level::Error, $($arg)+)
    };
    (target: $target:expr, $($arg:tt)+) => {
        $crate::log!(target: $target, $crate::Level::Error, $($arg)+)
    };
    ($($arg:tt)+) => {
        $crate::log!($crate::Level::Error, $($arg)+)
    };
}

/// Logs a message at the warn level, as [`log::warn!`] does; see
/// [`log!`](crate::log!) for what is deferred.
///
/// # Examples
///
/// ```
/// let (used, max) = (91u8, 100u8);
/// logbus::warn!("disk {}% full (limit {})", used, max);
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! warn {
    (logger: $logger:expr, target: $target:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, target: $target, $crate::Level::Warn, $($arg)+)
    };
    (logger: $logger:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, $crate::Level::Warn, $($arg)+)
    };
    (target: $target:expr, $($arg:tt)+) => {
        $crate::log!(target: $target, $crate::Level::Warn, $($arg)+)
    };
    ($($arg:tt)+) => {
        $crate::log!($crate::Level::Warn, $($arg)+)
    };
}

/// Logs a message at the info level, as [`log::info!`] does; see
/// [`log!`](crate::log!) for what is deferred.
///
/// # Examples
///
/// ```
/// use logbus::{Broker, LevelFilter, Memory, Subscription};
///
/// let broker = Broker::new();
/// let (memory, captured) = Memory::new();
/// broker.subscribe(Subscription::builder("memory", memory))?;
/// log::set_max_level(LevelFilter::Trace);
///
/// for i in 0..2u64 {
///     // Deferred: two integers, formatted on the worker.
///     logbus::info!(logger: &broker, target: "app::http", "request {} served in {} us", i, i % 1000);
/// }
/// // Not deferred (key-values): the `log` crate's path.
/// logbus::info!(logger: &broker, status = 200; "done");
/// broker.flush()?;
/// assert_eq!(
///     captured.messages(),
///     ["request 0 served in 0 us", "request 1 served in 1 us", "done"]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! info {
    (logger: $logger:expr, target: $target:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, target: $target, $crate::Level::Info, $($arg)+)
    };
    (logger: $logger:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, $crate::Level::Info, $($arg)+)
    };
    (target: $target:expr, $($arg:tt)+) => {
        $crate::log!(target: $target, $crate::Level::Info, $($arg)+)
    };
    ($($arg:tt)+) => {
        $crate::log!($crate::Level::Info, $($arg)+)
    };
}

/// Logs a message at the debug level, as [`log::debug!`] does; see
/// [`log!`](crate::log!) for what is deferred.
///
/// # Examples
///
/// ```
/// let (x, y) = (3.25f32, -1.5f32);
/// logbus::debug!(target: "app::geo", "position {:+.2} {:+.2}", x, y);
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! debug {
    (logger: $logger:expr, target: $target:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, target: $target, $crate::Level::Debug, $($arg)+)
    };
    (logger: $logger:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, $crate::Level::Debug, $($arg)+)
    };
    (target: $target:expr, $($arg:tt)+) => {
        $crate::log!(target: $target, $crate::Level::Debug, $($arg)+)
    };
    ($($arg:tt)+) => {
        $crate::log!($crate::Level::Debug, $($arg)+)
    };
}

/// Logs a message at the trace level, as [`log::trace!`] does; see
/// [`log!`](crate::log!) for what is deferred.
///
/// # Examples
///
/// ```
/// let (byte, flags) = (b'A', 0b1010u8);
/// logbus::trace!("read {:?} flags {:#010b}", byte as char, flags);
/// ```
#[macro_export]
#[clippy::format_args]
macro_rules! trace {
    (logger: $logger:expr, target: $target:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, target: $target, $crate::Level::Trace, $($arg)+)
    };
    (logger: $logger:expr, $($arg:tt)+) => {
        $crate::log!(logger: $logger, $crate::Level::Trace, $($arg)+)
    };
    (target: $target:expr, $($arg:tt)+) => {
        $crate::log!(target: $target, $crate::Level::Trace, $($arg)+)
    };
    ($($arg:tt)+) => {
        $crate::log!($crate::Level::Trace, $($arg)+)
    };
}

/// The macros' machinery. `@call` sorts the call out: key-values or a
/// format string that is not a literal go to `log` as they are. `@args`
/// walks the arguments: a named one sends the whole call to `log` as it
/// is; a literal is kept as it is (so `format_args!` inlines it, as in
/// `log`'s expansion); any other expression is bound once. A call of
/// literals only (none bound) goes to `log` as it is too: `format_args!`
/// folds `{}` of string and integer literals into a `&'static str` there,
/// which costs the caller nothing. Each step
/// writes its bindings (`arg`, `value`) in its own expansion, so hygiene
/// keeps them apart. `@emit` writes the call.
#[doc(hidden)]
#[macro_export]
macro_rules! __logbus_log {
    (@call $logger:tt $target:tt $lvl:tt $($key:tt $(:$capture:tt)? $(= $value:expr)?),+; $($arg:tt)+) => {
        $crate::__logbus_log!(@log $logger $target $lvl $($key $(:$capture)? $(= $value)?),+; $($arg)+)
    };
    (@call $logger:tt $target:tt $lvl:tt $fmt:literal $(, $($args:tt)*)?) => {
        $crate::__logbus_log!(@args [$logger $target $lvl $fmt] [$($($args)*)?] [] [] $($($args)*)?)
    };
    (@call $logger:tt $target:tt $lvl:tt $($arg:tt)+) => {
        $crate::__logbus_log!(@log $logger $target $lvl $($arg)+)
    };

    // No arguments: nothing to format, `log`'s path.
    (@args [$logger:tt $target:tt $lvl:tt $fmt:literal] $orig:tt [] []) => {
        $crate::__logbus_log!(@log $logger $target $lvl $fmt)
    };
    // Literals only: `log`'s path (see above).
    (@args [$logger:tt $target:tt $lvl:tt $fmt:literal] [$($orig:tt)*] [] $uses:tt) => {
        $crate::__logbus_log!(@log $logger $target $lvl $fmt, $($orig)*)
    };
    (@args $cx:tt $orig:tt $bind:tt $uses:tt) => {
        $crate::__logbus_log!(@emit $cx $bind $uses)
    };
    // A named argument: `log`'s path, with the arguments as they came.
    (@args [$logger:tt $target:tt $lvl:tt $fmt:literal] [$($orig:tt)*] $bind:tt $uses:tt $name:ident = $($rest:tt)*) => {
        $crate::__logbus_log!(@log $logger $target $lvl $fmt, $($orig)*)
    };
    // One token: a literal, or an expression to bind.
    (@args $cx:tt $orig:tt $bind:tt $uses:tt $one:tt $(, $($rest:tt)*)?) => {
        $crate::__logbus_log!(@one $cx $orig $bind $uses $one [$($($rest)*)?])
    };
    (@one $cx:tt $orig:tt $bind:tt [$($use:tt)*] $lit:literal [$($rest:tt)*]) => {
        $crate::__logbus_log!(@args $cx $orig $bind
            [$($use)* [(&$crate::__private::LitProbe($lit)).__logbus_arg(), $lit, value]]
            $($rest)*)
    };
    (@one $cx:tt $orig:tt [$($bind:tt)*] [$($use:tt)*] $one:tt [$($rest:tt)*]) => {
        $crate::__logbus_log!(@args $cx $orig [$($bind)* [arg $one]]
            [$($use)* [(&$crate::__private::Probe(arg)).__logbus_arg(), *arg, value]]
            $($rest)*)
    };
    (@args $cx:tt $orig:tt [$($bind:tt)*] [$($use:tt)*] $expr:expr $(, $($rest:tt)*)?) => {
        $crate::__logbus_log!(@args $cx $orig [$($bind)* [arg $expr]]
            [$($use)* [(&$crate::__private::Probe(arg)).__logbus_arg(), *arg, value]]
            $($($rest)*)?)
    };
    (@emit [[global] ($target:expr) ($lvl:expr) $fmt:literal]
        [$([$bname:ident $bexpr:expr])*]
        [$([$probe:expr, $lexpr:expr, $uname:ident])*]
    ) => {{
        let lvl = $lvl;
        if lvl <= $crate::__private::log::STATIC_MAX_LEVEL && lvl <= $crate::__private::log::max_level() {
            // Bound once, before the target, as `format_args!` in `log`'s
            // expansion binds them.
            match ($(&$bexpr,)*) {
                ($($bname,)*) => {
                    // The format, read at compile time, in a block of its own:
                    // items are not hygienic, so the caller's `$target` must not
                    // be where these names are.
                    let site: &'static $crate::__private::Site = {
                        const PIECES: [$crate::__private::Piece; $crate::__private::pieces($fmt)] =
                            $crate::__private::parse($fmt);
                        const SITE: $crate::__private::Site = $crate::__private::Site::new(
                            ::core::module_path!(),
                            $crate::__private::Template::new(
                                $fmt,
                                &PIECES,
                                0 $(+ $crate::__private::one(::core::stringify!($uname)))*,
                            ),
                        );
                        &SITE
                    };
                    let target: &::core::primitive::str = $target;
                    let deferred = site.deferrable() && {
                        // The probes' traits, out of `$target`'s sight too.
                        #[allow(unused_imports)]
                        use $crate::__private::{ViaArg as _, ViaOther as _};
                        match ($($probe,)*) {
                            ($(::core::option::Option::Some($uname),)*) => $crate::__private::log_deferred(
                                lvl,
                                target,
                                site,
                                $crate::__private::loc(),
                                &[$($uname),*],
                            ),
                            _ => false,
                        }
                    };
                    if !deferred {
                        $crate::__private::log::log!(target: target, lvl, $fmt, $($lexpr),*);
                    }
                }
            }
        }
    }};
    (@emit [[logger ($logger:expr)] ($target:expr) ($lvl:expr) $fmt:literal]
        [$([$bname:ident $bexpr:expr])*]
        [$([$probe:expr, $lexpr:expr, $uname:ident])*]
    ) => {{
        let lvl = $lvl;
        if lvl <= $crate::__private::log::STATIC_MAX_LEVEL && lvl <= $crate::__private::log::max_level() {
            match (&($logger), $(&$bexpr,)*) {
                (logger, $($bname,)*) => {
                    // The format, read at compile time, in a block of its own:
                    // items are not hygienic, so the caller's `$target` must not
                    // be where these names are.
                    let site: &'static $crate::__private::Site = {
                        const PIECES: [$crate::__private::Piece; $crate::__private::pieces($fmt)] =
                            $crate::__private::parse($fmt);
                        const SITE: $crate::__private::Site = $crate::__private::Site::new(
                            ::core::module_path!(),
                            $crate::__private::Template::new(
                                $fmt,
                                &PIECES,
                                0 $(+ $crate::__private::one(::core::stringify!($uname)))*,
                            ),
                        );
                        &SITE
                    };
                    let target: &::core::primitive::str = $target;
                    let deferred = site.deferrable() && {
                        // The probes' traits, out of `$target`'s sight too.
                        #[allow(unused_imports)]
                        use $crate::__private::{ViaArg as _, ViaBroker as _, ViaOther as _, ViaOtherLogger as _};
                        match ($($probe,)*) {
                            ($(::core::option::Option::Some($uname),)*) => {
                                match (&$crate::__private::LoggerProbe(logger)).__logbus_broker() {
                                    ::core::option::Option::Some(broker) => $crate::__private::log_deferred_to(
                                        broker,
                                        lvl,
                                        target,
                                        site,
                                        $crate::__private::loc(),
                                        &[$($uname),*],
                                    ),
                                    ::core::option::Option::None => false,
                                }
                            }
                            _ => false,
                        }
                    };
                    if !deferred {
                        $crate::__private::log::log!(logger: logger, target: target, lvl, $fmt, $($lexpr),*);
                    }
                }
            }
        }
    }};

    (@log [global] ($target:expr) ($lvl:expr) $($arg:tt)+) => {
        $crate::__private::log::log!(target: $target, $lvl, $($arg)+)
    };
    (@log [logger ($logger:expr)] ($target:expr) ($lvl:expr) $($arg:tt)+) => {
        $crate::__private::log::log!(logger: $logger, target: $target, $lvl, $($arg)+)
    };
}
