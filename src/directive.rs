//! `RUST_LOG`-style level directives, with the meaning `env_logger` 0.11 gives them.
//!
//! The syntax, matching rules and the few deliberate differences from `env_logger` are
//! documented on [`Directives`], the type users see through the crate root.

use std::cmp::Ordering;
use std::error::Error;
use std::fmt;
use std::str::FromStr;

use log::{Level, LevelFilter};

/// Parsed directives such as `info,app::db=debug,hyper=off`.
///
/// # Syntax and matching
///
/// A spec is a comma-separated list of directives, each one of:
///
/// | directive     | meaning                                                                  |
/// |---------------|--------------------------------------------------------------------------|
/// | `level`       | the global level, used for targets no other directive matches            |
/// | `path`        | `path=trace`: everything under `path`                                    |
/// | `path=level`  | `level` for targets under `path`                                        |
/// | `path=`       | `path=trace` (an empty level means "all levels")                         |
/// | `=level`      | an empty path: it matches every target, like the global level            |
///
/// The rules below are those of `env_filter` 2.x (`parse_spec`, `Builder`, `Filter::enabled`),
/// the crate `env_logger` 0.11 delegates to; `tests/directives.rs` checks them differentially.
///
/// - Levels are `off`, `error`, `warn`, `info`, `debug` and `trace`, ASCII case-insensitive
///   (`log::LevelFilter::from_str`). Numbers are not levels.
/// - A lone word that is not a level is a path: `loud` means `loud=trace`, never an error.
/// - "Under `path`" is a plain byte-prefix test, `target.starts_with(path)`, **not** a module
///   boundary test: `app` also matches `apple` and `app_two`; write `app::` to match only
///   `app`'s submodules (it then no longer matches `app` itself).
/// - The longest matching path wins; the global level applies only when no path matches.
///   With no global directive, an unmatched target is off.
/// - A later directive for the same path (or a later global level) replaces the earlier one.
/// - Each directive is trimmed of surrounding whitespace, and so is the level after `=`, but
///   the path before `=` is not: `app = debug` is the path `"app "` (with a space), which
///   matches no ordinary target. We reproduce that.
/// - Empty directives (`info,,app`) are ignored. An empty spec, or one in which every
///   directive was skipped, means `error` for every target: that is `env_filter`'s default
///   when it ends up with no directive at all.
/// - What `env_filter` warns about and skips (`a=b=c`, `app=loud`) is an error for
///   [`Directives::parse`], and is skipped, with the error returned, by
///   [`Directives::parse_lossy`].
///
/// # Differences from `env_logger`
///
/// - `env_filter` accepts `=debug` as a directive for the empty path, which matches every
///   target. So do we: of it and the global level, the one whose first directive came later
///   in the spec wins, with the level of its last directive, as in `env_filter`. It renders
///   as a global level (`info,=debug` displays as `debug`).
/// - The `/regex` suffix, which `env_filter` applies to the formatted message, is not
///   supported, deliberately: a message filter would run on the caller's thread after
///   formatting, for every record. [`Directives::parse`] rejects it with
///   [`DirectiveErrorKind::UnsupportedRegex`], whose message says what to write instead (the
///   directives before `/`, and [`SubscriptionBuilder::filter`](crate::SubscriptionBuilder::filter)
///   for the message test); [`Directives::parse_lossy`] drops it (so it lets through every
///   message the levels allow). With two or more `/`, `env_filter` drops the whole spec; we
///   keep the directives before the first `/`.
///
/// # Equality
///
/// Values compare equal when they hold the same global level and the same set of
/// `(path, level)` pairs, whatever order they were written in.
///
/// # Examples
///
/// ```
/// use log::{Level, LevelFilter};
/// use logbus::Directives;
///
/// let directives: Directives = "info,app::db=debug".parse()?;
/// assert_eq!(
///     directives,
///     Directives::new(LevelFilter::Info).with("app::db", LevelFilter::Debug)
/// );
/// assert!(directives.enabled(Level::Debug, "app::db::pool"));
/// assert!(!directives.enabled(Level::Debug, "app"));
/// assert_eq!(directives.to_string(), "info,app::db=debug");
/// # Ok::<(), logbus::DirectiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directives {
    /// Path directives, most specific first: longest path first, ties by path so that equal
    /// sets compare equal. At most one entry per path.
    targets: Vec<TargetDirective>,
    /// The level for targets that no entry of `targets` matches.
    default: LevelFilter,
    /// The loosest of `default` and every level in `targets`; kept in step by every mutation.
    max_level: LevelFilter,
}

