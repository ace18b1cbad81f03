//! The command line, parsed with lexopt: `logbus tail [OPTIONS] FILE` into
//! a [`Tail`], or a typed [`ArgsError`] that `main` prints above the usage.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use lexopt::prelude::*;
use logbus::appenders::ColorMode;
use logbus::{Level, TopicParseError, TopicPattern};

use crate::filter::Filter;

/// The first line of [`USAGE`], printed on stderr under an argument error.
pub(crate) const USAGE_LINE: &str = "usage: logbus tail [OPTIONS] FILE";

/// What `--help` prints (to stdout).
pub(crate) const USAGE: &str = "\
usage: logbus tail [OPTIONS] FILE

Prints the records of FILE, a file written by logbus: JSON lines as text
(TS LEVEL target: msg k=v ...), text lines as they are.

options:
      --topic PATTERN  keep records whose topic matches PATTERN, in the
                       subscription syntax (`error.#`, `*.app.db.#`);
                       repeatable: a record matching any is kept
      --level LEVEL    keep records at LEVEL or more severe
                       (error, warn, info, debug, trace)
  -n, --lines N        start from the last N kept records
                       (default: the whole file; 10 with --follow)
  -F, --follow         keep reading as FILE grows, across rotations
                       (FILE -> FILE.1 -> FILE.2 ..., or FILE -> FILE.<date>),
                       like tail -F
      --json           print JSON records as they are, not as text
      --color WHEN     colour the level: auto (default), always, never
  -h, --help           print this help
  -V, --version        print the version

A filter (--topic or --level) drops text lines: they carry no topic.
Exit status: 0 done, 1 a file could not be read, 2 bad arguments.
";

/// How many records `--follow` starts from without `-n`, as `tail -f` does.
pub(crate) const FOLLOW_DEFAULT_LINES: usize = 10;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    /// `-h`/`--help`: print [`USAGE`].
    Help,
    /// `-V`/`--version`.
    Version,
    /// `logbus tail ...`.
    Tail(Tail),
}

/// The arguments of `logbus tail`.
#[derive(Debug)]
pub(crate) struct Tail {
    /// The file to read (the live path when following).
    pub(crate) file: PathBuf,
    /// Which records to keep.
    pub(crate) filter: Filter,
    /// Where in the file to start.
    pub(crate) start: Start,
    /// Whether to stop at the end of the file.
    pub(crate) mode: Mode,
    /// How JSON records are printed.
    pub(crate) output: Output,
    /// `--color`.
    pub(crate) color: ColorMode,
}

/// Where reading starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// From the beginning of the file.
    Whole,
    /// From the last N kept records (`-n N`; 0 prints nothing old).
    Last(usize),
}

/// Whether to stop at the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Print what the file holds and exit.
    Print,
    /// Keep reading across growth, rotation and truncation (`--follow`).
    Follow,
}

/// How a JSON record is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// As a text line, the level coloured when colour is on.
    Text,
    /// As it is in the file, byte for byte (`--json`).
    Json,
}

/// A command line that cannot be run; `main` exits with status 2.
#[derive(Debug)]
pub(crate) enum ArgsError {
    /// An unknown option, an option without its value, a second FILE
    /// (lexopt's own message).
    Parse(lexopt::Error),
    /// No command at all.
    NoCommand,
    /// A command other than `tail`.
    UnknownCommand(String),
    /// `logbus tail` without FILE.
    NoFile,
    /// `-n` with something other than a number of records.
    Count(String),
    /// `--level` with something other than a level.
    Level(String),
    /// `--color` with something other than auto, always or never.
    Color(String),
    /// `--topic` with a malformed pattern.
    Pattern(TopicParseError),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Parse(e) => write!(f, "{e}"),
            ArgsError::NoCommand => f.write_str("no command given"),
            ArgsError::UnknownCommand(c) => write!(f, "unknown command {c:?}"),
            ArgsError::NoFile => f.write_str("missing FILE"),
            ArgsError::Count(v) => write!(f, "-n: {v:?} is not a number of records"),
            ArgsError::Level(v) => write!(
                f,
                "--level: {v:?} is not one of error, warn, info, debug, trace"
            ),
            ArgsError::Color(v) => write!(f, "--color: {v:?} is not one of auto, always, never"),
            ArgsError::Pattern(e) => write!(f, "--topic: {e}"),
        }
    }
}

impl From<lexopt::Error> for ArgsError {
    fn from(e: lexopt::Error) -> ArgsError {
        ArgsError::Parse(e)
    }
}

/// Parses the arguments after the program's name.
pub(crate) fn parse(
    args: impl IntoIterator<Item = impl Into<OsString>>,
) -> Result<Command, ArgsError> {
    let mut parser = lexopt::Parser::from_args(args);
    match parser.next()? {
        None => Err(ArgsError::NoCommand),
        Some(Short('h') | Long("help")) => Ok(Command::Help),
        Some(Short('V') | Long("version")) => Ok(Command::Version),
        Some(Value(command)) if command == "tail" => parse_tail(&mut parser),
        Some(Value(command)) => Err(ArgsError::UnknownCommand(
            command.to_string_lossy().into_owned(),
        )),
        Some(other) => Err(other.unexpected().into()),
    }
}

