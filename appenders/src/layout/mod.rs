//! `Layout`: a text pattern such as `{ts} {level:>5} {target}: {msg}{kv}`,
//! parsed once and rendered into a buffer the caller reuses.

mod parser;
mod timestamp;

use std::error::Error as StdError;
use std::fmt;
use std::io::Write as _;
use std::str::FromStr;

use crate::escape::{escape_into, MultilineMode};
use crate::record::{Level, Record, Value};

use self::parser::{Align, Field, Piece, Width};
pub(crate) use self::timestamp::{Timestamp, Zone, DEFAULT_LOCAL_FORMAT, DEFAULT_UTC_FORMAT};

/// The pattern of [`Layout::default`].
pub(crate) const DEFAULT_PATTERN: &str = "{ts} {level:>5} {target}: {msg}{kv}";

/// How a text appender turns a record into a line.
///
/// A layout is parsed once, when the appender is built; a malformed pattern
/// is a [`LayoutError`] naming the byte position. Rendering appends to a
/// `Vec<u8>` the caller reuses, and writes no line terminator (the appender
/// adds it).
///
/// # The pattern language
///
/// | Placeholder            | Renders                                                        |
/// |------------------------|----------------------------------------------------------------|
/// | `{ts}`                 | UTC time, RFC 3339 with microseconds: `2026-11-29T20:25:23.941824Z` |
/// | `{ts:FMT}`             | UTC time in the strftime format `FMT` (chrono syntax), e.g. `{ts:%H:%M:%S%.3f}` |
/// | `{ts_local}`           | local time, RFC 3339 with offset: `2026-11-29T21:25:23.941824+01:00` |
/// | `{ts_local:FMT}`       | local time in the strftime format `FMT`                         |
/// | `{level}`              | `ERROR`, `WARN`, `INFO`, `DEBUG`, `TRACE`                      |
/// | `{target}`             | the target (`app::db`)                                         |
/// | `{topic}`              | the topic (`warn.app.db`)                                      |
/// | `{seq}`                | the broker-wide sequence number                                |
/// | `{msg}`                | the message, escaped                                           |
/// | `{kv}`                 | ` k=v k2=v2`, escaped, with the leading space only when there are key-values |
/// | `{thread}`             | the thread's name, or its numeric id when it has none          |
/// | `{file}`, `{line}`, `{module}` | the source location; empty when unknown                |
/// | `{{`, `}}`             | a literal `{`, `}`                                             |
///
/// Every placeholder but the timestamps accepts a width: `{level:5}` or
/// `{level:<5}` pads on the right to 5 characters, `{level:>5}` on the left,
/// `{level:^5}` on both sides. Longer values are never cut.
///
/// `{ts_local}` takes the offset soundly from chrono 0.4.20 or later, which
/// reads the time zone database itself instead of calling libc's
/// `localtime_r` (whose read of `TZ` raced `setenv`: RUSTSEC-2020-0159;
/// `deny.toml` bans older chrono).
///
/// The strftime format of a timestamp runs to the first `}`. The text that
/// changes at most once a second is cached on the layout, so a timestamp
/// costs a few digit writes per record; this is why [`render`](Layout::render)
/// takes `&mut self`.
///
/// Control characters in every text field (message, key-values, target,
/// thread name, location) are escaped visibly, so one record is one line; see
/// [`MultilineMode`] for the alternative of indented continuation lines.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Layout, Level, Record, Topic};
///
/// let mut layout: Layout = "[{level:<5}] {target}: {msg}{kv}".parse()?;
/// let record = Record::builder(Topic::new(Level::Warn, "app::db"))
///     .message("slow query")
///     .kv("ms", 1200u64)
///     .build();
/// let mut line = Vec::new();
/// layout.render(&record, &mut line);
/// assert_eq!(line, b"[WARN ] app::db: slow query ms=1200");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Layout {
    pattern: Box<str>,
    pieces: Vec<Piece>,
    multiline: MultilineMode,
}