/// One `path=level` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TargetDirective {
    path: String,
    level: LevelFilter,
}

impl TargetDirective {
    /// Most specific first: longer paths sort earlier, so the first match is the longest.
    fn specificity_order(&self, path: &str) -> Ordering {
        path.len()
            .cmp(&self.path.len())
            .then_with(|| self.path.as_str().cmp(path))
    }
}

impl Directives {
    /// Parses a spec, failing on the first malformed directive.
    ///
    /// # Errors
    ///
    /// Returns the first [`DirectiveError`] in the spec, by position: an unknown level
    /// (`app=loud`), more than one `=` (`a=b=c`), or a `/regex` suffix.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::LevelFilter;
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let directives = Directives::parse("warn, hyper=off ,app")?;
    /// assert_eq!(directives.level_for("hyper::client"), LevelFilter::Off);
    /// assert_eq!(directives.level_for("app::db"), LevelFilter::Trace);
    /// assert_eq!(directives.level_for("other"), LevelFilter::Warn);
    ///
    /// // An empty spec means `error` everywhere, as in `env_logger`.
    /// assert_eq!(Directives::parse("")?, Directives::new(LevelFilter::Error));
    ///
    /// let err = Directives::parse("info,app=loud").unwrap_err();
    /// assert_eq!(err.kind(), DirectiveErrorKind::UnknownLevel);
    /// # Ok::<(), logbus::DirectiveError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<Directives, DirectiveError> {
        let (directives, errors) = Directives::parse_lossy(spec);
        match errors.into_iter().next() {
            Some(first) => Err(first),
            None => Ok(directives),
        }
    }

    /// Parses a spec, keeping the well-formed directives and returning the malformed ones.
    ///
    /// The result is what `env_logger` would use for the same spec, except as listed under
    /// ["Differences from `env_logger`"](Directives#differences-from-env_logger) (a `/regex` suffix is dropped, `=level` is skipped). The
    /// errors are in the order their directives appear in `spec`.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::LevelFilter;
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let (directives, errors) = Directives::parse_lossy("info,app=loud,db=debug/^GET");
    /// assert_eq!(directives, Directives::new(LevelFilter::Info).with("db", LevelFilter::Debug));
    /// let kinds: Vec<_> = errors.iter().map(|e| e.kind()).collect();
    /// assert_eq!(kinds, [DirectiveErrorKind::UnknownLevel, DirectiveErrorKind::UnsupportedRegex]);
    /// ```
    pub fn parse_lossy(spec: &str) -> (Directives, Vec<DirectiveError>) {
        let mut errors = Vec::new();
        // `env_filter` splits off the regex at the first `/` before looking at commas, so the
        // suffix runs to the end of the spec even if it contains `,` or `=`.
        let (list, regex_at) = match spec.find('/') {
            Some(at) => (&spec[..at], Some(at)),
            None => (spec, None),
        };

        // The global level and the empty path's (`=debug`), each with the index of its first
        // directive: both match every target, and `env_filter` keeps them in the order they
        // first appeared, a later directive replacing the level in place. The one that first
        // appeared last wins.
        let mut global: Option<(usize, LevelFilter)> = None;
        let mut empty_path: Option<(usize, LevelFilter)> = None;
        let mut directives = Directives::new(LevelFilter::Off);
        let mut offset = 0;
        for (index, piece) in list.split(',').enumerate() {
            let start = offset + (piece.len() - piece.trim_start().len());
            offset += piece.len() + 1;
            let text = piece.trim();
            if text.is_empty() {
                continue;
            }
            match parse_one(text) {
                Ok((None, level)) => global = Some((global.map_or(index, |g| g.0), level)),
                Ok((Some(""), level)) => {
                    empty_path = Some((empty_path.map_or(index, |e| e.0), level));
                }
                Ok((Some(path), level)) => directives.insert(path, level),
                Err(kind) => errors.push(DirectiveError {
                    directive: text.to_owned(),
                    position: start,
                    kind,
                }),
            }
        }
        if let Some(at) = regex_at {
            errors.push(DirectiveError {
                directive: spec[at..].to_owned(),
                position: at,
                kind: DirectiveErrorKind::UnsupportedRegex,
            });
        }

        let everywhere = match (global, empty_path) {
            (Some(g), Some(e)) => Some(if e.0 > g.0 { e.1 } else { g.1 }),
            (one, other) => one.or(other).map(|(_, level)| level),
        };
        directives.default = match everywhere {
            Some(level) => level,
            // `env_filter::Builder::build` falls back to a global `error` only when it holds
            // no directive at all; with path directives, unmatched targets are off.
            None if directives.targets.is_empty() => LevelFilter::Error,
            None => LevelFilter::Off,
        };
        directives.recompute_max_level();
        (directives, errors)
    }

    /// Directives holding only a global level.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::{Level, LevelFilter};
    /// use logbus::Directives;
    ///
    /// let directives = Directives::new(LevelFilter::Warn);
    /// assert!(directives.enabled(Level::Warn, "anything"));
    /// assert!(!directives.enabled(Level::Info, "anything"));
    /// assert_eq!(directives.to_string(), "warn");
    /// ```
    pub fn new(default: LevelFilter) -> Directives {
        Directives {
            targets: Vec::new(),
            default,
            max_level: default,
        }
    }

    /// Adds the directive `target_prefix=level`, replacing any earlier one for the same path.
    ///
    /// `target_prefix` matches by byte prefix, exactly like a parsed path: `"app"` also
    /// matches `"apple"`.
    ///
    /// # Panics
    ///
    /// Panics if `target_prefix` could not be written in a spec, so that [`Display`](fmt::Display)
    /// always renders a spec that parses back equal: if it is empty, starts with whitespace,
    /// or contains `,`, `=` or `/`. Set the global level with [`Directives::new`] instead of
    /// an empty path.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::LevelFilter;
    /// use logbus::Directives;
    ///
    /// let directives = Directives::new(LevelFilter::Info)
    ///     .with("hyper", LevelFilter::Off)
    ///     .with("app::db", LevelFilter::Trace);
    /// assert_eq!(directives.level_for("hyper::client"), LevelFilter::Off);
    /// assert_eq!(directives.to_string(), "info,app::db=trace,hyper=off");
    /// ```
    #[must_use]
    pub fn with(mut self, target_prefix: &str, level: LevelFilter) -> Directives {
        assert!(
            is_writable_path(target_prefix),
            "target prefix {target_prefix:?} cannot be written in a directive spec"
        );
        self.insert(target_prefix, level);
        self.recompute_max_level();
        self
    }

    /// Returns the level that applies to `target`: that of the longest matching path, or
    /// the global level if no path matches.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::LevelFilter;
    /// use logbus::Directives;
    ///
    /// let directives = Directives::parse("app=info,app::db=debug")?;
    /// assert_eq!(directives.level_for("app::db::pool"), LevelFilter::Debug);
    /// assert_eq!(directives.level_for("apple"), LevelFilter::Info); // byte prefix of "app"
    /// assert_eq!(directives.level_for("other"), LevelFilter::Off); // no global level given
    /// # Ok::<(), logbus::DirectiveError>(())
    /// ```
    pub fn level_for(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .find(|d| target.starts_with(d.path.as_str()))
            .map_or(self.default, |d| d.level)
    }

    /// Returns whether a record at `level` for `target` passes.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::Level;
    /// use logbus::Directives;
    ///
    /// let directives = Directives::parse("warn,app::db=debug")?;
    /// assert!(directives.enabled(Level::Debug, "app::db"));
    /// assert!(!directives.enabled(Level::Info, "app"));
    /// # Ok::<(), logbus::DirectiveError>(())
    /// ```
    pub fn enabled(&self, level: Level, target: &str) -> bool {
        // Cheap rejection first: most disabled records are below every directive.
        level <= self.max_level && level <= self.level_for(target)
    }

    /// Returns the loosest level any directive allows, suitable for `log::set_max_level`.
    ///
    /// # Examples
    ///
    /// ```
    /// use log::LevelFilter;
    /// use logbus::Directives;
    ///
    /// assert_eq!(Directives::parse("warn,app=trace")?.max_level(), LevelFilter::Trace);
    /// assert_eq!(Directives::parse("off")?.max_level(), LevelFilter::Off);
    /// # Ok::<(), logbus::DirectiveError>(())
    /// ```
    pub fn max_level(&self) -> LevelFilter {
        self.max_level
    }

    /// Inserts or replaces a path directive, keeping `targets` sorted. Does not update
    /// `max_level`.
    fn insert(&mut self, path: &str, level: LevelFilter) {
        match self.targets.binary_search_by(|d| d.specificity_order(path)) {
            Ok(at) => self.targets[at].level = level,
            Err(at) => self.targets.insert(
                at,
                TargetDirective {
                    path: path.to_owned(),
                    level,
                },
            ),
        }
    }

    fn recompute_max_level(&mut self) {
        self.max_level = self
            .targets
            .iter()
            .map(|d| d.level)
            .fold(self.default, Ord::max);
    }
}