fn parse_tail(parser: &mut lexopt::Parser) -> Result<Command, ArgsError> {
    let mut file = None;
    let mut topics = Vec::new();
    let mut level = None;
    let mut lines = None;
    let mut mode = Mode::Print;
    let mut output = Output::Text;
    let mut color = ColorMode::Auto;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Long("topic") => {
                let pattern = parser.value()?.string()?;
                topics.push(TopicPattern::parse(&pattern).map_err(ArgsError::Pattern)?);
            }
            Long("level") => {
                let text = parser.value()?.string()?;
                level = Some(text.parse::<Level>().map_err(|_| ArgsError::Level(text))?);
            }
            Short('n') | Long("lines") => {
                let text = parser.value()?.string()?;
                lines = Some(text.parse::<usize>().map_err(|_| ArgsError::Count(text))?);
            }
            Short('F') | Long("follow") => mode = Mode::Follow,
            Long("json") => output = Output::Json,
            Long("color") => {
                let text = parser.value()?.string()?;
                color = match text.as_str() {
                    "auto" => ColorMode::Auto,
                    "always" => ColorMode::Always,
                    "never" => ColorMode::Never,
                    _ => return Err(ArgsError::Color(text)),
                };
            }
            Value(path) if file.is_none() => file = Some(PathBuf::from(path)),
            other => return Err(other.unexpected().into()),
        }
    }
    let start = match (lines, mode) {
        (Some(n), _) => Start::Last(n),
        (None, Mode::Follow) => Start::Last(FOLLOW_DEFAULT_LINES),
        (None, Mode::Print) => Start::Whole,
    };
    Ok(Command::Tail(Tail {
        file: file.ok_or(ArgsError::NoFile)?,
        filter: Filter::new(topics, level),
        start,
        mode,
        output,
        color,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn tail(args: &[&str]) -> Tail {
        match parse(args.iter().copied()) {
            Ok(Command::Tail(tail)) => tail,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    #[track_caller]
    fn error(args: &[&str]) -> ArgsError {
        match parse(args.iter().copied()) {
            Err(e) => e,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// Any arguments give a command or a typed error, never a panic.
        #[test]
        fn any_arguments_parse_or_fail_typed(
            args in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(&[
                        "tail", "-f", "-F", "-n", "--lines", "--json", "--color", "--level",
                        "--topic", "-h", "--help", "-V", "--", "-", "0", "10", "-1", "x",
                        "error", "warn.#", "--color=always", "--lines=5",
                    ][..]).prop_map(String::from),
                    ".{0,10}",
                ],
                0..8,
            ),
        ) {
            let _ = parse(args);
        }
    }

    #[test]
    fn usage_starts_with_its_line() {
        assert!(USAGE.starts_with(USAGE_LINE));
    }

    #[test]
    fn defaults() {
        let t = tail(&["tail", "app.log"]);
        assert_eq!(t.file, PathBuf::from("app.log"));
        assert!(t.filter.is_empty());
        assert_eq!(
            (t.start, t.mode, t.output, t.color),
            (Start::Whole, Mode::Print, Output::Text, ColorMode::Auto)
        );
        let t = tail(&["tail", "-F", "app.log"]);
        assert_eq!(
            (t.start, t.mode),
            (Start::Last(FOLLOW_DEFAULT_LINES), Mode::Follow)
        );
    }

    #[test]
    fn every_option() {
        let t = tail(&[
            "tail",
            "--topic",
            "error.#",
            "--topic=*.app.#",
            "--level",
            "WARN",
            "-n3",
            "--follow",
            "--json",
            "--color",
            "never",
            "app.log",
        ]);
        assert!(!t.filter.is_empty());
        assert!(t.filter.keeps_record("warn.app.db", Level::Warn));
        assert!(t.filter.keeps_record("error.other", Level::Error));
        assert!(!t.filter.keeps_record("info.app.db", Level::Info));
        assert!(!t.filter.keeps_record("warn.other", Level::Warn));
        assert_eq!(
            (t.start, t.mode, t.output, t.color),
            (Start::Last(3), Mode::Follow, Output::Json, ColorMode::Never)
        );
        assert_eq!(
            tail(&["tail", "--lines", "0", "-F", "f"]).start,
            Start::Last(0)
        );
    }

    #[test]
    fn help_and_version() {
        for args in [
            &["-h"][..],
            &["--help"],
            &["tail", "--help"],
            &["tail", "x", "-h"],
        ] {
            assert!(
                matches!(parse(args.iter().copied()), Ok(Command::Help)),
                "{args:?}"
            );
        }
        assert!(matches!(parse(["-V"]), Ok(Command::Version)));
    }

    #[test]
    fn bad_arguments() {
        assert!(matches!(error(&[]), ArgsError::NoCommand));
        assert!(matches!(error(&["head"]), ArgsError::UnknownCommand(c) if c == "head"));
        assert!(matches!(error(&["tail"]), ArgsError::NoFile));
        assert!(matches!(
            error(&["tail", "--bogus", "f"]),
            ArgsError::Parse(_)
        ));
        assert!(matches!(error(&["tail", "a", "b"]), ArgsError::Parse(_)));
        assert!(matches!(error(&["tail", "f", "-n"]), ArgsError::Parse(_)));
        assert!(matches!(error(&["tail", "-n", "-1", "f"]), ArgsError::Count(v) if v == "-1"));
        assert!(matches!(
            error(&["tail", "--level", "off", "f"]),
            ArgsError::Level(_)
        ));
        assert!(matches!(
            error(&["tail", "--color", "yes", "f"]),
            ArgsError::Color(_)
        ));
        let ArgsError::Pattern(e) = error(&["tail", "--topic", "a..b", "f"]) else {
            panic!("not a pattern error");
        };
        assert_eq!(e, TopicPattern::parse("a..b").unwrap_err());
        assert_eq!(
            ArgsError::Pattern(e.clone()).to_string(),
            format!("--topic: {e}")
        );
    }
}