impl Layout {
    /// Parses a pattern (see the [type docs](Layout) for the language).
    ///
    /// # Errors
    ///
    /// A [`LayoutError`] naming the byte position and what is wrong: an
    /// unknown placeholder, an unclosed `{`, a stray `}`, a bad width or a
    /// bad strftime format.
    ///
    /// ```
    /// use logbus_appenders::{Layout, LayoutErrorKind};
    ///
    /// let err = Layout::parse("{ts} {lvl}").unwrap_err();
    /// assert_eq!(err.position(), 6);
    /// assert_eq!(err.kind(), &LayoutErrorKind::UnknownPlaceholder("lvl".into()));
    ///
    /// assert_eq!(Layout::parse("{msg").unwrap_err().kind(), &LayoutErrorKind::UnclosedBrace);
    /// assert_eq!(Layout::parse("a}").unwrap_err().kind(), &LayoutErrorKind::StrayClosingBrace);
    /// assert_eq!(
    ///     Layout::parse("{level:>x}").unwrap_err().kind(),
    ///     &LayoutErrorKind::BadWidth(">x".into())
    /// );
    /// assert_eq!(
    ///     Layout::parse("{ts:%Q}").unwrap_err().kind(),
    ///     &LayoutErrorKind::BadTimeFormat("%Q".into())
    /// );
    /// ```
    pub fn parse(pattern: &str) -> Result<Layout, LayoutError> {
        Ok(Layout {
            pattern: pattern.into(),
            pieces: parser::parse(pattern)?,
            multiline: MultilineMode::Escape,
        })
    }

    /// Sets how line feeds in messages and key-values are written (default
    /// [`MultilineMode::Escape`]).
    #[must_use]
    pub fn multiline(mut self, mode: MultilineMode) -> Layout {
        self.multiline = mode;
        self
    }

    /// The pattern this layout was parsed from.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern shows the level (a colouring console needs it).
    pub(crate) fn has_level(&self) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Field(Field::Level, _)))
    }

    /// Appends `record`, laid out, to `out` (no line terminator).
    pub fn render(&mut self, record: &Record, out: &mut Vec<u8>) {
        self.render_styled(record, out, None);
    }

    /// Like [`render`](Layout::render), wrapping the level in the SGR
    /// sequence `level_color` and a reset when given.
    pub(crate) fn render_styled(
        &mut self,
        record: &Record,
        out: &mut Vec<u8>,
        level_color: Option<&str>,
    ) {
        let multiline = self.multiline;
        for piece in &mut self.pieces {
            match piece {
                // A separator of one or two bytes (the common case) is
                // stored directly: a `memcpy` call costs more than the copy.
                Piece::Literal(text) => match *text.as_bytes() {
                    [a] => out.push(a),
                    [a, b] => out.extend_from_slice(&[a, b]),
                    ref bytes => out.extend_from_slice(bytes),
                },
                Piece::Timestamp(ts) => ts.render_record(record, out),
                // The common field: no width, no colour. Its own arm, so
                // that the others' checks are not paid per field.
                Piece::Field(field, None) if level_color.is_none() => {
                    render_field(*field, record, out, multiline);
                }
                Piece::Field(field, width) => {
                    styled_field(*field, *width, record, out, multiline, level_color);
                }
            }
        }
    }
}

/// A field with a width, or the level when it is coloured (the colour
/// wraps the padding too). Kept out of the render loop, whose common arm
/// it would make slower.
#[inline(never)]
fn styled_field(
    field: Field,
    width: Option<Width>,
    record: &Record,
    out: &mut Vec<u8>,
    multiline: MultilineMode,
    level_color: Option<&str>,
) {
    let color = level_color.filter(|_| field == Field::Level);
    if let Some(color) = color {
        out.extend_from_slice(color.as_bytes());
    }
    match (field, width) {
        (_, None) => render_field(field, record, out, multiline),
        // The level's length is known before it is written: the padding
        // goes straight around it.
        (Field::Level, Some(width)) => {
            let (before, after) = width.split(record.level().as_str().len());
            spaces(out, before);
            render_field(field, record, out, multiline);
            spaces(out, after);
        }
        (_, Some(width)) => {
            let start = out.len();
            render_field(field, record, out, multiline);
            pad(out, start, width);
        }
    }
    if color.is_some() {
        out.extend_from_slice(b"\x1b[0m");
    }
}