/// Parses one trimmed, non-empty directive into `(path, level)`; `None` is the global level.
fn parse_one(text: &str) -> Result<(Option<&str>, LevelFilter), DirectiveErrorKind> {
    let mut parts = text.split('=');
    // `split` always yields at least one item.
    let path = parts.next().unwrap_or_default();
    let level = parts.next();
    if parts.next().is_some() {
        return Err(DirectiveErrorKind::TooManyEquals);
    }
    match level {
        None => Ok(match path.parse() {
            Ok(level) => (None, level),
            Err(_) => (Some(path), LevelFilter::Trace),
        }),
        Some(level) => {
            // Only the level is trimmed: `env_filter` keeps `"app "` in `app = debug`.
            let level = match level.trim() {
                "" => LevelFilter::Trace,
                text => text.parse().map_err(|_| DirectiveErrorKind::UnknownLevel)?,
            };
            Ok((Some(path), level))
        }
    }
}

/// Whether `path` survives a round trip through `path=level` in a spec.
fn is_writable_path(path: &str) -> bool {
    !path.is_empty() && !path.starts_with(char::is_whitespace) && !path.contains([',', '=', '/'])
}

impl FromStr for Directives {
    type Err = DirectiveError;

    /// Same as [`Directives::parse`].
    fn from_str(spec: &str) -> Result<Directives, DirectiveError> {
        Directives::parse(spec)
    }
}

