//! `logbus`: the command-line companion of the logbus crate. Its one
//! command, `logbus tail`, reads the files logbus writes.
//!
//! ```text
//! logbus tail [--topic PATTERN]... [--level LEVEL] [-n N] [-F] [--json]
//!             [--color auto|always|never] FILE
//! ```
//!
//! - A line that is a JSON appender record is printed as text,
//!   `TS LEVEL target: msg k=v ...`, the level coloured when colour is on
//!   (`--color auto`: stdout is a terminal and `NO_COLOR` is unset or empty,
//!   or `CLICOLOR_FORCE` is set, as the console appender decides); `--json`
//!   prints it unchanged. Any other line (the text appenders' output) is
//!   printed unchanged.
//! - `--topic` (repeatable: any may match) and `--level` filter records
//!   with logbus' own pattern syntax and matcher (`logbus::TopicPattern`).
//!   A text line carries no topic, so any filter drops text lines.
//! - `-n N` starts from the last N kept records; the default is the whole
//!   file, or the last 10 with `--follow`. `-n 0` prints nothing old.
//! - `-F`/`--follow` keeps reading across the file appender's rotations
//!   (`app.log` → `app.log.1` → …, several between two looks included) and
//!   truncation, like `tail -F` (`follow.rs`); compressed `.gz` files are
//!   skipped.
//!
//! Exit status: 0 when done (or when stdout's reader goes away, as with
//! `| head`), 1 when FILE cannot be opened or a file cannot be read, 2 for
//! bad arguments (the message and the usage line go to stderr). A missing
//! FILE is status 1 with `--follow` too: it does not wait for FILE to
//! appear.
//!
//! The binary uses the library's public API only. Its rooms: `args.rs` (the
//! command line), `filter.rs` (topic and level), `render.rs` (recognising
//! and printing a line), `follow.rs` (reading by lines, rotations),
//! `tail.rs` (the first read and the follow loop).

mod args;
mod filter;
mod follow;
mod render;
mod tail;

use std::io::Write;
use std::process::ExitCode;

use crate::args::{ArgsError, Command, USAGE, USAGE_LINE};

fn main() -> ExitCode {
    match args::parse(std::env::args_os().skip(1)) {
        Ok(Command::Help) => print_or_quit(USAGE),
        Ok(Command::Version) => print_or_quit(&format!("logbus {}\n", env!("CARGO_PKG_VERSION"))),
        Ok(Command::Tail(args)) => match tail::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.is_closed_pipe() => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("logbus tail: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => usage_error(&e),
    }
}

/// Prints `text` to stdout; a closed stdout is not an error.
fn print_or_quit(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    // Help on a closed pipe has nobody to tell.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    ExitCode::SUCCESS
}

fn usage_error(e: &ArgsError) -> ExitCode {
    eprintln!("logbus: {e}\n{USAGE_LINE} (see `logbus tail --help`)");
    ExitCode::from(2)
}