// Inlined into the render loop's common arm: a call per field costs more
// than most fields take to render.
#[inline(always)]
fn render_field(field: Field, record: &Record, out: &mut Vec<u8>, multiline: MultilineMode) {
    match field {
        // One arm per name, so that each copy has a constant length (an
        // inline store, no `memcpy` call); the names are `log`'s.
        Field::Level => match record.level() {
            Level::Error => out.extend_from_slice(b"ERROR"),
            Level::Warn => out.extend_from_slice(b"WARN"),
            Level::Info => out.extend_from_slice(b"INFO"),
            Level::Debug => out.extend_from_slice(b"DEBUG"),
            Level::Trace => out.extend_from_slice(b"TRACE"),
        },
        // A topic knows whether its target needs escaping (it was looked at
        // when the topic was made).
        Field::Target if record.topic().is_printable() => {
            out.extend_from_slice(record.target().as_bytes());
        }
        Field::Target => escape_into(record.target(), out, MultilineMode::Escape),
        Field::Topic if record.topic().is_printable() => {
            out.extend_from_slice(record.topic().as_str().as_bytes());
        }
        Field::Topic => escape_into(record.topic().as_str(), out, MultilineMode::Escape),
        Field::Seq => {
            out.extend_from_slice(itoa::Buffer::new().format(record.seq()).as_bytes());
        }
        Field::Msg => escape_into(record.message(), out, multiline),
        // Most records have none: the loop's call is not paid for them.
        Field::Kv => {
            if record.has_key_values() {
                render_kv(record, out, multiline);
            }
        }
        Field::Thread => match record.thread().name {
            Some(name) => escape_into(name, out, MultilineMode::Escape),
            None => {
                out.extend_from_slice(itoa::Buffer::new().format(record.thread().id).as_bytes());
            }
        },
        Field::File => escape_into(record.file().unwrap_or(""), out, MultilineMode::Escape),
        Field::Line => {
            if let Some(line) = record.line() {
                out.extend_from_slice(itoa::Buffer::new().format(line).as_bytes());
            }
        }
        Field::Module => {
            escape_into(
                record.module_path().unwrap_or(""),
                out,
                MultilineMode::Escape,
            );
        }
    }
}

#[inline(never)]
fn render_kv(record: &Record, out: &mut Vec<u8>, multiline: MultilineMode) {
    for (key, value) in record.key_values() {
        out.push(b' ');
        escape_into(key, out, MultilineMode::Escape);
        out.push(b'=');
        // Writing into a `Vec<u8>` cannot fail.
        match value {
            Value::Str(s) => escape_into(s, out, multiline),
            // Compact JSON has no raw control characters; escaped all the
            // same, as every text output is.
            Value::Json(json) => escape_into(json.as_str(), out, MultilineMode::Escape),
            // Integers and the rest as `Value`'s `Display` writes them,
            // integers without `core::fmt` (about 300 instructions each).
            Value::U64(v) => out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes()),
            Value::I64(v) => out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes()),
            Value::Bool(v) => out.extend_from_slice(if *v { b"true" } else { b"false" }),
            Value::Null => out.extend_from_slice(b"null"),
            other => {
                let _ = write!(out, "{other}");
            }
        }
    }
}

/// Pads `out[start..]` to `width` characters.
fn pad(out: &mut Vec<u8>, start: usize, width: Width) {
    // Escaped output is valid UTF-8; count characters, not bytes.
    let chars = out[start..].iter().filter(|&&b| (b & 0xc0) != 0x80).count();
    let (before, after) = width.split(chars);
    if before > 0 {
        let end = out.len();
        spaces(out, before);
        out.copy_within(start..end, start + before);
        out[start..start + before].fill(b' ');
    }
    spaces(out, after);
}

/// Appends `n` spaces.
fn spaces(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, b' ');
}

impl Width {
    /// The spaces before and after a value of `chars` characters.
    fn split(self, chars: usize) -> (usize, usize) {
        let missing = self.width.saturating_sub(chars);
        match self.align {
            Align::Left => (0, missing),
            Align::Right => (missing, 0),
            Align::Center => (missing / 2, missing - missing / 2),
        }
    }
}

impl Default for Layout {
    /// `{ts} {level:>5} {target}: {msg}{kv}`, e.g.
    /// `2026-11-29T20:25:23.941824Z  INFO app::http: request served status=200`.
    fn default() -> Layout {
        match Layout::parse(DEFAULT_PATTERN) {
            Ok(layout) => layout,
            // The default pattern is a constant checked by a unit test.
            Err(_) => unreachable!("the default layout pattern parses"),
        }
    }
}