impl fmt::Display for Directives {
    /// Renders a canonical spec: the global level (left out when it is `off` and there are
    /// path directives), then `path=level` for each path, most specific first. Levels are
    /// lower-case, and the spec parses back to an equal value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        if self.default != LevelFilter::Off || self.targets.is_empty() {
            write!(f, "{}", level_name(self.default))?;
            first = false;
        }
        for d in &self.targets {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            // Always with `=level`: a bare path would be trimmed when parsed back.
            write!(f, "{}={}", d.path, level_name(d.level))?;
        }
        Ok(())
    }
}

fn level_name(level: LevelFilter) -> &'static str {
    match level {
        LevelFilter::Off => "off",
        LevelFilter::Error => "error",
        LevelFilter::Warn => "warn",
        LevelFilter::Info => "info",
        LevelFilter::Debug => "debug",
        LevelFilter::Trace => "trace",
    }
}

/// A malformed directive.
///
/// # Examples
///
/// ```
/// use logbus::{DirectiveErrorKind, Directives};
///
/// let err = Directives::parse("info,app=loud").unwrap_err();
/// assert_eq!(err.directive(), "app=loud");
/// assert_eq!(err.position(), 5);
/// assert_eq!(err.kind(), DirectiveErrorKind::UnknownLevel);
/// assert_eq!(err.to_string(), r#"invalid directive "app=loud" at byte 5: unknown level"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveError {
    directive: String,
    position: usize,
    kind: DirectiveErrorKind,
}

impl DirectiveError {
    /// Returns the offending directive, trimmed; for a regex, the suffix from `/` on.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::Directives;
    ///
    /// let err = Directives::parse("info, app=warn=debug ").unwrap_err();
    /// assert_eq!(err.directive(), "app=warn=debug");
    /// ```
    pub fn directive(&self) -> &str {
        &self.directive
    }

