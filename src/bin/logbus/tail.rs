//! `logbus tail` itself: the first read (the whole file, or its last N
//! kept records), then, with `--follow`, a look every [`POLL_INTERVAL`]
//! while nothing arrives.

use std::collections::VecDeque;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::time::Duration;

use logbus::appenders::{color_choice, ColorMode};

use crate::args::{Mode, Start, Tail};
use crate::follow::{Follower, Source, TailError};
use crate::render::Renderer;

/// How long `--follow` sleeps after a look that found nothing new: the
/// delay before a new line shows, and 10 `stat`s a second while idle.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Runs `logbus tail` as `args` say. With `--follow` it returns only on an
/// error (a closed stdout among them).
pub(crate) fn run(args: Tail) -> Result<(), TailError> {
    let stdout = io::stdout();
    let color = match args.color {
        ColorMode::Always => true,
        ColorMode::Never => false,
        // Auto, as the console appender decides it (`color_choice`).
        _ => color_choice(stdout.is_terminal(), |name| {
            // A value that is not UTF-8 is still a value that is set.
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        }),
    };
    let mut out = BufWriter::new(stdout.lock());
    let mut renderer = Renderer::new(args.filter, args.output, color);
    let mut source = Source::open(&args.file)?;

    match args.start {
        Start::Whole => {
            let mut emit = |line: &[u8]| print(&mut renderer, &mut out, line);
            source.read_lines(&mut emit)?;
            if args.mode == Mode::Print {
                source.finish(&mut emit)?;
            }
        }
        Start::Last(n) => {
            // The last `n` kept lines, already rendered.
            let mut last: VecDeque<Vec<u8>> = VecDeque::new();
            let mut keep = |line: &[u8]| -> io::Result<()> {
                if n > 0 {
                    if let Some(text) = renderer.render(line) {
                        if last.len() == n {
                            last.pop_front();
                        }
                        last.push_back(text.to_vec());
                    }
                }
                Ok(())
            };
            source.read_lines(&mut keep)?;
            if args.mode == Mode::Print {
                source.finish(&mut keep)?;
            }
            for text in last {
                out.write_all(&text).map_err(TailError::Write)?;
                out.write_all(b"\n").map_err(TailError::Write)?;
            }
        }
    }
    out.flush().map_err(TailError::Write)?;
    if args.mode == Mode::Print {
        return Ok(());
    }

    let mut follower = Follower::new(&args.file, source);
    loop {
        let mut emit = |line: &[u8]| print(&mut renderer, &mut out, line);
        let read = follower.poll(&mut emit)?;
        out.flush().map_err(TailError::Write)?;
        if !read {
            std::thread::sleep(POLL_INTERVAL);
        }
    }
}

/// Prints `line` (without its line feed) if the filter keeps it.
fn print(renderer: &mut Renderer, out: &mut impl Write, line: &[u8]) -> io::Result<()> {
    match renderer.render(line) {
        Some(text) => {
            out.write_all(text)?;
            out.write_all(b"\n")
        }
        None => Ok(()),
    }
}