impl FromStr for Layout {
    type Err = LayoutError;

    fn from_str(pattern: &str) -> Result<Layout, LayoutError> {
        Layout::parse(pattern)
    }
}

/// A malformed layout pattern: where, and what is wrong.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Layout, LayoutErrorKind};
///
/// let err = Layout::parse("{level:>5} {nope}").unwrap_err();
/// assert_eq!(err.position(), 12);
/// assert_eq!(err.to_string(), "invalid layout `{level:>5} {nope}` at byte 12: unknown placeholder `nope`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    pattern: String,
    position: usize,
    kind: LayoutErrorKind,
}

/// What is wrong with a layout pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutErrorKind {
    /// A `{name}` that is not a placeholder; the position is the name's.
    UnknownPlaceholder(String),
    /// A `{` with no `}` before the end or the next `{`; the position is the `{`'s.
    UnclosedBrace,
    /// A `}` not closing a placeholder (write `}}` for a literal one).
    StrayClosingBrace,
    /// A width that is not `[<>^]N` with `N` at most 1024; the position is the spec's.
    BadWidth(String),
    /// A strftime format chrono rejects; the position is the format's.
    BadTimeFormat(String),
}

impl LayoutError {
    fn new(pattern: &str, position: usize, kind: LayoutErrorKind) -> LayoutError {
        LayoutError {
            pattern: pattern.to_owned(),
            position,
            kind,
        }
    }

    /// The byte offset in the pattern of the offending part.
    #[must_use]
    pub fn position(&self) -> usize {
        self.position
    }

    /// What is wrong.
    #[must_use]
    pub fn kind(&self) -> &LayoutErrorKind {
        &self.kind
    }

    /// The pattern that failed to parse.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid layout `{}` at byte {}: ",
            self.pattern, self.position
        )?;
        match &self.kind {
            LayoutErrorKind::UnknownPlaceholder(name) => write!(f, "unknown placeholder `{name}`"),
            LayoutErrorKind::UnclosedBrace => f.write_str("unclosed `{`"),
            LayoutErrorKind::StrayClosingBrace => {
                f.write_str("stray `}` (write `}}` for a literal one)")
            }
            LayoutErrorKind::BadWidth(spec) => write!(f, "bad width `{spec}`, expected [<>^]N"),
            LayoutErrorKind::BadTimeFormat(format) => write!(f, "bad strftime format `{format}`"),
        }
    }
}