    /// Returns the byte offset of the directive in the spec.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::Directives;
    ///
    /// let err = Directives::parse("info, app=warn=debug ").unwrap_err();
    /// assert_eq!(err.position(), 6);
    /// ```
    pub fn position(&self) -> usize {
        self.position
    }

    /// Returns what is wrong with the directive.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let err = Directives::parse("info, app=warn=debug ").unwrap_err();
    /// assert_eq!(err.kind(), DirectiveErrorKind::TooManyEquals);
    /// ```
    pub fn kind(&self) -> DirectiveErrorKind {
        self.kind
    }
}

impl fmt::Display for DirectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DirectiveErrorKind::UnknownLevel => "unknown level",
            DirectiveErrorKind::TooManyEquals => "more than one '='",
            DirectiveErrorKind::UnsupportedRegex => {
                "message filters are not supported; keep the directives before '/' and filter \
                 messages with `SubscriptionBuilder::filter`"
            }
            DirectiveErrorKind::NotUnicode => "not UTF-8",
        };
        write!(
            f,
            "invalid directive {:?} at byte {}: {what}",
            self.directive, self.position
        )
    }
}

impl Error for DirectiveError {}

/// What is wrong with a [`DirectiveError`]'s directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirectiveErrorKind {
    /// The text after `=` is not `off`, `error`, `warn`, `info`, `debug` or `trace`.
    ///
    /// ```
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let err = Directives::parse("app=loud").unwrap_err();
    /// assert_eq!(err.kind(), DirectiveErrorKind::UnknownLevel);
    /// ```
    UnknownLevel,
    /// The directive has more than one `=`.
    ///
    /// ```
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let err = Directives::parse("app=info=debug").unwrap_err();
    /// assert_eq!(err.kind(), DirectiveErrorKind::TooManyEquals);
    /// ```
    TooManyEquals,
    /// The spec ends in an `env_logger` `/regex` message filter, which is not supported.
    ///
    /// ```
    /// use logbus::{DirectiveErrorKind, Directives};
    ///
    /// let err = Directives::parse("info/^GET").unwrap_err();
    /// assert_eq!(err.kind(), DirectiveErrorKind::UnsupportedRegex);
    /// assert_eq!((err.directive(), err.position()), ("/^GET", 4));
    /// ```
    UnsupportedRegex,
    /// The environment variable's value is not UTF-8 (the position is its
    /// first byte that is not; the directive, the value with U+FFFD there).
    ///
    /// ```
    /// # #[cfg(unix)] {
    /// use std::os::unix::ffi::OsStrExt;
    /// use logbus::DirectiveErrorKind;
    ///
    /// std::env::set_var("APP_LOG", std::ffi::OsStr::from_bytes(b"info,app\xff=debug"));
    /// let err = logbus::builder().env_directives("APP_LOG").build().unwrap_err();
    /// let logbus::InstallError::EnvDirectives { error, .. } = err else { panic!("{err}") };
    /// assert_eq!((error.kind(), error.position()), (DirectiveErrorKind::NotUnicode, 8));
    /// # }
    /// ```
    NotUnicode,
}