impl StdError for LayoutError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Level, ThreadInfo, Topic};
    use std::time::{Duration, SystemTime};

    fn record() -> Record {
        Record::builder(Topic::new(Level::Info, "app::http"))
            .seq(42)
            .time(SystemTime::UNIX_EPOCH + Duration::new(1_795_983_923, 941_824_000))
            .message("request 0 served in 0 us")
            .module_path(Some("app::http::server".into()))
            .file(Some("src/server.rs".into()))
            .line(Some(17))
            .thread(ThreadInfo {
                id: 7,
                name: Some("worker-1"),
            })
            .build()
    }

    #[track_caller]
    fn check(pattern: &str, expected: &str) {
        check_record(pattern, &record(), expected);
    }

    #[track_caller]
    fn check_record(pattern: &str, record: &Record, expected: &str) {
        let mut layout = Layout::parse(pattern).unwrap_or_else(|e| panic!("{e}"));
        let mut out = b"prefix|".to_vec();
        layout.render(record, &mut out);
        // Twice, so the cached timestamp path is exercised too.
        layout.render(record, &mut out);
        let half = String::from_utf8(out).unwrap();
        let expected_twice = format!("prefix|{expected}{expected}");
        assert_eq!(half, expected_twice, "pattern {pattern:?}");
    }

    #[track_caller]
    fn check_err(pattern: &str, position: usize, kind: LayoutErrorKind) {
        let err = Layout::parse(pattern).unwrap_err();
        assert_eq!(
            (err.position(), err.kind()),
            (position, &kind),
            "pattern {pattern:?}"
        );
    }

    #[test]
    fn good_patterns() {
        check(
            DEFAULT_PATTERN,
            "2026-11-29T20:25:23.941824Z  INFO app::http: request 0 served in 0 us",
        );
        check("", "");
        check("plain", "plain");
        check("{{}} {{msg}}", "{} {msg}");
        check("é{level}ü", "éINFOü");
        check("{level:<5}|", "INFO |");
        check("{level:5}|", "INFO |");
        check("{level:>5}|", " INFO|");
        check("{level:^8}|", "  INFO  |");
        check("{level:^7}|", " INFO  |");
        check("{level:2}|", "INFO|");
        check("{target} {topic} {seq}", "app::http info.app.http 42");
        check("{seq:>5}", "   42");
        check(
            "{thread} {file}:{line} {module}",
            "worker-1 src/server.rs:17 app::http::server",
        );
        check("{msg}{kv}", "request 0 served in 0 us");
        check("{ts:%Y-%m-%d %H:%M:%S%.6f}", "2026-11-29 20:25:23.941824");
        check("{ts:%H:%M:%S}", "20:25:23");
        check("{ts:%s}", "1795983923");
    }

    #[test]
    fn every_level_is_log_s_name_and_literals_of_every_length_are_copied() {
        for level in [
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
            Level::Trace,
        ] {
            let record = Record::builder(Topic::new(level, "t")).build();
            let name = level.as_str();
            check_record("{level}", &record, name);
            check_record("|{level}:)", &record, &format!("|{name}:)"));
            check_record("<{level}-->", &record, &format!("<{name}-->"));
        }
    }

    #[test]
    fn fields_of_a_sparse_record() {
        let record = Record::builder(Topic::new(Level::Error, ""))
            .message("boom")
            .kv("a", 1i64)
            .kv("b", -2i64)
            .kv("ok", true)
            .kv("f", 1.5f64)
            .kv("s", "two words")
            .kv("n", crate::record::Value::Null)
            .build();
        check_record(
            "[{thread}|{file}|{line}|{module}] {level} {msg}{kv}",
            &record,
            "[0|||] ERROR boom a=1 b=-2 ok=true f=1.5 s=two words n=null",
        );
    }

    #[test]
    fn hostile_text_is_escaped_everywhere() {
        let record = Record::builder(Topic::new(Level::Warn, "t\n"))
            .message("a\nFAKE  INFO line\x1b[2J")
            .kv("k\n", "v\r\n")
            .thread(ThreadInfo {
                id: 1,
                name: Some("th\x07"),
            })
            .file(Some("f\u{85}".into()))
            .build();
        check_record(
            "{target} {msg}{kv} {thread} {file}",
            &record,
            "t\\n a\\nFAKE  INFO line\\x1b[2J k\\n=v\\r\\n th\\x07 f\\u{85}",
        );
        let mut layout = Layout::parse("{msg}{kv}")
            .unwrap()
            .multiline(MultilineMode::Indent);
        let mut out = Vec::new();
        layout.render(&record, &mut out);
        assert_eq!(out, b"a\n    FAKE  INFO line\\x1b[2J k\\n=v\\r\n    ");
    }

    /// A topic looks at its target once, when it is made: a hostile one is
    /// still escaped in `{target}` and `{topic}`, shared or leaked, and a
    /// printable one (or one with non-ASCII text) is written as it is.
    #[test]
    fn a_topic_s_target_is_escaped_only_when_it_needs_it() {
        for (target, shown) in [
            ("app::http", "app::http info.app.http"),
            ("t\n\x1b", "t\\n\\x1b info.t\\n\\x1b"),
            ("héé", "héé info.héé"),
            ("a\u{2028}b", "a\\u{2028}b info.a\\u{2028}b"),
        ] {
            for topic in [
                Topic::new(Level::Info, target),
                Topic::leak(Level::Info, target),
            ] {
                let record = Record::builder(topic).message("m").build();
                check_record("{target} {topic}", &record, shown);
            }
        }
    }

    /// Every field at every width and alignment, coloured or not, after
    /// bytes already in the buffer: padded as `format!` pads the plain
    /// rendering (by characters), the colour around the padding.
    #[test]
    fn padding_agrees_with_format_at_every_width() {
        let fields = ["level", "target", "topic", "msg", "kv", "seq", "line"];
        for target in [
            "",
            "a",
            "héé",
            "日本語",
            "a\nb",
            "app::http::client",
            "🦀🦀",
        ] {
            for level in [Level::Error, Level::Info, Level::Trace] {
                let record = Record::builder(Topic::new(level, target))
                    .message(target)
                    .kv("k", target)
                    .build();
                for field in fields {
                    let mut plain = Vec::new();
                    Layout::parse(&format!("{{{field}}}"))
                        .unwrap()
                        .render(&record, &mut plain);
                    let plain = String::from_utf8(plain).unwrap();
                    for (align, width, color) in (0..12)
                        .flat_map(|w| ['<', '>', '^'].map(|a| (a, w)))
                        .flat_map(|(a, w)| [None, Some("\x1b[31m")].map(|c| (a, w, c)))
                    {
                        let pattern = format!("[{{{field}:{align}{width}}}]");
                        let mut out = "é".as_bytes().to_vec();
                        Layout::parse(&pattern)
                            .unwrap()
                            .render_styled(&record, &mut out, color);
                        let padded = match align {
                            '<' => format!("{plain:<width$}"),
                            '>' => format!("{plain:>width$}"),
                            _ => format!("{plain:^width$}"),
                        };
                        let (on, off) = match (field, color) {
                            ("level", Some(on)) => (on, "\x1b[0m"),
                            _ => ("", ""),
                        };
                        assert_eq!(
                            String::from_utf8(out).unwrap(),
                            format!("é[{on}{padded}{off}]"),
                            "{pattern} {target:?} {color:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn padding_counts_characters_not_bytes() {
        let record = Record::builder(Topic::new(Level::Info, "héé")).build();
        check_record("{target:>5}|", &record, "  héé|");
        check_record("{target:^6}|{target:<4}|", &record, " héé  |héé |");
        // A field longer than its width is never cut.
        check_record("{target:>2}|{level:>3}|", &record, "héé|INFO|");
    }

    #[test]
    fn bad_patterns() {
        use LayoutErrorKind::*;
        check_err("{", 0, UnclosedBrace);
        check_err("abc {msg", 4, UnclosedBrace);
        check_err("{ts {msg}", 0, UnclosedBrace);
        check_err("}", 0, StrayClosingBrace);
        check_err("{msg}}", 5, StrayClosingBrace);
        check_err("ab}}}", 4, StrayClosingBrace);
        check_err("{}", 1, UnknownPlaceholder(String::new()));
        check_err("{ts} {lvl}", 6, UnknownPlaceholder("lvl".into()));
        check_err("é{Level}", 3, UnknownPlaceholder("Level".into()));
        check_err("{level:}", 7, BadWidth(String::new()));
        check_err("{level:>}", 7, BadWidth(">".into()));
        check_err("{level:>x}", 7, BadWidth(">x".into()));
        check_err("{level:5x}", 7, BadWidth("5x".into()));
        check_err("{level:-5}", 7, BadWidth("-5".into()));
        check_err("{level:99999}", 7, BadWidth("99999".into()));
        check_err("{msg} {ts:%Q}", 10, BadTimeFormat("%Q".into()));
        check_err("{ts_local:%}", 10, BadTimeFormat("%".into()));
    }

    #[test]
    fn display_names_pattern_position_and_problem() {
        let err = "x }".parse::<Layout>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid layout `x }` at byte 2: stray `}` (write `}}` for a literal one)"
        );
        assert_eq!(err.pattern(), "x }");
    }

    #[test]
    fn times_beyond_64_bit_nanoseconds_render_as_they_are() {
        // 64-bit nanoseconds end in 2262; such a record renders from its
        // `SystemTime` instead.
        for (secs, expected) in [
            (32_503_680_000, "3000-01-01T00:00:00.000001Z"),
            (1_795_983_923, "2026-11-29T20:25:23.000001Z"),
        ] {
            let record = Record::builder(Topic::new(Level::Info, "app"))
                .time(SystemTime::UNIX_EPOCH + Duration::new(secs, 1_000))
                .build();
            check_record("{ts}", &record, expected);
        }
    }

    #[test]
    fn default_layout_is_the_default_pattern() {
        assert_eq!(Layout::default().pattern(), DEFAULT_PATTERN);
        assert!(Layout::default().has_level());
        assert!(!Layout::parse("{msg}").unwrap().has_level());
    }
}