/// The directives spec in the environment variable `var`: `None` when it
/// is unset or blank, an error ([`DirectiveErrorKind::NotUnicode`]) when it
/// is not UTF-8 (read as text, it was taken for no directives at all, or
/// for garbled ones, depending on the caller: a review found the three
/// ways).
pub(crate) fn env_spec(var: &str) -> Result<Option<String>, DirectiveError> {
    let Some(value) = std::env::var_os(var) else {
        return Ok(None);
    };
    match value.into_string() {
        Ok(spec) if spec.trim().is_empty() => Ok(None),
        Ok(spec) => Ok(Some(spec)),
        Err(raw) => {
            let bytes = raw.as_encoded_bytes();
            let position = std::str::from_utf8(bytes)
                .err()
                .map_or(0, |e| e.valid_up_to());
            Err(DirectiveError {
                directive: raw.to_string_lossy().trim().to_owned(),
                position,
                kind: DirectiveErrorKind::NotUnicode,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use log::LevelFilter::{Debug, Error, Info, Off, Trace, Warn};

    const TARGETS: [&str; 6] = ["app", "app::db", "app::db::pool", "apple", "hyper", ""];

    /// Checks `level_for` on each of [`TARGETS`], in order.
    #[track_caller]
    fn check(spec: &str, expected: [LevelFilter; 6]) {
        let directives = Directives::parse(spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let actual = TARGETS.map(|t| directives.level_for(t));
        assert_eq!(actual, expected, "spec {spec:?} on {TARGETS:?}");
    }

    #[test]
    fn good_specs() {
        //     spec                               app    app::db app::db::pool apple hyper  ""
        check("", [Error, Error, Error, Error, Error, Error]);
        check(" , ,", [Error, Error, Error, Error, Error, Error]);
        check("info", [Info, Info, Info, Info, Info, Info]);
        check("INFO", [Info, Info, Info, Info, Info, Info]);
        check("wArN", [Warn, Warn, Warn, Warn, Warn, Warn]);
        check("off", [Off, Off, Off, Off, Off, Off]);
        check("app", [Trace, Trace, Trace, Trace, Off, Off]);
        check("app=", [Trace, Trace, Trace, Trace, Off, Off]);
        check("app= ", [Trace, Trace, Trace, Trace, Off, Off]);
        check("app::", [Off, Trace, Trace, Off, Off, Off]);
        check("app::db=debug", [Off, Debug, Debug, Off, Off, Off]);
        check("info,app::db=debug", [Info, Debug, Debug, Info, Info, Info]);
        // The empty path matches everything; of it and the global level, the one first
        // written last wins.
        check("info,=debug", [Debug; 6]);
        check("=debug,info", [Info; 6]);
        check("info,=debug,warn", [Debug; 6]);
        check("=warn,app=debug", [Debug, Debug, Debug, Debug, Warn, Warn]);
        check("app::db=debug,info", [Info, Debug, Debug, Info, Info, Info]);
        check(
            "warn,app=info,app::db=trace",
            [Info, Trace, Trace, Info, Warn, Warn],
        );
        check(
            "app::db=trace,app=info,warn",
            [Info, Trace, Trace, Info, Warn, Warn],
        );
        check("info,hyper=off", [Info, Info, Info, Info, Off, Info]);
        check(
            "apple=warn,app=debug",
            [Debug, Debug, Debug, Warn, Off, Off],
        );
        // Later duplicates replace earlier ones, for paths and for the global level.
        check("app=info,app=error", [Error, Error, Error, Error, Off, Off]);
        check("info,debug", [Debug, Debug, Debug, Debug, Debug, Debug]);
        check("info,app=warn,off", [Warn, Warn, Warn, Warn, Off, Off]);
        // Whitespace: trimmed around directives and levels, not inside the path.
        check(
            "  info , app::db =  debug ",
            [Info, Info, Info, Info, Info, Info],
        );
        check(
            " info , app::db= debug ",
            [Info, Debug, Debug, Info, Info, Info],
        );
        // A word that is not a level is a path.
        check("loud", [Off, Off, Off, Off, Off, Off]);
        check("hyper,app=off", [Off, Off, Off, Off, Trace, Off]);
        check("info,,app=error,", [Error, Error, Error, Error, Info, Info]);
    }

    #[test]
    fn bad_specs() {
        use DirectiveErrorKind::*;
        #[track_caller]
        fn bad(spec: &str, kind: DirectiveErrorKind, position: usize, directive: &str) {
            let err = Directives::parse(spec).expect_err(spec);
            assert_eq!(
                (err.kind(), err.position(), err.directive()),
                (kind, position, directive),
                "spec {spec:?}"
            );
            assert_eq!(&spec[position..position + directive.len()], directive);
        }
        bad("app=loud", UnknownLevel, 0, "app=loud");
        bad("info,app=loud", UnknownLevel, 5, "app=loud");
        bad("info,  app=1 ,x", UnknownLevel, 7, "app=1");
        bad("app=inf", UnknownLevel, 0, "app=inf");
        bad("=loud", UnknownLevel, 0, "=loud");
        bad("a=b=c", TooManyEquals, 0, "a=b=c");
        bad("x,app==", TooManyEquals, 2, "app==");
        bad("info/foo", UnsupportedRegex, 4, "/foo");
        bad("info/", UnsupportedRegex, 4, "/");
        bad("a/b,c=d/e", UnsupportedRegex, 1, "/b,c=d/e");
        // The first error by position wins.
        bad("a=b=c,d=loud/x", TooManyEquals, 0, "a=b=c");
    }

    #[test]
    fn lossy_keeps_the_good_parts() {
        let (directives, errors) = Directives::parse_lossy("info,app=loud,=warn,db=debug/x/y");
        // `=warn` first appeared after `info`: it wins, as in `env_filter`.
        assert_eq!(directives, Directives::new(Warn).with("db", Debug));
        let found: Vec<_> = errors.iter().map(|e| (e.kind(), e.position())).collect();
        assert_eq!(
            found,
            [
                (DirectiveErrorKind::UnknownLevel, 5),
                (DirectiveErrorKind::UnsupportedRegex, 28),
            ]
        );
        // Nothing valid left: `env_filter`'s default of `error` everywhere.
        let (directives, errors) = Directives::parse_lossy("app=loud");
        assert_eq!((directives, errors.len()), (Directives::new(Error), 1));
    }

    #[test]
    fn max_level() {
        #[track_caller]
        fn max(spec: &str, expected: LevelFilter) {
            assert_eq!(
                Directives::parse(spec).unwrap().max_level(),
                expected,
                "{spec:?}"
            );
        }
        max("", Error);
        max("off", Off);
        max("warn", Warn);
        max("app=off", Off);
        max("app", Trace);
        max("off,app=info,hyper=debug", Debug);
        max("trace,app=off", Trace);
        max("app=trace,app=info", Info);
        assert_eq!(Directives::new(Off).with("a", Warn).max_level(), Warn);
        assert_eq!(
            Directives::new(Info)
                .with("a", Trace)
                .with("a", Off)
                .max_level(),
            Info
        );
    }

    #[test]
    fn enabled_compares_with_level_for() {
        let d = Directives::parse("warn,app::db=debug,hyper=off").unwrap();
        assert!(d.enabled(Level::Warn, "other"));
        assert!(!d.enabled(Level::Info, "other"));
        assert!(d.enabled(Level::Debug, "app::db::pool"));
        assert!(!d.enabled(Level::Trace, "app::db"));
        assert!(!d.enabled(Level::Error, "hyper::client"));
    }

    #[test]
    fn display_round_trips() {
        for (spec, canonical) in [
            ("", "error"),
            ("OFF", "off"),
            ("app", "app=trace"),
            ("app=debug", "app=debug"),
            ("off,app=debug", "app=debug"),
            (
                "b=info,Warn,aa=debug,a=off,c=error",
                "warn,aa=debug,a=off,b=info,c=error",
            ),
            ("app = debug", "app =debug"),
            (
                "info,app::db=debug,hyper=off",
                "info,app::db=debug,hyper=off",
            ),
        ] {
            let parsed = Directives::parse(spec).unwrap();
            assert_eq!(parsed.to_string(), canonical, "{spec:?}");
            assert_eq!(Directives::parse(canonical).unwrap(), parsed, "{spec:?}");
        }
        let built = Directives::new(Off).with("app ", Info).with("a b", Trace);
        assert_eq!(built.to_string().parse::<Directives>().unwrap(), built);
    }

    #[test]
    fn order_does_not_matter_for_equality() {
        assert_eq!(
            Directives::parse("a=info,bb=debug,info").unwrap(),
            Directives::parse("info,bb=debug,a=info").unwrap()
        );
    }

    #[test]
    fn with_rejects_unwritable_paths() {
        for path in ["", " app", "a,b", "a=b", "a/b"] {
            let result = std::panic::catch_unwind(|| Directives::new(Info).with(path, Debug));
            assert!(result.is_err(), "{path:?} was accepted");
        }
    }

    #[test]
    fn error_display() {
        let err = Directives::parse("info/^GET").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid directive \"/^GET\" at byte 4: message filters are not supported; keep the \
             directives before '/' and filter messages with `SubscriptionBuilder::filter`"
        );
    }
}
